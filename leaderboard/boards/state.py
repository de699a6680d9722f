"""The one owner of a board's state: what a state is (BoardState: the board version, the judge
config, whether the worker stored the version's rank ranges), and every value kept per state,
through one store (`kept`): in this process, or in the cache every process shares. Also the
newest version of each benchmark, its representative submissions and what public pages withhold
of them."""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass

from allauth.socialaccount.models import SocialAccount
from django.contrib.auth import get_user_model
from django.core.cache import caches
from django.db.models import CharField, Exists, OuterRef, Value
from django.db.models.functions import Cast, Concat
from django.http import Http404

from accounts.verification import VERIFYING_PROVIDERS
from config.cache import release
from leaderboard.boards import lookups, marks, ranking  # noqa: F401 - lookups registers field__any
from leaderboard.models import RankRanges
from scoring.boards import state_token
from scoring.models import Benchmark, JudgeConfig, ScoringRun, SliceResult
from submissions import signals
from submissions import withheld as withheld_rule
from submissions.models import ModelEntry, Submission

OVERALL = SliceResult.OVERALL


def benchmark_list() -> list[Benchmark]:
    """The newest version of each benchmark, for the home page."""
    latest: dict[str, Benchmark] = {}
    for benchmark in Benchmark.objects.order_by("slug", "-version"):
        latest.setdefault(benchmark.slug, benchmark)
    titles = Counter(b.title for b in latest.values())
    for benchmark in latest.values():
        # Boards that share a title (a challenge's track boards) are told apart by slug.
        benchmark.title_shared = titles[benchmark.title] > 1
    return list(latest.values())


def benchmark_current(slug: str) -> Benchmark | None:
    """The newest version of benchmark `slug`, with its board's state read in the same query
    (`board_state`)."""
    return with_state(Benchmark.objects.filter(slug=slug)).order_by("-version").first()


def benchmark_or_404(slug: str) -> Benchmark:
    """benchmark_current, or a 404 for a board that does not exist."""
    benchmark = benchmark_current(slug)
    if benchmark is None:
        raise Http404("no such benchmark")
    return benchmark


def with_state(benchmarks):
    """`benchmarks` (a queryset) each read with whether the worker stored the rank ranges of
    its board version: the whole BoardState in the row's query."""
    stamp = Concat(Cast("id", CharField()), Value(":"), Cast("board_version", CharField()),
                   output_field=CharField())
    return benchmarks.annotate(board_stamp_read=stamp, board_ranged=Exists(
        RankRanges.objects.filter(benchmark_id=OuterRef("pk"),
                                  state=OuterRef("board_stamp_read"))))


@dataclass(frozen=True)
class ShownModel:
    id: int
    name: str
    organisation: str
    link: str
    licence: str
    open_weights: bool
    parameters: str
    base_family: str = ""  # judge.families: what the system is built on
    submitted_by: str = ""  # the owner's username
    verified: bool = False  # the owner logged in through GitHub or Hugging Face
    pseudonym: bool = False  # an anonymous entry's stand-in (submissions.anonymity)


@dataclass(frozen=True)
class ShownJudgeConfig:
    name: str


@dataclass(frozen=True)
class ShownRun:
    id: int
    judge_model: str
    simulated: bool
    judge_config: ShownJudgeConfig
    refused_queries: int = 0  # queries the judge refused (each a wrong vote)

    judge_name = ScoringRun.judge_name


@dataclass(frozen=True)
class Shown:
    """A model's representative submission on a board, with what the board shows of its model
    and run: read as plain values, since a board holds thousands (model instances would cost
    more than the queries)."""

    id: int
    model_id: int
    current_run_id: int
    coverage: float | None
    created_at: object
    flag_reason: str
    representative: bool
    after_deadline: bool  # received after its challenge phase's deadline (marks)
    clipping_share: float | None  # of its outputs that clip (submissions.signals)
    model: ShownModel
    current_run: ShownRun

    partial = Submission.partial


# How long a process keeps a value of one board state: a new state reads afresh at once; the
# age bounds what a change made without board_changed (the admin) leaves stale.
KEPT_SECONDS = 300


@dataclass(frozen=True)
class BoardState:
    """What fixes everything a board shows: its benchmark's board version (raised by every
    change: scoring.boards.board_changed) and judge config, and whether the worker has stored
    that version's rank ranges and ranked orders (leaderboard.boards.rank_ranges). Every cache,
    ETag and front entry of a board keys on it; a request learns it once (`board_state`)."""

    benchmark_id: int
    version: int
    judge_config_id: int | None
    ranged: bool

    @property
    def stamp(self) -> str:
        """The version alone, as the worker's rank ranges are stored under it."""
        return f"{self.benchmark_id}:{self.version}"

    @property
    def key(self) -> str:
        """The whole state, for cache keys and validators."""
        return f"{self.stamp}:{self.judge_config_id}:{'ranged' if self.ranged else 'ranging'}"

    @property
    def versions(self) -> dict[int, int]:
        """{benchmark id: state token}: what the front (config.page_cache) compares with the
        token a change or the worker published, to answer a page of this state."""
        return {self.benchmark_id: state_token(self.version, self.ranged)}


def board_state(benchmark: Benchmark) -> BoardState:
    """The board's state: its benchmark row (already read) and whether the worker stored the
    ranges of its version (read with the row by `benchmark_current`, else one query), learnt
    once per benchmark instance, so once per request."""
    found = benchmark.__dict__.get("_board_state")
    if found is not None and found.version == benchmark.board_version \
            and found.judge_config_id == benchmark.judge_config_id:
        return found
    stamp = board_stamp(benchmark)
    ranged = benchmark.__dict__.get("board_ranged") \
        if benchmark.__dict__.get("board_stamp_read") == stamp \
        else RankRanges.objects.filter(benchmark_id=benchmark.id, state=stamp).exists()
    found = BoardState(benchmark.id, benchmark.board_version, benchmark.judge_config_id, ranged)
    benchmark.__dict__["_board_state"] = found
    return found


# (benchmark id, name) -> (state key, parts, when made, value): this process's values of one
# board state, at most one per name and board (a new state or other parts replace it).
_process: dict[tuple[int, str], tuple] = {}


def kept(board: BoardState, name: str, make: Callable[[], object], *, parts: tuple = (),
         shared: bool = False, keep: Callable[[object], bool] = lambda value: True):
    """The one store of a board state's values: what `make` gives for the state (and
    `parts`, the query it answers), made once per state and kept while the state holds (the
    threads of a process that ask for it at once wait for one of them to make it).
    Kept in this process (one value per board and `name`: the representatives, the
    snapshot, the last slice ranked), or, `shared`, in the "responses" cache that every
    process reads (rendered bodies, which signed-in pages are rendered around; any number
    per state, evicted least recently used). `keep` says whether a value may be kept."""
    if shared:
        return shared_kept(f"{name}:{board.key}", parts, make, keep=keep)
    slot = (board.benchmark_id, name)

    def made():
        value = make()
        if keep(value):
            _process[slot] = (board.key, parts, time.monotonic(), value)
        return value

    return _made_once(("process", slot, board.key, parts), lambda: _held(board, name, parts),
                      made)


def _held(board: BoardState, name: str, parts: tuple = ()):
    """What this process keeps of `name` for the state (and `parts`), never making it:
    _MISSING when nothing is kept (or a past state's, or it is older than KEPT_SECONDS)."""
    found = _process.get((board.benchmark_id, name))
    if found is not None and found[0] == board.key and found[1] == parts \
            and time.monotonic() - found[2] < KEPT_SECONDS:
        return found[3]
    return _MISSING


_MISSING = object()


def _made_once(key: tuple, found: Callable[[], object], made: Callable[[], object]):
    """What `found()` reads (_MISSING when nothing), else what `made()` makes and keeps (or
    not): made by one thread of this process at a time per `key`, the others waiting to read
    it."""
    value = found()
    if value is not _MISSING:
        return value
    with _one_maker(key):
        value = found()  # made by the thread this one waited for
        return made() if value is _MISSING else value


# The keys being made in this process, each with its lock and the number of threads holding or
# awaiting it: a burst of requests for one value right after a change makes it once per
# process, the others waiting for it, where each made its own (8 connections asking a new
# state's 1,000-row CSV at once rendered it 8 times, 1.2 to 1.9 s each, against 0.2 s for
# one render alone: bench/board_latency.py with gunicorn's access log, 2026-12-07).
_making: dict[tuple, list] = {}
_making_lock = threading.Lock()


@contextmanager
def _one_maker(key: tuple):
    """Held by one thread of this process at a time per `key`; the holder makes the value and
    keeps it, and a thread that waited reads it (or makes it in turn when it was not kept:
    an error, a value `keep` refused, the cache unreachable)."""
    with _making_lock:
        entry = _making.setdefault(key, [threading.RLock(), 0])
        entry[1] += 1
    try:
        with entry[0]:
            yield
    finally:
        with _making_lock:
            entry[1] -= 1
            if not entry[1]:
                del _making[key]


def forget() -> None:
    """This process keeps nothing of any board state (a test's boards must not meet
    another's, whose ids and versions may be the same)."""
    _process.clear()


# The "responses" cache keeps a value this long: its key holds the state, so this bounds only
# how long an entry of a past state lingers.
SHARED_SECONDS = 300


# How long a process waits for another that makes a shared value before making its own (a
# render takes well under a second; a maker that dies holding its claim frees it after this),
# and how often it looks for the value meanwhile.
MAKING_SECONDS = 10
MAKING_POLL = 0.02


def shared_kept(name: str, parts: tuple, make: Callable[[], object], *,
                keep: Callable[[object], bool] = lambda value: True):
    """What `make` gives for `name` (which names what fixes it: a board state, or a
    benchmark's items) and `parts`, kept in the "responses" cache every process reads; made by
    one thread of one process at a time, the others waiting to read it."""
    key = cache_key(name, *parts)
    store = caches["responses"]
    return _made_once(("shared", key), lambda: store.get(key, _MISSING),
                      lambda: _made_by_one_process(store, key, make, keep))


def _made_by_one_process(store, key: str, make: Callable[[], object],
                         keep: Callable[[object], bool]):
    """`make()`, kept under `key` when `keep` says so, by the one process that claims it in
    `store` (an atomic add); a process that finds it claimed waits for the value, and claims
    it in turn when the claim is let go with nothing kept (a failed make, a value not kept),
    or makes its own after MAKING_SECONDS; a claim that lapsed while its maker worked is
    another's, and the first maker does not let it go. A burst of first visits after a
    change rendered a page once per web process, each slowed by the others. With the cache
    unreachable every claim succeeds (config.cache), so nothing waits on it."""
    claim, token = f"making:{key}", secrets.randbits(62)
    deadline = time.monotonic() + MAKING_SECONDS
    while not (claimed := store.add(claim, token, MAKING_SECONDS)):
        time.sleep(MAKING_POLL)
        value = store.get(key, _MISSING)
        if value is not _MISSING:
            return value
        if time.monotonic() > deadline:
            break
    try:
        if claimed and (value := store.get(key, _MISSING)) is not _MISSING:
            return value  # kept by a maker that let go between this process's miss and claim
        value = make()
        if keep(value):
            store.set(key, value, SHARED_SECONDS)
        return value
    finally:
        if claimed:  # its own claim only: one that lapsed may be another's now
            release(store, claim, token)


def representatives(benchmark: Benchmark) -> list[Shown]:
    """Each model's representative submission: the one its author chose, else its latest
    public, finished one (under the benchmark's current judge config)."""
    return kept(board_state(benchmark), "representatives",
                lambda: _read_representatives(benchmark))


def withheld(benchmark: Benchmark) -> withheld_rule.Withheld:
    """Which results of the board's submissions public pages withhold (submissions.withheld,
    the one rule: the listening panel's pool less what left it), kept per state: a release is
    a board change, so every page kept per state changes with it. A board without a pool
    (its kind has no panel, or it is too small for one) reads nothing."""
    if not withheld_rule.pool(benchmark):
        return withheld_rule.Withheld()
    return kept(board_state(benchmark), "withheld",
                lambda: withheld_rule.withheld(benchmark))


# What a board row reads of a submission, in Shown's order.
SHOWN_FIELDS = ("id", "model_id", "current_run_id", "coverage", "created_at", "flag_reason",
                "representative", "after_deadline", "clipping_share")


def _shown_values(submissions):
    """SHOWN_FIELDS of `submissions` (a queryset), the mark read in the same query."""
    return submissions.annotate(after_deadline=marks.after_deadline(),
                                clipping_share=signals.clipping_share()) \
        .values_list(*SHOWN_FIELDS)


def _read_representatives(benchmark: Benchmark) -> list[Shown]:
    # Queries of one table each, joined here: their plans stay good on a database without
    # planner statistics (a join of thousands of rows there became a nested loop of seconds).
    config = JudgeConfig.objects.filter(id=benchmark.judge_config_id).first()
    if config is None:
        return []
    runs = _runs(config, benchmark=benchmark, status=ScoringRun.Status.FINISHED,
                 judge_config=config)
    return _chosen(_shown_values(_candidates(benchmark)), runs)


def _candidates(benchmark: Benchmark):
    """The submissions a representative is chosen among (their runs checked apart)."""
    return Submission.objects.shown().filter(benchmark=benchmark, current_run__isnull=False)


def _runs(config: JudgeConfig, **filters) -> dict[int, ShownRun]:
    """run id -> what a board shows of it, for the runs `filters` choose."""
    return {pk: ShownRun(pk, judge_model, simulated, ShownJudgeConfig(config.name), refused)
            for pk, judge_model, simulated, refused in ScoringRun.objects.filter(**filters)
            .values_list("id", "judge_model", "simulated", "refused_queries")}


def _chosen(candidates, runs: dict[int, ShownRun]) -> list[Shown]:
    """Each model's representative among `candidates` (SHOWN_FIELDS of public submissions)
    whose run is one of `runs`."""
    ordered = sorted((s for s in candidates if s[2] in runs),
                     key=lambda s: (s[1], not s[6], -s[4].timestamp(), -s[0]))
    chosen: dict[int, tuple] = {}
    for submission in ordered:
        chosen.setdefault(submission[1], submission)
    return _shown(list(chosen.values()), runs)


def representatives_of(benchmark: Benchmark, model_ids: list[int]) -> dict[int, Shown]:
    """model id -> its representative (as `representatives` chooses it), for the models
    asked for that have one: from what this process keeps of the board's state, else read
    for these models alone (a compare page names a few of a board of thousands)."""
    if not model_ids:
        return {}
    found = _held(board_state(benchmark), "representatives")
    if found is not _MISSING:
        wanted = set(model_ids)
        return {s.model_id: s for s in found if s.model_id in wanted}
    config = JudgeConfig.objects.filter(id=benchmark.judge_config_id).first()
    if config is None:
        return {}
    candidates = list(_shown_values(_candidates(benchmark)
                                    .filter(model_id__any=list(model_ids))))
    runs = _runs(config, id__any=[s[2] for s in candidates], benchmark=benchmark,
                 status=ScoringRun.Status.FINISHED, judge_config=config)
    return {s.model_id: s for s in _chosen(candidates, runs)}


def shown(benchmark: Benchmark, ids: list[int]) -> dict[int, Shown]:
    """submission id -> what the board shows of it, for a page of representatives only (the
    board's order says which: leaderboard.boards.board_pages)."""
    config = JudgeConfig.objects.filter(id=benchmark.judge_config_id).first()
    if config is None or not ids:
        return {}
    found = list(_shown_values(Submission.objects.filter(id__any=ids)))
    runs = _runs(config, id__any=[s[2] for s in found])
    return {s.id: s for s in _shown([s for s in found if s[2] in runs], runs)}


def _shown(chosen: list[tuple], runs: dict[int, ShownRun]) -> list[Shown]:
    """Shown rows of submissions (SHOWN_FIELDS) with their runs, their models and owners."""
    found = list(ModelEntry.objects.filter(id__any=[s[1] for s in chosen]).values_list(
        "id", "name", "organisation", "link", "licence", "open_weights", "parameters",
        "base_family", "pseudonym", "owner_id"))
    owners = {m[-1] for m in found}
    names = dict(get_user_model().objects.filter(id__any=list(owners))
                 .values_list("id", "username"))
    verified = set(SocialAccount.objects.filter(user_id__any=list(owners),
                                                provider__in=VERIFYING_PROVIDERS)
                   .values_list("user_id", flat=True))
    # An anonymous entry's pseudonym (submissions.anonymity) names no owner.
    models = {m[0]: ShownModel(*m[:-2], submitted_by="" if m[-2] else names[m[-1]],
                               verified=not m[-2] and m[-1] in verified, pseudonym=m[-2])
              for m in found}
    return [Shown(*s, model=models[s[1]], current_run=runs[s[2]]) for s in chosen]


def board_stamp(benchmark: Benchmark) -> str:
    """The board's state, read from its benchmark's row (scoring.boards.board_changed raises
    the version whenever what the board shows may change): no query of its own."""
    return f"{benchmark.id}:{benchmark.board_version}"


def versions(benchmark: Benchmark) -> dict[int, int]:
    """The state token a page of `benchmark` is fixed by (leaderboard.pages.responses.shared)."""
    return board_state(benchmark).versions


def boards_state() -> tuple[str, object, dict[int, int]]:
    """The state of every board at once (for pages that gather figures across boards, such as
    a model's), when the last of them changed, and each board's state token: two queries."""
    found = list(Benchmark.objects.values_list("id", "board_version", "board_changed_at"))
    ranged = set(RankRanges.objects.filter(state__in=[f"{pk}:{v}" for pk, v, _ in found])
                 .values_list("state", flat=True).distinct())
    tokens = {pk: state_token(version, f"{pk}:{version}" in ranged)
              for pk, version, _ in found}
    changed = max((at for *_, at in found if at is not None), default=None)
    return f"all:{len(found)}:{sum(tokens.values())}", changed, tokens


def cache_key(prefix: str, *parts) -> str:
    """A cache key safe for every backend, from a board's stamp and a query."""
    return f"{prefix}:" + hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()
