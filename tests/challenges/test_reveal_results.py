"""The reveal's results: the organizers' Reveal button (POST, typed confirmation) and
`manage.py reveal` keep each board's final official rows in its public reveal record, take a
dated snapshot of each board once the change commits, and e-mail every participant of the
phase their team's standing; the public results page then shows the final boards with their
verification states and Rank Delta."""

import pytest
from django.core import mail
from django.core.mail import EmailMessage
from django.core.management import call_command

from audit.models import AuditEvent
from challenges import organizer_services
from challenges.models import Phase, RevealNotice, Verification
from challenges.reveal import participants_notify, reveal_mail
from config.errors import ServiceError
from leaderboard.models import BoardSnapshot
from tests.challenges.challenge_factories import add_team, build_challenge, enter
from tests.factories import board_benchmark

pytestmark = pytest.mark.django_db


@pytest.fixture
def built(author):
    built = build_challenge(organizer=author, tracks=("single",))
    for name, dev, final in (("Alpha", 0.9, 0.4), ("Bravo", 0.5, 0.8), ("Charlie", 0.3, 0.6)):
        add_team(built, name)
        enter(built, name, "development", "single", (0.5, 0.5, dev))
        enter(built, name, "final", "single", (0.5, 0.5, final))
    add_team(built, "Idle")  # no entry in the final phase: not a participant of it
    Verification.objects.create(phase=built.final, team=built.teams["Charlie"],
                                state=Verification.State.DISQUALIFIED,
                                reason="the package's code does not run")
    return built


def test_the_reveal_button_refuses_without_confirmation_and_to_others(client, built, author):
    client.force_login(built.members["Alpha"])
    assert client.post("/c/icassp/manage/phases/final/reveal/",
                       {"confirm": "final"}).status_code == 404
    client.force_login(author)
    overview = client.get("/c/icassp/manage/").content.decode()
    assert 'action="/c/icassp/manage/phases/final/reveal/"' in overview
    refused = client.post("/c/icassp/manage/phases/final/reveal/", {"confirm": "yes"})
    assert refused.status_code == 400 and "type final to confirm" in refused.content.decode()
    assert Phase.objects.get(pk=built.final.pk).revealed_at is None
    assert not mail.outbox


def test_the_reveal_snapshots_each_board_and_emails_every_participant(
        client, built, author, django_capture_on_commit_callbacks):
    client.force_login(author)
    with django_capture_on_commit_callbacks(execute=True):
        page = client.post("/c/icassp/manage/phases/final/reveal/", {"confirm": "final"})
    assert page.status_code == 302 and page["Location"] == "/c/icassp/results/"
    final = built.board("final", "single").benchmark
    final.refresh_from_db()
    assert not final.rubrics_hidden
    snapshot = BoardSnapshot.objects.get(benchmark=final)
    assert snapshot.board_version == final.board_version and snapshot.taken_at is not None
    # The final official rows, kept in the board's public reveal record.
    event = AuditEvent.objects.get(action="reveal", benchmark_slug=final.slug)
    assert event.public and event.actor == author
    official = event.after["official"]
    assert [(r["team"], r["rank"], r["rank_delta"]) for r in official["ranked"]] == [
        ("Bravo", 1, 2 - 1), ("Alpha", 2, 1 - 2)]
    assert [(r["team"], r["reason"]) for r in official["disqualified"]] == [
        ("Charlie", "the package's code does not run")]
    # One e-mail each to the members of the teams with entries, to their address alone, by
    # the task the reveal queued (run here as a worker runs it).
    assert not mail.outbox
    reveal_mail(built.final.pk)
    assert sorted(m.to[0] for m in mail.outbox) == [
        "alpha@example.com", "bravo@example.com", "charlie@example.com"]
    bravo = next(m for m in mail.outbox if m.to == ["bravo@example.com"])
    assert "the results of Final are public" in bravo.subject
    assert "Single: rank 1 of 2 (Rank Delta +1)" in bravo.body
    assert "/c/icassp/results/" in bravo.body
    charlie = next(m for m in mail.outbox if m.to == ["charlie@example.com"])
    assert "disqualified (the package's code does not run)" in charlie.body
    # The public results page: final boards, verification states, Rank Delta.
    client.logout()
    text = client.get("/c/icassp/results/").content.decode()
    assert "Rank Delta" in text and "+1" in text and "0.80" in text
    assert "the package&#x27;s code does not run" in text
    assert f"/b/{final.slug}/v/{snapshot.board_version}/" in text


def test_manage_py_reveal_does_the_same(built, django_capture_on_commit_callbacks, capsys):
    with django_capture_on_commit_callbacks(execute=True):
        call_command("reveal", "icassp")
    assert "revealed" in capsys.readouterr().out
    assert BoardSnapshot.objects.filter(
        benchmark=built.board("final", "single").benchmark).count() == 1
    reveal_mail(built.final.pk)
    assert len(mail.outbox) == 3
    assert AuditEvent.objects.get(action="reveal").actor is None


def test_a_revealed_phase_keeps_its_times_and_boards(client, built, author):
    Phase.objects.filter(pk=built.final.pk).update(revealed_at=built.final.closes_at)
    phase = Phase.objects.get(pk=built.final.pk)
    fields = {k: getattr(phase, k) for k in organizer_services.PHASE_FIELDS}
    with pytest.raises(ServiceError, match="only its name may change"):
        organizer_services.phase_save(challenge=built.challenge, actor=author, phase=phase,
                                      fields={**fields, "closes_at": phase.closes_at
                                              + (phase.closes_at - phase.opens_at)})
    renamed = organizer_services.phase_save(challenge=built.challenge, actor=author,
                                            phase=phase, fields={**fields, "name": "Finals"})
    assert renamed.name == "Finals"
    board_benchmark(slug="late-board")
    client.force_login(author)
    page = client.post("/c/icassp/manage/phases/final/boards/",
                       {"track": built.tracks["single"].pk, "benchmark": "late-board"})
    assert page.status_code == 400 and "was revealed" in page.content.decode()
    assert 'action="/c/icassp/manage/phases/final/reveal/"' not in \
        client.get("/c/icassp/manage/").content.decode()


def test_a_mail_server_failing_midway_is_retried_and_mails_nobody_twice(
        built, django_capture_on_commit_callbacks, monkeypatch, settings):
    settings.CHALLENGE_EMAIL_RETRY_SECONDS = 0
    with django_capture_on_commit_callbacks(execute=True):
        call_command("reveal", "icassp")
    send = EmailMessage.send
    failing = {"left": 1}

    def flaky(message, *args, **kwargs):
        if message.to == ["bravo@example.com"] and failing["left"]:
            failing["left"] -= 1
            raise ConnectionRefusedError("the mail server is down")
        return send(message, *args, **kwargs)

    monkeypatch.setattr(EmailMessage, "send", flaky)
    with pytest.raises(ConnectionRefusedError):
        participants_notify(built.final)  # one try of the task: it stops at the failure
    assert [m.to for m in mail.outbox] == [["alpha@example.com"]]
    assert participants_notify(built.final) == 2  # its retry mails only those left
    assert sorted(m.to[0] for m in mail.outbox) == [
        "alpha@example.com", "bravo@example.com", "charlie@example.com"]
    assert participants_notify(built.final) == 0
    assert RevealNotice.objects.filter(phase=built.final).count() == 3
