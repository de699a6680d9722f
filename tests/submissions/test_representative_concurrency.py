"""Choosing a model's representative from many clients at once (threads over HTTP against a
live server on PostgreSQL): one choice wins, none answers 500; and the API answers a failure
of its own as JSON."""

import pytest

from accounts.models import ApiToken
from submissions.models import Submission
from tests.concurrent import at_once, statuses

pytestmark = pytest.mark.slow


def test_representative_choices_at_once_all_answer_and_leave_one(live_server, score_with_files,
                                                                 author):
    submissions = [score_with_files(emr=40.0 + i) for i in range(6)]
    _, key = ApiToken.issue(user=author, name="ci")

    def choose(client, i):
        return client.patch(f"{live_server.url}/api/submissions/{submissions[i % 6].pk}/",
                            json={"representative": True},
                            headers={"Authorization": f"Token {key}"})

    responses = at_once(choose, 30)
    assert set(statuses(responses)) <= {200, 400}, [r.text for r in responses]
    assert statuses(responses)[200] >= 1
    assert all(r.headers["Content-Type"] == "application/json" for r in responses)
    assert Submission.objects.filter(representative=True).count() == 1


def test_an_unexpected_failure_under_the_api_answers_json(client, db, monkeypatch):
    from leaderboard.boards import state

    def broken():
        raise RuntimeError("the database went away")

    monkeypatch.setattr(state, "benchmark_list", broken)
    response = client.get("/api/benchmarks/")
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"errors": [
        "internal error on our side, not in your request: try again later"]}
