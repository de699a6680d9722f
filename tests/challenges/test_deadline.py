"""The deadline: an upload is received when its last byte has arrived (a request begun before
the closing instant whose body ends after it is late), a validation retried after the deadline
keeps its entry's instant, and the freeze (challenges.tasks) keeps each board as a citable
snapshot once, however often and however many times at once it runs."""

import io
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken
from audit.models import AuditEvent
from challenges import tasks, teams
from challenges.models import Entry, Phase, PhaseBoard
from challenges.selectors import counting_entries
from leaderboard.models import BoardSnapshot
from submissions.models import Submission
from submissions.services import submission_validate, submission_validation_broke
from tests.challenges.test_entries import ATTESTATIONS, build_challenge, files, upload


@pytest.fixture
def world(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.SUBMISSIONS_PER_DAY = 100
    settings.SUBMISSIONS_IN_FLIGHT = 100
    return build_challenge(tmp_path / "set", per_day=10)


@pytest.fixture
def team(world, author):
    made = teams.team_create(challenge=world["challenge"], user=author, name="Waveforms")
    teams.track_enter(team=made, track=world["track"], user=author, attested=ATTESTATIONS)
    return made


class Clock:
    """timezone.now, moved by the test."""

    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now


class TrickledBody(io.RawIOBase):
    """A request body that arrives in pieces; `on_last` runs as its last byte is read (the
    clock moves past the deadline meanwhile)."""

    def __init__(self, data: bytes, on_last):
        self.data, self.at, self.on_last = data, 0, on_last

    def readable(self):
        return True

    def read(self, size=-1):
        size = len(self.data) - self.at if size is None or size < 0 else min(size, 4096)
        piece = self.data[self.at:self.at + size]
        self.at += len(piece)
        if piece and self.at == len(self.data):
            self.on_last()
        return piece

    def readline(self, size=-1):
        return self.read(size)


@pytest.mark.django_db
@pytest.mark.parametrize("door", ["page", "api"])
def test_an_upload_whose_body_ends_after_the_deadline_is_late(world, team, author, client,
                                                             monkeypatch, door):
    """The request begins a second before the closing instant; its body's last byte comes
    two seconds after it. Whichever server hands the body over (as it arrives, here), the
    entry is received when the body had fully arrived: late."""
    closes = world["phase"].closes_at
    clock = Clock(closes - timedelta(seconds=1))
    monkeypatch.setattr(timezone, "now", clock)
    predictions, archive = files(world)
    fields = {"model_name": "Waveforms", "predictions": predictions, "audio": archive}
    body = encode_multipart(BOUNDARY, fields)

    def last_byte():
        clock.now = closes + timedelta(seconds=1)

    trickle = TrickledBody(body, last_byte)
    extra = {"wsgi.input": trickle, "CONTENT_LENGTH": str(len(body))}
    if door == "page":
        client.force_login(author)
        response = client.generic("POST", "/c/icassp/final/agent/submit/", body,
                                  content_type=MULTIPART_CONTENT, **extra)
        assert response.status_code == 302, response.content
    else:
        _, key = ApiToken.issue(user=author, name="test")
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        response = api.generic("POST", "/c/icassp/api/final/agent/entries/", body,
                               content_type=MULTIPART_CONTENT, **extra)
        assert response.status_code == 201, response.content
        assert response.json()["late"] is True
    entry = Entry.objects.get()
    assert entry.late and entry.received_at == closes + timedelta(seconds=1)
    assert counting_entries(world["board"]) == {}


@pytest.mark.django_db
def test_an_upload_whose_body_ends_before_the_deadline_is_on_time(world, team, author,
                                                                  client, monkeypatch):
    closes = world["phase"].closes_at
    clock = Clock(closes - timedelta(seconds=3))
    monkeypatch.setattr(timezone, "now", clock)
    predictions, archive = files(world)
    body = encode_multipart(BOUNDARY, {"model_name": "Waveforms", "predictions": predictions,
                                       "audio": archive})

    def last_byte():
        clock.now = closes - timedelta(microseconds=1)

    client.force_login(author)
    response = client.generic("POST", "/c/icassp/final/agent/submit/", body,
                              content_type=MULTIPART_CONTENT,
                              **{"wsgi.input": TrickledBody(body, last_byte),
                                 "CONTENT_LENGTH": str(len(body))})
    assert response.status_code == 302
    clock.now = closes + timedelta(hours=1)  # the page answered after it: no matter
    entry = Entry.objects.get()
    assert not entry.late and entry.received_at == closes - timedelta(microseconds=1)


@pytest.mark.django_db
def test_a_validation_retried_after_the_deadline_keeps_the_entry_on_time(world, team, author,
                                                                        monkeypatch):
    closes = world["phase"].closes_at
    clock = Clock(closes - timedelta(minutes=1))
    monkeypatch.setattr(timezone, "now", clock)
    entry = upload(world, author)
    received = entry.received_at
    # Its validation starts before the deadline and breaks on our side...
    Submission.objects.filter(pk=entry.submission_id).update(
        status=Submission.Status.VALIDATING, heartbeat_at=clock.now)
    assert submission_validation_broke(entry.submission_id)
    # ...and is retried after it.
    clock.now = closes + timedelta(minutes=5)
    assert submission_validate(entry.submission_id) is True
    entry.refresh_from_db()
    assert entry.submission.status == Submission.Status.QUEUED
    assert entry.received_at == received and not entry.late
    assert counting_entries(world["board"])[team.pk] == entry


@pytest.mark.django_db
def test_the_freeze_keeps_each_board_once(world, team, author, django_capture_on_commit_callbacks):
    upload(world, author)
    phase = world["phase"]
    assert tasks.phases_due() == []  # still open
    Phase.objects.filter(pk=phase.pk).update(opens_at=timezone.now() - timedelta(days=2),
                                             closes_at=timezone.now() - timedelta(seconds=1))
    assert tasks.phases_due() == [phase.pk]
    version = world["benchmark"].board_version
    with django_capture_on_commit_callbacks():
        assert tasks.freeze_phases() == 1
        assert tasks.freeze_phases() == 0  # a second sweep: nothing to do
        assert tasks.phase_freeze(phase.pk) is False
    phase.refresh_from_db()
    board = PhaseBoard.objects.get()
    assert phase.frozen_at is not None and board.frozen_version == version
    snapshot = BoardSnapshot.objects.get()
    assert snapshot.benchmark == world["benchmark"] and snapshot.board_version == version
    (event,) = AuditEvent.objects.filter(action=AuditEvent.Action.CHALLENGE,
                                         object_type="challenges.phase")
    assert event.public and event.benchmark_slug == "final-agent"
    assert event.after["frozen_version"] == version
    world["benchmark"].refresh_from_db()
    assert world["benchmark"].board_version == version + 1  # its changelog line shows
    assert tasks.phases_due() == []


@pytest.mark.django_db
def test_a_board_that_keeps_changing_leaves_the_phase_to_the_next_sweep(world, monkeypatch):
    Phase.objects.filter(pk=world["phase"].pk).update(
        opens_at=timezone.now() - timedelta(days=2), closes_at=timezone.now() - timedelta(1))
    monkeypatch.setattr(tasks, "snapshot_take", lambda benchmark: None)
    assert tasks.freeze_phases() == 0
    assert Phase.objects.get().frozen_at is None and PhaseBoard.objects.get().frozen_version \
        is None
    assert not AuditEvent.objects.filter(object_type="challenges.phase").exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_two_freezes_at_once_freeze_once(world, monkeypatch):
    Phase.objects.filter(pk=world["phase"].pk).update(
        opens_at=timezone.now() - timedelta(days=2), closes_at=timezone.now() - timedelta(1))
    start = threading.Barrier(2)
    real = tasks.snapshot_take

    def slow_snapshot(*, benchmark):
        time.sleep(0.5)  # holds the phase's lock while the other sweep comes
        return real(benchmark=benchmark)

    monkeypatch.setattr(tasks, "snapshot_take", slow_snapshot)
    results = []

    def sweep():
        try:
            start.wait(10)
            results.append(tasks.phase_freeze(world["phase"].pk))
        finally:
            connection.close()

    threads = [threading.Thread(target=sweep) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(results) == [False, True]
    assert BoardSnapshot.objects.count() == 1
    assert AuditEvent.objects.filter(object_type="challenges.phase").count() == 1
    assert Phase.objects.get().frozen_at is not None


def test_celery_beat_asks_for_the_freeze_every_minute(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["freeze-challenge-phases"]
    assert entry["task"] == tasks.freeze_phases.name == "challenges.tasks.freeze_phases"
    assert entry["schedule"] == 60
