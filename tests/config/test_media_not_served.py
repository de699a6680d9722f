"""Uploads and audio leave only through access-checked views, never straight from MEDIA_ROOT."""

from pathlib import Path

import pytest
from django.conf import settings
from django.urls import Resolver404, URLPattern, URLResolver, get_resolver, resolve
from django.views.static import serve


def all_patterns(patterns, prefix=""):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from all_patterns(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern), pattern.callback


@pytest.fixture
def stored_audio(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    audio = settings.MEDIA_ROOT / "submissions" / "1" / "audio" / "out.wav"
    audio.parent.mkdir(parents=True)
    audio.write_bytes(b"RIFF private audio")
    return audio


@pytest.mark.parametrize("path", ["/media/submissions/1/audio/out.wav", "/media/",
                                  "/media/anything"])
def test_media_urls_are_not_served(client, staff, stored_audio, path):
    client.force_login(staff)  # not even to staff
    response = client.get(path)
    assert response.status_code == 404
    assert b"private audio" not in response.content


def test_no_url_serves_files_from_a_folder():
    patterns = list(all_patterns(get_resolver().url_patterns))
    assert patterns  # the walk found the site's urls
    assert [route for route, callback in patterns if callback is serve] == []
    assert not any(route.lstrip("^").startswith(settings.MEDIA_URL.strip("/"))
                   for route, _ in patterns)
    with pytest.raises(Resolver404):
        resolve(settings.MEDIA_URL + "submissions/1/audio/out.wav")


def test_static_files_are_kept_apart_from_media():
    media = settings.MEDIA_ROOT.resolve()
    # a STATICFILES_DIRS entry is a folder or (prefix, folder)
    folders = [entry[1] if isinstance(entry, tuple) else entry
               for entry in settings.STATICFILES_DIRS]
    assert len(folders) >= 2  # the site's own and Swagger UI's
    for folder in [settings.STATIC_ROOT, *folders]:
        folder = Path(folder).resolve()
        assert media != folder and folder not in media.parents and media not in folder.parents
    assert not getattr(settings, "WHITENOISE_ROOT", None)
