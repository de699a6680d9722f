"""The upload form in Chromium at a desktop's width (1366 px) and a phone's (390 px): a file in
the wrong field is said beside it as soon as it is chosen, and the Upload button sends
nothing while it stays; a name over the limit is said as it is typed; the quota shows above
the form, and a spent quota disables the form and says when the next upload is possible.
Screenshots: artifacts/screenshots/upload-checks-<width>-<step>.png."""

import json
import re
import zipfile
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from scoring.models import Benchmark
from scoring.services import benchmark_import
from scoring.synthetic import write_benchmark, write_system
from submissions.models import ModelEntry, Submission
from submissions.quota import quota_left, quota_problems
from tests.browser.conftest import SCREENSHOTS
from tests.conftest import CAST_PASSWORD
from tests.submissions.test_airbench_uploads import chat_meta, write

pytestmark = [pytest.mark.integration, pytest.mark.browser,
              pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]

WIDTHS = {"desktop": (1366, 900), "phone": (390, 844)}
ARCHIVE_MESSAGE = "this is an archive: choose it under Output audio"


@pytest.fixture
def files(tmp_path, settings):
    """An mmae board and an author's files: the edited audio zipped, and predictions."""
    settings.MEDIA_ROOT = tmp_path / "media"
    root = tmp_path / "bench"
    meta = write_benchmark(root, 4, seed=5)
    benchmark_import(kind="mmae", path=meta, audio_root=root, slug="mmae", synthetic=True)
    samples = json.loads(meta.read_text())
    predictions = write_system(root, samples, name="sys", seed=2, fmt="jsonl")
    archive = tmp_path / "edited-audio.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        for sample in samples:
            handle.write(root / f"systems/sys/{sample['id']}.wav", f"{sample['id']}.wav")
    unknown = tmp_path / "unknown-ids.jsonl"
    unknown.write_text(json.dumps({"id": "no-such-sample", "audio_path": "x.wav"}) + "\n")
    return {"predictions": predictions, "archive": archive, "unknown": unknown}


def open_upload_page(browser, live_server, width: int, height: int):
    context = browser.new_context(base_url=live_server.url, viewport={"width": width,
                                                                      "height": height})
    page = context.new_page()
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("author")
    page.get_by_label("Password").fill(CAST_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("button", name="Log out")).to_be_attached()
    page.goto("/submit/")
    posts = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    return context, page, posts


def fits(page, width: int, step: str) -> None:
    scroll_width = page.evaluate("document.documentElement.scrollWidth")
    assert scroll_width <= width, f"the upload page scrolls sideways at {width} px ({step})"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"upload-checks-{width}-{step}.png"),
                    full_page=True)


def beside(page, label: str):
    """The messages the page's script shows beside the field labelled `label`."""
    return page.locator(".field", has=page.get_by_label(label)).locator("[data-check-errors]")


@pytest.mark.parametrize("device", WIDTHS)
def test_a_file_in_the_wrong_field_is_said_before_anything_is_sent(
        browser, live_server, author, files, settings, device):
    settings.SUBMISSIONS_PER_DAY, settings.SUBMISSIONS_IN_FLIGHT = 5, 2
    width, height = WIDTHS[device]
    context, page, posts = open_upload_page(browser, live_server, width, height)
    try:
        quota = page.locator("#quota")
        expect(quota).to_contain_text("0 of 5 uploads used in the last 24 hours (5 left)")
        expect(page.locator("#quota-spent")).to_have_count(0)
        expect(page.get_by_label("Predictions")).to_have_attribute("accept", ".json,.jsonl")

        page.get_by_label("Model name").fill("Careful Editor")
        page.get_by_label("Predictions").set_input_files(files["archive"])
        expect(beside(page, "Predictions")).to_have_text(ARCHIVE_MESSAGE)
        page.get_by_label("Output audio").set_input_files(files["predictions"])
        expect(beside(page, "Output audio")).to_contain_text(
            "is not an archive: Output audio takes a .zip or .tar.gz of the output files (a "
            "predictions file goes under Predictions)")
        page.get_by_role("button", name="Upload").click()
        expect(page.get_by_label("Predictions")).to_be_focused()
        expect(page.locator("#upload-progress")).to_be_hidden()
        assert posts == [], "the form was sent with a file in the wrong field"
        fits(page, width, "wrong-fields")

        page.get_by_label("Model name").fill("E" * 250)
        expect(beside(page, "Model name")).to_have_text(
            "Name is 250 characters; the limit is 200")
        page.get_by_label("Model name").fill("Careful Editor")
        expect(beside(page, "Model name")).to_be_hidden()

        # Fixed, the form goes; what only the server can tell shows beside its field too.
        page.get_by_label("Predictions").set_input_files(files["unknown"])
        page.get_by_label("Output audio").set_input_files(files["archive"])
        expect(beside(page, "Predictions")).to_be_hidden()
        expect(beside(page, "Output audio")).to_be_hidden()
        page.get_by_role("button", name="Upload").click()
        refused = page.locator(".field", has=page.get_by_label("Predictions")) \
            .locator("ul.errorlist:not([data-check-errors])")
        expect(refused).to_contain_text("unknown id 'no-such-sample'")
        assert len(posts) == 1
        assert not Submission.objects.exists()
        fits(page, width, "refused-by-the-server")
        # The refused form is the page's script's again: it checks the next choice too.
        expect(page.get_by_label("Align unreadable answers with the judge")).to_be_hidden()
        page.get_by_label("Predictions").set_input_files(files["archive"])
        expect(beside(page, "Predictions")).to_have_text(ARCHIVE_MESSAGE)
        page.get_by_role("button", name="Upload").click()
        expect(page.get_by_label("Predictions")).to_be_focused()
        assert len(posts) == 1
    finally:
        context.close()


@pytest.mark.parametrize("device", WIDTHS)
def test_a_board_of_text_answers_says_it_takes_no_archive(browser, live_server, author, files,
                                                          tmp_path, device):
    benchmark_import(kind="airbench-chat", path=write(tmp_path / "Chat_meta.json", chat_meta()),
                     audio_root=None, slug="air-bench-chat")
    width, height = WIDTHS[device]
    context, page, posts = open_upload_page(browser, live_server, width, height)
    try:
        page.get_by_label("Benchmark").select_option("air-bench-chat")
        expect(page.get_by_label("Output audio")).to_be_hidden()
        page.get_by_label("Model name").fill("Listener")
        page.get_by_label("Predictions").set_input_files(files["archive"])
        expect(beside(page, "Predictions")).to_have_text(re.compile(
            r"^this is an archive: air-bench-chat takes a predictions file .*, no archive$"))
        page.get_by_role("button", name="Upload").click()
        assert posts == []
        fits(page, width, "text-board")
    finally:
        context.close()


@pytest.mark.parametrize("device", WIDTHS)
def test_a_spent_quota_disables_the_form_saying_when_the_next_upload_is_possible(
        browser, live_server, author, files, settings, device):
    settings.SUBMISSIONS_PER_DAY = 1
    made = {"owner": author, "benchmark": Benchmark.objects.get(slug="mmae"),
            "model": ModelEntry.objects.create(owner=author, name="Busy Editor")}
    Submission.objects.create(**made, status="rejected")  # costs no quota
    counted = Submission.objects.create(**made, status="queued")
    Submission.objects.filter(pk=counted.pk).update(
        created_at=timezone.now() - timedelta(hours=3))
    width, height = WIDTHS[device]
    context, page, posts = open_upload_page(browser, live_server, width, height)
    try:
        expect(page.locator("#quota")).to_contain_text("1 of 1 uploads used")
        (problem,) = quota_problems(quota_left(author))
        assert "the next upload is possible at " in problem
        expect(page.locator("#quota-spent")).to_have_text(
            f"No upload is possible now: {problem}.")
        expect(page.get_by_role("button", name="Upload")).to_be_disabled()
        expect(page.get_by_label("Predictions")).to_be_disabled()
        expect(page.get_by_label("Model name")).to_be_disabled()
        fits(page, width, "quota-spent")
        assert posts == []
    finally:
        context.close()
