"""Staff rescoring in Chromium: log in, dry run, typed confirmation, calibration baselines."""

import pytest
from playwright.sync_api import expect

from audit.models import AuditEvent
from scoring import aggregation, query_loop, runs
from scoring.models import ScoringRun
from submissions.models import ModelEntry, Submission
from tests.browser.test_board_in_browser import in_thread
from tests.conftest import CAST_PASSWORD, demo_run

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True),
              pytest.mark.timeout(120)]


@pytest.fixture
def judged(demo_set, author, staff, thread_simulator_factory, settings, tmp_path):
    """A public submission judged to the end under the benchmark's current config."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.SCORING_BATCH_ITEMS = 20
    sim = thread_simulator_factory(latency_ms=1)
    benchmark, run = demo_run(demo_set, sim.urls)
    worker = query_loop.JudgeSettings(concurrency=8, timeout=10, down_wait=1)

    def score():
        for batch in run.batches.all():
            assert query_loop.batch_score(batch.id, worker)
        assert runs.run_try_aggregate(run.id) and aggregation.run_aggregate(run.id)

    in_thread(score)
    model = ModelEntry.objects.create(owner=author, name="Echo Editor")
    submission = Submission.objects.create(owner=author, model=model, benchmark=benchmark,
                                           public=True, status="queued", current_run=run)
    submission.runs.add(run)
    return submission


def log_in(page, username):
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(CAST_PASSWORD)
    page.get_by_role("button", name="Log in").click()


def test_staff_rescore_after_a_dry_run_and_queue_the_baselines(page, screenshot, judged):
    log_in(page, "staff")
    page.goto("/staff/rescore/")
    page.get_by_label("Benchmark").select_option("mmae")
    expect(page.get_by_role("heading", name="Rescore", exact=True)).to_be_visible()
    page.get_by_label("every submission of the benchmark").check()
    page.get_by_label("Reason").first.fill("checking the new judge host")
    page.get_by_role("button", name="Dry run").click()
    dry_run = page.locator("#dry-run")
    expect(dry_run).to_contain_text("1 submission(s)")
    expect(dry_run).to_contain_text("0 judge queries")  # every answer is in the cache
    screenshot("dry-run")
    page.get_by_label("Type the benchmark's slug to confirm").first.fill("mmae")
    page.get_by_role("button", name="Rescore 1 submission(s)").click()
    expect(page.locator(".notice")).to_contain_text("1 rescoring run(s) queued")
    page.get_by_role("button", name="Score the calibration baselines").click()
    expect(page.locator(".notice")).to_contain_text("calibration baselines queued")
    expect(page.locator("table.board")).to_contain_text("baseline: Identity")
    screenshot("queued")
    assert ScoringRun.objects.filter(purpose="rescore").count() == 1
    # Identity, Noise and the battery (Shuffled from the one public submission).
    assert ScoringRun.objects.filter(purpose="baseline").count() == 5
    assert sorted(AuditEvent.objects.values_list("action", flat=True)) == ["baseline",
                                                                          "rescore"]


def test_an_author_finds_no_staff_page(page, judged):
    log_in(page, "author")
    response = page.goto("/staff/rescore/?benchmark=mmae")
    assert response.status == 404
