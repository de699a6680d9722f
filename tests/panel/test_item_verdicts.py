"""The panel's verdicts on the item page: each representative and each of its verdicts has an
anchor the judge card links to, and `GET /api/panel/<slug>/items/<key>/` counts an item's
rubrics as the card does (first answers, removed raters excluded, published submissions
only), read afresh while the page itself stays cached per board state."""

import re

import jsonschema
import pytest

from leaderboard.boards import item_pages
from panel.models import PanelAnswer, PanelTask
from panel.services import panel_rater_remove
from tests.html import parse, select
from tests.leaderboard.test_api_bodies import described
from tests.panel import test_judge_card
from tests.panel.test_judge_card import CARD

# `slow`: its shared set-up (five raters answering through the API) takes 3.6 s
pytestmark = [pytest.mark.django_db, pytest.mark.slow]

# The judge card's rated board (two systems, five raters, a second judge config), made once
# for the module as there.
module_rated = test_judge_card.module_rated
rated_board = test_judge_card.rated_board


def item_api(key: str) -> str:
    return f"/api/panel/mmae/items/{key}/"


def by_rubric(body: dict) -> dict[tuple[int, int], dict]:
    return {(r["submission"], r["rubric"]): r for r in body["rubrics"]}


def counted_by_hand(given: dict, key: str, judge_verdict) -> dict[tuple[int, int], dict]:
    """Each rated rubric of item `key`, counted here from the answers given: right answers,
    answers, the majority (None for a tie) and the judge's verdict."""
    found = {}
    for task in PanelTask.objects.filter(id__in=list(given), criterion__item__key=key) \
            .select_related("criterion__item"):
        rights = [right for _, right in given[task.id]]
        yes, no = rights.count(True), rights.count(False)
        found[(task.submission_id, task.criterion.index)] = {
            "right_answers": yes, "answers": len(rights),
            "human": None if yes == no else yes > no,
            "counted": len(rights) >= 2 and yes != no,
            "judge": bool(judge_verdict(task))}
    return found


def out_of_pool(given: dict, board: dict) -> dict:
    """The answers to the tasks that had their raters and left the pool: the only ones the
    endpoint counts."""
    return {task: answers for task, answers in given.items() if task in board["rated"]}


def first_disagreement(client) -> dict:
    disagreements = client.get(CARD).json()["configs"][0]["disagreements"]
    assert disagreements  # the rating plan makes some
    return disagreements[0]


def test_the_item_page_anchors_each_representative_and_each_of_its_verdicts(client,
                                                                            rated_board):
    a, b = rated_board["a"], rated_board["b"]
    item = a.current_run.benchmark.items.order_by("position").first()
    html = parse(client.get(f"/b/mmae/i/{item.key}/"))
    indexes = sorted(item.criteria.values_list("index", flat=True))
    for submission in (a, b):
        assert html.select(f"#s-{submission.pk}")
        for index in indexes:
            assert html.select(f"#s-{submission.pk}-r{index}")
    assert html.select(f'[data-url="{item_api(item.key)}"]')
    assert html.select('script[src*="js/item_panel.js"]')


def test_every_disagreement_the_card_lists_links_an_anchor_of_its_item_page(client,
                                                                            rated_board):
    for config in client.get(CARD).json()["configs"]:
        for d in config["disagreements"]:
            path, fragment = d["url"].split("#")
            assert path == f"/b/mmae/i/{d['item']}/"
            assert fragment == f"s-{d['submission']}-r{d['rubric']}"
            assert select(client.get(path), f"#{fragment}")


def test_the_endpoint_counts_each_rubric_as_the_card_and_a_count_by_hand(client, rated_board):
    d = first_disagreement(client)
    body = client.get(item_api(d["item"])).json()
    mine = by_rubric(body)[(d["submission"], d["rubric"])]
    for name in ("human", "judge", "right_answers", "answers"):
        assert mine[name] == d[name], name
    assert mine["disagrees"] and mine["counted"]
    assert mine["anchor"] == d["url"].split("#")[1]
    assert mine["label"] == (f"panel: {'right' if d['human'] else 'wrong'} "
                             f"({d['right_answers']} of {d['answers']})")
    wanted = counted_by_hand(out_of_pool(rated_board["given"], rated_board), d["item"],
                             rated_board["judge_verdict"])
    assert {k: {n: r[n] for n in ("right_answers", "answers", "human", "counted", "judge")}
            for k, r in by_rubric(body).items()} == wanted
    card_item = {(x["submission"], x["rubric"]) for x in client.get(CARD).json()["configs"][0]
                 ["disagreements"] if x["item"] == d["item"]}
    assert {k for k, r in by_rubric(body).items() if r["disagrees"]} == card_item


def test_a_removed_raters_answers_leave_the_items_verdicts(client, rated_board, staff):
    d = first_disagreement(client)
    removed = rated_board["raters"][0]
    panel_rater_remove(actor=staff, rater=removed, reason="answers at random")
    given = {task: [(r, right) for r, right in answers if r != removed.pk]
             for task, answers in rated_board["given"].items()}
    given = {task: answers for task, answers in given.items() if answers}
    body = client.get(item_api(d["item"])).json()
    wanted = counted_by_hand(out_of_pool(given, rated_board), d["item"],
                             rated_board["judge_verdict"])
    assert {k: r["answers"] for k, r in by_rubric(body).items()} == \
        {k: r["answers"] for k, r in wanted.items()}
    assert {k: r["right_answers"] for k, r in by_rubric(body).items()} == \
        {k: r["right_answers"] for k, r in wanted.items()}


def test_a_private_submissions_tasks_are_absent(client, rated_board):
    b = rated_board["b"]
    keys = set(PanelTask.objects.filter(submission=b, answers__isnull=False)
               .values_list("criterion__item__key", flat=True))
    assert keys
    b.public = False
    b.save(update_fields=["public"])
    for key in keys:
        body = client.get(item_api(key)).json()
        assert all(r["submission"] != b.pk for r in body["rubrics"])


def test_an_unknown_item_or_board_is_a_404_naming_it(client, rated_board):
    response = client.get(item_api("no-such-item"))
    assert response.status_code == 404
    assert response.json() == {"errors": ["no item 'no-such-item' on 'mmae'"]}
    assert client.get("/api/panel/nowhere/items/x/").status_code == 404


def test_new_answers_show_at_once_while_the_page_stays_cached(client, rated_board):
    d = first_disagreement(client)
    page = client.get(f"/b/mmae/i/{d['item']}/")
    response = client.get(item_api(d["item"]))
    assert response["Cache-Control"] == "public, max-age=60"
    before = by_rubric(response.json())[(d["submission"], d["rubric"])]["answers"]
    answer = PanelAnswer.objects.filter(task_id=d["task"], repeat=False).first()
    answer.delete()  # as a rater removed would leave it, with no board change
    after = by_rubric(client.get(item_api(d["item"])).json()).get((d["submission"], d["rubric"]))
    assert (after["answers"] if after else 0) == before - 1
    assert client.get(f"/b/mmae/i/{d['item']}/", HTTP_IF_NONE_MATCH=page["ETag"]) \
        .status_code == 304


def test_the_body_is_what_the_schema_describes(client, rated_board):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    body = client.get(item_api(first_disagreement(client)["item"])).json()
    assert body["rubrics"]
    jsonschema.validate(body, described(schema, "/api/panel/{slug}/items/{key}/", 200))


def test_a_link_names_the_page_of_systems_that_shows_its_verdict(client, rated_board,
                                                                 monkeypatch):
    monkeypatch.setattr(item_pages, "SYSTEMS_PER_PAGE", 1)
    board = rated_board["a"].benchmark
    second = item_pages.board_order(board)[1]
    item = board.items.order_by("position").first()
    link = item_pages.item_linker(board)(item.key, second.id, 0)
    assert link == f"/b/mmae/i/{item.key}/?page=2#s-{second.id}-r0"
    html = parse(client.get(link.split("#")[0]))
    assert html.select(f"#s-{second.id}-r0")
    systems = [e.get("id") for e in html.select("[id^=s-]") if re.fullmatch(r"s-\d+", e.get("id"))]
    assert systems == [f"s-{second.id}"]
