"""Rate limits: the log-in and upload forms (django-ratelimit) and the API (DRF throttles)
answer 429 naming the limit and when to try again; rates come from the environment."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from rest_framework.throttling import SimpleRateThrottle

from config.env import env_rate
from submissions.models import ApiToken
from tests.conftest import CAST_PASSWORD


@pytest.fixture
def api_rates(monkeypatch):
    """DRF reads its rates once, at import: a test sets them on the throttle class."""

    def set_rates(**rates):
        defaults = {"anon": None, "user": None, "login": None, "uploads": None}
        monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {**defaults, **rates})

    return set_rates


def log_in(client, password="wrong", username="author", **extra):
    return client.post("/accounts/login/", {"username": username, "password": password},
                       **extra)


def test_log_in_attempts_past_the_limit_get_a_429_page_naming_it(client, author, settings):
    settings.THROTTLE_LOGIN = "2/m"
    assert log_in(client).status_code == 200  # the form again, with its error
    assert log_in(client).status_code == 200
    response = log_in(client, password=CAST_PASSWORD)
    assert response.status_code == 429
    retry_after = int(response["Retry-After"])
    assert 1 <= retry_after <= 60
    page = response.content.decode()
    assert "Too many log-in attempts" in page
    assert "The limit is <strong>2 per minute</strong>" in page
    assert f"Try again in\n    <strong>{retry_after} second" in page
    assert "_auth_user_id" not in client.session  # the right password did not get through


def test_the_log_in_page_itself_is_not_limited(client, settings):
    settings.THROTTLE_LOGIN = "1/m"
    assert all(client.get("/accounts/login/").status_code == 200 for _ in range(3))


def test_log_in_attempts_count_per_username_across_addresses(client, author, settings):
    settings.THROTTLE_LOGIN = "2/m"
    for address in ("10.0.0.1", "10.0.0.2"):
        assert log_in(client, REMOTE_ADDR=address).status_code == 200
    assert log_in(client, REMOTE_ADDR="10.0.0.3").status_code == 429
    assert log_in(client, username="other", REMOTE_ADDR="10.0.0.4").status_code == 200


def test_the_admin_log_in_shares_the_limit(client, staff, settings):
    settings.THROTTLE_LOGIN = "1/m"
    form = {"username": "staff", "password": "wrong", "next": "/admin/"}
    assert client.post("/admin/login/", form).status_code == 200
    response = client.post("/admin/login/", {**form, "password": CAST_PASSWORD})
    assert response.status_code == 429
    assert "Too many log-in attempts" in response.content.decode()


def test_password_reset_requests_are_limited(client, author, settings):
    settings.THROTTLE_LOGIN = "1/m"
    form = {"email": "author@example.com"}
    assert client.post("/accounts/password-reset/", form).status_code == 302
    response = client.post("/accounts/password-reset/", form)
    assert response.status_code == 429
    assert "Too many password reset requests" in response.content.decode()


def test_a_limit_set_to_off_lets_every_attempt_through(client, author, settings):
    settings.THROTTLE_LOGIN = None
    assert all(log_in(client).status_code == 200 for _ in range(12))


def test_behind_a_proxy_the_address_is_the_one_the_proxy_added(client, author, settings):
    settings.THROTTLE_LOGIN = "1/m"
    settings.RATELIMIT_IP_META_KEY = "config.throttle.client_ip"
    # One proxy address for everyone; the client forges the first X-Forwarded-For entry.
    assert log_in(client, username="a", HTTP_X_FORWARDED_FOR="1.1.1.1, 203.0.113.7").status_code \
        == 200
    assert log_in(client, username="b", HTTP_X_FORWARDED_FOR="9.9.9.9, 203.0.113.7").status_code \
        == 429
    assert log_in(client, username="c", HTTP_X_FORWARDED_FOR="203.0.113.8").status_code == 200


def test_upload_attempts_on_the_form_past_the_limit_get_a_429_page(client, author, settings):
    settings.THROTTLE_UPLOAD = "1/h"
    client.force_login(author)
    assert client.post("/submit/", {}).status_code == 400  # an incomplete form
    response = client.post("/submit/", {})
    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 3600
    page = response.content.decode()
    assert "Too many upload attempts" in page and "1 per hour" in page
    assert client.get("/submit/").status_code == 200  # the form still shows


def test_upload_limits_count_per_author(client, author, other_author, settings):
    settings.THROTTLE_UPLOAD = "1/h"
    client.force_login(author)
    client.post("/submit/", {})
    assert client.post("/submit/", {}).status_code == 429
    client.force_login(other_author)
    assert client.post("/submit/", {}).status_code == 400


def test_api_uploads_past_the_limit_get_a_429_with_an_errors_body(client, author, api_rates):
    api_rates(uploads="1/h")
    _, key = ApiToken.issue(user=author, name="ci")
    auth = {"HTTP_AUTHORIZATION": f"Token {key}"}
    assert client.post("/api/submissions/", {}, **auth).status_code == 400
    response = client.post("/api/submissions/", {}, **auth)
    assert response.status_code == 429
    wait = int(response["Retry-After"])
    assert response.json() == {"errors": [f"Too many requests: try again in {wait} seconds."]}
    assert client.get("/api/submissions/", **auth).status_code == 200  # listing is not an upload


def test_the_api_token_endpoint_shares_the_log_in_limit(client, author, api_rates):
    api_rates(login="2/m")
    form = {"username": "author", "password": "wrong"}
    assert [client.post("/api/token/", form).status_code for _ in range(2)] == [400, 400]
    response = client.post("/api/token/", {**form, "password": CAST_PASSWORD})
    assert response.status_code == 429
    assert response.json()["errors"][0].startswith("Too many requests: try again in ")
    assert ApiToken.objects.count() == 0


def test_the_read_api_limits_anonymous_callers(client, db, api_rates):
    api_rates(anon="2/m")
    assert [client.get("/api/benchmarks/").status_code for _ in range(3)] == [200, 200, 429]
    assert "Retry-After" in client.get("/api/benchmarks/")


def test_signed_in_api_callers_have_their_own_rate(client, author, api_rates):
    api_rates(anon="1/m", user="3/m")
    _, key = ApiToken.issue(user=author, name="ci")
    auth = {"HTTP_AUTHORIZATION": f"Token {key}"}
    assert [client.get("/api/submissions/", **auth).status_code for _ in range(4)] == [
        200, 200, 200, 429]


@pytest.mark.parametrize("raw, rate", [
    ("10/m", "10/m"), ("20/hour", "20/h"), (" 5/Second ", "5/s"), ("1/day", "1/d"),
    ("off", None), ("", None),
])
def test_rates_are_read_from_the_environment(monkeypatch, raw, rate):
    monkeypatch.setenv("THROTTLE_X", raw)
    assert env_rate("THROTTLE_X", "3/m") == rate


@pytest.mark.parametrize("raw", ["10", "ten/m", "0/m", "10/week", "-1/m", "10/"])
def test_a_bad_rate_stops_start_up_naming_the_variable(monkeypatch, raw):
    monkeypatch.setenv("THROTTLE_X", raw)
    with pytest.raises(ImproperlyConfigured, match=r"THROTTLE_X=.* is not a rate such as 10/m"):
        env_rate("THROTTLE_X", "3/m")


def test_the_defaults_apply_without_the_environment(monkeypatch):
    monkeypatch.delenv("THROTTLE_X", raising=False)
    assert env_rate("THROTTLE_X", "20/h") == "20/h"
