"""Browser fixtures: one headless Chromium for the browser tests, a fresh context per test."""

from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from tests.conftest import ROOT

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
TIMEOUT_MS = 20_000
# Playwright's assertions wait 5 s unless told otherwise, apart from the context's timeout: on a
# busy 2-core machine, loading plotly.js (4.6 MB) and drawing a chart took longer than that in a
# CI run, and four chart assertions failed. They wait as long as every other browser step.
expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="package")
def browser():
    """One Chromium for this package, closed when its last test is done.

    Not session-scoped on purpose: while Playwright's sync API is open it keeps an asyncio loop
    running on the main thread, and Django refuses ORM calls from a thread with a running loop.
    These tests call the ORM synchronously from that thread, which is safe, so the check is
    switched off here and on again for the rest of the session.
    """
    patch = pytest.MonkeyPatch()
    patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                                  timeout=30_000)
            yield chromium
            chromium.close()
    finally:
        patch.undo()


@pytest.fixture
def page(browser, live_server):
    """A page in a fresh context (no cookies), relative URLs resolved against the live server."""
    context = browser.new_context(base_url=live_server.url, accept_downloads=True,
                                  viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    context.set_default_navigation_timeout(TIMEOUT_MS)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def screenshot(page, request):
    """`screenshot("step")` saves the whole page as artifacts/screenshots/<test>-<n>-step.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    count = 0

    def take(step: str) -> Path:
        nonlocal count
        count += 1
        path = SCREENSHOTS / f"{request.node.name}-{count:02d}-{step}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


def draw_charts(page) -> None:
    """Ask for the page's charts (static/js/charts.js loads plotly.js on demand; once asked,
    later pages of the context draw theirs as they load) and wait until one is drawn."""
    button = page.get_by_role("button", name="Draw the charts")
    if button.count():
        button.first.click()
    expect(page.locator("div.plotly-chart .main-svg").first).to_be_attached()
