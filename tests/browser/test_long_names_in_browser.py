"""A model with a 200-character name on the board, compare, model, pivot and My submissions
pages, at a desktop's width (1366 px) and a phone's (390 px): no page scrolls sideways, no
figure is cut at the screen's edge (outside a table's own scroll box), the name is cut with an
ellipsis and whole in a title, on a phone the board's first screen holds the figure that
ranks, and the pivot's heatmap keeps its cells. Screenshots:
artifacts/screenshots/names-<width>-<page>.png.
"""

import pytest

from leaderboard.boards import rank_ranges
from leaderboard.boards.selectors import leaderboard_rows
from scoring.boards import board_changed
from submissions.models import Submission
from tests.browser.conftest import SCREENSHOTS, TIMEOUT_MS, draw_charts
from tests.browser.test_layout_in_browser import log_in
from tests.factories import seeded_board

pytestmark = [pytest.mark.integration, pytest.mark.browser,
              pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]

WIDTHS = {"desktop": (1366, 900), "phone": (390, 844)}
LONG = ("Echo Editor Large v2, instruction-tuned on forty thousand hours of studio edits, "
        "with a mixture of audio experts and a very long name that no table can hold whole "
        "on one line, released by Example Audio Lab")[:200].ljust(200, "x")

# Every figure cell lies inside the screen, or inside a box that scrolls sideways itself.
CLIPPED_FIGURES = """() => [...document.querySelectorAll("td.num")].filter(td => {
    const box = td.getBoundingClientRect();
    if (box.width === 0 || box.right <= window.innerWidth) return false;
    const holder = td.closest(".scroll");
    return !holder || !["auto", "scroll"].includes(getComputedStyle(holder).overflowX);
}).map(td => td.textContent.trim())"""
# Every element that shows the long name is cut with an ellipsis and has it whole in a title.
NAMES = """(name) => [...document.querySelectorAll(".cut")]
    .filter(el => el.textContent.trim() === name && el.getClientRects().length)
    .map(el => ({tag: el.tagName, cut: el.scrollWidth > el.clientWidth
                 || el.scrollHeight > el.clientHeight + 1,  // one line cut, or lines clamped
                 ellipsis: getComputedStyle(el).textOverflow,
                 title: (el.closest("[title]") || {}).title || ""}))"""


@pytest.fixture
def site(tmp_path, settings, author):
    """A seeded board whose leading model, the author's, has a 200-character name."""
    settings.MEDIA_ROOT = tmp_path / "media"
    benchmark = seeded_board(tmp_path / "bench", items=24, submissions=8, seed=4)
    leader = Submission.objects.select_related("model").get(
        pk=leaderboard_rows(benchmark=benchmark)[0]["submission"])
    leader.model.name, leader.model.owner = LONG, author
    leader.model.save()
    # Partial too, so that its name carries three badges.
    Submission.objects.filter(pk=leader.pk).update(owner=author, coverage=0.9)
    board_changed(benchmark.id)  # as a model's details edited raise it
    rank_ranges.refresh(benchmark, replicates=200)
    other = Submission.objects.filter(benchmark=benchmark).exclude(pk=leader.pk).first()
    return {"model": leader.model_id, "other": other.model_id}


def pages(site) -> list[tuple[str, str]]:
    return [("board", "/b/mmae/"),
            ("compare", f"/b/mmae/compare/?models={site['model']},{site['other']}"),
            ("model", f"/m/{site['model']}/"),
            ("pivot", "/b/mmae/pivot/?dimension=operation"),
            ("my-submissions", "/submissions/")]


def fits(page, name: str, width: int) -> None:
    scroll_width, inner = page.evaluate(
        "[document.scrollingElement.scrollWidth, window.innerWidth]")
    assert scroll_width <= inner, f"{name} scrolls sideways at {width} px"
    assert page.evaluate(CLIPPED_FIGURES) == [], f"{name}: figures cut at {width} px"
    shown = page.evaluate(NAMES, LONG)
    assert shown, f"{name} shows the long name nowhere"
    for element in shown:
        assert element["cut"] and element["ellipsis"] == "ellipsis", (name, element)
        assert LONG in element["title"], (name, element)


def nothing_spills_from_a_model_cell(page) -> None:
    """A name's link, badges and byline stay inside their cell, over no figure."""
    spilling = page.evaluate("""() => [...document.querySelectorAll("#board td.model")]
        .filter(td => [...td.querySelectorAll("a, .badge, small")].some(el =>
            el.getBoundingClientRect().right > td.getBoundingClientRect().right + 0.5))
        .map(td => td.textContent.trim().slice(0, 40))""")
    assert spilling == []


def board_leads_with_the_ranking_figure(page) -> None:
    """The first rows' rank, name and EMR (the ranking's first figure, the first figure
    column) lie inside the phone's first screen, and so does each figure that placed a row."""
    heads = page.evaluate("""() => [...document.querySelectorAll("#board thead th")]
        .map(th => th.className)""")
    assert heads[:3] == ["col-rank", "col-model", "col-EMR num"]
    boxes = page.evaluate("""() => [...document.querySelectorAll("#board tbody tr")]
        .slice(0, 4).map(row => [row.children[2], row.querySelector("td.decided")]
            .filter(Boolean).map(td => td.getBoundingClientRect().right))""")
    assert all(right <= 390 for row in boxes for right in row), boxes
    assert page.locator("#separation").inner_text().startswith("EMR separates")


def heatmap_keeps_its_cells(page) -> None:
    """The heatmap's cells keep a width a figure fits in, and its axis names the long name
    cut short."""
    draw_charts(page)
    cell, ticks = page.evaluate("""() => {
        const chart = document.querySelector("#chart-pivot");
        const layout = chart._fullLayout, data = chart._fullData[0];
        return [layout.xaxis._length / data.x.length, layout.yaxis.ticktext];
    }""")
    assert cell >= 30, f"heatmap cells {cell:.0f} px wide"
    assert any(t.endswith("…") and LONG.startswith(t[:-1]) for t in ticks), ticks


@pytest.mark.parametrize("device", WIDTHS)
def test_a_200_character_name_fits_every_page(browser, live_server, site, device):
    width, height = WIDTHS[device]
    context = browser.new_context(base_url=live_server.url,
                                  viewport={"width": width, "height": height})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    try:
        log_in(page)  # the author: My submissions lists the model
        for name, address in pages(site):
            assert page.goto(address).status == 200, address
            page.wait_for_load_state("networkidle")
            page.screenshot(path=str(SCREENSHOTS / f"names-{width}-{name}.png"),
                            full_page=True)
            fits(page, name, width)
            if name == "board":
                nothing_spills_from_a_model_cell(page)
            if name == "board" and device == "phone":
                board_leads_with_the_ranking_figure(page)
            if name == "pivot":
                heatmap_keeps_its_cells(page)
            if name == "model":
                assert page.locator("p.board-rank").inner_text().startswith("Rank 1")
    finally:
        context.close()
