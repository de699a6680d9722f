"""The page cache in front of Django (config/page_cache.py): anonymous visitors' shared pages
answered before Django from the bytes and headers Django sent, with no database query; 304 and
HEAD; gzip or not by Accept-Encoding; a board change passed on from its commit; a signed-in
visitor's page kept for their session alone, until their account changes or they log out; a
query not seen, another method: Django's."""

import gzip
import io
import sys
from dataclasses import dataclass
from http.cookies import SimpleCookie

import pytest
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections, connection
from django.test.utils import CaptureQueriesContext

from config.page_cache import ENTRY_BYTES, PageCache, publish, version_key
from leaderboard.boards import rank_ranges
from scoring.boards import board_changed, state_token
from tests.concurrent import redis_cache  # noqa: F401 - a fixture
from tests.factories import board_benchmark, scored_submission
from tests.html import one, select, texts

PAGES = ["/b/mmae/", "/b/mmae/?dimension=modality&bucket=sound",
         "/b/mmae/pivot/?dimension=modality&metric=EMR", "/b/mmae/compare/",
         "/api/leaderboards/mmae/", "/api/leaderboards/mmae/?format=csv", "model"]


@dataclass
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


def call(app, url: str, *, method: str = "GET", headers: dict | None = None,
         scheme: str = "http") -> Answer:
    """`app` called as gunicorn calls it, for `url` with request `headers`."""
    path, _, query = url.partition("?")
    environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query,
               "SCRIPT_NAME": "", "SERVER_NAME": "testserver", "SERVER_PORT": "80",
               "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
               "HTTP_HOST": "testserver", "wsgi.url_scheme": scheme,
               "wsgi.input": io.BytesIO(b""), "wsgi.errors": sys.stderr,
               "wsgi.version": (1, 0), "wsgi.multithread": True,
               "wsgi.multiprocess": True, "wsgi.run_once": False}
    for name, value in (headers or {}).items():
        environ[f"HTTP_{name.upper().replace('-', '_')}"] = value
    started = {}

    def start_response(status, response_headers, exc_info=None):
        started.update(status=int(status.split()[0]), headers=list(response_headers))

    result = app(environ, start_response)
    try:
        body = b"".join(result)
    finally:
        if hasattr(result, "close"):
            result.close()
    return Answer(started["status"], started["headers"], body)


def queries(app, url: str, **options) -> int:
    """How many database queries answering `url` took (none when the front answered)."""
    with CaptureQueriesContext(connection) as done:
        call(app, url, **options)
    return len(done)


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def django_app(db, settings):
    """Django's WSGI application, as config.wsgi wraps it; its request signals do not close
    the test's connection (as Django's test client keeps them from doing). HSTS as in
    production (on HTTPS only)."""
    settings.FRONT = True
    settings.SECURE_HSTS_SECONDS = 3600  # read when the middleware is made
    settings.ALLOWED_HOSTS = ["testserver"]
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield WSGIHandler()
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def front(django_app, clock):
    return PageCache(django_app, clock=clock)


@pytest.fixture
def ranked_board(db, author, django_capture_on_commit_callbacks):
    """A board of two models, its rank ranges stored as a worker stores them, and its version
    published as a board change publishes it."""
    benchmark = board_benchmark()
    alpha = scored_submission(benchmark, author, "Alpha", {
        ("overall", ""): (50.0, 60.0, 30.0), ("modality", "sound"): (1, 2, 3)})
    scored_submission(benchmark, author, "Beta", {
        ("overall", ""): (40.0, 70.0, 20.0), ("modality", "sound"): (4, 5, 6)})
    with django_capture_on_commit_callbacks(execute=True):
        board_changed(benchmark.id)
    rank_ranges.refresh(benchmark)
    benchmark.refresh_from_db()
    return benchmark, alpha


def url_of(url: str, ranked_board) -> str:
    return f"/m/{ranked_board[1].model_id}/" if url == "model" else url


@pytest.mark.parametrize("url", PAGES)
def test_a_shared_page_is_answered_again_with_no_database_query(
        url, front, ranked_board, django_assert_num_queries):
    url = url_of(url, ranked_board)
    first = call(front, url)
    assert first.status == 200
    with django_assert_num_queries(0):
        again = call(front, url)
    assert (again.status, again.headers, again.body) == (first.status, first.headers,
                                                         first.body)


@pytest.mark.parametrize("scheme", ["http", "https"])
@pytest.mark.parametrize("url", PAGES)
def test_the_fronts_headers_are_djangos(url, scheme, front, django_app, ranked_board,
                                        django_assert_num_queries):
    """Security headers and CSP included (HSTS on HTTPS): the front answers what Django's
    middleware made of the same request."""
    url = url_of(url, ranked_board)
    call(front, url, scheme=scheme)
    with django_assert_num_queries(0):
        answered = call(front, url, scheme=scheme)
    django = call(django_app, url, scheme=scheme)
    assert sorted(answered.headers) == sorted(django.headers)
    assert answered.body == django.body
    names = {name.lower() for name, _ in answered.headers}
    assert {"content-security-policy", "x-frame-options", "x-content-type-options",
            "referrer-policy", "cross-origin-opener-policy", "etag", "last-modified",
            "cache-control", "vary"} <= names
    assert ("strict-transport-security" in names) == (scheme == "https")


@pytest.mark.parametrize("url", PAGES)
def test_a_revalidation_answers_304_as_django_does(url, front, django_app, ranked_board,
                                                   django_assert_num_queries):
    url = url_of(url, ranked_board)
    etag = call(front, url).header("ETag")
    learnt = call(front, url, headers={"If-None-Match": etag})  # Django's 304, kept
    with django_assert_num_queries(0):
        answered = call(front, url, headers={"If-None-Match": etag})
    assert answered.status == learnt.status == 304 and answered.body == b""
    assert sorted(answered.headers) == sorted(learnt.headers)
    assert sorted(answered.headers) == sorted(
        call(django_app, url, headers={"If-None-Match": etag}).headers)
    other = call(front, url, headers={"If-None-Match": '"another"'})
    assert other.status == 200 and other.body


def test_head_answers_the_headers_without_the_body(front, ranked_board, django_assert_num_queries):
    full = call(front, "/b/mmae/")
    with django_assert_num_queries(0):
        head = call(front, "/b/mmae/", method="HEAD")
    assert head.status == 200 and head.body == b""
    assert head.headers == full.headers
    assert head.header("Content-Length") == str(len(full.body))


@pytest.mark.parametrize("url", ["/b/mmae/", "/api/leaderboards/mmae/"])
def test_gzip_or_identity_by_accept_encoding(url, front, ranked_board, django_assert_num_queries):
    kinds = {"gzip": "gzip, deflate", "identity": "gzip;q=0, identity", "none": ""}
    for value in kinds.values():  # each variant once through Django
        call(front, url, headers={"Accept-Encoding": value})
    with django_assert_num_queries(0):
        got = {kind: call(front, url, headers={"Accept-Encoding": value})
               for kind, value in kinds.items()}
    assert got["gzip"].header("Content-Encoding") == "gzip"
    assert got["identity"].header("Content-Encoding") is None
    assert got["none"].header("Content-Encoding") is None
    assert gzip.decompress(got["gzip"].body) == got["identity"].body == got["none"].body
    for answer in got.values():
        assert "Accept-Encoding" in answer.header("Vary")


def signed_in(front, client, user) -> str:
    """The cookies a browser signed in as `user` sends: its session and the CSRF cookie that
    the first page it was shown set."""
    client.force_login(user)
    session = f"sessionid={client.cookies['sessionid'].value}"
    first = call(front, "/submissions/", headers={"Cookie": session})
    csrf = SimpleCookie(first.header("Set-Cookie"))["csrftoken"].value
    return f"{session}; csrftoken={csrf}"


def name_in(answer: Answer) -> str | None:
    """Whom the page's navigation says is logged in (None: a page for anonymous visitors)."""
    navigation = one(answer.body, "nav.site-links")
    log_out = navigation.select("form button")
    if not log_out:
        assert texts(navigation, "a[href='/accounts/login/']") == ["Log in"]
        return None
    (button,) = log_out
    assert button.text == "Log out"
    return button.get("title").removeprefix("Logged in as ")


@pytest.mark.parametrize("url", [u for u in PAGES if u != "model"])
def test_a_signed_in_visitors_page_is_kept_for_their_session_only(
        url, front, ranked_board, client, author, other_author, django_assert_num_queries):
    """The read API reads no session: its answer to a session is the public one."""
    page = not url.startswith("/api/")
    mine = signed_in(front, client, author)
    first = call(front, url, headers={"Cookie": mine})
    assert ("private" if page else "public") in first.header("Cache-Control")
    with django_assert_num_queries(0):
        again = call(front, url, headers={"Cookie": mine})
    assert again.body == first.body and again.header("ETag") == first.header("ETag")
    assert again.header("Cache-Control") == first.header("Cache-Control")
    assert "Cookie" in again.header("Vary")
    if page:
        assert name_in(again) == author.username
    theirs = signed_in(front, client, other_author)
    assert queries(front, url, headers={"Cookie": theirs}) > 0  # another session: Django's
    if page:
        assert name_in(call(front, url, headers={"Cookie": theirs})) == other_author.username
        assert name_in(call(front, url)) is None  # anonymous: never a session's page
    # A session cookie that signs no one in (ended, or made up) gets the anonymous page.
    made_up = {"Cookie": "sessionid=made-up; csrftoken=x"}
    assert queries(front, url, headers=made_up) > 0
    if page:
        assert name_in(call(front, url, headers=made_up)) is None


def test_a_session_without_its_csrf_cookie_is_not_kept(front, ranked_board, client, author,
                                                       django_assert_num_queries):
    """Its page sets a new CSRF cookie (the logout form's token): kept, it would set that one
    cookie for every later page."""
    client.force_login(author)
    session = f"sessionid={client.cookies['sessionid'].value}"
    assert call(front, "/b/mmae/", headers={"Cookie": session}).header("Set-Cookie")
    assert queries(front, "/b/mmae/", headers={"Cookie": session}) > 0
    assert not front.kept


def test_a_signed_in_revalidation_and_head(front, ranked_board, client, author,
                                           django_assert_num_queries):
    mine = signed_in(front, client, author)
    full = call(front, "/b/mmae/", headers={"Cookie": mine})
    etag = full.header("ETag")
    learnt = call(front, "/b/mmae/", headers={"Cookie": mine, "If-None-Match": etag})
    assert learnt.status == 304
    with django_assert_num_queries(0):
        answered = call(front, "/b/mmae/", headers={"Cookie": mine, "If-None-Match": etag})
        head = call(front, "/b/mmae/", method="HEAD", headers={"Cookie": mine})
    assert answered.status == 304 and answered.body == b""
    assert head.status == 200 and head.body == b""
    assert head.header("Content-Length") == str(len(full.body))


def test_logging_out_ends_the_kept_pages_at_once(front, ranked_board, client, author, clock):
    mine = signed_in(front, client, author)
    call(front, "/b/mmae/", headers={"Cookie": mine})
    assert name_in(call(front, "/b/mmae/", headers={"Cookie": mine})) == author.username
    client.logout()  # the session ends; its cookie may still be replayed
    replayed = call(front, "/b/mmae/", headers={"Cookie": mine})  # no second need pass
    assert name_in(replayed) is None


def test_a_changed_account_ends_the_kept_pages(front, ranked_board, client, author,
                                               django_capture_on_commit_callbacks):
    mine = signed_in(front, client, author)
    call(front, "/b/mmae/", headers={"Cookie": mine})
    with django_capture_on_commit_callbacks(execute=True):
        author.username = "renamed-author"
        author.save()
    assert name_in(call(front, "/b/mmae/", headers={"Cookie": mine})) == "renamed-author"
    with django_capture_on_commit_callbacks(execute=True):
        author.is_staff = True
        author.save()
    navigation = one(call(front, "/b/mmae/", headers={"Cookie": mine}).body, "nav.site-links")
    assert select(navigation, "a[href^='/staff/']")


def test_a_signed_in_page_follows_a_board_change_at_once(
        front, ranked_board, client, author, django_capture_on_commit_callbacks):
    benchmark, _ = ranked_board
    mine = signed_in(front, client, author)
    before = call(front, "/b/mmae/", headers={"Cookie": mine})
    with django_capture_on_commit_callbacks(execute=True):
        board_changed(benchmark.id)
    after = call(front, "/b/mmae/", headers={"Cookie": mine})
    assert after.header("ETag") != before.header("ETag")


def test_a_model_page_of_ones_own_or_for_staff_is_never_kept(
        front, ranked_board, client, author, other_author, staff, django_assert_num_queries):
    url = url_of("model", ranked_board)  # the author's model
    for owner_or_staff in (author, staff):
        cookie = signed_in(front, client, owner_or_staff)
        for _ in range(2):
            assert queries(front, url, headers={"Cookie": cookie}) > 0
    visitor = signed_in(front, client, other_author)
    call(front, url, headers={"Cookie": visitor})
    with django_assert_num_queries(0):  # the public page, with their navigation
        assert name_in(call(front, url, headers={"Cookie": visitor})) == \
            other_author.username


@pytest.mark.parametrize("headers", [{"Authorization": "Token abc"},
                                     {"Cookie": "messages=abc"}, {"Cookie": "other=1"}])
def test_a_token_or_a_cookie_django_may_read_goes_to_django(
        headers, front, ranked_board, django_assert_num_queries):
    call(front, "/api/leaderboards/mmae/")
    with django_assert_num_queries(0):
        call(front, "/api/leaderboards/mmae/")
    answered = call(front, "/api/leaderboards/mmae/", headers=headers)
    assert answered.status in (200, 401)
    assert queries(front, "/api/leaderboards/mmae/", headers=headers) > 0


def test_the_csrf_cookie_alone_is_answered_by_the_front(front, ranked_board,
                                                        django_assert_num_queries):
    call(front, "/b/mmae/")
    with django_assert_num_queries(0):
        answered = call(front, "/b/mmae/", headers={"Cookie": "csrftoken=abc"})
    assert answered.status == 200


def test_a_board_change_is_passed_on_from_its_commit(front, ranked_board,
                                                     django_capture_on_commit_callbacks,
                                                     django_assert_num_queries):
    """board_changed publishes the new version before the change commits: no request after
    the commit is answered with the state before, not even by a process that answered one
    the moment before."""
    benchmark, _ = ranked_board
    call(front, "/b/mmae/pivot/?dimension=modality&metric=EMR")
    with django_assert_num_queries(0):
        before = call(front, "/b/mmae/pivot/?dimension=modality&metric=EMR")  # the front's
    with django_capture_on_commit_callbacks(execute=False) as after_commit:
        board_changed(benchmark.id)
    assert after_commit  # the worker's task, not yet asked: the change is not committed
    after = call(front, "/b/mmae/pivot/?dimension=modality&metric=EMR")
    assert after.status == 200 and after.header("ETag") != before.header("ETag")
    with django_assert_num_queries(0):  # the new state's page is kept in turn
        assert call(front, "/b/mmae/pivot/?dimension=modality&metric=EMR").body == after.body


def test_a_version_the_cache_lost_sends_the_request_to_django(front, ranked_board, clock):
    from django.core.cache import caches
    benchmark, _ = ranked_board
    call(front, "/b/mmae/")
    caches["default"].delete(version_key(benchmark.id))
    call(front, "/b/mmae/")  # Django's, which publishes the version again
    assert caches["default"].get(version_key(benchmark.id)) == \
        state_token(benchmark.board_version, True)


def test_a_query_not_seen_and_other_methods_go_to_django(front, ranked_board,
                                                         django_assert_num_queries):
    call(front, "/b/mmae/")
    assert queries(front, "/b/mmae/?sort=rank") > 0  # the same page, a spelling not seen
    with django_assert_num_queries(0):
        call(front, "/b/mmae/?sort=rank")  # seen now
    posted = call(front, "/b/mmae/", method="POST")
    assert posted.status == 403 and b"CSRF" in posted.body  # Django's CSRF check answered


def test_a_board_whose_ranges_are_being_computed_is_answered_and_replaced_when_they_arrive(
        front, db, author, clock, django_capture_on_commit_callbacks):
    """The window after a change costs nothing: its pages are answered by the front as any
    other's (saying that ranges are being computed), and the worker's ranges replace them."""
    benchmark = board_benchmark()
    with django_capture_on_commit_callbacks(execute=True):
        scored_submission(benchmark, author, "Alpha", {("overall", ""): (50.0, 60.0, 30.0)},
                          changed=True)
    first = call(front, "/b/mmae/")
    assert b"Rank ranges are being computed" in first.body
    assert queries(front, "/b/mmae/") == 0  # kept under the state's token
    with django_capture_on_commit_callbacks(execute=True):  # the worker stores the ranges
        assert rank_ranges.refresh(benchmark, replicates=20)
    assert queries(front, "/b/mmae/") > 0  # replaced: Django renders the ranged page
    ranged = call(front, "/b/mmae/")
    assert b"Rank ranges are being computed" not in ranged.body
    assert b"rank range of the paired bootstrap" in ranged.body


def test_a_response_that_sets_a_cookie_or_names_a_nonce_is_never_kept(settings, clock):
    settings.FRONT = True
    from config.page_cache import ENVIRON_KEY

    def app_with(headers):
        def app(environ, start_response):
            note = environ[ENVIRON_KEY]
            note.boards, note.etag, note.keep_seconds = {1: 1}, '"e"', 300
            start_response("200 OK", [("Cache-Control", "public, max-age=0"),
                                      ("Content-Length", "2"), *headers])
            return [b"ok"]
        return app

    publish({1: 1})
    for headers in ([("Set-Cookie", "a=b")],
                    [("Content-Security-Policy", "script-src 'self' 'nonce-abc'")],
                    [("Vary", "*")]):
        front = PageCache(app_with(headers), clock=clock)
        call(front, "/")
        assert not front.kept, headers
    kept = PageCache(app_with([]), clock=clock)
    call(kept, "/")
    assert len(kept.kept) == 1


def test_kept_responses_stay_under_the_bound(front, django_app, ranked_board, settings):
    urls = ["/b/mmae/", "/b/mmae/?dimension=modality&bucket=sound"]
    sizes = [len(call(django_app, url).body) for url in urls]
    settings.FRONT_MAX_BYTES = max(sizes) + ENTRY_BYTES + 10  # room for one of them only
    for url in urls:
        call(front, url)
    assert len(front.kept) == 1 and front.size == sizes[1] + ENTRY_BYTES
    assert len(front.varies) == 1  # nor is the URL it was kept under
    assert queries(front, urls[0]) > 0  # the least recently used went


@pytest.mark.parametrize("cache", ["process", "redis"])
def test_a_published_version_only_rises(cache, request, settings):
    if cache == "redis":
        request.getfixturevalue("redis_cache")
    from django.core.cache import caches
    publish({7: 5})
    publish({7: 3})
    assert caches["default"].get(version_key(7)) == 5
    publish({7: 6})
    assert caches["default"].get(version_key(7)) == 6


def test_gunicorn_serves_the_front_around_django():
    """`make run` and docker/ serve config.wsgi (embedded/run.py, docker/Dockerfile)."""
    from config import wsgi

    assert isinstance(wsgi.application, PageCache)
    assert isinstance(wsgi.application.app, WSGIHandler)


def test_each_answer_reads_its_versions_in_one_round_trip(front, ranked_board, client,
                                                          author, monkeypatch):
    """The board versions (and a signed-in visitor's epoch) are read on every answer, all in
    one get_many: a process never answers from what it read before."""
    from django.core.cache import caches
    default = caches["default"]
    reads = []
    real = default.get_many
    monkeypatch.setattr(default, "get_many", lambda keys: reads.append(keys) or real(keys))
    mine = signed_in(front, client, author)
    for cookie in (None, mine):
        headers = {"Cookie": cookie} if cookie else {}
        call(front, "/b/mmae/", headers=headers)
        reads.clear()
        for _ in range(3):
            call(front, "/b/mmae/", headers=headers)
        assert len(reads) == 3
        assert all(len(keys) == (2 if cookie else 1) for keys in reads)


def test_versions_learnt_from_redis_pass_a_change_on(front, ranked_board, clock, redis_cache,  # noqa: F811
                                                     django_capture_on_commit_callbacks,
                                                     django_assert_num_queries):
    benchmark, _ = ranked_board
    publish({benchmark.id: benchmark.board_version})  # into Redis, as the board's change did
    call(front, "/b/mmae/")
    with django_assert_num_queries(0):
        before = call(front, "/b/mmae/")
    with django_capture_on_commit_callbacks(execute=True):
        board_changed(benchmark.id)
    assert call(front, "/b/mmae/").header("ETag") != before.header("ETag")


def test_with_redis_unreachable_django_answers(front, ranked_board, clock, settings):
    from tests.servers import free_ports
    (port,) = free_ports(1)
    settings.CACHES = {**settings.CACHES, "default": {
        "BACKEND": "config.cache.FailSoftRedisCache", "LOCATION": f"redis://127.0.0.1:{port}/0",
        "OPTIONS": {"socket_connect_timeout": 0.2}}}
    first = call(front, "/b/mmae/")
    assert first.status == 200
    assert queries(front, "/b/mmae/") > 0  # no version known: never answered by the front


def test_a_new_version_of_a_benchmark_is_answered_from_its_import(
        front, db, tmp_path, django_capture_on_commit_callbacks, django_assert_num_queries):
    """A slug's pages show its newest version: importing the next one changes them, though the
    version before keeps its own state (scoring.services.benchmark_import raises it too)."""
    import json

    from scoring.services import benchmark_import
    from tests.scoring.airbench_data import chat_meta, write

    def version_shown(**headers) -> int:
        return json.loads(call(front, "/api/leaderboards/air-bench-chat/",
                               headers=headers).body)["version"]

    with django_capture_on_commit_callbacks(execute=True):
        benchmark_import(kind="airbench-chat", path=write(tmp_path / "v1.json", chat_meta()),
                         audio_root=None, slug="air-bench-chat")
    gzip_too = {"Accept-Encoding": "gzip"}
    for headers in ({}, gzip_too):
        call(front, "/api/leaderboards/air-bench-chat/", headers=headers)
        with django_assert_num_queries(0):  # the front's
            assert call(front, "/api/leaderboards/air-bench-chat/", headers=headers).status \
                == 200
    assert version_shown() == 1
    with django_capture_on_commit_callbacks(execute=True):
        benchmark_import(kind="airbench-chat",
                         path=write(tmp_path / "v2.json", chat_meta()[:-1]),
                         audio_root=None, slug="air-bench-chat")
    assert version_shown() == 2
    answered = call(front, "/api/leaderboards/air-bench-chat/", headers=gzip_too)
    assert json.loads(gzip.decompress(answered.body))["version"] == 2
