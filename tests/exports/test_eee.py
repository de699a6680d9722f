"""A board's rows as Every Eval Ever records and .eval_results YAML (exports.eee): valid against
the schema the Every Eval Ever wheel ships, signed so that anyone can check them against the
site's published keys (a changed figure fails), and only what a visitor may learn."""

import io
import json
import zipfile
from pathlib import Path

import jsonschema
import pytest
import yaml
from django.core.management import call_command

from config import signing
from exports import eee
from tests.factories import board_benchmark, scored_submission

WHEEL = Path(__file__).resolve().parents[2] / ".venv" / "schemas" / \
    "every_eval_ever-0.3.0-py3-none-any.whl"
SCHEMA = "every_eval_ever/schemas/eval.schema.json"


@pytest.fixture(scope="module")
def schema():
    assert WHEEL.is_file(), f"{WHEEL} is missing: `make install` downloads it"
    with zipfile.ZipFile(WHEEL) as wheel:
        found = json.loads(wheel.read(SCHEMA))
    jsonschema.Draft7Validator.check_schema(found)
    return jsonschema.Draft7Validator(found)


@pytest.fixture
def exported(db, author, other_author):
    benchmark = board_benchmark()
    intervals = {("overall", ""): {"IFR": (45.0, 56.0), "CR": (55.0, 66.0), "EMR": (25.0, 35.0)}}
    alpha = scored_submission(
        benchmark, author, "Alpha Editor", {("overall", ""): (50.0, 60.0, 30.0),
                                            ("modality", "sound"): (40.0, 50.0, 20.0)},
        intervals=intervals, changed=True, open_weights=True, organisation="Alpha Lab",
        link="https://huggingface.co/alpha-lab/alpha-editor-7b", base_family="qwen")
    beta = scored_submission(benchmark, other_author, "Beta Editor",
                             {("overall", ""): (40.0, 70.0, 20.0)}, changed=True)
    hidden = scored_submission(benchmark, other_author, "Private Editor",
                               {("overall", ""): (90.0, 90.0, 90.0)}, public=False,
                               changed=True)
    return benchmark, alpha, beta, hidden


def keys(client):
    response = client.get(signing.KEYS_PATH)
    assert response.status_code == 200
    return response.json()["keys"]


@pytest.mark.slow
def test_a_rows_record_is_valid_and_holds_the_boards_figures_judge_and_intervals(
        client, exported, schema):
    benchmark, alpha, _, _ = exported
    record = client.get(f"/api/leaderboards/mmae/eee/{alpha.model_id}.json").json()
    assert not list(schema.iter_errors(record)), [e.message for e in schema.iter_errors(record)]
    assert record["model_info"]["id"] == "alpha-lab/alpha-editor-7b"  # from its Hub link
    assert record["model_info"]["developer"] == "Alpha Lab"
    assert record["model_info"]["additional_details"]["model_availability"] == "open_weights"
    results = {r["evaluation_result_id"]: r for r in record["evaluation_results"]}
    emr = results["EMR:overall"]
    assert emr["score_details"]["score"] == 30.0
    assert emr["score_details"]["uncertainty"]["confidence_interval"] == {
        "lower": 25.0, "upper": 35.0, "confidence_level": 0.95,
        "method": "bootstrap percentile, samples resampled"}
    assert emr["score_details"]["details"]["rank"] == "1"
    assert results["IFR:modality:sound"]["score_details"]["score"] == 40.0
    # A slice names the overall result whose judge scored it, without repeating the prompts.
    assert results["IFR:modality:sound"]["metric_config"]["additional_details"] == {
        "judged_as": "IFR:overall"}
    judge = emr["metric_config"]["llm_scoring"]
    config = benchmark.judge_config
    assert judge["judges"][0]["model_info"]["id"] == config.judge_model
    assert judge["judges"][0]["temperature"] == config.sampling.get("temperature", 0.0)
    assert judge["additional_details"]["votes_per_criterion"] == str(config.rounds)
    assert judge["aggregation_method"] == "majority_vote"
    details = record["source_metadata"]["additional_details"]
    assert details["link_per_item_results"].endswith("/api/leaderboards/mmae/items/?format=jsonl")


@pytest.mark.slow
def test_every_record_is_signed_and_a_changed_figure_fails_the_check(client, exported):
    _, alpha, beta, _ = exported
    published = keys(client)
    lines = client.get("/api/leaderboards/mmae/eee.jsonl").content.decode().splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["model_info"]["name"] for r in records] == ["Alpha Editor", "Beta Editor"]
    for record in records:
        assert signing.verify(*eee.record_signature(record), published)
    forged = json.loads(lines[1])
    forged["evaluation_results"][0]["score_details"]["score"] += 0.01
    assert not signing.verify(*eee.record_signature(forged), published)
    # A key rotated since: what the old key signed still verifies, the new key signs anew.
    call_command("signing_key_rotate")
    now = keys(client)
    assert len(now) == len(published) + 1 and now[0]["retired"] is not None
    assert signing.verify(*eee.record_signature(records[0]), now)
    signing_key = json.loads(client.get(f"/api/leaderboards/mmae/eee/{beta.model_id}.json")
                             .content)["source_metadata"]["additional_details"]
    # (the response kept for this board state was signed before the rotation: still valid)
    assert signing_key["signature_key_id"] in {k["key_id"] for k in now}


def test_the_eval_results_yaml_is_the_hubs_format_and_signed(client, exported):
    _, alpha, _, _ = exported
    text = client.get(f"/api/leaderboards/mmae/eval-results/{alpha.model_id}.yaml") \
        .content.decode()
    entries, signed = eee.yaml_signature(text)
    assert {e["dataset"]["task_id"]: e["value"] for e in entries} == {
        "emr": 30.0, "ifr": 50.0, "cr": 60.0}
    assert all(e["dataset"]["id"] == "BoJack/MMAE" and e["source"]["url"].endswith("/b/mmae/")
               for e in entries)
    assert signing.verify(entries, signed, keys(client))
    changed = yaml.safe_load(text)
    changed[0]["value"] = 31.0
    assert not signing.verify(changed, signed, keys(client))
    archive = zipfile.ZipFile(io.BytesIO(
        client.get("/api/leaderboards/mmae/eval-results.zip").content))
    names = archive.namelist()
    assert len(names) == 2 and all(n.endswith("/.eval_results/mmae.yaml") for n in names)
    assert f"{alpha.model_id}-Alpha-Editor/.eval_results/mmae.yaml" in names


def test_a_private_submission_is_in_no_export(client, exported, other_author):
    _, _, _, hidden = exported
    assert client.get(f"/api/leaderboards/mmae/eee/{hidden.model_id}.json").status_code == 404
    assert client.get(f"/api/leaderboards/mmae/eval-results/{hidden.model_id}.yaml") \
        .status_code == 404
    client.force_login(other_author)  # its own author neither: exports are the public board's
    assert client.get(f"/api/leaderboards/mmae/eee/{hidden.model_id}.json").status_code == 404
    assert b"Private Editor" not in client.get("/api/leaderboards/mmae/eee.jsonl").content
    # As every API error: a JSON body naming what is not there.
    response = client.get(f"/api/leaderboards/mmae/eee/{hidden.model_id}.json",
                          HTTP_ACCEPT="application/yaml")
    assert response.json() == {"errors": [f"model {hidden.model_id} has no row on this board"]}
    assert client.get("/api/leaderboards/nope/eee.jsonl").json() == {
        "errors": ["no benchmark 'nope'"]}


def test_a_synthetic_board_does_not_claim_the_hubs_dataset(client, db, author):
    benchmark = board_benchmark(slug="demo", synthetic=True)
    row = scored_submission(benchmark, author, "Demo", {("overall", ""): (1.0, 2.0, 3.0)},
                            changed=True)
    text = client.get(f"/api/leaderboards/demo/eval-results/{row.model_id}.yaml").content
    entries, _ = eee.yaml_signature(text.decode())
    assert {e["dataset"]["id"] for e in entries} == {"testserver/demo"}
    assert entries[0]["notes"].startswith("not the Hub's dataset")
