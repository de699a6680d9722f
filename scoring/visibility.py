"""Which runs anyone may learn from: the finished runs of submissions their authors published and
staff did not hide. The rule is the submissions app's (it knows who published what), given to
scoring when that app is ready (submissions.apps), so that scoring, which imports nothing of
the apps above it, reads the very rule the boards read."""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import ImproperlyConfigured
from django.db.models import Q, QuerySet

_published_runs: list[Callable[[], QuerySet]] = []


def give_published_runs(rule: Callable[[], QuerySet]) -> None:
    """The submissions app hands over its rule (once, at start-up)."""
    _published_runs[:] = [rule]


def published_runs() -> QuerySet:
    """The runs of published submissions (a queryset of ScoringRun)."""
    if not _published_runs:
        raise ImproperlyConfigured("the submissions app gave scoring no published-runs rule")
    return _published_runs[0]()


def public_runs() -> QuerySet:
    """Every run whose figures and answers are everyone's: the published runs and the
    calibration baselines (scored here on inputs anyone has), finished. Whatever the public
    reads of runs taken together (a judge's figures, counts) is read over these alone."""
    from scoring.models import ScoringRun

    return ScoringRun.objects.filter(
        Q(id__in=published_runs().values("id"))
        | Q(purpose=ScoringRun.Purpose.BASELINE, status=ScoringRun.Status.FINISHED))
