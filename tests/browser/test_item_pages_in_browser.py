"""The item pages in Chromium at a desktop's width (1366 px) and a phone's (390 px): the items
where two models differ, reached from the compare page's counts, and one item across systems,
reached from one of them; nothing scrolls the page sideways and the players are there.

The data is real: the board of test_board_in_browser (two systems' outputs scored by the judge
simulator). Screenshots: artifacts/screenshots/items-<width>-<page>.png.
"""

import pytest
from playwright.sync_api import expect

from leaderboard.pages.compare import pairwise
from tests.browser.conftest import SCREENSHOTS
from tests.browser.test_board_in_browser import board_data  # noqa: F401 - a fixture

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True),
              pytest.mark.timeout(90)]

WIDTHS = {"desktop": (1366, 900), "phone": (390, 844)}


def check(page, name: str, width: int) -> None:
    page.wait_for_load_state("networkidle")
    scroll, inner = page.evaluate("[document.scrollingElement.scrollWidth, innerWidth]")
    assert scroll <= inner, f"{page.url} scrolls sideways at {width} px"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"items-{width}-{name}.png"), full_page=True)


@pytest.mark.parametrize("width", WIDTHS)
def test_a_visitor_follows_a_count_to_the_items_and_one_item_across_systems(
        page, board_data, width):  # noqa: F811 - board_data is the imported fixture
    a, b = board_data["submissions"]["Echo Editor"], board_data["submissions"]["Vox Remix"]
    page.set_viewport_size(dict(zip(("width", "height"), WIDTHS[width], strict=True)))
    wins = pairwise([a, b])[0]["rubric"]["wins"]
    assert wins > 0
    page.goto(f"/b/mmae/compare/?models={a.model_id},{b.model_id}")
    page.locator("#pairs tbody tr").first.locator("td a", has_text=str(wins)).last.click()
    page.wait_for_url("**/compare/items/**")
    items = page.locator("article.versus")
    expect(items).to_have_count(min(wins, 20))
    expect(page.locator("p.items-count")).to_contain_text(f"{wins} sample")
    first = items.first
    expect(first.locator("section.side")).to_have_count(2)
    assert first.locator("audio").count() >= 3  # an input, and both outputs
    first.locator("table.verdicts details summary").first.click()
    expect(first.locator("table.verdicts ol.votes li").first).to_be_visible()
    check(page, "compare-items", WIDTHS[width][0])
    first.screenshot(path=str(SCREENSHOTS / f"items-{WIDTHS[width][0]}-first-item.png"))

    key = first.get_attribute("data-item")
    first.locator("header a.key").click()
    page.wait_for_url(f"**/i/{key}/")
    expect(page.locator("article.versus section.side")).to_have_count(2)
    assert page.locator("audio").count() >= 3
    expect(page.locator("nav.item-steps")).to_contain_text("next sample")
    check(page, "item", WIDTHS[width][0])
