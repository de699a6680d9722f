"""MMAE submission files (SPEC section 2): predictions.json or submission.jsonl.

Plain Python, shared by the `score` command and the upload validation. Every fault names the
file and the line (JSONL) or entry (JSON array) it is on, and the sample id where there is one.
"""

from __future__ import annotations

import os

from config.text import cut
from scoring.kinds.files import (
    MAX_PER_KIND,
    Prediction,
    PredictionError,
    Problems,
    entries,
    keys_instead,
    read_text,
    show,
)
from scoring.kinds.mmae.rules import audio_url_of, content_parts

NAMES = ("predictions.json", "submission.jsonl")  # what an archive may hold them as
# An output's path inside the archive: far longer than any archive member's name needs.
MAX_PATH_CHARS = 1024


def _output_path(entry: dict) -> tuple[str | None, str | None]:
    """The edited audio's path of one entry, or (None, why)."""
    if "audio_path" in entry:
        path = entry["audio_path"]
        if not isinstance(path, str) or not path.strip():
            return None, f"'audio_path' must be a non-empty string, got {show(path)}"
        if len(path) > MAX_PATH_CHARS:
            return None, (f"'audio_path' is {len(path):,} characters; a path is at most "
                          f"{MAX_PATH_CHARS:,}")
        return path, None
    messages = entry.get("messages")
    if not isinstance(messages, list) or not messages:
        return None, "needs 'audio_path' (submission.jsonl) or 'messages' (predictions.json)"
    last = messages[-1]
    if not isinstance(last, dict) or last.get("role") != "assistant":
        return None, "the last message must be the assistant's turn holding the edited audio"
    urls = [
        audio_url_of(part) for part in content_parts(last) if part.get("type") == "audio"
    ]
    if len(urls) != 1 or urls[0] is None:
        return None, (
            f"the assistant turn must hold exactly one audio item, found {len(urls)}"
            if len(urls) != 1
            else "the assistant's audio item has no audio_url"
        )
    if len(urls[0]) > MAX_PATH_CHARS:
        return None, (f"the assistant's audio_url is {len(urls[0]):,} characters; a path is "
                      f"at most {MAX_PATH_CHARS:,}")
    return urls[0], None


def parse_predictions(text, *, name: str, known_ids: set[str],
                      per_kind: int = MAX_PER_KIND) -> list[Prediction]:
    """Check a submission file's text (or text stream) against the benchmark's ids; raise
    naming its faults, the first `per_kind` of each kind and how many more."""
    problems = Problems(per_kind)
    predictions: list[Prediction] = []
    first_place: dict[str, str] = {}
    seen = 0
    for place, value in entries(text, name, problems):
        seen += 1
        if not isinstance(value, dict):
            problems.add("entries that are not objects",
                         f"{name} {place}: must be a JSON object, got {show(value)}")
            continue
        sample_id = value.get("id")
        if not isinstance(sample_id, str) or not sample_id:
            problems.add("entries without an id", f"{name} {place}: 'id' must be a non-empty "
                         f"string, got {show(sample_id)}{keys_instead(value, 'id')}")
            continue
        path, why = _output_path(value)
        if why:
            problems.add("entries without an output",
                         f"{name} {place} (id {cut(sample_id)}): {why}")
            continue
        if sample_id not in known_ids:
            problems.add("unknown ids", f"{name} {place}: unknown id {cut(sample_id)!r} (not "
                         "in the benchmark)")
            continue
        if sample_id in first_place:
            problems.add("duplicate ids", f"{name} {place}: duplicate id {cut(sample_id)!r}, first "
                         f"on {first_place[sample_id]}")
            continue
        first_place[sample_id] = place
        predictions.append(Prediction(sample_id=sample_id, audio_path=path, where=place))
    if not seen and not problems:
        raise PredictionError([f"{name}: the file holds no predictions"])
    if problems:
        raise PredictionError(problems.messages())
    return predictions


def load_predictions(path, *, known_ids: set[str]) -> list[Prediction]:
    return parse_predictions(read_text(path), name=os.fspath(path), known_ids=known_ids)


