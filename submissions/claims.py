"""Whose a model name is on a benchmark: a name is reserved across authors once it is public.
Uploads, publications, embargoes' releases and anonymous entries' reveals all ask here."""

from __future__ import annotations

from django.db import connection

from config.errors import ServiceError
from scoring.models import Benchmark
from submissions.models import ModelEntry, Submission
from submissions.names import name_skeletons


def name_claim(*, user, benchmark: Benchmark, name: str) -> None:
    """Refuse a model name that looks like another author's public one on the same benchmark
    (any version): a name is reserved across authors once it is public (a shown submission
    that was not rejected: on the board, or on its way there), so a private name never changes
    another author's answer. Uploads and publications of look-alike names wait for each other
    (a lock per skeleton, held to the end of the transaction), so two authors cannot both make
    one name public at once."""
    skeletons = name_skeletons(name)
    if connection.vendor == "postgresql":
        for skeleton in sorted(skeletons):
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                               [f"model-name:{benchmark.slug}:{skeleton}"])
    shown = Submission.objects.shown().filter(benchmark__slug=benchmark.slug) \
        .exclude(status=Submission.Status.REJECTED)
    others = ModelEntry.objects.filter(submissions__in=shown).exclude(owner=user) \
        .values_list("name", flat=True).distinct()
    if any(skeletons & name_skeletons(other) for other in others):
        raise ServiceError({"model_name": [
            f"the name '{name}' is taken on this benchmark by another author's public model "
            "(names that look alike count as the same)"]}, code="conflict")


def claim_or_keep_private(row: Submission, name: str) -> str:
    """At a release (an embargo's end, an anonymous entry's reveal) of a public submission
    `row`, locked: claim `name` for it; a name another author made public meanwhile keeps it
    private (row.public set False, not saved) and the reason is returned ("" when claimed)."""
    if not row.public:
        return ""
    try:
        name_claim(user=row.owner, benchmark=row.benchmark, name=name)
    except ServiceError as exc:
        row.public = False
        return "; ".join(exc.problems)
    return ""
