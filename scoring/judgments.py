"""The judgment cache and the answers' store. A judge answer is kept under the key of what the
judge was asked (content_key: the query and the digests of the audio it hears), so that a run
asking what another run already asked under the same judge config copies the answer instead of
asking again; answers are written in bulk (COPY on PostgreSQL)."""

from __future__ import annotations

import logging
import operator
from pathlib import Path

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from psycopg.types.json import Jsonb

from scoring import media, visibility
from scoring.kinds import Job, Media, file_sha256
from scoring.kinds.files import resolve_audio
from scoring.models import (
    Answer,
    Benchmark,
    Item,
    ScoringRun,
)

log = logging.getLogger(__name__)


def output_digests(*, audio_root: str, outputs: dict[str, str], digests: dict[str, str],
             benchmark: Benchmark, items: list[Item]):
    """sha256 of each audio file a run's queries may send, by its absolute path: outputs
    from the run's digests, inputs from their items (hashed here when the import could not)."""
    known = {str(resolve_audio(media.local_root(audio_root), path)): digests[key]
             for key, path in outputs.items() if key in digests}
    root = Path(benchmark.audio_root)
    for item in items:
        for path, digest in zip(item.media, item.media_sha256, strict=False):
            known[str(resolve_audio(root, path))] = digest

    def digest(media: Media) -> str:
        if media.path not in known:
            known[media.path] = file_sha256(media.path)
        return known[media.path]

    return digest


def from_cache(run: ScoringRun, wanted: dict[str, Job], criterion_ids: dict) -> list[Answer]:
    """Answers to `wanted` (content key -> job) that an earlier run already has for the very
    same request under the same judge config: copies, marked cached, that cost no judge
    query. Each is read again through this job's own parse and fields, so the verdict is
    this criterion's. Answers that failed (an error, no reply) are never reused.

    Only from runs whose answers tell this run's author nothing new, since a hit is quicker
    than a judge query and the speed would show that someone sent the same audio: baselines,
    published runs (scoring.visibility, the submissions app's rule) and the author's own runs
    (a run of no submission, e.g. from the command line, counts as its own kind of author).
    The reverse names (`submissions`) are the ORM's; scoring imports nothing of them."""
    if not wanted:
        return []
    found: dict[str, Answer] = {}
    owners = [o for o in ScoringRun.objects.filter(id=run.id)
              .values_list("submissions__owner", flat=True) if o is not None]
    sources = ScoringRun.objects.filter(
        Q(id__in=visibility.public_runs().values("id"))
        | (Q(submissions__owner__in=owners) if owners else Q(submissions=None)))
    # Originals only: every copy repeats its original, whose run it names as its source.
    earlier = (Answer.objects.filter(content_key__in=list(wanted), error=None, cached=False,
                                     run__in=sources.values("id"))
               .order_by("id")
               .values_list("content_key", "raw", "run_id", "run__simulated"))
    now = timezone.now()
    for key, raw, source, simulated in earlier:
        job = wanted[key]
        if key in found or raw is None:
            continue
        try:
            value = job.parse(raw)
        except ValueError:
            continue
        found[key] = Answer(
            run_id=run.id, criterion_id=criterion_ids[(job.item, job.criterion)],
            round=job.round, content_key=key, cached=True, source_run_id=source, attempts=0,
            raw=raw, answered_at=now, **job.fields(value))
        run.simulated = run.simulated or simulated
    return list(found.values())


ANSWER_FIELDS = ("choices", "verdict", "choice", "reason", "raw", "error", "error_kind",
                 "endpoint", "attempts", "latency_ms", "score")


def answer_from(run: ScoringRun, criterion_id: int, content_key: str, record: dict) -> Answer:
    return Answer(run_id=run.id, criterion_id=criterion_id, round=record["round"],
                  content_key=content_key, answered_at=timezone.now(),
                  **{name: record.get(name) for name in ANSWER_FIELDS})


def answers_write(run: ScoringRun, records: list[Answer], simulated: list) -> None:
    answers_store(records)
    if any(simulated):
        ScoringRun.objects.filter(id=run.id, simulated=False).update(simulated=True)


# Every column of an answer the pipeline writes (all but the id).
STORED_FIELDS = ("run_id", "criterion_id", "round", "content_key", "cached", "source_run_id",
                 "answered_at", *ANSWER_FIELDS)


def answers_store(answers: list[Answer]) -> None:
    """Store answers, leaving out any the run already has (a batch scored twice).

    On PostgreSQL: COPY into a temporary table, then one INSERT ... ON CONFLICT DO NOTHING
    from it (COPY itself cannot skip conflicts). Elsewhere: bulk_create(ignore_conflicts).
    """
    if not answers:
        return
    if connection.vendor != "postgresql":
        Answer.objects.bulk_create(answers, ignore_conflicts=True, batch_size=2000)
        return
    fields = [Answer._meta.get_field(name.removesuffix("_id")) for name in STORED_FIELDS]
    columns = ", ".join(field.column for field in fields)
    values = operator.attrgetter(*(field.attname for field in fields))
    jsons = [i for i, field in enumerate(fields) if field.get_internal_type() == "JSONField"]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"CREATE TEMPORARY TABLE answer_load ON COMMIT DROP AS "
                       f"SELECT {columns} FROM {Answer._meta.db_table} WITH NO DATA")
        with cursor.copy(f"COPY answer_load ({columns}) FROM STDIN") as copy:
            for answer in answers:
                row = list(values(answer))
                for i in jsons:
                    row[i] = Jsonb(row[i])
                copy.write_row(row)
        cursor.execute(f"INSERT INTO {Answer._meta.db_table} ({columns}) SELECT {columns} "
                       "FROM answer_load ON CONFLICT DO NOTHING")
        cursor.execute("DROP TABLE answer_load")
