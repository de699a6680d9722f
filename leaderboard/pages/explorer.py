"""A submission's page: figures, slices and the per-sample explorer, and its audio.

Every view here looks the submission up with `submission_get`, the one access check:
published for anyone, otherwise its owner and staff, 404 for the rest; on a hidden-rubric
benchmark, a 404 too for anyone who may not learn its per-item results (its author included:
scoring.visibility).
"""

from __future__ import annotations

import re
from pathlib import Path

from django.http import FileResponse, Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import http_date
from django.views.decorators.http import require_safe
from django_htmx.http import push_url

from judge import families
from leaderboard.boards import explorer_selectors as selectors
from leaderboard.boards.spectrogram_selectors import spectrograms_annotate
from leaderboard.boards.state import board_state
from leaderboard.pages.compression import validated
from leaderboard.pages.forms import ExplorerForm
from scoring import visibility
from scoring.kinds import get_kind
from submissions.selectors import submission_get
from submissions.signals import signals_annotate

AUDIO_WHICH = re.compile(r"output|input[1-9][0-9]{0,2}")


def _explorer(request, submission) -> dict:
    """The explorer's context for the page and its partial; "explorer" is None on bad input."""
    kind = get_kind(submission.benchmark.kind)
    form = ExplorerForm(request.GET, buckets=selectors.slice_buckets(submission.benchmark),
                        kind=kind)
    context = {"submission": submission, "form": form, "explorer": None, "kind": kind,
               "page_url": reverse("leaderboard:submission", args=[submission.pk]),
               "samples_url": reverse("leaderboard:submission-samples", args=[submission.pk])}
    if not form.is_valid():
        return context
    query = form.query()
    try:
        explorer = selectors.explorer_page(submission=submission, query=query)
    except selectors.ExplorerError as exc:
        form.add_error("page", str(exc))
        return context
    page = explorer["page"]
    spectrograms_annotate(submission, explorer["samples"])
    signals_annotate(submission, explorer["samples"])
    explorer["here"] = form.querystring(page=query.page)
    explorer["previous"] = form.querystring(page=page.previous_page_number()) \
        if page.has_previous() else None
    explorer["next"] = form.querystring(page=page.next_page_number()) \
        if page.has_next() else None
    return {**context, "query": query, "explorer": explorer}


# What a page shows while a spectrogram is still being drawn (leaderboard/_spectrogram.html):
# such a page changes without its board's version, so the front must not keep it. (An output's
# signals measured after its submission is shown change the board: submissions.signals.)
SPECTROGRAM_PENDING = b'class="spectrogram-pending"'


def _fixed_by(submission, response) -> dict[int, int] | None:
    """The board version that fixes a published submission's page for good (its row and its
    benchmark's version were read in one query, before anything the page shows: a change
    that commits later raises the version), or None while the page can change without it
    (a spectrogram being drawn)."""
    if response.status_code != 200 or SPECTROGRAM_PENDING in response.content:
        return None
    return board_state(submission.benchmark).versions


@require_safe
def submission_page(request, pk):
    submission = submission_get(user=request.user, pk=pk)
    visibility.require(submission.benchmark, request.user)
    context = _explorer(request, submission)
    context["figures"] = selectors.submission_figures(submission)
    context["judge_family"] = submission.current_run is not None and families.same_family(
        submission.model.base_family, submission.current_run.judge_model)
    status = 400 if context["explorer"] is None else 200
    response = render(request, "leaderboard/submission.html", context, status=status)
    # The whole page is compressed for anonymous visitors only (who see only published
    # submissions): a signed-in visitor's holds a CSRF token (leaderboard.pages.compression).
    return validated(request, response, secret_free=not request.user.is_authenticated,
                     boards=_fixed_by(submission, response))


@require_safe
def submission_samples(request, pk):
    """The explorer's list alone, for htmx; the page includes the same template."""
    submission = submission_get(user=request.user, pk=pk)
    visibility.require(submission.benchmark, request.user)
    context = _explorer(request, submission)
    if context["explorer"] is None:
        response = render(request, "leaderboard/_samples.html", context, status=400)
    else:
        response = render(request, "leaderboard/_samples.html", context)
    if request.htmx and context["explorer"] is not None:
        push_url(response, context["page_url"] + context["explorer"]["here"])
    return validated(request, response, vary=("HX-Request",),
                     secret_free=selectors.published(submission, request.user),
                     boards=_fixed_by(submission, response))


@require_safe
def submission_rubrics(request, pk, item_key):
    """What a sample's <details> opens: its rubrics' votes (or judge replies), fetched by
    static/js/rubrics.js as a fragment (HX-Request), else a page of its own for a browser
    without scripts, where the sample's summary links."""
    submission = submission_get(user=request.user, pk=pk)
    visibility.require(submission.benchmark, request.user)
    sample = selectors.sample_detail(submission=submission, item_key=item_key)
    if sample is None:
        raise Http404("no such item")
    context = {"submission": submission, "s": sample,
               "kind": get_kind(submission.benchmark.kind)}
    if request.htmx:
        response = render(request, sample["detail_template"], context)
    else:
        response = render(request, "leaderboard/sample_rubrics.html", context)
    return validated(request, response, vary=("HX-Request",),
                     secret_free=(bool(request.htmx) or not request.user.is_authenticated)
                     and selectors.published(submission, request.user),
                     boards=_fixed_by(submission, response))


@require_safe
def submission_audio(request, pk, item_key, which):
    """One of a sample's players: an input of the benchmark or the submitted output (none
    while the output is withheld: submissions.withheld)."""
    submission = submission_get(user=request.user, pk=pk)
    visibility.require(submission.benchmark, request.user)
    if not AUDIO_WHICH.fullmatch(which):
        raise Http404("no such audio")
    if which == "output" and selectors.output_withheld(submission, item_key):
        raise Http404("this output is withheld while the listening panel rates it")
    path = selectors.audio_file(submission, item_key, which)
    if path is None:
        raise Http404("no such audio")
    return ranged_file_response(request, path, content_type=audio_type(path))


# --- HTTP range requests (RFC 9110 section 14) ---------------------------------------------
# Django's FileResponse always sends the whole file; browsers seek in <audio> with ranges.
# django-ranged-response would do this but has had no release since 2017.

_RANGE = re.compile(r"bytes=(\d*)-(\d*)")
# No file reaches 2**63 bytes; a longer number would also be too long for int() past 4,300
# digits, so a header holding one is ignored like any other this server does not serve.
_MAX_DIGITS = len(str(2**63))


class RangeNotSatisfiable(ValueError):
    pass


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The inclusive (first, last) bytes a Range header asks of a file of `size` bytes.

    None means "send the whole file": no header, or one this server ignores as RFC 9110
    allows (malformed, several ranges, last before first, a number past any file's size).
    Raises RangeNotSatisfiable when the range starts past the end or asks for the last 0
    bytes.
    """
    match = _RANGE.fullmatch((header or "").strip())
    if match is None or match.groups() == ("", ""):
        return None
    first, last = (g.lstrip("0") or "0" if g else "" for g in match.groups())
    if max(len(first), len(last)) > _MAX_DIGITS:
        return None
    if first == "":  # a suffix: the last N bytes
        if int(last) == 0 or size == 0:
            raise RangeNotSatisfiable
        return max(0, size - int(last)), size - 1
    first = int(first)
    if last != "" and int(last) < first:
        return None
    if first >= size:
        raise RangeNotSatisfiable
    return first, size - 1 if last == "" else min(int(last), size - 1)


def _read(path: Path, first: int, length: int, block: int = 64 * 1024):
    with open(path, "rb") as handle:
        handle.seek(first)
        while length > 0:
            data = handle.read(min(block, length))
            if not data:
                return
            length -= len(data)
            yield data


def ranged_file_response(request, path: Path, *, content_type: str) -> HttpResponse:
    """The file, or the one byte range the request asks for (206), or 416."""
    stat = path.stat()
    size, modified = stat.st_size, http_date(stat.st_mtime)
    header = request.headers.get("Range")
    if_range = request.headers.get("If-Range")
    if if_range is not None and if_range != modified:
        header = None  # the client's copy is stale: send the whole new file
    try:
        span = byte_range(header, size)
    except RangeNotSatisfiable:
        response = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
    else:
        if span is None:
            response = FileResponse(open(path, "rb"), content_type=content_type)
        else:
            first, last = span
            response = StreamingHttpResponse(_read(path, first, last - first + 1),
                                             status=206, content_type=content_type)
            response["Content-Length"] = str(last - first + 1)
            response["Content-Range"] = f"bytes {first}-{last}/{size}"
    response["Accept-Ranges"] = "bytes"
    response["Last-Modified"] = modified
    # Visibility can change (an author may make a submission private): no shared caching.
    response["Cache-Control"] = "private, max-age=3600"
    return response


def audio_type(path: Path) -> str:
    """audio/wav or audio/flac from the file's first bytes (uploads may be misnamed)."""
    with open(path, "rb") as handle:
        head = handle.read(12)
    if head[:4] in (b"RIFF", b"RIFX", b"RF64") and head[8:12] == b"WAVE":
        return "audio/wav"
    if head[:4] == b"fLaC":
        return "audio/flac"
    return {".wav": "audio/wav", ".flac": "audio/flac"}.get(path.suffix.lower(),
                                                            "application/octet-stream")
