"""The author's status page once scored: figures, rank or why not, links; My submissions."""

from tests.conftest import CAST_PASSWORD


def login(client, user):
    assert client.login(username=user.username, password=CAST_PASSWORD)
    return client


def test_a_finished_submission_shows_its_figures_its_rank_and_its_pages(client, score_with_files,
                                                                      author):
    score_with_files("Better", emr=60.0)
    mine = score_with_files("Mine", emr=50.0)
    html = login(client, author).get(f"/submissions/{mine.pk}/").content.decode()
    standing = html[html.index('id="standing"'):]
    assert "EMR</span><span class=\"value\">50.00" in standing
    assert "2 <small>of 2</small>" in standing
    assert f'href="/s/{mine.pk}/"' in standing and 'href="/b/mmae/"' in standing


def test_a_private_submission_says_why_it_has_no_rank(client, score_with_files, author):
    mine = score_with_files("Mine", public=False)
    html = login(client, author).get(f"/submissions/{mine.pk}/").content.decode()
    assert "Not on the board: private" in html and "Its page</a> (only you and staff" in html


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
    assert "Make public" not in html and 'id="standing"' not in html
