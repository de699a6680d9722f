"""A benchmark kind defined only here (tests/scoring/kinds/toy.py) goes through everything a
real kind does: its metadata imported, answers uploaded and validated, scored by the pipeline
against its own judge, shown on the board, the read API, the submission page and its explorer,
the model page, the pivot and compare, and its results files downloaded. Nothing outside the
Kind protocol knows of it."""

import csv
import io
import json
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from scoring.kinds import KINDS, register
from scoring.models import Answer, Benchmark, ItemResult, SliceResult
from scoring.services import BenchmarkFileError, benchmark_import
from submissions.models import Submission
from submissions.rescoring import submissions_rescore
from submissions.services import submission_validate
from tests.conftest import judge_config, score_run
from tests.html import assert_in_html, one, parse, select, texts
from tests.scoring.kinds.toy import NAME, Toy, ToyJudge

pytestmark = pytest.mark.django_db

ITEMS = [
    {"id": "q1", "question": "What does a dog say?", "topic": "animals"},
    {"id": "q2", "question": "What does a content cat do?", "topic": "animals"},
    {"id": "q3", "question": "Can fish fly?", "topic": "animals"},
    {"id": "q4", "question": "What do ferns have?", "topic": "plants"},
    {"id": "q5", "question": "What colour is moss?", "topic": "plants"},
    {"id": "q6", "question": "What do oaks grow?", "topic": "plants"},
]
# The toy judge calls an answer ending "(right)" right and one ending "(wrong)" wrong, and has
# no verdict on any other. The oracle leaves q6 unanswered; its q2 answer is the guesser's too.
ORACLE = {"q1": "Woof (right)", "q2": "It purrs (right)", "q3": "They fly (wrong)",
          "q4": "Fronds (right)", "q5": "Maybe green?"}
GUESSER = {"q1": "Meow (wrong)", "q2": "It purrs (right)", "q3": "They swim (right)",
           "q4": "Leaves (right)", "q5": "Green (right)", "q6": "Acorns (right)"}
LABELS = ("share judged right", "share answered", "unreadable verdicts")


def toy_reply(prompt: str) -> str:
    answer = prompt.rsplit("\nAnswer: ", 1)[1]
    return "yes" if answer.endswith("(right)") else "no" if answer.endswith("(wrong)") \
        else "perhaps"


def write(path, data):
    path.write_text(json.dumps(data))
    return path


def jsonl(answers: dict) -> bytes:
    return "".join(json.dumps({"id": k, "answer": v}) + "\n" for k, v in answers.items()).encode()


@pytest.fixture
def toy_kind():
    kind = register(Toy())
    yield kind
    KINDS.pop(kind.name)


@pytest.fixture
def toy_judge():
    judge = ToyJudge(toy_reply)
    yield judge
    judge.stop()


@pytest.fixture
def toy_benchmark(toy_kind, toy_judge, tmp_path, settings):
    """The six questions imported as benchmark "toy", judged by the toy judge (two attempts a
    query)."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.SCORING_BATCH_ITEMS = 2
    benchmark, _ = benchmark_import(kind=NAME, path=write(tmp_path / "toy.json", ITEMS),
                                    audio_root=None, slug="toy")
    judge_config([toy_judge.url], kind=NAME, benchmark=benchmark, max_attempts=2,
                 judge_model="toy-judge")
    return benchmark


def api_upload(user, body: dict):
    client = APIClient()
    client.force_authenticate(user)
    return client.post("/api/submissions/", {"benchmark": "toy", "organisation": "Toy Lab",
                                             **body}, format="multipart")


def upload(user, model_name: str, answers: dict, *, public=True) -> Submission:
    """An upload through the API, validated as its Celery task would."""
    response = api_upload(user, {"model_name": model_name, "public": str(public).lower(),
                                 "predictions": SimpleUploadedFile("answers.jsonl",
                                                                   jsonl(answers))})
    assert response.status_code == 201, response.content
    assert submission_validate(response.json()["id"]) is True
    return Submission.objects.get(id=response.json()["id"])


@pytest.fixture
def toy_board(toy_benchmark, author, other_author):
    """Two public submissions scored: the oracle's (author) and the guesser's (another
    author)."""
    oracle = upload(author, "Toy Oracle", ORACLE)
    score_run(oracle.current_run)
    guesser = upload(other_author, "Toy Guesser", GUESSER)
    score_run(guesser.current_run)
    return tuple(Submission.objects.select_related("current_run").get(id=s.id)
                 for s in (oracle, guesser))


def figures(submission) -> dict:
    return {(s.dimension, s.bucket): s.values
            for s in SliceResult.objects.filter(run_id=submission.current_run_id)}


def body(response) -> str:
    return b"".join(response.streaming_content).decode() if response.streaming \
        else response.content.decode()


def shown_keys(html: str) -> list[str]:
    return [sample.get("data-sample") for sample in select(html, "article[data-sample]")]


# --- the metadata file -----------------------------------------------------------------------


def test_its_metadata_imports_once_as_items_with_one_criterion_each(toy_kind, tmp_path):
    path = write(tmp_path / "toy.json", ITEMS)
    benchmark, created = benchmark_import(kind=NAME, path=path, audio_root=None, slug="toy")
    assert created and (benchmark.n_items, benchmark.n_criteria) == (6, 6)
    assert benchmark.title == "Toy yes/no questions"
    assert [i.key for i in benchmark.items.order_by("position")] == [i["id"] for i in ITEMS]
    assert benchmark.items.get(key="q5").dimensions == {"topic": "plants"}
    again, created = benchmark_import(kind=NAME, path=path, audio_root=None, slug="toy")
    assert again == benchmark and not created


def test_a_faulty_metadata_file_imports_nothing_and_names_each_fault(toy_kind, tmp_path):
    faulty = [ITEMS[0], {"id": "q1", "question": "Again?", "topic": "animals"},
              {"id": "q7", "question": " ", "topic": "animals"},
              {"id": "q8", "question": "Why?", "topic": "rocks"}, {"question": "No id?"}]
    path = write(tmp_path / "faulty.json", faulty)
    with pytest.raises(BenchmarkFileError) as error:
        benchmark_import(kind=NAME, path=path, audio_root=None, slug="toy")
    assert error.value.problems == [
        f"{path}: item 2 (id q1): duplicate id",
        f"{path}: item 3 (id q7): 'question' must be non-empty text",
        f"{path}: item 4 (id q8): 'topic' must be one of animals, plants, got 'rocks'",
        f"{path}: item 5: needs a non-empty string 'id'"]
    broken = tmp_path / "broken.json"
    broken.write_text('[\n{"id": "q1",\n')
    with pytest.raises(BenchmarkFileError, match=r"broken.json: invalid JSON at line 3"):
        benchmark_import(kind=NAME, path=broken, audio_root=None, slug="toy")
    assert not Benchmark.objects.filter(slug="toy").exists()


# --- uploads ---------------------------------------------------------------------------------


def test_a_faulty_answers_file_is_refused_whole_naming_each_line_and_id(toy_benchmark,
                                                                        author, settings):
    text = (b'{"id": "q1", "answer": "Woof (right)"}\n{"id": "q9", "answer": "x"}\n'
            b'{"id": "q1", "answer": "again"}\n{"id": "q2", "answer": 7}\n{"id": "q3",\n')
    response = api_upload(author, {"model_name": "Sloppy", "predictions":
                                   SimpleUploadedFile("answers.jsonl", text)})
    assert response.status_code == 400
    assert response.json()["errors"] == [
        "answers.jsonl line 2: unknown id 'q9'",
        "answers.jsonl line 3 (id q1): duplicate id, first on line 1",
        "answers.jsonl line 4 (id q2): 'answer' must be text, got 7",
        "answers.jsonl line 5: invalid JSON at column 13: Expecting property name enclosed "
        "in double quotes"]
    assert not Submission.objects.exists()
    assert not (settings.MEDIA_ROOT / "submissions").exists()


def test_an_archive_or_an_empty_file_is_refused(toy_benchmark, author):
    with_archive = api_upload(author, {
        "model_name": "Archiver", "audio": SimpleUploadedFile("audio.zip", b"PK\x05\x06"),
        "predictions": SimpleUploadedFile("answers.jsonl", jsonl(ORACLE))})
    assert with_archive.status_code == 400
    assert with_archive.json()["errors"] == [
        'toy takes a JSONL of {"id", "answer"} lines only, no archive']
    empty = api_upload(author, {"model_name": "Silent",
                                "predictions": SimpleUploadedFile("answers.jsonl", b"\n\n")})
    assert empty.json()["errors"] == ["answers.jsonl: the file holds no answers"]
    assert not Submission.objects.exists()


# --- scoring ---------------------------------------------------------------------------------


def test_answers_are_judged_once_per_request_and_aggregated_by_its_rules(toy_board, toy_judge):
    oracle, guesser = toy_board
    assert oracle.state == guesser.state == "finished"
    assert (oracle.coverage, oracle.current_run.simulated) == (5 / 6, False)
    assert oracle.current_run.missing == {"q6": "no prediction"}
    # The oracle's five answers, q5 twice (no verdict on either attempt); the guesser's six
    # less q2, whose request (question and answer) the oracle's run had already asked.
    assert len(toy_judge.asked) == 6 + 5
    assert sum("Answer: Maybe green?" in p for p in toy_judge.asked) == 2
    refused = Answer.objects.get(run=oracle.current_run, criterion__item__key="q5")
    assert refused.error_kind == "unparseable reply" and refused.attempts == 2
    assert "expected yes or no, got 'perhaps'" in refused.error
    copied = Answer.objects.get(run=guesser.current_run, criterion__item__key="q2")
    assert copied.cached and copied.source_run_id == oracle.current_run_id
    assert (copied.verdict, copied.raw, copied.attempts) == ({"yes": True}, "yes", 0)
    assert Answer.objects.filter(run=guesser.current_run, cached=True).count() == 1
    assert figures(oracle) == {
        ("overall", ""): {"n": 6, "yes_share": 50.0, "answered_share": pytest.approx(500 / 6),
                          "refusals": 1},
        ("topic", "animals"): {"n": 3, "yes_share": pytest.approx(200 / 3),
                               "answered_share": 100.0, "refusals": 0},
        ("topic", "plants"): {"n": 3, "yes_share": pytest.approx(100 / 3),
                              "answered_share": pytest.approx(200 / 3), "refusals": 1}}
    assert figures(guesser)[("overall", "")] == {
        "n": 6, "yes_share": pytest.approx(500 / 6), "answered_share": 100.0, "refusals": 0}
    assert [(r.item.key, r.passed) for r in ItemResult.objects.filter(run=oracle.current_run)
            .select_related("item").order_by("item__position")] == [
        ("q1", True), ("q2", True), ("q3", False), ("q4", True), ("q5", False), ("q6", False)]


def test_a_rescore_under_the_same_config_asks_its_judge_nothing(toy_board, toy_judge, staff,
                                                               client):
    oracle, _ = toy_board
    asked = len(toy_judge.asked)
    [run] = submissions_rescore(actor=staff, benchmark=oracle.benchmark, submissions=[oracle],
                                config=oracle.current_run.judge_config, reason="same judge")
    score_run(run)
    # Only the query that had no verdict is asked again, twice: a failed answer is never
    # reused.
    assert [p.rsplit("Answer: ", 1)[1] for p in toy_judge.asked[asked:]] == ["Maybe green?"] * 2
    assert Answer.objects.filter(run=run, cached=True).count() == 4
    client.force_login(staff)
    page = client.get(f"/submissions/{oracle.id}/").content.decode()
    assert f'/submissions/{oracle.id}/files/toy_verdicts.jsonl?run={run.id}' in page
    assert "results.jsonl" not in page
    assert "share judged right 50.00" in page  # the runs' figures, labelled


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


def test_a_private_toy_submission_is_seen_by_its_author_only(toy_benchmark, author,
                                                            other_author, client):
    private = upload(author, "Toy Secret", ORACLE, public=False)
    score_run(private.current_run)
    urls = [f"/s/{private.id}/", f"/s/{private.id}/samples/", f"/m/{private.model_id}/",
            f"/api/submissions/{private.id}/slices/",
            f"/submissions/{private.id}/files/toy_scores.json"]
    client.force_login(other_author)
    assert [client.get(url).status_code for url in urls] == [404] * len(urls)
    assert "Toy Secret" not in client.get("/b/toy/").content.decode()
    client.force_login(author)
    assert [client.get(url).status_code for url in urls] == [200] * len(urls)

