"""The board as a dataset (GET /api/leaderboards/<slug>/items/): one row per public
representative and item, read back with pandas equal to the stored per-item results, in
Parquet, CSV and JSONL, sliced, named after the board state, and never a private row. Each
file is built once per board state and served as stored: a small board's by the first request
for it, a larger one's by the worker (503 until it is, asking the worker once); a request
refuses unknown parameters before any work, and waits for a download slot (per client address
and in all)."""

import io
import json

import pandas as pd
import pytest
from django.core.files.storage import default_storage

from leaderboard.boards import dataset_files, datasets
from scoring.boards import board_changed
from scoring.kinds import get_kind
from scoring.models import Item, ItemBucket, ItemResult
from scoring.services import benchmark_import
from scoring.synthetic import write_benchmark
from submissions.models import Submission
from tests.factories import seeded_board

pytestmark = pytest.mark.django_db
URL = "/api/leaderboards/seeded/items/"


@pytest.fixture(autouse=True)
def storage(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")


@pytest.fixture
def asked(monkeypatch):
    """The builds requests ask a worker for, run here as the worker would run them."""
    found = []

    def delay(*args):
        found.append(args)
        dataset_files.build_file(*args)

    monkeypatch.setattr(dataset_files.build_file, "delay", delay)
    return found


@pytest.fixture
def seeded(db, tmp_path, asked):
    return seeded_board(tmp_path / "b", items=8, submissions=3, seed=1, slug="seeded")


def body(response) -> bytes:
    """The whole file; read to its end, the response closes, giving its download slot back."""
    return b"".join(response.streaming_content)


def got(client, url, data=None):
    """The file, once the worker built what the first request asked for."""
    first = client.get(url, data)
    if first.status_code != 503:
        return first
    return client.get(url, data)


def stored(benchmark, submissions=None) -> pd.DataFrame:
    """The per-item results as the database holds them, in the dataset's columns."""
    rows = []
    for s in submissions or Submission.objects.filter(benchmark=benchmark, public=True):
        for r in ItemResult.objects.filter(run_id=s.current_run_id).select_related("item"):
            rows.append({"submission": s.id, "item": r.item.key, "model": s.model.name,
                         "missing": r.missing, "IFR": r.values["IFR"], "CR": r.values["CR"],
                         "EM": r.values["EM"], "rubric_scores": r.values["rubric_scores"]})
    return pd.DataFrame(rows).sort_values(["submission", "item"]).reset_index(drop=True)


def compared(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame[["submission", "item", "model", "missing", "IFR", "CR", "EM",
                   "rubric_scores"]].copy()
    frame["rubric_scores"] = frame["rubric_scores"].map(list)
    return frame.sort_values(["submission", "item"]).reset_index(drop=True)


def test_the_parquet_file_reads_back_as_the_stored_per_item_results(client, seeded):
    response = got(client, URL)
    seeded.refresh_from_db()
    assert response.status_code == 200
    assert response["Content-Type"] == "application/vnd.apache.parquet"
    assert f'filename="seeded-v1-board{seeded.board_version}-items.parquet"' in \
        response["Content-Disposition"]
    frame = pd.read_parquet(io.BytesIO(body(response)))
    assert len(frame) == 3 * 8
    pd.testing.assert_frame_equal(compared(frame), stored(seeded), check_dtype=False)
    assert frame["IFR"].dropna().between(0, 1).all() and set(frame["EM"]) <= {0, 1}
    # Each item's slice keys: its bucket of each dimension, or a list of them where an item
    # may be in several (MMAE's operations).
    kind = get_kind("mmae")
    keys = dict(Item.objects.filter(benchmark=seeded).values_list("key", "dimensions"))
    for _, row in frame.iterrows():
        for dimension in kind.dimension_keys:
            buckets = kind.buckets(dimension, keys[row["item"]])
            shown = row[dimension]
            assert (list(shown) if not isinstance(shown, str) else [shown]) == buckets


def test_csv_and_jsonl_hold_the_same_rows(client, seeded):
    parquet = compared(pd.read_parquet(io.BytesIO(body(got(client, URL)))))
    csv = pd.read_csv(io.BytesIO(body(got(client, URL + "?format=csv"))))
    csv["rubric_scores"] = csv["rubric_scores"].map(json.loads)
    lines = body(got(client, URL + "?format=jsonl")).decode().splitlines()
    jsonl = pd.DataFrame([json.loads(line) for line in lines])
    for other in (csv, jsonl):
        pd.testing.assert_frame_equal(compared(other), parquet, check_dtype=False)


def test_a_slice_keeps_only_its_items(client, seeded):
    bucket = ItemBucket.objects.filter(item__benchmark=seeded, dimension="modality").first()
    inside = set(ItemBucket.objects.filter(dimension="modality", bucket=bucket.bucket,
                                           item__benchmark=seeded)
                 .values_list("item__key", flat=True))
    response = got(client, URL, {"dimension": "modality", "bucket": bucket.bucket})
    frame = pd.read_parquet(io.BytesIO(body(response)))
    assert set(frame["item"]) == inside and len(frame) == 3 * len(inside)
    assert f"-modality-{bucket.bucket}-items.parquet".replace(" ", "_") in \
        response["Content-Disposition"]


def test_a_private_submission_never_appears(client, seeded):
    hidden = Submission.objects.filter(benchmark=seeded).first()
    Submission.objects.filter(pk=hidden.pk).update(public=False)
    board_changed(seeded.id)
    frame = pd.read_parquet(io.BytesIO(body(got(client, URL))))
    assert hidden.id not in set(frame["submission"]) and len(frame) == 2 * 8


@pytest.fixture
def large(monkeypatch):
    """Every board counts as too large for a request to build its file: the worker's."""
    monkeypatch.setattr(dataset_files, "INLINE_ROWS", 0)


def test_a_small_boards_file_is_built_by_the_first_request_and_stored(client, seeded,
                                                                      monkeypatch):
    monkeypatch.setattr(dataset_files.build_file, "delay",
                        lambda *a: pytest.fail("the worker asked"))
    name = dataset_files.file_name(seeded, "csv")
    assert dataset_files.opened(name) is None
    first = client.get(URL, {"format": "csv"})  # 3 representatives x 8 items
    assert first.status_code == 200
    assert body(first).decode().count("\n") == 1 + 3 * 8
    assert dataset_files.opened(name) is not None  # stored for the next request
    board_changed(seeded.id)  # a new state: its own file, built by its first request
    assert client.get(URL, {"format": "csv"}).status_code == 200


def test_a_revalidation_answers_304_while_the_board_is_unchanged(client, seeded, large):
    first = got(client, URL)
    body(first)
    assert client.get(URL, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    board_changed(seeded.id)
    assert client.get(URL, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 503
    again = client.get(URL, HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 200 and body(again)


def test_bad_parameters_are_named_and_an_unknown_board_is_404(client, seeded):
    bad = client.get(URL, {"dimension": "modality", "bucket": "nowhere"})
    assert bad.status_code == 400
    assert any("'nowhere' is not a bucket of modality" in e for e in bad.json()["errors"])
    assert client.get(URL + "?format=xlsx").status_code == 404
    assert client.get("/api/leaderboards/nothing/items/").status_code == 404


def test_an_empty_board_is_a_file_with_its_columns(client, db, tmp_path, asked):
    meta = write_benchmark(tmp_path / "e", 3, seed=2)
    benchmark_import(kind="mmae", path=meta, audio_root=tmp_path / "e", slug="empty")
    frame = pd.read_parquet(io.BytesIO(body(got(client, "/api/leaderboards/empty/items/"))))
    assert len(frame) == 0 and {"model", "item", "IFR", "EM", "rubric_scores"} <= \
        set(frame.columns)
    csv = body(got(client, "/api/leaderboards/empty/items/?format=csv")).decode()
    assert csv.startswith("model,submission,item,")


def test_the_schema_describes_the_dataset(client, db):
    schema = client.get("/api/schema/?format=json").json()
    operation = schema["paths"]["/api/leaderboards/{slug}/items/"]["get"]
    assert set(operation["responses"]["200"]["content"]) == {
        "application/vnd.apache.parquet", "text/csv", "application/x-ndjson"}
    assert "rubric_scores" in json.dumps(operation)


def test_a_large_boards_file_not_built_yet_answers_503_and_asks_the_worker_once(
        client, seeded, asked, large, monkeypatch):
    waiting = []
    monkeypatch.setattr(dataset_files.build_file, "delay", lambda *a: waiting.append(a))
    for _ in range(3):
        response = client.get(URL, {"format": "csv"})
        assert response.status_code == 503 and response["Retry-After"] == "30"
        assert "being built" in response.json()["errors"][0]
    assert waiting == [(seeded.id, seeded.board_version, "csv", "overall", "")]
    dataset_files.build_file(*waiting[0])  # the worker
    assert body(client.get(URL, {"format": "csv"})).startswith(b"model,submission,item,")


def test_a_file_is_built_once_per_state_and_then_served_as_stored(client, seeded,
                                                                  monkeypatch):
    first = body(got(client, URL))
    monkeypatch.setattr(datasets, "stream", lambda *a, **k: pytest.fail("built again"))
    assert body(client.get(URL)) == first
    assert dataset_files.dataset_build(seeded) == dataset_files.file_name(seeded, "parquet")


def test_unknown_parameters_are_refused_naming_them_before_any_work(
        client, seeded, django_assert_max_num_queries):
    with django_assert_max_num_queries(0):
        response = client.get(URL, {"format": "csv", "junk": "1", "cache_buster": "x"})
    assert response.status_code == 400
    errors = json.loads(response.content)["errors"]
    assert len(errors) == 2 and errors[0].startswith("cache_buster:") \
        and errors[1].startswith("junk:")


def test_older_states_files_are_deleted_when_a_newer_states_are_built(client, seeded):
    names = []
    for _ in range(3):
        seeded.refresh_from_db()
        names.append(dataset_files.dataset_build(seeded))
        board_changed(seeded.id)
    assert not default_storage.exists(names[0])
    assert default_storage.exists(names[1]) and default_storage.exists(names[2])


def test_downloads_are_capped_per_client_address_and_in_all(client, seeded):
    body(got(client, URL))
    held = [client.get(URL, REMOTE_ADDR="10.0.0.1") for _ in range(2)]
    refused = client.get(URL, REMOTE_ADDR="10.0.0.1")
    assert [r.status_code for r in held] == [200, 200]
    assert refused.status_code == 429 and refused["Retry-After"] == "30"
    held += [client.get(URL, REMOTE_ADDR=f"10.0.1.{n}") for n in range(2)]
    assert client.get(URL, REMOTE_ADDR="10.0.2.1").status_code == 429  # four in flight
    for response in held:
        body(response)
    assert body(client.get(URL, REMOTE_ADDR="10.0.0.1"))
