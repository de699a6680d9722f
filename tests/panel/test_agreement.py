"""The human figures' arithmetic on tables whose answers are known by hand."""

import pytest

from panel import agreement
from panel.agreement import Rated


def rated(judge, *rights, buckets=None):
    return Rated(judge=judge, rights=tuple(rights), raters=tuple(range(len(rights))),
                 buckets=buckets or {})


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
    rubrics = [rated(k % 3 == 0, True, k % 2 == 0, True) for k in range(30)]
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
