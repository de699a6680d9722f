"""A published submission's explorer through the front (config/page_cache.py): its page, its list
partial and a sample's table answered again to anonymous visitors with no database query once
nothing on them can change without the board's version (every spectrogram drawn); made
private (as every moderation and rescore, it raises the version), it stops being answered
from the change's commit; signed-in visitors and private submissions are always Django's."""

import pytest

from scoring.tasks import draw_input_spectrograms
from submissions.moderation import submission_set_public
from submissions.services import draw_output_spectrograms
from tests.config.test_page_cache import call, clock, django_app, front, queries  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def drawn(served, settings, tmp_path):
    """The served submission (tests/leaderboard/conftest.py) with its spectrograms drawn."""
    settings.MEDIA_ROOT = tmp_path / "media"
    submission = served["submission"]
    draw_input_spectrograms.apply((submission.benchmark_id,))
    draw_output_spectrograms.apply((submission.pk,))
    return submission


def urls(submission, key) -> list[str]:
    return [f"/s/{submission.pk}/", f"/s/{submission.pk}/?failed=1",
            f"/s/{submission.pk}/samples/?page=1",
            f"/s/{submission.pk}/samples/{key}/rubrics/"]


@pytest.mark.slow
@pytest.mark.parametrize("which", range(4))
def test_a_published_explorer_page_is_answered_again_with_no_query(
        which, front, drawn, served, django_assert_num_queries):  # noqa: F811
    url = urls(drawn, served["key"])[which]
    first = call(front, url, headers={"Accept-Encoding": "gzip"})
    assert first.status == 200 and "public" in first.header("Cache-Control")
    with django_assert_num_queries(0):
        again = call(front, url, headers={"Accept-Encoding": "gzip"})
    assert (again.status, again.headers, again.body) == (first.status, first.headers,
                                                         first.body)
    # The list partial varies on HX-Request: an htmx request is its own entry.
    fragment = {"HX-Request": "true"}
    if "/samples/" in url:
        assert queries(front, url, headers=fragment) > 0
        with django_assert_num_queries(0):
            call(front, url, headers=fragment)


@pytest.mark.slow
def test_revalidation_and_head(front, drawn, django_assert_num_queries):  # noqa: F811
    url = f"/s/{drawn.pk}/"
    full = call(front, url)
    etag = full.header("ETag")
    call(front, url, headers={"If-None-Match": etag})  # Django's 304, kept
    with django_assert_num_queries(0):
        revalidated = call(front, url, headers={"If-None-Match": etag})
        head = call(front, url, method="HEAD")
    assert revalidated.status == 304 and revalidated.body == b""
    assert head.status == 200 and head.body == b"" and head.headers == full.headers


@pytest.mark.slow
def test_a_page_with_a_spectrogram_being_drawn_is_never_kept(front, served, settings,  # noqa: F811
                                                             tmp_path):
    """Drawing finishes without a board change: kept, the page would say "being drawn" on."""
    settings.MEDIA_ROOT = tmp_path / "media"
    url = f"/s/{served['submission'].pk}/"
    first = call(front, url)
    assert first.status == 200 and b"spectrogram being drawn" in first.body
    assert "public" not in first.header("Cache-Control")
    assert queries(front, url) > 0
    draw_input_spectrograms.apply((served["submission"].benchmark_id,))
    draw_output_spectrograms.apply((served["submission"].pk,))
    assert b"spectrogram being drawn" not in call(front, url).body


@pytest.mark.slow
def test_made_private_it_is_gone_at_once(front, drawn, served, author,  # noqa: F811
                                         django_capture_on_commit_callbacks):
    kept = urls(drawn, served["key"])
    for url in kept:
        call(front, url)
        assert call(front, url).status == 200  # the front's
    with django_capture_on_commit_callbacks(execute=True):
        submission_set_public(actor=author, submission=drawn, public=False)
    assert [call(front, url).status for url in kept] == [404] * len(kept)


@pytest.mark.slow
def test_signed_in_visitors_and_private_pages_are_djangos(front, drawn, client, author,  # noqa: F811
                                                          other_author,
                                                          django_capture_on_commit_callbacks):
    client.force_login(other_author)
    session = {"Cookie": f"sessionid={client.cookies['sessionid'].value}"}
    url = f"/s/{drawn.pk}/"
    assert "private" in call(front, url, headers=session).header("Cache-Control")
    assert queries(front, url, headers=session) > 0
    # The author's own private submission: Django's for them, 404 for anyone else.
    with django_capture_on_commit_callbacks(execute=True):
        submission_set_public(actor=author, submission=drawn, public=False)
    client.force_login(author)
    mine = {"Cookie": f"sessionid={client.cookies['sessionid'].value}"}
    assert call(front, url, headers=mine).status == 200
    assert queries(front, url, headers=mine) > 0
    assert call(front, url).status == 404
