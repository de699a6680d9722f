"""AIR-Bench runs end to end: responses in, the judge simulator over loopback, figures out."""

import json

import pytest

from scoring import exports, runs
from scoring.kinds.airbench import rules as airbench
from scoring.kinds.airbench.simulated import align_letter, chat_score
from scoring.models import Answer, ItemResult, SliceResult
from scoring.services import benchmark_import
from submissions.models import ModelEntry, Submission
from submissions.rescoring import rescore_plan
from tests.conftest import judge_config, score_run
from tests.html import one, select, texts
from tests.scoring.airbench_data import by_hand, chat_meta, foundation_meta, write

pytestmark = pytest.mark.django_db

SIM_SEED = 4
RESPONSES = {"1": "B", "2": "I think it is A.", "3": "male", "4": "D", "5": "A"}  # 6 missing
CHAT_RESPONSES = {"0": "Someone speaks.", "1": "They argue.", "2": "Rain falls.",
                  "4": "A voice over traffic.", "5": "Singing over a guitar."}  # 3 missing


@pytest.fixture
def imported(tmp_path, settings):
    settings.SCORING_BATCH_ITEMS = 4

    def load(kind):
        data, name = (foundation_meta(), "Foundation_meta.json") if kind == airbench.FOUNDATION \
            else (chat_meta(), "Chat_meta.json")
        benchmark, _ = benchmark_import(kind=kind, path=write(tmp_path / name, data),
                                        audio_root=None, slug=kind)
        return benchmark, data
    return load


def create(benchmark, outputs, urls, options=None, **config):
    keys = {i.key for i in benchmark.items.all()}
    return runs.run_create(benchmark=benchmark, audio_root="", outputs=outputs,
                           missing={k: "no prediction" for k in keys - set(outputs)},
                           config=judge_config(urls, kind=benchmark.kind, **config),
                           options=options)


def stored(run) -> dict:
    return {(s.dimension, s.bucket): s.values for s in SliceResult.objects.filter(run=run)}


def test_chat_scores_both_passes_and_aggregates_as_by_hand(imported, thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1, seed=SIM_SEED)
    benchmark, data = imported(airbench.CHAT)
    run = create(benchmark, CHAT_RESPONSES, sim.urls)
    assert run.total_queries == 10  # 5 answered items x 2 passes; the missing one is not asked
    run = score_run(run)
    assert run.status == "finished" and run.simulated
    by_id = {str(d["uniq_id"]): d for d in data}
    expected_answers = {(key, k): {"score": chat_score(by_id[key]["question"], response,
                                                       SIM_SEED)}
                        for key, response in CHAT_RESPONSES.items() for k in (0, 1)}
    _, expected = by_hand(airbench.CHAT, airbench.parse_chat(data), CHAT_RESPONSES,
                                        expected_answers)
    figures = stored(run)
    assert figures[("overall", "")] == expected["overall"]
    assert figures[("category", "mixed_audio")] == expected["category"]["mixed_audio"]
    assert figures[("category", "music")]["score"] == 0  # its only item has no response
    assert figures[("task", "speech_dialogue_QA")] == expected["task"]["speech_dialogue_QA"]
    # Pass B asks with the reference first: the raw reply is the pair the other way round.
    a, b = (Answer.objects.get(run=run, criterion__item__key="0", round=k) for k in (0, 1))
    mine = chat_score("What 0?", "Someone speaks.", SIM_SEED)
    reference = chat_score("What 0?", "The reference answer 0.", SIM_SEED)
    assert (a.raw, a.score) == (f"{reference} {mine}", mine)
    assert (b.raw, b.score) == (f"{mine} {reference}", mine)
    assert sorted(sim.stats()[0]["queries"] + sim.stats()[1]["queries"])[0][0].startswith("What")


@pytest.mark.slow
def test_unparseable_replies_are_failed_passes_counted_and_left_out(imported,
                                                                    thread_simulator_factory):
    # The judge's own unreadable reply (the same when asked again): a failed pass, not lost.
    sim = thread_simulator_factory(latency_ms=1, unreadable_rate=1)
    benchmark, _ = imported(airbench.CHAT)
    run = score_run(create(benchmark, CHAT_RESPONSES, sim.urls, max_attempts=2))
    assert run.status == "finished"
    answers = list(Answer.objects.filter(run=run))
    assert len(answers) == 10 and all(a.score is None and a.error for a in answers)
    assert all("unparseable reply" in a.error for a in answers)
    overall = stored(run)[("overall", "")]
    assert (overall["failed"], overall["failed_A"], overall["failed_B"]) == (10, 5, 5)
    assert stored(run)[("category", "speech")]["score"] is None
    assert stored(run)[("category", "music")]["score"] == 0  # unanswered scores 0, not failed
    assert overall["score"] == 0  # music is the only category with a score


@pytest.mark.slow
def test_partly_garbled_replies_leave_only_their_pass(imported, thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1, unreadable_rate=0.5, seed=1)
    benchmark, data = imported(airbench.CHAT)
    run = score_run(create(benchmark, CHAT_RESPONSES, sim.urls, max_attempts=2))
    answers = {(a.criterion.item.key, a.round): a
               for a in Answer.objects.filter(run=run).select_related("criterion__item")}
    failed = [key for key, a in answers.items() if a.error]
    assert 0 < len(failed) < 10
    _, expected = by_hand(airbench.CHAT,
        airbench.parse_chat(data), CHAT_RESPONSES,
        {key: {"score": a.score} for key, a in answers.items()})
    assert stored(run)[("overall", "")] == expected["overall"]
    assert stored(run)[("overall", "")]["failed"] == len(failed)


def test_foundation_without_alignment_asks_the_judge_nothing(imported, thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1)
    benchmark, data = imported(airbench.FOUNDATION)
    run = create(benchmark, RESPONSES, sim.urls)
    assert run.total_queries == 0 and not run.batches.exists()  # nothing to ask
    run = score_run(run)
    assert run.status == "finished" and sim.completions() == 0
    _, expected = by_hand(airbench.FOUNDATION, airbench.parse_foundation(data), RESPONSES, {})
    assert stored(run)[("overall", "")] == expected["overall"]
    assert stored(run)[("task", "Speaker gender recognition")]["unparsed"] == 1
    result = ItemResult.objects.get(run=run, item__key="1")
    assert (result.passed, result.score, result.values["source"]) == (True, 1.0, "rule")


def test_alignment_asks_only_for_what_the_rule_cannot_read(imported, thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1, seed=SIM_SEED)
    benchmark, data = imported(airbench.FOUNDATION)
    run = create(benchmark, RESPONSES, sim.urls, options={"align": True})
    assert run.total_queries == 1 and run.options == {"align": True}
    assert [b.item_keys for b in run.batches.all()] == [["3"]]  # only the unread item
    run = score_run(run)
    assert sim.completions() == 1
    letter = align_letter("Question 3?", "male", 2, SIM_SEED)
    answer = Answer.objects.get(run=run)
    assert (answer.choice, answer.verdict) == (letter, {"correct_letter": "B",
                                                        "correct": letter == "B"})
    _, expected = by_hand(airbench.FOUNDATION, airbench.parse_foundation(data), RESPONSES,
                                              {("3", 0): {"choice": letter}})
    assert stored(run)[("overall", "")] == expected["overall"]
    line = [json.loads(x) for x in exports.file_chunks(run, "results.jsonl")][2]
    assert (line["uniq_id"], line["source"], line["letter"]) == ("3", "judge", letter)
    assert line["alignment"]["raw"] == letter and line["alignment"]["choice"] == letter



def test_the_submission_page_shows_the_rule_and_the_alignment(imported, thread_simulator_factory,
                                                               client, author):
    sim = thread_simulator_factory(latency_ms=1, seed=SIM_SEED)
    benchmark, _ = imported(airbench.FOUNDATION)
    run = score_run(create(benchmark, RESPONSES, sim.urls, options={"align": True}))
    submission = Submission.objects.create(
        owner=author, model=ModelEntry.objects.create(owner=author, name="Picker"),
        benchmark=benchmark, public=True, status="queued", current_run=run, coverage=5 / 6)
    html = client.get(f"/s/{submission.id}/?dimension=task&bucket=Speaker+gender+recognition")
    page = html.content.decode()
    assert html.status_code == 200 and "(aligned)" in page and "alignment" in page
    assert "Response: male" in texts(page, "article.sample .response p")
    page = client.get(f"/s/{submission.id}/?failed=on").content.decode()
    assert one(page, "#sample-6 .response").text == "no response (counts as unanswered)"
    assert select(page, "#sample-1") == []  # answered right by the rule


@pytest.mark.slow
def test_a_second_run_of_the_same_responses_comes_from_the_judgment_cache(imported,
                                                                          thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1, seed=SIM_SEED)
    benchmark, _ = imported(airbench.CHAT)
    first = score_run(create(benchmark, CHAT_RESPONSES, sim.urls))
    asked = sim.completions()
    second = score_run(create(benchmark, CHAT_RESPONSES, sim.urls))
    assert sim.completions() == asked
    assert Answer.objects.filter(run=second, cached=True).count() == 10
    assert stored(second) == stored(first)


def test_the_results_files_hold_every_item_and_pass(imported, thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1, seed=SIM_SEED)
    benchmark, _ = imported(airbench.CHAT)
    run = score_run(create(benchmark, CHAT_RESPONSES, sim.urls))
    lines = [json.loads(x) for x in exports.file_chunks(run, "results.jsonl")]
    assert len(lines) == 12  # 6 items x 2 passes, the unanswered one included
    assert [(x["uniq_id"], x["pass"]) for x in lines[:2]] == [("0", "A"), ("0", "B")]
    assert lines[0]["judge"]["raw"] and lines[0]["response"] == "Someone speaks."
    missing = [x for x in lines if x["uniq_id"] == "3"]
    assert all(x["missing"] and x["score"] == 0 and x["judge"] is None for x in missing)
    scores = json.loads("".join(exports.file_chunks(run, "scores.json")))
    assert scores["kind"] == "airbench-chat" and scores["simulated"] is True
    assert list(scores["category"]) == ["speech", "sound", "music", "speech_and_sound",
                                        "speech_and_music", "mixed_audio"]
    assert scores["overall"] == stored(run)[("overall", "")]
    assert scores["missing"] == 1


def test_the_submission_page_shows_each_items_replies(imported, thread_simulator_factory, client,
                                                      author):
    sim = thread_simulator_factory(latency_ms=1, seed=SIM_SEED)
    benchmark, _ = imported(airbench.CHAT)
    run = score_run(create(benchmark, CHAT_RESPONSES, sim.urls))
    submission = Submission.objects.create(
        owner=author, model=ModelEntry.objects.create(owner=author, name="Talker"),
        benchmark=benchmark, public=True, status="queued", current_run=run, coverage=5 / 6)
    html = client.get(f"/s/{submission.id}/").content.decode()
    assert "Someone speaks." in html and "2 judge replies" in html
    assert "no response (scores 0 in both passes)" in html
    # the replies themselves, as the item's <details> fetches them when opened
    replies = client.get(f"/s/{submission.id}/samples/0/rubrics/", HTTP_HX_REQUEST="true")
    html = replies.content.decode()
    assert "pass A" in html and "pass B" in html
    mine = chat_score("What 0?", "Someone speaks.", SIM_SEED)
    assert any(b.text == str(mine) and f"{mine} for the model" in b.parent.text
               for b in select(html, "b"))
    assert client.get(f"/s/{submission.id}/?dimension=category&bucket=music") \
        .status_code == 200
    files = client.get(f"/submissions/{submission.id}/files/scores.json")
    assert files.status_code == 200  # published: its details are anyone's
    assert json.loads(b"".join(files.streaming_content))["kind"] == "airbench-chat"
    client.force_login(author)
    files = client.get(f"/submissions/{submission.id}/files/scores.json")
    assert files.status_code == 200
    assert json.loads(b"".join(files.streaming_content))["kind"] == "airbench-chat"
    assert client.get(f"/submissions/{submission.id}/files/taxonomy.json").status_code == 404


def test_a_rescore_dry_run_counts_only_the_alignment_queries(imported, thread_simulator_factory,
                                                             author):
    sim = thread_simulator_factory(latency_ms=1, seed=SIM_SEED)
    benchmark, _ = imported(airbench.FOUNDATION)
    plans = {}
    for align in (False, True):
        run = score_run(create(benchmark, RESPONSES, sim.urls, options={"align": align}))
        submission = Submission.objects.create(
            owner=author, model=ModelEntry.objects.create(owner=author, name=f"m{align}"),
            benchmark=benchmark, status="queued", current_run=run, options={"align": align})
        plans[align] = rescore_plan(benchmark=benchmark, submissions=[submission],
                                    config=run.judge_config)
    assert (plans[False].total, plans[False].queries) == (0, 0)
    assert (plans[True].total, plans[True].cached, plans[True].queries) == (1, 1, 0)
