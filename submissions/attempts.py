"""Attempts disclosed: how many submissions an author made to a benchmark, public and
private, scored to the end (a finished run), and when.

Providers who test many private variants and publish the best overstate what a board shows
("The Leaderboard Illusion", arXiv 2504.20879). Each board row and model page therefore says
how many scored attempts the model's author made on the benchmark (every version of its
slug, every model of theirs), and the author cannot lower it: making one private or staff
hiding it leaves the row counted, and a deletion leaves a DeletedAttempt in its place.
Rejected uploads and those that failed on our side were never scored and do not count.
An anonymous entry (submissions.anonymity) counts on its own row and page until its reveal,
and in its author's count from then on: a count or a date it shared with the author's named
rows would name them.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from django.db.models import Count

from scoring.models import Benchmark, ScoringRun
from submissions.models import DeletedAttempt, ModelEntry, Submission


def _scored(slug: str):
    """The benchmark's submissions with a finished run (their first scoring or a rescore)."""
    return Submission.objects.filter(benchmark__slug=slug,
                                     runs__status=ScoringRun.Status.FINISHED)


def attempt_counts(slug: str) -> Counter:
    """owner id -> their scored attempts on the benchmark, deleted ones included."""
    counts = Counter(dict(_scored(slug).filter(anonymous_until__isnull=True).order_by()
                          .values("owner_id")
                          .annotate(n=Count("id", distinct=True)).values_list("owner_id", "n")))
    counts.update(dict(DeletedAttempt.objects.filter(benchmark__slug=slug).order_by()
                       .values("owner_id").annotate(n=Count("id"))
                       .values_list("owner_id", "n")))
    return counts


def attempts_by_model(slug: str, model_ids: list[int]) -> dict[int, int]:
    """model id -> its author's scored attempts on the benchmark (what a board row shows); an
    anonymous entry's pseudonym, its own."""
    counts = attempt_counts(slug)
    found = list(ModelEntry.objects.filter(id__in=model_ids)
                 .values_list("id", "owner_id", "pseudonym"))
    pseudonyms = [pk for pk, _, pseudonym in found if pseudonym]
    own = dict(_scored(slug).filter(model_id__in=pseudonyms).order_by().values("model_id")
               .annotate(n=Count("id", distinct=True)).values_list("model_id", "n")) \
        if pseudonyms else {}
    return {pk: own.get(pk, 0) if pseudonym else counts[owner]
            for pk, owner, pseudonym in found}


def model_attempts(model_id: int, slug: str) -> int:
    """The scored attempts of one model on the benchmark (its author's others, and deleted
    ones, are in attempt_counts: a deletion or another name never lowers that count)."""
    return _scored(slug).filter(model_id=model_id).distinct().count()


def attempt_dates(owner_id: int, slug: str) -> list[datetime]:
    """When each of the author's scored attempts on the benchmark was uploaded, oldest
    first, deleted ones included."""
    # Queries of one table each, joined here: joined in SQL, a database without planner
    # statistics ran it as a nested loop over every run for every submission (1 s for an
    # author of 1,000 submissions, growing with the square).
    benchmarks = list(Benchmark.objects.filter(slug=slug).values_list("id", flat=True))
    mine = list(Submission.objects.filter(owner_id=owner_id, benchmark_id__in=benchmarks,
                                          anonymous_until__isnull=True)
                .values_list("id", "created_at", "current_run_id"))
    created = {pk: at for pk, at, _ in mine}
    finished = set(ScoringRun.objects.filter(benchmark_id__in=benchmarks,
                                             status=ScoringRun.Status.FINISHED)
                   .values_list("id", flat=True))
    # A submission whose current run finished is scored; only the others' earlier runs are
    # read (an author of 10,000 attempts made this one query of 10,000 parameters).
    scored = {pk for pk, _, run in mine if run in finished}
    others = [pk for pk, _, run in mine if run not in finished]
    scored |= {pk for pk, run in Submission.runs.through.objects.filter(
        submission_id__in=others).values_list("submission_id", "scoringrun_id")
        if run in finished} if others else set()
    gone = DeletedAttempt.objects.filter(owner_id=owner_id, benchmark_id__in=benchmarks) \
        .values_list("submitted_at", flat=True)
    return sorted([created[pk] for pk in scored] + list(gone))


def attempt_keep(submission: Submission) -> None:
    """Before a submission is deleted: if it was scored, its attempt stays counted."""
    if submission.runs.filter(status=ScoringRun.Status.FINISHED).exists():
        DeletedAttempt.objects.get_or_create(submission_id=submission.pk, defaults={
            "owner_id": submission.owner_id, "benchmark_id": submission.benchmark_id,
            "submitted_at": submission.created_at})
