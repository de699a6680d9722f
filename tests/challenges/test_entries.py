"""Uploads to a phase board (challenges.entries, the upload page and the API): only members of
a team entered in the track, from the phase's opening; the team's limits per 24 hours and in
the phase, refused with the instant of the next allowed upload (UTC and the organizers' time
zone); the entry made with its submission or nothing at all; the team's choice of the
submission that counts; the task package, which holds no rubric."""

import io
import json
import threading
import zipfile
from datetime import timedelta

import jsonschema
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken
from challenges import entries, teams
from challenges.models import Challenge, Entry, Membership, Phase, PhaseBoard, Track
from challenges.selectors import counting_entries
from challenges.task_packages import package_path
from config.errors import ServiceError
from scoring.models import Benchmark, Criterion
from scoring.services import benchmark_import
from scoring.synthetic import write_benchmark, write_system
from submissions.models import Submission
from tests.leaderboard.test_api_bodies import described

pytestmark = pytest.mark.django_db

ATTESTATIONS = ["open-source components only", "no human in the loop"]


def build_challenge(root, *, opens=-1, closes=1, per_day=2, total=5, late_uploads=True,
                    hidden=True, zone="America/Los_Angeles"):
    """A challenge with one final phase (opening and closing `opens` and `closes` days from
    now) and one track (two attestations) whose board is a hidden-rubric MMAE set; the files a
    team uploads."""
    meta = write_benchmark(root, 6, seed=8)
    benchmark, _ = benchmark_import(kind="mmae", path=meta, audio_root=root, slug="final-agent",
                                    rubrics_hidden=hidden)
    samples = json.loads(meta.read_text())
    jsonl = write_system(root, samples, name="sys", seed=3, fmt="jsonl")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for sample in samples:
            relative = f"systems/sys/{sample['id']}.wav"
            archive.write(root / relative, relative)
    challenge = Challenge.objects.create(slug="icassp", title="ICASSP challenge",
                                         time_zone=zone)
    now = timezone.now()
    phase = Phase.objects.create(challenge=challenge, slug="final", name="Final",
                                 kind=Phase.Kind.FINAL, opens_at=now + timedelta(days=opens),
                                 closes_at=now + timedelta(days=closes), per_day=per_day,
                                 total=total, late_uploads=late_uploads,
                                 released_dimensions=["complexity"])
    track = Track.objects.create(challenge=challenge, slug="agent", name="Agent",
                                 attestations=ATTESTATIONS, rules="Open-source tools only.")
    board = PhaseBoard.objects.create(phase=phase, track=track, benchmark=benchmark)
    return {"challenge": challenge, "phase": phase, "track": track, "board": board,
            "benchmark": benchmark, "samples": samples, "jsonl": jsonl.read_bytes(),
            "zip": buffer.getvalue(), "root": root}


def files(world):
    return (SimpleUploadedFile("submission.jsonl", world["jsonl"]),
            SimpleUploadedFile("audio.zip", world["zip"]))


def upload(world, user, *, at=None, name=None):
    predictions, archive = files(world)
    return entries.entry_create(user=user, board=world["board"], received_at=at or timezone.now(),
                                model_name=name or f"{user.username} system", metadata={},
                                public=True, predictions=predictions, archive=archive)


@pytest.fixture
def world(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.SUBMISSIONS_PER_DAY = 100
    settings.SUBMISSIONS_IN_FLIGHT = 100
    return build_challenge(tmp_path / "set")


@pytest.fixture
def team(world, author, other_author):
    """A team of author and other_author, entered in the track."""
    made = teams.team_create(challenge=world["challenge"], user=author, name="Waveforms")
    invitation = teams.team_invite(team=made, inviter=author, who="other_author")
    teams.invitation_accept(invitation=invitation, user=other_author)
    teams.track_enter(team=made, track=world["track"], user=author, attested=ATTESTATIONS)
    return made


def test_an_upload_is_a_submission_of_the_board_and_the_team_entry(world, team, author):
    entry = upload(world, author)
    assert entry.team == team and entry.board == world["board"] and not entry.late
    submission = entry.submission
    assert submission.benchmark == world["benchmark"] and submission.owner == author
    assert submission.status == Submission.Status.UPLOADED and submission.public
    assert submission.model.organisation == "Waveforms"  # the team's name on the open board


def test_only_a_member_of_a_team_entered_in_the_track_may_upload(world, author, staff):
    with pytest.raises(ServiceError, match="you are in no team"):
        upload(world, staff)
    made = teams.team_create(challenge=world["challenge"], user=author, name="Waveforms")
    with pytest.raises(ServiceError, match="has not entered the track Agent"):
        upload(world, author)
    teams.track_enter(team=made, track=world["track"], user=author, attested=ATTESTATIONS)
    assert upload(world, author).team == made
    assert Submission.objects.count() == 1  # the refused ones stored nothing


def test_an_upload_before_the_phase_opens_is_refused(world, team, author):
    phase = world["phase"]
    with pytest.raises(ServiceError, match="Final opens at") as refused:
        upload(world, author, at=phase.opens_at - timedelta(seconds=1))
    assert "PST" in str(refused.value) and "America/Los_Angeles" in str(refused.value)
    assert not Entry.objects.exists() and not Submission.objects.exists()


def test_over_the_daily_limit_the_upload_is_refused_with_the_next_allowed_instant(
        world, team, author, other_author):
    phase = world["phase"]
    start = (phase.opens_at + timedelta(hours=1)).replace(microsecond=0)
    first = upload(world, author, at=start)
    upload(world, other_author, at=start + timedelta(hours=2))  # teammates share the limit
    with pytest.raises(ServiceError) as refused:
        upload(world, author, at=start + timedelta(hours=3))
    assert refused.value.code == "quota"
    allowed = first.received_at + timedelta(days=1)
    message = str(refused.value)
    assert "daily limit for Final is reached: 2 upload(s) in 24 hours" in message
    assert f"{allowed:%Y-%m-%d %H:%M:%S} UTC" in message
    local = allowed.astimezone(entries.zone(world["challenge"]))
    assert f"{local:%Y-%m-%d %H:%M:%S %Z}, America/Los_Angeles" in message
    assert Entry.objects.count() == 2 and Submission.objects.count() == 2
    limits = entries.limits_left(team, phase, start + timedelta(hours=3))
    assert (limits.today_left, limits.total_left, limits.next_at) == (0, 3, allowed)
    # At the instant given, and not before, the next one goes through.
    with pytest.raises(ServiceError):
        upload(world, author, at=allowed - timedelta(seconds=1))
    assert upload(world, author, at=allowed).received_at == allowed


def test_the_total_limit_counts_every_track_of_the_phase(world, team, author):
    Phase.objects.filter(pk=world["phase"].pk).update(per_day=10, total=2)
    single = Track.objects.create(challenge=world["challenge"], slug="single", name="Single")
    other, _ = benchmark_import(kind="mmae", path=world["root"] / "MMAE-meta.json",
                                audio_root=world["root"], slug="final-single",
                                rubrics_hidden=True)
    second = PhaseBoard.objects.create(phase=world["phase"], track=single, benchmark=other)
    teams.track_enter(team=team, track=single, user=author, attested=[])
    world["board"].phase.refresh_from_db()
    upload(world, author)
    upload({**world, "board": PhaseBoard.objects.select_related("phase").get(pk=second.pk)},
           author)
    with pytest.raises(ServiceError, match="uploads for Final are spent: 2 in the phase"):
        upload(world, author)
    assert Entry.objects.filter(board=second).count() == 1


def test_rejected_uploads_do_not_count(world, team, author):
    first = upload(world, author)
    Submission.objects.filter(pk=first.submission_id).update(status=Submission.Status.REJECTED)
    upload(world, author)
    upload(world, author)  # two counted: the rejected one is free
    with pytest.raises(ServiceError, match="daily limit"):
        upload(world, author)


def test_a_late_upload_is_marked_or_refused_as_the_phase_says(world, team, author):
    phase = world["phase"]
    Phase.objects.filter(pk=phase.pk).update(
        opens_at=timezone.now() - timedelta(days=2), closes_at=timezone.now() - timedelta(hours=1))
    world["board"].phase.refresh_from_db()
    late = upload(world, author)
    assert late.late and late.received_at > world["board"].phase.closes_at
    assert counting_entries(world["board"]) == {}  # a late entry never counts
    Phase.objects.filter(pk=phase.pk).update(late_uploads=False)
    world["board"].phase.refresh_from_db()
    with pytest.raises(ServiceError, match="takes no upload after its deadline"):
        upload(world, author)
    assert Entry.objects.count() == 1


def test_an_entry_fails_with_its_submission_and_nothing_is_kept(world, team, author,
                                                              monkeypatch):
    def broken(**fields):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(Entry.objects, "create", broken)
    with pytest.raises(RuntimeError):
        upload(world, author)
    assert not Submission.objects.exists()
    assert not list((world["root"].parent / "media").glob("submissions/*/upload/*/*"))


def test_the_team_chooses_the_submission_that_counts(world, team, author, other_author,
                                                     staff):
    start = world["phase"].opens_at + timedelta(minutes=5)
    first = upload(world, author, at=start)
    second = upload(world, other_author, at=start + timedelta(minutes=5))
    assert counting_entries(world["board"])[team.pk] == second  # the latest on time
    entries.entry_choose(user=other_author, entry=first)
    assert counting_entries(world["board"])[team.pk] == first
    entries.entry_choose(user=author, entry=second)
    assert list(Entry.objects.filter(chosen=True)) == [second]
    with pytest.raises(ServiceError, match="not a member"):
        entries.entry_choose(user=staff, entry=first)
    shown = {e.pk: e.counts for e in entries.entries_of(team)}
    assert shown == {first.pk: False, second.pk: True}


def test_a_late_entry_cannot_be_chosen(world, team, author):
    entry = upload(world, author, at=world["phase"].closes_at + timedelta(seconds=1))
    assert entry.late
    with pytest.raises(ServiceError, match="after the deadline never counts"):
        entries.entry_choose(user=author, entry=entry)


def test_the_upload_page_makes_an_entry_and_shows_the_limits(world, team, author, client):
    client.force_login(author)
    url = "/c/icassp/final/agent/submit/"
    page = client.get(url)
    assert page.status_code == 200
    assert b"0 of 2</strong> in the last 24 hours" in page.content
    assert b'value="Waveforms"' in page.content  # the team's name proposed
    predictions, archive = files(world)
    response = client.post(url, {"model_name": "Waveforms", "public": "on",
                                 "predictions": predictions, "audio": archive})
    entry = Entry.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("leaderboard:submission-status",
                                           args=[entry.submission_id])
    team_page = client.get("/c/icassp/team/")
    assert team_page.status_code == 200
    body = team_page.content.decode()
    assert f'id="entry-{entry.pk}"' in body and "latest on time" in body
    assert "author" in body and "other_author" in body  # the members
    assert "1 of 2</strong> in the last 24 hours" in body


def test_the_upload_page_refuses_over_the_limit_with_429(world, team, author, client):
    Phase.objects.filter(pk=world["phase"].pk).update(per_day=1)
    upload(world, author)
    client.force_login(author)
    predictions, archive = files(world)
    response = client.post("/c/icassp/final/agent/submit/", {
        "model_name": "Waveforms", "predictions": predictions, "audio": archive})
    assert response.status_code == 429
    assert b"the next upload is possible at" in response.content
    assert Entry.objects.count() == 1
    team_page = client.get("/c/icassp/team/").content.decode()
    assert "Next upload possible at" in team_page
    assert 'href="/c/icassp/final/agent/submit/"' not in team_page  # no upload offered


def test_the_api_uploads_lists_and_chooses(world, team, author):
    _, key = ApiToken.issue(user=author, name="test")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    url = "/c/icassp/api/final/agent/entries/"
    predictions, archive = files(world)
    created = api.post(url, {"predictions": predictions, "audio": archive}, format="multipart")
    assert created.status_code == 201, created.content
    assert created.json()["late"] is False
    listed = api.get(url).json()
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    jsonschema.validate(listed, described(schema, "/c/{slug}/api/{phase}/{track}/entries/", 200))
    assert listed["team"] == "Waveforms" and listed["limits"]["used_today"] == 1
    assert [e["counts"] for e in listed["entries"]] == [True]
    chosen = api.post(f"/c/icassp/api/entries/{listed['entries'][0]['id']}/choose/")
    assert chosen.status_code == 200 and chosen.json()["chosen"] is True
    upload(world, author)
    predictions, archive = files(world)
    refused = api.post(url, {"predictions": predictions, "audio": archive}, format="multipart")
    assert refused.status_code == 429
    assert "the next upload is possible at" in refused.json()["errors"][0]
    assert int(refused["Retry-After"]) > 23 * 3600


def test_the_task_package_holds_inputs_and_instructions_and_no_rubric(world, team, author,
                                                                     client):
    client.force_login(author)
    response = client.get("/c/icassp/final/agent/package/")
    assert response.status_code == 200
    data = b"".join(response.streaming_content)
    package = zipfile.ZipFile(io.BytesIO(data))
    names = package.namelist()
    assert "README.txt" in names and "items.jsonl" in names
    lines = [json.loads(line) for line in package.read("items.jsonl").decode().splitlines()]
    assert [line["id"] for line in lines] == [s["id"] for s in world["samples"]]
    for line, sample in zip(lines, world["samples"], strict=True):
        assert line["dimensions"] == {"complexity": sample["complexity"]}  # released only
        assert line["instruction"].startswith("Synthetic instruction")
        for path in line["input_audio"]:
            assert path in names
    everything = b"".join(package.read(name) for name in names)
    texts = list(Criterion.objects.filter(item__benchmark=world["benchmark"])
                 .values_list("question", flat=True))
    assert texts
    for text in texts:
        assert text.encode() not in everything
    for sample in world["samples"]:
        for rubric in sample["rubrics"]:
            assert rubric["right_choice"].encode() not in everything
    assert b"rubric" not in package.read("items.jsonl").lower()
    assert b"tags" not in package.read("items.jsonl")
    # Built once: a second download sends the same file.
    assert package_path(world["board"]) == package_path(PhaseBoard.objects.get())


def test_the_task_package_is_for_entered_teams_once_the_phase_opened(world, author, staff,
                                                                    client):
    client.force_login(author)
    assert client.get("/c/icassp/final/agent/package/").status_code == 404  # no team
    made = teams.team_create(challenge=world["challenge"], user=author, name="Waveforms")
    teams.track_enter(team=made, track=world["track"], user=author, attested=ATTESTATIONS)
    Phase.objects.filter(pk=world["phase"].pk).update(
        opens_at=timezone.now() + timedelta(hours=1), closes_at=timezone.now() + timedelta(days=1))
    assert client.get("/c/icassp/final/agent/package/").status_code == 404  # not open yet
    client.force_login(staff)
    assert client.get("/c/icassp/final/agent/package/").status_code == 200


def test_a_development_board_uploads_as_well(tmp_path, settings, author):
    settings.MEDIA_ROOT = tmp_path / "media"
    world = build_challenge(tmp_path / "set", hidden=False, zone="UTC")
    made = teams.team_create(challenge=world["challenge"], user=author, name="Solo")
    teams.track_enter(team=made, track=world["track"], user=author, attested=ATTESTATIONS)
    entry = upload(world, author)
    assert not Benchmark.objects.get(pk=entry.board.benchmark_id).rubrics_hidden
    assert Membership.objects.filter(team=made).count() == 1
    assert entries.instant_text(entry.received_at, world["challenge"]).endswith("UTC")


def test_a_phase_board_takes_no_upload_through_the_sites_own_doors(world, team, author,
                                                                   client):
    """The site's upload page and API would bypass the team's limits and make no entry."""
    _, key = ApiToken.issue(user=author, name="test")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    predictions, archive = files(world)
    refused = api.post("/api/submissions/", {
        "benchmark": "final-agent", "model_name": "Sneaky", "predictions": predictions,
        "audio": archive}, format="multipart")
    assert refused.status_code == 409
    assert "/c/icassp/final/agent/submit/" in refused.json()["errors"][0]
    client.force_login(author)
    predictions, archive = files(world)
    page = client.post("/submit/", {"benchmark": "final-agent", "model_name": "Sneaky",
                                    "predictions": predictions, "audio": archive})
    assert b"upload on your team&#x27;s page" in page.content
    assert not Submission.objects.exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_teammates_uploading_at_once_cannot_pass_the_limit_together(world, team, author,
                                                                    other_author):
    """Two members' uploads arrive together with one upload left: the team's lock lets one
    through, and the other is refused with the next allowed instant."""
    Phase.objects.filter(pk=world["phase"].pk).update(per_day=1)
    world["board"].phase.refresh_from_db()
    start = threading.Barrier(2)
    outcomes = []

    def send(user):
        try:
            start.wait(10)
            upload(world, user)
            outcomes.append("stored")
        except ServiceError as exc:
            outcomes.append(exc.code)
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=(user,)) for user in (author, other_author)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(outcomes) == ["quota", "stored"]
    assert Entry.objects.count() == 1 and Submission.objects.count() == 1
