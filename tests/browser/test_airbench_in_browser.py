"""A visitor reads the AIR-Bench chat board in Chromium: ranked rows, a category slice, the
published table marked reported, and a submission's judge replies per item.

The data is real: a small chat metadata file imported, two models' responses scored by the
judge simulator through scoring.runs, and the published table loaded beside them.
"""

import re

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from leaderboard.boards import selectors
from scoring import aggregation, query_loop, runs
from scoring.kinds.airbench import rules as airbench
from scoring.services import benchmark_import
from submissions.models import ModelEntry, Submission
from tests.browser.conftest import SCREENSHOTS, draw_charts
from tests.browser.test_board_in_browser import in_thread, judge
from tests.conftest import judge_config
from tests.scoring.airbench_data import REFERENCE, chat_meta, write

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True),
              pytest.mark.timeout(60)]

SYSTEMS = {  # model name -> the response it gives to every question but one
    "Attentive Listener": "A man speaks calmly about the weather over light rain.",
    "Terse Listener": "Noise.",
}


def score(benchmark, urls, outputs):
    keys = {i.key for i in benchmark.items.all()}
    run = runs.run_create(benchmark=benchmark, audio_root="", outputs=outputs,
                          missing={k: "no prediction" for k in keys - outputs.keys()},
                          config=judge_config(urls, kind=benchmark.kind, benchmark=benchmark))
    for batch in run.batches.order_by("index"):
        assert query_loop.batch_score(batch.id, judge(urls))
    assert runs.run_try_aggregate(run.id) and aggregation.run_aggregate(run.id)
    run.refresh_from_db()
    assert run.status == "finished"
    return run


@pytest.fixture
def judged_chat_board(tmp_path, author, thread_simulator_factory):
    benchmark, _ = benchmark_import(kind=airbench.CHAT,
                                    path=write(tmp_path / "Chat_meta.json", chat_meta()),
                                    audio_root=None, slug="air-bench-chat")
    urls = thread_simulator_factory(latency_ms=1, seed=3).urls
    submissions = {}
    for name, response in SYSTEMS.items():
        outputs = {str(i): f"{response} ({i})" for i in range(6) if i != 3}
        run = in_thread(lambda o=outputs: score(benchmark, urls, o))
        model = ModelEntry.objects.create(owner=author, name=name, organisation="Lab")
        submission = Submission.objects.create(owner=author, model=model, benchmark=benchmark,
                                               public=True, status="queued", current_run=run,
                                               coverage=5 / 6)
        submission.runs.add(run)
        submissions[name] = submission
    call_command("load_reference_results", str(REFERENCE), "--benchmark", "air-bench-chat")
    return benchmark, submissions


def shoot(page, step: str):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"airbench-{step}.png"), full_page=True)


def test_a_visitor_reads_the_chat_board_a_slice_and_an_items_replies(page, judged_chat_board):
    benchmark, submissions = judged_chat_board
    expected = [r["model"] for r in selectors.leaderboard_rows(benchmark=benchmark)]

    page.goto("/b/air-bench-chat/")
    models = page.locator("#board tbody td.model a.name")
    expect(models).to_have_count(2)
    assert models.all_text_contents() == expected
    expect(page.locator("#board thead")).to_contain_text("pass A")
    expect(page.locator("#board .badge.simulated")).to_have_count(2)
    expect(page.locator("p.meta").first).to_contain_text("Ranked by the strict score")
    reported = page.locator("#board tbody")  # reported rows stand inline
    expect(reported).to_contain_text("Qwen2-Audio")
    expect(page.locator("#board tr.reference.reported")).to_have_count(11)
    draw_charts(page)
    expect(page.locator("#chart-board")).to_be_visible()
    shoot(page, "01-chat-board")

    page.get_by_label("Slice").select_option("category")
    page.wait_for_url(re.compile(r"[?&]dimension=category"))
    page.get_by_label("Bucket").select_option("mixed_audio")
    page.wait_for_url(re.compile(r"[?&]bucket=mixed_audio"))
    expect(page.locator("p.meta").first).to_contain_text("category = mixed_audio")
    assert models.all_text_contents() == [r["model"] for r in selectors.leaderboard_rows(
        benchmark=benchmark, query=selectors.BoardQuery(dimension="category",
                                                        bucket="mixed_audio"))]
    expect(reported).to_contain_text("6.77")  # Qwen2-Audio's published mixed audio score
    shoot(page, "02-chat-mixed-audio")

    submission = submissions[expected[0]]
    page.goto(f"/s/{submission.pk}/")
    item = page.locator("#sample-0")
    expect(item).to_contain_text("The reference answer 0.")
    item.locator("details summary").click()
    expect(item.locator("table.votes tbody tr")).to_have_count(2)
    expect(item.locator("table.votes")).to_contain_text("pass B")
    expect(page.locator("#sample-3")).to_contain_text("no response")
    shoot(page, "03-chat-submission")


@pytest.fixture
def foundation_board(tmp_path, author, thread_simulator_factory):
    from tests.scoring.airbench_data import foundation_meta

    benchmark, _ = benchmark_import(
        kind=airbench.FOUNDATION, path=write(tmp_path / "Foundation_meta.json",
                                             foundation_meta()),
        audio_root=None, slug="air-bench-foundation")
    urls = thread_simulator_factory(latency_ms=1).urls
    answers = {  # Steady answers everything; Guesser answers fewer but reads better per item
        "Steady": {"1": "B", "2": "A", "3": "B", "4": "D", "5": "A", "6": "B"},
        "Guesser": {"1": "B", "2": "A", "4": "D"},
    }
    for name, outputs in answers.items():
        run = in_thread(lambda o=outputs: score(benchmark, urls, o))
        model = ModelEntry.objects.create(owner=author, name=name, organisation="Lab")
        submission = Submission.objects.create(owner=author, model=model, benchmark=benchmark,
                                               public=True, status="queued", current_run=run,
                                               coverage=len(outputs) / 6)
        submission.runs.add(run)
    call_command("load_reference_results", str(REFERENCE), "--benchmark",
                 "air-bench-foundation")
    return benchmark


def test_the_foundation_board_ranks_by_strict_accuracy_per_task(page, foundation_board):
    page.goto("/b/air-bench-foundation/")
    models = page.locator("#board tbody td.model a.name")
    assert models.all_text_contents() == ["Steady", "Guesser"]
    expect(page.locator("#board thead")).to_contain_text("acc (parsed)")
    expect(page.locator("#board tbody")).to_contain_text("Qwen-Audio-Turbo")
    shoot(page, "04-foundation-board")
    page.get_by_label("Slice").select_option("task")
    page.wait_for_url(re.compile(r"[?&]dimension=task"))
    expect(page.get_by_label("Bucket")).to_have_value("Speech grounding")
    expect(page.locator("#board tbody")).to_contain_text("56.10")  # Qwen-Audio, published
    shoot(page, "05-foundation-task")
