"""Upload validation of a submission (SPEC section 2), with no database access.

An upload is a predictions file (predictions.json or submission.jsonl) plus an archive (.zip or
.tar.gz) of the edited audio, or one archive holding both. The archive is listed and checked
whole, and the predictions read (beside it or from inside it), before anything is written; then
only the members the predictions name are extracted into `audio_dir`, counting the bytes
actually written since headers can lie. Every problem names the file and the entry, and the
sample id where there is one. Input audio always comes from the benchmark, never from here.

Zip bombs are refused from the headers: by the total and each output's declared size, and by
the compression ratio of the outputs taken together (unpacked bytes over compressed bytes; for
a .tar.gz, over the whole archive). Real WAV and FLAC deflate by well under 2:1, and a few
outputs of digital silence (about 1000:1) among real ones leave the whole far below the limit
(SUBMISSION_MAX_COMPRESSION_RATIO, 20 by default); outputs that unpack to less than
SUBMISSION_COMPRESSION_FLOOR_BYTES are never refused for their ratio. An upload made mostly of
silence can be sent as a zip that stores its members (`zip -0`): a ratio of 1.
"""

from __future__ import annotations

import dataclasses
import posixpath
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from scoring.kinds.base import OutputFormat
from scoring.kinds.files import (
    Prediction,
    PredictionError,
    json_document,
    raise_ours,
    text_stream,
    utf8_problem,
    why,
)
from submissions.archives import (
    ARCHIVE_ERRORS,
    ArchiveRefused,
    Entry,
    Limits,
    Listing,
    extract,
    list_archive,
    member_path,
    open_archive,
    unsafe,
)

# A real predictions file is a few MB; this only keeps a hostile one from filling memory.
MAX_PREDICTIONS_BYTES = 256 * 1024**2




SHOWN = 5  # file names a message or the report lists before "..."


NOTHING_UPLOADED = ("nothing uploaded: send a predictions file and an archive of the edited "
                    "audio, or one archive holding both")


def limits_for(config) -> Limits:
    """The site's upload limits, narrowed to what the judge config's servers accept: the
    longest audio, the largest file and the largest audio once decoded (vLLM's limits as the
    launch script sets them, each named with the config's figure)."""
    limits = limits_from_settings()
    if config is None:
        return limits
    if config.max_audio_seconds < limits.max_audio_seconds:
        limits = dataclasses.replace(
            limits, max_audio_seconds=config.max_audio_seconds,
            audio_limit_source=f"the longest audio judge config {config.name} accepts")
    source = f"judge config {config.name} (vLLM {config.vllm_version})"
    file_bytes = config.max_audio_file_mb * 1024 ** 2
    if file_bytes < limits.max_output_bytes:
        limits = dataclasses.replace(limits, max_output_bytes=file_bytes)
    return dataclasses.replace(limits, max_decoded_bytes=config.max_audio_decode_bytes,
                               judge_source=source)


def limits_from_settings() -> Limits:
    return Limits(max_files=settings.SUBMISSION_MAX_FILES,
                  max_unpacked_bytes=settings.SUBMISSION_MAX_UNPACKED_BYTES,
                  max_audio_seconds=float(settings.SUBMISSION_MAX_AUDIO_SECONDS),
                  max_output_bytes=settings.SUBMISSION_MAX_OUTPUT_BYTES,
                  max_sample_rate=settings.SUBMISSION_MAX_SAMPLE_RATE,
                  max_channels=settings.SUBMISSION_MAX_CHANNELS,
                  max_ratio=float(settings.SUBMISSION_MAX_COMPRESSION_RATIO),
                  ratio_floor_bytes=settings.SUBMISSION_COMPRESSION_FLOOR_BYTES)


@dataclass
class ValidationResult:
    errors: list[str] = field(default_factory=list)  # any error rejects the whole submission
    outputs: dict[str, str] = field(default_factory=dict)  # key -> path relative to audio_dir
    missing: dict[str, str] = field(default_factory=dict)  # key -> why it has no output
    warnings: list[str] = field(default_factory=list)
    n_items: int = 0
    ignored: list[str] = field(default_factory=list)  # archive files no prediction names


    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def coverage(self) -> float:
        return len(self.outputs) / self.n_items if self.n_items else 0.0

    def report(self) -> dict:
        return {"errors": list(self.errors), "warnings": list(self.warnings),
                "missing": dict(self.missing), "n_items": self.n_items,
                "n_outputs": len(self.outputs), "coverage": self.coverage,
                "ignored": {"count": len(self.ignored), "first": self.ignored[:SHOWN]}}


def validate_upload(*, item_keys: list[str], predictions: Path | None, archive: Path | None,
                    audio_dir: Path, limits: Limits, outputs: OutputFormat) -> ValidationResult:
    """Check an upload of a kind whose outputs are files (`outputs`: its predictions reader and
    its check of one output), extracting into the empty folder `audio_dir` the archive's
    members that the predictions name, once every check that headers allow has passed."""
    result = ValidationResult(n_items=len(item_keys))
    if predictions is None and archive is None:
        result.errors.append(NOTHING_UPLOADED)
        return result
    # Faults of a predictions file beside the archive are listed after the archive's.
    faults: list[str] = []
    source = _Source(name=predictions.name, path=predictions) if predictions else None
    parsed = _read_responses(source, item_keys, outputs.entries, faults) if source \
        else None
    if archive is None:
        result.errors.extend(faults)
        if parsed is not None:
            _match_outputs(parsed, source, None, result)
            _summarise(item_keys, parsed, None, result)
        return result
    try:
        with open_archive(archive) as reader:
            if reader is None:
                result.errors.append(f"{archive.name}: not a .zip or .tar.gz archive")
            else:
                _from_archive(reader, archive=archive, audio_dir=audio_dir, limits=limits,
                              item_keys=item_keys, source=source, parsed=parsed, result=result,
                              outputs=outputs)
    except ArchiveRefused as exc:
        result.errors.append(f"{archive.name}: {exc}")
    except ARCHIVE_ERRORS as exc:
        raise_ours(exc)
        result.errors.append(f"{archive.name}: damaged archive: {why(exc)}")
    result.errors.extend(faults)
    return result


def _from_archive(reader, *, archive: Path, audio_dir: Path, limits: Limits,
                  item_keys: list[str], source: _Source | None,
                  parsed: list[Prediction] | None, result: ValidationResult,
                  outputs: OutputFormat) -> None:
    """List and check the archive, read the predictions from it when they are not beside it,
    check what the headers declare, then extract the named members and check their audio."""
    listing = list_archive(reader, archive, limits, result.errors)
    if listing is None:
        return
    if source is None:
        source = _predictions_inside(listing, outputs.names, result.errors)
        if source is None:
            return
        parsed = _read_responses(source, item_keys, outputs.entries, result.errors, reader)
    if parsed is None:
        return
    _match_outputs(parsed, source, listing, result)
    if result.errors:
        return
    wanted = {*result.outputs.values(), source.member}
    chosen = [p for p in listing.files if p in wanted]  # in the archive's order
    result.errors.extend(_none_named(parsed, source, listing) if not result.outputs else
                         _declared_problems(parsed, source, listing, chosen, limits, result))
    if not result.errors:
        result.errors.extend(extract(reader, [listing.files[p] for p in chosen], audio_dir,
                                      listing.name))
    if result.errors:
        return
    _check_outputs(parsed, source, audio_dir, outputs.check_file, limits, result)
    result.ignored = [p for p in listing.files if p not in wanted]
    _summarise(item_keys, parsed, listing, result)


@dataclass(frozen=True)
class _Source:
    name: str  # for messages
    path: Path | None = None  # beside the archive
    entry: Entry | None = None  # or inside it

    @property
    def member(self) -> str | None:
        """Its path inside the archive, when it came in one."""
        return member_path(self.entry.name) if self.entry else None

    @property
    def folder(self) -> str | None:
        return posixpath.dirname(self.member) if self.member else None


def _predictions_inside(listing: Listing, names: tuple[str, ...],
                        errors: list[str]) -> _Source | None:
    found = sorted(f for f in listing.files if posixpath.basename(f) in names)
    if len(found) == 1:
        return _Source(name=found[0], entry=listing.files[found[0]])
    if found:
        errors.append(f"{listing.name}: holds {len(found)} predictions files "
                      f"({', '.join(found)}): keep exactly one")
    else:
        errors.append(f"{listing.name}: holds no {' or '.join(names)}; put one in the "
                      "archive or upload it beside the archive")
    return None


def _prediction_place(source: _Source, prediction: Prediction) -> str:
    return f"{source.name} {prediction.where} (id {prediction.sample_id})"


def _archive_path(raw: str) -> str | None:
    """A prediction's path normalised inside the archive, or None when it points outside."""
    path = raw.removeprefix("file://")
    return None if unsafe(path) else posixpath.normpath(path)


def _locate(path: str, source: _Source, listing: Listing | None) -> str | None:
    """The archive file a prediction names: from the archive's root, from its one top-level
    folder, or from the predictions file's own folder, in that order."""
    if listing is None:
        return None
    bases = ["", listing.wrapper or "", source.folder or ""]
    found = (posixpath.normpath(posixpath.join(base, path)) for base in bases)
    return next((f for f in found if f in listing.files), None)


def _match_outputs(parsed: list[Prediction], source: _Source, listing: Listing | None,
                   result: ValidationResult) -> None:
    for prediction in parsed:
        raw = prediction.audio_path
        path = _archive_path(raw)
        found = _locate(path, source, listing) if path is not None else None
        if path is None:
            result.errors.append(f"{_prediction_place(source, prediction)}: {raw!r}: paths "
                                 "outside the archive are not allowed")
        elif found:
            result.outputs[prediction.sample_id] = found
        else:
            result.missing[prediction.sample_id] = f"{raw}: file not in the archive"


def _shown(names: list[str]) -> str:
    return ", ".join(names[:SHOWN]) + (", ..." if len(names) > SHOWN else "")


def _none_named(parsed: list[Prediction], source: _Source, listing: Listing) -> list[str]:
    held = [f for f in listing.files if f != source.member]
    holds = _shown(held) + (f" ({len(held)} files)" if len(held) > SHOWN else "") if held \
        else "no other file"
    return [f"{listing.name}: holds none of the {len(parsed)} output files the predictions "
            f"name: they name {_shown([p.audio_path for p in parsed])}; the archive holds "
            f"{holds}"]


def _declared_problems(parsed: list[Prediction], source: _Source, listing: Listing,
                       chosen: list[str], limits: Limits, result: ValidationResult) -> list[str]:
    """What the headers of the members to extract tell before a byte is written: outputs
    above the size limit, and a compression ratio no real audio has (see the module's doc)."""
    problems = []
    for prediction in parsed:
        relative = result.outputs.get(prediction.sample_id)
        size = listing.files[relative].size if relative else 0
        if size > limits.max_output_bytes:
            whose = ""
            if limits.judge_source and \
                    limits.max_output_bytes < settings.SUBMISSION_MAX_OUTPUT_BYTES:
                whose = (f" ({limits.judge_source} takes files up to "
                         f"{limits.max_output_bytes // 1024 ** 2} MiB)")
            problems.append(f"{_prediction_place(source, prediction)}: {relative}: {size} "
                            f"bytes, above the limit of {limits.max_output_bytes} bytes{whose}")
    unpacked = sum(listing.files[p].size for p in chosen)
    packed = listing.packed_bytes(chosen)
    if unpacked > limits.ratio_floor_bytes and unpacked > limits.max_ratio * packed:
        problems.append(
            f"{listing.name}: its outputs unpack to {unpacked} bytes from {packed} compressed "
            f"bytes, {unpacked // max(packed, 1)} times as many, above the limit of "
            f"{limits.max_ratio:g} (a zip bomb, or mostly digital silence: store such files "
            "uncompressed, as zip -0 does)")
    return problems


def _check_outputs(parsed: list[Prediction], source: _Source, audio_dir: Path, check,
                   limits: Limits, result: ValidationResult) -> None:
    for prediction in parsed:
        relative = result.outputs.get(prediction.sample_id)
        if relative is None:
            continue
        problem = check(audio_dir / relative, limits)
        if problem:
            result.errors.append(f"{_prediction_place(source, prediction)}: {relative}: "
                                 f"{problem}")


def _summarise(item_keys: list[str], parsed: list[Prediction], listing: Listing | None,
               result: ValidationResult) -> None:
    predicted = {p.sample_id for p in parsed}
    why = {**result.missing, **{k: "no prediction" for k in item_keys if k not in predicted}}
    result.missing = {k: why[k] for k in item_keys if k in why}
    result.outputs = {k: result.outputs[k] for k in item_keys if k in result.outputs}
    if listing is None:
        result.warnings.append(f"no archive uploaded: none of the {len(parsed)} predictions "
                               "has its audio, so every item counts as missing")
    elif result.ignored:
        result.warnings.append(f"{listing.name}: {len(result.ignored)} file(s) not named by "
                               f"any prediction were ignored ({_shown(result.ignored)})")
    if result.missing:
        result.warnings.append(f"{len(result.missing)} of {result.n_items} items have no "
                               "output: each scores 0 on every rubric")


def validate_responses(*, item_keys: list[str], predictions: Path | None, archive: Path | None,
                       parse) -> ValidationResult:
    """Check a predictions file of text responses with the kind's `parse(text, name=,
    known_ids=)` -> {key: response}; there is no audio to check. Items without a response
    are missing."""
    result = ValidationResult(n_items=len(item_keys))
    if archive is not None:
        result.errors.append(f"{archive.name}: this benchmark takes a predictions file of text "
                             "responses only, no archive")
    if predictions is None:
        result.errors.append("no predictions file uploaded")
        return result
    responses = _read_responses(_Source(name=predictions.name, path=predictions), item_keys,
                                parse, result.errors)
    if responses is None or result.errors:
        return result
    result.outputs = {k: responses[k] for k in item_keys if k in responses}
    result.missing = {k: "no prediction" for k in item_keys if k not in responses}
    if result.missing:
        result.warnings.append(f"{len(result.missing)} of {result.n_items} items have no "
                               "response and count as unanswered")
    return result


def _read_responses(source: _Source, item_keys: list[str], parse, errors: list[str],
                    reader=None):
    """`parse` of a predictions file's UTF-8 text (a BOM allowed), beside the archive or read
    from it by `reader` without writing it out, streamed a line at a time (JSONL); None with
    `errors` told why when it is too large, unreadable or malformed."""
    try:
        with _predictions_file(source, reader) as binary:
            problem = predictions_problem(binary, source.name, _size(source))
            if problem:
                errors.append(problem)
                return None
            with text_stream(binary) as text:
                return parse(text, name=source.name, known_ids=set(item_keys),
                             per_kind=settings.SUBMISSION_REPORT_MAX_PER_KIND)
    except OSError as exc:
        raise_ours(exc)
        errors.append(f"{source.name}: cannot be read: {why(exc)}")
    except PredictionError as exc:
        errors.extend(exc.problems)
    return None


def predictions_problem(binary, name: str, size: int) -> str | None:
    """What refuses a predictions file before it is parsed: its size (one JSON document is
    read whole, so it has the lower limit), or text that is not UTF-8."""
    if size > MAX_PREDICTIONS_BYTES:
        return f"{name}: larger than {MAX_PREDICTIONS_BYTES} bytes"
    limit = settings.SUBMISSION_MAX_PREDICTIONS_BYTES
    if size > limit and json_document(binary):
        return (f"{name}: a JSON document of {size} bytes, above the limit of {limit} for "
                "one read whole: send it as JSONL (submission.jsonl, one prediction a line), "
                "which is read a line at a time")
    return utf8_problem(binary, name)


def _size(source: _Source) -> int:
    return source.path.stat().st_size if source.path is not None else source.entry.size


@contextmanager
def _predictions_file(source: _Source, reader):
    """The predictions file opened for reading in binary (a member of an archive yields no
    more than its header declares)."""
    if source.path is not None:
        with open(source.path, "rb") as handle:
            yield handle
        return
    with reader.open(source.entry) as handle:
        yield handle
