"""Handing a rater their next task (`GET /api/panel/<slug>/next/`): their open task again, a
repeat when one is due, a task that has answers already, else a new one drawn from the
stratum (rubric category x the item's stratum as its kind names it: Kind.panel_stratum) with the
fewest tasks so far. Tasks come
from public representative submissions only, and never from the rater's own."""

from __future__ import annotations

import random
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.utils import timezone

from leaderboard.boards import state as board_state
from panel.models import PanelAnswer, PanelAssignment, PanelTask
from scoring.kinds import get_kind
from scoring.models import Benchmark, Criterion, ScoringRun
from submissions.models import Submission

# An assignment nobody answered for this long no longer holds a rater's seat on its task:
# someone who walked away does not block it for good (their answer still counts if it comes).
SEAT_SECONDS = 3600


def eligible(benchmark: Benchmark, rater) -> dict[int, ScoringRun]:
    """The submissions a rater may be asked about, with their runs: the board's public
    representatives, less the rater's own."""
    ids = [shown.id for shown in board_state.representatives(benchmark)]
    found = (Submission.objects.published().filter(id__in=ids).exclude(owner=rater)
             .select_related("current_run"))
    return {s.id: s.current_run for s in found}


def panel_next(*, benchmark: Benchmark, rater) -> PanelAssignment | None:
    """The rater's next assignment, made if need be; None when nothing is left for them."""
    runs = eligible(benchmark, rater)
    with transaction.atomic():
        found = (_open(benchmark, rater, runs) or _repeat(benchmark, rater, runs)
                 or _answered_first(benchmark, rater, runs))
        if found is not None:
            return found
    return _new(benchmark, rater, runs)


def _assign(task: PanelTask, rater, *, repeat: bool = False) -> PanelAssignment | None:
    try:
        with transaction.atomic():
            return PanelAssignment.objects.create(task=task, rater=rater, repeat=repeat)
    except IntegrityError:  # the same rater drew it in another request at once
        return None


def _open(benchmark, rater, runs) -> PanelAssignment | None:
    """The task the rater was given and has not answered: the same one until they do (one
    whose submission has left the board since is dropped)."""
    mine = PanelAssignment.objects.filter(rater=rater, answered=False, task__benchmark=benchmark)
    mine.exclude(task__submission_id__in=list(runs)).delete()
    return mine.select_related("task").order_by("id").first()


def _repeat(benchmark, rater, runs) -> PanelAssignment | None:
    """Every PANEL_REPEAT_EVERY answers, the rater's oldest answered task not yet repeated
    is asked again (unannounced): the two answers measure their self-consistency."""
    answers = PanelAnswer.objects.filter(rater=rater, task__benchmark=benchmark)
    first = answers.filter(repeat=False).count()
    repeats = PanelAssignment.objects.filter(rater=rater, repeat=True,
                                             task__benchmark=benchmark).count()
    if first < settings.PANEL_REPEAT_EVERY * (repeats + 1):
        return None
    repeated = PanelAssignment.objects.filter(rater=rater, repeat=True).values("task_id")
    answer = (answers.filter(repeat=False, task__submission_id__in=list(runs))
              .exclude(task_id__in=repeated).order_by("answered_at", "id").first())
    return None if answer is None else _assign(answer.task, rater, repeat=True)


def _answered_first(benchmark, rater, runs) -> PanelAssignment | None:
    """A task with seats left, those with the most answers first, so that answered tasks
    reach their PANEL_RATERS_PER_TASK raters before new ones are opened."""
    live = Q(assignments__repeat=False) & (
        Q(assignments__answered=True)
        | Q(assignments__created_at__gte=timezone.now() - timedelta(seconds=SEAT_SECONDS)))
    tasks = (PanelTask.objects.filter(benchmark=benchmark, submission_id__in=list(runs))
             .exclude(assignments__rater=rater)
             .annotate(seats=Count("assignments", filter=live, distinct=True),
                       done=Count("answers", filter=Q(answers__repeat=False), distinct=True))
             .filter(seats__lt=settings.PANEL_RATERS_PER_TASK).order_by("-done", "id"))
    for task in tasks[:5]:
        assignment = _assign(task, rater)
        if assignment is not None:
            return assignment
    return None


def _new(benchmark, rater, runs) -> PanelAssignment | None:
    """A new task from the least covered stratum, its rubric and output drawn at random
    (seeded by the rater and how many tasks the benchmark has, so a test can repeat it)."""
    if not runs:
        return None
    taken = set(PanelTask.objects.filter(benchmark=benchmark)
                .values_list("submission_id", "criterion_id"))
    counts = {tuple(row[:2]): row[2] for row in PanelTask.objects.filter(benchmark=benchmark)
              .values_list("category", "stratum").annotate(n=Count("id"))}
    rng = random.Random(f"panel:{rater.pk}:{benchmark.pk}:{len(taken)}")
    strata = _strata(benchmark)
    order = sorted(strata, key=lambda s: (counts.get(s, 0), rng.random()))
    for stratum in order:
        task = _draw(benchmark, stratum, strata[stratum], runs, taken, rng)
        if task is not None:
            return _assign(task, rater)
    return None


def _draw(benchmark, stratum, criteria, runs, taken, rng) -> PanelTask | None:
    criteria = rng.sample(criteria, len(criteria))
    submissions = rng.sample(sorted(runs), len(runs))
    for criterion_id, item_key in criteria:
        for submission_id in submissions:
            outputs = runs[submission_id].outputs
            if (submission_id, criterion_id) in taken or item_key not in outputs:
                continue
            task, _ = PanelTask.objects.get_or_create(
                submission_id=submission_id, criterion_id=criterion_id, defaults={
                    "benchmark": benchmark, "category": stratum[0], "stratum": stratum[1]})
            return task
    return None


_strata_kept: dict[int, dict] = {}


def _strata(benchmark: Benchmark) -> dict[tuple[str, str], list[tuple[int, str]]]:
    """The benchmark's rubrics by stratum, as (criterion id, item key). A benchmark version
    never changes once imported, so each process reads this once per version."""
    found = _strata_kept.get(benchmark.pk)
    if found is None:
        kind, found = get_kind(benchmark.kind), {}
        for pk, category, dims, key in (Criterion.objects.filter(item__benchmark=benchmark)
                                        .values_list("id", "category", "item__dimensions",
                                                     "item__key").order_by("id")):
            stratum = (category, kind.panel_stratum(dims))
            found.setdefault(stratum, []).append((pk, key))
        _strata_kept[benchmark.pk] = found
    return found
