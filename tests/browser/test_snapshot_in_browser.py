"""A cited board in Chromium at 1366 and 390 px: the snapshot page lists its rows with their
figures, and nothing scrolls the page sideways (the table scrolls in its own box).
Screenshots: artifacts/screenshots/snapshot-<width>.png."""

import pytest

from leaderboard.boards import snapshots
from tests.browser.conftest import SCREENSHOTS
from tests.factories import seeded_board

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True),
              pytest.mark.timeout(120)]
WIDTHS = {"desktop": (1366, 900), "phone": (390, 844)}


@pytest.fixture
def cited(tmp_path, settings):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    board = seeded_board(tmp_path / "bench", items=6, submissions=5, seed=5, synthetic=True)
    return snapshots.snapshot_take(benchmark=board).board_version  # as the worker keeps it


@pytest.mark.parametrize("device", WIDTHS)
def test_a_cited_board_reads_at_both_widths(cited, browser, live_server, device):
    width, height = WIDTHS[device]
    context = browser.new_context(base_url=live_server.url,
                                  viewport={"width": width, "height": height})
    try:
        page = context.new_page()
        assert page.goto("/b/mmae/").status == 200
        page.click("text=Cite this board")
        assert page.url.endswith(f"/b/mmae/v/{cited}/")
        assert page.locator("#snapshot tbody tr").count() == 5
        assert "kept for citing" in page.inner_text("main")
        scroll, inner = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"snapshot-{width}.png"), full_page=True)
    finally:
        context.close()
    assert scroll <= inner, f"the page scrolls sideways at {width} px ({scroll} > {inner})"
