"""The listening panel's API: who may rate what (never their own submission, never a private
one, a confirmed address, a removed rater no more), the listening rule as the rater's page
reports it, and how tasks are drawn (PANEL_RATERS_PER_TASK raters, the pool's strata balanced,
repeats). What keeps the panel blind and one person's accounts apart: test_blind.py."""

import random

import pytest
from allauth.account.models import EmailAddress
from rest_framework.throttling import SimpleRateThrottle

from audit.models import AuditEvent
from panel.models import PanelAnswer, PanelAssignment, PanelTask
from scoring.models import Criterion
from submissions.withheld import withheld
from tests.panel.conftest import SECONDS, heard, letter, listen

NEXT = "/api/panel/mmae/next/"


def answer_url(task_id: int) -> str:
    return f"/api/panel/mmae/tasks/{task_id}/"


def right_text(task: dict) -> str:
    return Criterion.objects.get(item__key=task["item"], index=task["rubric"]).spec["right"]


def next_task(client, user):
    client.force_login(user)
    return client.get(NEXT)


def answer(client, task: dict, *, right=True, listened=None, fetch=True):
    """Answer the task, after fetching and playing each audio through (unless not `fetch`),
    the page reporting `listened` (by default, each audio heard in full)."""
    played = listen(client, task) if fetch else heard(task)
    return client.post(answer_url(task["task"]), {
        "choice": letter(task, right_text(task), right=right),
        "listened": played if listened is None else listened},
        content_type="application/json")


def submission_of(task: dict) -> int:
    """The submission whose output a task is about (the task does not say: test_blind.py)."""
    return PanelTask.objects.get(pk=task["task"]).submission_id


def test_a_question_naming_a_slice_of_an_audio_says_in_words_which_part(
        client, panel_board, author, raters):
    """The judge's system prompt tells it how to read `<audio output[-1.0s:]>`; the rater is
    asked the same question, the notation read out beside it, and no note where none is
    needed."""
    panel_board.score_by_criteria("Echo", author)
    Criterion.objects.update(question="Is <audio output[-1.0s:]> as clean as <audio output>?")
    rater, = raters(1)
    task = next_task(client, rater).json()
    assert task["question"] == "Is <audio output[-1.0s:]> as clean as <audio output>?"
    assert task["notes"] == ["<audio output[-1.0s:]>: the last 1 s of output"]
    Criterion.objects.update(question="Is <audio output> clean?")
    assert client.get(NEXT).json()["notes"] == []


def test_a_task_shows_its_rubric_shuffled_choices_and_audio_but_no_vote(
        client, panel_board, author, raters):
    submission = panel_board.score_by_criteria("Echo", author)
    rater, = raters(1)
    response = next_task(client, rater)
    assert response.status_code == 200
    task = response.json()
    assert set(task) == {"task", "item", "rubric", "instruction", "question", "notes",
                         "choices", "texts", "audio", "listen"}
    assert task["texts"] == []  # an audio output: nothing to read but the question
    assert PanelTask.objects.get(pk=task["task"]).submission == submission
    criterion = Criterion.objects.get(item__key=task["item"], index=task["rubric"])
    assert task["question"] == criterion.question
    assert sorted(c["text"] for c in task["choices"]) == sorted(
        [criterion.spec["right"], *criterion.spec["wrong"]])
    assert [c["letter"] for c in task["choices"]] == list("ABCD"[:len(task["choices"])])
    assert task["audio"]["output"].startswith("/panel/audio/")  # test_blind.py: what it names
    assert task["listen"] == {label: pytest.approx(SECONDS) for label in task["audio"]}
    assert "vote" not in response.content.decode() and "correct" not in task
    again = client.get(NEXT).json()  # the open task again, in the same order
    assert {k: v for k, v in again.items() if k != "audio"} == \
        {k: v for k, v in task.items() if k != "audio"}
    # Its audio addresses name the same audio (signed again: the stamp may be a second on).
    assert {label: url.split(":")[0] for label, url in again["audio"].items()} == \
        {label: url.split(":")[0] for label, url in task["audio"].items()}
    assert client.get(task["audio"]["output"]).status_code == 200


def shuffled(rater_id: int, task_id: int, options: list[str]) -> list[str]:
    order = list(range(len(options)))
    random.Random(f"panel:{rater_id}:{task_id}").shuffle(order)
    return [options[i] for i in order]


def test_choices_are_shuffled_per_rater_and_stable(client, panel_board, author, raters):
    panel_board.score_by_criteria("Echo", author)
    people = raters(3)
    for rater in people:
        task = next_task(client, rater).json()
        assert next_task(client, rater).json()["choices"] == task["choices"]
        spec = Criterion.objects.get(item__key=task["item"], index=task["rubric"]).spec
        assert [c["text"] for c in task["choices"]] == shuffled(
            rater.pk, task["task"], [spec["right"], *spec["wrong"]])
        assert answer(client, task).status_code == 201
    first = PanelTask.objects.get()
    assert PanelAnswer.objects.filter(task=first).count() == 3  # the same task to all three
    # The seed tells raters apart: some of them see another order.
    assert len({tuple(shuffled(r, first.pk, list("abc"))) for r in range(1, 20)}) > 1


@pytest.mark.slow
def test_an_author_is_never_given_their_own_submission(client, panel_board, author,
                                                      other_author):
    panel_board.score_by_criteria("Mine", author)
    assert next_task(client, author).status_code == 204
    theirs = panel_board.score_by_criteria("Theirs", other_author)
    seen = []
    while (response := next_task(client, author)).status_code == 200:
        task = response.json()
        seen.append(submission_of(task))
        assert answer(client, task).status_code == 201
    assert seen == [theirs.pk] * len(withheld(panel_board.benchmark).pool)


def test_an_author_cannot_answer_a_task_of_their_own_submission(client, panel_board, author,
                                                               other_author, raters):
    panel_board.score_by_criteria("Mine", author)
    rater, = raters(1)
    task = next_task(client, rater).json()
    client.force_login(author)
    assert client.get(task["audio"]["output"]).status_code == 404  # not theirs to fetch
    assert answer(client, task, fetch=False).status_code == 404
    assert not PanelAnswer.objects.exists()


@pytest.mark.slow
def test_a_private_submission_is_never_shown(client, panel_board, author, other_author,
                                             raters):
    panel_board.score_by_criteria("Public", author)
    private = panel_board.score_by_criteria("Private", other_author, public=False)
    rater, = raters(1)
    answered = 0
    while (response := next_task(client, rater)).status_code == 200:
        task = response.json()
        assert submission_of(task) != private.pk
        assert answer(client, task).status_code == 201
        answered += 1
    assert answered == len(withheld(panel_board.benchmark).pool)  # the public one's, all
    client.force_login(rater)
    assert client.get(f"/s/{private.pk}/audio/{task['item']}/output").status_code == 404


def test_a_task_of_a_submission_made_private_leaves_the_panel(client, panel_board, author,
                                                              raters):
    submission = panel_board.score_by_criteria("Echo", author)
    rater, other = raters(2)
    task = next_task(client, rater).json()
    submission.public = False
    submission.save(update_fields=["public"])
    assert client.get(task["audio"]["output"]).status_code == 404
    assert answer(client, task, fetch=False).status_code == 404
    assert next_task(client, other).status_code == 204
    assert not PanelAnswer.objects.exists()


def test_a_rater_needs_a_confirmed_address_and_a_visitor_a_log_in(client, panel_board, author,
                                                                   raters):
    panel_board.score_by_criteria("Echo", author)
    rater, = raters(1)
    assert client.get(NEXT).status_code == 401
    EmailAddress.objects.filter(user=rater).update(verified=False)
    response = next_task(client, rater)
    assert response.status_code == 403
    assert "confirm your email address" in response.json()["errors"][0]


def test_an_answer_needs_each_audio_heard_long_enough(client, panel_board, author, raters,
                                                      settings):
    panel_board.score_by_criteria("Echo", author)
    rater, = raters(1)
    task = next_task(client, rater).json()
    short = {label: SECONDS - 0.1 for label in task["audio"]}
    response = answer(client, task, listened=short)
    assert response.status_code == 400
    assert any("audio 'output' heard for 0.4 s" in e for e in response.json()["errors"])
    response = answer(client, task, listened={})
    assert response.status_code == 400
    assert all(any(repr(label) in e for e in response.json()["errors"]) for label in task["audio"])
    assert not PanelAnswer.objects.exists()
    assert answer(client, task).status_code == 201
    assert answer(client, task, fetch=False).status_code == 409


def test_a_long_audio_needs_only_the_panel_minimum(client, panel_board, author, raters,
                                                   settings):
    settings.PANEL_MIN_LISTEN_SECONDS = 0.3
    panel_board.score_by_criteria("Echo", author)
    rater, = raters(1)
    task = next_task(client, rater).json()
    assert list(task["listen"].values()) == [pytest.approx(0.3)] * len(task["audio"])
    assert answer(client, task, listened={k: 0.25 for k in task["audio"]}).status_code == 400
    assert answer(client, task, listened={k: 0.3 for k in task["audio"]}).status_code == 201


def test_a_bad_answer_names_its_problem(client, panel_board, author, raters):
    panel_board.score_by_criteria("Echo", author)
    rater, = raters(1)
    task = next_task(client, rater).json()
    response = client.post(answer_url(task["task"]), {"choice": "Z", "listened": heard(task)},
                           content_type="application/json")
    assert response.status_code == 400
    assert response.json()["errors"][0].startswith("choice: 'Z' is not one of the letters A")
    response = client.post(answer_url(task["task"]),
                           {"choice": "A", "listened": {**heard(task), "input9": 3}},
                           content_type="application/json")
    assert response.status_code == 400
    assert "no audio 'input9'" in response.json()["errors"][0]
    assert client.post(answer_url(999999), {"choice": "A", "listened": {}},
                       content_type="application/json").status_code == 404
    assert not PanelAnswer.objects.exists()


def test_each_task_goes_to_its_raters_started_ones_before_new(client, panel_board, author,
                                                              raters, settings):
    settings.PANEL_RATERS_PER_TASK = 2
    panel_board.score_by_criteria("Echo", author)
    first, second, third = raters(3)
    task = next_task(client, first).json()
    assert answer(client, task).status_code == 201
    assert next_task(client, second).json()["task"] == task["task"]  # started: offered first
    other = next_task(client, third).json()
    assert other["task"] != task["task"]  # its two seats are taken
    assert PanelAssignment.objects.filter(task_id=task["task"]).count() == 2


@pytest.mark.slow
def test_new_tasks_are_drawn_across_the_pools_strata(client, panel_board, author, raters):
    panel_board.score_by_criteria("Echo", author)
    rater, = raters(1)
    pooled = withheld(panel_board.benchmark).pool
    strata = {(c.category, c.item.dimensions["modality"], c.item.dimensions["complexity"])
              for c in Criterion.objects.select_related("item").filter(id__in=pooled.values())}
    assert len(strata) > 1
    for _ in range(len(strata)):
        assert answer(client, next_task(client, rater).json()).status_code == 201
    # MMAE's stratum of an item: "<modality> / <complexity>" (Kind.panel_stratum).
    drawn = [(t.category, *t.stratum.split(" / ")) for t in PanelTask.objects.all()]
    assert sorted(drawn) == sorted(strata)  # one task in each stratum before any second
    assert all(pooled[t.criterion.item_id] == t.criterion_id
               for t in PanelTask.objects.select_related("criterion"))


@pytest.mark.slow
def test_a_rater_is_asked_an_answered_task_again(client, panel_board, author, raters,
                                                 settings):
    settings.PANEL_REPEAT_EVERY = 3
    panel_board.score_by_criteria("Echo", author)
    rater, = raters(1)
    tasks = []
    for _ in range(3):
        tasks.append(next_task(client, rater).json())
        assert answer(client, tasks[-1]).status_code == 201
    again = next_task(client, rater).json()
    # The oldest, shown exactly as before (its audio under the repeat's own addresses).
    assert {**again, "audio": None} == {**tasks[0], "audio": None}
    assert again["audio"].keys() == tasks[0]["audio"].keys()
    assert answer(client, again, right=False).status_code == 201
    assert PanelAnswer.objects.get(rater=rater, repeat=True).task_id == tasks[0]["task"]
    assert next_task(client, rater).json()["task"] not in {t["task"] for t in tasks}
    card = client.get("/api/leaderboards/mmae/judge/").json()
    assert card["panel"]["repeats"] == 1 and card["panel"]["self_consistency"] == 0.0


def test_staff_remove_a_rater_and_their_answers_audited(client, panel_board, author, raters,
                                                        staff):
    panel_board.score_by_criteria("Echo", author)
    rater, = raters(1)
    assert answer(client, next_task(client, rater).json()).status_code == 201
    client.force_login(author)
    url = f"/staff/panel/raters/{rater.pk}/remove/"
    assert client.post(url, {"reason": "spam"}).status_code == 404  # staff only
    client.force_login(staff)
    page = client.post(url, {"reason": ""})
    assert page.status_code == 400 and PanelAnswer.objects.filter(rater=rater).exists()
    assert client.post(url, {"reason": "answers at random"}).status_code == 302
    assert not PanelAnswer.objects.filter(rater=rater).exists()
    event = AuditEvent.objects.get(action=AuditEvent.Action.PANEL_RATER)
    assert event.before == {"rater": "rater1", "answers": 1}
    assert event.reason == "answers at random" and event.actor == staff
    response = next_task(client, rater)
    assert response.status_code == 403 and "removed" in response.json()["errors"][0]
    client.force_login(staff)
    assert "rater1" in client.get("/staff/panel/raters/").content.decode()


def test_answers_are_rate_limited(client, panel_board, author, raters, monkeypatch):
    # DRF reads its rates once, at import: set them on the throttle class.
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES",
                        {"anon": None, "user": None, "uploads": None, "panel": "1/h"})
    panel_board.score_by_criteria("Echo", author)
    rater, = raters(1)
    assert answer(client, next_task(client, rater).json()).status_code == 201
    response = answer(client, next_task(client, rater).json())
    assert response.status_code == 429
    assert "Too many requests" in response.json()["errors"][0]
