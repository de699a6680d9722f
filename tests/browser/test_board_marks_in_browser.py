"""A challenge board's row received after the deadline, in Chromium at a desktop's width (1366
px) and a phone's (390 px): its "after the deadline" mark is shown beside the model's name,
inside the model's cell and on the first screen, and the on-time row has none. Screenshots:
artifacts/screenshots/board-marks-<width>.png."""

import pytest
from playwright.sync_api import expect

from challenges.models import Phase
from tests.browser.conftest import SCREENSHOTS, TIMEOUT_MS
from tests.challenges.challenge_factories import add_team, build_challenge, enter

pytestmark = [pytest.mark.integration, pytest.mark.browser,
              pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

WIDTHS = {"desktop": (1366, 900), "phone": (390, 844)}


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
    context = browser.new_context(base_url=live_server.url,
                                  viewport={"width": width, "height": height})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
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
