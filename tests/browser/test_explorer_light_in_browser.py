"""The explorer's rubric tables fetched when opened, and the compare page's model search, in
Chromium at a desktop's width (1366 px) and a phone's (390 px): the table arrives on toggle
(a request to its partial, none before), the search answers from its endpoint and keeps the
models picked; nothing scrolls sideways and the page's scripts break no CSP rule. Without
scripts, the summary's link opens the table as a page.

The data: 40 synthetic MMAE samples with the real set's rubrics per sample, judged for one
public submission (tests.factories.judged_submission), and 30 more public models on the board.
Screenshots: artifacts/screenshots/explorer-light-<width>-<step>.png.
"""

import pytest
from playwright.sync_api import expect

from scoring import synthetic
from scoring.models import Criterion
from scoring.services import benchmark_import
from tests.browser.conftest import SCREENSHOTS
from tests.browser.test_layout_in_browser import RECORD_VIOLATIONS, WIDTHS
from tests.conftest import judge_config
from tests.factories import judged_submission, scored_submission

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True),
              pytest.mark.timeout(180)]

LONG_NAME = ("Echo Editor " + "with a very long descriptive model name " * 5)[:200]


@pytest.fixture
def site(tmp_path, author, other_author):
    meta = synthetic.write_meta_with_empty_audio(
        synthetic.make_meta(40, seed=11, n_rubrics=355), tmp_path / "meta.json",
        tmp_path / "audio")
    benchmark, _ = benchmark_import(kind="mmae", path=meta, audio_root=tmp_path / "audio",
                                    slug="mmae")
    judge_config(["http://127.0.0.1:9"], benchmark=benchmark)
    benchmark.refresh_from_db()
    submission = judged_submission(benchmark, author, "Open Editor", seed=1)
    for i in range(30):
        name = LONG_NAME if i == 3 else f"Reverb {i:02d}"
        scored_submission(benchmark, other_author, name, {("overall", ""): (i, i, i)},
                          changed=True, organisation="Sound Lab")
    first = benchmark.items.order_by("position").first()
    return {"submission": submission, "key": first.key,
            "rubrics": Criterion.objects.filter(item=first).count()}


def opened(page, address: str, what: str, width: int) -> None:
    response = page.goto(address)
    assert response.status == 200, address
    page.wait_for_load_state("networkidle")
    fits(page, what, width)


def fits(page, what: str, width: int) -> None:
    scroll_width, window_width = page.evaluate(
        "[document.documentElement.scrollWidth, window.innerWidth]")
    assert scroll_width <= window_width, f"{what} scrolls sideways at {width} px"
    assert page.evaluate("window.__violations") == [], what


def shot(page, step: str, width: int, part=None) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = str(SCREENSHOTS / f"explorer-light-{width}-{step}.png")
    (part or page).screenshot(path=path, **({} if part else {"full_page": False}))


@pytest.fixture
def at(page):
    """`at(device)`: the page at that device's size, CSP violations recorded."""
    page.add_init_script(RECORD_VIOLATIONS)

    def size(device):
        width, height = WIDTHS[device]
        page.set_viewport_size({"width": width, "height": height})
        return page, width

    return size


@pytest.mark.parametrize("device", WIDTHS)
def test_a_samples_rubric_table_is_fetched_when_opened(at, site, device):
    page, width = at(device)
    key, pk = site["key"], site["submission"].pk
    asked = []
    page.on("request", lambda r: asked.append(r.url) if "/rubrics/" in r.url else None)
    opened(page, f"/s/{pk}/", "the explorer", width)
    expect(page.locator("article.sample")).to_have_count(20)
    assert asked == [] and page.locator("tr.vote").count() == 0  # nothing until opened
    sample = page.locator(f"#sample-{key}")
    with page.expect_response(lambda r: r.url.endswith(f"/s/{pk}/samples/{key}/rubrics/")) \
            as answered:
        sample.locator("details.rubrics > summary").click()
    assert answered.value.status == 200
    assert answered.value.headers.get("content-encoding") == "gzip"
    expect(sample.locator("tr.vote")).to_have_count(3 * site["rubrics"])
    expect(sample.locator("li.rubric").first).to_be_visible()
    assert len(asked) == 1
    sample.locator("details.rubrics > summary").click()  # closed and opened again: kept
    sample.locator("details.rubrics > summary").click()
    expect(sample.locator("tr.vote")).to_have_count(3 * site["rubrics"])
    assert len(asked) == 1
    fits(page, "the explorer with a table open", width)
    sample.scroll_into_view_if_needed()
    shot(page, "explorer-open", width)
    shot(page, "explorer-sample", width, sample.locator("details.rubrics li.rubric").first)


def test_without_scripts_the_summary_opens_the_table_as_a_page(browser, live_server, site):
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False,
                                  viewport={"width": 390, "height": 844})
    page = context.new_page()
    key, pk = site["key"], site["submission"].pk
    page.goto(f"/s/{pk}/")
    page.locator(f"#sample-{key} a.rubrics-link").click()
    page.wait_for_url(f"**/s/{pk}/samples/{key}/rubrics/")
    expect(page.locator("tr.vote")).to_have_count(3 * site["rubrics"])
    expect(page.locator("h1")).to_contain_text("every judge answer")
    shot(page, "no-script-table", 390)
    context.close()


@pytest.mark.parametrize("device", WIDTHS)
def test_the_compare_picker_searches_and_keeps_the_models_picked(at, site, device):
    page, width = at(device)
    opened(page, "/b/mmae/compare/", "the compare picker", width)
    boxes = page.locator("#picker-choices input[name=models]")
    expect(boxes).to_have_count(20)
    expect(page.locator("#picker-count")).to_have_text(
        "The board\u2019s first 20 of 31 models: search for the others.")
    page.locator("#picker-choices label", has_text="Open Editor").locator("input").check()
    with page.expect_response(lambda r: "/compare/models/?q=reverb+2" in r.url):
        page.locator("#picker-q").fill("reverb 2")
    expect(page.locator("#picker-count")).to_have_text(
        "10 models match \u201creverb 2\u201d.")
    expect(boxes).to_have_count(11)  # the one picked, then the matches
    expect(page.locator("#picker-choices label").first).to_contain_text("Open Editor")
    expect(boxes.first).to_be_checked()
    page.locator("#picker-choices label", has_text="Reverb 29").locator("input").check()
    with page.expect_response(lambda r: "/compare/models/?q=very+long" in r.url):
        page.locator("#picker-q").fill("very long")
    expect(boxes).to_have_count(3)  # both picked, and the long name found
    long_name = page.locator("#picker-choices label", has_text="very long").locator(".name")
    expect(long_name).to_have_attribute("title", LONG_NAME)
    fits(page, "the picker with a long name", width)
    shot(page, "picker", width)
    page.locator("#picker-compare").click()
    page.wait_for_url("**/b/mmae/compare/?*")
    assert "models=" in page.url
    expect(page.locator("#compare")).to_be_visible()
    expect(page.locator("#picker-choices input:checked")).to_have_count(2)
    page.wait_for_load_state("networkidle")
    fits(page, "the comparison", width)
    shot(page, "compared", width)
