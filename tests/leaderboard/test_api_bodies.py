"""Every read endpoint's body validates against its own OpenAPI schema (/api/schema/), with no
key the schema does not name: the schema cannot drift from what is sent."""

import json

import jsonschema
import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from accounts.models import ApiToken
from leaderboard.boards import rank_ranges
from scoring.boards import board_changed
from scoring.kinds.airbench import rules as airbench
from scoring.models import ScoringRun, SliceResult
from submissions.models import Submission
from tests.leaderboard.test_airbench_board import (  # noqa: F401 (a fixture)
    airboards,
    chat_summary,
    foundation_summary,
)

# GET operations answering JSON; any other one must be added here to be checked.
READ_API = {"leaderboard", "benchmarks", "model", "submissions_slices", "submissions_list",
            "submissions_detail", "judge_card", "panel_next", "panel_item",
            "judge_corrected_row"}
# Read endpoints whose bodies are checked against the schema where their data is made.
CHECKED_ELSEWHERE = {"challenge_entries_list": "tests/challenges/test_entries.py",
                     "submissions_signals": "tests/submissions/test_output_signals.py",
                     # Against the Every Eval Ever schema, and the keys by their use:
                     "eee_record": "tests/exports/test_eee.py",
                     "signing_keys": "tests/exports/test_eee.py"}


def closed(schema: dict, node: dict) -> dict:
    """An OpenAPI 3.0 schema node as JSON Schema: references resolved, `nullable` as null
    allowed, and every object with properties closed (a key it does not name fails)."""
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return closed(schema, {**schema["components"]["schemas"][name],
                               **{k: v for k, v in node.items() if k != "$ref"}})
    out = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {name: closed(schema, field) for name, field in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = closed(schema, value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [closed(schema, each) for each in value]
        elif key != "nullable":
            out[key] = value
    if "properties" in out:
        out.setdefault("additionalProperties", False)
    return {"anyOf": [out, {"type": "null"}]} if node.get("nullable") else out


def described(schema: dict, path: str, status: int) -> dict:
    operation = schema["paths"][path]["get"]
    return closed(schema, operation["responses"][str(status)]["content"]["application/json"]
                  ["schema"])


def as_user(user):
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=user, name='t')[1]}")
    return client


@pytest.fixture
def filled_boards(board, airboards, tmp_path):  # noqa: F811
    """An MMAE board with intervals, rank ranges, a flag, refusals, a judge figure and
    published results; both AIR-Bench boards, sharing a model with it."""
    benchmark, score_by_slices = board
    alpha = score_by_slices("Alpha", (50.0, 60.0, 30.0),
                            slices={("modality", "sound"): (10.0, 20.0, 0.0)},
                            intervals={("overall", ""): {"EMR": (25.0, 35.0), "IFR": (45.0, 55.0)}})
    beta = score_by_slices("Beta", (40.0, 70.0, 20.0),
                           slices={("modality", "sound"): (30.0, 40.0, 25.0)})
    SliceResult.objects.filter(run=alpha.current_run, dimension="overall").update(
        values={"n": 4, "IFR": 50.0, "CR": 60.0, "EMR": 30.0, "agreement": 83.25})
    ScoringRun.objects.filter(pk=beta.current_run_id).update(refused_queries=3)
    Submission.objects.filter(pk=beta.pk).update(flag_reason="odd figures")
    paper = tmp_path / "paper.json"
    paper.write_text(json.dumps({"source": "a paper", "models": [
        {"model": "Paper-Model", "note": "", "n_samples": 801,
         "overall": {"IFR": 50.73, "CR": 56.93, "EMR": 4.99},
         "modality": {"sound": {"IFR": 56.58, "CR": 56.02, "EMR": 7.72}}}]}))
    call_command("load_reference_results", str(paper), "--benchmark", "mmae")
    board_changed(benchmark.id)
    rank_ranges.refresh(benchmark)
    airs, air = airboards
    air(airbench.FOUNDATION, "Alpha", foundation_summary(["A", "A", "A", "B", "A", "B"]))
    air(airbench.CHAT, "Talker", chat_summary([8, 6, 4, 9, 3]))
    for each in airs.values():
        board_changed(each.id)
    return alpha


@pytest.mark.slow
def test_every_read_body_is_what_its_schema_describes(client, filled_boards, author):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    alpha, mine = filled_boards, as_user(author)
    calls = [
        ("/api/leaderboards/{slug}/", client, "/api/leaderboards/mmae/?page_size=1", 200),
        ("/api/leaderboards/{slug}/", client, "/api/leaderboards/mmae/?page_size=1&page=2",
         200),
        ("/api/leaderboards/{slug}/", client,
         "/api/leaderboards/mmae/?dimension=modality&bucket=sound", 200),
        ("/api/leaderboards/{slug}/", client, "/api/leaderboards/air-bench-foundation/", 200),
        ("/api/leaderboards/{slug}/", client,
         "/api/leaderboards/air-bench-chat/?dimension=category&bucket=mixed_audio", 200),
        ("/api/leaderboards/{slug}/", client, "/api/leaderboards/mmae/?page=9", 400),
        ("/api/leaderboards/{slug}/", client, "/api/leaderboards/nope/", 404),
        ("/api/benchmarks/", client, "/api/benchmarks/", 200),
        ("/api/models/{model_id}/", mine, f"/api/models/{alpha.model_id}/", 200),
        ("/api/models/{model_id}/", client, "/api/models/999999/", 404),
        ("/api/submissions/{id}/slices/", client, f"/api/submissions/{alpha.id}/slices/", 200),
        ("/api/submissions/{id}/slices/", client, "/api/submissions/999999/slices/", 404),
        ("/api/submissions/", mine, "/api/submissions/", 200),
        ("/api/submissions/{id}/", mine, f"/api/submissions/{alpha.id}/", 200),
        # With panel answers and a task's body: tests/panel/test_api_bodies.py.
        ("/api/leaderboards/{slug}/judge/", client, "/api/leaderboards/mmae/judge/", 200),
        ("/api/leaderboards/{slug}/judge/", client, "/api/leaderboards/air-bench-chat/judge/",
         200),
        ("/api/leaderboards/{slug}/judge/", client, "/api/leaderboards/nope/judge/", 404),
        # With answers: tests/panel/test_judge_card.py.
        ("/api/leaderboards/{slug}/judge/models/{model_id}/", client,
         f"/api/leaderboards/mmae/judge/models/{alpha.model_id}/", 200),
        ("/api/leaderboards/{slug}/judge/models/{model_id}/", client,
         "/api/leaderboards/mmae/judge/models/999999/", 404),
        ("/api/panel/{slug}/next/", mine, "/api/panel/air-bench-foundation/next/", 404),
        # With answers: tests/panel/test_item_verdicts.py.
        ("/api/panel/{slug}/items/{key}/", client, "/api/panel/mmae/items/nope/", 404),
        ("/api/panel/{slug}/items/{key}/", client, "/api/panel/air-bench-chat/items/x/", 404),
    ]
    bodies = {}
    for path, who, url, status in calls:
        response = who.get(url)
        assert response.status_code == status, (url, response.content)
        body = response.json()
        jsonschema.validate(body, described(schema, path, status))
        bodies[url] = body
    checked = {schema["paths"][path]["get"]["operationId"] for path, *_ in calls}
    answering_json = {operation["operationId"] for operations in schema["paths"].values()
                      for method, operation in operations.items() if method == "get"
                      and "application/json" in operation["responses"]["200"]["content"]}
    assert checked | set(CHECKED_ELSEWHERE) == answering_json == READ_API | set(CHECKED_ELSEWHERE)
    # The figures were there to be checked: each kind's, the intervals', the rank ranges'.
    first = bodies["/api/leaderboards/mmae/?page_size=1"]
    (row,) = first["rows"]
    assert (row["agreement"], row["EMR_lo"], row["rank_best"]) == (83.25, 25.0, 1)
    assert first["reported"][0]["EMR"] == 4.99 and first["next"] is not None
    assert bodies["/api/leaderboards/mmae/?page_size=1&page=2"]["rows"][0]["refused"] == 3
    assert "acc_strict" in bodies["/api/leaderboards/air-bench-foundation/"]["rows"][0]
    model = bodies[f"/api/models/{alpha.model_id}/"]
    assert {"EMR", "acc_strict"} <= {k for s in model["submissions"] for k in s}


def test_a_key_the_schema_does_not_name_fails_the_check(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    benchmark = {"slug": "mmae", "kind": "mmae", "version": 1, "title": "MMAE", "samples": 4,
                 "criteria": 30, "synthetic": False, "sha256": "a" * 64,
                 "board": "http://testserver/api/leaderboards/mmae/"}
    jsonschema.validate([benchmark], described(schema, "/api/benchmarks/", 200))
    with pytest.raises(jsonschema.ValidationError, match="unexpected"):
        jsonschema.validate([{**benchmark, "stray": 1}],
                            described(schema, "/api/benchmarks/", 200))
    with pytest.raises(jsonschema.ValidationError, match="'slug' is a required property"):
        jsonschema.validate([{k: v for k, v in benchmark.items() if k != "slug"}],
                            described(schema, "/api/benchmarks/", 200))
