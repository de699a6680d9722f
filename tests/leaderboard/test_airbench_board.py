"""The AIR-Bench boards: their own metrics, slices, ranking, charts, exports and API."""

import csv
import io

import pytest
from django.utils import timezone

from leaderboard.boards import rank_ranges
from scoring.kinds import get_kind
from scoring.kinds.airbench import rules as airbench
from scoring.models import Benchmark, ScoringRun, SliceResult
from submissions.models import ModelEntry, Submission
from tests.conftest import judge_config
from tests.html import one, select, texts


def _figures(summary: dict) -> dict:
    return {("overall", ""): summary["overall"],
            **{(d, b): f for d in summary if d != "overall" for b, f in summary[d].items()}}


@pytest.fixture
def airboards(db, author):
    """Both tracks' benchmarks and `score_by_summary(kind, name, summary)`, a factory of
    scored submissions from the kind's summary of per-item rows."""
    benchmarks = {
        kind: Benchmark.objects.create(slug=slug, kind=kind, version=1, title=title,
                                       sha256=slug, source_name="meta.json", audio_root="",
                                       n_items=6, n_criteria=6)
        for kind, slug, title in (
            (airbench.FOUNDATION, "air-bench-foundation", "AIR-Bench foundation"),
            (airbench.CHAT, "air-bench-chat", "AIR-Bench chat"))}

    def score_by_summary(kind, name, summary, *, organisation="Lab"):
        benchmark = benchmarks[kind]
        model, _ = ModelEntry.objects.get_or_create(owner=author, name=name,
                                                    defaults={"organisation": organisation})
        run = ScoringRun.objects.create(
            benchmark=benchmark,
            judge_config=judge_config(["http://127.0.0.1:9"], kind=kind, benchmark=benchmark),
            audio_root="", judge_model="Qwen3-Omni-30B-A3B-Instruct", prompt_sha256="p" * 64,
            rounds=2, max_attempts=5, status="finished", simulated=True,
            status_times={"finished": timezone.now().isoformat()})
        for (dimension, bucket), figures in _figures(summary).items():
            SliceResult.objects.create(run=run, dimension=dimension, bucket=bucket,
                                       n=figures["n"], values=figures)
        submission = Submission.objects.create(owner=author, model=model, benchmark=benchmark,
                                               public=True, status="queued", current_run=run,
                                               coverage=1.0)
        submission.runs.add(run)
        return submission

    return benchmarks, score_by_summary


def foundation_summary(letters: list[str | None]):
    items = airbench.parse_foundation([
        {"path": f"{i}.wav", "question": "q", "choice_a": "a", "choice_b": "b",
         "choice_c": "c", "choice_d": "d", "answer_gt": "a", "task_name": task,
         "dataset_name": "x", "uniq_id": i}
        for i, task in enumerate(["Speech_Grounding", "Speech_Grounding", "Sound_AQA",
                                  "Sound_AQA", "Music_AQA", "Music_AQA"])])
    outputs = {str(i): letter for i, letter in enumerate(letters) if letter is not None}
    kind = get_kind(airbench.FOUNDATION)
    return kind.summarize([kind.item_result(item, outputs.get(item.uniq_id), {})
                           for item in items])


def chat_summary(scores: list[int]):
    items = airbench.parse_chat([
        {"meta_info": "m", "question": "q", "answer_gt": "a", "path": "p.wav",
         "task_name": task, "dataset_name": "x", "uniq_id": i}
        for i, task in enumerate(["speech_QA", "sound_QA", "music_QA", "speech_and_sound_QA",
                                  "speech_and_music_QA"])])
    kind = get_kind(airbench.CHAT)
    return kind.summarize([kind.item_result(item, "r", {(0, k): {"score": s} for k in (0, 1)})
                           for item, s in zip(items, scores, strict=True)])


@pytest.fixture
def four_systems(airboards):
    benchmarks, score_by_summary = airboards
    # Careful answers everything and gets 4 of 6; Lucky gets 3 of the 4 it answered: a
    # higher published accuracy (75 against 66.67) but a lower strict one.
    score_by_summary(airbench.FOUNDATION, "Careful",
                     foundation_summary(["A", "A", "A", "B", "A", "B"]))
    score_by_summary(airbench.FOUNDATION, "Lucky",
                     foundation_summary(["A", "A", "A", None, None, "C"]))
    score_by_summary(airbench.CHAT, "Talker", chat_summary([8, 6, 4, 9, 3]))
    score_by_summary(airbench.CHAT, "Mumbler", chat_summary([2, 7, 5, 5, 5]))
    return benchmarks


def table(html: str):
    return one(html, "table#board")


def models(board) -> list[str]:
    """The board's rows' model names, top to bottom."""
    return texts(board, "tbody td.model .name")


def test_the_foundation_board_ranks_by_strict_accuracy_and_shows_both(client, four_systems):
    html = client.get("/b/air-bench-foundation/").content.decode()
    board = table(html)
    assert models(board) == ["Careful", "Lucky"]
    header = board.one("thead").text
    assert "acc (strict)" in header and "acc (parsed)" in header and "unparsed" in header
    assert "Ranked by strict accuracy" in html
    assert "6 items" in html and "rubrics" not in one(html, "h1").text
    assert board.select("tbody span.badge.simulated[title^='simulated judge']")


def test_the_foundation_board_slices_by_domain_and_task(client, four_systems):
    html = client.get("/b/air-bench-foundation/?dimension=task&bucket=Sound+question+answering")
    assert html.status_code == 200
    assert "task = Sound question answering" in html.content.decode()
    response = client.get("/b/air-bench-foundation/?dimension=domain&bucket=jazz")
    assert response.status_code == 400
    assert "choose one of: speech, sound, music" in response.content.decode()
    assert client.get("/b/air-bench-foundation/?dimension=modality").status_code == 400


def test_the_api_gives_the_kinds_metrics_and_exact_ranks(client, four_systems):
    rank_ranges.refresh(four_systems[airbench.FOUNDATION])
    body = client.get("/api/leaderboards/air-bench-foundation/").json()
    assert body["kind"] == "airbench-foundation"
    assert body["metrics"] == ["acc_strict", "acc", "unparsed"]
    careful, lucky = body["rows"]
    assert (careful["model"], careful["rank"], careful["rank_best"], careful["rank_worst"]) == \
        ("Careful", 1, 1, 1)
    assert careful["acc_strict"] == pytest.approx(100 * (1 + 0.5 + 0.5) / 3)
    assert lucky["acc"] == pytest.approx((100 + 100 + 0) / 3) and lucky["unparsed"] == 2
    assert "IFR" not in careful


def test_the_csv_has_the_kinds_columns(client, four_systems):
    response = client.get("/api/leaderboards/air-bench-chat/?dimension=category"
                          "&bucket=mixed_audio&format=csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert response["Content-Disposition"] == \
        'attachment; filename="air-bench-chat-category-mixed_audio.csv"'
    assert [r["model"] for r in rows] == ["Talker", "Mumbler"]
    assert float(rows[0]["score"]) == 6.0 and rows[0]["pass_A"] == "6.0"
    assert list(rows[0])[:11] == ["rank", "rank_best", "rank_worst", "model", "organisation",
                                  "submitted_by", "verified", "submission", "score",
                                  "score_lo", "score_hi"]


def test_the_chat_board_ranks_by_the_average(client, four_systems):
    html = client.get("/b/air-bench-chat/").content.decode()
    board = table(html)
    assert models(board) == ["Talker", "Mumbler"]
    assert "pass A" in board.one("thead").text and "failed replies" in board.one("thead").text
    assert select(html, "#chart-board")  # the rows above, on a figure that separates them
    speech = table(client.get("/b/air-bench-chat/?dimension=category&bucket=speech")
                   .content.decode())
    assert models(speech) == ["Talker", "Mumbler"]


def test_the_pivot_shows_categories_on_the_kinds_scale(client, four_systems):
    html = client.get("/b/air-bench-chat/pivot/?dimension=category&metric=score") \
        .content.decode()
    assert "score (strict) (0-10)" in html
    assert "models in board order (ranked by the strict score" in html
    for bucket in ("mixed_audio", "speech_and_music", "music"):
        assert bucket in html
    assert client.get("/b/air-bench-chat/pivot/?metric=EMR").status_code == 400


def test_compare_lays_out_the_kinds_metrics(client, four_systems):
    ids = ",".join(str(m.id) for m in ModelEntry.objects.filter(name__in=["Careful", "Lucky"]))
    html = client.get(f"/b/air-bench-foundation/compare/?models={ids}").content.decode()
    assert "acc (strict) / acc (parsed) / unparsed" in html
    assert "Speech grounding" in html


def test_the_model_page_charts_a_dimension_of_its_board(client, four_systems):
    model = ModelEntry.objects.get(name="Talker")
    html = client.get(f"/m/{model.id}/").content.decode()
    figures = [figure.children[0].strip() for figure in select(html, "td.figures span.figure")
               if figure.select("strong")]
    assert "score (strict)" in figures and "pass A" in html
    assert select(html, "#chart-slices")
    assert client.get(f"/m/{model.id}/?dimension=modality").status_code == 400
