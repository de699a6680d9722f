"""Settings come from the environment and fail loudly on bad values."""

import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_int, parse_base_urls
from tests.conftest import ROOT

PRINT_SETTINGS = (
    "import django; django.setup(); from django.conf import settings as s; "
    "print(s.PORT, s.JUDGE_BASE_URLS, s.DATABASES['default']['ENGINE'], s.MEDIA_ROOT, "
    "s.CELERY_BROKER_URL)"
)


def load(script=PRINT_SETTINGS, **env):
    base = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings",
            "VAR_DIR": "/tmp/settings-test-var"}
    return subprocess.run([sys.executable, "-c", script], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, env={**base, **env})


def test_the_defaults_need_nothing_but_python():
    result = load()
    assert result.returncode == 0, result.stderr
    port, urls, engine, media, broker = result.stdout.split()
    assert port == "8000"
    assert urls == "['http://127.0.0.1:8001']"
    assert engine == "django.db.backends.sqlite3"
    assert media == "/tmp/settings-test-var/media"
    assert broker == "filesystem://"


def test_values_from_the_environment_are_used():
    result = load(PORT="9000", JUDGE_BASE_URLS="http://a:1, http://b:2/",
                  DATABASE_URL="postgres://u@h:5432/db", MEDIA_ROOT="/srv/media",
                  REDIS_URL="redis://127.0.0.1:6379/0")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["9000", "['http://a:1',", "'http://b:2']",
                                     "django.db.backends.postgresql", "/srv/media",
                                     "redis://127.0.0.1:6379/0"]


@pytest.mark.parametrize("env, message", [
    ({"PORT": "eighty"}, "PORT='eighty' is not an integer"),
    ({"PORT": "70000"}, "PORT=70000 is above the maximum 65535"),
    ({"DATABASE_URL": "nosuchdb://x/y"}, "DATABASE_URL='nosuchdb://x/y' cannot be used"),
    ({"JUDGE_BASE_URLS": "127.0.0.1:8001"}, "JUDGE_BASE_URLS: '127.0.0.1:8001' is not an "
                                            "http(s) URL"),
    ({"CELERY_BROKER_URL": "amqp://guest@localhost//"}, "CELERY_BROKER_URL='amqp://guest@"),
    ({"DEBUG": "maybe"}, "DEBUG='maybe' is not a boolean"),
])
def test_a_bad_value_stops_start_up_naming_the_variable(env, message):
    result = load(**env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert message in result.stderr


def test_helpers(monkeypatch):
    monkeypatch.setenv("FLAG", "yes")
    monkeypatch.setenv("COUNT", "-1")
    assert env_bool("FLAG", False) is True
    with pytest.raises(ImproperlyConfigured, match="COUNT=-1 is below the minimum 0"):
        env_int("COUNT", 3, minimum=0)
    with pytest.raises(ImproperlyConfigured, match="the same URL is listed twice"):
        parse_base_urls("http://a:1,http://a:1")
    with pytest.raises(ImproperlyConfigured, match="has an invalid port"):
        parse_base_urls("http://a:99999")
    assert parse_base_urls(" http://a:1/ ,, https://b ") == ["http://a:1", "https://b"]


PRINT_PROVIDERS = (
    "import django; django.setup(); from django.conf import settings as s; "
    "p = s.SOCIALACCOUNT_PROVIDERS; print(sorted(p)); "
    "print([(a.get('provider_id', k), a['client_id'], a.get('settings')) "
    "for k in sorted(p) for a in p[k]['APPS']])"
)


def load_providers(**env):
    return load(PRINT_PROVIDERS, **env)


def test_log_in_providers_are_off_without_their_keys():
    result = load_providers()
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["[]", "[]"]


def test_each_log_in_provider_comes_with_its_keys():
    result = load_providers(GITHUB_CLIENT_ID="gh-id", GITHUB_CLIENT_SECRET="gh-secret",
                            HUGGINGFACE_CLIENT_ID="hf-id", HUGGINGFACE_CLIENT_SECRET="hf-s")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "['github', 'openid_connect']",
        "[('github', 'gh-id', None), ('huggingface', 'hf-id', "
        "{'server_url': 'https://huggingface.co'})]"]


@pytest.mark.parametrize("env, message", [
    ({"GITHUB_CLIENT_ID": "gh-id"}, "GITHUB_CLIENT_SECRET is missing: set both "
                                    "GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET, or neither"),
    ({"HUGGINGFACE_CLIENT_SECRET": "s"}, "HUGGINGFACE_CLIENT_ID is missing"),
    ({"ACCOUNT_EMAIL_VERIFICATION": "sometimes"},
     "ACCOUNT_EMAIL_VERIFICATION='sometimes' is not one of mandatory, optional, none"),
    ({"TRUSTED_PROXIES": "10.0.0.1,proxy"}, "TRUSTED_PROXIES: 'proxy' is not an IP address"),
])
def test_a_half_set_provider_or_a_bad_account_setting_stops_start_up(env, message):
    result = load_providers(**env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and message in result.stderr
