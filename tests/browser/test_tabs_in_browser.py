"""Finding one's way on a board page: the strip of benchmark tabs at a phone's width (390 px),
wider than the screen, scrolls sideways by itself and opens with the current board's tab in
view (it had opened at the first tab, the current one cut off or out of sight), without moving
the page; and a keyboard's first stop is a link past the site's header. Screenshots:
artifacts/screenshots/tabs-390-<slug>.png and skip-1366.png."""

import pytest
from playwright.sync_api import expect

from scoring.services import benchmark_import
from scoring.synthetic import write_benchmark
from tests.browser.conftest import SCREENSHOTS, TIMEOUT_MS

pytestmark = [pytest.mark.integration, pytest.mark.browser,
              pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

TITLES = {"first": "The first benchmark of the strip",
          "middle": "A benchmark in the middle of the strip",
          "last": "The last benchmark, far off to the right"}

IN_VIEW = """() => {
    const strip = document.querySelector("nav.tabs");
    const tab = strip.querySelector("a.active"), box = tab.getBoundingClientRect();
    const shown = strip.getBoundingClientRect();
    return {text: tab.textContent.trim(), current: tab.getAttribute("aria-current"),
            left: box.left - shown.left, right: shown.right - box.right,
            wider: strip.scrollWidth > strip.clientWidth, page: window.scrollY,
            pageWide: document.documentElement.scrollWidth <= innerWidth};
}"""


@pytest.fixture
def boards(tmp_path):
    for n, (slug, title) in enumerate(TITLES.items()):
        root = tmp_path / slug
        write_benchmark(root, 3, seed=n)
        benchmark_import(kind="mmae", path=root / "MMAE-meta.json", audio_root=root,
                         slug=slug, title=title, synthetic=True)


def test_the_current_boards_tab_is_in_view_on_a_phone(boards, browser, live_server):
    context = browser.new_context(base_url=live_server.url,
                                  viewport={"width": 390, "height": 844})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    seen = {}
    try:
        for slug in TITLES:
            assert page.goto(f"/b/{slug}/").status == 200
            page.wait_for_load_state("load")
            seen[slug] = page.evaluate(IN_VIEW)
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / f"tabs-390-{slug}.png"))
    finally:
        context.close()
    assert all(s["wider"] for s in seen.values()), seen  # the strip does scroll here
    for slug, s in seen.items():
        assert s["text"].startswith(TITLES[slug]) and s["current"] == "page", s
        assert s["left"] >= -1 and s["right"] >= -1, (slug, s)  # wholly inside the strip
        assert s["page"] == 0 and s["pageWide"], (slug, s)  # the page did not move


def test_a_keyboard_user_skips_the_site_links(boards, browser, live_server):
    """The first Tab shows a link past the header; Enter on it puts the next Tab on the page's
    own first control (the benchmark tabs), not on the site's links."""
    context = browser.new_context(base_url=live_server.url,
                                  viewport={"width": 1366, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    try:
        assert page.goto("/b/middle/").status == 200
        skip = page.locator("a.skip")
        assert skip.evaluate("e => e.getBoundingClientRect().bottom") <= 0  # out of sight
        page.keyboard.press("Tab")
        expect(skip).to_be_focused()
        assert skip.evaluate("e => e.getBoundingClientRect().top") >= 0  # in sight
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "skip-1366.png"))
        page.keyboard.press("Enter")
        page.keyboard.press("Tab")
        focused = page.evaluate("document.activeElement.closest('main, header').tagName")
        assert focused == "MAIN"
        assert page.evaluate("document.activeElement.textContent.trim()") == TITLES["first"]
    finally:
        context.close()
