"""What anonymous visitors cannot do to the shared responses (leaderboard.pages.responses): make
one comparison into many bootstraps, render costly pages without limit, fill the cache with
spellings of one query, revalidate into a stale body by date, or cross header variants."""

import gzip
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.test import RequestFactory

from leaderboard.boards import rank_ranges
from leaderboard.pages import responses, views
from scoring.boards import board_changed
from submissions.models import Submission
from tests.html import one, select
from tests.httpclient import HTTP


@pytest.fixture
def three(board):
    """A board of three models (Alpha, Beta, Gamma) and their model ids in that order."""
    benchmark, score_by_slices = board
    made = [score_by_slices(name, figures) for name, figures in
            (("Alpha", (50.0, 60.0, 30.0)), ("Beta", (40.0, 70.0, 20.0)),
             ("Gamma", (30.0, 50.0, 10.0)))]
    return benchmark, [s.model_id for s in made]


@pytest.fixture
def renders(monkeypatch):
    """The compare pages rendered afresh (each one bootstraps every pair) so far."""
    made: list[str] = []
    lock = threading.Lock()
    real = views._compare_page

    def counting(request, benchmark, needle):
        with lock:
            made.append(request.GET["models"])
        return real(request, benchmark, needle)

    monkeypatch.setattr(views, "_compare_page", counting)
    return made


def spellings(a: int, b: int, c: int) -> list[str]:
    """One comparison (a against b and c) written eight ways."""
    return [f"{a},{b},{c}", f"{a},{c},{b}", f"0{a},{b},00{c}", f"{a},{b},{b},{c}",
            f" {a} , {c},{b} ", f"{a},{c},{a},{b}", f"{a},{b}&models={c}", f"{a},,{c},{b},"]


def test_every_spelling_of_a_comparison_is_one_entry_and_one_bootstrap(
        client, three, renders, cache_writes, monkeypatch):
    _, (a, b, c) = three
    pairs: list = []
    real = rank_ranges.paired_differences
    monkeypatch.setattr(rank_ranges, "paired_differences",
                        lambda *args, **kw: pairs.append(args[1:]) or real(*args, **kw))
    pages = {client.get(f"/b/mmae/compare/?models={m}").content for m in spellings(a, b, c)}
    assert len(pages) == 1 and "Gamma" in pages.pop().decode()
    assert renders == [f"{a},{b},{c}"] and len(pairs) == 2
    assert len(cache_writes("shared-response")) == 1


def test_the_first_model_stays_the_one_the_others_are_set_against(client, three, renders):
    _, (a, b, c) = three
    client.get(f"/b/mmae/compare/?models={a},{c},{b}")
    client.get(f"/b/mmae/compare/?models={b},{a},{c}")
    client.get(f"/b/mmae/compare/?models={b},{c},{a}")
    assert renders == [f"{a},{b},{c}", f"{b},{a},{c}"]


def test_fresh_renders_of_costly_pages_are_limited_per_address(client, three, settings):
    settings.THROTTLE_RENDER = "3/m"
    _, (a, b, c) = three
    asked = [f"/b/mmae/compare/?models={a},{b}", f"/b/mmae/compare/?models={a},{c}",
             "/b/mmae/pivot/?metric=CR"]
    for url in asked:
        assert client.get(url, REMOTE_ADDR="203.0.113.5").status_code == 200
    refused = client.get(f"/b/mmae/compare/?models={b},{c}", REMOTE_ADDR="203.0.113.5")
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert "3 per minute" in refused.content.decode()
    assert client.get("/b/mmae/pivot/?metric=EMR", REMOTE_ADDR="203.0.113.5").status_code \
        == 429
    # Answers from the cache are never limited, nor is another address.
    for url in asked:
        assert client.get(url, REMOTE_ADDR="203.0.113.5").status_code == 200
    assert client.get(f"/b/mmae/compare/?models={b},{c}",
                      REMOTE_ADDR="198.51.100.7").status_code == 200


@pytest.mark.slow
def test_concurrent_clients_spelling_one_comparison_get_the_cached_page(
        transactional_db, live_server, three, renders):
    _, (a, b, c) = three
    url = f"{live_server.url}/b/mmae/compare/"
    first = HTTP.get(url, params={"models": f"{a},{b},{c}"}, timeout=30)
    assert first.status_code == 200

    def visit(spelling: str) -> httpx.Response:
        return HTTP.get(f"{url}?models={spelling}", timeout=30)

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(visit, spellings(a, b, c) * 5))
    assert {r.status_code for r in answers} == {200}
    assert {r.content for r in answers} == {first.content}
    assert renders == [f"{a},{b},{c}"]


@pytest.mark.slow
def test_concurrent_clients_asking_new_comparisons_meet_the_limit(
        transactional_db, live_server, three, renders, settings):
    settings.THROTTLE_RENDER = "4/m"
    _, ids = three
    url = f"{live_server.url}/b/mmae/compare/"
    distinct = [f"{x},{y}" for x in ids for y in ids if x != y]  # 6 comparisons
    searches = [f"{x},{y}&q=search{n}" for n in range(4) for x, y in [ids[:2]]]

    def visit(query: str) -> int:
        return HTTP.get(f"{url}?models={query}", timeout=30).status_code

    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(visit, distinct + searches))
    assert codes.count(200) == 4 and codes.count(429) == 6
    assert len(renders) == 4


def test_a_search_in_any_case_or_spacing_is_one_entry(client, three, cache_writes):
    pages = {client.get(f"/b/mmae/?q={q}").content
             for q in ("alpha", "ALPHA", "  Alpha ", "aLpHa")}
    assert len(pages) == 1 and "Alpha" in pages.pop().decode()
    assert len(cache_writes("shared-response")) == 1
    assert len(cache_writes("board-body")) == 1


@pytest.mark.parametrize("url", ["/b/mmae/?page=2", "/b/mmae/?page=99999",
                                 "/b/mmae/pivot/?page=2"])
def test_a_page_past_the_end_is_not_found_and_not_cached(url, client, three, cache_writes):
    assert client.get(url).status_code == 404
    assert cache_writes("shared-response") == []


def test_the_pages_live_in_the_bounded_responses_cache(client, three, cache_writes):
    from django.core.cache import caches

    client.get("/b/mmae/")
    client.get("/b/mmae/pivot/")
    written = [k for k in cache_writes("shared-response") + cache_writes("board-body")
               + cache_writes("pivot")]
    assert len(written) == 4
    assert all(caches["responses"].has_key(k) for k in written)
    assert not any(caches["default"].has_key(k) for k in written)


@pytest.mark.slow
def test_a_revalidation_by_date_never_gets_a_stale_body(client, board):
    benchmark, score_by_slices = board
    score_by_slices("Alpha", (50.0, 60.0, 30.0))
    beta = score_by_slices("Beta", (40.0, 70.0, 20.0))
    for _ in range(5):  # the change lands within the second of Last-Modified, as it may
        first = client.get("/b/mmae/")
        assert "Beta" in first.content.decode()
        beta.public = False
        beta.save(update_fields=["public"])
        board_changed(benchmark.id)
        again = client.get("/b/mmae/", headers={"If-Modified-Since": first["Last-Modified"]})
        assert again.status_code == 200 and "Beta" not in again.content.decode()
        beta.public = True
        beta.save(update_fields=["public"])
        board_changed(benchmark.id)


def test_the_csv_asked_by_accept_and_by_format_are_apart(client, three):
    by_accept = client.get("/api/leaderboards/mmae/?page_size=1",
                           headers={"Accept": "text/csv"})
    by_format = client.get("/api/leaderboards/mmae/?page_size=1&format=csv")
    assert by_accept["Content-Type"].startswith("text/csv")
    assert by_format["Content-Type"].startswith("text/csv")
    assert "format=csv" in by_format["Link"] and "format=" not in by_accept["Link"]
    assert "Accept" in by_accept["Vary"] and "Accept" in by_format["Vary"]
    as_json = client.get("/api/leaderboards/mmae/?page_size=1")
    assert as_json["Content-Type"] == "application/json"


@pytest.mark.parametrize(("header", "gzipped"), [
    ("gzip", True), ("deflate, gzip;q=0.5", True), ("GZIP", True), ("x-gzip", True),
    ("*", True), ("br, *;q=0.1", True), ("gzip;q=0", False), ("gzip;q=0.000", False),
    ("*;q=0", False), ("gzip;q=0, *", False), ("identity", False), ("", False),
    ("gzip;q=nonsense", False), ("br", False)])
def test_accept_encoding_is_read_with_its_weights(header, gzipped):
    request = RequestFactory().get("/", headers={"Accept-Encoding": header})
    assert responses.accepts_gzip(request) is gzipped


def test_a_client_refusing_gzip_gets_the_plain_body(client, three):
    plain = client.get("/b/mmae/", headers={"Accept-Encoding": "gzip;q=0"})
    packed = client.get("/b/mmae/", headers={"Accept-Encoding": "gzip;q=0.5"})
    assert "Content-Encoding" not in plain and packed["Content-Encoding"] == "gzip"
    assert gzip.decompress(packed.content) == plain.content
    js = client.get(views.plotly_js_url(), headers={"Accept-Encoding": "gzip;q=0"})
    assert "Content-Encoding" not in js


def test_every_spelling_of_the_host_is_one_entry_with_one_host_in_its_links(
        client, three, cache_writes):
    answers = [client.get("/api/leaderboards/mmae/?page_size=1", HTTP_HOST=host)
               for host in ("localhost", "LOCALHOST", "localhost.", "localhost:80",
                            "LocalHost.:80")]
    assert {r["Link"] for r in answers} == {
        '<http://localhost/api/leaderboards/mmae/?page_size=1&page=2>; rel="next"'}
    assert len({r.content for r in answers}) == 1
    assert len(cache_writes("shared-response")) == 1
    other_port = client.get("/api/leaderboards/mmae/?page_size=1", HTTP_HOST="localhost:8000")
    assert "http://localhost:8000/" in other_port["Link"]
    assert len(cache_writes("shared-response")) == 2


def test_shared_responses_round_trip_through_a_real_redis(client, three, settings):
    import uuid

    import redis

    from tests.conftest import BROKER

    prefix = f"responses-test-{uuid.uuid4().hex[:8]}"
    settings.CACHES = {**settings.CACHES, "responses": {
        "BACKEND": "config.cache.FailSoftRedisCache", "LOCATION": BROKER, "KEY_PREFIX": prefix,
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 3}}}
    server = redis.Redis.from_url(BROKER)
    try:
        first = client.get("/b/mmae/?q=ALPHA")
        assert client.get("/b/mmae/?q=alpha").content == first.content
        stored = list(server.scan_iter(match=f"{prefix}:*"))
        assert len(stored) == 2  # the response and its board body
        assert all(0 < server.ttl(key) <= 300 for key in stored)
    finally:
        for key in server.scan_iter(match=f"{prefix}:*"):
            server.delete(key)


@pytest.mark.slow
def test_compare_pages_share_one_bootstrap_per_pair_of_runs_across_visitors_and_boards(
        client, item_board, author, other_author, monkeypatch):
    """A signed-in visitor's compare page is rendered for them, but the pair's paired
    bootstrap is made once for everyone; another submission changing the board keeps it, and
    a new run of one of the two (its figures changed) makes it again."""
    benchmark, score_by_item_passes, _ = item_board
    a = score_by_item_passes("Alpha", lambda s, r: 1)
    b = score_by_item_passes("Beta", lambda s, r: int(r.index % 2 == 0))
    pairs: list = []
    real = rank_ranges.paired_differences
    monkeypatch.setattr(rank_ranges, "paired_differences",
                        lambda *args, **kw: pairs.append(args[1:]) or real(*args, **kw))
    url = f"/b/mmae/compare/?models={a.model_id},{b.model_id}"

    def table():
        response = client.get(url)
        assert response.status_code == 200
        return one(response, "table#differences-1")

    tables = []
    for user in (author, other_author, None):
        client.logout()
        if user is not None:
            client.force_login(user)
        tables.append(table())
    assert len(pairs) == 1
    assert tables[1:] == tables[:1] * 2  # the same table, element for element
    assert any(name.text == "Alpha" and name.tail.startswith(" ahead")
               for name in tables[0].select("span[title=Alpha]"))
    # the board changes; Alpha's and Beta's runs do not
    score_by_item_passes("Gamma", lambda s, r: 0)
    client.force_login(author)
    assert table() == tables[0] and len(pairs) == 1
    # Beta rescored: the same submission, a new current run with other figures.
    rescore = score_by_item_passes("Beta's rescore", lambda s, r: 1, public=False).current_run
    Submission.objects.filter(pk=b.pk).update(current_run=rescore)
    b.runs.add(rescore)
    board_changed(benchmark.id)
    assert "not separable" in table().text and len(pairs) == 2
    assert pairs[-1][1].current_run_id == rescore.id


def test_a_pair_without_per_item_values_is_not_kept(client, item_board, monkeypatch):
    """A run whose per-item vector is not there yet makes an empty comparison, which is not
    kept: once the vector is stored, the next visit tests the difference."""
    from scoring.models import RunVector

    benchmark, score_by_item_passes, _ = item_board
    a = score_by_item_passes("Alpha", lambda s, r: 1)
    b = score_by_item_passes("Beta", lambda s, r: int(r.index % 2 == 0))
    kept = RunVector.objects.get(run_id=b.current_run_id)
    RunVector.objects.filter(run_id=b.current_run_id).delete()
    url = f"/b/mmae/compare/?models={a.model_id},{b.model_id}"
    client.force_login(a.owner)  # signed in: rendered afresh, around the kept bootstrap
    assert "No per-sample results kept" in client.get(url).content.decode()
    RunVector.objects.create(run_id=b.current_run_id, names=kept.names, data=kept.data)
    assert select(client.get(url), "table#differences-1")
