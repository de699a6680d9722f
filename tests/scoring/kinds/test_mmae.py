"""MMAE as a kind: per-item rows from answers, and the judge's vote agreement."""

from scoring.kinds import get_kind
from scoring.kinds.mmae import metrics as mmae_metrics
from scoring.kinds.mmae import rules as mmae

KIND = get_kind(mmae.KIND)


def sample(n_rubrics=2):
    rubrics = tuple(mmae.Rubric(index=i, category=mmae.IF_CATEGORY, question=f"q{i}",
                                right_choice="yes", wrong_choices=("no", "maybe"))
                    for i in range(n_rubrics))
    return mmae.Sample(id="s1", complexity="single", modality="sound",
                       granularity=("local",), operations=(("local", "addition"),),
                       messages=[], tags=[], rubrics=rubrics, input_audio=("a.wav",))


def vote(choices, choice, correct_letter="A"):
    return {"choices": choices, "choice": choice,
            "verdict": {"correct": choice == correct_letter, "correct_letter": correct_letter}}


def test_votes_agree_when_every_round_chose_the_same_option_whatever_its_letter():
    answers = {
        # rubric 0: "yes" three times, under three shuffles
        (0, 0): vote(["yes", "no", "maybe"], "A"), (0, 1): vote(["no", "yes", "maybe"], "B",
                                                                "B"),
        (0, 2): vote(["maybe", "no", "yes"], "C", "C"),
        # rubric 1: "yes", "yes", "no": a majority, but no agreement
        (1, 0): vote(["yes", "no", "maybe"], "A"), (1, 1): vote(["yes", "no", "maybe"], "A"),
        (1, 2): vote(["yes", "no", "maybe"], "B"),
    }
    row = KIND.item_result(sample(), "out.wav", answers)
    assert row["rubric_scores"] == [1, 1]
    assert (row["agree"], row["judged"]) == (1, 2)


def test_a_round_without_a_valid_answer_agrees_with_nothing():
    answers = {(0, k): vote(["yes", "no"], "A") for k in range(2)}
    answers[(0, 2)] = vote(["yes", "no"], None)
    assert KIND.item_result(sample(1), "out.wav", answers)["agree"] == 0


def test_agreement_is_over_the_rubrics_judged_on_every_slice():
    rows = [{**mmae_metrics.sample_result(sample(), [1, 0]), "agree": 1, "judged": 2},
            {**mmae_metrics.sample_result(sample(), None), "agree": 0, "judged": 0}]
    summary = KIND.summarize(rows)
    assert summary["overall"]["agreement"] == 50.0 and summary["overall"]["judged"] == 2
    assert summary["modality"]["sound"]["agreement"] == 50.0
    # The SPEC's files keep their own figures only.
    assert set(summary["overall"]) == {"n", "IFR", "CR", "EMR", "agreement", "judged"}


def test_the_per_item_vector_holds_what_the_bootstrap_resamples():
    ifr, cr, em, missing = KIND.item_vector(mmae_metrics.sample_result(sample(), None))
    assert (ifr, em, missing) == (0.0, 0.0, 1.0)
    assert cr != cr  # NaN: the sample has no consistency rubric


def test_a_rubric_is_put_to_the_panel_with_its_options_and_the_audio_it_names():
    rows = KIND.to_rows(mmae.Sample(
        id="s1", complexity="single", modality="sound", granularity=("local",),
        operations=(("local", "addition"),), tags=[], input_audio=("a.wav",),
        messages=[{"role": "user", "content": [{"type": "text", "text": "Add a dog."},
                                               {"type": "audio_url", "audio_url": "a.wav"}]}],
        rubrics=(mmae.Rubric(index=0, category=mmae.IF_CATEGORY, question="A dog?",
                             right_choice="yes", wrong_choices=("no",)),
                 mmae.Rubric(index=1, category="Consistency", right_choice="same",
                             question="Is <audio output[:2s]> like <audio input1>?",
                             wrong_choices=("louder", "quieter")))))
    first, second = (KIND.panel_question(rows, n, "out.wav") for n in (0, 1))
    assert (first.instruction, first.question, first.options, first.audio, first.texts) == \
        ("Add a dog.", "A dog?", ("yes", "no"), ("output",), ())
    assert second.options == ("same", "louder", "quieter")  # the right one first
    assert second.audio == ("output", "input1")
    assert KIND.panel_stratum(rows.dimensions) == "sound / single"


def test_the_judges_verdict_for_the_panel_is_the_rubrics_score():
    values = {"rubric_scores": [1, 0]}
    assert (KIND.panel_verdict(values, 0), KIND.panel_verdict(values, 1)) == (True, False)
