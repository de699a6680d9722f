"""The read API and its CSV carry the diagnostic rows the board shows (the calibration baselines
Identity and Noise scored here), marked and never ranked."""

import csv
import io

import pytest
from django.utils import timezone

from scoring.boards import board_changed
from scoring.models import ScoringRun, SliceResult

pytestmark = pytest.mark.django_db


@pytest.fixture
def with_baselines(board):
    benchmark, score_by_slices = board
    score_by_slices("Echo Editor", (60.0, 70.0, 40.0))
    for label, (ifr, cr, emr) in (("Identity", (10.0, 95.0, 5.0)), ("Noise", (2.0, 3.0, 0.0))):
        run = ScoringRun.objects.create(
            benchmark=benchmark, judge_config=benchmark.judge_config, audio_root="/x",
            judge_model="Qwen3-Omni-30B-A3B-Instruct", prompt_sha256="p" * 64, rounds=3,
            max_attempts=5, status="finished", purpose=ScoringRun.Purpose.BASELINE,
            label=label, status_times={"finished": timezone.now().isoformat()})
        SliceResult.objects.create(run=run, dimension="overall", bucket="", n=4,
                                   values={"n": 4, "IFR": ifr, "CR": cr, "EMR": emr})
    board_changed(benchmark.id)
    return benchmark


def test_the_json_lists_them_apart_from_the_ranked_rows(client, with_baselines):
    body = client.get("/api/leaderboards/mmae/").json()
    assert [r["model"] for r in body["rows"]] == ["Echo Editor"]
    assert [(d["model"], d["diagnostic"], d["EMR"], d["n"]) for d in body["diagnostic"]] == [
        ("Identity", True, 5.0, 4), ("Noise", True, 0.0, 4)]
    assert all(d["judge_config"] == with_baselines.judge_config.name
               for d in body["diagnostic"])


def test_the_csv_marks_them_on_its_first_page(client, with_baselines):
    text = client.get("/api/leaderboards/mmae/?format=csv").content.decode()
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert [(r["model"], r["row"], r["rank"]) for r in rows] == [
        ("Echo Editor", "ranked", "1"), ("Identity", "diagnostic", ""),
        ("Noise", "diagnostic", "")]
    assert rows[1]["IFR"] == "10.0"
