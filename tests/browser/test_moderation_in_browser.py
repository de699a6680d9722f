"""A staff member flags a submission in Chromium, and visitors see the flag and its reason on
the board and on the benchmark's changelog."""

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from scoring.models import Benchmark, ScoringRun, SliceResult
from submissions.models import ModelEntry, Submission
from tests.conftest import CAST_PASSWORD, judge_config

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True),
              pytest.mark.timeout(60)]

REASON = "Outputs match another model's byte for byte; the author has been asked to explain."


@pytest.fixture
def two_on_the_board(author):
    """The mmae board with two scored public submissions."""
    benchmark = Benchmark.objects.create(
        slug="mmae", kind="mmae", version=1, title="MMAE", sha256="a" * 64,
        source_name="MMAE-meta.json", audio_root="/x", n_items=4, n_criteria=30)
    config = judge_config(["http://127.0.0.1:9"], benchmark=benchmark)
    made = {}
    for name, emr in (("Echo Editor", 41.5), ("Vox Remix", 33.0)):
        model = ModelEntry.objects.create(owner=author, name=name, organisation="Lab",
                                          licence="MIT")
        run = ScoringRun.objects.create(
            benchmark=benchmark, judge_config=config, audio_root="/x",
            judge_model="Qwen3-Omni-30B-A3B-Instruct", prompt_sha256="p" * 64, rounds=3,
            max_attempts=5, status="finished",
            status_times={"finished": timezone.now().isoformat()})
        SliceResult.objects.create(run=run, dimension="overall", bucket="", n=4,
                                   values={"n": 4, "IFR": 70.0, "CR": 75.0, "EMR": emr})
        made[name] = Submission.objects.create(owner=author, model=model, benchmark=benchmark,
                                               public=True, status="queued", current_run=run,
                                               coverage=1.0)
    return made


def test_staff_flag_a_submission_and_the_board_shows_it(page, screenshot, staff,
                                                        two_on_the_board):
    flagged = two_on_the_board["Vox Remix"]
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("staff")
    page.get_by_label("Password").fill(CAST_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("button", name="Log out")).to_be_visible()

    page.get_by_role("link", name="Staff").click()
    expect(page.get_by_role("heading", name="Moderate submissions")).to_be_visible()
    row = page.locator("#moderation tbody tr", has_text="Vox Remix")
    row.get_by_role("link", name="moderate").click()
    page.wait_for_url(f"**/staff/submissions/{flagged.pk}/")
    page.get_by_label("Public reason:").fill(REASON)
    screenshot("flag-form")
    page.get_by_role("button", name="Flag", exact=True).click()
    expect(page.get_by_text(f"submission {flagged.pk} is flagged")).to_be_visible()
    expect(page.locator("#audit tbody")).to_contain_text(REASON)
    screenshot("flagged")

    page.context.clear_cookies()  # a visitor now
    page.goto("/b/mmae/")
    vox = page.locator("#board tbody tr", has_text="Vox Remix")
    expect(vox.locator(".badge.flagged")).to_have_text("flagged")
    expect(vox.locator(".flag-reason")).to_have_text(REASON)
    echo = page.locator("#board tbody tr", has_text="Echo Editor")
    expect(echo.locator(".badge.flagged")).to_have_count(0)
    screenshot("board-with-flag")

    page.get_by_role("link", name="Changelog").click()
    page.wait_for_url("**/b/mmae/changelog/")
    entry = page.locator("#changelog tbody tr").first
    expect(entry).to_contain_text("flagged")
    expect(entry).to_contain_text(REASON)
    expect(page.locator("#changelog")).not_to_contain_text("staff")
    screenshot("changelog")
