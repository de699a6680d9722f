"""Rescoring: staff score submissions again under a judge config.

A rescore is a new run beside the old ones, on the rescoring queue (below new submissions).
The board keeps showing a submission's current run until the new one finishes under the
benchmark's current judge config; runs under other configs stay viewable on the submission's
page. The judgment cache (scoring.runs) makes a rescore of unchanged outputs under a config that
has already judged them cost no judge query; a dry run says how many it will cost.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q

from scoring import runs
from scoring.audit import audit_record
from scoring.judge_configs import JudgeConfigError
from scoring.kinds import get_kind
from scoring.models import AuditEvent, Benchmark, JudgeConfig, ScoringRun
from scoring.tasks import enqueue_run
from submissions.models import Submission

Status = ScoringRun.Status


class RescoreError(ValueError):
    pass


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
        raise RescoreError(f"judge config {config.name!r} was made for other prompts than "
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
        raise RescoreError("a rescore needs a reason (it is shown on the public changelog)")
    _check_config(benchmark, config)
    made = []
    for submission in submissions:
        current = submission.current_run
        run = runs.run_create(benchmark=benchmark, audio_root=current.audio_root,
                              outputs=current.outputs, missing=current.missing, config=config,
                              options=current.options, purpose=ScoringRun.Purpose.RESCORE)
        submission.runs.add(run)
        enqueue_run(run.id)
        audit_record(actor=actor, action=AuditEvent.Action.RESCORE, obj=submission,
                     before={"run": current.id, "judge_config": current.judge_config.name},
                     after={"run": run.id, "judge_config": config.name}, reason=reason,
                     benchmark_slug=benchmark.slug, public=submission.public)
        made.append(run)
    return made


def submission_run_finished(run_id: int) -> None:
    """A run finished: it becomes the board run of its submissions when it is under the
    benchmark's current judge config and newer than what they show (SCORING_RUN_FINISHED_HOOKS).
    """
    run = ScoringRun.objects.select_related("benchmark").get(id=run_id)
    if run.status != Status.FINISHED or run.judge_config_id != run.benchmark.judge_config_id:
        return
    for submission in Submission.objects.filter(runs=run).select_related("current_run"):
        current = submission.current_run
        if current is None or current.id == run.id:
            continue
        if current.status != Status.FINISHED or current.judge_config_id != run.judge_config_id \
                or current.id < run.id:
            Submission.objects.filter(id=submission.id, current_run_id=current.id) \
                .update(current_run=run)


@transaction.atomic
def benchmark_set_judge_config(*, actor, benchmark: Benchmark, config: JudgeConfig,
                               reason: str) -> int:
    """Make `config` the benchmark's current judge config. Each submission's board run moves
    to its latest finished run under it; submissions without one leave the board until they
    are rescored. Returns how many submissions the board shows under the new config."""
    if not reason.strip():
        raise JudgeConfigError("changing a benchmark's judge config needs a reason")
    _check_config(benchmark, config)
    benchmark = Benchmark.objects.select_for_update().get(id=benchmark.id)
    before = benchmark.judge_config.name if benchmark.judge_config_id else None
    benchmark.judge_config = config
    benchmark.save(update_fields=["judge_config"])
    shown = 0
    for submission in Submission.objects.filter(benchmark=benchmark, current_run__isnull=False):
        latest = (submission.runs.filter(judge_config=config, status=Status.FINISHED)
                  .order_by("-id").first())
        if latest is not None:
            shown += 1
            if latest.id != submission.current_run_id:
                Submission.objects.filter(id=submission.id).update(current_run=latest)
    audit_record(actor=actor, action=AuditEvent.Action.JUDGE_CONFIG, obj=benchmark,
                 before={"judge_config": before}, after={"judge_config": config.name},
                 reason=reason, benchmark_slug=benchmark.slug, public=True)
    return shown


def rescorable_configs(benchmark: Benchmark):
    """Judge configs usable for a benchmark: made for its kind's prompts."""
    return JudgeConfig.objects.filter(
        Q(prompt_sha256=get_kind(benchmark.kind).prompt_sha256())).order_by("-created_at")
