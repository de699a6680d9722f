"""A benchmark kind defined only here (tests/scoring/kinds/toy.py) goes through everything a
real kind does: its metadata imported, answers uploaded and validated, scored by the pipeline
against its own judge, shown on the board, the read API, the submission page and its explorer,
the model page, the pivot and compare, and its results files downloaded (those pages:
test_toy_kind_pages.py). Nothing outside the Kind protocol knows of it."""

import json

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
from tests.html import select
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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

