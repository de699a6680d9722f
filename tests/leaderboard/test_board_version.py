"""The board's stored state (scoring.boards.board_changed): every action that changes what a
board shows raises its version, and a board request reads it with the benchmark's row, in a
number of queries that does not grow with the board."""

import json
from types import SimpleNamespace

import pytest
from allauth.socialaccount.models import SocialAccount
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import audit_record
from leaderboard.boards import state
from leaderboard.boards.services import reference_results_load
from scoring import aggregation
from scoring.boards import board_changed
from scoring.judge_configs import benchmark_set_judge_config
from scoring.models import Benchmark, ScoringRun
from submissions import moderation
from submissions.rescoring import board_runs_reconcile
from submissions.services import _apply_model_details
from tests.conftest import judge_config

pytestmark = pytest.mark.django_db


def version(benchmark) -> int:
    return Benchmark.objects.get(pk=benchmark.pk).board_version


def _run(benchmark, *, status="finished", config=None, purpose="submission"):
    return ScoringRun.objects.create(
        benchmark=benchmark, judge_config=config or benchmark.judge_config, audio_root="/x",
        judge_model="Qwen3-Omni-30B-A3B-Instruct", prompt_sha256="p" * 64, rounds=3,
        max_attempts=5, status=status, purpose=purpose, total_queries=0,
        status_times={status: timezone.now().isoformat()})


# Each sets its scene (which may raise the version itself) and returns the action measured.

def publish(c):
    submission = c.score_by_slices("Alpha", (50.0, 60.0, 30.0), public=False)
    return lambda: moderation.submission_set_public(actor=c.author, submission=submission,
                                                    public=True)


def hide(c):
    submission = c.score_by_slices("Alpha", (50.0, 60.0, 30.0))
    return lambda: moderation.submission_hide(actor=c.staff, submission=submission,
                                              reason="spam")


def unhide(c):
    submission = c.score_by_slices("Alpha", (50.0, 60.0, 30.0))
    moderation.submission_hide(actor=c.staff, submission=submission, reason="spam")
    return lambda: moderation.submission_hide(actor=c.staff, submission=submission,
                                              reason="fine after all", hidden=False)


def flag(c):
    submission = c.score_by_slices("Alpha", (50.0, 60.0, 30.0))
    return lambda: moderation.submission_flag(actor=c.staff, submission=submission,
                                              reason="outputs look copied")


def delete(c):
    submission = c.score_by_slices("Alpha", (50.0, 60.0, 30.0))
    return lambda: moderation.submission_delete(actor=c.staff, submission=submission,
                                                reason="asked by its author")


def choose_representative(c):
    older = c.score_by_slices("Alpha", (50.0, 60.0, 30.0))
    c.score_by_slices("Alpha", (55.0, 60.0, 30.0))
    return lambda: moderation.model_set_representative(actor=c.author, submission=older)


def finish_a_run(c):
    run = _run(c.benchmark, status=ScoringRun.Status.AGGREGATING)
    return lambda: aggregation.run_aggregate(run.id)


def finish_a_baseline(c):
    run = _run(c.benchmark, status=ScoringRun.Status.AGGREGATING,
               purpose=ScoringRun.Purpose.BASELINE)
    return lambda: aggregation.run_aggregate(run.id)


def make_a_run_current(c):
    submission = c.score_by_slices("Alpha", (50.0, 60.0, 30.0))
    submission.runs.add(_run(c.benchmark))  # a rescore that finished
    return lambda: board_runs_reconcile(benchmark=c.benchmark)


def edit_a_model(c):
    submission = c.score_by_slices("Alpha", (50.0, 60.0, 30.0))
    submission.model_details = {"organisation": "Renamed Lab"}
    return lambda: _apply_model_details(submission)


def reload_reported_results(c):
    path = c.tmp_path / "paper.json"
    path.write_text(json.dumps({"source": "a paper", "models": [
        {"model": "Paper-Model", "note": "", "n_samples": 801,
         "overall": {"IFR": 50.73, "CR": 56.93, "EMR": 4.99}}]}))
    return lambda: reference_results_load(path=path, benchmark_slug="mmae")


def switch_the_judge_config(c):
    other = judge_config(["http://127.0.0.1:10"], seed=99)
    return lambda: benchmark_set_judge_config(actor=c.staff, benchmark=c.benchmark,
                                              config=other, reason="a new judge")


def rename_the_owner(c):
    """The board names each row's owner ("by ..."): a rename anywhere (the admin, a shell)."""
    c.score_by_slices("Alpha", (50.0, 60.0, 30.0))
    c.author.username = "renamed-author"
    return c.author.save


def link_a_github_account(c):
    """"verified" beside the owner's name comes with a GitHub or Hugging Face log-in."""
    c.score_by_slices("Alpha", (50.0, 60.0, 30.0))
    return lambda: SocialAccount.objects.create(user=c.author, provider="github", uid="42")


def unlink_it(c):
    c.score_by_slices("Alpha", (50.0, 60.0, 30.0))
    account = SocialAccount.objects.create(user=c.author, provider="huggingface", uid="42")
    return account.delete


def delete_the_owner(c):
    c.score_by_slices("Alpha", (50.0, 60.0, 30.0))
    return c.author.delete


ACTIONS = [publish, hide, unhide, flag, delete, choose_representative, finish_a_run,
           finish_a_baseline, make_a_run_current, edit_a_model, reload_reported_results,
           switch_the_judge_config, rename_the_owner, link_a_github_account, unlink_it,
           delete_the_owner]


@pytest.mark.parametrize("scene", ACTIONS, ids=[a.__name__ for a in ACTIONS])
def test_each_action_that_changes_a_board_raises_its_version(scene, board, author, staff,
                                                             tmp_path):
    benchmark, score_by_slices = board
    act = scene(SimpleNamespace(benchmark=benchmark, score_by_slices=score_by_slices, author=author,
                                staff=staff, tmp_path=tmp_path))
    before = Benchmark.objects.get(pk=benchmark.pk)
    act()
    after = Benchmark.objects.get(pk=benchmark.pk)
    assert after.board_version > before.board_version
    assert after.board_changed_at >= before.board_changed_at
    assert state.board_stamp(after) != state.board_stamp(before)


def test_an_audit_record_alone_only_writes_the_record(board, staff):
    """Raising the version is the business of the action that changes the board (each one
    above), not of the audit log: a note on the benchmark changes nothing it shows."""
    benchmark, _ = board
    before = version(benchmark)
    event = audit_record(actor=staff, action=AuditEvent.Action.BASELINE, obj=benchmark,
                         reason="a note", benchmark_slug=benchmark.slug)
    assert AuditEvent.objects.filter(pk=event.pk, reason="a note").exists()
    assert version(benchmark) == before


@pytest.mark.parametrize("change", [
    lambda user: setattr(user, "last_login", timezone.now()) or user.save(
        update_fields=["last_login"]),  # every log-in
    lambda user: setattr(user, "first_name", "Ada") or user.save(),
    lambda user: SocialAccount.objects.create(user=user, provider="google", uid="7"),
    lambda user: SocialAccount.objects.filter(user=user).update(extra_data={"login": "x"}),
], ids=["log-in", "first name", "a log-in that verifies nothing", "account data"])
def test_what_the_board_does_not_show_of_an_owner_keeps_its_version(board, author, change):
    benchmark, score_by_slices = board
    score_by_slices("Alpha", (50.0, 60.0, 30.0))
    SocialAccount.objects.create(user=author, provider="github", uid="42")
    before = version(benchmark)
    change(author)
    assert version(benchmark) == before


def test_another_benchmarks_board_keeps_its_version(board, staff):
    benchmark, score_by_slices = board
    other = Benchmark.objects.create(
        slug="other", kind="mmae", version=1, title="Other", sha256="b" * 64,
        source_name="x.json", audio_root="/x", n_items=4, n_criteria=30)
    moderation.submission_flag(actor=staff, submission=score_by_slices("Alpha", (50.0, 60.0, 30.0)),
                               reason="outputs look copied")
    assert version(other) == 0 and version(benchmark) > 0


def test_a_raised_version_asks_a_worker_for_the_new_states_ranges_after_commit(
        board, monkeypatch, django_capture_on_commit_callbacks):
    from celery import current_app

    benchmark, _ = board
    sent = []
    monkeypatch.setattr(current_app, "send_task", lambda name, args: sent.append((name, args)))
    with django_capture_on_commit_callbacks(execute=True):
        board_changed(benchmark.id)
        assert sent == []  # not before the change is committed
    assert sent == [("leaderboard.rank_ranges.refresh_rank_ranges", [benchmark.id])]


@pytest.mark.slow
@pytest.mark.parametrize("url", ["/b/mmae/", "/b/mmae/?dimension=modality&bucket=sound",
                                 "/b/mmae/pivot/?dimension=modality&metric=EMR",
                                 "/b/mmae/compare/", "/api/leaderboards/mmae/"])
@pytest.mark.parametrize("cached", [True, False], ids=["cached", "cold"])
def test_a_board_request_costs_the_same_queries_with_ten_times_the_submissions(
        url, cached, board, client):
    benchmark, score_by_slices = board

    def queries_of_a_visit() -> int:
        client.get(url)
        board_changed(benchmark.id)  # a new state
        if cached:
            client.get(url)
        else:
            cache.clear()
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        return len(queries)

    for i in range(2):
        score_by_slices(f"M{i}", (50.0, 50.0, 10.0 + i), slices={("modality", "sound"): (1, 2, 3)})
    few = queries_of_a_visit()
    for i in range(2, 20):
        score_by_slices(f"M{i}", (50.0, 50.0, 10.0 + i), slices={("modality", "sound"): (1, 2, 3)})
    many = queries_of_a_visit()
    assert many == few
    if cached:  # the benchmark's row and whether its rank ranges are ready
        assert many <= 2
