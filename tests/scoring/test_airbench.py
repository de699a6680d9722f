import json

import pytest

from scoring.kinds.airbench import metrics as airbench_metrics
from scoring.kinds.airbench import rules as airbench
from scoring.kinds.files import MetaError, PredictionError, ReplyError
from tests.scoring.airbench_data import REFERENCE, chat_meta, foundation_meta, write

# --- the official letter rule -----------------------------------------------------------


@pytest.mark.parametrize(("response", "letter"), [
    ("B", "B"),
    ("  C  ", "C"),  # stripped first
    ("A. a cat", "A"),
    ("The answer is B.", "B"),  # second-to-last character
    ("(D)", "D"),
    ("\nB\n", "B"),
    ("The answer is\nC.", "C"),  # newlines dropped
    ("All of them", "A"),  # the rule reads a leading capital A-D, meaning or not
    ("b", None),  # lowercase is not a letter of the rule
    ("E", None),
    ("The answer is (C).", None),  # second-to-last is ")"
    ("", None),
    ("   ", None),
    ("x", None),
    (None, None),
])
def test_the_letter_rule_reads_first_or_second_to_last_character(response, letter):
    assert airbench.extract_letter(response) == letter


def test_the_true_letter_is_the_first_choice_equal_to_the_answer():
    item = airbench.parse_foundation([{
        "path": "x.wav", "question": "q", "choice_a": "dog", "choice_b": "cat",
        "choice_c": "cat", "choice_d": "bird", "answer_gt": "cat",
        "task_name": "Sound_AQA", "dataset_name": "avqa", "uniq_id": 7}])[0]
    assert item.correct_letter == "B"
    assert item.uniq_id == "7"


# --- prompts ------------------------------------------------------------------------------


def test_the_alignment_prompt_is_the_official_text():
    text = airbench.alignment_prompt("Which animal?", "a small cat", ["dog", "cat"])
    assert text == (
        'There is a question "Which animal?", and one response is "a small cat". Among the '
        "following choices, which option best matches this response? You may only response "
        "with the letter of the option. If the letter of an option has already appeared in the "
        "Answer, then simply return that letter. If there are no matching options, then choose "
        "one at random. The following lines are the options.\nA. dog\nB. cat\nTo reiterate, "
        "the response you provide to me must be a single letter, either A, B, C, or D.")


def test_the_chat_prompt_puts_the_reference_first_in_pass_a_and_second_in_pass_b():
    item = airbench.parse_chat(chat_meta())[0]
    a = airbench.chat_pass_prompt(item, "My answer XQuestionX", 0)
    b = airbench.chat_pass_prompt(item, "My answer XQuestionX", 1)
    assert a.startswith("You are a helpful and precise assistant for checking the quality of "
                        "the answer.\n[Detailed Audio Description]\nA description of clip 0.\n"
                        "[Question]\nWhat 0?\n[The Start of Assistant 1s Answer]\n"
                        "The reference answer 0.\n[The End of Assistant 1s Answer]\n"
                        "[The Start of Assistant 2s Answer]\nMy answer XQuestionX\n"
                        "[The End of Assistant 2s Answer]\n[System]\n")
    assert "Assistant 1s Answer]\nMy answer XQuestionX\n[The End" in b
    assert "Assistant 2s Answer]\nThe reference answer 0.\n[The End" in b
    assert a.endswith("The two scores are separated by a space.")


@pytest.mark.parametrize(("reply", "pair"), [
    ("7 8", (7, 8)), ("10 1", (10, 1)), (" 3 4\n", (3, 4)), ("0 10", (0, 10)),
    # Official cal_score.py: strip, drop every "\n", split on " ", int() each part.
    ("8 \n7", (8, 7)), ("8\n 7", (8, 7)), ("+9 8", (9, 8)), ("-5 4", (-5, 4)),
    ("-1 5", (-1, 5)), ("8\t 7", (8, 7)), ("010 1_0", (10, 10)), ("\u0668 7", (8, 7)),
])
def test_a_chat_reply_is_read_as_the_official_cal_score_reads_it(reply, pair):
    assert airbench.parse_chat_reply(reply) == pair


@pytest.mark.parametrize("reply", [
    "7, 8", "7  8", "7.5 8", "11 3", "7", "7 8 9", "Assistant 1: 7\nAssistant 2: 8", "", None,
    "7 8\nbecause", "8\t7", "8\r\n7", "3 11", "7 8.", "1e1 5", " \n ",
])
def test_anything_else_is_a_failed_reply(reply):
    with pytest.raises(ReplyError):
        airbench.parse_chat_reply(reply)


def test_the_model_score_is_second_in_pass_a_and_first_in_pass_b():
    assert airbench.model_score((3, 9), 0) == 9
    assert airbench.model_score((9, 3), 1) == 9


def test_an_alignment_reply_naming_a_missing_option_is_refused():
    assert airbench.parse_alignment("B", 2) == "B"
    with pytest.raises(ReplyError):
        airbench.parse_alignment("C", 2)
    with pytest.raises(ReplyError):
        airbench.parse_alignment("I cannot tell", 4)


# --- metadata --------------------------------------------------------------------------


def test_a_faulty_foundation_file_names_file_index_and_uniq_id(tmp_path):
    data = foundation_meta()
    data[1]["answer_gt"] = "zebra"
    data[2]["task_name"] = "Speech_Ground"
    data[3]["choice_c"] = None  # D without C
    data[4]["uniq_id"] = 1
    del data[5]["question"]
    path = write(tmp_path / "Foundation_meta.json", data)
    with pytest.raises(MetaError) as caught:
        airbench.load_foundation(path)
    problems = caught.value.problems
    assert f"{path}: item 2 (uniq_id 2): field 'answer_gt' \"zebra\" equals none of the " \
           'choices ["a", "b", "c", "d"]' in problems
    assert f"{path}: item 3 (uniq_id 3): field 'task_name' 'Speech_Ground' is not an " \
           "AIR-Bench foundation task" in problems
    assert f"{path}: item 4 (uniq_id 4): field 'choice_d' is given but 'choice_c' is not" \
        in problems
    assert f"{path}: item 5 (uniq_id 1): duplicate uniq_id, first used by item 1" in problems
    assert f"{path}: item 6 (uniq_id 6): field 'question' must be a non-empty string, got " \
           "nothing" in problems
    assert len(problems) == 5


def test_binary_questions_have_two_choices():
    items = airbench.parse_foundation(foundation_meta())
    assert items[2].choices == ("female", "male")
    assert items[2].correct_letter == "B"
    assert items[2].domain == "speech" and items[2].task == "Speaker gender recognition"


def test_audio_grounding_files_are_flac():
    item = airbench.parse_foundation([{**foundation_meta()[0], "task_name": "Audio_Grounding",
                                       "dataset_name": "AudioGrounding"}])[0]
    assert item.media == "Foundation/Audio_Grounding_AudioGrounding/1.flac"


def test_a_faulty_chat_file_names_every_fault(tmp_path):
    data = chat_meta()
    data[0]["task_name"] = "speech_qa"
    data[2]["meta_info"] = 5
    path = write(tmp_path / "Chat_meta.json", data)
    with pytest.raises(MetaError) as caught:
        airbench.load_chat(path)
    assert caught.value.problems == [
        f"{path}: item 1 (uniq_id 0): field 'task_name' 'speech_qa' is not an AIR-Bench chat "
        "task",
        f"{path}: item 3 (uniq_id 2): field 'meta_info' must be a non-empty string, got 5",
    ]


def test_invalid_json_names_the_line(tmp_path):
    path = tmp_path / "Chat_meta.json"
    path.write_text('[\n{"a": 1},\n{oops}\n]')
    with pytest.raises(MetaError, match="invalid JSON at line 3"):
        airbench.load_chat(path)


# --- predictions -----------------------------------------------------------------------


def test_predictions_name_line_and_uniq_id_of_every_fault():
    text = "\n".join([
        json.dumps({"uniq_id": 1, "response": "B"}),
        json.dumps({"uniq_id": 99, "response": "B"}),
        json.dumps({"uniq_id": 1, "response": "C"}),
        json.dumps({"uniq_id": 2}),
        json.dumps({"uniq_id": 3, "response": None}),
        "{not json",
        json.dumps({"response": "A"}),
    ])
    with pytest.raises(PredictionError) as caught:
        airbench.parse_responses(text, name="p.jsonl", known_ids={"1", "2", "3"})
    assert caught.value.problems == [
        "p.jsonl line 2 (uniq_id 99): unknown uniq_id (not in the benchmark)",
        "p.jsonl line 3 (uniq_id 1): duplicate uniq_id, first on line 1",
        "p.jsonl line 4 (uniq_id 2): no 'response' field",
        "p.jsonl line 5 (uniq_id 3): 'response' must be a string, got nothing",
        "p.jsonl line 6: invalid JSON at column 2: Expecting property name enclosed in double "
        "quotes",
        "p.jsonl line 7: 'uniq_id' must be an integer or a non-empty string, got nothing "
        '(its keys: "response")',
    ]


def test_predictions_may_carry_the_metadata_fields_and_string_ids():
    text = json.dumps({**foundation_meta()[0], "uniq_id": "1", "response": "B"}) + "\n\n"
    [response] = airbench.parse_responses(text, name="p.jsonl", known_ids={"1"})
    assert (response.uniq_id, response.response, response.where) == ("1", "B", "line 1")


SEPARATORS = "\u2028\u2029\x85"  # raw in json.dumps(..., ensure_ascii=False), not line ends


def test_a_file_of_the_official_inference_script_is_read_line_by_line_as_it_reads_it():
    rows = [{"uniq_id": 1, "response": f"B{SEPARATORS}because"},
            {"uniq_id": 2, "response": f"line one\u2028line two\x85{SEPARATORS}"}]
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    assert len(text.splitlines()) > 2  # what str.splitlines() would have broken
    responses = airbench.parse_responses(text, name="p.jsonl", known_ids={"1", "2"})
    assert [(r.uniq_id, r.response, r.where) for r in responses] == [
        ("1", rows[0]["response"], "line 1"), ("2", rows[1]["response"], "line 2")]
    assert airbench.extract_letter(responses[0].response) == "B"


def test_a_file_with_windows_line_ends_is_read():
    text = '{"uniq_id": 1, "response": "A"}\r\n\r\n{"uniq_id": 2, "response": "B"}\r\n'
    responses = airbench.parse_responses(text, name="p.jsonl", known_ids={"1", "2"})
    assert [(r.uniq_id, r.response, r.where) for r in responses] == [
        ("1", "A", "line 1"), ("2", "B", "line 3")]


def test_a_line_nested_too_deeply_is_refused_naming_the_line():
    text = '{"uniq_id": 1, "response": "B"}\n' + "[" * 100_000 + "]" * 100_000 + "\n"
    with pytest.raises(PredictionError) as caught:
        airbench.parse_responses(text, name="p.jsonl", known_ids={"1"})
    assert caught.value.problems == [
        "p.jsonl line 2: invalid JSON at column 65: nested too deeply (more than 64 levels)"]


def test_an_empty_predictions_file_is_refused():
    with pytest.raises(PredictionError, match="holds no predictions"):
        airbench.parse_responses("\n", name="p.jsonl", known_ids={"1"})


# --- aggregation, by hand ----------------------------------------------------------------

RESPONSES = {"1": "B", "2": "I think it is A.", "3": "male", "4": "D", "5": "A"}  # 6 missing


def test_the_published_foundation_means_follow_from_the_per_task_table():
    reference = json.loads(REFERENCE.read_text())
    per_task = reference["foundation_per_task_percent"]
    per_domain = reference["foundation_per_domain_percent"]["rows"]
    checked = 0
    for i, model in enumerate(per_task["columns"]):
        tasks = {task: {"n": 0, "parsed": 0, "unparsed": 0, "correct": 0, "missing": 0,
                        "acc": values[i], "acc_strict": values[i]}
                 for task, values in per_task["rows"].items()
                 if task != "Average" and values[i] is not None}
        domains, overall = airbench_metrics.domain_means(tasks)
        published = dict(zip(("speech", "sound", "music", "overall"), per_domain[model],
                             strict=True))
        for name, figures in [*domains.items(), ("overall", overall)]:
            if published[name] is not None:
                assert abs(figures["acc"] - published[name]) < 0.05 + 1e-9, (model, name)
                checked += 1
        average = per_task["rows"]["Average"][i]
        if average is not None:
            assert abs(overall["acc"] - average) < 0.05 + 1e-9, model
    assert checked == 7 * 4 + 1  # seven full rows, and Whisper+GPT 4's speech
