"""The board says who submitted each row, "verified" only for an account that logged in
through GitHub or Hugging Face, on the page and in the read API (JSON and CSV)."""

import csv
import io

import pytest
from allauth.socialaccount.models import SocialAccount

from tests.html import assert_in_html, select


@pytest.fixture
def rows(board, author, other_author):
    benchmark, score_by_slices = board
    score_by_slices("Alice Editor", (50.0, 60.0, 30.0), organisation="Sound Lab")
    score_by_slices("Bob Editor", (50.0, 60.0, 20.0), owner=other_author, organisation="")
    return benchmark


def _board(client):
    return {r["model"]: r for r in client.get("/api/leaderboards/mmae/").json()["rows"]}


def test_a_link_an_unlink_and_a_rename_show_at_once_on_a_board_already_kept(rows, client,
                                                                          author):
    """Nothing kept for the board's state before (every cache of the test settings) shows the
    owner as they were: each change raises the board's version (submissions.owners)."""
    assert _board(client)["Alice Editor"]["verified"] is False  # the board is now kept
    account = SocialAccount.objects.create(user=author, provider="github", uid="42")
    assert _board(client)["Alice Editor"]["verified"] is True
    author.username = "ada"
    author.save()
    assert _board(client)["Alice Editor"]["submitted_by"] == "ada"
    assert "ada" in client.get("/b/mmae/").content.decode()
    account.delete()
    assert _board(client)["Alice Editor"]["verified"] is False


def test_each_row_names_its_submitter_unverified_by_default(rows, client):
    found = _board(client)
    assert (found["Alice Editor"]["submitted_by"], found["Alice Editor"]["verified"]) \
        == ("author", False)
    assert (found["Bob Editor"]["submitted_by"], found["Bob Editor"]["verified"]) \
        == ("other_author", False)


@pytest.mark.parametrize("provider, verified", [
    ("github", True), ("huggingface", True), ("openid_connect", False), ("google", False)])
def test_a_github_or_hugging_face_log_in_marks_the_row_verified(rows, client, author,
                                                                provider, verified):
    SocialAccount.objects.create(user=author, provider=provider, uid="42")
    found = _board(client)
    assert found["Alice Editor"]["verified"] is verified
    assert found["Bob Editor"]["verified"] is False


def test_the_csv_has_the_submitter_too(rows, client, author):
    SocialAccount.objects.create(user=author, provider="github", uid="42")
    text = client.get("/api/leaderboards/mmae/?format=csv").content.decode()
    found = {r["model"]: r for r in csv.DictReader(io.StringIO(text))}
    assert (found["Alice Editor"]["submitted_by"], found["Alice Editor"]["verified"]) \
        == ("author", "True")
    assert (found["Bob Editor"]["submitted_by"], found["Bob Editor"]["verified"]) \
        == ("other_author", "False")


def test_the_page_shows_by_whom_under_the_model_name(rows, client, author):
    SocialAccount.objects.create(user=author, provider="huggingface", uid="42")
    html = client.get("/b/mmae/").content.decode()
    assert_in_html('<small class="by" title="by author, Sound Lab">by <bdi>author</bdi> <span '
                   'class="badge verified" title="logged in through GitHub or Hugging Face">'
                   'verified</span>, <bdi>Sound Lab</bdi></small>', html)
    assert_in_html('<small class="by" title="by other_author">by <bdi>other_author</bdi></small>',
                   html)
    assert len(select(html, "span.badge.verified")) == 1
