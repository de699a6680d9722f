"""DJANGO_ENV=production: HTTPS only, a real key, and `check --deploy` without a warning."""

import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.integration  # each setting is read by a fresh `python -c` or manage.py

STRONG_KEY = "k3y-" + "Zq8vR2mW5tY1uI4oP7aS0dF3gH6jK9lX2cV5bN8mQ1wE4rT7yU"
PRODUCTION = {"DJANGO_ENV": "production", "SECRET_KEY": STRONG_KEY,
              "REDIS_URL": "redis://127.0.0.1:6379/0",
              "ALLOWED_HOSTS": "leaderboard.example.org"}
# The settings module alone (no app loaded: a tenth of a second, not seconds), as each
# process reads it first.
PRINT_SECURITY = (
    "from django.conf import settings as s; "
    "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_SSL_REDIRECT, "
    "s.SECURE_HSTS_SECONDS, s.SECURE_HSTS_INCLUDE_SUBDOMAINS, s.SECURE_HSTS_PRELOAD, "
    "s.SECURE_PROXY_SSL_HEADER, len(s.TRUSTED_PROXIES), s.RATELIMIT_IP_META_KEY)"
)


def run(args: list[str], **env):
    base = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings",
            "VAR_DIR": "/tmp/production-test-var"}
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**base, **env})


def check_deploy(**env):
    return run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], **env)


def test_check_deploy_passes_with_production_settings():
    result = check_deploy(**PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


@pytest.mark.parametrize("env, warning", [
    ({"SECURE_HSTS_SECONDS": "0"}, "security.W004"),
    ({"SECURE_SSL_REDIRECT": "false"}, "security.W008"),
    ({"SECRET_KEY": "short-key"}, "security.W009"),
    ({"ALLOWED_HOSTS": ""}, "security.W020"),
])
def test_check_deploy_fails_on_a_weakened_setting(env, warning):
    result = check_deploy(**{**PRODUCTION, **env})
    assert result.returncode == 1
    assert warning in result.stderr


def test_check_deploy_fails_without_the_production_switch():
    result = check_deploy(**{k: v for k, v in PRODUCTION.items() if k != "DJANGO_ENV"})
    assert result.returncode == 1
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in result.stderr


def test_production_turns_on_https_settings_behind_the_proxy():
    result = run(["-c", PRINT_SECURITY], **PRODUCTION)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "True", "True", "True", "31536000", "True", "True",
        "('HTTP_X_FORWARDED_PROTO',", "'https')", "0", "config.throttle.client_ip"]


def test_development_keeps_plain_http_and_ignores_forwarded_headers():
    result = run(["-c", PRINT_SECURITY])
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False", "False", "0", "False", "False", "None",
                                     "0", "config.throttle.client_ip"]


@pytest.mark.parametrize("env, message", [
    ({"SECRET_KEY": ""}, "DJANGO_ENV=production needs SECRET_KEY: the built-in fallback"),
    ({"SECRET_KEY": None}, "DJANGO_ENV=production needs SECRET_KEY: the built-in fallback"),
    ({"DEBUG": "1"}, "DJANGO_ENV=production refuses DEBUG=true"),
    ({"REDIS_URL": None}, "DJANGO_ENV=production needs REDIS_URL"),
    ({"DJANGO_ENV": "prod"}, "DJANGO_ENV='prod' is not one of development, production"),
])
def test_production_refuses_an_unsafe_start(env, message):
    settings_env = {k: v for k, v in {**PRODUCTION, **env}.items() if v is not None}
    result = check_deploy(**settings_env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert message in result.stderr
