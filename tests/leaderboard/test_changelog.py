"""/b/<slug>/changelog/: the public events of a benchmark, never private details."""

import pytest

from audit.models import AuditEvent
from audit.services import audit_record
from submissions import moderation
from tests.html import one, select


def changelog(client):
    """The changelog's table."""
    page = client.get("/b/mmae/changelog/")
    assert page.status_code == 200
    return one(page, "table#changelog")


def test_the_board_links_its_changelog(client, board):
    assert select(client.get("/b/mmae/"), 'a[href="/b/mmae/changelog/"]')


def test_an_empty_changelog_says_so(client, board):
    assert "No change recorded on this board yet." in changelog(client).text


def test_flags_hidden_and_deleted_submissions_show_with_their_reasons(client, board, staff):
    _, score_by_slices = board
    flagged, hidden, deleted = (score_by_slices(name, (50.0, 40.0, 30.0))
                                for name in ("Echo Editor", "Vox Remix", "Tone Shifter"))
    moderation.submission_flag(actor=staff, submission=flagged, reason="copied outputs")
    moderation.submission_hide(actor=staff, submission=hidden, reason="duplicate upload")
    moderation.submission_delete(actor=staff, submission=deleted, reason="author's request")
    table = changelog(client)
    for expected in ("flagged", "copied outputs", "hidden from the board", "duplicate upload",
                     "deleted", "author's request", "Tone Shifter"):
        assert expected in table.text, expected
    assert table.select(f'a[href="/s/{flagged.pk}/"]')
    # Newest first.
    rows = [row.text for row in table.select("tbody tr")]
    assert [i for i, row in enumerate(rows) if "author's request" in row] < \
        [i for i, row in enumerate(rows) if "copied outputs" in row]


def test_rescoring_and_judge_config_events_show(client, board, staff):
    benchmark, score_by_slices = board
    submission = score_by_slices("Echo Editor", (50.0, 40.0, 30.0))
    audit_record(actor=staff, action=AuditEvent.Action.RESCORE, obj=submission,
                 reason="judge fix", benchmark_slug="mmae", public=True)
    audit_record(actor=staff, action=AuditEvent.Action.JUDGE_CONFIG, obj=benchmark,
                 reason="new judge prompt", benchmark_slug="mmae", public=True)
    text = changelog(client).text
    assert "rescored" in text and "judge fix" in text
    assert "judge config changed" in text and "new judge prompt" in text


def test_private_submissions_quotas_and_authors_choices_stay_off_it(client, board, staff,
                                                                     author):
    _, score_by_slices = board
    secret = score_by_slices("Secret Model", (50.0, 40.0, 30.0), public=False)
    shown = score_by_slices("Shown Model", (50.0, 40.0, 30.0))
    moderation.submission_flag(actor=staff, submission=secret, reason="private flag reason")
    moderation.submission_hide(actor=staff, submission=secret, reason="private hide reason")
    moderation.quota_override(actor=staff, user=author, per_day=99, in_flight=None,
                              reason="quota reason")
    moderation.submission_set_public(actor=author, submission=shown, public=False)
    table = changelog(client)
    for hidden in ("Secret Model", "private flag reason", "private hide reason",
                   "quota reason", "Shown Model", "staff"):
        assert hidden not in table.all_text, hidden
    assert "No change recorded on this board yet." in table.text
    assert AuditEvent.objects.count() == 4  # all of it is in the staff's audit log


def test_another_benchmarks_events_stay_off_it(client, board, staff):
    _, score_by_slices = board
    submission = score_by_slices("Echo Editor", (50.0, 40.0, 30.0))
    audit_record(actor=staff, action=AuditEvent.Action.RESCORE, obj=submission,
                 reason="elsewhere", benchmark_slug="airbench", public=True)
    assert "elsewhere" not in changelog(client).all_text


@pytest.mark.parametrize(("url", "code"), [("/b/nope/changelog/", 404),
                                            ("/b/mmae/changelog/?page=0", 400)])
def test_an_unknown_benchmark_or_bad_page_is_refused(client, board, url, code):
    assert client.get(url).status_code == code


def test_a_long_changelog_is_paged(client, board, staff):
    from leaderboard.pages import history_views as module

    _, score_by_slices = board
    submission = score_by_slices("Echo Editor", (50.0, 40.0, 30.0))
    for i in range(3):
        audit_record(actor=staff, action=AuditEvent.Action.RESCORE, obj=submission,
                     reason=f"pass {i}", benchmark_slug="mmae", public=True)
    original, module.CHANGELOG_PAGE_SIZE = module.CHANGELOG_PAGE_SIZE, 2
    try:
        first = client.get("/b/mmae/changelog/").content.decode()
        second = client.get("/b/mmae/changelog/?page=2").content.decode()
    finally:
        module.CHANGELOG_PAGE_SIZE = original
    assert "pass 2" in first and "pass 1" in first and "pass 0" not in first
    assert "pass 0" in second and "page 2 of 2" in second


def test_a_hidden_submissions_name_is_withheld_in_every_event(client, board, staff):
    _, score_by_slices = board
    named = score_by_slices("Rude Name Model", (50.0, 40.0, 30.0))
    moderation.submission_flag(actor=staff, submission=named, reason="its name")
    assert "Rude Name Model" in changelog(client).text
    moderation.submission_hide(actor=staff, submission=named, reason="an offensive name")
    table = changelog(client)
    assert "Rude Name Model" not in table.all_text
    assert table.text.count(f"submission {named.pk} (name withheld: hidden by staff)") == 2
    assert table.select(f'[href="/s/{named.pk}/"]') == [] and "an offensive name" in table.text
    moderation.submission_hide(actor=staff, submission=named, reason="renamed", hidden=False)
    assert "Rude Name Model" in changelog(client).text
