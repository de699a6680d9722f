"""Settings come from the environment and fail loudly on bad values."""

import subprocess
import sys
from pathlib import Path

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


@pytest.mark.integration
def test_the_defaults_need_nothing_but_python():
    result = load()
    assert result.returncode == 0, result.stderr
    port, urls, engine, media, broker = result.stdout.split()
    assert port == "8000"
    assert urls == "['http://127.0.0.1:8001']"
    assert engine == "django.db.backends.sqlite3"
    assert media == "/tmp/settings-test-var/media"
    assert broker == "redis://127.0.0.1:6390/0"  # the Redis `make run` starts


@pytest.mark.integration
def test_values_from_the_environment_are_used():
    result = load(PORT="9000", JUDGE_BASE_URLS="http://a:1, http://b:2/",
                  DATABASE_URL="postgres://u@h:5432/db", MEDIA_ROOT="/tmp/settings-test-media",
                  REDIS_URL="redis://127.0.0.1:6379/0")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["9000", "['http://a:1',", "'http://b:2']",
                                     "django.db.backends.postgresql",
                                     "/tmp/settings-test-media",
                                     "redis://127.0.0.1:6379/0"]


def setting(name: str, **env) -> str:
    base = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings",
            "VAR_DIR": "/tmp/settings-test-var"}
    result = subprocess.run(
        # The settings module alone (apps not loaded: 50 ms, not 1.4 s), as each process
        # reads it first.
        [sys.executable, "-c", f"from django.conf import settings; print(settings.{name})"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, env={**base, **env})
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.integration
def test_uploads_stream_to_a_folder_under_media_root_unless_told_otherwise():
    assert setting("FILE_UPLOAD_TEMP_DIR") == "/tmp/settings-test-var/media/upload-tmp"
    assert setting("FILE_UPLOAD_TEMP_DIR", MEDIA_ROOT="/tmp/settings-test-media") == \
        "/tmp/settings-test-media/upload-tmp"
    moved = "/tmp/settings-test/../settings-test-up"
    assert setting("FILE_UPLOAD_TEMP_DIR", UPLOAD_TEMP_DIR=moved) == "/tmp/settings-test-up"
    assert Path("/tmp/settings-test-up").is_dir()  # made at start: Django's checks want it
    assert setting("UPLOAD_TEMP_MAX_AGE_SECONDS") == "21600"
    assert setting("UPLOAD_TEMP_MAX_AGE_SECONDS", UPLOAD_TEMP_MAX_AGE_SECONDS="600") == "600"


@pytest.mark.integration
def test_the_archive_limits_let_five_minutes_of_48_khz_stereo_through_by_default():
    assert int(setting("SUBMISSION_MAX_OUTPUT_BYTES")) >= 300 * 48_000 * 2 * 4  # even float32
    assert int(setting("SUBMISSION_MAX_SAMPLE_RATE")) >= 48_000
    assert int(setting("SUBMISSION_MAX_CHANNELS")) >= 2
    assert setting("SUBMISSION_MAX_COMPRESSION_RATIO", SUBMISSION_MAX_COMPRESSION_RATIO="50") \
        == "50"


@pytest.mark.parametrize("env, message", [
    ({"PORT": "eighty"}, "PORT='eighty' is not an integer"),
    ({"PORT": "70000"}, "PORT=70000 is above the maximum 65535"),
    ({"DATABASE_URL": "nosuchdb://x/y"}, "DATABASE_URL='nosuchdb://x/y' cannot be used"),
    ({"JUDGE_BASE_URLS": "127.0.0.1:8001"}, "JUDGE_BASE_URLS: '127.0.0.1:8001' is not an "
                                            "http(s) URL"),
    ({"CELERY_BROKER_URL": "amqp://guest@localhost//"}, "CELERY_BROKER_URL='amqp://guest@"),
    ({"DEBUG": "maybe"}, "DEBUG='maybe' is not a boolean"),
    ({"UPLOAD_TEMP_MAX_AGE_SECONDS": "5"}, "UPLOAD_TEMP_MAX_AGE_SECONDS=5 is below the "
                                           "minimum 60"),
    ({"SUBMISSION_MAX_OUTPUT_BYTES": "0"}, "SUBMISSION_MAX_OUTPUT_BYTES=0 is below the minimum"),
    ({"SUBMISSION_MAX_SAMPLE_RATE": "48k"}, "SUBMISSION_MAX_SAMPLE_RATE='48k' is not an "
                                            "integer"),
    ({"SUBMISSION_MAX_CHANNELS": "0"}, "SUBMISSION_MAX_CHANNELS=0 is below the minimum 1"),
    ({"SUBMISSION_MAX_COMPRESSION_RATIO": "0"}, "SUBMISSION_MAX_COMPRESSION_RATIO=0 is below "
                                                "the minimum 1"),
    ({"SUBMISSION_COMPRESSION_FLOOR_BYTES": "-1"}, "SUBMISSION_COMPRESSION_FLOOR_BYTES=-1 is "
                                                   "below the minimum 0"),
    ({"JUDGE_LEASE_TTL": "0"}, "JUDGE_LEASE_TTL=0 is below the minimum 1"),
    ({"JUDGE_MAX_INFLIGHT_BYTES": "256MB"}, "JUDGE_MAX_INFLIGHT_BYTES='256MB' is not an integer"),
])
@pytest.mark.integration
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


@pytest.mark.integration
def test_log_in_providers_are_off_without_their_keys():
    result = load_providers()
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["[]", "[]"]


@pytest.mark.integration
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
@pytest.mark.integration
def test_a_half_set_provider_or_a_bad_account_setting_stops_start_up(env, message):
    result = load_providers(**env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and message in result.stderr


@pytest.mark.integration
def test_the_response_cache_is_a_redis_database_of_its_own():
    assert setting("CACHES['responses']['LOCATION']",
                   REDIS_URL="redis://10.0.0.5:6379/2") == "redis://10.0.0.5:6379/3"
    assert setting("CACHES['responses']['LOCATION']", REDIS_URL="redis://r:6379/0",
                   RESPONSE_CACHE_URL="redis://cache:6379/0") == "redis://cache:6379/0"
    assert setting("CACHES['default']['LOCATION']",
                   REDIS_URL="redis://10.0.0.5:6379/2") == "redis://10.0.0.5:6379/2"
    # Without Redis, each process keeps a bounded number of entries.
    assert setting("CACHES['responses']['OPTIONS']['MAX_ENTRIES']",
                   RESPONSE_CACHE_ENTRIES="50") == "50"
