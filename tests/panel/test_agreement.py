"""The human figures' arithmetic on tables whose answers are known by hand."""

import pytest

from panel import agreement
from panel.agreement import Rated


def rated(judge, *rights, buckets=None, item="", raters=None):
    return Rated(judge=judge, rights=tuple(rights),
                 raters=tuple(raters if raters is not None else range(len(rights))),
                 buckets=buckets or {}, item=item)


def test_the_majority_is_the_human_verdict_and_a_tie_has_none():
    assert agreement.human_verdict([True, True, False]) is True
    assert agreement.human_verdict([True, False, False]) is False
    assert agreement.human_verdict([True, False]) is None
    assert agreement.human_verdict([]) is None


def test_kappa_of_a_known_table():
    # 20 both yes, 5 human only, 10 judge only, 15 both no: p_o 0.7, p_e 0.5, kappa 0.4.
    pairs = ([(True, True)] * 20 + [(True, False)] * 5 + [(False, True)] * 10
             + [(False, False)] * 15)
    assert agreement.agreement(pairs) == pytest.approx(0.7)
    assert agreement.kappa(pairs) == pytest.approx(0.4)
    assert agreement.kappa([(True, True)] * 3) is None  # chance agreement is total


def test_rubrics_with_one_answer_or_a_tie_are_left_out_but_pairs_count_ties():
    rubrics = [rated(True, True, True), rated(False, True, False), rated(True, False),
               rated(True, False, False, True)]
    block = agreement.block(rubrics, seed=1)
    assert block["rubrics"] == 2  # the tie and the single answer are out
    assert block["answers"] == 8
    assert block["agreement"] == pytest.approx(1 / 2)
    # pairs: 1 agreeing of 1, the tie's 0 of 1, none, 1 of 3 (the two False)
    assert block["human_human"] == pytest.approx((1 + 0 + 1) / (1 + 1 + 3))


def test_intervals_are_seeded_and_hold_the_figure():
    rubrics = [rated(k % 3 == 0, True, k % 2 == 0, True, item=f"item{k}") for k in range(30)]
    one, two = agreement.block(rubrics, seed=7), agreement.block(rubrics, seed=7)
    assert one == two
    assert one["agreement_lo"] <= one["agreement"] <= one["agreement_hi"]
    assert one["agreement_lo"] < one["agreement_hi"]
    assert one["kappa_lo"] <= one["kappa"] <= one["kappa_hi"]


def test_no_answer_gives_no_figure():
    block = agreement.human([], seed=1, dimensions=("category",))
    assert block["rubrics"] == 0 and block["agreement"] is None
    assert block["agreement_lo"] is None and block["kappa"] is None
    assert block["by"] == {"category": {}}


def test_buckets_hold_their_own_rubrics():
    rubrics = [rated(True, True, True, buckets={"operation": ["a", "b"]}),
               rated(False, True, True, buckets={"operation": ["b"]})]
    by = agreement.human(rubrics, seed=1, dimensions=("operation",))["by"]["operation"]
    assert by["a"]["agreement"] == 1.0 and by["b"]["agreement"] == 0.5


def test_self_consistency_compares_the_chosen_options():
    assert agreement.self_consistency([("x", "x"), ("x", "y")]) == 0.5
    assert agreement.self_consistency([]) is None


def test_intervals_resample_items_with_all_their_rubrics():
    """Ten items of four rubrics each, the judge agreeing with the panel on whole items or on
    none: resampling items, a replicate's agreement is a multiple of a quarter of its items'
    rubrics; computed here by brute force from the same seeded draws."""
    import numpy as np

    rubrics = [rated(k % 3 == 0, True, True, False, item=f"item{k}")
               for k in range(10) for _ in range(4)]
    block = agreement.block(rubrics, seed=3)
    keys = sorted({r.item for r in rubrics})
    draws = np.random.default_rng(3).integers(0, len(keys), size=(1000, len(keys)))
    agrees = {key: [r.judge is True for r in rubrics if r.item == key] for key in keys}
    shares = [np.mean([a for k in row for a in agrees[keys[k]]]) for row in draws]
    assert block["agreement"] == pytest.approx(4 / 10)
    assert (block["agreement_lo"], block["agreement_hi"]) == pytest.approx(
        tuple(np.percentile(shares, [2.5, 97.5])))


def brute_alternative_annotator_test(rubrics, epsilon, alpha=0.05):
    """The test as its paper writes it, one loop per rater, with the BY correction written
    out: p_(i) * m * c(m) / i, made monotone from the largest down."""
    from math import sqrt

    from scipy.stats import t as student

    raters = sorted({r for rubric in rubrics for r in rubric.raters})
    found = []
    for rater in raters:
        d = []
        for rubric in rubrics:
            if rater not in rubric.raters or len(rubric.rights) < 3:
                continue
            k = rubric.raters.index(rater)
            others = [x for i, x in enumerate(rubric.rights) if i != k]
            s_judge = sum(x == rubric.judge for x in others) / len(others)
            s_rater = sum(x == rubric.rights[k] for x in others) / len(others)
            d.append(int(s_judge >= s_rater) - int(s_rater >= s_judge))
        if len(d) < agreement.MIN_RUBRICS:
            continue
        n, mean = len(d), sum(d) / len(d)
        sd = sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
        p = (0.0 if mean > -epsilon else 1.0) if sd == 0 else \
            1 - student.cdf((mean + epsilon) / (sd / sqrt(n)), n - 1)
        found.append(p)
    m = len(found)
    c = sum(1 / i for i in range(1, m + 1))
    order = sorted(range(m), key=lambda i: found[i])
    adjusted = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, found[i] * m * c / rank)
        adjusted[i] = min(running, 1.0)
    return sum(p <= alpha for p in adjusted) / m if m else None


@pytest.mark.parametrize("judge_good", [True, False])
def test_the_alternative_annotator_test_against_a_brute_force_count(judge_good):
    """Four raters on 24 rubrics of 3 raters each: a judge that follows the majority can
    stand in for a rater, one that says the opposite cannot."""
    import random

    chance = random.Random(5)
    rubrics = []
    for k in range(24):
        truth = chance.random() < 0.5
        who = chance.sample(range(4), 3)
        rights = tuple(truth if chance.random() < 0.8 else not truth for _ in who)
        majority = sum(rights) >= 2
        rubrics.append(rated(majority if judge_good else not majority, *rights,
                             raters=who, item=f"i{k}"))
    test = agreement.alternative_annotator_test(rubrics, epsilon=0.1)
    wanted = brute_alternative_annotator_test(rubrics, 0.1)
    assert test["winning_rate"] == pytest.approx(wanted)
    assert test["verdict"] == ("yes" if judge_good else "no")
    assert test["epsilon"] == 0.1 and len(test["raters"]) >= agreement.MIN_RATERS


def test_too_few_raters_is_not_enough_answers():
    rubrics = [rated(True, True, True, True, raters=(1, 2, 3), item=f"i{k}") for k in range(5)]
    test = agreement.alternative_annotator_test(rubrics)
    assert (test["verdict"], test["winning_rate"]) == ("not enough answers", None)


def test_prediction_powered_inference_is_its_published_formula():
    """theta = mean(f) over all N + mean(Y - f) over the n labelled; the interval is theta
    +- 1.96 sqrt(var(f)/N + var(Y - f)/n), sample variances: written out here."""
    from statistics import mean, variance

    judged = [True] * 70 + [False] * 30
    labelled = [(True, True)] * 12 + [(False, True)] * 5 + [(True, False)] * 1 \
        + [(False, False)] * 6
    found = agreement.prediction_powered(judged, labelled)
    f = [float(x) for x in judged]
    rect = [float(y) - float(j) for y, j in labelled]
    theta = mean(f) + mean(rect)
    half = 1.959963984540054 * (variance(f) / len(f) + variance(rect) / len(rect)) ** 0.5
    assert found["judge"] == pytest.approx(0.7)
    assert found["corrected"] == pytest.approx(theta) and theta == pytest.approx(0.7 - 4 / 24)
    assert (found["corrected_lo"], found["corrected_hi"]) == pytest.approx(
        (theta - half, theta + half))
    assert (found["rubrics"], found["labelled"]) == (100, 24)
    none = agreement.prediction_powered(judged, labelled[:1])
    assert none["corrected"] is None and none["judge"] == pytest.approx(0.7)
