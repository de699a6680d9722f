"""The panel's bodies against their OpenAPI schema, with every key filled: a task, the judge
card with answers, disagreements and buckets (tests/leaderboard/test_api_bodies.py checks
every read endpoint on boards without a panel)."""

import jsonschema
import pytest

from scoring.models import Criterion
from tests.leaderboard.test_api_bodies import described
from tests.panel.conftest import letter, listen
from tests.panel.test_judge_card import CARD


@pytest.mark.slow
def test_a_task_and_a_rated_card_are_what_the_schema_describes(client, panel_board, author,
                                                               other_author, raters):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    # The judge passes every rubric of both: raters who fail one disagree with it, whichever
    # tasks the drawing gives them.
    panel_board.score_by_criteria("Alpha", author)
    panel_board.score_by_criteria("Beta", other_author)
    people = raters(3)
    client.force_login(people[0])
    task = client.get("/api/panel/mmae/next/").json()
    jsonschema.validate(task, described(schema, "/api/panel/{slug}/next/", 200))
    for rater in people:
        client.force_login(rater)
        for _ in range(4):
            response = client.get("/api/panel/mmae/next/")
            if response.status_code == 204:
                break
            drawn = response.json()
            text = Criterion.objects.get(item__key=drawn["item"], index=drawn["rubric"]) \
                .spec["right"]
            assert client.post(f"/api/panel/mmae/tasks/{drawn['task']}/", {
                "choice": letter(drawn, text, right=False), "listened": listen(client, drawn)},
                content_type="application/json").status_code == 201
    card = client.get(CARD).json()
    assert card["configs"][0]["human"]["rubrics"] and card["configs"][0]["disagreements"]
    jsonschema.validate(card, described(schema, "/api/leaderboards/{slug}/judge/", 200))
