"""AIR-Bench's published tables loaded onto its two boards, marked reported."""

import json

import pytest
from django.core.management import CommandError, call_command

from leaderboard.boards.selectors import reported_rows
from leaderboard.models import ReferenceFigure, ReferenceResult
from scoring.kinds import get_kind
from scoring.models import Benchmark
from tests.html import one, texts
from tests.scoring.airbench_data import REFERENCE

pytestmark = pytest.mark.django_db


@pytest.fixture
def slugs():
    for slug, kind in (("air-bench-chat", "airbench-chat"),
                       ("air-bench-foundation", "airbench-foundation")):
        Benchmark.objects.create(slug=slug, kind=kind, version=1, title=slug, sha256=slug,
                                 source_name="meta.json", audio_root="", n_items=1,
                                 n_criteria=1)


def test_the_chat_table_lands_on_the_chat_board_by_category(slugs, capsys):
    call_command("load_reference_results", str(REFERENCE), "--benchmark", "air-bench-chat")
    assert "loaded 11 reported results onto air-bench-chat" in capsys.readouterr().out
    kind = get_kind("airbench-chat")
    overall = reported_rows(slug="air-bench-chat", kind=kind)
    assert [r["model"] for r in overall[:3]] == ["Qwen2-Audio", "Qwen-Audio-Turbo", "SALMONN"]
    # Published figures are over the answered items: "score (answered)", not the strict one.
    assert overall[0]["score_answered"] == 6.93 and overall[0]["score"] is None
    assert overall[0]["scope"].startswith("published")
    assert overall[-1]["model"] == "Whisper+GPT 4" and overall[-1]["score_answered"] is None
    mixed = {r["model"]: r["score_answered"] for r in reported_rows(
        slug="air-bench-chat", dimension="category", bucket="mixed_audio", kind=kind)}
    assert mixed["BLSP"] == 4.52
    notes = {r.model: r.note for r in ReferenceResult.objects.exclude(note="")}
    assert set(notes) == {"Next-gpt", "Macaw-LLM"}
    assert "4.13 is not the mean of its four columns (3.93)" in notes["Next-gpt"]


def test_the_foundation_tables_land_per_task_domain_and_overall(slugs):
    call_command("load_reference_results", str(REFERENCE), "--benchmark",
                 "air-bench-foundation")
    kind = get_kind("airbench-foundation")
    assert ReferenceResult.objects.count() == 9  # Macaw-LLM has domain figures only
    overall = reported_rows(slug="air-bench-foundation", kind=kind)
    assert overall[0]["model"] == "Qwen-Audio-Turbo" and overall[0]["acc"] == 57.8
    assert overall[0]["acc_strict"] is None  # not published
    task = {r["model"]: r["acc"] for r in reported_rows(
        slug="air-bench-foundation", dimension="task", bucket="Speech grounding", kind=kind)}
    assert task["Qwen-Audio"] == 56.1 and "Macaw-LLM" not in task
    sound = {r["model"]: r["acc"] for r in reported_rows(
        slug="air-bench-foundation", dimension="domain", bucket="sound", kind=kind)}
    assert sound["Macaw-LLM"] == 30.1 and sound["Whisper+GPT 4"] is None


def test_loading_again_replaces_the_rows(slugs):
    for _ in range(2):
        call_command("load_reference_results", str(REFERENCE), "--benchmark", "air-bench-chat")
    assert ReferenceResult.objects.count() == 11
    assert ReferenceFigure.objects.count() == 11 * 5


def test_a_malformed_table_loads_nothing(slugs, tmp_path):
    data = json.loads(REFERENCE.read_text())
    data["chat"]["rows"]["BLSP"] = [1, 2]
    path = tmp_path / "ref.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CommandError, match="chat row 'BLSP' needs 5 values"):
        call_command("load_reference_results", str(path), "--benchmark", "air-bench-chat")
    assert not ReferenceResult.objects.exists()


def test_the_board_shows_them_marked_reported(slugs, client):
    call_command("load_reference_results", str(REFERENCE), "--benchmark", "air-bench-chat")
    board = one(client.get("/b/air-bench-chat/"), "table#board")
    reported = board.select("tbody tr[class='reference reported']")
    assert len(reported) == 11 and all(r.one("td.rank").text == "reported" for r in reported)
    assert "Qwen2-Audio" in texts(board, "tr.reported td.model .name")
    assert texts(board, "tr.reported td.rank span.badge.reported") == ["reported"] * 11
    hidden = client.get("/b/air-bench-chat/?hide_references=on").content.decode()
    assert "Qwen2-Audio" not in hidden
    body = client.get("/api/leaderboards/air-bench-chat/?dimension=category&bucket=speech")
    assert body.json()["reported"][0] == {
        "model": "Whisper+GPT 4", "note": "", "scope": "published, judged by gpt-4-0125-preview",
        "n_samples": None, "source": json.loads(REFERENCE.read_text())["source"],
        "score": None, "score_answered": 7.54, "pass_A": None, "pass_B": None,
        "failed": None}
