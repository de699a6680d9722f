"""A burst of requests for one board state's value (leaderboard.boards.state.kept and
shared_kept) makes it once per process, and a shared value once across processes: the threads
and processes that ask while another makes it wait and read what it kept, instead of each
making its own (a new state's 1,000-row CSV asked on 8 connections at once was rendered 8
times, each slowed by the others)."""

import multiprocessing
import os
import threading
import time
import uuid

import pytest
from django.core.cache import caches

from leaderboard.api import views as api_views
from leaderboard.boards import state
from scoring.boards import board_changed
from tests import concurrent
from tests.conftest import BROKER
from tests.servers import free_ports

THREADS = 8


def at_once(ask, threads: int = THREADS) -> list:
    """`ask()` from `threads` threads released together (tests.concurrent.at_once, whose
    HTTP clients the calls in this process leave unused)."""
    return concurrent.at_once(lambda client, i: ask(), threads, clients=threads)


class Maker:
    """A `make` that takes a while, counting its calls and how many ran at once."""

    def __init__(self, seconds: float = 0.2, fail_first: bool = False):
        self.seconds, self.fail_first = seconds, fail_first
        self.calls = self.running = self.most = 0
        self.lock = threading.Lock()

    def __call__(self):
        with self.lock:
            self.calls += 1
            call = self.calls
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            time.sleep(self.seconds)
            if self.fail_first and call == 1:
                raise RuntimeError("the first make failed")
            return {"made by call": call}
        finally:
            with self.lock:
                self.running -= 1


@pytest.fixture
def board_state():
    state.forget()
    yield state.BoardState(benchmark_id=10**6, version=3, judge_config_id=None, ranged=False)
    state.forget()


def test_a_value_of_this_process_is_made_once_for_threads_asking_at_once(board_state):
    make = Maker()
    found = at_once(lambda: state.kept(board_state, "burst", make, parts=("a",)))
    assert make.calls == 1
    assert found == [{"made by call": 1}] * THREADS
    assert state._making == {}  # no lock outlives its burst: the registry does not grow


def test_a_shared_value_is_made_once_for_threads_asking_at_once(board_state):
    make = Maker()
    found = at_once(lambda: state.kept(board_state, "burst", make, parts=("b",), shared=True))
    assert make.calls == 1
    assert found == [{"made by call": 1}] * THREADS


def test_values_of_other_queries_are_made_side_by_side(board_state):
    """One wait per value: threads asking different slices of the state never queue."""
    make = Maker(seconds=0.3)
    slices = iter(range(THREADS))
    lock = threading.Lock()

    def ask():
        with lock:
            part = next(slices)
        return state.kept(board_state, "burst", make, parts=(part,), shared=True)

    at_once(ask)
    assert make.calls == THREADS and make.most > 1


def test_when_the_maker_fails_a_waiting_thread_makes_it_in_its_turn(board_state):
    burst_whose_first_make_fails(
        lambda make: state.kept(board_state, "burst", make, parts=("c",), shared=True))


def burst_whose_first_make_fails(ask) -> None:
    """`ask(make)` at once, the first make failing: that asker gets the error, the next one
    makes it (never two at once) and the rest read it."""
    make = Maker(fail_first=True)

    def one():
        try:
            return ask(make)
        except RuntimeError as error:
            return str(error)

    found = at_once(one)
    assert found.count("the first make failed") == 1
    assert found.count({"made by call": 2}) == THREADS - 1
    assert make.calls == 2 and make.most == 1


def test_a_value_refused_for_keeping_is_made_by_one_thread_at_a_time(board_state):
    """An error page is never kept: each asker makes its own, but never two at once."""
    make = Maker(seconds=0.05)
    at_once(lambda: state.kept(board_state, "burst", make, parts=("d",),
                               keep=lambda value: False), threads=4)
    assert make.calls == 4 and make.most == 1


def test_a_burst_of_first_visits_after_a_change_renders_the_csv_once(
        transactional_db, live_server, board, monkeypatch):
    """The read API's CSV of a new state, asked on eight connections at once (the front's
    process store and the shared responses both cold): one render, and every answer the same
    bytes."""
    benchmark, score_by_slices = board
    for n, name in enumerate(("Alpha", "Beta", "Gamma")):
        score_by_slices(name, (50.0 - n, 60.0 - n, 30.0 - n))
    renders = []
    real = api_views.LeaderboardApi._respond

    def slow(self, request, *args):
        renders.append(request.path)
        time.sleep(0.3)  # long enough for every connection to ask while it renders
        return real(self, request, *args)

    monkeypatch.setattr(api_views.LeaderboardApi, "_respond", slow)
    url = f"{live_server.url}/api/leaderboards/mmae/?format=csv&page_size=1000"
    board_changed(benchmark.id)
    answers = concurrent.at_once(
        lambda client, i: client.get(url, headers={"Accept-Encoding": "identity"}), THREADS,
        clients=THREADS)
    assert {a.status_code for a in answers} == {200}
    assert len({a.content for a in answers}) == 1 and b"Alpha" in answers[0].content
    assert len(renders) == 1


# Across processes: the web processes share only the "responses" cache, so one of them claims a
# value there and the others wait for it.

@pytest.fixture
def shared_store(settings):
    """The "responses" cache on Redis (config.cache, as in production), its keys this test's."""
    settings.CACHES = {**settings.CACHES, "responses": {
        "BACKEND": "config.cache.FailSoftRedisCache", "LOCATION": BROKER,
        "KEY_PREFIX": f"one-maker-{uuid.uuid4().hex}"}}
    return caches["responses"]


def test_processes_asking_at_once_wait_for_the_one_that_claimed_the_value(shared_store):
    """Threads calling the claim directly stand for processes: nothing of this process puts
    them in line, only the shared store."""
    make = Maker()
    found = at_once(lambda: state._made_by_one_process(shared_store, "v", make, lambda v: True))
    assert make.calls == 1
    assert found == [{"made by call": 1}] * THREADS
    assert shared_store.get("v") == {"made by call": 1}
    assert shared_store.get("making:v") is None  # the claim is let go


def test_when_the_claimant_fails_another_process_claims_it_in_turn(shared_store):
    burst_whose_first_make_fails(
        lambda make: state._made_by_one_process(shared_store, "w", make, lambda v: True))


def test_a_claim_whose_process_died_holds_the_others_back_only_so_long(shared_store,
                                                                        monkeypatch):
    monkeypatch.setattr(state, "MAKING_SECONDS", 0.5)
    shared_store.add("making:x", 1, 60)  # claimed by a process that never made it
    started = time.monotonic()
    value = state._made_by_one_process(shared_store, "x", Maker(seconds=0), lambda v: True)
    assert value == {"made by call": 1}
    assert 0.5 <= time.monotonic() - started < 5


def test_with_the_shared_store_unreachable_every_asker_makes_its_own_at_once(settings):
    """Nothing waits on a claim that a Redis outage cannot record (config.cache: `add`
    succeeds): the value is made and served, as with no cache at all."""
    settings.CACHES = {**settings.CACHES, "responses": {
        "BACKEND": "config.cache.FailSoftRedisCache",
        "LOCATION": f"redis://127.0.0.1:{free_ports(1)[0]}/0"}}
    make = Maker(seconds=0.2)
    started = time.monotonic()
    found = at_once(lambda: state._made_by_one_process(caches["responses"], "y", make,
                                                       lambda v: True), threads=4)
    assert make.calls == 4 and make.most == 4
    assert sorted(f["made by call"] for f in found) == [1, 2, 3, 4]
    assert time.monotonic() - started < state.MAKING_SECONDS


def _ask_in_a_process(barrier, answers, key):
    barrier.wait(timeout=30)

    def make():
        caches["responses"].incr(f"{key}:makes")
        time.sleep(0.3)
        return os.getpid()

    answers.put(state.shared_kept("across", (key,), make))


@pytest.mark.integration
def test_forked_processes_asking_at_once_make_a_shared_value_once(shared_store):
    """Real processes (forked, as gunicorn forks its workers): one makes, the rest read it."""
    key = uuid.uuid4().hex
    shared_store.set(f"{key}:makes", 0, 60)
    forked = multiprocessing.get_context("fork")
    barrier, answers = forked.Barrier(4), forked.Queue()
    processes = [forked.Process(target=_ask_in_a_process, args=(barrier, answers, key))
                 for _ in range(4)]
    for process in processes:
        process.start()
    found = [answers.get(timeout=30) for _ in processes]
    for process in processes:
        process.join(timeout=30)
    assert [p.exitcode for p in processes] == [0] * 4
    assert shared_store.get(f"{key}:makes") == 1
    assert len(set(found)) == 1 and found[0] in {p.pid for p in processes}


def test_a_value_kept_between_the_miss_and_the_claim_is_read_not_made_again(shared_store):
    """The claim is let go once the value is kept: a process that missed the value just before
    it was kept, and claims just after, reads it (a burst on a loaded machine made it twice)."""
    shared_store.set("z", {"made by call": 1}, 60)  # kept and let go after this process's miss
    make = Maker(seconds=0)
    assert state._made_by_one_process(shared_store, "z", make, lambda v: True) \
        == {"made by call": 1}
    assert make.calls == 0
    assert shared_store.get("making:z") is None


class TakesTheLapsedClaim(Maker):
    """A make that outlasts its claim: meanwhile the claim lapsed and another process took it."""

    def __init__(self, store, claim):
        super().__init__(seconds=0)
        self.store, self.claim = store, claim

    def __call__(self):
        self.store.delete(self.claim)  # lapsed
        assert self.store.add(self.claim, 12345, 60)  # another's now
        return super().__call__()


def test_a_maker_whose_claim_lapsed_leaves_the_next_claim_alone(shared_store):
    """A make longer than MAKING_SECONDS lets a second process claim; when the first is done it
    lets go of its own claim only, so a third process still waits for the second."""
    make = TakesTheLapsedClaim(shared_store, "making:q")
    assert state._made_by_one_process(shared_store, "q", make, lambda v: True) \
        == {"made by call": 1}
    assert shared_store.get("making:q") == 12345


def test_on_a_cache_of_one_process_a_maker_lets_go_of_its_own_claim_only(settings):
    settings.CACHES = {**settings.CACHES, "responses": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": f"one-maker-{uuid.uuid4().hex}"}}
    store = caches["responses"]
    make = TakesTheLapsedClaim(store, "making:r")
    state._made_by_one_process(store, "r", make, lambda v: True)
    assert store.get("making:r") == 12345
    state._made_by_one_process(store, "s", Maker(seconds=0), lambda v: True)
    assert store.get("making:s") is None  # its own claim, let go
