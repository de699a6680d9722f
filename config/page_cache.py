"""The page cache in front of Django ("the front"): shared pages answered to anonymous visitors
before Django, from the bytes and headers Django sent for them, with no database round trip.

Django marks what may be answered so (`mark_shared`, from leaderboard.pages.responses.shared: a
response to an anonymous visitor whose content is fixed by the board versions it names). The
front keeps it whole, as Django's middleware finished it (security headers and CSP
included), in this process, under the request as it came: the scheme, the host, the path, the
raw query string, whether the client takes gzip, and the values of the other headers its
`Vary` names. A query string the front has not seen Django answer is Django's to validate and
normalise. A later request for the same is answered from what was kept while every board
version it names is current: the versions are read from the default cache (Redis) on each
answer, in one round trip with nothing else, where a board change publishes them (`publish`,
from scoring.boards.board_changed before the change commits and again after, and from every
render), so that from the commit on no page of the state before is answered. A version the
cache does not hold (Redis down, the entry evicted) sends the request to Django, which
publishes it again.

A signed-in visitor's page is kept too, for that visitor only (`mark_private`): under the
values of their session and CSRF cookies, the credentials that made it, and with the user's
epoch (`user_epoch`), a token that changes whenever what their pages show of them may change
(their account saved or deleted, a log-out). Each answer from it reads the epoch from the cache
with the board versions (the same round trip to Redis, none to the database), so a log-out or a
changed account shows at once. A page whose content depends on
who asks beyond the navigation (a model's page to its owner or to staff) is never kept
(`personal`). A request with a session cookie that Django answers as anonymous (the session
ended, or the read API, which reads no session) is kept under that cookie's value as the public
page it is.

What goes to Django unchanged: any method but GET and HEAD; an Authorization header (an API
token); any cookie but the CSRF and session cookies (the messages cookie carries messages, and
any other may be read by some view). The CSRF cookie is read by unsafe methods only, and by
pages that render a token, which set the cookie in their response: a response with Set-Cookie
is never kept (but a signed-in page's renewal of the very CSRF cookie it was asked with), nor
an anonymous one that is not public, a signed-in one that is not private, one that names a CSP
nonce (a nonce must not be reused) or varies on `*`. Also If-Match and If-Unmodified-Since,
and a revalidation (If-None-Match) before this process has seen Django answer one for that
URL with 304, whose headers it then keeps. Answers from the front are not counted by the
API's rate limits, as Django's answers from its cache are not counted by THROTTLE_RENDER: they
cost less than a static file.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie

from django.conf import settings
from django.core.cache import caches
from django.utils.http import parse_etags

ENVIRON_KEY = "config.page_cache.note"

# A published version outlives its last publication this long: a lost publication (Redis
# unreachable when a change committed) is repaired by the next render or the periodic
# sweep (leaderboard.tasks.refresh_boards), at the latest when the version expires.
PUBLISHED_SECONDS = 3600

_publishing = threading.Lock()


def version_key(benchmark_id: int) -> str:
    return f"board-version:{benchmark_id}"


def publish(versions: dict[int, int]) -> None:
    """Tell every front the board versions read from the database. A version only rises: two
    writers that read different versions at once leave the greater."""
    cache = caches["default"]
    for benchmark_id, version in versions.items():
        key = version_key(benchmark_id)
        if hasattr(cache, "raise_to"):  # Redis: in one step (config.cache)
            cache.raise_to(key, int(version), PUBLISHED_SECONDS)
            continue
        with _publishing:  # a cache of this process only
            found = cache.get(key)
            if found is None or found <= version:
                cache.set(key, int(version), PUBLISHED_SECONDS)


# An epoch outlives its last reading this long; when it expires, the pages kept under it are
# rendered again.
EPOCH_SECONDS = 24 * 3600


def epoch_key(user_id: int) -> str:
    return f"user-epoch:{user_id}"


def user_epoch(user_id: int) -> str:
    """The user's epoch as the cache holds it, made if it holds none; "" when the cache cannot
    give one (Redis down), and then nothing of theirs is kept."""
    cache, key = caches["default"], epoch_key(user_id)
    found = cache.get(key)
    if found is None:
        cache.add(key, secrets.token_hex(8), EPOCH_SECONDS)
        found = cache.get(key)
    return found or ""


def new_epoch(user_id: int) -> None:
    """What the user's pages show of them may have changed: none kept before is answered
    again. A new random token, not a count: an epoch lost with the cache never comes back."""
    caches["default"].set(epoch_key(user_id), secrets.token_hex(8), EPOCH_SECONDS)


@dataclass
class Note:
    """What Django says of one response for the front to keep it (in the request's environ)."""

    boards: dict[int, int] | None = None
    etag: str = ""
    keep_seconds: float = 0
    user: int | None = None  # a signed-in visitor's page: whose, and under which epoch
    epoch: str = ""
    personal: bool = False


def mark_shared(request, *, boards: dict[int, int], etag: str, keep_seconds: float) -> None:
    """Say that the response to `request`, an anonymous visitor's, is everyone's while the
    `boards` ({benchmark id: board version}) stay as they are; its validator is `etag`."""
    note = request.META.get(ENVIRON_KEY)
    if note is not None:
        note.boards, note.etag, note.keep_seconds = dict(boards), etag, keep_seconds


def mark_private(request, *, boards: dict[int, int], etag: str, keep_seconds: float,
                 user: int, epoch: str) -> None:
    """Say that the response to `request`, a signed-in visitor's, is theirs to be answered
    again while the `boards` stay as they are and `user`'s epoch is still `epoch` (read before
    the user was: `leaderboard.pages.responses`)."""
    note = request.META.get(ENVIRON_KEY)
    if note is not None and epoch:
        note.boards, note.etag, note.keep_seconds = dict(boards), etag, keep_seconds
        note.user, note.epoch = user, epoch


def personal(request) -> None:
    """Say that the response to `request` shows what only its visitor may see (beyond the
    navigation): it is never kept."""
    note = request.META.get(ENVIRON_KEY)
    if note is not None:
        note.personal = True


def takes_gzip(accept_encoding: str) -> bool:
    """Whether an Accept-Encoding value takes gzip (RFC 9110 12.5.3): `gzip` or `x-gzip` with
    a q above 0, or else `*` with a q above 0; `q=0` means not acceptable."""
    weights = {}
    for item in accept_encoding.split(","):
        coding, *params = (part.strip() for part in item.split(";"))
        weight = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0  # a weight that cannot be read accepts nothing
        if coding:
            weights[coding.lower()] = weight
    for coding in ("gzip", "x-gzip", "*"):
        if coding in weights:
            return weights[coding] > 0
    return False


@dataclass
class Kept:
    """One response as Django sent it, and the 304 it sends on a revalidation once seen."""

    boards: dict[int, int]
    etag: str
    until: float
    user: int | None = None
    epoch: str = ""
    status: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    not_modified: list[tuple[str, str]] | None = None


# What a kept response costs beyond its body (its headers and keys): so that responses without
# a body (a 304 under many spellings of a query) are bounded too.
ENTRY_BYTES = 2048

# Request headers that the front answers by itself, or never answers.
PASSED_HEADERS = ("HTTP_AUTHORIZATION", "HTTP_IF_MATCH", "HTTP_IF_UNMODIFIED_SINCE")


class PageCache:
    """The WSGI layer around Django's application (config.wsgi)."""

    def __init__(self, app, *, clock=time.monotonic):
        self.app, self.clock = app, clock
        self.kept: OrderedDict[tuple, Kept] = OrderedDict()  # least recently used first
        # Per URL: the other headers its response varies on, and how many variants are kept.
        self.varies: dict[tuple, list] = {}
        self.size = 0
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        if not settings.FRONT or not self._eligible(environ):
            return self.app(environ, start_response)
        base, credentials = _base(environ), _credentials(environ)
        key = self._key(base, environ, credentials)
        answer = self._answer(key, environ) if key is not None else None
        if answer is not None:
            status, headers, body = answer
            start_response(status, headers)
            return [body]
        return self._through_django(base, credentials, environ, start_response)

    def _eligible(self, environ) -> bool:
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            return False
        if any(name in environ for name in PASSED_HEADERS):
            return False
        return _cookies_known(environ.get("HTTP_COOKIE", ""))

    def _key(self, base: tuple, environ, credentials: tuple | None) -> tuple | None:
        varies = self.varies.get(base)
        if varies is None:
            return None
        return (base, takes_gzip(environ.get("HTTP_ACCEPT_ENCODING", "")),
                tuple(environ.get(name, "") for name in varies[0]), credentials)

    def _answer(self, key: tuple, environ) -> tuple[str, list, bytes] | None:
        with self._lock:
            kept = self.kept.get(key)
            if kept is not None:
                self.kept.move_to_end(key)
        if kept is None or kept.until <= self.clock() or not self._current(kept):
            return None
        asked = environ.get("HTTP_IF_NONE_MATCH")
        if asked is not None and _matches(kept.etag, asked):
            if kept.not_modified is None:
                return None  # Django's 304 is not known yet: Django answers, and it is kept
            return "304 Not Modified", kept.not_modified, b""
        if not kept.status:
            return None
        body = b"" if environ["REQUEST_METHOD"] == "HEAD" else kept.body
        return kept.status, kept.headers, body

    def _current(self, kept: Kept) -> bool:
        """Whether each board's version is still the one the response was made under, and a
        signed-in visitor's epoch still theirs (else their account changed or they logged
        out), as the cache holds them now: one round trip. (Redis down: the cache answers as
        an empty one at once, config.cache, and Django answers.)"""
        wanted = {version_key(b): v for b, v in kept.boards.items()}
        if kept.user is not None:
            wanted[epoch_key(kept.user)] = kept.epoch
        found = caches["default"].get_many(list(wanted))
        return all(found.get(key) == value for key, value in wanted.items())

    def _through_django(self, base: tuple, credentials: tuple | None, environ,
                        start_response):
        note = environ[ENVIRON_KEY] = Note()
        answered = []

        def capture(status, headers, exc_info=None):
            answered[:] = [status, headers, exc_info]
            return _no_write

        result = self.app(environ, capture)  # Django's handler starts the response in it
        status, headers, exc_info = answered
        if not self._keepable(note, environ, status, headers, credentials):
            start_response(status, headers, exc_info)
            return result
        try:
            body = b"".join(result)
        finally:
            if hasattr(result, "close"):
                result.close()  # Django's request_finished: connections closed
        self._keep(base, credentials, environ, note, status, headers, body)
        start_response(status, headers)
        return [body]

    def _keepable(self, note: Note, environ, status: str, headers: list,
                  credentials: tuple | None) -> bool:
        code = status.split(" ", 1)[0]
        if note.boards is None or note.personal or code not in ("200", "304") or \
                (code == "200" and environ["REQUEST_METHOD"] != "GET"):
            return False
        if note.user is not None and credentials is None:
            return False
        # A public page answered to a session cookie (one that signs no one in, or a view that
        # reads no session) is kept under that cookie: whoever sends it gets the same.
        named = {name.lower(): value for name, value in headers}
        cookies = [value for name, value in headers if name.lower() == "set-cookie"]
        if note.user is None:
            if cookies or "public" not in named.get("cache-control", ""):
                return False
        elif not _renews_csrf(cookies, credentials[1]) or \
                "private" not in named.get("cache-control", ""):
            return False
        return "'nonce-" not in named.get("content-security-policy", "") \
            and "*" not in _names(named.get("vary", ""))

    def _keep(self, base, credentials, environ, note: Note, status: str, headers: list,
              body: bytes):
        named = {name.lower(): value for name, value in headers}
        if status.startswith("200") and named.get("content-length") not in (None,
                                                                           str(len(body))):
            return
        varies = tuple(f"HTTP_{name.upper().replace('-', '_')}"
                       for name in _names(named.get("vary", ""))
                       if name not in ("cookie", "accept-encoding"))
        with self._lock:
            found = self.varies.get(base)
            if found is None or found[0] != varies:  # a new URL, or its Vary changed
                for key in [k for k in self.kept if k[0] == base] if found else ():
                    self._drop(key)
                self.varies[base] = [varies, 0]
            key = self._key(base, environ, credentials)
            kept = self.kept.get(key)
            if kept is None or kept.boards != note.boards or kept.etag != note.etag or \
                    kept.epoch != note.epoch:
                if kept is None:
                    self.varies[base][1] += 1
                    self.size += ENTRY_BYTES
                else:  # another state's: replaced
                    self.size -= len(kept.body)
                kept = self.kept[key] = Kept(note.boards, note.etag,
                                             self.clock() + note.keep_seconds,
                                             note.user, note.epoch)
            if status.startswith("304"):
                kept.not_modified = list(headers)
            else:
                self.size += len(body) - len(kept.body)
                kept.status, kept.headers, kept.body = status, list(headers), body
            self.kept.move_to_end(key)
            while self.kept and self.size > settings.FRONT_MAX_BYTES:
                self._drop(next(iter(self.kept)))

    def _drop(self, key: tuple) -> None:
        """Forget a kept response (the lock held), and its URL once none of it is kept."""
        dropped = self.kept.pop(key)
        self.size -= ENTRY_BYTES + len(dropped.body)
        counted = self.varies.get(key[0])
        if counted is not None:
            counted[1] -= 1
            if counted[1] <= 0:
                del self.varies[key[0]]


def _no_write(data: bytes) -> None:
    raise RuntimeError("the front takes the body as an iterable, not through write()")


def _base(environ) -> tuple:
    """The request as the front keys it, before the headers its response varies on."""
    proxy = settings.SECURE_PROXY_SSL_HEADER[0] if getattr(
        settings, "SECURE_PROXY_SSL_HEADER", None) else None
    return (environ.get("wsgi.url_scheme"), environ.get(proxy) if proxy else None,
            environ.get("HTTP_HOST", ""), environ.get("SERVER_NAME"),
            environ.get("SERVER_PORT"), environ.get("SCRIPT_NAME", ""),
            environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", ""))


def _names(vary: str) -> list[str]:
    return [name.strip().lower() for name in vary.split(",") if name.strip()]


def _cookie_pairs(header: str):
    for pair in header.split(";"):
        name, _, value = pair.partition("=")
        if name.strip():
            yield name.strip(), value.strip()


def _cookies_known(header: str) -> bool:
    """Whether every cookie sent is the CSRF or the session cookie (or none is sent), each
    once."""
    names = [name for name, _ in _cookie_pairs(header)]
    return len(names) == len(set(names)) and \
        set(names) <= {settings.CSRF_COOKIE_NAME, settings.SESSION_COOKIE_NAME}


def _credentials(environ) -> tuple | None:
    """A signed-in visitor's session and CSRF cookie values, which key their pages; None
    without a session cookie (the CSRF cookie alone keys nothing: anonymous pages hold no
    token)."""
    cookies = dict(_cookie_pairs(environ.get("HTTP_COOKIE", "")))
    session = cookies.get(settings.SESSION_COOKIE_NAME)
    if not session:
        return None
    return session, cookies.get(settings.CSRF_COOKIE_NAME, "")


def _renews_csrf(set_cookies: list[str], sent: str) -> bool:
    """Whether every Set-Cookie only renews the CSRF cookie the request sent, with its value
    (Django does so on each page that renders a token)."""
    for header in set_cookies:
        try:
            parsed = SimpleCookie(header)
        except CookieError:
            return False
        if list(parsed) != [settings.CSRF_COOKIE_NAME] or not sent or \
                parsed[settings.CSRF_COOKIE_NAME].value != sent:
            return False
    return True


def _matches(etag: str, asked: str) -> bool:
    """If-None-Match as Django compares it (django.utils.cache): weakly, `*` matching."""
    etags = parse_etags(asked)
    return etags == ["*"] or etag.removeprefix("W/") in (e.removeprefix("W/") for e in etags)
