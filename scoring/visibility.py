"""Which runs anyone may learn from: the finished runs of submissions their authors published and
staff did not hide. The rule is the submissions app's (it knows who published what), given to
scoring when that app is ready (submissions.apps), so that scoring, which imports nothing of
the apps above it, reads the very rule the boards read."""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum

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


class Disclosure(IntEnum):
    """How much of a benchmark's results a viewer may learn, each level adding to the one
    before: NOTHING (that submissions exist, no figure), OVERALL (each row's overall
    figures), SLICES (and its slices), FULL (and every per-item result, rubric text, vote
    and judge reply, subject to the other rules: who published what, the panel's pool)."""

    NOTHING = 0
    OVERALL = 1
    SLICES = 2
    FULL = 3


_disclosure_rules: list[Callable] = []


def give_disclosure_rule(rule: Callable) -> None:
    """The challenges app hands over its rule for hidden-rubric benchmarks (at start-up):
    rule(benchmark, user) -> Disclosure, from the benchmark's phase and its organizers."""
    _disclosure_rules[:] = [rule]


def disclosure(benchmark, user=None) -> Disclosure:
    """What `user` (None or anonymous: any visitor) may learn of `benchmark`'s results: the
    one rule every page, file, API answer, e-mail and cache key about its per-item results
    follows. FULL for a benchmark whose rubrics are not hidden, and for staff; for a
    hidden-rubric benchmark, what the challenges app's rule says (NOTHING without one)."""
    if not benchmark.rubrics_hidden:
        return Disclosure.FULL
    if user is not None and user.is_authenticated and user.is_staff:
        return Disclosure.FULL
    return _disclosure_rules[0](benchmark, user) if _disclosure_rules else Disclosure.NOTHING


def anyone_sees_items(benchmark) -> bool:
    """Whether every visitor may learn the benchmark's per-item results (rubric texts,
    verdicts, replies): what a page or file kept for everyone (the front, a snapshot, a
    dataset) may hold."""
    return disclosure(benchmark) is Disclosure.FULL


# What a page, an API answer or a file says in place of what a viewer may not learn yet.
NOT_YET = "hidden until the challenge's reveal: its organizers publish the rubrics and " \
    "per-item results then"


def require(benchmark, user, needed: Disclosure = Disclosure.FULL) -> Disclosure:
    """`disclosure(benchmark, user)` when it reaches `needed`, else Http404: the answer of a
    page, file or API call that would show more than the viewer may learn (a per-item
    surface below FULL, a slice below SLICES, a figure below OVERALL). The message names no
    rubric, item or figure."""
    from django.http import Http404

    found = disclosure(benchmark, user)
    if found < needed:
        raise Http404(NOT_YET)
    return found


def cache_part(benchmark, user) -> str:
    """What a cache key or validator of a page of `benchmark` rendered for `user` holds of
    the rule: nothing for a benchmark whose rubrics are not hidden (every viewer sees the
    same), else the viewer's level, so that no page made for an organizer or staff is ever
    answered to anyone else. (The reveal is a board change: no key of the hidden state is
    read after it.)"""
    return f"disclosure={disclosure(benchmark, user).name}" if benchmark.rubrics_hidden else ""
