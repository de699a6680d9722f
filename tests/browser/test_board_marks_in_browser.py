"""A challenge board's row received after the deadline, in Chromium at a desktop's width (1366
px) and a phone's (390 px): its "after the deadline" mark is shown beside the model's name,
inside the model's cell and on the first screen, and the on-time row has none. Screenshots:
artifacts/screenshots/board-marks-<width>.png."""

import pytest
from playwright.sync_api import expect

from challenges.models import Phase
from scoring.boards import board_changed
from scoring.models import ScoringRun, SliceResult
from tests.browser.conftest import SCREENSHOTS, TIMEOUT_MS
from tests.challenges.challenge_factories import add_team, build_challenge, enter

pytestmark = [pytest.mark.integration, pytest.mark.browser,
              pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

WIDTHS = {"desktop": (1366, 900), "phone": (390, 844)}


def opened(browser, live_server, device: str):
    """A browser context at the device's width, and its page."""
    width, height = WIDTHS[device]
    context = browser.new_context(base_url=live_server.url,
                                  viewport={"width": width, "height": height})
    context.set_default_timeout(TIMEOUT_MS)
    return context, context.new_page()


@pytest.mark.parametrize("device", WIDTHS)
def test_the_mark_after_the_deadline_shows_at_every_width(browser, live_server, device):
    built = build_challenge()
    add_team(built, "On Time")
    add_team(built, "Late Comer with a long team name")
    enter(built, "On Time", Phase.Kind.DEVELOPMENT, "single", (50.0, 60.0, 30.0))
    late = enter(built, "Late Comer with a long team name", Phase.Kind.DEVELOPMENT, "single",
                 (40.0, 70.0, 20.0), late=True)
    slug = built.board(Phase.Kind.DEVELOPMENT, "single").benchmark.slug
    width, height = WIDTHS[device]
    context, page = opened(browser, live_server, device)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    try:
        assert page.goto(f"/b/{slug}/").status == 200
        rows = page.locator("table#board tbody tr")
        expect(rows).to_have_count(2)
        marked = rows.filter(has_text=late.submission.model.name)
        mark = marked.locator(".badge.late")
        expect(mark).to_be_visible()
        expect(mark).to_have_text("after the deadline")
        expect(rows.filter(has_text="On Time system").locator(".badge.late")).to_have_count(0)
        box, cell = mark.bounding_box(), marked.locator("td.model").bounding_box()
        assert cell["x"] <= box["x"] and box["x"] + box["width"] <= cell["x"] + cell["width"]
        assert box["x"] + box["width"] <= width and box["y"] + box["height"] <= height * 2
        page.screenshot(path=str(SCREENSHOTS / f"board-marks-{width}.png"), full_page=True)
    finally:
        context.close()


@pytest.mark.parametrize("device", WIDTHS)
def test_every_column_and_the_judges_family_mark_are_in_view(browser, live_server, device):
    """A row of the judge's family among long names: its mark shows in the model's cell, and at
    1366 px the board's last column (Judge) ends inside the screen (issue: Date, Tries and
    Judge were off screen at a desktop's width)."""
    built = build_challenge()
    add_team(built, "A team with a long name of many words")
    add_team(built, "Another team whose name is long as well")
    family = enter(built, "A team with a long name of many words", Phase.Kind.DEVELOPMENT,
                   "single", (50.0, 60.0, 30.0))
    enter(built, "Another team whose name is long as well", Phase.Kind.DEVELOPMENT, "single",
          (40.0, 70.0, 20.0))
    model = family.submission.model
    model.base_family = "qwen"
    model.save()
    # As the demo's rows: every figure with its interval, scored by the judge simulator.
    SliceResult.objects.filter(run__submissions__benchmark=family.submission.benchmark).update(
        intervals={"IFR": [35.42, 49.17], "CR": [23.33, 40.0], "EMR": [12.5, 27.5]})
    ScoringRun.objects.filter(benchmark=family.submission.benchmark).update(simulated=True)
    board_changed(family.submission.benchmark_id)
    slug = built.board(Phase.Kind.DEVELOPMENT, "single").benchmark.slug
    width, height = WIDTHS[device]
    context, page = opened(browser, live_server, device)
    try:
        assert page.goto(f"/b/{slug}/").status == 200
        marked = page.locator("table#board tbody tr").filter(has_text=model.name)
        mark = marked.locator(".badge.family")
        expect(mark).to_be_visible()
        expect(mark).to_have_text("judge's family")
        box, cell = mark.bounding_box(), marked.locator("td.model").bounding_box()
        assert cell["x"] <= box["x"] and box["x"] + box["width"] <= cell["x"] + cell["width"]
        if device == "desktop":
            for column in ("col-date", "col-attempts", "col-judge"):
                head = page.locator(f"table#board thead th.{column}").bounding_box()
                assert head["x"] + head["width"] <= width, column
        page.screenshot(path=str(SCREENSHOTS / f"board-family-{width}.png"), full_page=True)
    finally:
        context.close()
