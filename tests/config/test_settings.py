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


def load(**env):
    base = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings",
            "VAR_DIR": "/tmp/settings-test-var"}
    return subprocess.run([sys.executable, "-c", PRINT_SETTINGS], cwd=ROOT,
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
    ({"JUDGE_LEASE_TTL": "0"}, "JUDGE_LEASE_TTL=0 is below the minimum 1"),
    ({"JUDGE_MAX_INFLIGHT_BYTES": "256MB"}, "JUDGE_MAX_INFLIGHT_BYTES='256MB' is not an integer"),
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
