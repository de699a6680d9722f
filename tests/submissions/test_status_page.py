"""The author's status page once scored: figures, rank or why not, links; My submissions."""

from tests.conftest import CAST_PASSWORD
from tests.html import one, select, texts


def login(client, user):
    assert client.login(username=user.username, password=CAST_PASSWORD)
    return client


def stats(standing) -> dict[str, str]:
    """The standing's figures and rank, by label."""
    return {stat.one(".label").text: stat.one(".value").text
            for stat in standing.select(".stat")}


def test_a_finished_submission_shows_its_figures_its_rank_and_its_pages(client, score_with_files,
                                                                      author):
    score_with_files("Better", emr=60.0)
    mine = score_with_files("Mine", emr=50.0)
    html = login(client, author).get(f"/submissions/{mine.pk}/").content.decode()
    standing = one(html, "#standing")
    assert stats(standing)["EMR"] == "50.00"
    assert stats(standing)["Rank"] == "2 of 2" and texts(standing, ".value small") == ["of 2"]
    assert select(standing, f'a[href="/s/{mine.pk}/"]') and select(standing, 'a[href="/b/mmae/"]')


def test_a_private_submission_says_why_it_has_no_rank(client, score_with_files, author):
    mine = score_with_files("Mine", public=False)
    html = login(client, author).get(f"/submissions/{mine.pk}/").content.decode()
    standing = one(html, "#standing")
    assert one(standing, "p.aside").text.startswith("Not on the board: private")
    link = one(standing, f'a[href="/s/{mine.pk}/"]')
    assert link.text == "Its page" and f"{link.text} (only you and staff see it)" in \
        link.parent.text


def test_my_submissions_shows_each_ones_headline_figure(client, score_with_files, author):
    score_with_files("Mine", emr=42.5)
    html = login(client, author).get("/submissions/").content.decode()
    assert "EMR 42.50" in html


def test_a_rejected_submission_offers_no_make_public(client, make_submission, author,
                                                     small_bench):
    from submissions.models import Submission
    from submissions.services import submission_validate

    submission = make_submission(author, archive=b"PK\x03\x04 but not an archive")
    submission_validate(submission.pk)
    assert Submission.objects.get(pk=submission.pk).status == "rejected"
    html = login(client, author).get(f"/submissions/{submission.pk}/").content.decode()
    assert "Make public" not in html and select(html, "#standing") == []
