"""A newcomer's first submission in Chromium: sign up, upload, watch it score, download results.

The live server, a real Celery worker on Redis and the judge simulator run as in production.
"""

import json
import re
import zipfile

import pytest
from django.core import mail
from playwright.sync_api import expect

from scoring.services import benchmark_import
from scoring.synthetic import write_benchmark, write_system
from tests.conftest import free_ports

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True),
              pytest.mark.timeout(90)]

PASSWORD = "pw-correct-horse-1"


@pytest.fixture
def demo(tmp_path, settings, transactional_db):
    """A synthetic benchmark and a made-up system's files, as a newcomer would upload them."""
    settings.MEDIA_ROOT = tmp_path / "media"
    root = tmp_path / "bench"
    meta = write_benchmark(root, 12, seed=21)
    benchmark, _ = benchmark_import(kind="mmae", path=meta, audio_root=root, slug="mmae",
                                    synthetic=True)
    samples = json.loads(meta.read_text())
    predictions = write_system(root, samples, name="sys", seed=7)
    archive = tmp_path / "edited-audio.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        for sample in samples:
            relative = f"systems/sys/{sample['id']}.wav"
            handle.write(root / relative, relative)
    return {"benchmark": benchmark, "samples": samples, "predictions": predictions,
            "archive": archive, "root": tmp_path}


@pytest.fixture
def scoring_stack(demo, thread_simulator_factory, worker_factory):
    """The judge simulator and one Celery worker scoring against it."""
    ports = free_ports(2)
    thread_simulator_factory(ports=ports, latency_ms=5)
    start_worker = worker_factory(ports)
    start_worker()
    return start_worker.log_path


def sign_up(page, screenshot, username):
    page.goto("/accounts/signup/")
    expect(page.get_by_role("heading", name="Create an account")).to_be_visible()
    page.get_by_label("Username").fill(username)
    page.get_by_label("Email").fill(f"{username}@example.com")
    page.locator("#id_password1").fill(PASSWORD)
    page.get_by_label("Password (again)").fill(PASSWORD)
    screenshot("signup")
    page.get_by_role("button", name="Sign up").click()
    page.wait_for_url("**/submissions/")
    expect(page.get_by_role("button", name="Log out")).to_be_visible()
    screenshot("my-submissions-empty")
    confirm_email(page, screenshot, username)


def confirm_email(page, screenshot, username):
    """Uploads wait for the email address to be confirmed: the upload page says so, and the
    link in the email (printed on the console under `make run`) confirms it."""
    page.get_by_role("link", name="Upload a submission").click()
    expect(page.get_by_role("heading", name="Confirm your email address")).to_be_visible()
    expect(page.get_by_role("button", name="Send the link again")).to_be_visible()
    screenshot("confirm-email-first")
    message = [m for m in mail.outbox if m.to == [f"{username}@example.com"]][-1]
    link = re.search(r"https?://[^/\s]+(/accounts/confirm-email/\S+/)", message.body).group(1)
    page.goto(link)
    expect(page.get_by_text(f"{username}@example.com")).to_be_visible()
    page.get_by_role("button", name="Confirm").click()
    page.wait_for_url("**/submissions/")
    expect(page.get_by_text(f"You have confirmed {username}@example.com.")).to_be_visible()
    screenshot("email-confirmed")


def open_upload_page(page, screenshot):
    page.get_by_role("link", name="Upload a submission").click()
    page.wait_for_url("**/submit/")
    expect(page.get_by_role("heading", name="Upload a submission")).to_be_visible()
    screenshot("upload-page")


def throttle_uploads(page, bytes_per_second):
    """Slow the page's uploads down (Chromium's DevTools network emulation) so that the upload
    progress bar has time to show; -1 lifts the limit."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", {
        "offline": False, "latency": 0, "downloadThroughput": -1,
        "uploadThroughput": bytes_per_second})
    return cdp


def test_a_newcomer_signs_up_uploads_and_watches_the_submission_finish(
        page, screenshot, demo, scoring_stack):
    sign_up(page, screenshot, "newcomer")
    open_upload_page(page, screenshot)

    page.get_by_label("Benchmark").select_option("mmae")
    page.get_by_label("Model name").fill("Browser Editor 7B")
    page.get_by_label("Organisation").fill("Example Lab")
    page.get_by_label("Paper or code link").fill("https://example.com/browser-editor")
    page.get_by_label("Parameter count").fill("7B")
    page.get_by_label("Licence").fill("Apache-2.0")
    page.get_by_label("Open weights").check()
    page.get_by_label("Description").fill("An instruction-driven audio editor.")
    page.get_by_label("Show on the public leaderboard").check()
    page.get_by_label("Predictions").set_input_files(demo["predictions"])
    page.get_by_label("Output audio").set_input_files(demo["archive"])
    screenshot("upload-filled")

    progress = page.locator("#upload-progress")
    expect(progress).to_be_hidden()
    cdp = throttle_uploads(page, 64 * 1024)  # the archive is ~190 kB: about 3 s of progress
    page.get_by_role("button", name="Upload").click()
    expect(progress).to_be_visible()
    expect(progress.locator(".label")).to_contain_text(re.compile(r"\d+% uploaded"))
    expect(page.get_by_role("button", name="Upload")).to_be_disabled()
    screenshot("upload-progress")

    page.wait_for_url(re.compile(r"/submissions/\d+/$"), timeout=30_000)
    cdp.send("Network.emulateNetworkConditions", {
        "offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
    expect(page.get_by_role("heading", name=re.compile("Browser Editor 7B"))).to_be_visible()
    screenshot("status-landed")
    # Marks this document: a reload would lose it, htmx swaps keep it.
    page.evaluate("window.__sameDocument = true")
    polls = []
    page.on("request", lambda r: polls.append(r.url) if r.url.endswith("/progress/") else None)

    state = page.locator("#state")
    seen = [state.text_content()]
    for _ in range(200):  # about a minute at most, within the 90 s test timeout
        current = state.text_content()
        if current != seen[-1]:
            seen.append(current)
            screenshot(f"status-{current}")
        if current in ("finished", "failed", "rejected", "cancelled"):
            break
        page.wait_for_timeout(250)
    assert seen[-1] == "finished", (seen, scoring_stack.read_text()[-3000:])
    assert len(seen) >= 2 and polls, "the status page never changed in place"
    assert page.evaluate("window.__sameDocument") is True, "the status page reloaded"
    expect(page.locator("#progress")).not_to_have_attribute("hx-get", re.compile(".*"))
    expect(page.locator(".live")).to_have_count(0)
    expect(page.locator(".progress .label")).to_contain_text("(100.0%)")
    expect(page.locator(".badge.simulated")).to_be_visible()

    with page.expect_download() as download_info:
        page.get_by_role("link", name="taxonomy.json").click()
    download = download_info.value
    assert download.suggested_filename.endswith("-taxonomy.json")
    taxonomy = json.loads(download.path().read_text(encoding="utf-8"))
    assert taxonomy["overall"]["n"] == demo["benchmark"].n_items == len(demo["samples"])

    page.get_by_role("link", name="My submissions").click()
    row = page.get_by_role("row", name=re.compile("Browser Editor 7B"))
    expect(row.locator(".status")).to_have_text("finished")
    screenshot("my-submissions-finished")


def test_a_predictions_file_with_an_unknown_id_is_refused_on_the_upload_page(
        page, screenshot, demo):
    sign_up(page, screenshot, "careless")
    open_upload_page(page, screenshot)
    bad = demo["root"] / "submission.jsonl"
    bad.write_text(json.dumps({"id": "no-such-sample", "audio_path": "x.wav"}) + "\n")

    page.get_by_label("Model name").fill("Careless Model")
    page.get_by_label("Predictions").set_input_files(bad)
    page.get_by_label("Output audio").set_input_files(demo["archive"])
    page.get_by_role("button", name="Upload").click()

    errors = page.locator(".field", has=page.get_by_label("Predictions")).locator(".errorlist")
    expect(errors.first).to_contain_text("unknown id 'no-such-sample'")
    assert page.url.endswith("/submit/")
    expect(page.get_by_label("Model name")).to_have_value("Careless Model")
    expect(page.get_by_role("button", name="Upload")).to_be_enabled()
    expect(page.locator("#upload-progress")).to_be_hidden()
    screenshot("upload-refused")
