"""What the explorer and the item pages show beside each player: the spectrogram images of a
sample's audio (scoring.spectrogram_store), or that they are being drawn. The caller has
checked access."""

from __future__ import annotations

from django.urls import reverse

from scoring import spectrogram_store
from submissions.models import Submission
from submissions.services import spectrograms_folder


def _image(submission_id: int, key: str, which: str, ready: bool) -> dict:
    """An image beside a player: its address when drawn, else whether it is being drawn."""
    url = reverse("leaderboard:submission-spectrogram", args=[submission_id, key, which]) \
        if ready else None
    return {"url": url, "which": which}


def spectrograms_annotate(submission, samples: list[dict]) -> None:
    """Give each sample of the explorer its images: `s["spectrograms"]` holds "inputs" (one
    per input label, in order), "output" and "diff" (None when there is none to show), and
    "inputs_pending" / "output_pending" while their drawing has not finished."""
    if not samples:
        return
    inputs = spectrogram_store.drawn(spectrogram_store.inputs_folder(submission.benchmark))
    outputs = spectrogram_store.drawn(spectrograms_folder(submission)) \
        if submission.current_run is not None else None
    for s in samples:
        key = s["key"]
        numbers = set((inputs or {}).get(key, []))
        drawn = (outputs or {}).get(key)
        s["spectrograms"] = {
            "inputs": [_image(submission.pk, key, label, int(label[5:]) in numbers)
                       for label in s.get("inputs", [])],
            "inputs_pending": inputs is None,
            "output": _image(submission.pk, key, "output", True) if drawn else None,
            "diff": _image(submission.pk, key, "diff", True) if drawn and drawn["diff"]
            else None,
            "output_pending": outputs is None,
        }


def sides_annotate(benchmark, items: list[dict]) -> None:
    """Give the item pages' items their images where they are drawn (nothing where they are
    not: these pages are kept per board state, and the drawing is over long before a
    submission is scored): each item's `input_spectrograms` (one per input label, through the
    submission that serves its inputs) and each side's output and difference from the input
    (`side["spectrograms"]`), for the outputs a side shows (not withheld, not missing)."""
    if not items:
        return
    inputs = spectrogram_store.drawn(spectrogram_store.inputs_folder(benchmark)) or {}
    manifests: dict[int, dict] = {}
    for item in items:
        key, first = item["key"], item.get("input_submission")
        numbers = set(inputs.get(key, []))
        item["input_spectrograms"] = [
            _image(first, key, label, True) if int(label[5:]) in numbers else None
            for label in item.get("inputs", [])]
        for side in item["sides"]:
            s, pk = side["s"], side["submission"]
            side["spectrograms"] = None
            if s.get("withheld") or not s.get("has_output"):
                continue
            if pk not in manifests:  # a folder is named by its submission's id alone
                manifests[pk] = spectrogram_store.drawn(
                    spectrograms_folder(Submission(pk=pk))) or {}
            drawn = manifests[pk].get(key)
            if drawn:
                side["spectrograms"] = {
                    "output": _image(pk, key, "output", True),
                    "diff": _image(pk, key, "diff", True) if drawn["diff"] else None}
