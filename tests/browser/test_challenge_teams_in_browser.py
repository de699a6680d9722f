"""The participants' pages in Chromium at a desktop's width (1366 px) and a phone's (390 px):
the team's page (members, limits spent with the next allowed instant, an entry after the
deadline, the phase's clock), the upload page and a track's attestations fit the screen; the
page's script, inline with the request's nonce, runs under the Content-Security-Policy: each
instant gains the visitor's local time, and the countdowns tick. Screenshots:
artifacts/screenshots/participant-<width>-<page>.png."""

import re

import pytest
from playwright.sync_api import expect

from challenges import teams
from challenges.models import Entry, Track
from tests.browser.conftest import SCREENSHOTS, TIMEOUT_MS
from tests.browser.test_layout_in_browser import RECORD_VIOLATIONS, log_in
from tests.challenges.test_entries import ATTESTATIONS, build_challenge, upload

pytestmark = [pytest.mark.integration, pytest.mark.browser,
              pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

WIDTHS = {"desktop": (1366, 900), "phone": (390, 844)}


@pytest.fixture
def world(tmp_path, settings, author, other_author):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.SUBMISSIONS_PER_DAY = 100
    settings.SUBMISSIONS_IN_FLIGHT = 100
    made = build_challenge(tmp_path / "set", per_day=2)
    team = teams.team_create(challenge=made["challenge"], user=author,
                             name="Waveforms of a rather long team name, Inc.")
    teams.team_invite(team=team, inviter=author, who="other_author")
    teams.track_enter(team=team, track=made["track"], user=author, attested=ATTESTATIONS)
    Track.objects.create(challenge=made["challenge"], slug="single", name="Single model",
                         attestations=["one end-to-end model, no external tool"])
    upload(made, author, name="An audio editor with a long descriptive name (v2, tuned)")
    late = upload(made, author)
    Entry.objects.filter(pk=late.pk).update(late=True)
    return made


@pytest.mark.parametrize("device", WIDTHS)
def test_the_participant_pages_fit_and_their_clocks_run(browser, live_server, world,
                                                        device):
    width, height = WIDTHS[device]
    context = browser.new_context(base_url=live_server.url,
                                  viewport={"width": width, "height": height})
    context.set_default_timeout(TIMEOUT_MS)
    context.add_init_script(RECORD_VIOLATIONS)
    page = context.new_page()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    try:
        log_in(page)
        for name, address in (("team", "/c/icassp/team/"),
                              ("submit", "/c/icassp/final/agent/submit/"),
                              ("track", "/c/icassp/tracks/single/enter/")):
            response = page.goto(address)
            assert response.status == 200, address
            page.wait_for_load_state("networkidle")
            scroll_width, window_width = page.evaluate(
                "[document.documentElement.scrollWidth, window.innerWidth]")
            assert scroll_width <= window_width, f"{address} scrolls sideways at {width} px"
            assert page.evaluate("window.__violations") == [], address
            page.screenshot(path=str(SCREENSHOTS / f"participant-{width}-{name}.png"),
                            full_page=True)
            if name == "team":
                expect(page.locator("#members li")).to_have_count(1)
                expect(page.locator(".local-time").first).to_contain_text("your time: ")
                countdown = page.locator("#phase-final [data-countdown]").first
                expect(countdown).to_have_text(re.compile(r"^(\d+ d )?\d\d:\d\d:\d\d$"))
                first = countdown.inner_text()
                page.wait_for_timeout(1100)
                assert countdown.inner_text() != first  # it ticks
                expect(page.locator("text=after the deadline")).to_be_visible()
                expect(page.locator("[data-limits=final]")).to_contain_text(
                    "Next upload possible at")
            if name == "submit":
                expect(page.locator("#upload-refused")).to_contain_text("daily limit")
                expect(page.get_by_role("button", name="Upload")).to_be_disabled()
            if name == "track":
                expect(page.get_by_label("one end-to-end model, no external tool")) \
                    .to_be_visible()
    finally:
        context.close()
