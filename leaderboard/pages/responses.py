"""Responses of the boards, pivots, comparisons, model pages and read API, shared per board
state.

Anonymous visitors all get the same bytes for the same board state and normalised query: the
whole response is cached under them (gzipped once for clients that accept it: these pages
hold no secret, so compression cannot leak one) and a CDN in front may keep it for
BOARD_SHARED_MAX_AGE seconds. Signed-in visitors get a page rendered around the cached body (the
rows are never rendered per request), with their own navigation, private to them; the front
answers it again to their session alone (config.page_cache.mark_private) unless the page says it
shows them what others may not see (`personal`). Every
response carries an ETag (the state, the query and who asks), so that a revalidation answers
304 without a body. It also says Last-Modified (when the board last changed), but a
revalidation by date is answered in full: two changes within one second share a date, and the
ETag, which moves with every state, is the only validator believed.

The key holds exactly what the body (and the headers kept with it) depends on: the board
state, the normalised query, whether the client takes gzip (Accept-Encoding read with its
q-values) and whatever a caller names in `parts` (the API its format and canonical host);
`Vary` names the request headers behind them. Entries live in the "responses" cache, which
is bounded and evicts the least recently used (settings.CACHES). A page that is costly to
render (`costly`: a bootstrap, a pivot) renders afresh at most THROTTLE_RENDER times per
client address; past that the client gets 429 with Retry-After, while answers from the
cache are never limited.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.http import HttpRequest, HttpResponse
from django.http.request import split_domain_port
from django.utils.cache import get_conditional_response, patch_cache_control, patch_vary_headers
from django.utils.functional import SimpleLazyObject, empty
from django.utils.http import http_date
from django.utils.text import compress_string
from django_ratelimit.core import get_usage

from config import page_cache
from config.throttle import too_many_requests
from leaderboard.boards.state import SHARED_SECONDS, shared_kept
from scoring import visibility

# The state is in the key: an entry outlives its board's state only until this timeout.
RESPONSE_CACHE_SECONDS = SHARED_SECONDS


def shared(request: HttpRequest, *, state: str, changed_at, parts: tuple,
           render: Callable[[], HttpResponse], vary: tuple[str, ...] = (),
           costly: bool = False, boards: dict[int, int] | None = None,
           benchmark=None) -> HttpResponse:
    """The response of `render` for a page or API call whose content is fixed by the board
    `state` and `parts` (the normalised, validated query), for the visitor asking. `vary`:
    the request headers besides Cookie and Accept-Encoding that `render` reads; `costly`:
    a fresh render counts against the client's THROTTLE_RENDER; `boards`: the board versions
    ({benchmark id: version}) that fix `state` for good, when they do, so that the front
    (config.page_cache) answers anonymous visitors from the response while they hold;
    `benchmark`: the board the page shows, whose rule of what each viewer may learn
    (scoring.visibility.cache_part: a hidden-rubric board's) is part of the key."""
    epoch = _epoch_before_user(request)
    anonymous = not request.user.is_authenticated
    # A signed-in visitor's validator moves with their epoch too (their name in the page).
    asker = "anonymous" if anonymous else f"user {request.user.pk} {epoch}"
    rule = visibility.cache_part(benchmark, request.user) if benchmark is not None else ""
    digest = hashlib.sha256("|".join(map(str, (state, asker, *([rule] if rule else []),
                                               *parts))).encode()).hexdigest()
    etag = f'"{digest[:40]}"'
    if costly:
        render = _limited(request, render)
    # By ETag only: Last-Modified has a second's grain, which two states may share.
    response = get_conditional_response(request, etag=etag)
    if response is None:
        response = _cached(request, digest, etag, render) if anonymous else render()
    if response.status_code in (200, 304):
        response.headers.setdefault("ETag", etag)
        if changed_at is not None:
            response.headers.setdefault("Last-Modified", http_date(changed_at.timestamp()))
        if anonymous:
            patch_cache_control(response, public=True, max_age=0,
                                s_maxage=settings.BOARD_SHARED_MAX_AGE)
        else:
            patch_cache_control(response, private=True, no_cache=True)
    patch_vary_headers(response, ("Cookie", *vary))
    if boards is not None and response.status_code in (200, 304):
        page_cache.publish(boards)  # read from the database just now: repairs a lost publication
        if anonymous:
            page_cache.mark_shared(request, boards=boards, etag=etag,
                              keep_seconds=RESPONSE_CACHE_SECONDS)
        elif epoch:
            page_cache.mark_private(request, boards=boards, etag=etag, user=request.user.pk,
                               epoch=epoch, keep_seconds=min(
                                   RESPONSE_CACHE_SECONDS, request.session.get_expiry_age()))
    return response


def personal(request: HttpRequest) -> None:
    """The page shows what only its visitor may see: the front never answers it again."""
    page_cache.personal(request)


def _epoch_before_user(request: HttpRequest) -> str:
    """The epoch (config.page_cache.user_epoch) of the user the request's session names, read
    before the user is: a page rendered from a user read before their account changed then
    holds an epoch older than the change's, and is never answered again. "" when the user was
    read already, or the session names none."""
    user = getattr(request, "user", None)
    if not isinstance(user, SimpleLazyObject) or user._wrapped is not empty:
        return ""
    user_id = request.session.get(SESSION_KEY)
    return page_cache.user_epoch(user_id) if user_id is not None else ""


def _limited(request: HttpRequest, render: Callable[[], HttpResponse]):
    """`render`, counted against THROTTLE_RENDER for the client's address (config.throttle
    .client_ip, through RATELIMIT_IP_META_KEY; IPv6 by its /64); past it, the 429 page."""

    def counted() -> HttpResponse:
        rate = settings.THROTTLE_RENDER
        usage = get_usage(request, group="leaderboard:render", key="ip", rate=rate,
                          increment=True)
        if usage is not None and usage["should_limit"]:
            return too_many_requests(request, what="fresh renders of costly pages",
                                     rate=rate, retry_after=max(usage["time_left"], 1))
        return render()

    return counted


def accepts_gzip(request: HttpRequest) -> bool:
    """Whether the request's Accept-Encoding takes gzip, with its q-values (config.page_cache)."""
    return page_cache.takes_gzip(request.headers.get("Accept-Encoding", ""))


def canonical_host(request: HttpRequest) -> str:
    """The request's host (already checked against ALLOWED_HOSTS) as one spelling: lower
    case, no trailing dot, and no port when it is the scheme's default."""
    domain, port = split_domain_port(request.get_host())  # lowers and drops the dot
    default = {"http": "80", "https": "443"}[request.scheme]
    return domain if port in ("", default) else f"{domain}:{port}"


def _cached(request: HttpRequest, digest: str, etag: str,
            render: Callable[[], HttpResponse]) -> HttpResponse:
    """The whole response for anonymous visitors, gzipped for those who accept it (its ETag
    then weak, as Django's GZipMiddleware makes it); only a 200 is kept (an error is answered
    afresh)."""
    gzipped = accepts_gzip(request)

    def made() -> HttpResponse:
        response = render()
        if response.status_code == 200:
            response["ETag"] = etag
            if gzipped:
                _compress(response)
            patch_vary_headers(response, ("Accept-Encoding",))
        return response

    return shared_kept("shared-response", (digest, "gzip" if gzipped else "plain"), made,
                       keep=lambda response: response.status_code == 200)


def _compress(response: HttpResponse) -> None:
    """Gzip the body, as GZipMiddleware would for a client it judged to take gzip (the
    middleware's own test of Accept-Encoding ignores q-values)."""
    response.content = compress_string(response.content)
    response["Content-Length"] = str(len(response.content))
    response["Content-Encoding"] = "gzip"
    response["ETag"] = f"W/{response['ETag']}"  # the bytes differ from the plain one's
