"""The judge card's checks: the battery's verdicts against the declared honest figures, and the
rank agreement of two judge configs, Kendall's tau checked against a brute-force pair count."""

from itertools import combinations

import numpy as np
import pytest
from django.template.loader import render_to_string
from django.utils import timezone

from leaderboard.boards import judge_checks
from leaderboard.boards.judge_checks import battery, checks_context, kendall_tau, rank_agreement
from scoring.battery import EXPECTED, Expected
from scoring.models import ScoringRun, SliceResult
from tests.conftest import judge_config
from tests.factories import board_benchmark, rescored, scored_submission
from tests.html import assert_in_html, select, texts

pytestmark = pytest.mark.django_db


def baseline(benchmark, label, values, intervals=None, *, config=None, status="finished"):
    run = ScoringRun.objects.create(
        benchmark=benchmark, judge_config=config or benchmark.judge_config, label=label,
        purpose=ScoringRun.Purpose.BASELINE, audio_root="/x", judge_model="judge",
        prompt_sha256="p" * 64, rounds=3, max_attempts=5, status=status,
        missing={"s1": "no other item has an output"} if label == "Shuffled" else {},
        status_times={status: timezone.now().isoformat()})
    SliceResult.objects.create(run=run, dimension="overall", bucket="", n=4, values=values,
                               intervals={m: list(b) for m, b in (intervals or {}).items()})
    return run


def by_row(rows):
    return {(r["row"], r["figure"]): r for r in rows}


def test_a_verdict_reads_the_figure_and_its_interval_against_the_band():
    band = Expected("IFR", 0.0, 10, "why")
    assert judge_checks.verdict(band, 9.9, None) == "as expected"
    assert judge_checks.verdict(band, 10.0, (30, 40)) == "as expected"  # the edge is inside
    assert judge_checks.verdict(band, 14.0, (8.0, 20.0)) == "uncertain"
    assert judge_checks.verdict(band, 14.0, (10.5, 20.0)) == "deviates"
    assert judge_checks.verdict(band, 14.0, None) == "deviates"
    assert judge_checks.verdict(band, None, None) == "not scored"
    assert judge_checks.verdict(Expected("CR", 94.13, 10, ""), 80.0, (78.0, 85.0)) == \
        "uncertain"


def test_every_battery_row_declares_a_figure_with_a_reason():
    assert set(EXPECTED) == {"Identity", "Noise", "Silence", "Reversed", "Shuffled"}
    for expectations in EXPECTED.values():
        for expected in expectations:
            assert expected.metric in ("IFR", "CR", "EMR") and expected.tolerance > 0
            assert expected.why


def test_the_battery_gives_each_declared_figure_its_measure_and_verdict():
    benchmark = board_benchmark()
    baseline(benchmark, "Silence", {"IFR": 31.0, "CR": 4.0, "EMR": 0.0},
             {"IFR": (25.0, 37.0), "CR": (1.0, 8.0), "EMR": (0.0, 0.0)})
    baseline(benchmark, "Reversed", {"IFR": 35.0, "EMR": 6.0}, {"IFR": (28.0, 41.0)})
    baseline(benchmark, "Shuffled", {"IFR": 12.0, "CR": 19.0, "EMR": 1.0})
    baseline(benchmark, "Identity", {"IFR": 50.0, "CR": 60.0, "EMR": 9.0},
             status="failed")  # not finished: not read
    rows = by_row(battery(benchmark))
    assert len(rows) == sum(len(e) for e in EXPECTED.values())
    silence = rows[("Silence", "IFR")]
    assert (silence["measured"], silence["interval"], silence["expected"],
            silence["tolerance"], silence["verdict"]) == (31.0, (25.0, 37.0), 0.0, 10, "deviates")
    assert rows[("Silence", "CR")]["verdict"] == "as expected"
    assert rows[("Reversed", "IFR")]["verdict"] == "uncertain"  # 35 beyond 30, 28 within
    assert rows[("Reversed", "EMR")]["verdict"] == "deviates"
    assert ("Reversed", "CR") not in rows  # no honest figure is declared for it
    assert rows[("Shuffled", "CR")]["verdict"] == "as expected"
    assert rows[("Shuffled", "IFR")]["missing"] == 1
    assert {rows[("Identity", m)]["verdict"] for m in ("IFR", "CR", "EMR")} == {"not scored"}


def test_the_battery_is_read_under_the_judge_config_asked():
    benchmark = board_benchmark()
    other = judge_config(["http://127.0.0.1:9"], seed=99)
    baseline(benchmark, "Silence", {"IFR": 2.0, "CR": 1.0, "EMR": 0.0})
    baseline(benchmark, "Silence", {"IFR": 60.0, "CR": 1.0, "EMR": 0.0}, config=other)
    assert by_row(battery(benchmark))[("Silence", "IFR")]["verdict"] == "as expected"
    theirs = by_row(battery(benchmark, judge_config=other))[("Silence", "IFR")]
    assert (theirs["measured"], theirs["verdict"], theirs["judge_config"]) == (
        60.0, "deviates", other.name)


def brute_tau(a, b) -> float:
    """Kendall's tau-b by counting every pair (the textbook formula, ties corrected)."""
    concordant = discordant = ties_a = ties_b = 0
    for i, j in combinations(range(len(a)), 2):
        da, db = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
        ties_a += da == 0
        ties_b += db == 0
        concordant += da * db > 0
        discordant += da * db < 0
    pairs = len(a) * (len(a) - 1) / 2
    return (concordant - discordant) / np.sqrt((pairs - ties_a) * (pairs - ties_b))


def test_tau_equals_a_brute_force_pair_count_ties_included():
    rng = np.random.default_rng(4)
    for _ in range(20):
        a, b = rng.integers(1, 6, size=9), rng.integers(1, 6, size=9)
        assert kendall_tau(a, b) == pytest.approx(brute_tau(a, b))
    assert kendall_tau([1, 2, 3, 4], [1, 2, 3, 4]) == pytest.approx(1.0)
    assert kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert np.isnan(kendall_tau([1, 1, 1], [1, 2, 3]))


def test_the_interval_is_the_bootstrap_of_tau_over_resampled_rows():
    a, b = [1, 2, 3, 4, 5, 6, 7], [2, 1, 3, 5, 4, 7, 6]
    lo, hi = judge_checks.tau_interval(a, b, resamples=300, seed=8)
    # The same draws, each resample written out with its repeats and counted pair by pair.
    draws = np.random.default_rng(8).integers(0, 7, size=(300, 7))
    taus = [brute_tau(np.array(a)[d], np.array(b)[d]) for d in draws]
    taus = [t for t in taus if not np.isnan(t)]
    assert (lo, hi) == pytest.approx((np.percentile(taus, 2.5), np.percentile(taus, 97.5)))
    assert lo <= kendall_tau(a, b) <= hi
    assert judge_checks.tau_interval(a, b, resamples=300, seed=8) == (lo, hi)


def test_two_configs_rank_agreement_counts_the_shared_public_rows(author, other_author):
    benchmark = board_benchmark()
    second = judge_config(["http://127.0.0.1:9"], seed=42)
    first_emr = [50, 40, 30, 20, 10, 5]
    second_emr = [41, 48, 12, 22, 10, 3]  # the first two swap, and so do the next two
    shown = []
    for number, (mine, theirs) in enumerate(zip(first_emr, second_emr, strict=True)):
        submission = scored_submission(benchmark, author, f"Model {number}",
                                       {("overall", ""): (60.0, 70.0, float(mine))})
        rescored(submission, second, (60.0, 70.0, float(theirs)))
        shown.append(submission)
    # Neither a private nor a hidden submission counts, even scored under both.
    for public, hidden in ((False, False), (True, True)):
        extra = scored_submission(benchmark, other_author, f"Extra {public}",
                                  {("overall", ""): (1.0, 1.0, 1.0)}, public=public)
        extra.hidden = hidden
        extra.save()
        rescored(extra, second, (99.0, 99.0, 99.0))
    # A submission under one config only is not compared.
    scored_submission(benchmark, author, "Once", {("overall", ""): (9.0, 9.0, 9.0)})
    [pair] = rank_agreement(benchmark)
    assert (pair["config_a"], pair["config_b"], pair["n"]) == (
        benchmark.judge_config.name, second.name, 6)
    ranks_a, ranks_b = [1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 5, 6]
    assert pair["tau"] == pytest.approx(brute_tau(np.array(ranks_a), np.array(ranks_b)))
    assert pair["tau_lo"] <= pair["tau"] <= pair["tau_hi"]
    assert [(c["model"], c["rank_a"], c["rank_b"]) for c in pair["changes"]] == [
        ("Model 0", 1, 2), ("Model 1", 2, 1), ("Model 2", 3, 4), ("Model 3", 4, 3)]
    assert {c["submission"] for c in pair["changes"]} <= {s.id for s in shown}
    assert rank_agreement(benchmark) == [pair]  # seeded: the same interval every time


def test_the_partial_shows_the_battery_and_the_changed_rows(author):
    benchmark = board_benchmark()
    second = judge_config(["http://127.0.0.1:9"], seed=42)
    baseline(benchmark, "Silence", {"IFR": 31.0, "CR": 4.0, "EMR": 0.0},
             {"IFR": (25.0, 37.0)})
    for number, (mine, theirs) in enumerate(((30.0, 10.0), (20.0, 20.0), (10.0, 30.0))):
        submission = scored_submission(benchmark, author, f"Model {number}",
                                       {("overall", ""): (5.0, 5.0, mine)})
        rescored(submission, second, (5.0, 5.0, theirs))
    body = render_to_string("leaderboard/_judge_checks.html",
                            {"checks": checks_context(benchmark)})
    assert_in_html('<td class="num">31.00 <small>[25.00, 37.00]</small></td>', body)
    assert "0.00 ± 10.00" in texts(body, "#battery-table td.num")
    assert select(body, "#battery-table tr[class=verdict-deviates]")
    assert select(body, "#battery-table tr[class=verdict-not-scored]")
    assert "Kendall's tau -1.000" in body
    # Model 0 and Model 2 swap; Model 1 keeps its rank
    assert len(select(body, 'a[href^="/s/"]')) == body.count("/s/") == 2


def test_the_judge_card_carries_the_battery_and_the_rank_agreement(client, author):
    benchmark = board_benchmark()
    second = judge_config(["http://127.0.0.1:9"], seed=42)
    baseline(benchmark, "Silence", {"IFR": 31.0, "CR": 4.0, "EMR": 0.0},
             {"IFR": (25.0, 37.0)})
    for number, (mine, theirs) in enumerate(((30.0, 10.0), (20.0, 20.0), (10.0, 30.0))):
        submission = scored_submission(benchmark, author, f"Model {number}",
                                       {("overall", ""): (5.0, 5.0, mine)}, changed=True)
        rescored(submission, second, (5.0, 5.0, theirs))
    body = client.get(f"/api/leaderboards/{benchmark.slug}/judge/").json()
    assert by_row(body["battery"])[("Silence", "IFR")]["verdict"] == "deviates"
    assert [(r["row"], r["figure"]) for r in body["battery"]] == [
        (r["row"], r["figure"]) for r in battery(benchmark)]
    [pair] = body["rank_agreement"]
    assert pair["tau"] == pytest.approx(-1.0) and pair["n"] == 3
    page = client.get(f"/b/{benchmark.slug}/judge/").content.decode()
    assert select(page, "table#battery-table tr[class=verdict-deviates]")
    assert "Kendall's tau -1.000" in page
