"""The participants' pages of a challenge (/c/<slug>/...): their team (members, invitations,
tracks, entries and what counts, limits left, the phases' clocks), making a team, an
invitation's answer, entering a track, a phase board's task package and its upload page."""

from __future__ import annotations

import functools
import logging

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from accounts.verification import verified_email_for_uploads
from challenges import entries as entry_services
from challenges import teams as team_services
from challenges.forms import AttestationForm, EntryUploadForm, InviteForm, TeamForm
from challenges.models import Challenge, Entry, PhaseBoard, Track, TrackEntry
from challenges.roles import may_organize
from challenges.task_packages import package_path
from config.celery import BrokerUnavailable
from config.errors import STORAGE_FULL, STORAGE_FULL_RETRY_SECONDS, ServiceError, storage_full
from config.throttle import limit_posts

log = logging.getLogger(__name__)


def _challenge(slug: str) -> Challenge:
    return get_object_or_404(Challenge, slug=slug)


def _add_errors(form, exc: ServiceError) -> None:
    """A service's refusal on the form: beside the fields the form has, above it otherwise."""
    if not hasattr(exc, "error_dict"):
        form.add_error(None, exc.messages)
        return
    for field, found in exc.message_dict.items():
        form.add_error(field if field in form.fields else None,
                       found if field in form.fields or field == "__all__"
                       else [f"{field}: {message}" for message in found])


def clock(moment, challenge: Challenge) -> dict:
    """An instant as the pages show it: ISO (for the visitor's local time, set by the page's
    script), UTC, and the organizers' time zone."""
    local = moment.astimezone(entry_services.zone(challenge))
    return {"iso": moment.isoformat(), "utc": f"{moment:%Y-%m-%d %H:%M:%S} UTC",
            "zone": f"{local:%Y-%m-%d %H:%M:%S %Z}", "zone_name": challenge.time_zone}


def _board_rows(team, phase, boards, entered: set[int], entries: list[Entry], now,
                limits) -> list:
    rows = []
    for board in boards:
        rows.append({"board": board, "entered": board.track_id in entered,
                     "may_upload": board.track_id in entered and phase.opens_at <= now
                     and (now <= phase.closes_at or phase.late_uploads)
                     and limits is not None and not limits.spent,
                     "entries": [e for e in entries if e.board_id == board.pk]})
    return rows


def _phases(challenge: Challenge, team, now) -> list[dict]:
    entered = team_services.tracks_entered(team) if team else set()
    entries = entry_services.entries_of(team) if team else []
    boards = list(PhaseBoard.objects.filter(phase__challenge=challenge)
                  .select_related("phase", "track", "benchmark")
                  .order_by("phase__opens_at", "phase__id", "track__position", "track__id"))
    phases = []
    for phase in dict.fromkeys(b.phase for b in boards):
        limits = entry_services.limits_left(team, phase, now) if team else None
        phases.append({
            "phase": phase, "state": entry_services.phase_state(phase, now),
            "opens": clock(phase.opens_at, challenge), "closes": clock(phase.closes_at, challenge),
            "frozen": clock(phase.frozen_at, challenge) if phase.frozen_at else None,
            "limits": limits,
            "next_at": clock(limits.next_at, challenge) if limits and limits.next_at else None,
            "boards": _board_rows(team, phase, [b for b in boards if b.phase_id == phase.pk],
                                  entered, entries, now, limits),
        })
    return phases


@login_required
def team_page(request, slug):
    challenge = _challenge(slug)
    now = timezone.now()
    team = team_services.team_of(challenge, request.user)
    entered = team_services.tracks_entered(team) if team else set()
    context = {
        "challenge": challenge, "team": team, "now": clock(now, challenge),
        "invitations": team_services.invitations_of(challenge, request.user),
        "phases": _phases(challenge, team, now),
        "tracks": [{"track": t, "entered": t.pk in entered}
                   for t in Track.objects.filter(challenge=challenge)],
        "organizer": may_organize(challenge, request.user),
    }
    if team is not None:
        context.update(members=team_services.members(team),
                       pending=team_services.invitations_pending(team),
                       invite_form=InviteForm())
    return render(request, "challenges/participant/team.html", context)


@login_required
def team_new(request, slug):
    challenge = _challenge(slug)
    team = team_services.team_of(challenge, request.user)
    form = TeamForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                team_services.team_create(challenge=challenge, user=request.user,
                                          name=form.cleaned_data["name"])
            except ServiceError as exc:
                _add_errors(form, exc)
                status = 409 if exc.code == "conflict" else 400
            else:
                messages.success(request, "Your team is made: invite your teammates below.")
                return redirect("challenges:team", slug=slug)
    return render(request, "challenges/participant/team_new.html",
                  {"challenge": challenge, "form": form, "team": team}, status=status)


@login_required
@require_POST
def team_invite(request, slug):
    challenge = _challenge(slug)
    team = team_services.team_of(challenge, request.user)
    if team is None:
        raise Http404("You are in no team of this challenge.")
    form = InviteForm(request.POST)
    if form.is_valid():
        try:
            invitation = team_services.team_invite(team=team, inviter=request.user,
                                                   who=form.cleaned_data["who"])
        except ServiceError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"{invitation.user.username} is invited; they were "
                                      "e-mailed a link to accept.")
    else:
        messages.error(request, "give a user name or an e-mail address")
    return redirect("challenges:team", slug=slug)


@login_required
def invitation(request, slug, pk):
    challenge = _challenge(slug)
    found = team_services.invitation_for(challenge, pk, request.user)
    if found is None:
        raise Http404("No such invitation of yours (it may have been answered already).")
    current = team_services.team_of(challenge, request.user)
    if request.method == "POST":
        try:
            if request.POST.get("answer") == "accept":
                team = team_services.invitation_accept(invitation=found, user=request.user)
                messages.success(request, f"You are a member of {team.name}.")
            else:
                team_services.invitation_decline(invitation=found, user=request.user)
                messages.success(request, f"You declined {found.team.name}'s invitation.")
        except ServiceError as exc:
            messages.error(request, str(exc))
        return redirect("challenges:team", slug=slug)
    return render(request, "challenges/participant/invitation.html", {
        "challenge": challenge, "invitation": found, "current": current,
        "members": team_services.members(found.team)})


@login_required
def track_enter(request, slug, track):
    challenge = _challenge(slug)
    track = get_object_or_404(Track, challenge=challenge, slug=track)
    team = team_services.team_of(challenge, request.user)
    if team is None:
        messages.error(request, "Make a team or accept an invitation before entering a track.")
        return redirect("challenges:team", slug=slug)
    form = AttestationForm(request.POST or None, track=track)
    status = 200
    if request.method == "POST" and form.is_valid():
        try:
            team_services.track_enter(team=team, track=track, user=request.user,
                                      attested=form.ticked())
        except ServiceError as exc:
            _add_errors(form, exc)
            status = 400
        else:
            messages.success(request, f"{team.name} entered the {track.name} track.")
            return redirect("challenges:team", slug=slug)
    return render(request, "challenges/participant/track_enter.html", {
        "challenge": challenge, "track": track, "team": team, "form": form,
        "entered": TrackEntry.objects.filter(team=team, track=track).exists()}, status=status)


@login_required
@require_POST
def entry_choose(request, slug, pk):
    challenge = _challenge(slug)
    entry = get_object_or_404(Entry, pk=pk, team__challenge=challenge)
    try:
        entry_services.entry_choose(user=request.user, entry=entry)
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Submission {entry.submission_id} now counts for your team "
                                  "on the official board.")
    return redirect("challenges:team", slug=slug)


def _board(challenge: Challenge, phase: str, track: str) -> PhaseBoard:
    board = entry_services.board_find(challenge, phase, track)
    if board is None:
        raise Http404("No such phase board.")
    return board


@login_required
def task_package(request, slug, phase, track):
    """The board's task package: to members of a team entered in its track once the phase
    has opened, and to its organizers (404 to anyone else, as for a board that is not)."""
    challenge = _challenge(slug)
    board = _board(challenge, phase, track)
    if not may_organize(challenge, request.user):
        team = team_services.team_of(challenge, request.user)
        if team is None or board.track_id not in team_services.tracks_entered(team) \
                or timezone.now() < board.phase.opens_at:
            raise Http404("No task package of yours here.")
    path = package_path(board)
    return FileResponse(open(path, "rb"), as_attachment=True, content_type="application/zip",
                        filename=f"{challenge.slug}-{board.phase.slug}-{board.track.slug}"
                                 "-task.zip")


def received(view):
    """`request.received_at`: the instant the request's body had fully arrived, taken once
    Django holds it whole (read and parsed). The web server reads a request whole before
    Django sees it (config.web_worker), so that is the view's first instant; a server that
    hands the body over as it arrives is waited for here, so an upload whose last byte comes
    after the deadline is late whenever its request began."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        if request.method == "POST":
            request.FILES  # noqa: B018 - the whole body read and parsed
        request.received_at = timezone.now()
        return view(request, *args, **kwargs)

    return wrapped


@verified_email_for_uploads
@limit_posts(group="upload", rate_setting="THROTTLE_UPLOAD", keys=("user",),
             what="upload attempts")
@received
def submit(request, slug, phase, track):
    challenge = _challenge(slug)
    board = _board(challenge, phase, track)
    try:
        return _submit(request, challenge, board)
    except OSError as exc:
        if not storage_full(exc):
            raise
        log.error("storage full", exc_info=exc)
        response = _submit_page(request, challenge, board, EntryUploadForm(
            benchmark=board.benchmark), status=503, error=STORAGE_FULL)
        response["Retry-After"] = str(STORAGE_FULL_RETRY_SECONDS)
        return response


def _submit(request, challenge, board):
    team = team_services.team_of(challenge, request.user)
    initial = {"model_name": team.name} if team else {}
    form = EntryUploadForm(request.POST or None, request.FILES or None,
                           benchmark=board.benchmark, initial=initial)
    if request.method != "POST":
        return _submit_page(request, challenge, board, form)
    if not form.is_valid():
        return _submit_page(request, challenge, board, form, status=400)
    data = form.cleaned_data
    try:
        entry = entry_services.entry_create(
            user=request.user, board=board, received_at=request.received_at,
            model_name=data["model_name"], metadata={"description": data["description"]},
            public=data["public"], predictions=data["predictions"], archive=data["audio"])
    except ServiceError as exc:
        _add_errors(form, exc)
        return _submit_page(request, challenge, board, form, status=exc.status)
    except BrokerUnavailable as exc:
        response = _submit_page(request, challenge, board, form, status=503, error=str(exc))
        response["Retry-After"] = str(exc.retry_after)
        return response
    note = " It arrived after the deadline: it is scored and listed on the open board, " \
           "never on the official one." if entry.late else ""
    messages.success(request, f"Submission {entry.submission_id} received at "
                              f"{entry_services.instant_text(entry.received_at, challenge)}."
                              + note)
    return redirect("leaderboard:submission-status", pk=entry.submission_id)


def _submit_page(request, challenge, board, form, *, status=200, error=None):
    now = timezone.now()
    team = team_services.team_of(challenge, request.user)
    phase = board.phase
    limits = entry_services.limits_left(team, phase, now) if team else None
    _, problems = entry_services.upload_problems(user=request.user, board=board, at=now)
    if limits is not None:
        problems += entry_services.limit_problems(limits, phase)
    return render(request, "challenges/participant/submit.html", {
        "challenge": challenge, "board": board, "phase": phase, "team": team, "form": form,
        "limits": limits, "problems": problems, "error": error,
        "state": entry_services.phase_state(phase, now),
        "opens": clock(phase.opens_at, challenge), "closes": clock(phase.closes_at, challenge),
        "limit_view": {"phase": phase, "limits": limits, "next_at": clock(
            limits.next_at, challenge) if limits and limits.next_at else None},
        "now": clock(now, challenge)}, status=status)
