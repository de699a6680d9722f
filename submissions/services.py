"""Workflows of a submission: create (with quotas), validate, cancel."""

from __future__ import annotations

import functools
import logging
import shutil
from datetime import timedelta
from pathlib import Path

from celery import shared_task
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.files.move import file_move_safe
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import F, Q
from django.http import Http404
from django.utils import timezone

from config.alerts import staff_alert
from config.celery import broker_check
from config.errors import ServiceError
from config.heartbeat import Heartbeat
from config.tasks import RowTask, retry_countdown
from judge import families
from scoring import media, runs, spectrogram_store
from scoring.boards import board_changed
from scoring.judge_configs import judge_config_current
from scoring.kinds import get_kind
from scoring.kinds.files import PredictionError, text_stream
from scoring.models import Benchmark, Item, ScoringRun
from scoring.tasks import SpectrogramTask, enqueue_run
from submissions import anonymity, selectors
from submissions.claims import name_claim
from submissions.file_checks import (
    archive_file_problems,
    is_archive,
    predictions_file_problems,
    takes_archive,
)
from submissions.models import ModelEntry, Submission
from submissions.names import name_fault, name_normalise
from submissions.notifications import submission_notify
from submissions.quota import quota_left, quota_problems, quota_retry_after
from submissions.signals import measure_output_signals
from submissions.validation import (
    limits_for,
    predictions_problem,
    validate_responses,
    validate_upload,
)

log = logging.getLogger(__name__)

METADATA_FIELDS = ("organisation", "link", "parameters", "licence", "open_weights",
                   "base_family", "description")


def _quota_refused(user) -> ServiceError | None:
    """The refusal of an upload over the user's quota (with when to try again), or None."""
    left = quota_left(user)
    problems = quota_problems(left)
    return ServiceError(problems, code="quota", retry_after=quota_retry_after(left)) \
        if problems else None


def _check_predictions(predictions: UploadedFile, benchmark: Benchmark) -> list[str]:
    """The predictions file's faults, read a line at a time (JSONL) so that the web process
    never holds a large one whole; a JSON document is read whole only below
    SUBMISSION_MAX_PREDICTIONS_BYTES."""
    name = Path(predictions.name).name
    problem = predictions_problem(predictions.file, name, predictions.size)
    if problem:
        return [problem]
    keys = set(Item.objects.filter(benchmark=benchmark).values_list("key", flat=True))
    try:
        with text_stream(predictions.file) as text:
            get_kind(benchmark.kind).read_predictions(
                text, name=name, known_ids=keys,
                per_kind=settings.SUBMISSION_REPORT_MAX_PER_KIND)
    except PredictionError as exc:
        return exc.problems
    return []


def upload_keep(upload: UploadedFile, folder: Path, name: str) -> None:
    """Keep an upload: a large one already streamed to a temporary file is moved, not copied
    (or, with a storage other than MEDIA_ROOT, sent there)."""
    if not media.shared():
        media.file_save(upload, folder / name)
        return
    folder.mkdir(parents=True, exist_ok=True)
    if hasattr(upload, "temporary_file_path"):
        file_move_safe(upload.temporary_file_path(), str(folder / name))
        return
    with open(folder / name, "wb") as handle:
        for chunk in upload.chunks():
            handle.write(chunk)


def upload_name(upload: UploadedFile, fallback: str) -> str:
    """The upload's own file name made safe to keep (letters, digits, ._- only)."""
    name = Path(upload.name or fallback).name
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name).lstrip(".")
    return safe or fallback


def _kind_problems(benchmark: Benchmark, predictions, archive, options: dict) -> dict:
    """What the benchmark's kind refuses, by field: options it does not read, and for
    outputs that come inside the predictions file, an archive or no predictions file."""
    kind = get_kind(benchmark.kind)
    problems = {name: [f"option {name!r} does not apply to {benchmark.slug}"]
                for name, value in options.items() if value and name not in kind.options}
    if kind.outputs.files:
        return problems
    if archive is not None:
        problems["audio"] = [f"{benchmark.slug} takes {kind.outputs.help} only, no archive"]
    if predictions is None:
        problems["predictions"] = [f"{benchmark.slug} needs {kind.outputs.help}"]
    return problems


def _file_problems(benchmark: Benchmark, predictions, archive) -> dict:
    """Each file's faults seen from its name and first bytes (submissions.file_checks); an
    archive a benchmark does not take is refused by _kind_problems alone."""
    problems = {"predictions": predictions_file_problems(predictions, benchmark)
                if predictions is not None else []}
    if archive is not None and takes_archive(benchmark):
        problems["audio"] = archive_file_problems(archive)
    return problems


# The names among the metadata, shown on the board beside the model's (submissions.names).
NAME_FIELDS = ("organisation",)


def _name_problems(model_name: str, metadata: dict) -> dict:
    problems = {"model_name": name_fault(model_name, field="model name")
                or anonymity.reserved_name_problem(name_normalise(model_name)),
                **{k: name_fault(metadata[k], field=k, required=False, label=k.capitalize())
                   for k in NAME_FIELDS if k in metadata}}
    return {field: [problem] for field, problem in problems.items() if problem}


def _merged(*found: dict) -> dict[str, list[str]]:
    """Problems by field, from several checks, keeping each field's in order."""
    merged: dict[str, list[str]] = {}
    for problems in found:
        for field, messages in problems.items():
            merged.setdefault(field, []).extend(messages)
    return {field: messages for field, messages in merged.items() if messages}


def upload_file_problems(*, benchmark: Benchmark, predictions: UploadedFile | None,
                         archive: UploadedFile | None, options: dict) -> dict[str, list[str]]:
    """What the benchmark refuses of an upload's files and options, by field: the kind's
    rules, each file's first look, then the predictions file read through. The doors call it
    too when their own fields are refused, so that one answer names every problem."""
    problems = _merged(_kind_problems(benchmark, predictions, archive, options),
                       _file_problems(benchmark, predictions, archive))
    if predictions is not None and not problems:
        problems = _merged({"predictions": _check_predictions(predictions, benchmark)})
    if predictions is not None and archive is None and takes_archive(benchmark) \
            and not is_archive(predictions):  # (an archive there is told where it goes)
        # Every item would count as missing and score 0, as with an archive that holds none
        # of the files (refused by validation: _none_named).
        problems = _merged(problems, {"audio": [
            f"no archive of the output files: {benchmark.slug} takes "
            f"{get_kind(benchmark.kind).outputs.help}; a predictions file alone would score 0 "
            "on every item"]})
    return problems


# Benchmarks uploaded to through another app's door only (a challenge's phase boards, with
# their teams' limits): rule(benchmark) -> why a plain upload is refused, or None. Given by
# that app at start-up (challenges.apps), as scoring.visibility's disclosure rule is.
_door_rules: list = []


def give_door_rule(rule) -> None:
    _door_rules[:] = [rule]


# The furthest an embargo (Submission.publish_at: submissions.embargo) may reach: a year.
EMBARGO_MAX_DAYS = 366


def embargo_problem(publish_at) -> str | None:
    """Why a chosen publication moment cannot be an embargo's, or None."""
    if publish_at is None:
        return None
    now = timezone.now()
    if publish_at <= now:
        return ("the publication date (publish_at) must be in the future (UTC); leave it "
                "empty to publish at once")
    if publish_at > now + timedelta(days=EMBARGO_MAX_DAYS):
        return f"the publication date (publish_at) is at most {EMBARGO_MAX_DAYS} days ahead"
    return None


def submission_create(*, user, benchmark: Benchmark, model_name: str, metadata: dict,
                      public: bool, predictions: UploadedFile | None,
                      archive: UploadedFile | None, options: dict | None = None,
                      door_checked: bool = False, publish_at=None,
                      anonymous_until=None) -> Submission:
    """Store an upload and queue its validation; refuse it whole, storing nothing, when the
    quota is used up or the predictions file is plainly wrong. `options` are the benchmark
    kind's upload options (e.g. {"align": True} for AIR-Bench foundation). A benchmark with a
    door of its own (give_door_rule) takes uploads from that door only (`door_checked`).
    `publish_at`: an embargo, public from that moment (submissions.embargo), shown nowhere
    before. `anonymous_until`: shown as "Anonymous submission N" until that moment, then
    under its name (submissions.anonymity)."""
    why = None if door_checked else next(
        (found for rule in _door_rules if (found := rule(benchmark))), None)
    if why:
        raise ServiceError({"benchmark": [why]}, code="conflict")
    refused = _quota_refused(user)
    if refused:
        raise refused
    options = {k: v for k, v in (options or {}).items() if v}
    problems = _merged(_name_problems(model_name, metadata),
                       upload_file_problems(benchmark=benchmark, predictions=predictions,
                                            archive=archive, options=options))
    late = embargo_problem(publish_at)
    if late:
        problems = _merged(problems, {"publish_at": [late]})
    hidden = anonymity.anonymous_problem(anonymous_until, publish_at)
    if hidden:
        problems = _merged(problems, {"anonymous_until": [hidden]})
    if predictions is None and archive is None and not problems:
        problems["__all__"] = ["upload a predictions file and an archive of the edited audio, "
                               "or one archive holding both"]
    if problems:
        raise ServiceError(problems)  # by field, for the page to show each beside its own
    model_name = name_normalise(model_name)
    metadata = {**metadata, **{k: name_normalise(metadata[k]) for k in NAME_FIELDS
                               if k in metadata}}
    broker_check()  # a validation that cannot be queued: refuse before storing anything
    folder = None
    try:
        with transaction.atomic():
            # One upload at a time per author, so parallel uploads cannot pass the quota.
            get_user_model().objects.select_for_update().get(pk=user.pk)
            refused = _quota_refused(user)
            if refused:
                raise refused
            name_claim(user=user, benchmark=benchmark, name=model_name)
            details = {k: metadata[k] for k in METADATA_FIELDS if k in metadata}
            model, created = ModelEntry.objects.get_or_create(owner=user, name=model_name,
                                                              defaults=details)
            submission = Submission(owner=user, model=model, benchmark=benchmark,
                                    public=public or publish_at is not None
                                    or anonymous_until is not None,
                                    publish_at=publish_at, model_details={} if created else details,
                                    options=options)
            if anonymous_until is not None:
                anonymity.anonymous_entry(submission, anonymous_until)
            submission.mark(Submission.Status.UPLOADED)
            submission.save()
            submission.files_dir = f"submissions/{submission.pk}"
            folder = submission_folder(submission) / "upload"
            # One folder per role, so the files keep the names their author gave them and
            # validation messages name them as the author knows them.
            if predictions is not None:
                upload_keep(predictions, folder / "predictions",
                      upload_name(predictions, "predictions.json"))
            if archive is not None:
                upload_keep(archive, folder / "archive", upload_name(archive, "audio.zip"))
            submission.save(update_fields=["files_dir"])
            validate_submission.delay(submission.pk)
    except BaseException:
        if folder is not None:
            media.folder_delete(folder.parent)
        raise
    return submission


def _upload_files(folder: Path) -> tuple[Path | None, Path | None]:
    def first(role: str) -> Path | None:
        files = sorted((folder / role).iterdir()) if (folder / role).exists() else []
        return files[0] if files else None

    return first("predictions"), first("archive")


def submission_validate(submission_id: int) -> bool:
    """Validate an uploaded submission; reject it (keeping no files) or queue its scoring."""
    submission = Submission.objects.select_related("benchmark").get(id=submission_id)
    now = timezone.now()
    times = {**submission.status_times, "validating": now.isoformat()}
    if not Submission.objects.filter(id=submission_id, status=Submission.Status.UPLOADED) \
            .update(status=Submission.Status.VALIDATING, status_times=times, heartbeat_at=now):
        return False
    submission.refresh_from_db()
    with Heartbeat(functools.partial(_validation_heartbeat, submission_id),
                   settings.SUBMISSION_VALIDATION_HEARTBEAT_SECONDS):
        _validate(submission)
    return True


def _validation_heartbeat(submission_id: int) -> None:
    Submission.objects.filter(id=submission_id, status=Submission.Status.VALIDATING) \
        .update(heartbeat_at=timezone.now())


def _validate(submission: Submission) -> None:
    root = submission_folder(submission)
    audio_dir = root / "audio"
    shutil.rmtree(audio_dir, ignore_errors=True)
    audio_dir.mkdir(parents=True)
    media.folder_fetch(root / "upload")  # a worker's own copy, when the storage is elsewhere
    predictions, archive = _upload_files(root / "upload")
    if predictions is None and archive is None:  # submission_create stored at least one
        raise RuntimeError(f"the files of submission {submission.pk} are missing from storage")
    keys = list(submission.benchmark.items.order_by("position").values_list("key", flat=True))
    kind = get_kind(submission.benchmark.kind)
    if kind.outputs.files:
        result = validate_upload(item_keys=keys, predictions=predictions, archive=archive,
                                 audio_dir=audio_dir, outputs=kind.outputs,
                                 limits=limits_for(judge_config_current(submission.benchmark)))
    else:
        result = validate_responses(item_keys=keys, predictions=predictions, archive=archive,
                                    parse=kind.read_predictions)
    submission.report = result.report()
    if not result.ok:
        _reject(submission)
        return
    media.folder_save(audio_dir)
    with transaction.atomic():
        run = runs.run_create(benchmark=submission.benchmark,
                              audio_root=media.stored_root(audio_dir),
                              outputs=result.outputs, missing=result.missing,
                              options=submission.options)
        submission.current_run = run
        submission.coverage = result.coverage
        submission.mark(Submission.Status.QUEUED)
        submission.save()
        _apply_model_details(submission)
        submission.runs.add(run)
        enqueue_run(run.id)
        if kind.outputs.files:  # their own tasks: validation stays as fast as it was
            draw_output_spectrograms.delay(submission.pk)
            measure_output_signals.delay(submission.pk)
    if archive is not None:  # its contents are unpacked under audio/; kept until queued, so
        media.file_delete(archive)  # that a validation that broke can be retried


def model_family_set(*, user, model_id: int, family: str) -> ModelEntry:
    """The owner declares the base model family of a system (judge.families): every board it
    is on marks it anew. Anyone else's model is not found."""
    if family not in families.LABELS:
        raise ServiceError(f"base_family: {family!r} is not one of "
                           f"{', '.join(k or '(not declared)' for k in families.LABELS)}")
    model = ModelEntry.objects.filter(id=model_id, owner=user).first()
    if model is None:
        raise Http404("no such model")
    # An anonymous entry's pseudonym and the model it is revealed as declare one family.
    linked = ModelEntry.objects.filter(
        id__in=Submission.objects.filter(model_id=model.id).values("reveal_as_id")) \
        if model.pseudonym else ModelEntry.objects.filter(
            pseudonym=True, submissions__reveal_as_id=model.id)
    ids = {model.id, *linked.values_list("id", flat=True)}
    if ModelEntry.objects.filter(id__in=ids).exclude(base_family=family).update(
            base_family=family):
        model.base_family = family
        board_changed(*selectors.boards_showing(model_id__in=ids))
    return model


def _apply_model_details(submission: Submission) -> None:
    """An existing model's details change only with a public submission that passed
    validation: a private or rejected upload must not rewrite what the board shows."""
    if submission.public and submission.model_details and submission.reveal_as_id is None:
        ModelEntry.objects.filter(id=submission.model_id).update(**submission.model_details)
        board_changed(*selectors.boards_showing(model_id=submission.model_id))


def spectrograms_folder(submission: Submission) -> Path:
    """Where the spectrograms of a submission's outputs are kept: beside its audio."""
    return submission_folder(submission) / "spectrograms"


def submission_folder(submission: Submission) -> Path:
    """A submission's files, always derived from its id (never from a stored string): with a
    storage other than MEDIA_ROOT, this machine's copy of them, at the same path there."""
    return Path(settings.MEDIA_ROOT) / "submissions" / str(submission.pk)


def _reject(submission: Submission) -> None:
    media.folder_delete(submission_folder(submission))
    submission.files_dir = ""
    submission.mark(Submission.Status.REJECTED)
    submission.save()
    transaction.on_commit(lambda: _notify_now(submission.pk))


def _notify_now(submission_id: int) -> None:
    """Tell the author at once; if the email cannot go out, the notification sweep retries."""
    try:
        submission_notify(submission_id=submission_id)
    except Exception:
        log.exception("emailing the author of submission %s failed; the sweep will retry",
                      submission_id)


def submission_validation_broke(submission_id: int) -> bool:
    """Validation broke on our side and will be tried again: back to uploaded, so that the
    retry (or the sweeper, or a duplicate message) can claim it. True if it was validating."""
    submission = Submission.objects.only("status_times").get(id=submission_id)
    submission.mark(Submission.Status.UPLOADED)
    return bool(Submission.objects.filter(id=submission_id, status=Submission.Status.VALIDATING)
                .update(status=submission.status, status_times=submission.status_times,
                        heartbeat_at=None))


def submission_fail_validation(submission_id: int, why: str) -> bool:
    """Validation kept breaking on our side: the submission fails (never rejected), its files
    kept for a retry, no quota charged; staff are alerted and its author told. True if this
    caller failed it."""
    submission = Submission.objects.get(id=submission_id)
    submission.mark(Submission.Status.FAILED)
    if not Submission.objects.filter(
            id=submission_id, status__in=[Submission.Status.UPLOADED,
                                          Submission.Status.VALIDATING]) \
            .update(status=submission.status, status_times=submission.status_times, error=why):
        return False
    staff_alert(f"validation of submission {submission_id} failed",
                f"Validating submission {submission_id} failed on our side: {why}\n"
                "Its files are kept; the sweeper retries it, or retry it from the staff "
                "submissions page once the cause is fixed.",
                key=f"validation-failed:{submission_id}")
    transaction.on_commit(lambda: _notify_now(submission_id))
    return True


def submission_retry(*, submission_id: int, automatic: bool = False) -> bool:
    """Try again a submission that failed on our side: a failed validation is queued again
    (its files were kept), a failed run resumes (scoring.runs.run_retry). An automatic retry
    (the sweeper's) is counted in `retries`. True when this caller retried it."""
    submission = Submission.objects.select_related("current_run").get(id=submission_id)
    count = {"retries": F("retries") + 1} if automatic else {}
    with transaction.atomic():
        if submission.status == Submission.Status.FAILED:
            submission.mark(Submission.Status.UPLOADED)
            if not Submission.objects.filter(id=submission_id, status=Submission.Status.FAILED) \
                    .update(status=submission.status, status_times=submission.status_times,
                            heartbeat_at=None, **count):
                return False
            validate_submission.delay(submission_id)
            return True
        if submission.state != ScoringRun.Status.FAILED or \
                not runs.run_retry(submission.current_run_id):
            return False
        Submission.objects.filter(id=submission_id).update(**count)
        enqueue_run(submission.current_run_id)
    return True


def failures_to_retry(now=None) -> list[int]:
    """Submissions that failed on our side (in validation or in their current run) and are
    due a retry by the sweeper: SUBMISSION_RETRY_AFTER_SECONDS after they failed, three
    times longer after each retry, at most SUBMISSION_RETRY_TIMES times."""
    now = now or timezone.now()
    failed = Submission.objects.filter(
        Q(status=Submission.Status.FAILED)
        | Q(status=Submission.Status.QUEUED, current_run__status=ScoringRun.Status.FAILED),
        retries__lt=settings.SUBMISSION_RETRY_TIMES).select_related("current_run")
    due = []
    for submission in failed.only("id", "status", "status_times", "retries", "current_run",
                                  "current_run__status_times"):
        times = submission.status_times if submission.status == Submission.Status.FAILED \
            else submission.current_run.status_times
        wait = retry_countdown(settings.SUBMISSION_RETRY_AFTER_SECONDS, submission.retries)
        if times.get("failed", "") <= (now - timedelta(seconds=wait)).isoformat():
            due.append(submission.id)
    return due


def submission_cancel(*, submission: Submission) -> None:
    """Stop scoring a queued or scoring submission, for its status page and the API. Raises
    ServiceError when it is past that (or not there yet)."""
    if submission.current_run_id is None or not runs.run_cancel(submission.current_run_id):
        raise ServiceError(f"submission {submission.pk} is {submission.state}; only a queued "
                           "or scoring one can be cancelled", code="conflict")


def validations_waiting() -> list[int]:
    """Uploads whose validation is queued but not begun (a message a broker that lost its
    queues no longer holds)."""
    return list(Submission.objects.filter(status=Submission.Status.UPLOADED)
                .order_by("id").values_list("id", flat=True))


def validations_to_retry(now=None) -> list[int]:
    """Uploads whose validation was lost, listed to be queued again: those validating whose
    heartbeat is older than SUBMISSION_VALIDATION_STALE_SECONDS (a killed worker; back to
    uploaded), and those uploaded that long ago and never claimed (a message lost with the
    broker). A duplicate message is harmless: validation claims by a conditional UPDATE."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.SUBMISSION_VALIDATION_STALE_SECONDS)
    Status = Submission.Status
    ids = [submission_id for submission_id in Submission.objects.filter(
        Q(heartbeat_at__lt=stale) | Q(heartbeat_at=None, created_at__lt=stale),
        status=Status.VALIDATING).values_list("id", flat=True)
        if Submission.objects.filter(id=submission_id, status=Status.VALIDATING)
        .filter(Q(heartbeat_at__lt=stale) | Q(heartbeat_at=None))
        .update(status=Status.UPLOADED)]
    if ids:
        log.warning("validation of submission(s) %s lost its worker; queued again", ids)
    for submission in Submission.objects.filter(status=Status.UPLOADED, created_at__lt=stale) \
            .exclude(id__in=ids).only("id", "status_times"):
        if submission.status_times.get(Status.UPLOADED, "") < stale.isoformat():
            ids.append(submission.id)
    return ids


# --- the validation task -------------------------------------------------------------------


class SubmissionTask(RowTask):
    """A task over one submission. What an upload gets wrong is in the validation result
    (rejected, with the report); an exception is ours (the database, the disk, a bug): the
    submission goes back to uploaded and the task is retried SUBMISSION_VALIDATION_RETRIES
    times, SUBMISSION_VALIDATION_RETRY_SECONDS later, then 3 and 9 times that; then it fails
    on our side (files kept, staff alerted, author told) for the sweeper or staff to retry."""

    model = "submissions.Submission"
    retries = "SUBMISSION_VALIDATION_RETRIES"
    retry_seconds = "SUBMISSION_VALIDATION_RETRY_SECONDS"

    def before_retry(self, row_id: int) -> None:
        """Back to uploaded; if even that fails (the database is down), the retry or the
        sweeper (a stale heartbeat) finds it."""
        try:
            submission_validation_broke(row_id)
        except Exception:
            log.exception("submission %s could not be put back to uploaded", row_id)

    def gave_up(self, row_id: int, tries: int, why: str) -> None:
        submission_fail_validation(row_id, f"validation broke {tries} times; last error: {why}")


# Named as when it lived in submissions.tasks: queued messages and routes keep working.
@shared_task(base=SubmissionTask, name="submissions.tasks.validate_submission")
def validate_submission(submission) -> None:
    """Validate an upload (submission_validate)."""
    submission_validate(submission.id)


class SubmissionSpectrogramTask(SpectrogramTask):
    model = "submissions.Submission"


@shared_task(base=SubmissionSpectrogramTask)
def draw_output_spectrograms(submission) -> None:
    """Draw the spectrograms of a submission's outputs, queued when its validation passes."""
    run = submission.current_run
    if run is None:
        return
    drawn = spectrogram_store.draw_outputs(run=run, benchmark=submission.benchmark,
                                           folder=spectrograms_folder(submission))
    log.info("submission %s: %s output spectrogram(s) drawn", submission.pk, drawn)
