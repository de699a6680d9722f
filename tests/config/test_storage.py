"""DEFAULT_STORAGE=s3 switches Django's default storage to an S3 bucket (django-storages)."""

import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.integration  # each storage setting is read by a fresh `python -c`

PRINT_STORAGE = (
    "import django; django.setup(); from django.conf import settings as s; "
    "from django.core.files.storage import storages; d = storages['default']; "
    "print(type(d).__module__ + '.' + type(d).__name__); print(s.STORAGES['default']); "
    "print(d.url('submissions/1/results.jsonl') if hasattr(d, 'bucket_name') else '-')"
)
S3 = {"DEFAULT_STORAGE": "s3", "S3_BUCKET": "leaderboard-media",
      "S3_ENDPOINT_URL": "http://127.0.0.1:9000", "S3_REGION": "eu-west-1",
      "AWS_ACCESS_KEY_ID": "test-key-id", "AWS_SECRET_ACCESS_KEY": "test-secret"}


def load(**env):
    base = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings",
            "VAR_DIR": "/tmp/storage-test-var"}
    return subprocess.run([sys.executable, "-c", PRINT_STORAGE], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env={**base, **env})


def test_the_default_storage_is_the_filesystem():
    result = load()
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "django.core.files.storage.filesystem.FileSystemStorage"


def test_s3_puts_the_default_storage_in_the_bucket_behind_signed_urls():
    result = load(**S3)
    assert result.returncode == 0, result.stderr
    backend, options, url = result.stdout.splitlines()
    assert backend == "storages.backends.s3.S3Storage"
    assert "'bucket_name': 'leaderboard-media'" in options and "'default_acl': 'private'" in options
    # A private object is read through a signed, expiring URL (made offline, no request sent).
    assert url.startswith("http://127.0.0.1:9000/leaderboard-media/media/submissions/1/")
    assert "X-Amz-Signature=" in url and "X-Amz-Expires=" in url


def test_s3_without_a_bucket_stops_start_up():
    result = load(**{**S3, "S3_BUCKET": ""})
    assert result.returncode != 0
    assert "DEFAULT_STORAGE=s3 needs S3_BUCKET" in result.stderr


def test_an_unknown_storage_stops_start_up():
    result = load(DEFAULT_STORAGE="nfs")
    assert "DEFAULT_STORAGE='nfs' is not one of filesystem, s3" in result.stderr
