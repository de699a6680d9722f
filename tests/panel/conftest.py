"""A panel board: an MMAE benchmark of real (0.5 s) WAVs, and a factory of submissions whose
finished runs score each rubric as the test says (per-item results and the overall slice as
aggregation stores them; no judge), with their outputs as real WAVs to listen to. Every item
is in the panel's pool (6 of PANEL_POOL_ITEMS), raters are not kept apart in time and rated
results leave the pool at once, unless a test says otherwise; `listen` plays a task's audio
as its rater would."""

import json
import random
from datetime import datetime, timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone

from panel import assignment
from panel.models import PanelAssignment
from scoring.boards import board_changed
from scoring.kinds import get_kind
from scoring.kinds.mmae import metrics as mmae_metrics
from scoring.models import ItemResult, ScoringRun, SliceResult
from scoring.services import benchmark_import
from scoring.synthetic import write_benchmark, write_system
from submissions.models import ModelEntry, Submission
from tests.conftest import cast_member, judge_config

SECONDS = 0.5  # every audio's length


# The panel's settings on a panel board.
PANEL_SETTINGS = {"PANEL_MIN_LISTEN_SECONDS": 10.0, "PANEL_RATERS_PER_TASK": 3,
                  "PANEL_REPEAT_EVERY": 100, "PANEL_POOL_ITEMS": 100, "PANEL_POOL_SHARE": 1.0,
                  "PANEL_SPREAD_SECONDS": 0, "PANEL_RELEASE_SECONDS": 0}


@pytest.fixture
def panel_board(db, tmp_path, settings):
    for name, value in PANEL_SETTINGS.items():
        setattr(settings, name, value)
    return make_panel_board(tmp_path / "mmae")


@pytest.fixture(scope="module")
def module_panel_board(module_db, django_db_blocker, tmp_path_factory):
    """A panel board made once for a module (in module_db: each test's writes roll back),
    with the panel's settings for all of the module's tests."""
    from django.test import override_settings

    with override_settings(**PANEL_SETTINGS), django_db_blocker.unblock():
        yield make_panel_board(tmp_path_factory.mktemp("panel") / "mmae")


def make_panel_board(root) -> SimpleNamespace:
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
            columns = kind.item_columns(row)
            ItemResult.objects.create(run=made, item=item, position=item.position, **columns,
                                      failed=kind.failed(columns))
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


@pytest.fixture
def seeded(monkeypatch):
    """The drawing's randomness seeded, so that a test's plan gives the same tasks each run."""
    monkeypatch.setattr(assignment, "RANDOM", random.Random(7))


def heard(task: dict) -> dict:
    """Every audio of a task listened to in full, as the rater's page reports it."""
    return {label: SECONDS for label in task["audio"]}


def played_since(assignment_id: int, seconds: float = SECONDS) -> None:
    """The times an assignment's audio was sent moved `seconds` back: as if each had been
    playing since (the server checks the time elapsed, not the client's word)."""
    found = PanelAssignment.objects.get(pk=assignment_id)
    found.served = {label: {**sent, "at": (datetime.fromisoformat(sent["at"])
                                           - timedelta(seconds=seconds)).isoformat()}
                    for label, sent in found.served.items()}
    found.save(update_fields=["served"])


def listen(client, task: dict) -> dict:
    """Fetch every audio of the task as its rater (each must be sent whole) and let it play
    through: what the rater's page then reports (`heard`)."""
    for url in task["audio"].values():
        response = client.get(url)
        assert response.status_code == 200, (url, response.content.decode()[-1500:])
        assert b"".join(response.streaming_content)[:4] == b"RIFF"
    if task["audio"]:
        played_since(PanelAssignment.objects.get(
            task_id=task["task"], answered=False,
            rater_id=int(client.session["_auth_user_id"])).pk)
    return heard(task)


def letter(task: dict, text: str, *, right: bool) -> str:
    """The letter of the option with `text` (right) or of another one (wrong)."""
    return next(c["letter"] for c in task["choices"] if (c["text"] == text) == right)
