"""The client's address (config.throttle.client_ip): X-Forwarded-For is believed only from
TRUSTED_PROXIES, and every limiter counts by the same address, so rotating the header defeats
none of them."""

import ipaddress
import itertools

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import RequestFactory
from django_ratelimit.core import get_usage
from rest_framework.throttling import SimpleRateThrottle

from config.env import env_networks
from config.throttle import client_ip
from tests.config.test_production import PRODUCTION, run

PROXIES = (ipaddress.ip_network("10.9.0.0/16"), ipaddress.ip_network("fd00::/8"))


def address(settings, remote, forwarded=None, trusted=PROXIES):
    settings.TRUSTED_PROXIES = trusted
    meta = {"REMOTE_ADDR": remote}
    if forwarded is not None:
        meta["HTTP_X_FORWARDED_FOR"] = forwarded
    return client_ip(RequestFactory().get("/", **meta))


def test_without_trusted_proxies_the_header_is_ignored(settings):
    assert address(settings, "203.0.113.5", "1.1.1.1", trusted=()) == "203.0.113.5"


def test_a_header_from_a_peer_that_is_not_trusted_is_ignored(settings):
    assert address(settings, "203.0.113.5", "1.1.1.1, 10.9.0.3") == "203.0.113.5"


def test_behind_a_trusted_proxy_the_client_is_the_address_it_added(settings):
    # The client forged the first entry; the proxy appended the address it saw.
    assert address(settings, "10.9.0.2", "1.1.1.1, 198.51.100.7") == "198.51.100.7"


def test_a_chain_of_trusted_proxies_is_walked_right_to_left(settings):
    assert address(settings, "10.9.0.2", "6.6.6.6, 198.51.100.7, 10.9.4.1, 10.9.0.8") \
        == "198.51.100.7"


def test_a_request_from_the_proxies_themselves_is_theirs(settings):
    assert address(settings, "10.9.0.2", "10.9.3.3") == "10.9.3.3"
    assert address(settings, "10.9.0.2") == "10.9.0.2"


def test_an_entry_that_is_not_an_address_stops_at_the_last_proxy_known(settings):
    assert address(settings, "10.9.0.2", "1.1.1.1, not-an-ip, 10.9.0.4") == "10.9.0.4"


def test_ipv6_proxies_and_clients_are_read_too(settings):
    assert address(settings, "fd00::2", "2001:db8::1, fd00::9") == "2001:db8::1"


def test_trusted_proxies_are_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("TRUSTED_PROXIES", "10.0.0.5, 172.18.0.0/16,fd00::/8")
    assert env_networks("TRUSTED_PROXIES") == (
        ipaddress.ip_network("10.0.0.5/32"), ipaddress.ip_network("172.18.0.0/16"),
        ipaddress.ip_network("fd00::/8"))
    monkeypatch.delenv("TRUSTED_PROXIES")
    assert env_networks("TRUSTED_PROXIES") == ()


@pytest.mark.parametrize("raw", ["10.0.0.300", "proxy.example", "10.0.0.0/40", "10.0.0.5,,x"])
def test_a_bad_trusted_proxy_stops_start_up_naming_it(monkeypatch, raw):
    monkeypatch.setenv("TRUSTED_PROXIES", raw)
    with pytest.raises(ImproperlyConfigured, match=r"TRUSTED_PROXIES: .* is not an IP address"):
        env_networks("TRUSTED_PROXIES")


# Every limiter, with one request allowed per period: a second request from the same client
# is refused whatever X-Forwarded-For says.

_names = itertools.count()


def api_call(client, settings, monkeypatch, **meta):
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES",
                        {"anon": "1/m", "user": None, "uploads": None})
    return client.get("/api/benchmarks/", **meta).status_code


def log_in(client, settings, monkeypatch, **meta):
    settings.THROTTLE_LOGIN, settings.THROTTLE_LOGIN_ACCOUNT = "1/m", None
    return client.post("/accounts/login/", {"login": "author", "password": "wrong"},
                       **meta).status_code


def sign_up(client, settings, monkeypatch, **meta):
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "signup": "1/h/ip"}
    name = f"newcomer{next(_names)}"
    status = client.post("/accounts/signup/", {
        "username": name, "email": f"{name}@example.com", "password1": "a-Sturdy-passphrase-7",
        "password2": "a-Sturdy-passphrase-7"}, **meta).status_code
    client.logout()
    return 429 if status == 429 else 200


def ratelimit_ip_key(client, settings, monkeypatch, **meta):
    """django-ratelimit's "ip" key (RATELIMIT_IP_META_KEY)."""
    usage = get_usage(RequestFactory().post("/", **meta), group="test", key="ip", rate="1/m",
                      increment=True)
    return 429 if usage["should_limit"] else 200


LIMITERS = [api_call, log_in, sign_up, ratelimit_ip_key]


@pytest.mark.parametrize("limiter", LIMITERS)
def test_rotating_the_header_without_a_trusted_proxy_gets_nowhere(
        client, author, settings, monkeypatch, limiter):
    settings.TRUSTED_PROXIES = ()
    statuses = [limiter(client, settings, monkeypatch, REMOTE_ADDR="203.0.113.5",
                        HTTP_X_FORWARDED_FOR=f"198.51.100.{n}") for n in range(3)]
    assert statuses == [200, 429, 429]


@pytest.mark.parametrize("limiter", LIMITERS)
def test_behind_a_trusted_proxy_each_client_has_its_own_count(
        client, author, settings, monkeypatch, limiter):
    settings.TRUSTED_PROXIES = PROXIES

    def through_proxy(forged, real):
        return limiter(client, settings, monkeypatch, REMOTE_ADDR="10.9.0.2",
                       HTTP_X_FORWARDED_FOR=f"{forged}, {real}")

    assert through_proxy("1.1.1.1", "198.51.100.7") == 200
    assert through_proxy("2.2.2.2", "198.51.100.7") == 429  # forging the left part is no use
    assert through_proxy("1.1.1.1", "198.51.100.8") == 200  # another client behind the proxy


IDENTS = (
    "import django; django.setup(); from django.test import RequestFactory; "
    "from config.throttle import client_ip, AnonThrottle; "
    "from allauth.account.adapter import get_adapter; "
    "from django_ratelimit.core import _SIMPLE_KEYS; "
    "r = RequestFactory().get('/', REMOTE_ADDR='203.0.113.5', "
    "HTTP_X_FORWARDED_FOR='1.1.1.1, 198.51.100.7'); "
    "print(client_ip(r), AnonThrottle().get_ident(r), get_adapter().get_client_ip(r), "
    "_SIMPLE_KEYS['ip'](r))"
)


@pytest.mark.parametrize("env, client", [
    ({}, "203.0.113.5"),
    ({"TRUSTED_PROXIES": "203.0.113.0/24"}, "198.51.100.7"),
])
@pytest.mark.integration
def test_production_believes_no_forwarded_header_unless_told_and_every_limiter_agrees(env,
                                                                                     client):
    result = run(["-c", IDENTS], **PRODUCTION, **env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [client] * 4
