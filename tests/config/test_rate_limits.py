"""Rate limits: log-in attempts (one count per account across the log-in form, the admin
and the token endpoint), sign-ups and password resets (allauth), the upload form
(django-ratelimit) and the API (DRF throttles) answer 429 naming the limit and when to try
again; rates come from the environment."""

import subprocess
import sys

import pytest
from django.core import mail
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from accounts.models import ApiToken
from config.env import env_rate
from tests.conftest import CAST_PASSWORD, ROOT
from tests.html import one, select, texts


def log_in(client, password="wrong", login="author", **extra):
    return client.post("/accounts/login/", {"login": login, "password": password}, **extra)


def ask_token(client, password="wrong", username="author", **extra):
    return client.post("/api/token/", {"username": username, "password": password}, **extra)


@pytest.fixture
def login_rates(settings):
    """THROTTLE_LOGIN (an account from one address) and THROTTLE_LOGIN_ACCOUNT (an account
    from every address); the form's per-address limit off."""

    def set_rates(per_address, per_account=None):
        settings.THROTTLE_LOGIN, settings.THROTTLE_LOGIN_ACCOUNT = per_address, per_account
        settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "login": ""}

    return set_rates


# Log-in attempts: one count per account, whichever door they come through

def test_log_in_attempts_past_the_limit_get_a_429_page_naming_it(client, author, login_rates):
    login_rates("2/m")
    assert log_in(client).status_code == 200  # the form again, with its error
    assert log_in(client).status_code == 200
    response = log_in(client, password=CAST_PASSWORD)
    assert response.status_code == 429
    retry_after = int(response["Retry-After"])
    assert 1 <= retry_after <= 60
    page = response.content.decode()
    assert one(page, "h1").text == "Too many log-in attempts"
    said = select(page, "section.panel p")[0]
    seconds = f"{retry_after} second{'s' if retry_after != 1 else ''}"
    assert said.text == f"The limit is 2 per minute. Try again in {seconds}."
    assert texts(said, "strong") == ["2 per minute", seconds]
    assert "_auth_user_id" not in client.session  # the right password did not get through


def test_the_log_in_page_itself_is_not_limited(client, db, login_rates):
    login_rates("1/m")
    assert all(client.get("/accounts/login/").status_code == 200 for _ in range(3))


def test_a_stranger_guessing_from_one_address_does_not_lock_the_owner_out(
        client, author, login_rates):
    login_rates("2/m", "10/h")
    for _ in range(2):
        log_in(client, REMOTE_ADDR="198.51.100.9")
    assert log_in(client, REMOTE_ADDR="198.51.100.9").status_code == 429
    response = log_in(client, password=CAST_PASSWORD, REMOTE_ADDR="192.0.2.1")
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(author.pk)


@pytest.mark.slow
def test_one_address_at_its_own_rate_never_reaches_the_accounts_ceiling(
        client, author, login_rates):
    # The ceiling counts addresses, each once a period: 40 guesses from one address are one.
    login_rates("100/m", "3/h")
    for _ in range(40):
        assert log_in(client, REMOTE_ADDR="198.51.100.9").status_code == 200
    response = log_in(client, password=CAST_PASSWORD, REMOTE_ADDR="192.0.2.1")
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(author.pk)


def guess_from_many_addresses(client, count=3):
    for number in range(1, count + 1):
        assert log_in(client, REMOTE_ADDR=f"198.51.100.{number}").status_code == 200


@pytest.fixture
def ceiling_reached(client, author, login_rates):
    """The author's account past its ceiling (3 addresses an hour), guessed from 3."""
    login_rates("2/m", "3/h")
    guess_from_many_addresses(client)


def test_past_the_ceiling_a_new_address_is_paused_and_the_owner_gets_a_link(
        client, ceiling_reached, mailoutbox):
    response = log_in(client, password=CAST_PASSWORD, REMOTE_ADDR="203.0.113.7")
    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 3600
    assert one(response, "h1").text == "Sign-in from here is paused"
    assert texts(select(response, "section.panel p")[0], "strong") == ["3 per hour"]
    assert "_auth_user_id" not in client.session  # the right password was not even checked
    # A wrong password from there reads the same: the page tells a guesser nothing.
    wrong = log_in(client, REMOTE_ADDR="203.0.113.8")
    assert wrong.status_code == 429 and one(wrong, "h1").text == "Sign-in from here is paused"
    # One e-mail (not one per attempt) to the account's verified address, naming the address.
    assert len(mailoutbox) == 1
    message = mailoutbox[0]
    assert message.to == ["author@example.com"] and "203.0.113.7" in message.body
    link = next(line for line in message.body.splitlines() if "/accounts/login/approve/" in line)
    # The link lets that address in, from any browser.
    approved = Client().get(link[link.index("/accounts/"):])
    assert approved.status_code == 200 and one(approved, "h1").text == "Sign-in allowed"
    response = log_in(Client(), password=CAST_PASSWORD, REMOTE_ADDR="203.0.113.7")
    assert response.status_code == 302
    # Other accounts keep their own counts; a guess from elsewhere is still paused.
    assert log_in(client, login="other_author", REMOTE_ADDR="198.51.100.4").status_code == 200
    assert log_in(Client(), password=CAST_PASSWORD, REMOTE_ADDR="203.0.113.9").status_code \
        == 429


def test_past_the_ceiling_the_owner_goes_on_from_a_known_address_or_browser(
        client, author, login_rates, mailoutbox):
    login_rates("5/m", "4/h")  # the owner's address is one of the four
    # The owner signed in before: from an address, with this browser.
    assert log_in(client, password=CAST_PASSWORD, REMOTE_ADDR="192.0.2.1").status_code == 302
    client.cookies.pop("sessionid")  # signed out; the browser keeps its other cookies
    guess_from_many_addresses(Client())
    assert log_in(client, password=CAST_PASSWORD, REMOTE_ADDR="192.0.2.1").status_code == 302
    client.cookies.pop("sessionid")  # signed out; the browser keeps its other cookies
    # The browser (its signed cookie) from an address never seen: a phone on the road.
    assert log_in(client, password=CAST_PASSWORD, REMOTE_ADDR="203.0.113.50").status_code \
        == 302
    # The known address from another browser, and through the API.
    assert log_in(Client(), password=CAST_PASSWORD, REMOTE_ADDR="192.0.2.1").status_code \
        == 302
    assert ask_token(Client(), password=CAST_PASSWORD, REMOTE_ADDR="192.0.2.1") \
        .status_code == 200
    # A forged cookie counts for nothing.
    stranger = Client()
    stranger.cookies["known_login"] = "author"
    assert log_in(stranger, password=CAST_PASSWORD, REMOTE_ADDR="203.0.113.60").status_code \
        == 429
    assert mailoutbox and all("203.0.113.50" not in m.body for m in mailoutbox)


def test_past_the_ceiling_the_token_endpoint_says_a_link_was_mailed(
        client, ceiling_reached, mailoutbox):
    response = ask_token(client, password=CAST_PASSWORD, REMOTE_ADDR="203.0.113.7")
    assert response.status_code == 429
    assert response.json() == {"errors": [
        "This account has had sign-in attempts from too many places. If it is yours, a link "
        "that lets this address sign in was e-mailed to its verified address."]}
    assert ApiToken.objects.count() == 0 and len(mailoutbox) == 1


def test_an_approval_link_that_was_changed_is_refused(client, author):
    response = client.get("/accounts/login/approve/not-a-token/")
    assert response.status_code == 400 and one(response, "h1").text == "This link is not valid"


def test_past_the_ceiling_an_unknown_account_gets_the_same_page_and_no_mail(
        client, author, login_rates, mailoutbox):
    login_rates("2/m", "3/h")
    for number in range(1, 4):
        log_in(client, login="nobody", REMOTE_ADDR=f"198.51.100.{number}")
    response = log_in(client, login="nobody", REMOTE_ADDR="203.0.113.7")
    assert response.status_code == 429 and one(response, "h1").text == \
        "Sign-in from here is paused"
    assert mailoutbox == []


def test_the_form_and_the_token_endpoint_share_one_count(client, author, login_rates):
    login_rates("2/m")
    assert log_in(client).status_code == 200
    assert ask_token(client).status_code == 400
    response = ask_token(client, password=CAST_PASSWORD)
    assert response.status_code == 429
    wait = int(response["Retry-After"])
    assert response.json() == {"errors": [f"Too many requests: try again in {wait} seconds."]}
    assert ApiToken.objects.count() == 0
    assert log_in(client, password=CAST_PASSWORD).status_code == 429


def test_the_token_endpoint_counts_per_account_and_address(client, author, login_rates):
    login_rates("2/m", "10/h")
    assert [ask_token(client).status_code for _ in range(3)] == [400, 400, 429]
    response = ask_token(client, password=CAST_PASSWORD, REMOTE_ADDR="192.0.2.1")
    assert response.status_code == 200 and "token" in response.json()


def test_an_email_and_its_username_share_one_count(client, author, login_rates):
    login_rates("2/m")
    assert log_in(client, login="author@example.com").status_code == 200
    assert log_in(client, login="AUTHOR").status_code == 200
    assert log_in(client, login="author", password=CAST_PASSWORD).status_code == 429


def test_the_admin_log_in_goes_through_the_sites_form_and_its_count(client, staff, login_rates):
    login_rates("1/m")
    form = {"username": "staff", "password": CAST_PASSWORD, "next": "/admin/"}
    response = client.post("/admin/login/", form)
    # No password is checked there: the admin sends every visitor to the one log-in form.
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")
    assert "_auth_user_id" not in client.session
    assert log_in(client, login="staff").status_code == 200
    assert log_in(client, login="staff", password=CAST_PASSWORD).status_code == 429


def test_a_limit_set_to_off_lets_every_attempt_through(client, author, login_rates):
    login_rates(None, None)
    assert all(log_in(client).status_code == 200 for _ in range(12))


def test_the_log_in_form_also_limits_each_address_across_accounts(client, author, settings):
    settings.THROTTLE_LOGIN_ADDRESS = "2/m"
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "login": "2/m/ip"}
    assert log_in(client, login="a").status_code == 200
    assert log_in(client, login="b").status_code == 200
    response = log_in(client, login="author", password=CAST_PASSWORD)
    assert response.status_code == 429
    page = response.content.decode()
    assert "Too many log-in attempts" in page and "Try again within" in page
    assert response["Retry-After"] == "60"  # allauth's window: the longest wait


# Sign-up and password reset: allauth's own limits (ACCOUNT_RATE_LIMITS)

def sign_up(client, username, **extra):
    return client.post("/accounts/signup/", {
        "username": username, "email": f"{username}@example.com",
        "password1": "a-Sturdy-passphrase-7", "password2": "a-Sturdy-passphrase-7"}, **extra)


def test_sign_ups_past_the_limit_get_a_429_page(client, db, settings, django_user_model):
    settings.THROTTLE_SIGNUP = "2/h"
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "signup": "2/h/ip"}
    for name in ("first", "second"):
        assert sign_up(client, name).status_code == 302
        client.logout()
    response = sign_up(client, "third")
    assert response.status_code == 429
    page = response.content.decode()
    assert "Too many sign-ups" in page and "2 per hour" in page
    assert response["Retry-After"] == "3600"
    assert not django_user_model.objects.filter(username="third").exists()
    assert sign_up(client, "fourth", REMOTE_ADDR="192.0.2.1").status_code == 302


def test_password_reset_requests_are_limited(client, author, settings):
    settings.THROTTLE_PASSWORD_RESET = "1/h"
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS,
                                    "reset_password": "1/h/ip,1/h/key"}
    form = {"email": "author@example.com"}
    assert client.post("/accounts/password/reset/", form).status_code == 302
    response = client.post("/accounts/password/reset/", form)
    assert response.status_code == 429
    assert "Too many password reset requests" in response.content.decode()
    assert len(mail.outbox) == 1


@pytest.mark.integration
def test_the_environment_sets_allauths_rates(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); from django.conf import "
         "settings as s; r = s.ACCOUNT_RATE_LIMITS; print(r['login'], r['signup'], "
         "repr(r['reset_password']), repr(r['login_failed']))"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings",
             "VAR_DIR": str(tmp_path / "var"), "THROTTLE_LOGIN_ADDRESS": "7/m",
             "THROTTLE_SIGNUP": "3/hour", "THROTTLE_PASSWORD_RESET": "off"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["7/m/ip", "3/h/ip", "''", "''"]


# Uploads and the API

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
