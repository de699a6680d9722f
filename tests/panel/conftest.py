"""A panel board: an MMAE benchmark of real (0.5 s) WAVs, and a factory of submissions whose
finished runs score each rubric as the test says (per-item results and the overall slice as
aggregation stores them; no judge), with their outputs as real WAVs to listen to."""

import json
from types import SimpleNamespace

import pytest
from django.utils import timezone

from panel import assignment
from scoring.boards import board_changed
from scoring.kinds import get_kind
from scoring.kinds.mmae import metrics as mmae_metrics
from scoring.models import ItemResult, ScoringRun, SliceResult
from scoring.services import benchmark_import
from scoring.synthetic import write_benchmark, write_system
from submissions.models import ModelEntry, Submission
from tests.conftest import cast_member, judge_config

SECONDS = 0.5  # every audio's length


@pytest.fixture
def panel_board(db, tmp_path, settings):
    settings.PANEL_MIN_LISTEN_SECONDS = 10.0
    settings.PANEL_RATERS_PER_TASK = 3
    settings.PANEL_REPEAT_EVERY = 100
    assignment._strata_kept.clear()
    root = tmp_path / "mmae"
    samples = json.loads(write_benchmark(root, 6, seed=4, seconds=SECONDS).read_text())
    benchmark, _ = benchmark_import(kind="mmae", path=root / "MMAE-meta.json", audio_root=root,
                                    slug="mmae")
    config = judge_config(["http://127.0.0.1:9"], benchmark=benchmark)
    kind = get_kind("mmae")
    items = list(benchmark.items.prefetch_related("criteria").order_by("position"))

    def run(name, scores, *, config=config):
        """A finished run of `name`'s outputs under `config`: scores(item, criterion) -> 0/1."""
        write_system(root, samples, name=name, seed=len(name), seconds=SECONDS)
        made = ScoringRun.objects.create(
            benchmark=benchmark, judge_config=config, audio_root=str(root),
            outputs={s["id"]: f"systems/{name}/{s['id']}.wav" for s in samples},
            judge_model=config.judge_model, prompt_sha256=config.prompt_sha256, rounds=3,
            max_attempts=5, status="finished", seed=config.seed,
            status_times={"finished": timezone.now().isoformat()})
        rows = []
        for item in items:
            sample = kind.from_rows(item.as_rows())
            row = mmae_metrics.sample_result(sample, [scores(item, c) for c in
                                                      item.ordered_criteria()])
            row = {**row, "agree": 0, "judged": len(row["rubric_scores"])}
            rows.append(row)
            ItemResult.objects.create(run=made, item=item, position=item.position,
                                      **kind.item_columns(row))
        SliceResult.objects.create(run=made, dimension="overall", bucket="", n=len(rows),
                                   values={**mmae_metrics.summarize(rows), "agreement": 75.0,
                                           "judged": 40})
        return made

    def score_by_criteria(name, owner, scores=lambda item, criterion: 1, *, public=True):
        """`owner`'s published submission of `name`: scores(item, criterion) -> 0/1."""
        return submission_of(run(name, scores), name, owner, public=public)

    return SimpleNamespace(benchmark=benchmark, score_by_criteria=score_by_criteria, run=run,
                           items=items, config=config, root=root)


def submission_of(run: ScoringRun, name: str, owner, *, public=True) -> Submission:
    """`owner`'s submission of model `name` whose current run is `run`, on its board."""
    model, _ = ModelEntry.objects.get_or_create(owner=owner, name=name,
                                                defaults={"organisation": "Lab"})
    submission = Submission.objects.create(
        owner=owner, model=model, benchmark=run.benchmark, public=public, status="queued",
        current_run=run, coverage=1.0)
    submission.runs.add(run)
    board_changed(run.benchmark_id)
    return submission


@pytest.fixture
def raters(django_user_model):
    """`raters(n)`: n raters with confirmed addresses, rater1 ... rater<n>."""
    return lambda n: [cast_member(django_user_model, f"rater{k}", f"rater{k}@example.com")
                      for k in range(1, n + 1)]


def heard(task: dict) -> dict:
    """Every audio of a task listened to in full."""
    return {label: SECONDS for label in task["audio"]}


def letter(task: dict, text: str, *, right: bool) -> str:
    """The letter of the option with `text` (right) or of another one (wrong)."""
    return next(c["letter"] for c in task["choices"] if (c["text"] == text) == right)
