"""A Redis that cannot be reached (config.cache.FailSoftRedisCache): pages render as on an
empty cache, rate limits let requests through, and each failure is logged."""

import logging

import pytest
from django.core.cache import cache

from accounts.models import ApiToken
from tests.conftest import BROKER, CAST_PASSWORD, free_ports


def redis_cache(settings, location):
    settings.CACHES = {**settings.CACHES, "default": {
        "BACKEND": "config.cache.FailSoftRedisCache", "LOCATION": location,
        "KEY_PREFIX": f"cache-test-{free_ports(1)[0]}",
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 3}}}


@pytest.fixture
def dead_redis(settings, caplog):
    """The default cache on a port where nothing listens; the records of config.cache."""
    redis_cache(settings, f"redis://127.0.0.1:{free_ports(1)[0]}/0")
    caplog.set_level(logging.ERROR, logger="config.cache")
    return caplog


def outages(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "config.cache"]


def test_an_unreachable_cache_reads_as_empty_and_drops_writes(dead_redis):
    assert cache.get("board", "default") == "default"
    cache.set("board", "body")
    assert cache.get("board") is None
    assert cache.add("counter", 1) is True  # a counter starts afresh: the limit lets it by
    with pytest.raises(ValueError):
        cache.incr("counter")
    assert cache.get_or_set("body", lambda: "rendered") == "rendered"
    assert cache.get_many(["a", "b"]) == {}
    assert cache.has_key("board") is False
    cache.delete("board")
    messages = outages(dead_redis)
    assert len(messages) == 1  # the process then takes it for down a while (config.cache)
    assert messages[0].startswith("cache unreachable, get answered as on an empty cache")
    assert "Connection refused" in messages[0]


def test_a_reachable_redis_is_used_as_usual(settings):
    redis_cache(settings, BROKER)
    cache.set("board", "body", 30)
    assert cache.get("board") == "body"
    assert cache.add("counter", 1) is True and cache.add("counter", 1) is False
    assert cache.incr("counter") == 2
    cache.delete_many(["board", "counter"])
    assert cache.get("board") is None


def test_the_board_and_its_api_render_without_the_cache(client, board, dead_redis):
    _, score_by_slices = board
    score_by_slices("Alpha", (50.0, 60.0, 30.0))
    page = client.get("/b/mmae/")
    assert page.status_code == 200 and "Alpha" in page.content.decode()
    api = client.get("/api/leaderboards/mmae/")
    assert api.status_code == 200
    assert [row["model"] for row in api.json()["rows"]] == ["Alpha"]
    assert outages(dead_redis)


def test_log_in_works_and_its_limits_let_it_through(client, author, dead_redis, settings):
    settings.THROTTLE_LOGIN = "1/m"
    for _ in range(2):
        assert client.post("/accounts/login/", {"login": "author", "password": "wrong"}) \
            .status_code == 200
    response = client.post("/accounts/login/", {"login": "author", "password": CAST_PASSWORD})
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(author.pk)
    assert any("a rate limit lets the request through" in m for m in outages(dead_redis))


def test_the_token_endpoint_works_and_its_limits_let_it_through(client, author, dead_redis,
                                                                settings):
    settings.THROTTLE_LOGIN = "1/m"
    form = {"username": "author", "password": CAST_PASSWORD}
    assert [client.post("/api/token/", form).status_code for _ in range(3)] == [200] * 3
    assert ApiToken.objects.filter(user=author).count() == 3
    assert outages(dead_redis)


def test_sign_up_works_and_its_limits_let_it_through(client, db, dead_redis, settings):
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "signup": "1/h/ip"}
    for name in ("first", "second"):
        response = client.post("/accounts/signup/", {
            "username": name, "email": f"{name}@example.com",
            "password1": "a-Sturdy-passphrase-7", "password2": "a-Sturdy-passphrase-7"})
        assert response.status_code == 302
        client.logout()
    assert outages(dead_redis)
