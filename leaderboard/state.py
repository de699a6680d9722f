"""A board's state and what is kept per state: the newest version of each benchmark, its
representative submissions, the stamp (board version and judge config) that every cache, ETag
and rank range of the board keys on, and the per-process copies kept for one state."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from allauth.socialaccount.models import SocialAccount
from django.contrib.auth import get_user_model

from leaderboard import lookups, ranking  # noqa: F401 - lookups registers field__any
from scoring.models import Benchmark, JudgeConfig, ScoringRun, SliceResult
from submissions.models import ModelEntry, Submission

OVERALL = SliceResult.OVERALL


# Log-ins whose provider vouches for the account ("verified" beside its name on the board).
VERIFYING_PROVIDERS = ("github", "huggingface")


def benchmark_list() -> list[Benchmark]:
    """The newest version of each benchmark, for the home page."""
    latest: dict[str, Benchmark] = {}
    for benchmark in Benchmark.objects.order_by("slug", "-version"):
        latest.setdefault(benchmark.slug, benchmark)
    return list(latest.values())


def benchmark_current(slug: str) -> Benchmark | None:
    return Benchmark.objects.filter(slug=slug).order_by("-version").first()


def _published(benchmark: Benchmark):
    """Public submissions whose run is finished under the benchmark's current judge config
    (runs under older configs stay viewable on each submission's page), unless staff have
    hidden them."""
    return Submission.objects.published().filter(
        benchmark=benchmark, current_run__judge_config_id=benchmark.judge_config_id)


@dataclass(frozen=True)
class ShownModel:
    id: int
    name: str
    organisation: str
    link: str
    licence: str
    open_weights: bool
    parameters: str
    submitted_by: str = ""  # the owner's username
    verified: bool = False  # the owner logged in through GitHub or Hugging Face


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
    model: ShownModel
    current_run: ShownRun

    partial = Submission.partial


# How long a process keeps what it read of one board state: a new state reads afresh at once;
# the age bounds what a change made without board_changed (the admin) leaves stale.
KEPT_SECONDS = 300


class PerState:
    """One value per benchmark, kept by this process for one board state (every view of a
    board needs it, several times on a cold request, on every request on a warm one)."""

    def __init__(self):
        self.kept: dict[int, tuple] = {}

    def get(self, benchmark_id: int, state):
        found = self.kept.get(benchmark_id)
        if found is not None and found[0] == state \
                and time.monotonic() - found[1] < KEPT_SECONDS:
            return found[2]
        return None

    def put(self, benchmark_id: int, state, value):
        self.kept[benchmark_id] = (state, time.monotonic(), value)
        return value


_representatives = PerState()


_snapshots = PerState()


def representatives(benchmark: Benchmark) -> list[Shown]:
    """Each model's representative submission: the one its author chose, else its latest
    public, finished one (under the benchmark's current judge config)."""
    state = (benchmark.board_version, benchmark.judge_config_id)
    found = _representatives.get(benchmark.id, state)
    if found is None:
        found = _representatives.put(benchmark.id, state, _read_representatives(benchmark))
    return found


# What a board row reads of a submission, in Shown's order.
SHOWN_FIELDS = ("id", "model_id", "current_run_id", "coverage", "created_at", "flag_reason",
                "representative")


def _read_representatives(benchmark: Benchmark) -> list[Shown]:
    # Queries of one table each, joined here: their plans stay good on a database without
    # planner statistics (a join of thousands of rows there became a nested loop of seconds).
    config = JudgeConfig.objects.filter(id=benchmark.judge_config_id).first()
    if config is None:
        return []
    runs = _runs(config, benchmark=benchmark, status=ScoringRun.Status.FINISHED,
                 judge_config=config)
    return _chosen(_candidates(benchmark).values_list(*SHOWN_FIELDS), runs)


def _candidates(benchmark: Benchmark):
    """The submissions a representative is chosen among (their runs checked apart)."""
    return Submission.objects.filter(benchmark=benchmark, public=True, hidden=False,
                                     current_run__isnull=False)


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
    kept = _representatives.get(benchmark.id, (benchmark.board_version, benchmark.judge_config_id))
    if kept is not None:
        wanted = set(model_ids)
        return {s.model_id: s for s in kept if s.model_id in wanted}
    config = JudgeConfig.objects.filter(id=benchmark.judge_config_id).first()
    if config is None:
        return {}
    candidates = list(_candidates(benchmark).filter(model_id__any=list(model_ids))
                      .values_list(*SHOWN_FIELDS))
    runs = _runs(config, id__any=[s[2] for s in candidates], benchmark=benchmark,
                 status=ScoringRun.Status.FINISHED, judge_config=config)
    return {s.model_id: s for s in _chosen(candidates, runs)}


def shown(benchmark: Benchmark, ids: list[int]) -> dict[int, Shown]:
    """submission id -> what the board shows of it, for a page of representatives only (the
    board's order says which: leaderboard.board_pages)."""
    config = JudgeConfig.objects.filter(id=benchmark.judge_config_id).first()
    if config is None or not ids:
        return {}
    found = list(Submission.objects.filter(id__any=ids).values_list(*SHOWN_FIELDS))
    runs = _runs(config, id__any=[s[2] for s in found])
    return {s.id: s for s in _shown([s for s in found if s[2] in runs], runs)}


def _shown(chosen: list[tuple], runs: dict[int, ShownRun]) -> list[Shown]:
    """Shown rows of submissions (SHOWN_FIELDS) with their runs, their models and owners."""
    found = list(ModelEntry.objects.filter(id__any=[s[1] for s in chosen]).values_list(
        "id", "name", "organisation", "link", "licence", "open_weights", "parameters",
        "owner_id"))
    owners = {m[-1] for m in found}
    names = dict(get_user_model().objects.filter(id__any=list(owners))
                 .values_list("id", "username"))
    verified = set(SocialAccount.objects.filter(user_id__any=list(owners),
                                                provider__in=VERIFYING_PROVIDERS)
                   .values_list("user_id", flat=True))
    models = {m[0]: ShownModel(*m[:-1], submitted_by=names[m[-1]], verified=m[-1] in verified)
              for m in found}
    return [Shown(*s, model=models[s[1]], current_run=runs[s[2]]) for s in chosen]


def board_stamp(benchmark: Benchmark) -> str:
    """The board's state, read from its benchmark's row (scoring.boards.board_changed raises
    the version whenever what the board shows may change): no query of its own."""
    return f"{benchmark.id}:{benchmark.board_version}"


def versions(benchmark: Benchmark) -> dict[int, int]:
    """The board version a page of `benchmark` is fixed by (leaderboard.responses.shared)."""
    return {benchmark.id: benchmark.board_version}


def final_versions(benchmark: Benchmark, ranged: bool) -> dict[int, int] | None:
    """The same for a page that shows rank ranges once a worker has stored them: fixed by its
    version only once they are there (before, a visit must ask whether they are)."""
    return versions(benchmark) if ranged else None


def boards_state() -> tuple[str, object, dict[int, int]]:
    """The state of every board at once (for pages that gather figures across boards, such as
    a model's), when the last of them changed, and each board's version: one query over the
    benchmarks."""
    found = list(Benchmark.objects.values_list("id", "board_version", "board_changed_at"))
    versions = {pk: version for pk, version, _ in found}
    changed = max((at for *_, at in found if at is not None), default=None)
    return f"all:{len(found)}:{sum(versions.values())}", changed, versions


def cache_key(prefix: str, *parts) -> str:
    """A cache key safe for every backend, from a board's stamp and a query."""
    return f"{prefix}:" + hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()
