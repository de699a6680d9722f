"""Rescoring: staff score submissions again under a judge config.

A rescore is a new run beside the old ones, on the rescoring queue (below new submissions).
The board keeps showing a submission's current run until the new one finishes under the
benchmark's current judge config; runs under other configs stay viewable on the submission's
page. The judgment cache (scoring.runs) makes a rescore of unchanged outputs under a config that
has already judged them cost no judge query; a dry run says how many it will cost.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import F, OuterRef, Q, Subquery

from audit.models import AuditEvent
from audit.services import audit_record
from config.errors import ServiceError
from scoring import runs
from scoring.boards import board_changed
from scoring.judge_configs import judge_config_current
from scoring.kinds import get_kind
from scoring.models import Benchmark, JudgeConfig, ScoringRun
from scoring.tasks import enqueue_run
from submissions.models import Submission

Status = ScoringRun.Status


@dataclass(frozen=True)
class RescoreFilter:
    """Which submissions of a benchmark to rescore: all of them, or those matching."""

    submission_ids: tuple[int, ...] = ()
    model_contains: str = ""
    state: str = ""  # "finished", "failed" or "" for both


@dataclass(frozen=True)
class RescorePlan:
    config: JudgeConfig
    submissions: list[Submission]
    total: int  # answers the new runs need
    cached: int  # of which the judgment cache already has

    @property
    def queries(self) -> int:
        """Judge queries the rescore will send."""
        return self.total - self.cached


def rescore_candidates(*, benchmark: Benchmark, where: RescoreFilter = RescoreFilter()):
    """Submissions of `benchmark` that have outputs to score again: handed to scoring once,
    with no run in progress."""
    queryset = (Submission.objects.filter(benchmark=benchmark, status=Submission.Status.QUEUED,
                                          current_run__isnull=False)
                .exclude(runs__status__in=ScoringRun.ACTIVE)
                .select_related("model", "current_run", "benchmark").order_by("id"))
    if where.submission_ids:
        queryset = queryset.filter(id__in=where.submission_ids)
    if where.model_contains:
        queryset = queryset.filter(model__name__icontains=where.model_contains)
    if where.state:
        queryset = queryset.filter(current_run__status=where.state)
    return queryset


def _check_config(benchmark: Benchmark, config: JudgeConfig) -> None:
    kind = get_kind(benchmark.kind)
    if config.prompt_sha256 != kind.prompt_sha256():
        raise ServiceError(f"judge config {config.name!r} was made for other prompts than "
                           f"those of {benchmark.kind} benchmarks")


def _digests(run: ScoringRun) -> dict[str, str]:
    """The run's output digests; runs made before digests existed get them computed."""
    if run.digests or not run.outputs:
        return run.digests
    kind = get_kind(run.benchmark.kind)
    return {key: kind.outputs.digest(run.audio_root, path) for key, path in run.outputs.items()}


def rescore_plan(*, benchmark: Benchmark, submissions: list[Submission],
                 config: JudgeConfig) -> RescorePlan:
    """The dry run: how many answers the rescore needs and how many the cache has."""
    _check_config(benchmark, config)
    total = cached = 0
    for submission in submissions:
        run = submission.current_run
        needed, found = runs.cached_count(
            benchmark=benchmark, outputs=run.outputs, audio_root=run.audio_root,
            digests=_digests(run), config=config, options=run.options)
        total, cached = total + needed, cached + found
    return RescorePlan(config=config, submissions=list(submissions), total=total,
                       cached=cached)


@transaction.atomic
def submissions_rescore(*, actor, benchmark: Benchmark, submissions: list[Submission],
                        config: JudgeConfig, reason: str) -> list[ScoringRun]:
    """A new run per submission under `config`, queued for rescoring, each audited."""
    if not reason.strip():
        raise ServiceError("a rescore needs a reason (it is shown on the public changelog)")
    _check_config(benchmark, config)
    made = []
    for submission in submissions:
        current = submission.current_run
        run = runs.run_create(benchmark=benchmark, audio_root=current.audio_root,
                              outputs=current.outputs, missing=current.missing, config=config,
                              options=current.options, purpose=ScoringRun.Purpose.RESCORE)
        submission.runs.add(run)
        enqueue_run(run.id)
        board_changed(slug=benchmark.slug)
        audit_record(actor=actor, action=AuditEvent.Action.RESCORE, obj=submission,
                     before={"run": current.id, "judge_config": current.judge_config.name},
                     after={"run": run.id, "judge_config": config.name}, reason=reason,
                     benchmark_slug=benchmark.slug, public=submission.public)
        made.append(run)
    return made


def _judge_config(benchmark: Benchmark, judge_config: JudgeConfig | str | None) -> JudgeConfig:
    if judge_config is None or judge_config == "":
        return judge_config_current(benchmark)
    if isinstance(judge_config, JudgeConfig):
        return judge_config
    found = JudgeConfig.objects.filter(name=judge_config).first()
    if found is None:
        raise ServiceError(f"judge_config: no judge config named {judge_config!r}")
    return found


def _nothing_to_rescore(where: RescoreFilter) -> str:
    if len(where.submission_ids) == 1:
        return (f"submission {where.submission_ids[0]} is not finished or failed, or has a run "
                "in progress: nothing to rescore")
    return "no submission matches: nothing to rescore"


def rescore_request(*, actor, benchmark: Benchmark, where: RescoreFilter = RescoreFilter(),
            judge_config: JudgeConfig | str | None = None, reason: str = "",
            dry_run: bool = False, expected: int | None = None,
            ) -> tuple[RescorePlan, list[ScoringRun]]:
    """The one rescoring operation of the staff page, the API and `manage.py rescore`: the
    submissions of `benchmark` matching `where`, under `judge_config` (a config, its name,
    or None for the benchmark's current one). A dry run returns the plan only; otherwise
    the new runs are queued and audited. `expected`, the number of submissions a dry run
    showed, refuses a selection that changed since. Raises ServiceError."""
    config = _judge_config(benchmark, judge_config)
    candidates = list(rescore_candidates(benchmark=benchmark, where=where))
    plan = rescore_plan(benchmark=benchmark, submissions=candidates, config=config)
    # Submissions named by id that cannot be rescored are refused even in a dry run; a
    # filter that matches nothing is an empty plan until it is run.
    if not candidates and (where.submission_ids or not dry_run):
        raise ServiceError(_nothing_to_rescore(where), code="conflict")
    if dry_run:
        return plan, []
    if not (actor is not None and actor.is_authenticated and actor.is_staff):
        raise PermissionDenied("only staff can rescore submissions")
    if expected is not None and expected != len(candidates):
        raise ServiceError(f"the selection changed since the dry run (it had {expected} "
                           f"submissions, now {len(candidates)}): run the dry run again",
                           code="conflict")
    made = submissions_rescore(actor=actor, benchmark=benchmark, submissions=candidates,
                               config=config, reason=reason)
    return plan, made


def board_runs_reconcile(*, benchmark: Benchmark | None = None) -> int:
    """Make each submission show its latest run finished under its benchmark's current judge
    config (a rescore that finished, or the runs of a config staff made current), claiming
    each move by a conditional UPDATE so that two reconcilers never undo each other. Runs
    under other configs stay viewable on the submission's page; a submission with none under
    the current config keeps its run, off the board until rescored. Returns how many moved.
    Called periodically (submissions.tasks.reconcile) and at once by the staff pages."""
    latest = Subquery(ScoringRun.objects.filter(
        submissions=OuterRef("pk"), status=Status.FINISHED,
        judge_config_id=OuterRef("benchmark__judge_config_id")).order_by("-id").values("id")[:1])
    candidates = Submission.objects.filter(current_run__isnull=False)
    if benchmark is not None:
        candidates = candidates.filter(benchmark=benchmark)
    moved, boards = 0, set()
    for pk, current, target, board in (candidates.annotate(target=latest).exclude(target=None)
                                       .exclude(current_run_id=F("target"))
                                       .values_list("pk", "current_run_id", "target",
                                                    "benchmark_id")):
        if Submission.objects.filter(pk=pk, current_run_id=current) \
                .update(current_run_id=target):
            moved += 1
            boards.add(board)
    board_changed(*boards)
    return moved


def board_count(benchmark: Benchmark) -> int:
    """Submissions whose board run is under the benchmark's current judge config."""
    return Submission.objects.filter(
        benchmark=benchmark, current_run__judge_config_id=benchmark.judge_config_id,
        current_run__status=Status.FINISHED).count()


def rescorable_configs(benchmark: Benchmark):
    """Judge configs usable for a benchmark: made for its kind's prompts."""
    return JudgeConfig.objects.filter(
        Q(prompt_sha256=get_kind(benchmark.kind).prompt_sha256())).order_by("-created_at")
