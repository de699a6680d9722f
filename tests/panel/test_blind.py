"""What keeps the listening panel blind and robust to one person (issue 34, item 9: three
accounts copying the judge from the explorer reached agreement 100% and kappa 1.00 in seconds).

- A task names neither the submission nor its system: its audio plays from addresses signed
  for that rater's task alone, sent to them only.
- Raters never see the judge's verdict on what they answer: tasks come from the panel's pool
  only, whose results every public page withholds (submissions.withheld, one rule) until they
  leave the pool; the page kept per board state changes with the release.
- Listening is evidenced on the server: each audio sent to the rater at least its length ago.
- The drawing spreads raters: no task just answered goes to another account, the fewest answers
  first, away from the items a rater's co-raters answered."""

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.core import signing
from django.utils import timezone

from leaderboard.boards.dataset_files import dataset_build
from leaderboard.boards.explorer_selectors import audio_file
from panel import services
from panel.models import PanelAnswer, PanelAssignment, PanelTask
from scoring.models import Criterion
from scoring.synthetic import write_wav
from submissions.withheld import withheld
from tests.conftest import cast_member
from tests.html import parse, select
from tests.panel.conftest import heard, letter, listen, played_since

NEXT = "/api/panel/mmae/next/"
CARD = "/api/leaderboards/mmae/judge/"


def give(client, rater) -> dict:
    """The rater's next task."""
    client.force_login(rater)
    response = client.get(NEXT)
    assert response.status_code == 200, response.content
    return response.json()


def post(client, task: dict, listened: dict, *, right: bool = True):
    text = Criterion.objects.get(item__key=task["item"], index=task["rubric"]).spec["right"]
    return client.post(f"/api/panel/mmae/tasks/{task['task']}/",
                       {"choice": letter(task, text, right=right), "listened": listened},
                       content_type="application/json")


def task_row(task: dict) -> PanelTask:
    return PanelTask.objects.select_related("criterion__item").get(pk=task["task"])


# --- a task names no submission ----------------------------------------------------------


def test_a_tasks_audio_plays_from_addresses_of_that_raters_task_alone(client, panel_board,
                                                                      author, raters):
    submission = panel_board.score_by_criteria("Echo Editor", author)
    rater, other = raters(2)
    task = give(client, rater)
    given = PanelAssignment.objects.get(rater=rater)
    assert "submission" not in task
    assert task["audio"] and set(task["audio"]) == set(task["listen"])
    for label, url in task["audio"].items():
        token = re.fullmatch(r"/panel/audio/([^/]+)/", url)[1]
        # What the address carries: the rater's assignment and the label, signed.
        assert signing.loads(token, salt=services.AUDIO_SALT) == [given.pk, label]
        assert "Echo" not in url and f"/s/{submission.pk}/" not in url
    url = task["audio"]["output"]
    response = client.get(url)
    assert response.status_code == 200 and response["Cache-Control"] == "private, no-store"
    assert b"".join(response.streaming_content) == Path(
        audio_file(submission, task["item"], "output")).read_bytes()
    given.refresh_from_db()
    assert given.served["output"]["bytes"] == Path(
        audio_file(submission, task["item"], "output")).stat().st_size

    # Nobody else gets it: another rater, the author, a visitor; nor a forged address.
    for who in (other, author):
        client.force_login(who)
        assert client.get(url).status_code == 404
    client.logout()
    assert client.get(url).status_code == 404
    client.force_login(rater)
    forged = signing.dumps([given.pk + 1, "output"], salt="another salt")
    assert client.get(f"/panel/audio/{forged}/").status_code == 404
    assert client.get(url[:-3] + "xx/").status_code == 404
    # Once answered, the address is dead.
    assert post(client, task, listen(client, task)).status_code == 201
    assert client.get(url).status_code == 404


# --- listening, on the server's evidence ---------------------------------------------------


def test_an_answer_waits_for_each_audio_sent_to_the_rater_its_length_ago(client, panel_board,
                                                                          author, raters):
    submission = panel_board.score_by_criteria("Echo", author)
    run = submission.current_run
    for relative in run.outputs.values():  # outputs of 5 s: a wait no slow machine blurs
        write_wav(Path(run.audio_root) / relative, seconds=5.0, frequency=440, seed=1)
    rater, = raters(1)
    task = give(client, rater)
    assert task["listen"]["output"] == 5.0
    labels = sorted(task["audio"])
    # The page says every audio was heard in full; the server sent none of them.
    response = post(client, task, task["listen"])
    assert response.status_code == 400
    assert [e for e in response.json()["errors"] if "never sent" in e] == [
        f"audio {label!r} was never sent to you: play it from the task (its address in the "
        "task) before answering" for label in labels]
    # Fetched, then answered at once (the attack answered 0.17 s after the task).
    for url in task["audio"].values():
        assert client.get(url).status_code == 200
    response = post(client, task, task["listen"])
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert len(errors) == len(labels)
    for label, error in zip(labels, sorted(errors), strict=True):
        found = re.fullmatch(rf"audio '{label}' was sent to you ([0-9.]+) s ago and takes "
                             r"([0-9.]+) s to hear: listen to it in full before answering", error)
        assert found and float(found[1]) < 1 and float(found[2]) == task["listen"][label]
    assert not PanelAnswer.objects.exists()
    # Fetching again does not restart the clock, nor does it let an answer in early.
    given = PanelAssignment.objects.get(rater=rater)
    played_since(given.pk, 3.0)
    sent = PanelAssignment.objects.get(pk=given.pk).served
    assert client.get(task["audio"]["output"]).status_code == 200
    assert PanelAssignment.objects.get(pk=given.pk).served == sent
    error, = post(client, task, task["listen"]).json()["errors"]
    assert error.startswith("audio 'output' was sent to you 3.")
    played_since(given.pk, 2.0)
    assert post(client, task, task["listen"]).status_code == 201


# --- withheld from every public page --------------------------------------------------------


@pytest.fixture
def pooled_board(client, panel_board, author, other_author, raters, settings):
    """Three of the six items in the pool; A's and B's runs fail every rubric (so that every
    item is a failed one for the explorer's filter), A's outputs differing from B's."""
    settings.PANEL_POOL_ITEMS = 3
    a = panel_board.score_by_criteria("Alpha", author, lambda item, criterion: 0)
    b = panel_board.score_by_criteria("Beta", other_author,
                                      lambda item, criterion: criterion.index % 2)
    rule = withheld(panel_board.benchmark)
    pooled = {i.key for i in panel_board.items if i.id in rule.pool}
    assert len(pooled) == 3
    return {"a": a, "b": b, "pooled": pooled, "open": {i.key for i in panel_board.items} - pooled,
            "raters": raters(3), "benchmark": panel_board.benchmark}


def shows_results(client, submission, key: str) -> bool:
    """Whether the public pages show the submission's results on item `key`: checked on each
    one, which must all agree."""
    seen = {}
    explorer = parse(client.get(f"/s/{submission.pk}/"))
    sample, = explorer.select(f"#sample-{key}")
    seen["explorer"] = not sample.select(".withheld-note") and bool(
        sample.select(".sample-figures"))
    rubrics = parse(client.get(f"/s/{submission.pk}/samples/{key}/rubrics/"))
    scores = [e.text for e in rubrics.select("li.rubric .score")]
    seen["rubrics"] = bool(scores) and set(scores) <= {"pass", "fail"} and not rubrics.select(
        ".withheld-note")
    failed = parse(client.get(f"/s/{submission.pk}/samples/?failed=on"))
    seen["failed filter"] = bool(failed.select(f"#sample-{key}"))
    side, = parse(client.get(f"/b/mmae/i/{key}/")).select(f"#s-{submission.pk}")
    seen["item page"] = not side.select(".withheld-note") and bool(
        side.select(".sample-figures"))
    cells = parse(client.get(f"/b/mmae/i/{key}/")).select(f'[id^="s-{submission.pk}-r"]')
    seen["item verdicts"] = bool(cells) and all(
        c.select(".score")[0].text in ("pass", "fail") for c in cells)
    seen["audio"] = client.get(f"/s/{submission.pk}/audio/{key}/output").status_code == 200
    files = client.get(f"/api/submissions/{submission.pk}/files/per_sample.json")
    seen["results file"] = key in {row["id"] for row in json.loads(
        b"".join(files.streaming_content))}
    dataset_build(submission.benchmark, "jsonl")
    rows = client.get("/api/leaderboards/mmae/items/?format=jsonl")
    assert rows.status_code == 200, rows.content
    content = b"".join(rows.streaming_content) if rows.streaming else rows.content
    seen["dataset"] = (submission.pk, key) in {
        (row["submission"], row["item"]) for row in map(json.loads, content.splitlines())}
    assert len(set(seen.values())) == 1, seen  # every page alike
    return seen["explorer"]


@pytest.mark.slow
def test_a_pooled_result_shows_on_no_public_page_until_it_leaves_the_pool(client,
                                                                          pooled_board):
    a, b = pooled_board["a"], pooled_board["b"]
    for key in pooled_board["pooled"]:
        assert not shows_results(client, a, key) and not shows_results(client, b, key)
    for key in pooled_board["open"]:
        assert shows_results(client, a, key) and shows_results(client, b, key)
    # The compare page's items where the two differ: those out of the pool alone.
    compare = parse(client.get(f"/b/mmae/compare/items/?models={a.model_id},{b.model_id}"))
    listed = {e.get("data-item") for e in compare.select("article[data-item]")}
    assert listed and listed <= pooled_board["open"]
    # The author downloads their results whole; a visitor, without the pooled items.
    client.force_login(a.owner)
    files = client.get(f"/api/submissions/{a.pk}/files/per_sample.json")
    assert {row["id"] for row in json.loads(b"".join(files.streaming_content))} == \
        pooled_board["pooled"] | pooled_board["open"]


def test_the_compare_pages_counts_leave_the_pooled_items_out_as_their_lists_do(client,
                                                                            pooled_board):
    """Each per-item count of the compare page lists exactly its items when followed: the
    pooled items are in neither (once counted, a count one above its list said how a pooled
    item came out), and the page says how many were left out."""
    a, b = pooled_board["a"], pooled_board["b"]
    page = parse(client.get(f"/b/mmae/compare/?models={a.model_id}&models={b.model_id}"))
    row, = page.select("#pairs tbody tr")
    n = row.select("td.num")[0]
    assert n.text == f"{len(pooled_board['open'])} +{len(pooled_board['pooled'])} withheld"
    counts = [cell for cell in row.select("td.num")[1:]]
    assert sum(int(c.text) for c in counts) == 2 * len(pooled_board["open"])  # both groups
    links = [a for cell in counts for a in cell.select("a")]
    assert links  # B wins on score where it passed a rubric
    for link in links:
        followed = parse(client.get(link.get("href").replace("&amp;", "&")))
        listed = {e.get("data-item") for e in followed.select("article[data-item]")}
        assert len(listed) == int(link.text) and listed <= pooled_board["open"], link


@pytest.mark.slow
def test_a_release_changes_the_page_kept_for_the_board_state(client, pooled_board):
    a = pooled_board["a"]
    people = pooled_board["raters"]
    task = give(client, people[0])
    key = task_row(task).criterion.item.key
    assert key in pooled_board["pooled"]
    client.logout()
    page = client.get(f"/b/mmae/i/{key}/")
    assert client.get(f"/b/mmae/i/{key}/", HTTP_IF_NONE_MATCH=page["ETag"]).status_code == 304
    subject = task_row(task).submission
    assert not shows_results(client, subject, key)
    for n, rater in enumerate(people):
        client.force_login(rater)
        mine = task if n == 0 else give(client, rater)
        assert mine["task"] == task["task"]  # nothing else started: each rater is sent to it
        assert post(client, mine, listen(client, mine)).status_code == 201
    # Its raters answered: it left the pool (PANEL_RELEASE_SECONDS 0), a board change.
    client.logout()
    again = client.get(f"/b/mmae/i/{key}/", HTTP_IF_NONE_MATCH=page["ETag"])
    assert again.status_code == 200 and again["ETag"] != page["ETag"]
    assert shows_results(client, subject, key)
    other = a if subject != a else pooled_board["b"]
    assert not shows_results(client, other, key)  # the other system's result: still pooled


@pytest.mark.slow
def test_the_card_counts_no_task_still_in_the_pool(client, pooled_board, settings):
    people = pooled_board["raters"]
    task = give(client, people[0])
    key = task_row(task).criterion.item.key
    for rater in people[:2]:  # two answers of three: still in the pool
        mine = give(client, rater)
        assert mine["task"] == task["task"]
        assert post(client, mine, listen(client, mine), right=False).status_code == 201
    card = client.get(CARD).json()
    assert card["configs"][0]["human"]["answers"] == 0
    assert card["configs"][0]["disagreements"] == []
    assert client.get(f"/api/panel/mmae/items/{key}/").json()["rubrics"] == []
    mine = give(client, people[2])
    assert post(client, mine, listen(client, mine), right=False).status_code == 201
    card = client.get(CARD).json()
    assert card["configs"][0]["human"]["answers"] == 3 and card["panel"]["released"] == 1
    rubric, = client.get(f"/api/panel/mmae/items/{key}/").json()["rubrics"]
    assert (rubric["answers"], rubric["human"]) == (3, False)


def test_a_task_whose_result_left_the_pool_takes_no_answer(client, pooled_board,
                                                          django_user_model):
    late, *others = pooled_board["raters"]
    task = give(client, late)
    # The late rater walked away: their seat lapses, and three others rate the task.
    PanelAssignment.objects.filter(rater=late).update(
        created_at=timezone.now() - timedelta(hours=2))
    more = cast_member(django_user_model, "rater4", "rater4@example.com")
    for rater in [*others, more]:
        mine = give(client, rater)
        assert mine["task"] == task["task"]
        assert post(client, mine, listen(client, mine)).status_code == 201
    client.force_login(late)
    response = post(client, task, heard(task))
    assert response.status_code == 409
    assert "has left the panel's pool" in response.json()["errors"][0]
    assert give(client, late)["task"] != task["task"]  # dropped from their open task


# --- the drawing keeps one person's accounts apart -----------------------------------------


def answered_by(task: PanelTask, rater, *, ago: float) -> None:
    """`rater` gave a first answer to `task` `ago` seconds ago (made here: the drawing reads
    only who answered what, and when)."""
    given = PanelAssignment.objects.create(task=task, rater=rater, answered=True)
    answer = PanelAnswer.objects.create(assignment=given, task=task, rater=rater,
                                        choices=["x", "y"], letter="A", chosen="x", right=True)
    PanelAnswer.objects.filter(pk=answer.pk).update(
        answered_at=timezone.now() - timedelta(seconds=ago))


def pooled_tasks(board, submission, n: int) -> list[PanelTask]:
    """Tasks on `n` pooled rubrics of the submission's output, each of another item."""
    rule = withheld(board.benchmark)
    criteria = Criterion.objects.filter(id__in=list(rule.pool.values())).order_by("id")[:n]
    return [PanelTask.objects.create(benchmark=board.benchmark, submission=submission,
                                     criterion=c, category=c.category, stratum="")
            for c in criteria]


def test_a_task_just_answered_goes_to_no_other_rater_for_a_while(client, panel_board, author,
                                                                 raters, settings):
    settings.PANEL_SPREAD_SECONDS = 600
    panel_board.score_by_criteria("Echo", author)
    first, second, third = raters(3)
    task = give(client, first)
    assert post(client, task, listen(client, task)).status_code == 201
    followed = give(client, second)  # another account right after: sent elsewhere
    assert followed["task"] != task["task"]
    assert post(client, followed, listen(client, followed)).status_code == 201
    own = give(client, third)
    assert own["task"] not in {task["task"], followed["task"]}
    assert post(client, own, listen(client, own)).status_code == 201
    PanelAnswer.objects.filter(task_id=task["task"]).update(
        answered_at=timezone.now() - timedelta(seconds=601))
    assert give(client, third)["task"] == task["task"]  # once the while is over


def test_the_task_with_the_fewest_answers_comes_first(client, panel_board, author, raters):
    submission = panel_board.score_by_criteria("Echo", author)
    *early, rater = raters(4)
    more, fewer = pooled_tasks(panel_board, submission, 2)
    for n, who in enumerate(early[:2]):
        answered_by(more, who, ago=100 + n)
    answered_by(fewer, early[2], ago=100)
    assert give(client, rater)["task"] == fewer.pk


def test_a_rater_is_drawn_away_from_the_items_their_co_raters_answered(client, panel_board,
                                                                        author, raters):
    submission = panel_board.score_by_criteria("Echo", author)
    mate, rater, stranger = raters(3)
    shared, theirs, elsewhere = pooled_tasks(panel_board, submission, 3)
    answered_by(shared, mate, ago=300)  # the two answered the same task: co-raters
    answered_by(shared, rater, ago=300)
    answered_by(theirs, mate, ago=200)  # the mate's other task, made first
    answered_by(elsewhere, stranger, ago=200)
    assert theirs.pk < elsewhere.pk
    assert give(client, rater)["task"] == elsewhere.pk


def test_three_accounts_of_one_person_cannot_copy_the_judge(client, pooled_board, settings):
    """The attack of issue 34, item 9, with the default spread: the task names no system, the
    judge's verdict on it is on no public page, an answer at once is refused, and the other
    accounts are sent elsewhere."""
    settings.PANEL_SPREAD_SECONDS = 600
    one, two, three = pooled_board["raters"]
    task = give(client, one)
    row = task_row(task)
    key = row.criterion.item.key
    client.logout()
    side, = parse(client.get(f"/b/mmae/i/{key}/")).select(f"#s-{row.submission_id}")
    assert side.select(".withheld-note") and not side.select(".sample-figures")
    verdict = select(client.get(f"/b/mmae/i/{key}/"),
                     f"#s-{row.submission_id}-r{row.criterion.index}")[0]
    assert verdict.select(".score")[0].text == "–"  # neither pass nor fail
    client.force_login(one)
    for url in task["audio"].values():
        assert client.get(url).status_code == 200
    assert post(client, task, heard(task)).status_code == 400  # at once: refused
    played_since(PanelAssignment.objects.get(rater=one).pk)
    assert post(client, task, heard(task)).status_code == 201
    assert give(client, two)["task"] != task["task"]
    assert give(client, three)["task"] != task["task"]
    assert client.get(CARD).json()["configs"][0]["human"]["answers"] == 0


# --- the card says so -----------------------------------------------------------------------


def test_the_judge_card_says_how_the_panel_guards_against_copying(client, pooled_board,
                                                                   settings):
    settings.PANEL_SPREAD_SECONDS = 600
    page = parse(client.get("/b/mmae/judge/"))
    guards = {e.get("id"): e.text for e in page.select("#panel-guards li")}
    assert set(guards) == {"guard-blind", "guard-listened", "guard-spread"}
    assert "3 items, one rubric each" in guards["guard-blind"]
    assert "names neither the submission nor its system" in guards["guard-blind"]
    assert "0 results left the pool" in guards["guard-blind"]
    assert "sent to that rater" in guards["guard-listened"]
    assert "in the last 600 s goes to no other rater" in guards["guard-spread"]
    panel = client.get(CARD).json()["panel"]
    assert (panel["pool_items"], panel["released"], panel["spread_seconds"]) == (3, 0, 600)


@pytest.mark.slow
def test_rated_tasks_leave_the_pool_on_the_periodic_release_though_nobody_uses_the_panel(
        client, pooled_board, settings):
    from panel.tasks import release_pools
    from submissions.models import PoolRelease
    from submissions.withheld import pool_release

    settings.PANEL_RELEASE_SECONDS = 3600
    people = pooled_board["raters"]
    task = give(client, people[0])
    subject, key = task_row(task).submission, task_row(task).criterion.item.key
    # A release a moment ago (another pair): the next one is due in an hour.
    other = pooled_board["b"] if subject == pooled_board["a"] else pooled_board["a"]
    elsewhere = next(i for i in withheld(pooled_board["benchmark"]).pool
                     if i != task_row(task).criterion.item_id)
    assert pool_release(pooled_board["benchmark"], [(other.pk, elsewhere)]) == 1
    for n, rater in enumerate(people):
        client.force_login(rater)
        mine = task if n == 0 else give(client, rater)
        assert post(client, mine, listen(client, mine)).status_code == 201
    client.logout()
    assert not shows_results(client, subject, key)  # rated, not yet due
    assert release_pools() == 0
    # An hour on, with nobody at the panel, the periodic release lets out what was rated.
    PoolRelease.objects.update(released_at=timezone.now() - timedelta(hours=2))
    assert release_pools() == 1
    assert shows_results(client, subject, key)
