"""The pure MMAE logic, against expectations worked out by hand from SPEC.md."""

import hashlib

import pytest

from scoring.kinds import get_kind
from scoring.kinds.files import ReplyError
from scoring.kinds.mmae import metrics as mmae_metrics
from scoring.kinds.mmae import rules as mmae
from scoring.kinds.mmae.rules import Rubric, Sample


def make_sample(rubrics, *, inputs=("wav/s1/audio1.wav",), sample_id="s1", **dims):
    return Sample(
        id=sample_id,
        complexity=dims.get("complexity", "single"),
        modality=dims.get("modality", "sound"),
        granularity=tuple(dims.get("granularity", ("local",))),
        operations=tuple(dims.get("operations", (("local", "addition"),))),
        messages=[{"role": "user", "content": [{"type": "text", "text": "Add a dog bark."}]}],
        tags=[],
        rubrics=tuple(rubrics),
        input_audio=tuple(inputs),
    )


def rubric(index=0, category="Instruction Following", question="In <audio output>, ok?",
           right="R", wrong=("W1", "W2", "W3")):
    return Rubric(index=index, category=category, question=question, right_choice=right,
                  wrong_choices=tuple(wrong))


class TestPrompts:
    def test_the_system_prompt_is_the_papers_file_verbatim(self):
        # sha256 of ../shared/mmae/judge_system_prompt.txt, which ends with one newline.
        digest = hashlib.sha256((mmae.SYSTEM_PROMPT + "\n").encode()).hexdigest()
        assert digest == "b155bd8eb700241dbfe6c9af6fada6f7307c19e53a3337975ef7a4e3ca502e9a"

    def test_the_query_text_fills_the_template_with_one_choice_per_line(self):
        text = mmae.query_text("Is a dog audible?", ["Yes", "No", "None of the above"])
        assert text == (
            "Based on the objective content of the uploaded audio, answer the following "
            "multiple-choice question. First carefully perceive, analyze, and reason about the "
            "audio content, then choose exactly one option from the list. Return only JSON with "
            'keys "reason" and "choice". Put the reason first and the final choice last. The '
            "choice value must be a single uppercase letter identifying the option.\n\n"
            "Question: Is a dog audible?\n\n"
            "Choices: A. Yes\nB. No\nC. None of the above"
        )


class TestLabels:
    @pytest.mark.parametrize("question, labels", [
        ("In <audio output>, is speech heard?", ["output"]),
        ("In <audio output[4.0s:5.7s]>, is speech heard?", ["output"]),
        ("Compare <audio input2[1.0s:2s]> with <audio output> and <audio input2>.",
         ["input2", "output"]),
        ("Does <audio input1[:2.0s]> match <audio output[-2.5s:]>?", ["input1", "output"]),
        ("Is the edit audible?", ["output"]),
        ("Is <audio output> louder than <audio input1> or <audio output[1s:]>?",
         ["output", "input1"]),
    ])
    def test_labels_are_the_named_audios_in_order_of_first_appearance(self, question, labels):
        assert mmae.question_labels(question) == labels


class TestReferenceReadings:
    """What the judge's system prompt tells the judge of the notation, for a person on the
    panel: each slice a question names, in words (its examples first)."""

    @pytest.mark.parametrize("question, readings", [
        ("Is <audio output[0.0s:3s]> speech?",
         ("<audio output[0.0s:3s]>: output from 0 s to 3 s",)),
        ("Is <audio input1[:2.0s]> speech?",
         ("<audio input1[:2.0s]>: input1 from its start to 2 s",)),
        ("Is <audio output[1.5s:]> speech?",
         ("<audio output[1.5s:]>: output from 1.5 s to its end",)),
        ("Is <audio input2[-2.5s:]> speech?",
         ("<audio input2[-2.5s:]>: the last 2.5 s of input2",)),
        ("Is <audio output[:-1s]> speech?",
         ("<audio output[:-1s]>: output from its start to 1 s before its end",)),
        ("Is <audio output[-3s:-1.25s]> speech?",
         ("<audio output[-3s:-1.25s]>: output from 3 s before its end to 1.25 s before its end",)),
        ("Does <audio output[1s:2s]> match <audio input1[1s:2s]> and <audio output[1s:2s]>?",
         ("<audio output[1s:2s]>: output from 1 s to 2 s",
          "<audio input1[1s:2s]>: input1 from 1 s to 2 s")),
        ("Is <audio output> louder than <audio input1>?", ()),
        ("Is <audio output[the chorus]> there?", ()),
        ("Is the edit audible?", ()),
    ])
    def test_each_slice_a_question_names_is_read_out_once(self, question, readings):
        assert mmae.reference_readings(question) == readings


class TestShuffle:
    def test_the_correct_letter_points_at_the_right_choice_in_every_round(self):
        r = rubric(index=1)
        for round_ in range(3):
            choices, letter = mmae.shuffled_choices(r, seed=0, sample_id="abc", round_=round_)
            assert sorted(choices) == ["R", "W1", "W2", "W3"]
            assert choices[ord(letter) - ord("A")] == "R"

    def test_the_shuffle_is_fixed_by_seed_sample_rubric_and_round(self):
        # Pinned: a resumed run must present exactly what the interrupted run presented.
        r = rubric(index=1)
        assert mmae.shuffled_choices(r, seed=0, sample_id="abc", round_=0) == \
            (("R", "W2", "W3", "W1"), "A")
        assert mmae.shuffled_choices(r, seed=0, sample_id="abc", round_=1) == \
            (("W3", "R", "W2", "W1"), "B")

    def test_rounds_and_seeds_shuffle_independently(self):
        r = rubric(wrong=tuple(f"W{i}" for i in range(7)))
        orders = {mmae.shuffled_choices(r, seed=s, sample_id="x", round_=k)[0]
                  for s in range(3) for k in range(3)}
        assert len(orders) > 6

    def test_a_wrong_choice_repeating_the_right_text_does_not_move_the_key(self):
        r = rubric(right="Yes", wrong=("No", "Yes"))
        for k in range(6):
            choices, letter = mmae.shuffled_choices(r, seed=k, sample_id="d", round_=0)
            assert choices[ord(letter) - ord("A")] == "Yes"


class TestQueryMessages:
    @pytest.mark.slow
    def test_each_label_is_announced_then_inlined_before_the_question(self):
        r = rubric(question="Compare <audio input2> with <audio output[0s:1s]>.",
                   right="Same", wrong=("Different",))
        sample = make_sample([r], inputs=("wav/s1/audio1.wav", "wav/s1/audio2.wav"))
        query = mmae.make_query(sample, r, 0, seed=0)
        audio = {"output": "out/s1.wav", "input1": "wav/s1/audio1.wav",
                 "input2": "wav/s1/audio2.wav"}
        messages = mmae.query_messages(
            sample, r, query, audio=lambda label: f"data:audio/wav;base64,<{audio[label]}>")
        assert messages[0] == {"role": "system", "content": mmae.SYSTEM_PROMPT}
        content = messages[1]["content"]
        assert messages[1]["role"] == "user"
        assert content[0] == {"type": "text", "text": "<audio input2>: "}
        assert content[1] == {"type": "audio_url",
                              "audio_url": {"url": "data:audio/wav;base64,<wav/s1/audio2.wav>"}}
        assert content[2] == {"type": "text", "text": "<audio output>: "}
        assert content[3]["audio_url"]["url"] == "data:audio/wav;base64,<out/s1.wav>"
        assert content[4]["text"].endswith(
            f"Question: Compare <audio input2> with <audio output[0s:1s]>.\n\n"
            f"Choices: A. {query.choices[0]}\nB. {query.choices[1]}"
        )
        assert len(content) == 5


class TestParseReply:
    @pytest.mark.parametrize("text, expected", [
        ('{"reason": "a dog barks", "choice": "B"}', ("B", "a dog barks")),
        ('```json\n{"reason": "r", "choice": "C"}\n```', ("C", "r")),
        ('Sure. {"reason": "x", "choice": "A"} Hope this helps.', ("A", "x")),
        ('{"reason": "has {braces} inside", "choice": "D"}', ("D", "has {braces} inside")),
        ('{"reason": "r", "choice": "(C)"}', ("C", "r")),
        ('{"reason": "r", "choice": " A. "}', ("A", "r")),
        ('{"choice": "B"}', ("B", "")),
        ('thinking {"note": 1} then {"reason": "r", "choice": "B"}', ("B", "r")),
    ])
    def test_it_reads_the_letter_and_reason(self, text, expected):
        assert mmae.parse_reply(text, 4) == expected

    @pytest.mark.parametrize("text, message", [
        ("", "empty reply"),
        (None, "empty reply"),
        ("The answer is A.", "no JSON object"),
        ('{"reason": "r"}', "no 'choice' key"),
        ('{"reason": "r", "choice": "E"}', "'E' is not among the 4 options"),
        ('{"reason": "r", "choice": "AB"}', "not a single letter"),
        ('{"reason": "r", "choice": "b"}', "not a single letter"),
        ('{"reason": "r", "choice": 2}', "not a single letter"),
        ('{"reason": "cut short', "no JSON object"),
    ])
    def test_it_never_defaults_to_a_letter(self, text, message):
        with pytest.raises(ReplyError, match=message):
            mmae.parse_reply(text, 4)


class TestVotes:
    @pytest.mark.parametrize("votes, score", [
        ([True, True, True], 1), ([True, True, False], 1), ([False, True, True], 1),
        ([True, False, False], 0), ([False, False, False], 0),
    ])
    def test_a_rubric_scores_when_two_of_three_votes_are_correct(self, votes, score):
        assert mmae_metrics.rubric_score(votes) == score


class TestSampleResult:
    def test_ifr_and_cr_are_means_of_their_axis_and_em_needs_every_rubric(self):
        rubrics = [rubric(0), rubric(1), rubric(2, category="Consistency")]
        row = mmae_metrics.sample_result(make_sample(rubrics), [1, 0, 1])
        assert (row["IFR"], row["CR"], row["EM"]) == (0.5, 1.0, 0)
        assert (row["n_if"], row["n_cr"], row["missing"]) == (2, 1, False)
        assert row["rubric_scores"] == [1, 0, 1]

    def test_any_category_but_instruction_following_is_consistency(self):
        rubrics = [rubric(0), rubric(1, category="Preservation")]
        row = mmae_metrics.sample_result(make_sample(rubrics), [0, 1])
        assert (row["IFR"], row["CR"], row["n_cr"]) == (0.0, 1.0, 1)

    def test_an_axis_without_rubrics_is_null(self):
        row = mmae_metrics.sample_result(make_sample([rubric(0), rubric(1)]), [1, 1])
        assert (row["IFR"], row["CR"], row["EM"]) == (1.0, None, 1)

    def test_a_missing_output_scores_zero_everywhere(self):
        rubrics = [rubric(0), rubric(1, category="Consistency")]
        row = mmae_metrics.sample_result(make_sample(rubrics), None)
        assert (row["IFR"], row["CR"], row["EM"], row["missing"]) == (0.0, 0.0, 0, True)
        assert row["rubric_scores"] == [0, 0]

    def test_the_row_carries_the_sample_taxonomy(self):
        sample = make_sample([rubric()], complexity="multi-hop", modality="music-speech",
                             granularity=("local", "global"),
                             operations=(("local", "removal"), ("global", "alteration")))
        row = mmae_metrics.sample_result(sample, [1])
        assert row["complexity"] == "multi-hop"
        assert row["granularity"] == ["local", "global"]
        assert row["operations"] == [{"granularity": "local", "operation": "removal"},
                                     {"granularity": "global", "operation": "alteration"}]


def row(sample_id, ifr, cr, em, complexity, modality, granularity, operations):
    return {"id": sample_id, "IFR": ifr, "CR": cr, "EM": em, "complexity": complexity,
            "modality": modality, "granularity": granularity,
            "operations": [{"granularity": g, "operation": o} for g, o in operations]}


ROWS = [
    row("s1", 1.0, None, 1, "single", "sound", ["local"], [("local", "addition")]),
    row("s2", 0.5, 1.0, 0, "multi-audio", "music", ["global"], [("global", "background change")]),
    row("s3", 0.0, 0.5, 0, "multi-round", "sound", ["local", "global"],
        [("local", "removal"), ("global", "alteration")]),
    row("s4", 1.0, 1.0, 1, "single", "speech", ["local"],
        [("local", "addition"), ("local", "addition")]),
]


def figures(n, ifr, cr, emr):
    return {"n": n, "IFR": pytest.approx(ifr), "CR": pytest.approx(cr) if cr is not None
            else None, "EMR": pytest.approx(emr)}


class TestTaxonomy:
    def test_overall_is_a_macro_mean_over_samples_skipping_null_axes(self):
        assert mmae_metrics.summarize(ROWS) == figures(4, 62.5, 250 / 3, 50.0)

    def test_a_set_with_no_consistency_rubric_has_null_cr(self):
        assert mmae_metrics.summarize(ROWS[:1]) == figures(1, 100.0, None, 100.0)

    def test_every_dimension_and_bucket(self):
        t = mmae_metrics.taxonomy(ROWS)
        assert set(t) == {"overall", "complexity", "complexity_group", "modality",
                          "granularity", "operation"}
        assert t["complexity"] == {
            "single": figures(2, 100, 100, 100),
            "multi-audio": figures(1, 50, 100, 0),
            "multi-round": figures(1, 0, 50, 0),
        }
        assert t["complexity_group"] == {"single": figures(2, 100, 100, 100),
                                         "multiple": figures(2, 25, 75, 0)}
        assert t["modality"] == {"sound": figures(2, 50, 50, 50),
                                 "music": figures(1, 50, 100, 0),
                                 "speech": figures(1, 100, 100, 100)}
        assert t["granularity"] == {"local": figures(2, 100, 100, 100),
                                    "global": figures(1, 50, 100, 0),
                                    "mixed": figures(1, 0, 50, 0)}
        assert t["operation"] == {
            "local/addition": figures(2, 100, 100, 100),  # s4 lists it twice, counted once
            "global/background change": figures(1, 50, 100, 0),
            "local/removal": figures(1, 0, 50, 0),
            "global/alteration": figures(1, 0, 50, 0),
        }

    def test_ranking_is_by_emr_then_ifr_then_cr(self):
        boards = {"A": {"EMR": 5, "IFR": 40, "CR": 60}, "B": {"EMR": 5, "IFR": 45, "CR": 10},
                  "C": {"EMR": 6, "IFR": 1, "CR": 1}, "D": {"EMR": 5, "IFR": 40, "CR": 70}}
        kind = get_kind(mmae.KIND)
        assert sorted(boards, key=lambda k: kind.rank_key(boards[k])) == ["C", "B", "D", "A"]


class TestUncertainty:
    def test_identical_samples_give_a_point_interval(self):
        rows = [{"IFR": 0.5, "CR": 1.0, "EM": 0}] * 10
        assert mmae_metrics.bootstrap_intervals(rows, seed=1) == {
            "IFR": (50.0, 50.0), "CR": (100.0, 100.0), "EMR": (0.0, 0.0)}

    def test_an_axis_null_everywhere_has_no_interval(self):
        rows = [{"IFR": 1.0, "CR": None, "EM": 1}, {"IFR": 0.0, "CR": None, "EM": 0}]
        assert mmae_metrics.bootstrap_intervals(rows, seed=1)["CR"] is None

    def test_the_interval_is_seeded_and_holds_the_estimate(self):
        rows = [{"IFR": i % 3 / 2, "CR": (i % 5) / 4, "EM": i % 2} for i in range(200)]
        first = mmae_metrics.bootstrap_intervals(rows, seed=7)
        assert mmae_metrics.bootstrap_intervals(rows, seed=7) == first
        point = mmae_metrics.summarize(rows)
        for metric in ("IFR", "CR", "EMR"):
            lo, hi = first[metric]
            assert lo < point[metric] < hi
            assert hi - lo < 20  # 200 samples: a few points either side

    def test_every_bucket_gets_an_interval(self):
        intervals = mmae_metrics.taxonomy_intervals([{**r, "EM": r["EM"]} for r in ROWS], seed=0,
                                            resamples=50)
        assert set(intervals["operation"]) == set(mmae_metrics.taxonomy(ROWS)["operation"])
        assert intervals["modality"]["speech"] == {"IFR": (100.0, 100.0), "CR": (100.0, 100.0),
                                                   "EMR": (100.0, 100.0)}
