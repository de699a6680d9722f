"""The API's rate limits under concurrent clients (threads over HTTP against a live server,
counters in Redis): atomic counts let exactly the rate through, and refused tokens count
per client address."""

import pytest

from accounts.models import ApiToken
from tests.concurrent import at_once, redis_cache, statuses  # noqa: F401

pytestmark = [pytest.mark.usefixtures("redis_cache"), pytest.mark.slow]


def test_anonymous_callers_at_once_get_exactly_the_rate(live_server, api_rates):
    api_rates(anon="30/h")
    responses = at_once(lambda client, _: client.get(f"{live_server.url}/api/benchmarks/"),
                        120)
    assert statuses(responses) == {200: 30, 429: 90}
    refused = next(r for r in responses if r.status_code == 429)
    assert 1 <= int(refused.headers["Retry-After"]) <= 3600
    assert refused.json()["errors"][0].startswith("Too many requests: try again in ")


def test_signed_in_callers_at_once_get_exactly_their_rate(live_server, author, api_rates):
    api_rates(user="25/h")
    _, key = ApiToken.issue(user=author, name="ci")
    responses = at_once(lambda client, _: client.get(
        f"{live_server.url}/api/submissions/", headers={"Authorization": f"Token {key}"}), 80)
    assert statuses(responses) == {200: 25, 429: 55}


def test_wrong_tokens_at_once_are_counted_per_address(live_server, author, settings):
    settings.THROTTLE_API_ANON = "10/h"
    responses = at_once(lambda client, i: client.get(
        f"{live_server.url}/api/submissions/", headers={"Authorization": f"Token guess{i}"}),
        64)
    assert statuses(responses) == {401: 10, 429: 54}
    refused = next(r for r in responses if r.status_code == 429)
    assert 1 <= int(refused.headers["Retry-After"]) <= 3600
    assert refused.json()["errors"][0].startswith("Too many requests")


def test_past_the_limit_no_token_is_looked_up_from_that_address(client, author, settings):
    settings.THROTTLE_API_ANON = "3/h"
    _, key = ApiToken.issue(user=author, name="ci")
    guesser = {"REMOTE_ADDR": "198.51.100.7"}
    assert [client.get("/api/submissions/", HTTP_AUTHORIZATION="Token nope", **guesser)
            .status_code for _ in range(5)] == [401, 401, 401, 429, 429]
    # Even the right key: a guesser past the limit learns nothing of a hit.
    assert client.get("/api/submissions/", HTTP_AUTHORIZATION=f"Token {key}",
                      **guesser).status_code == 429
    assert client.get("/api/submissions/", HTTP_AUTHORIZATION=f"Token {key}",
                      REMOTE_ADDR="192.0.2.1").status_code == 200
    # A revoked token is refused like an unknown one, and counts.
    settings.THROTTLE_API_ANON = "1/h"
    ApiToken.objects.update(revoked_at="2020-01-01T00:00Z")
    other = {"REMOTE_ADDR": "192.0.2.2"}
    assert [client.get("/api/submissions/", HTTP_AUTHORIZATION=f"Token {key}", **other)
            .status_code for _ in range(2)] == [401, 429]
