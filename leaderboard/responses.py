"""Responses of the boards, pivots, comparisons, model pages and read API, shared per board
state.

Anonymous visitors all get the same bytes for the same board state and normalised query: the
whole response is cached under them (gzipped once for clients that accept it: these pages
hold no secret, so compression cannot leak one) and a CDN in front may keep it for
BOARD_SHARED_MAX_AGE seconds. Signed-in visitors get a page rendered around the cached body (the
rows are never rendered per request), with their own navigation, private to them. Every
response carries an ETag (the state, the query and who asks) and Last-Modified (when the board
last changed), so that a revalidation answers 304 without a body.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from django.conf import settings
from django.core.cache import cache, caches
from django.http import HttpRequest, HttpResponse
from django.middleware.gzip import GZipMiddleware
from django.utils.cache import get_conditional_response, patch_cache_control, patch_vary_headers
from django.utils.http import http_date

# The state is in the key: an entry outlives its board's state only until this timeout.
RESPONSE_CACHE_SECONDS = 300

_gzip = GZipMiddleware(lambda request: None)


def shared(request: HttpRequest, *, state: str, changed_at, parts: tuple,
           render: Callable[[], HttpResponse]) -> HttpResponse:
    """The response of `render` for a page or API call whose content is fixed by the board
    `state` and `parts` (the normalised, validated query), for the visitor asking."""
    anonymous = not request.user.is_authenticated
    asker = "anonymous" if anonymous else f"user {request.user.pk}"
    digest = hashlib.sha256("|".join(map(str, (state, asker, *parts))).encode()).hexdigest()
    etag = f'"{digest[:40]}"'
    modified = int(changed_at.timestamp()) if changed_at is not None else None
    response = get_conditional_response(request, etag=etag, last_modified=modified)
    if response is None:
        response = _cached(request, digest, etag, render) if anonymous else render()
    if response.status_code in (200, 304):
        response.headers.setdefault("ETag", etag)
        if modified is not None:
            response.headers.setdefault("Last-Modified", http_date(modified))
        if anonymous:
            patch_cache_control(response, public=True, max_age=0,
                                s_maxage=settings.BOARD_SHARED_MAX_AGE)
        else:
            patch_cache_control(response, private=True, no_cache=True)
    patch_vary_headers(response, ("Cookie",))
    return response


def _cached(request: HttpRequest, digest: str, etag: str,
            render: Callable[[], HttpResponse]) -> HttpResponse:
    """The whole response for anonymous visitors, gzipped for those who accept it (its ETag
    then weak, as Django's GZipMiddleware makes it); only a 200 is kept (an error is answered
    afresh)."""
    gzipped = "gzip" in request.headers.get("Accept-Encoding", "")
    key = f"shared-response:{digest}:{'gzip' if gzipped else 'plain'}"
    near = caches["process"]  # this process's copy first, then the cache every process shares
    response = near.get(key)
    if response is not None:
        return response
    response = cache.get(key)
    if response is None:
        response = render()
        if response.status_code != 200:
            return response
        response["ETag"] = etag
        if gzipped:
            response = _gzip.process_response(request, response)
        patch_vary_headers(response, ("Accept-Encoding",))
        cache.set(key, response, RESPONSE_CACHE_SECONDS)
    near.set(key, response, RESPONSE_CACHE_SECONDS)
    return response

