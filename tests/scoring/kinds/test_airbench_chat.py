"""AIR-Bench's chat track as a benchmark kind: its judge jobs and its aggregation, by hand."""

import pytest

from scoring.kinds import get_kind
from scoring.kinds.airbench import rules as airbench
from tests.scoring.airbench_data import by_hand, chat_meta

KIND = get_kind(airbench.CHAT)


def jobs(items, outputs, **options):
    return KIND.jobs(items, outputs, rounds=KIND.rounds, seed=0, options=options,
                     output_path=str, input_path=str)


def test_chat_scores_per_category_mixed_and_average():
    items = airbench.parse_chat(chat_meta())
    answers = {("0", 0): {"score": 8}, ("0", 1): {"score": 6},
               ("1", 0): {"score": None}, ("1", 1): {"score": 4},
               ("2", 0): {"score": 5}, ("2", 1): {"score": 5},
               ("4", 0): {"score": 9}, ("4", 1): {"score": 7},
               ("5", 0): {"score": 3}, ("5", 1): {"score": 5}}
    outputs = {k: "answer" for k in ("0", "1", "2", "4", "5")}  # 3 has no response
    rows, summary = by_hand(airbench.CHAT, items, outputs, answers)
    assert rows[1]["failed_A"] and not rows[1]["failed_B"]
    assert rows[3] == {"id": "3", "category": "music", "task": "music_QA", "score_A": 0,
                       "score_B": 0, "failed_A": False, "failed_B": False, "missing": True}
    c = summary["category"]
    assert (c["speech"]["pass_A"], c["speech"]["pass_B"], c["speech"]["score"]) == (8, 5, 6.5)
    assert c["speech"]["failed_A"] == 1
    assert c["sound"]["score"] == 5 and c["music"]["score"] == 0
    assert c["speech_and_sound"]["score"] == 8 and c["speech_and_music"]["score"] == 4
    assert (c["mixed_audio"]["pass_A"], c["mixed_audio"]["pass_B"],
            c["mixed_audio"]["score"]) == (6, 6, 6)
    overall = summary["overall"]
    assert overall["score"] == pytest.approx((6.5 + 5 + 0 + 6) / 4)
    assert overall["pass_A"] == pytest.approx((8 + 5 + 0 + 6) / 4)
    assert (overall["n"], overall["failed"], overall["failed_A"], overall["missing"]) == \
        (6, 1, 1, 1)
    assert summary["task"]["speech_dialogue_QA"]["pass_A"] is None


def test_a_category_whose_pass_failed_entirely_has_no_score():
    items = airbench.parse_chat(chat_meta())[2:3]
    _, summary = by_hand(airbench.CHAT, items, {"2": "x"}, {("2", 1): {"score": 7}})
    assert summary["category"]["sound"]["score"] is None
    assert summary["category"]["sound"]["failed_A"] == 1
    assert summary["overall"]["score"] is None


def test_chat_jobs_ask_both_passes_of_every_answered_item():
    items = airbench.parse_chat(chat_meta())
    made = jobs(items, {"0": "mine", "2": "other"})
    assert [(j.item, j.round) for j in made] == [("0", 0), ("0", 1), ("2", 0), ("2", 1)]
    assert made[0].parse("3 9") == (3, 9)
    assert made[0].fields((3, 9))["score"] == 9 and made[1].fields((3, 9))["score"] == 3
    assert made[1].fields(None)["score"] is None
    assert made[0].fields((3, 9))["verdict"] == {"scores": [3, 9]}
    assert made[1].fields(None)["verdict"] == {}
    key = {"config": "1", "digest": str}
    assert made[0].content_key(**key) != made[1].content_key(**key)


def test_the_strict_score_counts_an_unanswered_item_as_0_the_answered_one_leaves_it_out():
    items = airbench.parse_chat(chat_meta())[:2]  # two speech items
    _, summary = by_hand(airbench.CHAT, items, {"0": "mine"},
                         {("0", 0): {"score": 8}, ("0", 1): {"score": 6}})
    speech = summary["category"]["speech"]
    assert speech["score"] == 3.5  # (8 + 0) / 2 and (6 + 0) / 2, averaged
    assert speech["score_answered"] == 7.0  # the official cal_score.py figure
    assert summary["overall"]["score_answered"] == 7.0 and summary["overall"]["score"] == 3.5


def test_the_position_bias_is_pass_a_minus_pass_b_over_items_judged_in_both():
    items = airbench.parse_chat(chat_meta())[:3]
    answers = {("0", 0): {"score": 9}, ("0", 1): {"score": 5},
               ("1", 0): {"score": 6}, ("1", 1): {"score": None},  # pass B failed
               ("2", 0): {"score": 4}, ("2", 1): {"score": 6}}
    _, summary = by_hand(airbench.CHAT, items, {"0": "a", "1": "b", "2": "c"}, answers)
    assert summary["category"]["speech"]["position_bias"] == 4.0
    assert summary["overall"]["position_bias"] == 1.0  # (4 - 2) / 2 items judged in both
    assert summary["overall"]["judged"] == 2


def test_the_strict_score_ranks():
    kind = get_kind(airbench.CHAT)
    assert kind.ranking == ("score",) and kind.label("score") == "score (strict)"
    assert kind.published == {"score": "score_answered"}


def test_the_panel_reads_the_reference_against_the_answer():
    item, = airbench.parse_chat(chat_meta()[:1])
    question = KIND.panel_question(KIND.to_rows(item), 0, "A dog barks.")
    assert (question.instruction, question.question) == (item.question,
                                                         airbench.CHAT_PANEL_QUESTION)
    assert question.texts == (("reference answer", item.answer_gt),
                              ("the system's answer", "A dog barks."))
    assert question.options[0].startswith("Right") and question.audio == ()


@pytest.mark.parametrize(("a", "b", "right"), [
    (6, 6, True), (5, 6, False), (9, None, True), (None, 5, False), (None, None, None)])
def test_the_judge_says_right_above_the_middle_of_its_scale(a, b, right):
    assert KIND.panel_verdict({"score_A": a, "score_B": b}, 0) is right
