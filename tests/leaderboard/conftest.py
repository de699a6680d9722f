import pytest
from django.utils import timezone

from scoring.models import Benchmark, ScoringRun, SliceResult
from submissions.models import ModelEntry, Submission
from tests.conftest import judge_config


@pytest.fixture
def board(db, author):
    """A benchmark and a factory of scored submissions with figures given per slice."""
    benchmark = Benchmark.objects.create(
        slug="mmae", kind="mmae", version=1, title="MMAE", sha256="a" * 64,
        source_name="MMAE-meta.json", audio_root="/x", n_items=4, n_criteria=30)
    config = judge_config(["http://127.0.0.1:9"], benchmark=benchmark)

    def scored(name, overall, *, slices=None, public=True, status="finished", owner=None,
               open_weights=False, licence="MIT", organisation="Lab", intervals=None,
               coverage=1.0):
        model, _ = ModelEntry.objects.get_or_create(
            owner=owner or author, name=name,
            defaults={"organisation": organisation, "open_weights": open_weights,
                      "licence": licence})
        run = ScoringRun.objects.create(
            benchmark=benchmark, judge_config=config, audio_root="/x",
            judge_model="Qwen3-Omni-30B-A3B-Instruct",
            prompt_sha256="p" * 64, rounds=3, max_attempts=5, status=status,
            status_times={status: timezone.now().isoformat()})
        figures = {("overall", ""): overall, **(slices or {})}
        for (dimension, bucket), (ifr, cr, emr) in figures.items():
            bounds = (intervals or {}).get((dimension, bucket), {})
            SliceResult.objects.create(
                run=run, dimension=dimension, bucket=bucket, n=4,
                values={"n": 4, "IFR": ifr, "CR": cr, "EMR": emr},
                intervals={m: [lo, hi] for m, (lo, hi) in bounds.items()})
        submission = Submission.objects.create(
            owner=owner or author, model=model, benchmark=benchmark, public=public,
            status="queued", current_run=run, coverage=coverage)
        submission.runs.add(run)
        return submission

    return benchmark, scored
