"""The organizer pages under /c/<slug>/manage/: 404 to anyone who may not organize the challenge
(participants, other users, anonymous visitors), GET and POST alike, with nothing changed or
audited; its organizers and staff use them. Organizers are granted and removed by staff alone;
phases are entered in the challenge's time zone and stored in UTC; a change of what a phase
shows, or a board attached, is a board change; every change is audited, in public where the
public should know."""

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.core.management import CommandError, call_command
from django.urls import URLResolver, get_resolver
from django.utils import timezone

from audit.models import AuditEvent
from challenges import organizer_services
from challenges.models import (
    Challenge,
    ChallengeBenchmark,
    Organizer,
    Phase,
    PhaseBoard,
    Track,
    Verification,
)
from scoring.models import Benchmark
from tests.challenges.challenge_factories import add_team, build_challenge, enter
from tests.conftest import cast_member
from tests.factories import board_benchmark
from tests.html import texts

pytestmark = pytest.mark.django_db

PACIFIC = ZoneInfo("America/Los_Angeles")


def _routes(patterns, prefix=""):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        else:
            yield prefix + str(pattern.pattern)


MANAGE_ROUTES = sorted(r for r in _routes(get_resolver().url_patterns)
                       if r.startswith("c/<slug:slug>/manage/"))


def test_the_organizer_pages_are_found():
    assert len(MANAGE_ROUTES) >= 14
    assert "c/<slug:slug>/manage/phases/<slug:phase>/reveal/" in MANAGE_ROUTES


@pytest.fixture
def built(author):
    built = build_challenge(organizer=author)
    add_team(built, "Alpha")
    enter(built, "Alpha", "final", "single", (0.5, 0.5, 0.5))
    Verification.objects.create(phase=built.final, team=built.teams["Alpha"])
    return built


def url_of(route: str, built) -> str:
    values = {"slug": "icassp", "phase": "final", "track": "single",
              "pk": str(Verification.objects.get().pk)}
    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: values[m.group(1)], route)


@pytest.mark.parametrize("who", ["participant", "other_author", "anonymous"])
def test_anyone_who_may_not_organize_gets_404(client, built, other_author, who):
    if who == "participant":
        client.force_login(built.members["Alpha"])
    elif who == "other_author":
        client.force_login(other_author)
    versions = dict(Benchmark.objects.values_list("id", "board_version"))
    data = {"who": "other_author", "confirm": "final", "state": "disqualified",
            "reason": "r", "top": "1", "benchmark": "mmae", "track": "1", "slug": "x",
            "name": "X", "kind": "final", "opens_at": "2027-01-01T00:00",
            "closes_at": "2027-01-02T00:00", "per_day": "1", "total": "1", "shown": "slices"}
    for route in MANAGE_ROUTES:
        url = url_of(route, built)
        assert client.get(url).status_code == 404, url
        assert client.post(url, data).status_code == 404, url
    assert not AuditEvent.objects.exists()
    assert Phase.objects.get(pk=built.final.pk).revealed_at is None
    assert dict(Benchmark.objects.values_list("id", "board_version")) == versions


@pytest.mark.parametrize("who", ["author", "staff"])
def test_organizers_and_staff_read_every_page(client, built, request, who):
    client.force_login(request.getfixturevalue(who))
    for route in MANAGE_ROUTES:
        if route.endswith(("/remove/", "/detach/", "/decide/", "/reveal/", "/boards/")):
            continue  # POST only
        url = url_of(route, built)
        expected = 404 if route.endswith("/package/") else 200  # nothing uploaded yet
        assert client.get(url).status_code == expected, url
    assert "alpha-member" in client.get("/c/icassp/manage/teams/").content.decode()


def test_staff_alone_grant_and_remove_the_role_audited(client, built, author, other_author,
                                                       staff):
    client.force_login(author)  # an organizer reads the list, grants nothing
    assert client.get("/c/icassp/manage/organizers/").status_code == 200
    assert client.post("/c/icassp/manage/organizers/", {"who": "other_author"}) \
        .status_code == 404
    client.force_login(staff)
    assert client.post("/c/icassp/manage/organizers/",
                       {"who": "other@example.com"}).status_code == 302
    granted = Organizer.objects.get(user=other_author)
    assert granted.granted_by == staff
    event = AuditEvent.objects.get(object_type="challenges.organizer")
    assert (event.actor, event.action, event.after["organizer"]) == (staff, "challenge",
                                                                    "other_author")
    again = client.post("/c/icassp/manage/organizers/", {"who": "other_author"})
    assert again.status_code == 400 and "organizes" in again.content.decode()
    client.force_login(author)
    assert client.post(f"/c/icassp/manage/organizers/{granted.pk}/remove/").status_code == 404
    client.force_login(staff)
    assert client.post(f"/c/icassp/manage/organizers/{granted.pk}/remove/").status_code == 302
    assert not Organizer.objects.filter(user=other_author).exists()
    assert AuditEvent.objects.filter(reason="organizer role removed").count() == 1


def test_a_phase_is_entered_in_the_challenges_time_zone_and_stored_in_utc(client, built,
                                                                          author):
    client.force_login(author)
    # 11:59 PM US Pacific on 2027-01-15 (PST, UTC-8) is 07:59 UTC on the 16th.
    page = client.post("/c/icassp/manage/phases/new/", {
        "slug": "final-2", "name": "Second final", "kind": "final",
        "opens_at": "2027-01-01T00:00", "closes_at": "2027-01-15T23:59", "per_day": "3",
        "total": "30", "late_uploads": "on", "shown": "overall", "reason": "a second round"})
    assert page.status_code == 302
    phase = Phase.objects.get(slug="final-2")
    assert phase.closes_at == datetime(2027, 1, 16, 7, 59, tzinfo=UTC)
    assert phase.opens_at == datetime(2027, 1, 1, 8, 0, tzinfo=UTC)
    assert (phase.per_day, phase.total, phase.late_uploads, phase.shown) == (3, 30, True,
                                                                             "overall")
    event = AuditEvent.objects.get(object_type="challenges.phase")
    assert event.public and event.after["closes_at"] == "2027-01-16T07:59:00+00:00"
    # The form shows it back in the challenge's time zone.
    form = client.get("/c/icassp/manage/phases/final-2/").content.decode()
    assert 'value="2027-01-15T23:59"' in form and "America/Los_Angeles" in form
    # Summer time: 11:59 PM PDT is 06:59 UTC.
    client.post("/c/icassp/manage/phases/final-2/", {
        "slug": "final-2", "name": "Second final", "kind": "final",
        "opens_at": "2027-01-01T00:00", "closes_at": "2027-07-15T23:59", "per_day": "3",
        "total": "30", "late_uploads": "on", "shown": "overall"})
    assert Phase.objects.get(slug="final-2").closes_at == datetime(2027, 7, 16, 6, 59,
                                                                   tzinfo=UTC)
    refused = client.post("/c/icassp/manage/phases/new/", {
        "slug": "x", "name": "X", "kind": "final", "opens_at": "2027-01-02T00:00",
        "closes_at": "2027-01-01T00:00", "per_day": "3", "total": "30", "shown": "nothing"})
    assert refused.status_code == 400 and "close after it opens" in refused.content.decode()


def test_changing_what_a_phase_shows_is_a_board_change_in_public(client, built, author):
    client.force_login(author)
    boards = [b.benchmark for b in PhaseBoard.objects.filter(phase=built.final)]
    versions = {b.pk: b.board_version for b in boards}
    form = {"slug": "final", "name": "Final", "kind": "final", "per_day": "5", "total": "100",
            "late_uploads": "on", "shown": "overall",
            "opens_at": built.final.opens_at.astimezone(PACIFIC).strftime("%Y-%m-%dT%H:%M"),
            "closes_at": built.final.closes_at.astimezone(PACIFIC).strftime("%Y-%m-%dT%H:%M")}
    assert client.post("/c/icassp/manage/phases/final/", form).status_code == 302
    assert Phase.objects.get(pk=built.final.pk).shown == "overall"
    for benchmark in Benchmark.objects.filter(pk__in=versions):
        assert benchmark.board_version > versions[benchmark.pk]
    events = AuditEvent.objects.filter(object_type="challenges.phase", public=True)
    assert sorted(e.benchmark_slug for e in events) == ["icassp-final-agent",
                                                        "icassp-final-single"]
    assert all(e.before["shown"] == "nothing" and e.after["shown"] == "overall"
               for e in events)


def test_tracks_are_created_and_edited_with_rules_and_filters(client, built, author):
    client.force_login(author)
    assert client.post("/c/icassp/manage/tracks/", {
        "slug": "open", "name": "Open", "rules": "Anything goes.", "position": "3",
        "attestations": "no human in the loop\nopen-source tools only\n",
        "where": "complexity=single\ncomplexity=multi"}).status_code == 302
    track = Track.objects.get(slug="open")
    assert track.attestations == ["no human in the loop", "open-source tools only"]
    assert track.where == {"complexity": ["single", "multi"]}
    assert client.post("/c/icassp/manage/tracks/open/", {
        "slug": "open", "name": "Open", "rules": "Open-source only.", "position": "3",
        "attestations": "no human in the loop", "where": ""}).status_code == 302
    track.refresh_from_db()
    assert track.rules == "Open-source only." and track.where == {}
    changed = AuditEvent.objects.filter(object_type="challenges.track").order_by("id").last()
    assert changed.public and changed.before["rules"] == "Anything goes."
    bad = client.post("/c/icassp/manage/tracks/", {"slug": "bad", "name": "Bad",
                                                  "position": "0", "where": "complexity"})
    assert bad.status_code == 400 and "expected DIMENSION=BUCKET" in bad.content.decode()


def test_a_board_is_attached_by_slug_as_a_board_change(client, built, author):
    track = Track.objects.create(challenge=built.challenge, slug="extra", name="Extra")
    benchmark = board_benchmark(slug="final-extra", rubrics_hidden=True)
    organizer_services.benchmark_give(challenge=built.challenge, slug="final-extra", actor=None)
    version = benchmark.board_version
    client.force_login(author)
    page = client.post("/c/icassp/manage/phases/final/boards/",
                       {"track": track.pk, "benchmark": "final-extra"})
    assert page.status_code == 302
    board = PhaseBoard.objects.get(track=track)
    assert board.benchmark == benchmark and board.phase == built.final
    benchmark.refresh_from_db()
    assert benchmark.board_version > version
    assert AuditEvent.objects.filter(object_type="challenges.phaseboard", public=True,
                                     benchmark_slug="final-extra").exists()
    taken = client.post("/c/icassp/manage/phases/dev/boards/",
                        {"track": track.pk, "benchmark": "final-extra"})
    assert taken.status_code == 400 and "the board of a phase already" in \
        taken.content.decode()
    missing = client.post("/c/icassp/manage/phases/dev/boards/",
                          {"track": track.pk, "benchmark": "nope"})
    assert "no benchmark is named" in missing.content.decode()
    assert client.post(f"/c/icassp/manage/boards/{board.pk}/detach/").status_code == 302
    assert not PhaseBoard.objects.filter(track=track).exists()


def test_the_public_page_shows_instants_tracks_and_a_countdown(client, author):
    built = build_challenge(organizer=author, final_closed=False)
    page = client.get("/c/icassp/")
    assert page.status_code == 200
    text = page.content.decode()
    closes = built.final.closes_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    assert f'<time datetime="{closes}' in text
    assert "America/Los_Angeles" in text and "data-countdown" in text
    assert "Final closes in" in text
    assert "Rules of the single track." in text and "open-source components only" in text
    assert '/b/icassp-final-single/' in text and "/c/icassp/results/" in text
    assert "js/challenge.js" in text
    assert "/c/icassp/manage/" not in text  # not for visitors
    client.force_login(author)
    assert "/c/icassp/manage/" in client.get("/c/icassp/").content.decode()
    assert client.get("/c/nope/").status_code == 404


def test_the_challenge_settings_are_edited_and_a_bad_time_zone_refused(client, built, author):
    client.force_login(author)
    refused = client.post("/c/icassp/manage/", {"title": "T", "time_zone": "Mars/Olympus"})
    assert refused.status_code == 400 and "no IANA time zone" in refused.content.decode()
    assert client.post("/c/icassp/manage/", {
        "title": "ICASSP 2027 Audio Editing Challenge", "description": "Edit audio.",
        "time_zone": "Europe/Paris"}).status_code == 302
    built.challenge.refresh_from_db()
    assert built.challenge.time_zone == "Europe/Paris"
    event = AuditEvent.objects.get(object_type="challenges.challenge",
                                   benchmark_slug="icassp-final-single")
    assert event.public and event.before["time_zone"] == "America/Los_Angeles"
    assert "Europe/Paris" in client.get("/c/icassp/").content.decode()


def test_the_challenges_are_listed(client, author):
    assert "No challenge yet" in client.get("/c/").content.decode()
    build_challenge(organizer=author, final_closed=False)
    text = client.get("/c/").content.decode()
    assert 'href="/c/icassp/"' in text and "Final:" in text and "<time datetime=" in text


def test_a_phase_may_not_be_named_new(client, built, author):
    client.force_login(author)
    page = client.post("/c/icassp/manage/phases/new/", {
        "slug": "new", "name": "New", "kind": "final", "opens_at": "2027-01-01T00:00",
        "closes_at": "2027-01-02T00:00", "per_day": "3", "total": "30", "shown": "nothing"})
    assert page.status_code == 400 and "names the form of a new phase" in \
        page.content.decode().replace("&#x27;", "'")
    assert not Phase.objects.filter(slug="new").exists()


def test_an_organizer_of_another_challenge_gets_404(client, built, other_author):
    build_challenge(organizer=other_author, tracks=("solo",), slug="other")
    client.force_login(other_author)
    assert client.get("/c/other/manage/").status_code == 200
    assert client.get("/c/icassp/manage/").status_code == 404
    assert client.get("/c/icassp/manage/phases/final/verification/").status_code == 404
    # Nor do its ids reach this challenge's objects through the other's addresses.
    verification = Verification.objects.get(phase=built.final)
    assert client.post(f"/c/other/manage/verification/{verification.pk}/decide/",
                       {"state": "verified"}).status_code == 404
    assert Verification.objects.get(pk=verification.pk).state == "awaited"


def test_an_instant_the_zone_skips_is_refused(client, built, author):
    client.force_login(author)
    # 2027-03-14 02:30 does not exist in US Pacific time (clocks go from 02:00 to 03:00).
    page = client.post("/c/icassp/manage/phases/new/", {
        "slug": "spring", "name": "Spring", "kind": "final", "opens_at": "2027-03-14T02:30",
        "closes_at": "2027-03-20T00:00", "per_day": "3", "total": "30", "shown": "nothing"})
    assert page.status_code == 400
    assert "couldn’t be interpreted in time zone America/Los_Angeles" in \
        page.content.decode().replace("&#x27;", "'")
    assert not Phase.objects.filter(slug="spring").exists()


def test_the_tabs_mark_new_phase_on_its_form_alone(client, built, author):
    client.force_login(author)
    for url, active in (("/c/icassp/manage/phases/new/", "New phase"),
                        ("/c/icassp/manage/phases/final/", "Overview"),
                        ("/c/icassp/manage/phases/final/import/", "Overview"),
                        ("/c/icassp/manage/", "Overview")):
        assert texts(client.get(url), 'nav[aria-label="organizer"] a.active') == [active], url


def test_the_dimensions_a_task_package_gives_out_are_chosen_on_the_phase_form(
        client, built, author):
    client.force_login(author)
    fields = {"slug": "final-2", "name": "Second final", "kind": "final",
              "opens_at": "2027-01-01T00:00", "closes_at": "2027-01-15T23:59", "per_day": "3",
              "total": "30", "shown": "nothing"}
    assert client.post("/c/icassp/manage/phases/new/", fields).status_code == 302
    assert Phase.objects.get(slug="final-2").released_dimensions == []  # none unless chosen
    page = client.post("/c/icassp/manage/phases/final-2/", {
        **fields, "released_dimensions": ["modality", "complexity"]})
    assert page.status_code == 302
    assert sorted(Phase.objects.get(slug="final-2").released_dimensions) == [
        "complexity", "modality"]
    event = AuditEvent.objects.filter(object_type="challenges.phase").latest("id")
    assert event.public and sorted(event.after["released_dimensions"]) == [
        "complexity", "modality"]
    refused = client.post("/c/icassp/manage/phases/final-2/", {
        **fields, "released_dimensions": ["rubrics"]})
    assert refused.status_code == 400 and "rubrics" in refused.content.decode()


def test_only_a_benchmark_given_to_the_challenge_is_attached(client, built, author,
                                                            django_user_model):
    """An organizer of another challenge could attach a hidden-rubric benchmark not yet
    attached (between its import and its attachment, or once detached) and so read its
    rubrics, reveal them to everyone and close its uploads: a benchmark version is attached
    only by the challenge it was given to (staff, or the organizer pages' import)."""
    board_benchmark(slug="final-extra", rubrics_hidden=True)
    eve = cast_member(django_user_model, "eve", "eve@example.com")
    other = Challenge.objects.create(slug="other", title="Another challenge")
    organizer_services.organizer_grant(challenge=other, actor=None, who="eve")
    now = timezone.now()
    phase = organizer_services.phase_save(challenge=other, actor=eve, fields={
        "slug": "p", "name": "P", "kind": Phase.Kind.FINAL, "opens_at": now,
        "closes_at": now + timedelta(days=1), "per_day": 1, "total": 1, "late_uploads": True,
        "shown": Phase.Shown.NOTHING, "released_dimensions": []})
    track = organizer_services.track_save(challenge=other, actor=eve, fields={
        "slug": "t", "name": "T", "rules": "", "attestations": [], "where": {},
        "position": 0})
    client.force_login(eve)

    def attach(slug="final-extra"):
        return client.post("/c/other/manage/phases/p/boards/",
                           {"track": track.pk, "benchmark": slug})

    assert "none given to this challenge is free" in \
        client.get("/c/other/manage/phases/p/").content.decode()
    refused = attach()  # given to no challenge yet
    assert refused.status_code == 400, refused.status_code
    assert "final-extra v1 is not one of other&#x27;s benchmarks" in refused.content.decode()
    call_command("challenge_benchmark", "icassp", "final-extra")
    assert attach().status_code == 400  # given to icassp: still not hers
    assert not PhaseBoard.objects.filter(benchmark__slug="final-extra").exists()
    with pytest.raises(CommandError, match="final-extra v1 is icassp's already"):
        call_command("challenge_benchmark", "other", "final-extra")
    # A slug of hers does not make a later version of it hers: staff importing the final set
    # under a slug she took first (by her own import) give it to nobody.
    board_benchmark(slug="squatted")
    call_command("challenge_benchmark", "other", "squatted")
    later = board_benchmark(slug="squatted", version=2, sha256="b" * 64, rubrics_hidden=True)
    assert later.version == 2
    assert attach("squatted").status_code == 400
    assert not PhaseBoard.objects.filter(benchmark=later).exists()
    call_command("challenge_benchmark", "icassp", "squatted")
    assert ChallengeBenchmark.objects.get(benchmark=later).challenge == built.challenge
    # Its own organizer attaches it (the board form names what is given and free); staff
    # attaching one given to no challenge give it.
    client.force_login(author)
    form = client.get("/c/icassp/manage/phases/final/").content.decode()
    assert "given to this challenge, on no board: final-extra v1, squatted v2" in form
    extra = Track.objects.create(challenge=built.challenge, slug="extra", name="Extra")
    assert client.post("/c/icassp/manage/phases/final/boards/",
                       {"track": extra.pk, "benchmark": "final-extra"}).status_code == 302
    board_benchmark(slug="loose")
    staff = cast_member(django_user_model, "sam", "sam@example.com", is_staff=True)
    organizer_services.board_attach(phase=phase, track=track, benchmark_slug="loose",
                                    actor=staff)
    assert ChallengeBenchmark.objects.get(benchmark__slug="loose").challenge == other
