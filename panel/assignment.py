"""Handing a rater their next task (`GET /api/panel/<slug>/next/`): their open task again, a
repeat when one is due, a task others started, else a new one. Tasks come from the pool only
(panel.pool: pooled rubrics of public representatives whose results public pages withhold), and
never from the rater's own submissions.

The drawing keeps one person's accounts apart: a task someone answered in the last
PANEL_SPREAD_SECONDS goes to nobody else until then (another account cannot follow an answer to
its task); among the tasks with seats left, those on items neither the rater nor their recent
co-raters (people who answered a task the rater answered, in the last CO_RATER_SECONDS) have
answered come first, then those with the fewest answers, ties drawn at random; a new task is
drawn from the stratum (rubric category x the item's stratum as its kind names it:
Kind.panel_stratum) with the fewest tasks so far, its rubric and output at random, away from
those items too. The draws are unpredictable (`RANDOM`: the system's randomness)."""

from __future__ import annotations

import random
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Max, Q
from django.utils import timezone

from leaderboard.boards import state as board_state
from panel import pool
from panel.models import PanelAnswer, PanelAssignment, PanelTask
from scoring.kinds import get_kind
from scoring.models import Benchmark, Criterion, ScoringRun
from submissions.models import Submission

# An assignment nobody answered for this long no longer holds a rater's seat on its task:
# someone who walked away does not block it for good (their answer still counts if it comes).
SEAT_SECONDS = 3600
# How long answering the same task makes two raters co-raters, whose items each avoids.
CO_RATER_SECONDS = 24 * 3600
# Where the draws come from (a test may give a seeded one).
RANDOM = random.SystemRandom()


def eligible(benchmark: Benchmark, rater) -> dict[int, ScoringRun]:
    """The submissions a rater may be asked about, with their runs: the board's public
    representatives, less the rater's own."""
    ids = [shown.id for shown in board_state.representatives(benchmark)]
    found = (Submission.objects.published().filter(id__in=ids).exclude(owner=rater)
             .select_related("current_run"))
    return {s.id: s.current_run for s in found}


def panel_next(*, benchmark: Benchmark, rater) -> PanelAssignment | None:
    """The rater's next assignment, made if need be; None when nothing is left for them."""
    if pool.release_due(benchmark):  # the board changed: read its new state
        benchmark.refresh_from_db(fields=["board_version", "board_changed_at"])
    runs = eligible(benchmark, rater)
    held = pool.held(benchmark)
    with transaction.atomic():
        found = (_open(benchmark, rater, runs, held) or _repeat(benchmark, rater, runs, held)
                 or _started(benchmark, rater, runs, held))
        if found is not None:
            return found
    return _new(benchmark, rater, runs, held)


def _assign(task: PanelTask, rater, *, repeat: bool = False) -> PanelAssignment | None:
    try:
        with transaction.atomic():
            return PanelAssignment.objects.create(task=task, rater=rater, repeat=repeat)
    except IntegrityError:  # the same rater drew it in another request at once
        return None


def _open(benchmark, rater, runs, held) -> PanelAssignment | None:
    """The task the rater was given and has not answered: the same one until they do (one
    whose submission has left the board or whose result has left the pool since is
    dropped)."""
    mine = list(PanelAssignment.objects.filter(rater=rater, answered=False,
                                               task__benchmark=benchmark)
                .select_related("task__criterion").order_by("id"))
    gone = [a.id for a in mine if a.task.submission_id not in runs or not pool.in_pool(
        held, a.task.submission_id, a.task.criterion.item_id, a.task.criterion_id)]
    PanelAssignment.objects.filter(id__in=gone).delete()
    return next((a for a in mine if a.id not in gone), None)


def _repeat(benchmark, rater, runs, held) -> PanelAssignment | None:
    """Every PANEL_REPEAT_EVERY answers, the rater's oldest answered task still in the pool
    and not yet repeated is asked again (unannounced): the two answers measure their
    self-consistency."""
    answers = PanelAnswer.objects.filter(rater=rater, task__benchmark=benchmark)
    first = answers.filter(repeat=False).count()
    repeats = PanelAssignment.objects.filter(rater=rater, repeat=True,
                                             task__benchmark=benchmark).count()
    if first < settings.PANEL_REPEAT_EVERY * (repeats + 1):
        return None
    repeated = PanelAssignment.objects.filter(rater=rater, repeat=True).values("task_id")
    for answer in (answers.filter(repeat=False, task__submission_id__in=list(runs))
                   .exclude(task_id__in=repeated).select_related("task__criterion")
                   .order_by("answered_at", "id")):
        task = answer.task
        if pool.in_pool(held, task.submission_id, task.criterion.item_id, task.criterion_id):
            return _assign(task, rater, repeat=True)
    return None


def _touched(benchmark, rater) -> set[int]:
    """The items the rater answered a task of, and those their recent co-raters did."""
    since = timezone.now() - timedelta(seconds=CO_RATER_SECONDS)
    firsts = PanelAnswer.objects.filter(task__benchmark=benchmark, repeat=False)
    mine = firsts.filter(rater=rater)
    co_raters = (firsts.filter(task_id__in=mine.values("task_id"), answered_at__gte=since)
                 .exclude(rater=rater).values("rater_id"))
    return set(firsts.filter(Q(rater=rater) | Q(rater_id__in=co_raters, answered_at__gte=since))
               .values_list("task__criterion__item_id", flat=True))


def _started(benchmark, rater, runs, held) -> PanelAssignment | None:
    """A task others started with seats left and no answer in the last
    PANEL_SPREAD_SECONDS: away from the items the rater and their co-raters answered, then
    the fewest answers first, at random among equals."""
    now = timezone.now()
    live = Q(assignments__repeat=False) & (
        Q(assignments__answered=True)
        | Q(assignments__created_at__gte=now - timedelta(seconds=SEAT_SECONDS)))
    quiet = now - timedelta(seconds=settings.PANEL_SPREAD_SECONDS)
    tasks = (PanelTask.objects.filter(benchmark=benchmark, submission_id__in=list(runs),
                                      criterion_id__in=list(held.pool.values()))
             .exclude(assignments__rater=rater)
             .annotate(seats=Count("assignments", filter=live, distinct=True),
                       done=Count("answers", filter=Q(answers__repeat=False), distinct=True),
                       last=Max("answers__answered_at", filter=Q(answers__repeat=False)))
             .filter(Q(last__isnull=True) | Q(last__lt=quiet),
                     seats__lt=settings.PANEL_RATERS_PER_TASK)
             .values_list("id", "submission_id", "criterion_id", "criterion__item_id", "done"))
    touched = _touched(benchmark, rater)
    order = sorted((item in touched, done, RANDOM.random(), pk)
                   for pk, submission, criterion, item, done in tasks
                   if pool.in_pool(held, submission, item, criterion))
    for *_, pk in order[:5]:
        assignment = _assign(PanelTask.objects.get(pk=pk), rater)
        if assignment is not None:
            return assignment
    return None


def _new(benchmark, rater, runs, held) -> PanelAssignment | None:
    """A new task from the least covered stratum of the pool, its rubric and output drawn at
    random among those on items the rater and their co-raters have not answered, then the
    rest."""
    if not runs or not held.pool:
        return None
    taken = set(PanelTask.objects.filter(benchmark=benchmark)
                .values_list("submission_id", "criterion_id"))
    counts = {tuple(row[:2]): row[2] for row in PanelTask.objects.filter(benchmark=benchmark)
              .values_list("category", "stratum").annotate(n=Count("id"))}
    strata = _strata(benchmark, held)
    touched = _touched(benchmark, rater)
    order = sorted(strata, key=lambda s: (counts.get(s, 0), RANDOM.random()))
    for stratum in order:
        task = _draw(benchmark, stratum, strata[stratum], runs, (taken, touched, held))
        if task is not None:
            return _assign(task, rater)
    return None


def _draw(benchmark, stratum, rubrics, runs, seen) -> PanelTask | None:
    taken, touched, held = seen
    drawn = sorted((item_id in touched, RANDOM.random(), criterion_id, item_key, item_id,
                    submission_id)
                   for criterion_id, item_key, item_id in rubrics for submission_id in runs)
    for *_, criterion_id, item_key, item_id, submission_id in drawn:
        if (submission_id, criterion_id) in taken or item_key not in runs[submission_id].outputs \
                or not held(submission_id, item_id):
            continue
        task, _ = PanelTask.objects.get_or_create(
            submission_id=submission_id, criterion_id=criterion_id, defaults={
                "benchmark": benchmark, "category": stratum[0], "stratum": stratum[1]})
        return task
    return None


def _strata(benchmark: Benchmark, held) -> dict[tuple[str, str], list[tuple[int, str, int]]]:
    """The pool's rubrics by stratum, as (criterion id, item key, item id)."""
    kind, found = get_kind(benchmark.kind), {}
    for pk, category, dims, key, item_id in (
            Criterion.objects.filter(id__in=list(held.pool.values()))
            .values_list("id", "category", "item__dimensions", "item__key", "item_id")
            .order_by("id")):
        found.setdefault((category, kind.panel_stratum(dims)), []).append((pk, key, item_id))
    return found
