"""The fleet page in Chromium: staff see the endpoints' health and figures, the page refreshes
itself, and an endpoint is taken out with a reason."""

import re

import pytest
from playwright.sync_api import expect

from audit.models import AuditEvent
from judge.models import Endpoint
from scoring import query_loop
from scoring.fleet import fleet_probe
from tests.browser.test_board_in_browser import in_thread
from tests.browser.test_rescore_in_browser import log_in
from tests.conftest import demo_run

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True),
              pytest.mark.timeout(120)]


@pytest.fixture
def fleet(demo_set, staff, thread_simulator_factory, settings):
    """Two simulator endpoints under the benchmark's config, one batch of a run scored through
    them (answers for the figures), the rest of the run waiting, and a probe stored."""
    settings.SCORING_BATCH_ITEMS = 6
    sim = thread_simulator_factory(latency_ms=20)
    _, run = demo_run(demo_set, sim.urls)
    worker = query_loop.JudgeSettings(concurrency=4, timeout=10, down_wait=1)
    in_thread(lambda: query_loop.batch_score(run.batches.order_by("index").first().id, worker))
    in_thread(fleet_probe)
    return sim


def endpoint_row(page, url):
    return page.locator("table.fleet tr").filter(has=page.get_by_text(url, exact=True))


def test_staff_watch_the_fleet_and_take_an_endpoint_out(page, screenshot, fleet):
    log_in(page, "staff")
    page.goto("/staff/fleet/")
    expect(page.get_by_role("heading", name="Judge fleet")).to_be_visible()
    first, second = (endpoint_row(page, url) for url in fleet.urls)
    for row in (first, second):
        expect(row.locator(".health-healthy")).to_have_text("healthy")
        expect(row.locator("td.num").nth(0)).to_have_text("0 / 0")  # running / waiting
        expect(row.locator("td.num").nth(1)).not_to_have_text("0.0")  # answers/min
        expect(row.locator("td.num").nth(3)).to_have_text(re.compile(r"^\d+ / \d+ / \d+$"))
    queue = page.get_by_role("row", name=re.compile("^submission"))
    expect(queue.locator("td.num").first).not_to_have_text("0")  # batches pending
    expect(queue).to_contain_text("waiting")

    polls = []
    page.on("request", lambda r: polls.append(r.url) if "/staff/fleet/stats/" in r.url else None)
    page.wait_for_timeout(11_000)
    assert polls, "the stats never refreshed"
    screenshot("fleet")

    second.get_by_placeholder("why").fill("replacing its GPU")
    count = len(polls)
    page.wait_for_timeout(11_000)
    assert len(polls) == count, "a refresh would have wiped the reason being typed"
    expect(second.get_by_placeholder("why")).to_have_value("replacing its GPU")
    second.get_by_role("button", name="Take out").click()
    page.wait_for_url("**/staff/fleet/")
    expect(page.locator("p.notice")).to_contain_text(f"{fleet.urls[1]} is out of service")
    second = endpoint_row(page, fleet.urls[1])
    expect(second.locator(".badge.private")).to_have_text("taken out")
    expect(second).to_contain_text("replacing its GPU")
    expect(second.get_by_role("button", name="Put back")).to_be_visible()
    expect(page.locator(".fleet-config .meta").first).to_contain_text(
        "1 of 2 endpoints in service")
    screenshot("taken-out")

    assert Endpoint.objects.get(base_url=fleet.urls[1]).enabled is False
    event = AuditEvent.objects.get(action="endpoint")
    assert (event.actor_name, event.reason) == ("staff", "replacing its GPU")

    page.get_by_text("New judge config").click()
    form = page.locator("#new-config form")
    form.get_by_label("Name").fill("mmae-second-rack")
    form.get_by_label("Base URLs").fill(f"{fleet.urls[0]}\nftp://judge-b:21")
    form.get_by_role("button", name="Create").click()
    expect(page.locator("#new-config")).to_have_attribute("open", "")
    expect(page.locator("#new-config .errorlist")).to_contain_text(
        "'ftp://judge-b:21' is not an http(s) URL")
    screenshot("new-config-refused")
    page.locator("#new-config").get_by_label("Base URLs").fill(fleet.urls[0])
    page.locator("#new-config").get_by_role("button", name="Create").click()
    expect(page.locator("p.notice")).to_contain_text("Judge config mmae-second-rack created")
    expect(page.locator(".fleet-config h2", has_text="mmae-second-rack")).to_be_visible()
