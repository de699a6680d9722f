"""A visitor reads the board in Chromium: slices, a model, a submission's samples and audio,
and the board's CSV.

The data is real: a synthetic benchmark imported, two models' outputs scored by the judge
simulator through scoring.runs as the pipeline does, and published results loaded beside them.
"""

import csv
import json
import re
import threading

import pytest
from django.core.management import call_command
from django.db import connections
from playwright.sync_api import expect

from leaderboard.boards import selectors
from scoring import aggregation, query_loop, runs
from scoring.kinds.mmae.predictions import load_predictions
from scoring.services import benchmark_import
from scoring.synthetic import MODALITIES, write_benchmark, write_system
from submissions.models import ModelEntry, Submission
from tests.browser.conftest import SCREENSHOTS, draw_charts
from tests.conftest import judge_config

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True),
              pytest.mark.timeout(60)]

SYSTEMS = [  # model name, organisation, open weights, synthetic system seed, missing outputs
    ("Echo Editor", "Lab A", True, 5, 0),
    ("Vox Remix", "Lab B", False, 8, 1),
]
# With these seeds Echo Editor leads overall and on the first modality bucket (music), and
# Vox Remix leads on this one (the simulator's verdicts are deterministic).
RERANKED_BUCKET = "sound-music"


def judge(urls=None):
    """Worker settings (the endpoints come from the run's judge config)."""
    return query_loop.JudgeSettings(concurrency=8, timeout=10, down_wait=1)


def in_thread(function):
    """Run `function` in a thread of its own and return its result.

    scoring.runs asks the judge with asyncio.run(), which refuses to start from this thread
    while Playwright's event loop runs on it; the thread's own database connection is closed
    so that the test database can be dropped afterwards.
    """
    outcome = {}

    def target():
        try:
            outcome["value"] = function()
        except BaseException as exc:  # re-raised in the test's thread
            outcome["error"] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(timeout=40)
    assert not thread.is_alive(), "scoring took longer than 40 s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def score(benchmark, root, samples, urls, *, system: str, seed: int, missing: int):
    """A finished run of a synthetic system's outputs, scored batch by batch."""
    path = write_system(root, samples, name=system, seed=seed, missing=missing)
    known = {s["id"] for s in samples}
    outputs = {p.sample_id: p.audio_path for p in load_predictions(path, known_ids=known)}
    absent = {k: "no prediction" for k in known - outputs.keys()}
    run = runs.run_create(benchmark=benchmark, audio_root=str(root), outputs=outputs,
                          missing=absent,
                          config=judge_config(urls, benchmark=benchmark))
    for batch in run.batches.order_by("index"):
        assert query_loop.batch_score(batch.id, judge(urls))
    assert runs.run_try_aggregate(run.id) and aggregation.run_aggregate(run.id)
    run.refresh_from_db()
    assert run.status == "finished"
    return run, len(outputs) / len(samples)


@pytest.fixture
def board_data(tmp_path, settings, author, thread_simulator_factory):
    """The mmae board: two public scored submissions and two reported results."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.SCORING_BATCH_ITEMS = 6
    root = tmp_path / "bench"
    meta = write_benchmark(root, 12, seed=21)
    samples = json.loads(meta.read_text())
    benchmark, _ = benchmark_import(kind="mmae", path=meta, audio_root=root, slug="mmae",
                                    synthetic=True)
    urls = thread_simulator_factory(latency_ms=1).urls
    submissions = {}
    for name, organisation, open_weights, seed, missing in SYSTEMS:
        run, coverage = in_thread(lambda s=seed, m=missing: score(
            benchmark, root, samples, urls, system=f"sys-{s}", seed=s, missing=m))
        model = ModelEntry.objects.create(owner=author, name=name, organisation=organisation,
                                          open_weights=open_weights, licence="MIT")
        submission = Submission.objects.create(
            owner=author, model=model, benchmark=benchmark, public=True, status="queued",
            current_run=run, coverage=coverage)
        submission.runs.add(run)
        submissions[name] = submission
    reported = tmp_path / "paper_results.json"
    reported.write_text(json.dumps({"source": "Synthetic paper, table 2", "models": [
        {"model": "Paper Editor", "n_samples": 801,
         "overall": {"IFR": 50.73, "CR": 56.93, "EMR": 4.99},
         "modality": {m: {"IFR": 40.0 + i, "CR": 50.0 + i, "EMR": 3.0 + i}
                      for i, m in enumerate(MODALITIES)}}],
        "challenge_baselines": [{"model": "Challenge Baseline", "scope": "single subset",
                                 "overall": {"IFR": 42.12, "CR": 75.78, "EMR": 7.58}}]}))
    call_command("load_reference_results", str(reported), "--benchmark", "mmae")
    return {"benchmark": benchmark, "samples": samples, "submissions": submissions}


def shoot(page, step: str):
    """Saves the whole page as artifacts/screenshots/board-<step>.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"board-{step}.png"), full_page=True)


def board_models(page) -> list[str]:
    return page.locator("#board tbody td.model a.name").all_text_contents()


def expected_models(benchmark, dimension="overall", bucket="") -> list[str]:
    query = selectors.BoardQuery(dimension=dimension, bucket=bucket)
    return [r["model"] for r in selectors.leaderboard_rows(benchmark=benchmark, query=query)]


def table_cells(page) -> list[list[str]]:
    """Each row's model, organisation and IFR, CR and EMR cells without their intervals."""
    return page.locator("#board tbody tr:not(.reference)").evaluate_all("""rows => rows.map(row => {
        const heads = [...document.querySelectorAll("#board thead th")];
        const cell = key => row.children[heads.findIndex(th => th.classList.contains(key))];
        const figure = td => td.firstChild ? td.firstChild.textContent.trim() : "";
        return [cell("col-model").querySelector("a").textContent.trim(),
                cell("col-organisation").textContent.trim(),
                ...["col-IFR", "col-CR", "col-EMR"].map(key => figure(cell(key)))];
    })""")


def test_a_visitor_slices_the_board_opens_a_model_plays_a_sample_and_downloads_the_csv(
        page, board_data):
    benchmark = board_data["benchmark"]

    # The board, overall: both scored models ranked, the reported results apart.
    page.goto("/")
    page.wait_for_url("**/b/mmae/")
    overall = expected_models(benchmark)
    assert board_models(page) == overall == ["Echo Editor", "Vox Remix"]
    expect(page.locator("#board .badge.simulated")).to_have_count(2)
    expect(page.locator("#board .badge.partial")).to_have_count(1)
    reported = page.locator("#board tbody")  # reported rows stand inline
    expect(reported).to_contain_text("Paper Editor")
    expect(reported).to_contain_text("Challenge Baseline")
    expect(reported).to_contain_text("801 samples")
    draw_charts(page)
    expect(page.locator("#chart-board")).to_be_visible()
    shoot(page, "01-overall")

    # A slice: the dimension first (the page reloads on its first bucket), then a bucket.
    bucket = RERANKED_BUCKET
    page.get_by_label("Slice").select_option("modality")
    page.wait_for_url(re.compile(r"[?&]dimension=modality"))
    first = selectors.bucket_choices(benchmark)["modality"][0]
    expect(page.get_by_label("Bucket")).to_have_value(first)
    expect(page.locator("p.meta")).to_contain_text(f"modality = {first}")
    assert first == "music"
    assert board_models(page) == expected_models(benchmark, "modality", first) == overall
    shoot(page, "02-slice-modality")

    page.get_by_label("Bucket").select_option(bucket)
    page.wait_for_url(re.compile(rf"[?&]bucket={re.escape(bucket)}(&|$)"))
    assert "dimension=modality" in page.url
    expect(page.locator("p.meta")).to_contain_text(f"modality = {bucket}")
    sliced = board_models(page)
    assert sliced == expected_models(benchmark, "modality", bucket) == overall[::-1]
    expect(page.locator("#board tbody")).to_contain_text("Paper Editor")
    expect(page.locator("#board tbody")).not_to_contain_text("Challenge Baseline")
    expect(page.locator("#board-chart figcaption")).to_contain_text(f"modality = {bucket}")
    sort_by_ifr = page.locator("#board thead").get_by_role("link", name="IFR")
    expect(sort_by_ifr).to_have_attribute(  # sorting keeps the slice
        "href", re.compile(rf"^\?dimension=modality&bucket={re.escape(bucket)}&.*sort=IFR"))
    shoot(page, f"03-slice-{bucket}")

    # The board's CSV of this slice: the same rows, in the same order, as the table.
    with page.expect_download() as download_info:
        page.get_by_role("link", name="CSV", exact=True).click()
    download = download_info.value
    assert download.suggested_filename == f"mmae-modality-{bucket}.csv"
    with open(download.path(), newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        rows = [dict(zip(header, values, strict=True)) for values in reader]
    assert header[:8] == ["rank", "rank_best", "rank_worst", "model", "organisation",
                          "submitted_by", "verified", "submission"]
    assert {"IFR", "CR", "EMR", "coverage", "judge", "simulated", "date"} <= set(header)
    assert [[r["model"], r["organisation"]] + [f"{float(r[m]):.2f}" for m in ("IFR", "CR",
                                                                              "EMR")]
            for r in rows] == table_cells(page)
    ranks = page.locator("#board tr:not(.reference) td.rank").all_text_contents()
    assert [r["rank"] for r in rows] == [t.split()[0] for t in ranks]
    shoot(page, "04-csv-downloaded")

    # A model's page, from its name on the board.
    leader = sliced[0]
    page.locator("#board").get_by_role("link", name=leader, exact=True).click()
    page.wait_for_url(re.compile(r"/m/\d+/$"))
    expect(page.get_by_role("heading", level=1)).to_contain_text(leader)
    expect(page.locator("#submissions tbody tr")).to_have_count(1)
    expect(page.locator("#slices-chart")).to_be_visible()
    shoot(page, "05-model")

    # Its submission's page: the explorer filtered to the slice, then one output played.
    submission = board_data["submissions"][leader]
    page.locator("#submissions").get_by_role("link", name=re.compile("MMAE")).click()
    page.wait_for_url(f"**/s/{submission.pk}/")
    samples = page.locator("#samples-list article.sample")
    expect(samples).to_have_count(12)
    shoot(page, "06-submission")

    in_bucket = [s["id"] for s in board_data["samples"] if s["modality"] == bucket]
    with page.expect_response(re.compile(r"/samples/\?")) as partial:
        page.locator("#explorer-dimension").select_option("modality")
    assert partial.value.status == 200
    with page.expect_response(re.compile(r"/samples/\?")) as partial:
        page.locator("#explorer-bucket").select_option(bucket)
    assert partial.value.status == 200
    for key in in_bucket:  # waits for the bucket's list, not the first bucket's
        expect(page.locator(f"#sample-{key}")).to_be_visible()
    expect(samples).to_have_count(len(in_bucket))
    page.wait_for_url(re.compile(rf"/s/{submission.pk}/\?dimension=modality&bucket="))
    expect(page.locator(".explorer-count")).to_contain_text(f"{len(in_bucket)} sample")
    shoot(page, "07-explorer-filtered")

    audio = samples.first.locator("figure.output audio")
    with page.expect_response(re.compile(r"/audio/[0-9a-f]+/output$")) as response_info:
        audio.click(position={"x": 18, "y": audio.bounding_box()["height"] / 2})  # play
    assert response_info.value.status in (200, 206)
    assert response_info.value.header_value("content-type") == "audio/wav"
    page.wait_for_function(
        "el => el.currentTime > 0 && (!el.paused || el.ended)", arg=audio.element_handle(),
        timeout=10_000)
    assert audio.evaluate("el => el.error") is None
    shoot(page, "08-audio-playing")
