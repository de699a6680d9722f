"""Rescoring end to end in-process (batches scored here, against judge simulators): the
judgment cache, a changed config, the board switching runs, and audit records. The first
scoring is done once for the module; each test's rescoring rolls back."""

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from audit.models import AuditEvent
from config.errors import ServiceError
from leaderboard.boards.selectors import leaderboard_rows
from scoring import aggregation, query_loop, runs, synthetic
from scoring.judge_configs import benchmark_set_judge_config
from scoring.kinds.mmae.predictions import load_predictions
from scoring.models import Answer, ScoringRun, SliceResult
from scoring.services import benchmark_import
from submissions import tasks as submission_tasks
from submissions.models import ModelEntry, Submission
from submissions.rescoring import (
    RescoreFilter,
    board_runs_reconcile,
    rescore_candidates,
    rescore_plan,
    submissions_rescore,
)
from tests.conftest import ThreadSimulator, judge_config, reread, write_demo_set
from tests.html import one, select

# `slow`: its shared set-up (module_scoring: a submission scored by a judge in a thread) takes 1.4 s
pytestmark = [pytest.mark.django_db, pytest.mark.slow]

WORKER = query_loop.JudgeSettings(concurrency=8, timeout=10, down_wait=1)


def score(run: ScoringRun) -> ScoringRun:
    """Score every batch of a run here, aggregate it, and reconcile as the periodic task
    does."""
    for batch in run.batches.order_by("index"):
        assert query_loop.batch_score(batch.id, WORKER)
    assert runs.run_try_aggregate(run.id) and aggregation.run_aggregate(run.id)
    submission_tasks.reconcile()
    run.refresh_from_db()
    assert run.status == "finished"
    return run


@pytest.fixture(autouse=True)
def _batches_of_five(settings):
    settings.SCORING_BATCH_ITEMS = 5


@pytest.fixture(scope="module")
def module_scoring(module_cast, django_db_blocker, tmp_path_factory):
    """Made once for the module (in module_db): a public submission of system A scored under
    config A (the benchmark's current one), by a judge simulator (in a thread) kept for the
    module; `asked`, the queries that scoring sent it."""
    demo_set = write_demo_set(tmp_path_factory.mktemp("demo") / "mmae")
    sim = ThreadSimulator(latency_ms=1)
    with django_db_blocker.unblock(), override_settings(SCORING_BATCH_ITEMS=5):
        benchmark, _ = benchmark_import(kind="mmae", path=demo_set["meta"],
                                        audio_root=demo_set["root"], slug="mmae")
        config = judge_config(sim.urls, seed=11, benchmark=benchmark)
        outputs = {p.sample_id: p.audio_path for p in load_predictions(
            demo_set["predictions"], known_ids={s["id"] for s in demo_set["samples"]})}
        run = runs.run_create(benchmark=benchmark, audio_root=str(demo_set["root"]),
                              outputs=outputs, missing={})
        assert run.judge_config == config
        score(run)
        author = module_cast["author"]
        model = ModelEntry.objects.create(owner=author, name="Echo Editor")
        submission = Submission.objects.create(owner=author, model=model, benchmark=benchmark,
                                               public=True, status="queued", current_run=run,
                                               coverage=1.0)
        submission.runs.add(run)
    yield {"benchmark": benchmark, "config": config, "sim": sim, "run": run,
           "submission": submission, "outputs": outputs, "demo_set": demo_set,
           "asked": sim.completions()}
    sim.stop()


@pytest.fixture
def first_scoring(module_scoring, db):
    """The module's first scoring, its rows read again for this test."""
    return reread(module_scoring)


@pytest.fixture
def demo_set(module_scoring):
    return module_scoring["demo_set"]


def rescore(first_scoring, config, staff, reason="judge upgrade") -> ScoringRun:
    submission = Submission.objects.get(id=first_scoring["submission"].id)
    (run,) = submissions_rescore(actor=staff, benchmark=first_scoring["benchmark"],
                                 submissions=[submission], config=config, reason=reason)
    return run


def overall(run):
    figures = SliceResult.objects.get(run=run, dimension="overall")
    return tuple(figures.values[m] for m in ("IFR", "CR", "EMR"))


def test_a_rescore_under_the_same_config_asks_the_judge_nothing(first_scoring, staff):
    sim, first = first_scoring["sim"], first_scoring["run"]
    asked = sim.completions()
    assert first_scoring["asked"] == first.total_queries
    plan = rescore_plan(benchmark=first_scoring["benchmark"],
                        submissions=[first_scoring["submission"]],
                        config=first_scoring["config"])
    assert (plan.total, plan.cached, plan.queries) == (first.total_queries,
                                                       first.total_queries, 0)
    run = score(rescore(first_scoring, first_scoring["config"], staff))
    assert sim.completions() == asked  # not one query more
    assert Answer.objects.filter(run=run, cached=True).count() == run.total_queries
    assert overall(run) == overall(first)
    assert run.purpose == "rescore" and run.simulated
    submission = Submission.objects.get(id=first_scoring["submission"].id)
    assert submission.current_run == run  # finished under the current config: on the board
    assert set(submission.runs.all()) == {first, run}


def test_a_rescore_under_another_config_changes_figures_only_once_made_current(
        first_scoring, staff, thread_simulator_factory):
    other = thread_simulator_factory(latency_ms=1, seed=5)
    config_b = judge_config(other.urls, seed=12)
    first = first_scoring["run"]
    plan = rescore_plan(benchmark=first_scoring["benchmark"],
                        submissions=[first_scoring["submission"]],
                        config=config_b)
    assert plan.cached == 0 and plan.queries == first.total_queries
    run = score(rescore(first_scoring, config_b, staff))
    assert other.completions() == first.total_queries
    assert overall(run) != overall(first)
    benchmark = first_scoring["benchmark"]
    benchmark.refresh_from_db()
    # The board still shows the run under the current config A; the new one waits.
    assert Submission.objects.get(id=first_scoring["submission"].id).current_run == first
    (row,) = leaderboard_rows(benchmark=benchmark)
    assert (row["IFR"], row["CR"], row["EMR"]) == overall(first)

    benchmark_set_judge_config(actor=staff, benchmark=benchmark, config=config_b,
                               reason="new judge")
    benchmark.refresh_from_db()
    assert leaderboard_rows(benchmark=benchmark) == []  # until the reconcile
    assert board_runs_reconcile(benchmark=benchmark) == 1
    assert board_runs_reconcile(benchmark=benchmark) == 0  # nothing left to move
    benchmark.refresh_from_db()  # the board's state (its version) moved on
    (row,) = leaderboard_rows(benchmark=benchmark)
    assert (row["IFR"], row["CR"], row["EMR"]) == overall(run)
    assert ScoringRun.objects.filter(id=first.id, status="finished").exists()  # kept
    events = AuditEvent.objects.filter(benchmark_slug="mmae").order_by("id")
    assert [(e.action, e.actor_name) for e in events] == [("rescore", "staff"),
                                                         ("judge_config", "staff")]
    assert events[0].before == {"run": first.id, "judge_config": first_scoring["config"].name}
    assert events[0].after == {"run": run.id, "judge_config": config_b.name}
    assert events[1].after == {"judge_config": config_b.name} and events[1].public


def test_a_resubmission_costs_only_its_changed_samples(first_scoring, demo_set, staff):
    sim, first = first_scoring["sim"], first_scoring["run"]
    asked = sim.completions()
    changed = sorted(first_scoring["outputs"])[:2]
    root = demo_set["root"]
    outputs = dict(first_scoring["outputs"])
    for number, key in enumerate(changed):
        path = f"systems/resubmitted/{key}.wav"
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        synthetic.write_wav(root / path, seconds=1.0, frequency=440.0 + 50 * number, seed=number)
        outputs[key] = path
    run = runs.run_create(benchmark=first_scoring["benchmark"], audio_root=str(root),
                          outputs=outputs, missing={})
    score(run)
    per_item = {key: first.benchmark.items.get(key=key).criteria.count() for key in changed}
    assert sim.completions() - asked == sum(per_item.values()) * first.rounds
    assert Answer.objects.filter(run=run, cached=False).count() == \
        sum(per_item.values()) * first.rounds


def test_a_failed_query_is_never_reused(first_scoring, staff):
    first = first_scoring["run"]
    answer = Answer.objects.filter(run=first).first()
    Answer.objects.filter(id=answer.id).update(error="timed out", choice=None)
    plan = rescore_plan(benchmark=first_scoring["benchmark"],
                        submissions=[first_scoring["submission"]],
                        config=first_scoring["config"])
    assert plan.queries == 1
    asked = first_scoring["sim"].completions()
    score(rescore(first_scoring, first_scoring["config"], staff))
    assert first_scoring["sim"].completions() == asked + 1


def test_a_rescore_needs_a_reason_and_a_config_for_the_same_prompts(first_scoring, staff):
    with pytest.raises(ServiceError, match="needs a reason"):
        rescore(first_scoring, first_scoring["config"], staff, reason=" ")
    foreign = judge_config(["http://127.0.0.1:9"], prompt_sha256="0" * 64)
    with pytest.raises(ServiceError, match="other prompts"):
        rescore(first_scoring, foreign, staff)
    assert ScoringRun.objects.count() == 1 and not AuditEvent.objects.exists()


def test_submissions_with_a_run_in_progress_are_not_candidates(first_scoring, staff):
    rescore(first_scoring, first_scoring["config"], staff)
    assert list(rescore_candidates(benchmark=first_scoring["benchmark"])) == []


def test_filters_pick_submissions(first_scoring, author):
    benchmark = first_scoring["benchmark"]
    where = RescoreFilter(model_contains="echo")
    assert list(rescore_candidates(benchmark=benchmark, where=where)) == \
        [first_scoring["submission"]]
    assert not rescore_candidates(benchmark=benchmark,
                                  where=RescoreFilter(model_contains="vox")).exists()
    assert not rescore_candidates(benchmark=benchmark,
                                  where=RescoreFilter(state="failed")).exists()


def test_rescoring_work_goes_to_the_rescoring_queue(first_scoring, staff, settings):
    settings.SCORING_RESCORE_QUEUE = "rescore-q"
    run = rescore(first_scoring, first_scoring["config"], staff)
    batches = list(run.batches.values_list("id", flat=True))
    assert set(runs.batch_queues(batches).values()) == {"rescore-q"}
    first = list(first_scoring["run"].batches.values_list("id", flat=True))
    assert set(runs.batch_queues(first).values()) == {settings.CELERY_TASK_DEFAULT_QUEUE}


# --- the command -------------------------------------------------------------------------


def test_the_command_dry_run_counts_submissions_and_queries(first_scoring, capsys):
    call_command("rescore", "--benchmark", "mmae", "--dry-run")
    out = capsys.readouterr().out
    assert f"1 submission(s) of mmae v1 under {first_scoring['config'].name}: 0 judge queries " \
           f"({first_scoring['run'].total_queries} answers needed, " \
           f"{first_scoring['run'].total_queries} from the judgment cache)" in out
    assert ScoringRun.objects.count() == 1


def test_the_command_needs_an_actor_and_a_confirmation(first_scoring, monkeypatch):
    with pytest.raises(CommandError, match="--actor"):
        call_command("rescore", "--benchmark", "mmae", "--reason", "x")
    monkeypatch.setattr("builtins.input", lambda prompt: "nope")
    with pytest.raises(CommandError, match="not confirmed"):
        call_command("rescore", "--benchmark", "mmae", "--reason", "x", "--actor", "staff")
    with pytest.raises(CommandError, match="no judge config named 'zz'"):
        call_command("rescore", "--benchmark", "mmae", "--config", "zz", "--dry-run")
    with pytest.raises(CommandError, match="no benchmark 'nope'"):
        call_command("rescore", "--benchmark", "nope", "--dry-run")
    assert ScoringRun.objects.count() == 1


def test_the_command_rescores_once_confirmed(first_scoring, monkeypatch, capsys):
    monkeypatch.setattr("builtins.input", lambda prompt: "mmae")
    call_command("rescore", "--benchmark", "mmae", "--reason", "check", "--actor", "staff",
                 "--submission", str(first_scoring["submission"].id))
    assert "queued 1 rescoring run(s)" in capsys.readouterr().out
    assert ScoringRun.objects.filter(purpose="rescore").count() == 1
    assert AuditEvent.objects.get().reason == "check"


def test_the_submission_page_lists_every_run_with_its_files(first_scoring, staff, client, author):
    first = first_scoring["run"]
    run = score(rescore(first_scoring, first_scoring["config"], staff))
    submission = first_scoring["submission"]
    client.force_login(author)
    body = client.get(f"/submissions/{submission.id}/").content.decode()
    assert len(select(body, "#runs tr")) == 3 and one(body, "#runs h2").text == "Scoring runs"
    rows = select(body, "#runs tbody tr")  # the first run and its rescore
    cached = [row.select("td")[5].text for row in rows]  # the column of cached answers
    assert f"{run.total_queries} of {run.total_queries}" in cached  # all from the cache
    response = client.get(f"/submissions/{submission.id}/files/results.jsonl?run={first.id}")
    assert response.status_code == 200
    assert response["Content-Disposition"].endswith(f'-run{first.id}-results.jsonl"')
    assert client.get(f"/submissions/{submission.id}/files/results.jsonl?run=999999") \
        .status_code == 404
    assert client.get(f"/submissions/{submission.id}/files/results.jsonl?run=x") \
        .status_code == 404
    data = client.get(f"/api/submissions/{submission.id}/").json()
    assert [(r["id"], r["purpose"]) for r in data["runs"]] == [(run.id, "rescore"),
                                                               (first.id, "submission")]
