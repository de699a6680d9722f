"""Failures on our side and judge refusals, as a visitor, an author and staff read them in
Chromium at a desktop's width (1366 px) and a phone's (390 px): every message is visible and
nothing scrolls the page sideways.

The data is real: a judge simulator that takes one audio a prompt refuses the queries that
send two (as vLLM does); one run published with its refusals counted, another refused too
often and failed by the aggregation; a validation that failed on our side; and an endpoint
whose last probe listed another model.
Screenshots: artifacts/screenshots/refusals-<width>-<page>.png.
"""

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from judge.models import Endpoint
from scoring import aggregation, query_loop, runs
from scoring.kinds.mmae.predictions import load_predictions
from scoring.models import Answer
from submissions.models import ModelEntry, Submission
from submissions.services import submission_fail_validation
from tests.browser.conftest import SCREENSHOTS
from tests.browser.test_board_in_browser import in_thread
from tests.browser.test_layout_in_browser import WIDTHS
from tests.browser.test_rescore_in_browser import log_in
from tests.conftest import demo_run, judge_config, score_run

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True),
              pytest.mark.timeout(180)]

# What the validation task stores when the disk lost an upload's files (a long path, unbroken).
BROKEN = ("FileNotFoundError: [Errno 2] No such file or directory: '/srv/mmae/media/"
          "submissions/3/predictions/systems/sys-a/predictions-of-a-long-named-system.jsonl'")
OTHER_MODEL = "Qwen2-Audio-7B-Instruct"


def scored_to_the_end(run) -> bool:
    """Every batch scored, then aggregated: True if the run finished, False if it failed."""
    worker = query_loop.JudgeSettings(concurrency=8, timeout=10, down_wait=1)
    for batch in run.batches.order_by("index"):
        assert query_loop.batch_score(batch.id, worker) is True
    assert runs.run_try_aggregate(run.id) is True
    return aggregation.run_aggregate(run.id)


@pytest.fixture
def site(demo_set, author, staff, thread_simulator_factory, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.SCORING_BATCH_ITEMS = 7
    sim = thread_simulator_factory(latency_ms=1, max_audios=1)
    benchmark, published = demo_run(demo_set, sim.urls)
    settings.SCORING_MAX_REFUSED_SHARE = 0.99  # published with its refusals counted
    published = in_thread(lambda: score_run(published))
    assert 0 < published.refused_queries < published.total_queries

    outputs = {p.sample_id: p.audio_path for p in load_predictions(
        demo_set["jsonl"], known_ids={s["id"] for s in demo_set["samples"]})}
    refused = runs.run_create(benchmark=benchmark, audio_root=str(demo_set["root"]),
                              outputs=outputs, missing={})
    settings.SCORING_MAX_REFUSED_SHARE = 0.01  # too many refused: failed on our side
    assert in_thread(lambda: scored_to_the_end(refused)) is False
    refused.refresh_from_db()
    assert refused.status == "failed" and "The judge refused" in refused.error

    model = ModelEntry.objects.create(owner=author, name="Echo Editor", organisation="Lab A")
    made = {}
    for name, run, status in (("published", published, "queued"),
                              ("refused", refused, "queued"), ("broken", None, "uploaded")):
        made[name] = Submission.objects.create(
            owner=author, model=model, benchmark=benchmark, public=True, status=status,
            current_run=run, coverage=None if run is None else 1.0)
        if run is not None:
            made[name].runs.add(run)
    assert submission_fail_validation(made["broken"].id, BROKEN) is True

    # A second rack whose server was started with another model.
    url = "http://127.0.0.1:9"
    judge_config([url], seed=12, max_audio_seconds=30.0, max_audios=2)
    Endpoint.objects.create(base_url=url, healthy=True, served_models=[OTHER_MODEL],
                            last_probe_at=timezone.now(), probe_latency_ms=3.0)
    answer = (Answer.objects.filter(run=published, error_kind="refused request")
              .select_related("criterion__item").order_by("id").first())
    return {**made, "url": url, "refused_sample": answer.criterion.item.key,
            "refused_error": answer.error, "refused_run": refused, "run": published}


def open_page(page, address: str, name: str, width: int) -> None:
    response = page.goto(address)
    assert response.status == 200, address
    page.wait_for_load_state("networkidle")
    fits(page, address, width)


def fits(page, address: str, width: int) -> None:
    scroll_width, window_width = page.evaluate(
        "[document.documentElement.scrollWidth, window.innerWidth]")
    assert scroll_width <= window_width, f"{address} scrolls sideways at {width} px"


def shot(page, name: str, width: int, part=None) -> None:
    """The whole page, or only `part` (a locator) when the page is too long to read."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = str(SCREENSHOTS / f"refusals-{width}-{name}.png")
    if part is None:
        page.screenshot(path=path, full_page=True)
    else:
        part.screenshot(path=path)


def within_the_screen(page, locator) -> None:
    """Each element lies wholly inside the viewport's width (not scrolled off in its box)."""
    width = page.viewport_size["width"]
    for box in locator.evaluate_all("els => els.map(e => e.getBoundingClientRect().toJSON())"):
        assert 0 <= box["left"] and box["right"] <= width, box


@pytest.fixture
def browse(page):
    """`browse(device, username)`: the page at that device's size, logged in unless None."""
    def open_as(device, username=None):
        width, height = WIDTHS[device]
        page.set_viewport_size({"width": width, "height": height})
        if username:
            log_in(page, username)
            expect(page.get_by_role("button", name="Log out")).to_be_attached()
        return page, width

    return open_as


@pytest.mark.parametrize("device", WIDTHS)
def test_a_visitor_sees_the_refusals_counted_and_each_refused_vote_marked(browse, site, device):
    page, width = browse(device)
    run = site["run"]
    open_page(page, "/b/mmae/", "board", width)
    expect(page.locator("#board td.judge .refused")).to_have_text(
        f"{run.refused_queries} refused")
    expect(page.locator("#board td.judge .refused")).to_be_visible()
    shot(page, "board", width)

    key = site["refused_sample"]
    open_page(page, f"/s/{site['published'].pk}/?q={key}", "explorer", width)
    sample = page.locator(f"#sample-{key}")
    sample.locator("details.rubrics > summary").click()
    vote = sample.locator("tr.vote", has=page.locator(".refused")).first
    expect(vote.locator(".refused")).to_have_text("refused by the judge")
    expect(vote).to_contain_text("counts as a wrong vote")
    expect(vote.locator("td.reason small.error")).to_have_text(site["refused_error"])
    expect(vote.locator("td.reason small.error")).to_be_visible()
    assert site["refused_error"].startswith("the judge refused the query (HTTP 400)")
    fits(page, "the explorer with a sample's votes open", width)
    shot(page, "explorer", width)
    shot(page, "explorer-vote", width, vote.locator("xpath=ancestor::li[1]"))


@pytest.mark.parametrize("device", WIDTHS)
def test_an_author_is_told_plainly_that_the_failures_are_on_our_side(browse, site, device):
    page, width = browse(device, "author")
    open_page(page, f"/submissions/{site['refused'].pk}/", "status-refused", width)
    expect(page.locator("#state")).to_have_text("failed")
    expect(page.locator("#failed-on-our-side")).to_contain_text(
        "Scoring this submission failed on our side, not yours")
    what_broke = page.get_by_text("What broke: The judge refused")
    expect(what_broke).to_be_visible()
    expect(what_broke).to_contain_text("not a fault in your upload")
    shot(page, "status-refused", width)

    open_page(page, f"/submissions/{site['broken'].pk}/", "status-broken", width)
    expect(page.locator("#failed-on-our-side")).to_contain_text(
        "Validating this submission failed on our side, not yours")
    expect(page.get_by_text("FileNotFoundError")).to_have_count(0)  # staff's business
    shot(page, "status-broken", width)

    open_page(page, "/submissions/", "my-submissions", width)
    states = page.locator("table.submissions td .status")
    expect(states).to_have_text(["failed", "failed", "finished"])
    within_the_screen(page, states)
    expect(page.locator("p.quota")).to_contain_text("failures on our side do not count")
    shot(page, "my-submissions", width)


@pytest.mark.parametrize("device", WIDTHS)
def test_staff_see_what_broke_a_retry_form_and_a_misconfigured_endpoint(browse, site, device):
    page, width = browse(device, "staff")
    open_page(page, "/staff/submissions/", "staff-submissions", width)
    for name in ("refused", "broken"):
        reason = page.get_by_label(f"why retry submission {site[name].pk}")
        expect(reason).to_be_visible()
        row = page.locator("#moderation tr", has=reason)
        expect(row.get_by_role("button", name="Retry")).to_be_visible()
    expect(page.get_by_label(f"why retry submission {site['published'].pk}")).to_have_count(0)
    shot(page, "staff-submissions", width)

    open_page(page, f"/staff/submissions/{site['broken'].pk}/", "staff-broken", width)
    expect(page.locator("#retry")).to_contain_text(
        f"It failed on our side while validating. What broke: {BROKEN}")
    expect(page.locator("#retry")).to_contain_text("Not retried by the sweeper yet.")
    expect(page.get_by_role("button", name=f"Retry submission {site['broken'].pk}"))\
        .to_be_visible()
    shot(page, "staff-broken", width)

    open_page(page, f"/staff/submissions/{site['refused'].pk}/", "staff-refused", width)
    expect(page.locator("#retry")).to_contain_text(
        "It failed on our side while scoring. What broke: The judge refused")
    shot(page, "staff-refused", width)

    open_page(page, "/staff/fleet/", "fleet", width)
    row = page.locator("table.fleet tr", has=page.get_by_text(site["url"], exact=True))
    expect(row.locator(".health-misconfigured")).to_have_text("misconfigured")
    expect(row.locator("td.health small.error")).to_have_text(
        f"serves '{OTHER_MODEL}', not 'Qwen3-Omni-30B-A3B-Instruct': "
        "queries would get HTTP 404")
    expect(row.locator("td.health small.error")).to_be_visible()
    edit = page.locator("details.config-edit", has_text="audio up to 30 s, 2 audios a prompt")
    edit.locator("summary").click()
    expect(edit.get_by_label("Longest audio (s)")).to_have_value("30.0")
    expect(edit.get_by_label("Audios per prompt")).to_have_value("2")
    fits(page, "the fleet page with a config's form open", width)
    shot(page, "fleet", width)
    shot(page, "fleet-endpoint", width, row)
    shot(page, "fleet-config-form", width, edit)
