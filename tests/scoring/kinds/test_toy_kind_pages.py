"""The toy kind (tests/scoring/kinds/test_toy_kind.py) on the board, the read API, the
submission page and its explorer, the model page, the pivot and compare, and its results files
downloaded: one board of the oracle's and the guesser's submissions, scored once for the module
(in module_db: each test's own writes roll back)."""

import csv
import io
import json
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from scoring.kinds import KINDS, register
from scoring.services import benchmark_import
from submissions.models import Submission
from tests.conftest import judge_config, score_run
from tests.html import assert_in_html, one, parse, select, texts
from tests.scoring.kinds.test_toy_kind import (
    GUESSER,
    ITEMS,
    LABELS,
    ORACLE,
    body,
    shown_keys,
    toy_reply,
    upload,
    write,
)
from tests.scoring.kinds.toy import NAME, Toy, ToyJudge

# `slow`: its shared set-up (toy_board: two submissions of the toy kind scored) takes 1.2 s
pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture(scope="module")
def toy_board(module_db, module_cast, django_db_blocker, tmp_path_factory):
    """Two public submissions scored: the oracle's (author) and the guesser's (another
    author)."""
    root = tmp_path_factory.mktemp("toy")
    kind = register(Toy())
    judge = ToyJudge(toy_reply)
    try:
        with override_settings(MEDIA_ROOT=root / "media", SCORING_BATCH_ITEMS=2), \
                django_db_blocker.unblock():
            benchmark, _ = benchmark_import(kind=NAME, path=write(root / "toy.json", ITEMS),
                                            audio_root=None, slug="toy")
            judge_config([judge.url], kind=NAME, benchmark=benchmark, max_attempts=2,
                         judge_model="toy-judge")
            oracle = upload(module_cast["author"], "Toy Oracle", ORACLE)
            score_run(oracle.current_run)
            guesser = upload(module_cast["other_author"], "Toy Guesser", GUESSER)
            score_run(guesser.current_run)
            yield tuple(Submission.objects.select_related("current_run").get(id=s.id)
                        for s in (oracle, guesser))
    finally:
        judge.stop()
        KINDS.pop(kind.name)


# --- pages and the read API ------------------------------------------------------------------


def test_the_board_ranks_by_its_metrics_and_shows_their_labels(toy_board, client):
    oracle, guesser = toy_board
    page = client.get("/b/toy/").content.decode()
    assert all(label in page for label in LABELS)
    assert "Ranked by the share judged right, then the share answered" in page
    assert "6 questions" in page
    assert page.index("Toy Guesser") < page.index("Toy Oracle")
    assert "83.33" in page and "50.00" in page
    assert "share judged right against share answered" in page  # the chart
    plants = client.get("/b/toy/?dimension=topic&bucket=plants").content.decode()
    assert "100.00" in plants and "33.33" in plants and "66.67" in plants


def test_the_read_api_gives_its_metrics_as_json_and_csv(toy_board):
    oracle, guesser = toy_board
    data = APIClient().get("/api/leaderboards/toy/?dimension=topic&bucket=animals").json()
    assert (data["kind"], data["metrics"]) == (NAME, ["yes_share", "answered_share",
                                                      "refusals"])
    # Equal on both ranking metrics (two of three judged right, all answered): one rank.
    assert sorted((r["rank"], r["model"], r["submission"]) for r in data["rows"]) == [
        (1, "Toy Guesser", guesser.id), (1, "Toy Oracle", oracle.id)]
    assert [(r["yes_share"], r["answered_share"]) for r in data["rows"]] == [
        (pytest.approx(200 / 3), 100.0)] * 2
    response = APIClient().get("/api/leaderboards/toy/?format=csv")
    assert response["Content-Disposition"] == 'attachment; filename="toy-overall.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(r["model"], r["yes_share"], r["refusals"]) for r in rows] == [
        ("Toy Guesser", str(500 / 6), "0"), ("Toy Oracle", "50.0", "1")]


def test_the_submission_page_shows_its_figures_and_every_question(toy_board, client):
    oracle, _ = toy_board
    page = client.get(f"/s/{oracle.id}/").content.decode()
    assert all(label in page for label in LABELS)
    assert "question topic" in page and "Questions" in page and "Samples" not in page
    assert "only questions not judged right" in page
    options = one(page, "select#explorer-dimension").select("option")
    assert [o.get("value") for o in options[:2]] == ["", "topic"]
    assert options[0].text == "all questions" and options[1].text.startswith("question topic")
    assert shown_keys(page) == ["q1", "q2", "q3", "q4", "q5", "q6"]
    assert "What colour is moss?" in page and "Maybe green?" in page
    assert "unparsed" not in page and "Reference answer" not in page
    q3 = one(page, 'article[data-sample="q3"]')
    # its judge replies, when opened
    assert q3.select(f'details.rubrics[data-rubrics="/s/{oracle.id}/samples/q3/rubrics/"]')
    replies = client.get(f"/s/{oracle.id}/samples/q3/rubrics/", HTTP_HX_REQUEST="true")
    assert "judged wrong" in q3.text and "no" in texts(replies, "b")
    q5 = one(page, 'article[data-sample="q5"]').text + " " + parse(client.get(
        f"/s/{oracle.id}/samples/q5/rubrics/", HTTP_HX_REQUEST="true")).text
    assert "no verdict" in q5 and "expected yes or no" in q5
    assert "no response" in one(page, 'article[data-sample="q6"]').text
    failed = client.get(f"/s/{oracle.id}/samples/?failed=on").content.decode()
    assert shown_keys(failed) == ["q3", "q5", "q6"]
    plants = client.get(f"/s/{oracle.id}/samples/?dimension=topic&bucket=plants&q=moss")
    assert shown_keys(plants.content.decode()) == ["q5"]


def test_the_model_page_pivot_and_compare_show_its_labels_and_figures(toy_board, client):
    oracle, guesser = toy_board
    model = client.get(f"/m/{oracle.model_id}/?dimension=topic&chart=radar")
    assert model.status_code == 200
    page = model.content.decode()
    assert all(label in page for label in LABELS)
    assert "share judged right and share answered per bucket of question topic" in page
    assert '"name": "share judged right"' in page  # the radar's legend
    assert "66.67" in page and "33.33" in page
    assert_in_html('<td class="dimension">question topic</td>', page)  # the slices table
    figures = [(figure.children[0].strip(), figure.one("strong").text)
               for figure in select(page, "td.figures span.figure")]
    assert ("unreadable verdicts", "1") in figures  # a count, not 1.00
    pivot = client.get("/b/toy/pivot/?dimension=topic&metric=answered_share")
    assert pivot.status_code == 200
    text = pivot.content.decode()
    assert "share answered (%)" in text and "66.67" in text
    (said,) = [p for p in select(text, "p.meta") if "on every bucket of question topic;" in p.text]
    assert said.one("strong").text == "question topic"
    assert '"text": "share answered (%)"' in text  # the heatmap's colour bar
    refusals = client.get("/b/toy/pivot/?dimension=topic&metric=refusals").content.decode()
    assert "unreadable verdicts (count)" in refusals
    # Board order: the guesser (none on either topic), then the oracle (one on plants).
    assert [td.text for td in select(refusals, "td[class=num]")] == ["0", "0", "0", "1"]
    compare = client.get(f"/b/toy/compare/?models={guesser.model_id},{oracle.model_id}")
    assert compare.status_code == 200
    text = compare.content.decode()
    assert "Judged right" in text and all(label in text for label in LABELS)
    assert "Per-question wins and losses" in text and "sample" not in text
    assert "1.00" not in text  # counts stay whole
    assert_in_html('<td class="dimension">question topic</td>', text)
    # q1 the oracle's; q2 and q4 ties; q3, q5 and q6 the guesser's.
    pair = select(text, "#pairs tr")[2]
    assert [td.text for td in pair.select("td[class^=num]")] == ["6", "3", "2", "1"]
    # the wins and losses link to their questions
    wins = [(parse_qs(urlsplit(a.get("href")).query), a.text) for a in pair.select("td a")]
    assert [(query["winner"], n) for query, n in wins if query.get("by") == ["passed"]] == [
        (["a"], "3"), (["b"], "1")]


def test_its_results_files_download_from_the_status_page_and_the_api(toy_board, client,
                                                                     author):
    oracle, guesser = toy_board
    client.force_login(author)
    status = client.get(f"/submissions/{oracle.id}/").content.decode()
    assert "toy_verdicts.jsonl" in status and "toy_scores.json" in status
    assert "Failed queries (counted as unreadable verdicts)" in status
    assert "unparseable reply: 1" in texts(status, "li")
    assert "1 question without a usable output" in status
    verdicts = client.get(f"/submissions/{oracle.id}/files/toy_verdicts.jsonl")
    assert verdicts.status_code == 200 and verdicts["Content-Type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in body(verdicts).splitlines()]
    assert [(x["id"], x["answer"], x["yes"], x["refused"], x["raw"]) for x in lines] == [
        ("q1", "Woof (right)", True, False, "yes"), ("q2", "It purrs (right)", True, False,
                                                    "yes"),
        ("q3", "They fly (wrong)", False, False, "no"),
        ("q4", "Fronds (right)", True, False, "yes"),
        ("q5", "Maybe green?", False, True, "perhaps"), ("q6", None, False, False, None)]
    api = APIClient()
    api.force_authenticate(author)
    scores = api.get(f"/api/submissions/{oracle.id}/files/toy_scores.json")
    assert scores["Content-Type"] == "application/json"
    data = json.loads(body(scores))
    assert (data["kind"], data["overall"]["yes_share"], data["topic"]["plants"]["refusals"]) \
        == (NAME, 50.0, 1)
    assert client.get(f"/submissions/{oracle.id}/files/results.jsonl").status_code == 404
    # Another author's published submission: its details are anyone's to download.
    theirs = client.get(f"/submissions/{guesser.id}/files/toy_scores.json")
    assert theirs.status_code == 200 and json.loads(body(theirs))["kind"] == NAME


