"""What a phase board's rows say and link to. An entry received after its phase's deadline
(Entry.late) is listed on the open board marked "after the deadline": on the page, in the read
API and its CSV, from the first state of the board that lists it (leaderboard.boards.marks, the
rule challenges.apps hands down). On a hidden-rubric board, a viewer below FULL is offered no
link that answers 404 (leaderboard.pages.views.reach): a crawler through the front, every cache
on, follows every same-site address from the board page and meets none."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from django.test import Client
from django.utils import timezone

from challenges.models import Phase
from scoring.boards import board_changed
from scoring.models import ScoringRun, SliceResult
from tests.challenges.challenge_factories import add_team, build_challenge, enter
from tests.challenges.test_hidden_crawler import (  # noqa: F401 - a fixture
    SLUG,
    addresses,
    final_phase_of,
    text_of,
)
from tests.config.test_page_cache import call, clock, django_app, front, signed_in  # noqa: F401
from tests.html import one, select, texts
from tests.leaderboard.test_api import csv_rows

pytestmark = pytest.mark.django_db

MARK = "after the deadline"


def marked_rows(page: bytes) -> dict[str, bool]:
    """model name -> whether its board row carries the mark."""
    rows = {}
    for cell in select(page, "table#board td.model"):
        name = one(cell, "a.name").text.strip()
        rows[name] = MARK in [b.text.strip() for b in select(cell, ".marks .badge.late")]
    return rows


def two_teams(kind: str, shown: str):
    """A challenge whose (`kind`, single) board holds an on-time entry of team On Time and a
    late one of team Late Comer; its final phase shows `shown`."""
    built = build_challenge(shown=shown)
    add_team(built, "On Time")
    add_team(built, "Late Comer")
    on_time = enter(built, "On Time", kind, "single", (50.0, 60.0, 30.0))
    late = enter(built, "Late Comer", kind, "single", (40.0, 70.0, 20.0), late=True)
    return built.board(kind, "single").benchmark, on_time, late


@pytest.mark.parametrize(("kind", "shown"), [(Phase.Kind.DEVELOPMENT, Phase.Shown.NOTHING),
                                             (Phase.Kind.FINAL, Phase.Shown.OVERALL)])
def test_a_late_entry_is_marked_on_the_page_the_api_and_the_csv(kind, shown, client):
    """On the development board (rubrics public) and on a hidden final board that shows each
    row's overall figures: the late row is marked, the on-time one is not."""
    benchmark, on_time, late = two_teams(kind, shown)
    names = {on_time.submission.model.name: False, late.submission.model.name: True}
    page = client.get(f"/b/{benchmark.slug}/")
    assert page.status_code == 200
    assert marked_rows(page.content) == names
    assert texts(page.content, "table#board .badge.late") == [MARK]
    api = client.get(f"/api/leaderboards/{benchmark.slug}/").json()
    assert {r["model"]: r["after_deadline"] for r in api["rows"]} == names
    rows = csv_rows(client.get(f"/api/leaderboards/{benchmark.slug}/?format=csv"))
    assert {r["model"]: r["after_deadline"] for r in rows} == {
        name: str(marked) for name, marked in names.items()}


def test_a_board_that_shows_no_figure_marks_the_late_entrys_name(client):
    """A hidden final board that shows nothing lists its models' names alone: the late
    one's name is marked, and the read API answers no row at all."""
    benchmark, on_time, late = two_teams(Phase.Kind.FINAL, Phase.Shown.NOTHING)
    page = client.get(f"/b/{benchmark.slug}/")
    assert page.status_code == 200 and not select(page.content, "table#board")
    names = {one(item, "bdi").text: [b.text for b in select(item, ".badge.late")]
             for item in select(page.content, "ul.hidden-models li")}
    assert names == {on_time.submission.model.name: [], late.submission.model.name: [MARK]}
    assert client.get(f"/api/leaderboards/{benchmark.slug}/").status_code == 404


def test_a_late_entrys_row_has_its_mark_in_the_first_state_that_lists_it(client):
    """The entry is made with its submission (still scoring, not on the board); the board's
    state is built and kept without it; the run finishes (a board change) and the first state
    that lists the row lists it marked, on the page and in the API."""
    built = build_challenge()
    add_team(built, "On Time")
    add_team(built, "Late Comer")
    enter(built, "On Time", Phase.Kind.DEVELOPMENT, "single", (50.0, 60.0, 30.0))
    late = enter(built, "Late Comer", Phase.Kind.DEVELOPMENT, "single", None, late=True)
    benchmark = built.board(Phase.Kind.DEVELOPMENT, "single").benchmark
    url = f"/b/{benchmark.slug}/"
    assert list(marked_rows(client.get(url).content).values()) == [False]
    assert [r["after_deadline"] for r in client.get(
        f"/api/leaderboards/{benchmark.slug}/").json()["rows"]] == [False]
    run = late.submission.current_run
    SliceResult.objects.create(run=run, dimension="overall", bucket="", n=4,
                               values={"n": 4, "IFR": 90.0, "CR": 90.0, "EMR": 90.0})
    ScoringRun.objects.filter(pk=run.pk).update(
        status="finished", status_times={"finished": timezone.now().isoformat()})
    board_changed(benchmark.id)
    assert marked_rows(client.get(url).content) == {
        late.submission.model.name: True, "On Time system 0": False}
    rows = client.get(f"/api/leaderboards/{benchmark.slug}/").json()["rows"]
    assert [(r["model"], r["after_deadline"]) for r in rows] == [
        (late.submission.model.name, True), ("On Time system 0", False)]


def test_the_schema_describes_the_mark(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    row = schema["components"]["schemas"]["BoardRow"]
    assert row["properties"]["after_deadline"]["type"] == "boolean"
    assert "after_deadline" in row["required"]


# The pages whose addresses the crawler follows: the board's, its models', its challenge's
# and the participant's own (the site's other boards are no part of it, nor the organizers'
# pages, which no one else is answered).
FOLLOWED = (f"/b/{SLUG}/", "/m/", "/s/", f"/api/leaderboards/{SLUG}/", "/submissions/", "/c/")


def crawl_from_board(front, cookie: str | None) -> dict[str, tuple[int, str, bytes]]:  # noqa: F811
    """Every same-site address the board page (and its challenge's page) names, and those the
    pages of this board it leads to name in turn: address -> (status, the page that named it,
    body)."""
    headers = {"Cookie": cookie} if cookie else {}
    seen: dict[str, tuple[int, str, bytes]] = {}
    per_path: Counter = Counter()
    queue = [(f"/b/{SLUG}/", ""), ("/c/icassp/", "")]
    while queue and len(seen) < 300:
        url, named_by = queue.pop(0)
        path = url.partition("?")[0]
        if url in seen or per_path[path] >= 8:
            continue
        per_path[path] += 1
        answer = call(front, url, headers=headers)
        seen[url] = (answer.status, named_by, answer.body)
        if answer.status in (301, 302, 303, 307, 308):
            queue.extend((found, url) for found in addresses(f'"{answer.header("Location")}"'))
            continue
        kind = answer.header("Content-Type") or ""
        if answer.status != 200 or not kind.startswith("text/html") \
                or not path.startswith(FOLLOWED) or "/manage/" in path:
            continue
        queue.extend((found, url) for found in sorted(addresses(text_of(answer.body)))
                     if found not in seen)
    return seen


@pytest.mark.parametrize("shown", [Phase.Shown.NOTHING, Phase.Shown.OVERALL,
                                   Phase.Shown.SLICES])
@pytest.mark.slow
def test_no_link_from_a_hidden_board_answers_404(shown, final_phase_of, front, client,  # noqa: F811
                                                 author):
    """As the participant (the author of a row) and as an anonymous visitor, after an
    organizer (whose pages link to everything) was answered first: every address the board
    page leads to answers, and what would not is not offered (the slice selector below
    SLICES; compare, the items dataset, the explorer and the judge card below FULL)."""
    state = final_phase_of(shown)
    mine = state["mine"]
    organizer = crawl_from_board(front, signed_in(front, client, state["organizer"]))
    assert f"/s/{mine.pk}/" in organizer and f"/b/{SLUG}/compare/" in {
        url.partition("?")[0] for url in organizer}
    for cookie in (signed_in(front, Client(), author), None):
        seen = crawl_from_board(front, cookie)
        dead = {url: (status, named_by) for url, (status, named_by, _) in seen.items()
                if status >= 400}
        assert not dead, "\n".join(f"{url}: {status}, named by {named_by}"
                                   for url, (status, named_by) in sorted(dead.items()))
        board = seen[f"/b/{SLUG}/"][2]
        assert b"Hidden Editor" in board
        slices = shown == Phase.Shown.SLICES
        figures = shown != Phase.Shown.NOTHING
        assert bool(select(board, "#board-filters select[name=dimension]")) is slices
        assert (f"/b/{SLUG}/pivot/" in seen) is slices
        assert (f"/m/{mine.model_id}/" in seen) is figures
        assert (f"/api/leaderboards/{SLUG}/?format=json" in seen) is figures
        for url in seen:
            assert not url.startswith(("/s/", f"/b/{SLUG}/compare/", f"/b/{SLUG}/judge/",
                                       f"/api/leaderboards/{SLUG}/items/")), url
        if figures:
            model = seen[f"/m/{mine.model_id}/"][2]
            assert select(model, "#submissions td") and not select(model, "#submissions a")
            assert bool(select(model, "#model-chart select[name=dimension]")) is slices
            assert json.loads(seen[f"/api/leaderboards/{SLUG}/?format=json"][2])["rows"]
