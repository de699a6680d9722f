"""The organizer pages of a challenge, under /c/<slug>/manage/: overview, organizers (granted and
removed by staff alone), phases (their instants in the challenge's time zone) and the boards
their tracks are ranked on, tracks, teams with their members and entries, verification of
finalists with their packages, a benchmark imported as a track's board (its task in
challenges.benchmark_imports), and the reveal. Each answers 404 to anyone who may not organize
the challenge (challenges.roles), GET and POST alike; every change goes through a service of
challenges.organizer_services, challenges.verification or challenges.reveal."""

from __future__ import annotations

from functools import wraps

from django.conf import settings
from django.http import FileResponse, Http404, HttpResponseNotAllowed
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt, csrf_protect

from challenges import benchmark_imports as imports
from challenges import organizer_services as services
from challenges import selectors
from challenges import verification as checks
from challenges.models import (
    Entry,
    Membership,
    Organizer,
    Phase,
    PhaseBoard,
    Team,
    Track,
    Verification,
)
from challenges.official import phase_boards, results_for
from challenges.organizer_forms import (
    BenchmarkImportForm,
    BoardAttachForm,
    ChallengeForm,
    DecisionForm,
    FinalistsForm,
    OrganizerGrantForm,
    PhaseForm,
    TrackForm,
    zone_of,
)
from challenges.public_views import PackageCeiling
from challenges.reveal import RevealError, phase_reveal
from challenges.roles import organized_challenge
from config.celery import BrokerUnavailable
from config.errors import ServiceError


def organizer_page(*methods: str):
    """The gate of every organizer page: 404 to anyone who may not organize the challenge
    (before the method is looked at, so that nothing tells others the page exists), then 405
    for a method not in `methods`. The view is called with the challenge for `slug`."""
    def decorate(view):
        @wraps(view)
        def wrapped(request, slug, *args, **kwargs):
            challenge = organized_challenge(slug, request.user)
            if request.method not in methods:
                return HttpResponseNotAllowed(methods)
            return view(request, challenge, *args, **kwargs)
        return wrapped
    return decorate


def _form_errors(form, error: ServiceError) -> None:
    if hasattr(error, "error_dict"):
        for field, problems in error.message_dict.items():
            form.add_error(field if field in form.fields else None, problems)
    else:
        form.add_error(None, error.problems)


def _page(request, challenge, template: str, context: dict, *, active: str, status=200):
    response = render(request, f"challenges/organizer/{template}", {
        "challenge": challenge, "active": active, "zone": zone_of(challenge).key,
        "is_staff": request.user.is_staff, **context}, status=status)
    response["Cache-Control"] = "private, no-store"
    return response


@organizer_page("GET", "POST")
def overview(request, challenge):
    """The phases with their boards and the Reveal button, the tracks, and the challenge's
    own settings (POST)."""
    form = ChallengeForm(request.POST or None, initial={
        "title": challenge.title, "description": challenge.description,
        "time_zone": challenge.time_zone})
    status = 200
    if request.method == "POST":
        if form.is_valid():
            services.challenge_save(challenge=challenge, actor=request.user,
                                    fields=form.cleaned_data)
            return redirect("challenges:manage", slug=challenge.slug)
        status = 400
    phases = list(challenge.phases.all())
    boards = {}
    for board in PhaseBoard.objects.filter(phase__challenge=challenge) \
            .select_related("track", "benchmark"):
        boards.setdefault(board.phase_id, []).append(board)
    now = timezone.now()
    rows = [{"phase": p, "boards": boards.get(p.pk, []), "open": p.opens_at <= now < p.closes_at,
             "entries": Entry.objects.filter(board__phase=p).count(),
             # The Reveal button: a closed phase not yet revealed, final or on hidden rubrics.
             "revealable": now >= p.closes_at and p.revealed_at is None and (
                 p.kind == Phase.Kind.FINAL
                 or any(b.benchmark.rubrics_hidden for b in boards.get(p.pk, [])))}
            for p in phases]
    return _page(request, challenge, "overview.html", {
        "phases": rows, "tracks": challenge.tracks.all(),
        "teams": Team.objects.filter(challenge=challenge).count(),
        "organizers": Organizer.objects.filter(challenge=challenge).select_related("user"),
        "form": form,
    }, active="overview", status=status)


# --- organizers -----------------------------------------------------------------------------

@organizer_page("GET", "POST")
def organizers(request, challenge):
    """Every organizer; staff grant and remove the role here (an organizer reads the list)."""
    form = OrganizerGrantForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if not request.user.is_staff:
            raise Http404("No such page.")
        if form.is_valid():
            try:
                services.organizer_grant(challenge=challenge, actor=request.user,
                                         who=form.cleaned_data["who"])
                return redirect("challenges:manage-organizers", slug=challenge.slug)
            except ServiceError as error:
                _form_errors(form, error)
        status = 400
    return _page(request, challenge, "organizers.html", {
        "form": form,
        "organizers": Organizer.objects.filter(challenge=challenge)
        .select_related("user", "granted_by").order_by("user__username"),
    }, active="organizers", status=status)


@organizer_page("POST")
def organizer_remove(request, challenge, pk):
    if not request.user.is_staff:
        raise Http404("No such page.")
    organizer = get_object_or_404(Organizer, pk=pk, challenge=challenge)
    services.organizer_remove(organizer=organizer, actor=request.user)
    return redirect("challenges:manage-organizers", slug=challenge.slug)


# --- phases and their boards ----------------------------------------------------------------

@organizer_page("GET", "POST")
def phase_edit(request, challenge, phase=None):
    """A new phase (no `phase`) or a phase's settings, with the boards of its tracks."""
    found = get_object_or_404(Phase, challenge=challenge, slug=phase) if phase else None
    initial = PhaseForm.initial_of(found) if found else {"per_day": 5, "total": 100,
                                                         "late_uploads": True}
    form = PhaseForm(request.POST or None, initial=initial, challenge=challenge)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            fields = {k: v for k, v in form.cleaned_data.items() if k != "reason"}
            try:
                saved = services.phase_save(challenge=challenge, actor=request.user,
                                            fields=fields, phase=found,
                                            reason=form.cleaned_data["reason"])
                return redirect("challenges:manage-phase", slug=challenge.slug,
                                phase=saved.slug)
            except ServiceError as error:
                _form_errors(form, error)
        status = 400
    tracks = list(challenge.tracks.all())
    return _page(request, challenge, "phase.html", {
        "phase": found, "form": form,
        "boards": PhaseBoard.objects.filter(phase=found).select_related("track", "benchmark")
        if found else [],
        "attach": BoardAttachForm(tracks=tracks, attachable=selectors.attachable(challenge))
        if found else None,
    }, active="phases", status=status)


@organizer_page("POST")
def board_attach(request, challenge, phase):
    found = get_object_or_404(Phase, challenge=challenge, slug=phase)
    tracks = list(challenge.tracks.all())
    form = BoardAttachForm(request.POST, tracks=tracks,
                           attachable=selectors.attachable(challenge))
    if form.is_valid():
        try:
            services.board_attach(phase=found, track=get_object_or_404(
                Track, pk=form.cleaned_data["track"], challenge=challenge),
                benchmark_slug=form.cleaned_data["benchmark"], actor=request.user)
            return redirect("challenges:manage-phase", slug=challenge.slug, phase=found.slug)
        except ServiceError as error:
            _form_errors(form, error)
    return _page(request, challenge, "phase.html", {
        "phase": found, "form": PhaseForm(initial=PhaseForm.initial_of(found),
                                          challenge=challenge),
        "boards": PhaseBoard.objects.filter(phase=found).select_related("track", "benchmark"),
        "attach": form}, active="phases", status=400)


@organizer_page("POST")
def board_detach(request, challenge, pk):
    board = get_object_or_404(PhaseBoard.objects.select_related("phase", "track", "benchmark"),
                              pk=pk, phase__challenge=challenge)
    try:
        services.board_detach(board=board, actor=request.user)
    except ServiceError as error:
        return _page(request, challenge, "error.html",
                     {"errors": error.problems, "phase": board.phase}, active="phases",
                     status=error.status)
    return redirect("challenges:manage-phase", slug=challenge.slug, phase=board.phase.slug)


@csrf_exempt  # the ceiling goes in before the body is read; CSRF is checked just after
@organizer_page("GET", "POST")
def benchmark_import(request, challenge, phase):
    """A benchmark's metadata file and input audio uploaded, imported by a task and attached as
    a track's board in the phase; the phase's imports with their progress (htmx polls it)."""
    found = get_object_or_404(Phase, challenge=challenge, slug=phase)
    # Only now, once the role is checked, is the body read, and no further than the limit.
    ceiling = PackageCeiling(request, settings.CHALLENGE_BENCHMARK_MAX_BYTES)
    request.upload_handlers.insert(0, ceiling)
    return _benchmark_import(request, challenge, found, ceiling)


@csrf_protect
def _benchmark_import(request, challenge, phase, ceiling: PackageCeiling):
    taken = set(PhaseBoard.objects.filter(phase=phase).values_list("track_id", flat=True))
    tracks = [t for t in challenge.tracks.all() if t.pk not in taken]
    recent = imports.imports_of(phase)
    context = {"phase": phase, "imports": recent,
               "running": any(r["state"] in imports.ACTIVE for r in recent)}
    if request.method == "GET" and request.htmx:
        return _page(request, challenge, "_imports.html", context, active="phases")
    posted = request.method == "POST"
    form = BenchmarkImportForm(request.POST if posted else None,
                               request.FILES if posted else None, tracks=tracks,
                               kinds=imports.kind_choices(),
                               initial={"kind": "mmae",
                                        "rubrics_hidden": phase.kind == Phase.Kind.FINAL})
    status = 200
    if posted:
        if ceiling.exceeded:
            form.is_valid()
            form.add_error(None, f"{ceiling.exceeded}: the upload is above the limit of "
                                 f"{ceiling.limit} bytes")
        elif form.is_valid():
            data = form.cleaned_data
            try:
                imports.import_queue(
                    phase=phase, track=get_object_or_404(Track, pk=data["track"],
                                                         challenge=challenge),
                    kind=data["kind"], slug=data["slug"], title=data["title"],
                    rubrics_hidden=data["rubrics_hidden"], metadata=data["metadata"],
                    archive=data["archive"], actor=request.user)
                return redirect("challenges:manage-import", slug=challenge.slug,
                                phase=phase.slug)
            except ServiceError as error:
                _form_errors(form, error)
            except BrokerUnavailable as error:
                form.add_error(None, str(error))
        status = 400
    return _page(request, challenge, "import.html", {**context, "form": form, "tracks": tracks},
                 active="phases", status=status)


# --- tracks ----------------------------------------------------------------------------------

@organizer_page("GET", "POST")
def tracks(request, challenge, track=None):
    """Every track, and the form of a new one (no `track`) or of `track`."""
    found = get_object_or_404(Track, challenge=challenge, slug=track) if track else None
    form = TrackForm(request.POST or None,
                     initial=TrackForm.initial_of(found) if found else None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            fields = {k: v for k, v in form.cleaned_data.items() if k != "reason"}
            try:
                services.track_save(challenge=challenge, actor=request.user, fields=fields,
                                    track=found, reason=form.cleaned_data["reason"])
                return redirect("challenges:manage-tracks", slug=challenge.slug)
            except ServiceError as error:
                _form_errors(form, error)
        status = 400
    return _page(request, challenge, "tracks.html", {
        "tracks": challenge.tracks.all(), "track": found, "form": form,
    }, active="tracks", status=status)


# --- teams -----------------------------------------------------------------------------------

@organizer_page("GET")
def teams(request, challenge):
    members: dict[int, list] = {}
    for m in Membership.objects.filter(challenge=challenge).select_related("user") \
            .order_by("user__username"):
        members.setdefault(m.team_id, []).append(m)
    entries: dict[int, list] = {}
    for e in Entry.objects.filter(team__challenge=challenge) \
            .select_related("submission__current_run", "board__phase", "board__track") \
            .order_by("-received_at"):
        entries.setdefault(e.team_id, []).append(e)
    rows = [{"team": t, "members": members.get(t.pk, []), "entries": entries.get(t.pk, []),
             "tracks": [te.track for te in t.track_entries.select_related("track")]}
            for t in Team.objects.filter(challenge=challenge).order_by("name")]
    return _page(request, challenge, "teams.html", {"rows": rows}, active="teams")


# --- verification ----------------------------------------------------------------------------

def _final_phase(challenge, phase_slug):
    return get_object_or_404(Phase, challenge=challenge, slug=phase_slug,
                             kind=Phase.Kind.FINAL)


@organizer_page("GET", "POST")
def verification(request, challenge, phase):
    """The phase's official rankings (every figure), its finalists and their packages, the
    invitation of finalists (POST) and a decision form for each."""
    found = _final_phase(challenge, phase)
    teams_of = Team.objects.filter(challenge=challenge).order_by("name")
    invite = FinalistsForm(request.POST or None, teams=teams_of)
    status = 200
    if request.method == "POST":
        if invite.is_valid():
            chosen = invite.cleaned_data["teams"]
            try:
                checks.finalists_invite(
                    phase=found, actor=request.user, top=invite.cleaned_data["top"],
                    teams=list(teams_of.filter(pk__in=chosen)) if chosen else None)
                return redirect("challenges:manage-verification", slug=challenge.slug,
                                phase=phase)
            except ServiceError as error:
                _form_errors(invite, error)
        status = 400
    return _verification_page(request, challenge, found, invite=invite, status=status)


def _verification_page(request, challenge, phase, *, invite=None, decisions=None, status=200):
    found = Verification.objects.filter(phase=phase).select_related("team", "decided_by") \
        .order_by("team__name")
    decisions = decisions or {}
    rows = [{"verification": v, "form": decisions.get(v.pk) or DecisionForm(
        initial={"state": v.state if v.state in ("verified", "disqualified") else "verified",
                 "reason": v.reason}),
             "package_bytes": sum(size for _, size in v.package_files)} for v in found]
    return _page(request, challenge, "verification.html", {
        "phase": phase, "rows": rows,
        "invite": invite or FinalistsForm(teams=Team.objects.filter(challenge=challenge)
                                          .order_by("name")),
        # Organizers and staff read every figure (disclosure FULL).
        "rankings": [results_for(board, request.user) for board in phase_boards(phase)],
    }, active="verification", status=status)


@organizer_page("POST")
def verification_decide(request, challenge, pk):
    found = get_object_or_404(Verification.objects.select_related("phase", "team"), pk=pk,
                              phase__challenge=challenge)
    form = DecisionForm(request.POST)
    if form.is_valid():
        try:
            checks.verification_decide(verification=found, actor=request.user,
                                       state=form.cleaned_data["state"],
                                       reason=form.cleaned_data["reason"])
            return redirect("challenges:manage-verification", slug=challenge.slug,
                            phase=found.phase.slug)
        except ServiceError as error:
            _form_errors(form, error)
    return _verification_page(request, challenge, found.phase, decisions={found.pk: form},
                              status=400)


@organizer_page("GET")
def package_download(request, challenge, pk):
    found = get_object_or_404(Verification.objects.select_related("phase", "team"), pk=pk,
                              phase__challenge=challenge)
    path = checks.package_path(found)
    if path is None:
        raise Http404("No package.")
    suffix = ".zip" if path.name.endswith(".zip") else ".tar.gz"
    response = FileResponse(open(path, "rb"), as_attachment=True,
                            filename=f"{challenge.slug}-{found.phase.slug}-team{found.team_id}"
                                     f"-package{suffix}",
                            content_type="application/octet-stream")
    response["Cache-Control"] = "private, no-store"
    return response


# --- the reveal ------------------------------------------------------------------------------

@organizer_page("POST")
def reveal(request, challenge, phase):
    """Reveal the phase once its slug is typed to confirm."""
    found = get_object_or_404(Phase, challenge=challenge, slug=phase)
    if request.POST.get("confirm", "").strip() != found.slug:
        return _page(request, challenge, "error.html", {"errors": [
            f"type {found.slug} to confirm the reveal of {found.name}"]}, active="overview",
            status=400)
    try:
        phase_reveal(found, actor=request.user)
    except RevealError as error:
        return _page(request, challenge, "error.html", {"errors": [str(error)]},
                     active="overview", status=409)
    return redirect("challenges:results", slug=challenge.slug)
