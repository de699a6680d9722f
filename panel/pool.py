"""The panel's side of the pool (submissions.withheld, the one rule of what public pages
withhold): a task is one pooled rubric of a public representative's output whose results are
still withheld, so that no rater can have read the judge's verdict on what they answer; a task
with its PANEL_RATERS_PER_TASK first answers leaves the pool at the next release, at most one
every PANEL_RELEASE_SECONDS per benchmark (each release is a board change, which every page kept
per board state follows)."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Count, Max, Q
from django.utils import timezone

from leaderboard.boards import state as board_state
from panel.models import PanelTask
from scoring.models import Benchmark
from submissions import withheld as withheld_rule
from submissions.models import PoolRelease


def held(benchmark: Benchmark) -> withheld_rule.Withheld:
    """The rule as the benchmark's board state keeps it."""
    return board_state.withheld(benchmark)


def in_pool(rule: withheld_rule.Withheld, submission_id: int, item_id: int,
            criterion_id: int) -> bool:
    """Whether a task on this rubric of this submission's output may be asked: the rubric is
    its item's pooled one, and the submission's results on the item are still withheld."""
    return rule.pool.get(item_id) == criterion_id and rule(submission_id, item_id)


def release_due(benchmark: Benchmark) -> int:
    """Release the tasks that have their raters, unless the benchmark's last release is less
    than PANEL_RELEASE_SECONDS old: how many (submission, item) pairs left the pool."""
    last = PoolRelease.objects.filter(item__benchmark=benchmark).aggregate(
        last=Max("released_at"))["last"]
    if last is not None and timezone.now() - last < timedelta(
            seconds=settings.PANEL_RELEASE_SECONDS):
        return 0
    rule = withheld_rule.withheld(benchmark)  # read afresh, not as a state kept it
    if not rule.pool:
        return 0
    done = (PanelTask.objects.filter(benchmark=benchmark,
                                     criterion_id__in=list(rule.pool.values()))
            .annotate(first_answers=Count("answers", filter=Q(answers__repeat=False)))
            .filter(first_answers__gte=settings.PANEL_RATERS_PER_TASK)
            .values_list("submission_id", "criterion__item_id"))
    return withheld_rule.pool_release(benchmark, [pair for pair in done if rule(*pair)])
