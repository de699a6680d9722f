"""A burst of requests for one board state's value (leaderboard.boards.state.kept and
shared_kept) makes it once per process: the threads that ask while another makes it wait and
read what it kept, instead of each making its own (a new state's 1,000-row CSV asked on 8
connections at once was rendered 8 times, each slowed by the others)."""

import threading
import time

import pytest

from leaderboard.api import views as api_views
from leaderboard.boards import state
from scoring.boards import board_changed
from tests import concurrent

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
    make = Maker(fail_first=True)

    def ask():
        try:
            return state.kept(board_state, "burst", make, parts=("c",), shared=True)
        except RuntimeError as error:
            return str(error)

    found = at_once(ask)
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
