"""The panel's bodies against their OpenAPI schema, with every key filled: a task, the judge
card with answers, disagreements and buckets (tests/leaderboard/test_api_bodies.py checks
every read endpoint on boards without a panel)."""

import jsonschema

from tests.leaderboard.test_api_bodies import described
from tests.panel.test_judge_card import CARD, rate


def test_a_task_and_a_rated_card_are_what_the_schema_describes(client, panel_board, author,
                                                               other_author, raters):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    panel_board.scored("Alpha", author, lambda item, criterion: criterion.index % 2)
    panel_board.scored("Beta", other_author)
    people = raters(3)
    client.force_login(people[0])
    task = client.get("/api/panel/mmae/next/").json()
    jsonschema.validate(task, described(schema, "/api/panel/{slug}/next/", 200))
    rate(client, people, per_rater=4)
    card = client.get(CARD).json()
    assert card["configs"][0]["human"]["rubrics"] and card["configs"][0]["disagreements"]
    jsonschema.validate(card, described(schema, "/api/leaderboards/{slug}/judge/", 200))
