"""A challenge's public pages: /c/<slug>/ (its description, phases with their instants in the
visitor's local time and the organizers' time zone, a countdown to the next closing, tracks
with their rules and links to their boards and the results), /c/<slug>/results/ (each phase's
official ranking per track, as scoring.visibility.disclosure lets the viewer read it:
verification states, disqualifications with their public reason, Rank Delta), and
/c/<slug>/verification/, where a finalist's member uploads the team's reproducibility
package (404 to anyone else); /c/ lists every challenge."""

from __future__ import annotations

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_http_methods

from challenges import verification as checks
from challenges.models import Challenge, Phase, PhaseBoard
from challenges.official import phase_boards, results_for
from challenges.organizer_forms import PackageForm, zone_of
from challenges.roles import may_organize
from config.errors import ServiceError
from leaderboard.boards.snapshots import snapshot_latest


def _private(response):
    # Pages that differ by viewer (disclosure, the organizer's links) are never shared.
    response["Cache-Control"] = "private, no-cache"
    return response


@require_http_methods(["GET"])
def challenge_list(request):
    """Every challenge, newest first, with its phases' closing instants."""
    now = timezone.now()
    rows = []
    for challenge in Challenge.objects.prefetch_related("phases").order_by("-created_at"):
        phases = list(challenge.phases.all())
        upcoming = sorted((p for p in phases if p.closes_at > now), key=lambda p: p.closes_at)
        rows.append({"challenge": challenge, "zone": zone_of(challenge).key,
                     "next_closing": upcoming[0] if upcoming else None,
                     "phases": len(phases)})
    return _private(render(request, "challenges/public/list.html", {"rows": rows}))


@require_http_methods(["GET"])
def challenge_page(request, slug):
    challenge = get_object_or_404(Challenge, slug=slug)
    now = timezone.now()
    phases = list(challenge.phases.all())
    boards: dict[int, list] = {}
    for board in PhaseBoard.objects.filter(phase__challenge=challenge) \
            .select_related("benchmark", "phase").order_by("phase__opens_at"):
        boards.setdefault(board.track_id, []).append(board)
    upcoming = sorted((p for p in phases if p.closes_at > now), key=lambda p: p.closes_at)
    return _private(render(request, "challenges/public/challenge.html", {
        "challenge": challenge, "zone": zone_of(challenge).key, "now": now,
        "phases": [{"phase": p, "state": "open" if p.opens_at <= now < p.closes_at else
                    ("closed" if now >= p.closes_at else "upcoming")} for p in phases],
        "next_closing": upcoming[0] if upcoming else None,
        "tracks": [{"track": t, "boards": boards.get(t.pk, [])}
                   for t in challenge.tracks.all()],
        "organizer": may_organize(challenge, request.user),
        "finalist": bool(checks.member_verifications(challenge, request.user)),
    }))


@require_http_methods(["GET"])
def challenge_results(request, slug):
    challenge = get_object_or_404(Challenge, slug=slug)
    phases = sorted(challenge.phases.all(), key=lambda p: (p.kind != Phase.Kind.FINAL,
                                                           -p.closes_at.timestamp()))
    shown = [{"phase": p, "boards": [
        {"results": results_for(board, request.user),
         "snapshot": snapshot_latest(board.benchmark) if p.revealed_at else None}
        for board in phase_boards(p)]} for p in phases]
    return _private(render(request, "challenges/public/results.html", {
        "challenge": challenge, "zone": zone_of(challenge).key, "phases": shown,
        "organizer": may_organize(challenge, request.user)}))


class PackageCeiling(FileUploadHandler):
    """Stops reading an upload once its files pass CHALLENGE_PACKAGE_MAX_BYTES, so that no more
    than that reaches the disk (Django spools uploads before a view sees them); `exceeded`
    names the file then."""

    def __init__(self, request, limit: int):
        super().__init__(request)
        self.limit = limit
        self.seen = 0
        self.exceeded = ""

    def receive_data_chunk(self, raw_data, start):
        self.seen += len(raw_data)
        if self.seen > self.limit:
            self.exceeded = self.file_name or "package"
            raise StopUpload(connection_reset=True)
        return raw_data  # on to the handlers that keep it

    def file_complete(self, file_size):
        return None


@csrf_exempt  # the ceiling goes in before the body is read; CSRF is checked just after
@require_http_methods(["GET", "POST"])
def finalist_package(request, slug):
    """The team's reproducibility checks and their package upload, for its members alone."""
    challenge = get_object_or_404(Challenge, slug=slug)
    found = checks.member_verifications(challenge, request.user)
    if not found:  # before a byte of the body is read
        raise Http404("No such page.")
    ceiling = PackageCeiling(request, settings.CHALLENGE_PACKAGE_MAX_BYTES)
    request.upload_handlers.insert(0, ceiling)
    return _finalist_package(request, challenge, found, ceiling)


@csrf_protect
def _finalist_package(request, challenge, found, ceiling: PackageCeiling):
    slug = challenge.slug
    forms = {v.pk: PackageForm() for v in found}
    status = 200
    if request.method == "POST":
        try:
            chosen = next(v for v in found if str(v.pk) == request.POST.get("verification"))
        except StopIteration:
            raise Http404("No such check.") from None
        form = PackageForm(request.POST, request.FILES)
        forms[chosen.pk] = form
        if ceiling.exceeded:
            form.is_valid()
            form.errors["package"] = form.error_class([
                f"{ceiling.exceeded}: above the limit of {ceiling.limit} bytes"])
        elif form.is_valid():
            try:
                checks.package_upload(verification=chosen, user=request.user,
                                      upload=form.cleaned_data["package"])
                return redirect("challenges:finalist-package", slug=slug)
            except ServiceError as error:
                form.add_error("package", error.problems)
        status = 400
    return _private(render(request, "challenges/public/package.html", {
        "challenge": challenge, "rows": [{"verification": v, "form": forms[v.pk]}
                                         for v in found],
    }, status=status))
