"""AIR-Bench through the pipeline: API upload of a JSONL, a real Celery worker on Redis,
PostgreSQL and the judge simulator, to the files and the board."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from accounts.models import ApiToken
from scoring.kinds.airbench import rules as airbench
from scoring.models import Answer, SliceResult
from scoring.services import benchmark_import
from tests.conftest import free_ports, judge_config
from tests.scoring.airbench_data import chat_meta, foundation_meta, write
from tests.submissions.test_pipeline import state, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def client_and_worker(tmp_path, worker_factory, settings, author, thread_simulator_factory):
    settings.MEDIA_ROOT = tmp_path / "media"
    ports = free_ports(2)
    thread_simulator_factory(ports=ports, latency_ms=5)
    start = worker_factory(ports, SCORING_BATCH_ITEMS="2")
    start()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=author, name='t')[1]}")
    for kind, name, data in ((airbench.CHAT, "Chat_meta.json", chat_meta()),
                             (airbench.FOUNDATION, "Foundation_meta.json", foundation_meta())):
        benchmark, _ = benchmark_import(kind=kind, path=write(tmp_path / name, data),
                                        audio_root=None, slug=kind)
        judge_config([f"http://127.0.0.1:{p}" for p in ports], kind=kind, benchmark=benchmark)
    return client, start.log_path


def upload(client, slug, rows, **extra):
    text = "".join(json.dumps(r) + "\n" for r in rows)
    response = client.post("/api/submissions/", {
        "benchmark": slug, "model_name": f"Listener on {slug}", "public": "true", **extra,
        "predictions": SimpleUploadedFile("predictions.jsonl", text.encode())},
        format="multipart")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def test_a_chat_upload_is_judged_twice_per_item_and_lands_on_the_board(client_and_worker):
    client, log = client_and_worker
    rows = [{"uniq_id": i, "response": f"My answer {i}."} for i in range(6) if i != 3]
    submission_id = upload(client, airbench.CHAT, rows)
    wait_for(lambda: state(submission_id) == "finished", 120, "the chat run to finish", log)
    detail = client.get(f"/api/submissions/{submission_id}/").json()
    assert detail["progress"]["done"] == detail["progress"]["total"] == 10
    assert detail["overall"]["score"] is not None and detail["files"] == [
        "scores.json", "results.jsonl"]
    lines = b"".join(client.get(f"/api/submissions/{submission_id}/files/results.jsonl")
                     .streaming_content).decode().splitlines()
    assert len(lines) == 12
    board = client.get(f"/api/leaderboards/{airbench.CHAT}/").json()
    assert [r["model"] for r in board["rows"]] == [f"Listener on {airbench.CHAT}"]
    assert board["rows"][0]["simulated"] is True


def test_a_foundation_upload_aligns_only_when_asked(client_and_worker):
    client, log = client_and_worker
    rows = [{"uniq_id": 1, "response": "B"}, {"uniq_id": 3, "response": "a man"}]
    plain = upload(client, airbench.FOUNDATION, rows)
    wait_for(lambda: state(plain) == "finished", 60, "the rule-only run to finish", log)
    aligned = upload(client, airbench.FOUNDATION, rows, align="true",
                     model_name="Aligned listener")
    wait_for(lambda: state(aligned) == "finished", 60, "the aligned run to finish", log)
    assert not Answer.objects.filter(run__submissions__id=plain).exists()
    assert Answer.objects.filter(run__submissions__id=aligned).count() == 1
    overall = SliceResult.objects.get(run__submissions__id=plain, dimension="overall").values
    assert overall["unparsed"] == 5 and overall["parsed"] == 1
    scores = json.loads(b"".join(client.get(f"/api/submissions/{aligned}/files/scores.json")
                                 .streaming_content))
    assert scores["options"] == {"align": True} and scores["overall"]["unparsed"] == 4
