"""Gzip and ETags for pages rendered per request (the explorer of a submission): each body is
validated by its own digest, and compressed only when it holds no secret.

BREACH: a compressed body's length tells whether text an attacker puts in it (a search
reflected in the page) repeats a secret beside it. So only a body with none is compressed: a
published submission's (nothing in it is private), and then only the bare partials, or a whole
page for an anonymous visitor (a signed-in visitor's page carries a CSRF token in its log-out
form). A body whose rendering asked for a CSRF token is never compressed, whatever the caller
said.

Each encoding has its own ETag: "<digest>" for the plain body, "<digest>-gzip" for the gzipped
one, so that a cache never takes one for the other; a revalidation whose If-None-Match names
the ETag of what it would be sent answers 304.
"""

from __future__ import annotations

import hashlib

from django.http import HttpRequest, HttpResponse
from django.utils.cache import get_conditional_response, patch_cache_control, patch_vary_headers
from django.utils.text import compress_string

from config import page_cache
from leaderboard.pages.responses import RESPONSE_CACHE_SECONDS, accepts_gzip

# Below this, gzip's header and trailer outweigh what it saves.
MIN_COMPRESSED_BYTES = 200


def validated(request: HttpRequest, response: HttpResponse, *, secret_free: bool,
              vary: tuple[str, ...] = (), boards: dict[int, int] | None = None) -> HttpResponse:
    """The response with its ETag, Vary and Cache-Control, gzipped when `secret_free` and
    the client takes gzip, or 304 when the client's copy is current. `vary`: the request
    headers besides Cookie and Accept-Encoding that the body depends on. `boards`: the board
    versions ({benchmark id: version}, read with what the body shows) that fix the body for
    good, when they do: the front (config.page_cache) then answers anonymous visitors from it
    while they hold, as it answers the boards."""
    patch_vary_headers(response, ("Cookie", "Accept-Encoding", *vary))
    if response.status_code != 200 or response.streaming:
        return response
    anonymous = not request.user.is_authenticated
    shared = anonymous and secret_free and boards is not None
    # Anyone's copy may be kept, but is asked about every time: the access check runs on
    # each revalidation, so a submission made private stops being served at once (by the
    # front too: the change raised the board version, published before it committed).
    if not anonymous or not secret_free:
        patch_cache_control(response, private=True, no_cache=True)
    elif shared:
        patch_cache_control(response, public=True, no_cache=True)
    else:
        patch_cache_control(response, no_cache=True)
    gzipped = (secret_free and not _csrf_token_rendered(request) and accepts_gzip(request)
               and len(response.content) >= MIN_COMPRESSED_BYTES)
    digest = hashlib.sha256(response.content).hexdigest()[:40]
    response["ETag"] = f'"{digest}-gzip"' if gzipped else f'"{digest}"'
    if shared:
        page_cache.publish(boards)  # read from the database just now: repairs a lost publication
        page_cache.mark_shared(request, boards=boards, etag=response["ETag"],
                          keep_seconds=RESPONSE_CACHE_SECONDS)
    conditional = get_conditional_response(request, etag=response["ETag"], response=response)
    if conditional is not response:  # 304 (or 412 for an If-Match that fails)
        return conditional
    if gzipped:
        response.content = compress_string(response.content)
        response["Content-Length"] = str(len(response.content))
        response["Content-Encoding"] = "gzip"
    return response


def _csrf_token_rendered(request: HttpRequest) -> bool:
    """Whether this request's rendering asked for a CSRF token (django.middleware.csrf
    .get_token marks the request so)."""
    return bool(request.META.get("CSRF_COOKIE_NEEDS_UPDATE"))
