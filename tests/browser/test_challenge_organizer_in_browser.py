"""The organizer pages and the public challenge pages in Chromium at a desktop's width (1366 px)
and a phone's (390 px): nothing scrolls the page sideways, the Content-Security-Policy blocks
nothing, the public page's instants gain the visitor's local time and its countdown ticks, and
the Reveal button (typed confirmation) reveals the phase. Screenshots:
artifacts/screenshots/organizer-<width>-<page>.png."""

import re

import pytest
from playwright.sync_api import expect

from challenges.models import Phase, Verification
from tests.browser.conftest import SCREENSHOTS, TIMEOUT_MS
from tests.browser.test_layout_in_browser import RECORD_VIOLATIONS, log_in
from tests.challenges.challenge_factories import add_team, build_challenge, enter

pytestmark = [pytest.mark.integration, pytest.mark.browser,
              pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

WIDTHS = {"desktop": (1366, 900), "phone": (390, 844)}
PAGES = (("overview", "/c/icassp/manage/"), ("phase", "/c/icassp/manage/phases/final/"),
         ("tracks", "/c/icassp/manage/tracks/"), ("teams", "/c/icassp/manage/teams/"),
         ("organizers", "/c/icassp/manage/organizers/"),
         ("verification", "/c/icassp/manage/phases/final/verification/"),
         ("results", "/c/icassp/results/"), ("challenge", "/c/icassp/"), ("list", "/c/"))


@pytest.fixture
def world(tmp_path, settings, author):
    settings.MEDIA_ROOT = tmp_path / "media"
    built = build_challenge(organizer=author)
    # A second final phase, still open, gives the public page a countdown.
    Phase.objects.create(challenge=built.challenge, slug="final-b", name="Final, second round",
                         kind=Phase.Kind.FINAL, opens_at=built.final.opens_at,
                         closes_at=built.final.closes_at.replace(year=2099))
    for name, emr in (("Waveforms of a rather long team name, Inc.", 0.81),
                      ("Bravo", 0.62), ("Charlie", 0.43)):
        add_team(built, name)
        enter(built, name, "development", "single", (0.5, 0.5, 1 - emr))
        enter(built, name, "final", "single", (0.5, 0.5, emr))
        enter(built, name, "final", "agent", (0.5, 0.5, emr / 2))
    Verification.objects.create(phase=built.final, team=built.teams["Charlie"],
                                state=Verification.State.DISQUALIFIED,
                                reason="its package's code did not run on the common envelope")
    return built


@pytest.mark.parametrize("device", WIDTHS)
def test_the_organizer_pages_fit_and_the_reveal_button_works(browser, live_server,
                                                               world, device):
    width, height = WIDTHS[device]
    # A visitor in Tokyo: local times are neither UTC nor the organizers' (US Pacific).
    context = browser.new_context(base_url=live_server.url, timezone_id="Asia/Tokyo",
                                  viewport={"width": width, "height": height})
    context.set_default_timeout(TIMEOUT_MS)
    context.add_init_script(RECORD_VIOLATIONS)
    page = context.new_page()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    try:
        log_in(page)
        for name, address in PAGES:
            response = page.goto(address)
            assert response.status == 200, address
            page.wait_for_load_state("networkidle")
            scroll_width, window_width = page.evaluate(
                "[document.documentElement.scrollWidth, window.innerWidth]")
            assert scroll_width <= window_width, f"{address} scrolls sideways at {width} px"
            assert page.evaluate("window.__violations") == [], address
            page.screenshot(path=str(SCREENSHOTS / f"organizer-{width}-{name}.png"),
                            full_page=True)
            if name == "challenge":
                local = page.locator("time[data-local-time]").first
                expect(local).to_contain_text("GMT+9")  # the visitor's time, by the script
                expect(local).to_have_attribute("title", re.compile(r" UTC$"))
                countdown = page.locator("[data-countdown]").first
                expect(countdown).to_have_text(re.compile(r"^(\d+ d )?\d\d:\d\d:\d\d$"))
                first = countdown.inner_text()
                page.wait_for_timeout(1100)
                assert countdown.inner_text() != first  # it ticks
        page.goto("/c/icassp/manage/")
        reveal = page.locator('form[action="/c/icassp/manage/phases/final/reveal/"]')
        reveal.get_by_label("Type final to confirm").fill("final")
        reveal.get_by_role("button", name="Reveal").click()
        expect(page).to_have_url(re.compile(r"/c/icassp/results/$"))
        expect(page.locator("#results-final-single")).to_contain_text("Rank Delta")
        expect(page.locator("#results-final-single .disqualified")).to_contain_text(
            "did not run on the common envelope")
        assert Phase.objects.get(pk=world.final.pk).revealed_at is not None
    finally:
        context.close()
