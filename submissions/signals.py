"""The signal card of a submission's outputs: each output's loudness, true peak, clipping,
silence, length against its input's, rate and channels (scoring.signals), measured once by a
worker after validation, and read by the API and the explorer on the same access rule as the
audio itself (the submission visible to the reader, its benchmark's items disclosed in full,
outputs the listening panel withholds left out)."""

from __future__ import annotations

import logging
from pathlib import Path

import soundfile
from celery import shared_task
from django.db.models import Avg, Case, FloatField, OuterRef, Subquery, Value, When

from config.tasks import RowTask
from scoring import media, signals
from scoring.boards import board_changed
from scoring.kinds import get_kind
from scoring.kinds.files import resolve_audio
from submissions.models import OutputSignal, Submission
from submissions.withheld import withheld

log = logging.getLogger(__name__)

FIELDS = ("lufs", "true_peak_dbtp", "clipped_share", "silent_share", "duration_ratio",
          "sample_rate", "channels")
# An output counts as clipping, or as mostly silent, in the summary past these shares.
CLIPPING_SHARE = 0.001  # 0.1% of its samples at full scale
SILENT_SHARE = 0.5  # half of its 10 ms frames under -60 dBFS


def _input_seconds(benchmark, media_paths: list[str]) -> float | None:
    """The length of the item's first input, None when it cannot be read."""
    if not media_paths or not benchmark.audio_root:
        return None
    try:
        info = soundfile.info(str(resolve_audio(Path(benchmark.audio_root), media_paths[0])))
    except (soundfile.LibsndfileError, RuntimeError):
        return None
    return info.frames / info.samplerate if info.samplerate else None


def signals_measure(submission: Submission) -> int:
    """Measure every output of the submission's current run not measured yet; how many were.
    Idempotent: a retry measures what is left."""
    run = submission.current_run
    kind = get_kind(submission.benchmark.kind)
    if run is None or not kind.outputs.files:
        return 0
    done = set(OutputSignal.objects.filter(submission=submission)
               .values_list("item", flat=True))
    media_of = dict(submission.benchmark.items.values_list("key", "media"))
    count = 0
    for key in sorted(set(run.outputs) - done):
        path = media.output_path(run.audio_root, run.outputs[key], run.digests.get(key))
        if path is None or not path.is_file():
            continue
        try:
            found = signals.measure(path)
        except ValueError as exc:  # validation read it: a changed file is ours to report
            log.warning("submission %s, %s: %s", submission.pk, key, exc)
            continue
        source = _input_seconds(submission.benchmark, media_of.get(key) or [])
        ratio = found.seconds / source if source else None
        values = {k: v for k, v in found.as_dict().items() if k != "seconds"}
        OutputSignal.objects.get_or_create(
            submission=submission, item=key,
            defaults={**values, "seconds": found.seconds,
                      "duration_ratio": None if ratio is None else round(ratio, 6)})
        count += 1
    return count


class SignalTask(RowTask):
    """Measuring a submission's outputs (idempotent: a retry resumes). An error is ours (the
    audio passed validation): retried SPECTROGRAM_RETRIES times, then logged; the API says
    meanwhile that the card is being measured."""

    model = "submissions.Submission"
    retries = "SPECTROGRAM_RETRIES"
    retry_seconds = "SPECTROGRAM_RETRY_SECONDS"

    def gave_up(self, row_id: int, tries: int, why: str) -> None:
        log.error("measuring the outputs of submission %s gave up after %s tries: %s", row_id,
                  tries, why)


@shared_task(base=SignalTask)
def measure_output_signals(submission) -> None:
    """Queued when a submission's validation passes, beside its spectrograms."""
    measured = signals_measure(submission)
    log.info("submission %s: %s output(s) measured", submission.pk, measured)
    if measured and Submission.objects.shown().filter(pk=submission.pk).exists():
        board_changed(submission.benchmark_id)  # its row's flag


def signal_card(submission: Submission) -> dict:
    """Per item and in summary, for a reader the caller let see the submission's audio:
    outputs the listening panel withholds are left out."""
    run = submission.current_run
    hidden_ids = withheld(submission.benchmark, submission_ids=[submission.pk]) \
        .items(submission.pk)
    hidden = set(submission.benchmark.items.filter(id__in=hidden_ids)
                 .values_list("key", flat=True)) if hidden_ids else set()
    rows = [row for row in OutputSignal.objects.filter(submission=submission).order_by("item")
            .values("item", *FIELDS) if row["item"] not in hidden]
    outputs = len(set(run.outputs) - hidden) if run is not None else 0
    return {"state": "measured" if rows and len(rows) >= outputs else "measuring",
            "outputs": outputs, "items": rows, "summary": summary(rows)}


def summary(rows: list[dict]) -> dict:
    """What the outputs say together: how many, the median loudness and the loudest true
    peak, and the shares of outputs that clip, are mostly silent, or are far from their
    input's length."""
    n = len(rows)
    if not n:
        return {"n": 0}
    lufs = sorted(r["lufs"] for r in rows if r["lufs"] is not None)
    peaks = [r["true_peak_dbtp"] for r in rows if r["true_peak_dbtp"] is not None]
    ratios = [r["duration_ratio"] for r in rows if r["duration_ratio"] is not None]
    return {
        "n": n,
        "median_lufs": lufs[len(lufs) // 2] if lufs else None,
        "max_true_peak_dbtp": max(peaks) if peaks else None,
        "clipping_share": round(sum(r["clipped_share"] > CLIPPING_SHARE for r in rows) / n, 4),
        "silent_share": round(sum(r["silent_share"] > SILENT_SHARE for r in rows) / n, 4),
        "length_off_share": round(sum(not 0.5 <= x <= 2.0 for x in ratios) / n, 4),
    }


def signals_annotate(submission: Submission, samples: list[dict]) -> None:
    """Give each sample of the explorer with an output its card, `s["signals"]` (the row's
    figures) and `s["signals_pending"]` while its output is not measured yet."""
    keys = [s["key"] for s in samples if s.get("has_output")]
    found = {row["item"]: row for row in OutputSignal.objects.filter(
        submission=submission, item__in=keys).values("item", "seconds", *FIELDS)}
    for s in samples:
        row = found.get(s["key"])
        s["signals"] = None if row is None else {
            **row, "clipped_percent": 100 * row["clipped_share"],
            "silent_percent": 100 * row["silent_share"],
            "clips": row["clipped_share"] > CLIPPING_SHARE,
            "mostly_silent": row["silent_share"] > SILENT_SHARE}
        s["signals_pending"] = bool(s.get("has_output")) and row is None


def clipping_share() -> Subquery:
    """The share of a submission's measured outputs that clip (over CLIPPING_SHARE of their
    samples at full scale), as an expression over Submission rows; null before any output
    is measured. A board reads it with its rows (leaderboard.boards.state)."""
    clips = Case(When(clipped_share__gt=CLIPPING_SHARE, then=Value(1.0)), default=Value(0.0),
                 output_field=FloatField())
    return Subquery(OutputSignal.objects.filter(submission=OuterRef("pk"))
                    .values("submission").annotate(share=Avg(clips)).values("share")[:1],
                    output_field=FloatField())


def any_clipping(benchmark) -> bool:
    """Whether a shown submission of the board has an output that clips: the board offers its
    filter then (kept with the board state: measuring a shown submission changes the board)."""
    return OutputSignal.objects.filter(
        submission__in=Submission.objects.shown().filter(benchmark=benchmark),
        clipped_share__gt=CLIPPING_SHARE).exists()
