"""A benchmark imported from the organizer pages (/c/<slug>/manage/phases/<phase>/import/), as
`manage.py import_benchmark KIND META --audio-root DIR --slug SLUG [--hidden-rubrics] --where
...` imports one, and attached as a track's board in the phase.

An organizer uploads the benchmark's metadata file and an archive (.zip or .tar.gz) of its input
audio, and names its kind, board slug, track and whether its rubrics stay hidden until the
reveal. The page keeps both files in a folder of the import's own (MEDIA_ROOT/benchmark-imports/
<challenge>/<token>/) and queues `benchmark_import_run`, always: an import unpacks and hashes
every input audio of the set (hundreds of MB to GBs for a final set), longer than a request
should hold a web worker, and one path is tested once. It goes to the validation queue, whose
worker reads archives and takes no scoring batch, so it starts within seconds.

The task reads the metadata (a fault names the file's entry), keeps the items of the track's
`where` filter, reads the archive with the uploads' safe reader (submissions.archives: names
that would leave the folder, links, devices, encrypted members, too many members or bytes are
refused by name before a byte is written) and finds there every input audio those items name
(from the archive's root or its one top-level folder); then it unpacks those members alone,
imports the metadata (scoring.services.benchmark_import) and, in the same transaction, moves the
audio to MEDIA_ROOT/benchmarks/<slug>/v<n>/ (the benchmark's audio root) and attaches the
benchmark as the track's board (organizer_services.board_attach: audited, in public). Anything
refused or broken leaves nothing: no benchmark, no board, no folder; the import's folder goes
in every case, and only its record (MEDIA_ROOT/benchmark-imports/<challenge>/<token>.json: what
was asked, its state and progress, what was refused) stays for the page to show.

The benchmark's audio is read in place by the workers that score it, as a benchmark's audio
root always is: the page needs a MEDIA_ROOT shared by the web servers and workers (the
filesystem storage), and refuses otherwise (manage.py import_benchmark then)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from datetime import datetime, timedelta
from pathlib import Path

from celery import shared_task
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from kombu.exceptions import OperationalError
from redis.exceptions import RedisError

from audit.models import AuditEvent
from audit.services import audit_record
from challenges.models import Phase, PhaseBoard, Track
from challenges.organizer_services import benchmark_give, board_attach
from config.celery import BrokerUnavailable, broker_check
from config.errors import ServiceError
from scoring import media
from scoring.kinds import KINDS, get_kind
from scoring.kinds.files import raise_ours, why
from scoring.models import Benchmark
from scoring.services import BenchmarkFileError, benchmark_import, benchmark_rows
from submissions.archives import (
    ARCHIVE_ERRORS,
    ArchiveRefused,
    Limits,
    extract,
    list_archive,
    member_path,
    open_archive,
)
from submissions.services import upload_keep, upload_name

log = logging.getLogger(__name__)

IMPORTS = "benchmark-imports"  # under MEDIA_ROOT: each import's record and, while it runs, files
BENCHMARKS = "benchmarks"  # under MEDIA_ROOT: benchmarks/<slug>/v<n>/, an imported audio root
ACTIVE = ("queued", "unpacking", "importing")
FINISHED = ("done", "refused", "failed")
EXTRACT_BATCH = 50  # members unpacked between two progress lines
SHOWN_PROBLEMS = 50  # at most this many problems kept in a record
# A running import writes its progress at least this often; one silent for longer was cut short
# (its worker died) and a redelivery of its task starts it again.
STALE = timedelta(minutes=15)
FAILED_ON_OUR_SIDE = ("the import failed on our side (staff have the details in the log); "
                      "nothing was kept: upload the files again")


def import_limits() -> Limits:
    """The archive reader's limits for a benchmark's input audio: members and unpacked bytes
    from settings. Each member is checked against its header while unpacked; the audio itself
    is not checked (the judge hears it as the metadata's authors gave it)."""
    return Limits(max_files=settings.CHALLENGE_BENCHMARK_MAX_FILES,
                  max_unpacked_bytes=settings.CHALLENGE_BENCHMARK_MAX_UNPACKED_BYTES,
                  max_audio_seconds=0.0,
                  max_output_bytes=settings.CHALLENGE_BENCHMARK_MAX_UNPACKED_BYTES,
                  max_sample_rate=0, max_channels=0, max_ratio=float("inf"),
                  ratio_floor_bytes=settings.CHALLENGE_BENCHMARK_MAX_UNPACKED_BYTES)


def kind_choices() -> list[tuple[str, str]]:
    return [(name, f"{name} ({kind.title})") for name, kind in sorted(KINDS.items())]


# --- records ---------------------------------------------------------------------------------

def _folder(challenge_id: int) -> Path:
    return Path(settings.MEDIA_ROOT) / IMPORTS / str(challenge_id)


def record_path(challenge_id: int, token: str) -> Path:
    return _folder(challenge_id) / f"{token}.json"


def work_dir(challenge_id: int, token: str) -> Path:
    """The import's files while it runs: metadata/, archive/, audio/ (what is unpacked)."""
    return _folder(challenge_id) / token


def benchmark_folder(slug: str) -> Path:
    return Path(settings.MEDIA_ROOT) / BENCHMARKS / slug


def record_read(challenge_id: int, token: str) -> dict | None:
    try:
        return json.loads(record_path(challenge_id, token).read_text())
    except (OSError, ValueError):
        return None


def _write(record: dict, **changes) -> dict:
    """Update the record and write it whole (a reader never sees half of it)."""
    record.update(changes, updated_at=timezone.now().isoformat())
    path = record_path(record["challenge"], record["token"])
    path.parent.mkdir(parents=True, exist_ok=True)
    incoming = path.with_suffix(f".{uuid.uuid4().hex[:8]}.tmp")
    incoming.write_text(json.dumps(record))
    os.replace(incoming, path)
    return record


def imports_of(phase: Phase, limit: int = 20) -> list[dict]:
    """The phase's imports, newest first (for its import page)."""
    found = []
    folder = _folder(phase.challenge_id)
    for path in folder.glob("*.json") if folder.is_dir() else []:
        record = record_read(phase.challenge_id, path.stem)
        if record is not None and record.get("phase") == phase.pk:
            found.append(record)
    found.sort(key=lambda r: r.get("created_at", ""), reverse=True)
    return found[:limit]


# --- the page's part: checks, the files kept, the task queued --------------------------------

def import_queue(*, phase: Phase, track: Track, kind: str, slug: str, title: str,
                 rubrics_hidden: bool, metadata, archive, actor) -> dict:
    """Check what can be checked at once, keep the two uploads in the import's folder and queue
    the import; its record. Refused (ServiceError, by field) before anything is stored."""
    if not media.shared():
        raise ServiceError("this site's machines share no MEDIA_ROOT (DEFAULT_STORAGE=s3), "
                           "where the workers that score a benchmark read its audio: import it "
                           "with manage.py import_benchmark on a disk they all read")
    if track.challenge_id != phase.challenge_id:
        raise ServiceError({"track": ["not a track of this challenge"]})
    if phase.revealed_at is not None:
        raise ServiceError(f"{phase.name} was revealed: its boards stay as they were",
                           code="conflict")
    if PhaseBoard.objects.filter(phase=phase, track=track).exists():
        raise ServiceError({"track": [f"{track.name} has a board in {phase.name} already"]},
                           code="conflict")
    if kind not in KINDS:
        raise ServiceError({"kind": [f"no benchmark kind is named {kind!r}"]})
    if Benchmark.objects.filter(slug=slug).exists():
        raise ServiceError({"slug": [f"{slug} is taken: a benchmark of that name exists "
                                     "(choose another board slug)"]}, code="conflict")
    if any(r["slug"] == slug and r["state"] in ACTIVE for r in imports_of(phase, limit=1000)):
        raise ServiceError({"slug": [f"an import of {slug} is under way"]}, code="conflict")
    problems = {}
    if metadata.size > settings.CHALLENGE_BENCHMARK_MAX_METADATA_BYTES:
        problems["metadata"] = [f"{metadata.name}: {metadata.size} bytes, above the limit of "
                                f"{settings.CHALLENGE_BENCHMARK_MAX_METADATA_BYTES}"]
    if metadata.size + archive.size > settings.CHALLENGE_BENCHMARK_MAX_BYTES:
        problems["archive"] = [f"{archive.name}: the two files are {metadata.size + archive.size}"
                               f" bytes, above the limit of "
                               f"{settings.CHALLENGE_BENCHMARK_MAX_BYTES}"]
    if problems:
        raise ServiceError(problems)
    broker_check()  # an import that cannot be queued: refuse before storing anything
    token = uuid.uuid4().hex
    record = {"token": token, "challenge": phase.challenge_id, "phase": phase.pk,
              "track": track.pk, "track_name": track.name,
              "kind": kind, "slug": slug, "title": title, "rubrics_hidden": rubrics_hidden,
              "actor": actor.pk, "actor_name": actor.get_username(),
              "metadata": upload_name(metadata, "metadata.json"),
              "archive": upload_name(archive, "audio.zip"),
              "created_at": timezone.now().isoformat(), "done": 0, "total": 0, "problems": []}
    work = work_dir(phase.challenge_id, token)
    try:
        upload_keep(metadata, work / "metadata", record["metadata"])
        upload_keep(archive, work / "archive", record["archive"])
        _write(record, state="queued", line="queued: waiting for a worker")
        # Outside any transaction (the page runs in none): queued now, or refused now.
        try:
            benchmark_import_run.apply_async(args=[phase.challenge_id, token],
                                             queue=settings.SUBMISSION_VALIDATION_QUEUE)
        except (OperationalError, RedisError) as exc:
            log.error("benchmark import %s could not be queued: %s", token, exc)
            raise BrokerUnavailable() from exc
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        record_path(phase.challenge_id, token).unlink(missing_ok=True)
        raise
    return record


# --- the task ----------------------------------------------------------------------------------

@shared_task(ignore_result=True, name="challenges.benchmark_imports.benchmark_import_run")
def benchmark_import_run(challenge_id: int, token: str) -> None:
    record = import_run(challenge_id, token)
    if record is not None and record["state"] in ACTIVE:
        # Another worker is on it (this is a second delivery): look again once it would be
        # stale, so that an import whose worker died is started again.
        benchmark_import_run.apply_async(args=[challenge_id, token],
                                         queue=settings.SUBMISSION_VALIDATION_QUEUE,
                                         countdown=STALE.total_seconds())


def import_run(challenge_id: int, token: str) -> dict | None:
    """Run a queued import to its end: done (the board attached), refused (with its problems)
    or failed on our side. Its folder is removed in every case; its record says which."""
    record = record_read(challenge_id, token)
    if record is None or record["state"] in FINISHED:
        return record  # a second delivery of a finished import
    committed = None
    if record["state"] != "queued":
        if timezone.now() - datetime.fromisoformat(record["updated_at"]) < STALE:
            return record  # another worker is on it
        committed = _clean_cut_short(record)
    work = work_dir(challenge_id, token)
    outcome: dict
    try:
        if committed is not None:
            benchmark = committed
        elif not work.is_dir():
            raise ServiceError("the uploaded files are gone: upload them again")
        else:
            benchmark = _import(record, work)
        outcome = {"state": "done", "benchmark": benchmark.slug,
                   "line": f"imported {benchmark} ({benchmark.n_items} items) and attached as "
                           f"the board of {record['track_name']}"}
    except BenchmarkFileError as exc:
        outcome = _refused(record, exc.problems)
    except ServiceError as exc:
        outcome = _refused(record, exc.problems)
    except Exception:
        log.exception("benchmark import %s (%s) failed", token, record.get("slug"))
        outcome = {"state": "failed", "line": "failed on our side",
                   "problems": [FAILED_ON_OUR_SIDE]}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return _write(record, **outcome)


def _refused(record: dict, problems: list[str]) -> dict:
    shown = [_named(record, p) for p in problems[:SHOWN_PROBLEMS]]
    if len(problems) > SHOWN_PROBLEMS:
        shown.append(f"... and {len(problems) - SHOWN_PROBLEMS} more")
    return {"state": "refused", "line": "refused: nothing was imported", "problems": shown}


def _named(record: dict, problem: str) -> str:
    """A problem with this machine's paths replaced by the names the organizer knows."""
    work = work_dir(record["challenge"], record["token"])
    return (problem.replace(str(work / "metadata" / record["metadata"]), record["metadata"])
            .replace(str((work / "audio").resolve()), record["archive"])
            .replace(str(work / "audio"), record["archive"]))


def _clean_cut_short(record: dict) -> Benchmark | None:
    """What an import cut short (its worker died) left: its unpacked audio, and the benchmark
    folder it was moving that audio to unless a benchmark lives there. The benchmark it
    committed, when it got that far (its worker died before its record said so)."""
    shutil.rmtree(work_dir(record["challenge"], record["token"]) / "audio", ignore_errors=True)
    moving = record.get("moving_to")
    there = Benchmark.objects.filter(Q(audio_root=moving) | Q(audio_root__startswith=f"{moving}/"),
                                     slug=record["slug"]).first() if moving else None
    if there is not None and PhaseBoard.objects.filter(
            benchmark=there, phase_id=record["phase"], track_id=record["track"]).exists():
        return there
    if moving and there is None:
        shutil.rmtree(moving, ignore_errors=True)
    _write(record, state="queued", line="started again: its worker stopped", done=0)
    return None


def _import(record: dict, work: Path) -> Benchmark:
    kind = get_kind(record["kind"])
    phase = Phase.objects.get(pk=record["phase"])
    track = Track.objects.get(pk=record["track"])
    where = track.where or {}
    meta = work / "metadata" / record["metadata"]
    _write(record, state="unpacking", line=f"reading {record['metadata']}")
    inputs = _inputs(kind, meta, where, record)
    base = _unpack(work / "archive" / record["archive"], work / "audio", inputs, record)
    _write(record, state="importing",
           line=f"importing: hashing {len(inputs)} input audio files and storing the items")
    return _commit(record, kind=kind, meta=meta, audio=work / "audio", base=base, phase=phase,
                   track=track, where=where)


def _inputs(kind, meta: Path, where: dict, record: dict) -> list[str]:
    """The input audio named by the items kept (the track's), each once, in order."""
    rows = benchmark_rows(kind, meta, where, name=Path(record["metadata"]))
    return list(dict.fromkeys(m for row in rows for m in row.media))


def _unpack(archive: Path, audio: Path, inputs: list[str], record: dict) -> str:
    """Unpack the members `inputs` names into `audio`; the folder of the archive they are
    under ("" for its root, else its one top-level folder)."""
    name = record["archive"]
    problems: list[str] = []
    try:
        with open_archive(archive) as reader:
            if reader is None:
                raise ServiceError(f"{name}: not a .zip or .tar.gz archive")
            listing = list_archive(reader, archive, import_limits(), problems)
            if listing is None:
                raise ServiceError(problems)
            base, members, missing = _locate(listing, inputs)
            if missing:
                raise ServiceError([f"{record['metadata']}: input audio {m!r} is not in {name}"
                                    for m in missing])
            entries = [listing.files[m] for m in members]
            audio.mkdir(parents=True, exist_ok=True)
            for start in range(0, len(entries), EXTRACT_BATCH):
                problems = extract(reader, entries[start:start + EXTRACT_BATCH], audio, name)
                if problems:
                    raise ServiceError(problems)
                done = min(start + EXTRACT_BATCH, len(entries))
                _write(record, done=done, total=len(entries),
                       line=f"unpacking: {done} of {len(entries)} input audio files")
    except ArchiveRefused as exc:
        raise ServiceError(f"{name}: {exc}") from None
    except ARCHIVE_ERRORS as exc:
        raise_ours(exc)
        raise ServiceError(f"{name}: damaged archive: {why(exc)}") from None
    return base


def _locate(listing, inputs: list[str]) -> tuple[str, list[str], list[str]]:
    """(base, members, missing): the inputs found from the archive's root, else from its one
    top-level folder (an archive of the set's folder itself); a path that would leave the
    archive is missing."""
    paths = [member_path(m.removeprefix("file://")) for m in inputs]
    best: tuple[str, list[str], list[str]] = ("", [], list(inputs))
    for base in dict.fromkeys(["", listing.wrapper or ""]):
        found, missing = [], []
        for given, path in zip(inputs, paths, strict=True):
            full = (f"{base}/{path}" if base else path) if path else None
            if full and full in listing.files:
                found.append(full)
            else:
                missing.append(given)
        if not missing:
            return base, list(dict.fromkeys(found)), []
        if len(missing) < len(best[2]):
            best = (base, found, missing)
    return best


def _commit(record: dict, *, kind, meta: Path, audio: Path, base: str, phase: Phase,
            track: Track, where: dict) -> Benchmark:
    """Import the metadata, move the audio to the benchmark's folder and attach the board: all
    or nothing."""
    slug = record["slug"]
    if Benchmark.objects.filter(slug=slug).exists():
        raise ServiceError(f"{slug} is taken: a benchmark of that name exists")
    actor = get_user_model().objects.filter(pk=record["actor"]).first()
    moved: Path | None = None
    try:
        with transaction.atomic():
            try:
                benchmark, created = benchmark_import(
                    kind=kind.name, path=meta, audio_root=audio / base if base else audio,
                    slug=slug, title=record["title"], rubrics_hidden=record["rubrics_hidden"],
                    where=where)
            except IntegrityError:  # another import of the slug committed meanwhile
                raise ServiceError(f"{slug} is taken: a benchmark of that name exists") \
                    from None
            if not created or benchmark.version != 1:
                raise ServiceError(f"{slug} is taken: a benchmark of that name exists")
            final = benchmark_folder(slug) / f"v{benchmark.version}"
            final.parent.mkdir(parents=True, exist_ok=True)
            _write(record, moving_to=str(final.resolve()))
            try:
                os.rename(audio, final)
            except OSError as exc:
                raise_ours(exc)
                raise ServiceError(f"{slug}: its folder {BENCHMARKS}/{slug}/{final.name} is "
                                   "there already (staff: remove it)") from None
            moved = final
            root = (final / base) if base else final
            Benchmark.objects.filter(pk=benchmark.pk).update(audio_root=str(root.resolve()))
            benchmark_give(challenge=phase.challenge, slug=slug, actor=actor)
            board_attach(phase=phase, track=track, benchmark_slug=slug, actor=actor)
            audit_record(actor=actor, action=AuditEvent.Action.CHALLENGE, obj=benchmark,
                         after={"benchmark": slug, "kind": kind.name, "items": benchmark.n_items,
                                "rubrics_hidden": benchmark.rubrics_hidden, "where": where,
                                "metadata": record["metadata"], "archive": record["archive"],
                                "phase": phase.slug, "track": track.slug},
                         reason=f"{slug} imported on the organizer pages", benchmark_slug=slug)
    except BaseException:
        if moved is not None:
            shutil.rmtree(moved, ignore_errors=True)
        folder = benchmark_folder(slug)
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
        raise
    benchmark.refresh_from_db()
    return benchmark
