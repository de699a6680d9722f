"""The tone kind: each item is an input clip and an instruction ("make it brighter"); an author
uploads an archive of edited WAV/FLAC clips named by an `outputs.jsonl` ({"id", "audio"} a
line); the judge hears the input and the output and answers yes (the edit follows the
instruction) or no. It reaches the platform only through the Kind protocol."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from config import jsontext
from scoring.kinds.base import (
    Dimension,
    ItemRows,
    Job,
    Kind,
    Media,
    Metric,
    OutputFormat,
    RunData,
    Section,
    file_sha256,
)
from scoring.kinds.files import (
    MAX_PER_KIND,
    MetaError,
    Prediction,
    PredictionError,
    Problems,
    entries,
    resolve_audio,
)
from tests.scoring.kinds.toy import WORDS, read_word

NAME = "tone-edit"
MARK = "Tone check:"
PROMPT = MARK + " does the output follow this instruction? Reply yes or no.\nInstruction: {}"
GROUPS = ("speech", "music")


@dataclass(frozen=True)
class Clip:
    id: str
    instruction: str
    audio: str  # the input, relative to the audio root
    group: str


def load_clips(path) -> list[Clip]:
    """A JSON list of {"id", "instruction", "audio", "group"}; every fault named by item."""
    try:
        data = jsontext.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise MetaError([f"{path}: cannot be read as JSON: {exc}"]) from None
    problems, clips = [], []
    for number, raw in enumerate(data if isinstance(data, list) else [], start=1):
        if not isinstance(raw, dict) or not all(isinstance(raw.get(k), str) and raw[k]
                                                for k in ("id", "instruction", "audio")) \
                or raw.get("group") not in GROUPS:
            problems.append(f"{path}: item {number}: needs id, instruction, audio and a group "
                            f"of {', '.join(GROUPS)}")
            continue
        clips.append(Clip(raw["id"], raw["instruction"], raw["audio"], raw["group"]))
    if not clips and not problems:
        problems.append(f"{path}: expected a JSON list of clips")
    if problems:
        raise MetaError(problems)
    return clips


def read_entries(text, *, name: str, known_ids: set[str],
                 per_kind: int = MAX_PER_KIND) -> list[Prediction]:
    """outputs.jsonl: where each clip's edited audio is in the archive."""
    problems = Problems(per_kind)
    found: dict[str, Prediction] = {}
    for place, value in entries(text, name, problems):
        key = value.get("id") if isinstance(value, dict) else None
        if key not in known_ids:
            problems.add("unknown ids", f"{name} {place}: unknown id {key!r}")
        elif key in found:
            problems.add("duplicate ids", f"{name} {place}: duplicate id {key!r}")
        elif not isinstance(value.get("audio"), str) or not value["audio"]:
            problems.add("entries without audio", f"{name} {place} (id {key}): 'audio' must "
                         "name the edited clip")
        else:
            found[key] = Prediction(sample_id=key, audio_path=value["audio"], where=place)
    if problems or not found:
        raise PredictionError(problems.messages() or [f"{name}: the file names no output"])
    return list(found.values())


def read_outputs(text, *, name: str, known_ids: set[str], per_kind: int) -> dict[str, str]:
    return {p.sample_id: p.audio_path
            for p in read_entries(text, name=name, known_ids=known_ids, per_kind=per_kind)}


def check_upload(path: Path, limits) -> str | None:
    from scoring.kinds import audio

    return audio.audio_problem(path, limits)


def verdict_fields(word: str | None) -> dict:
    return {"choices": list(WORDS), "choice": None, "reason": None, "score": None,
            "verdict": {"followed": word == "yes"}}


def _share(rows: list[dict], holds: Callable[[dict], bool]) -> float | None:
    return 100 * sum(map(holds, rows)) / len(rows) if rows else None


def _figures(rows: list[dict]) -> dict:
    return {"n": len(rows), "followed_share": _share(rows, lambda r: r["followed"]),
            "answered_share": _share(rows, lambda r: not r["missing"])}


class Tone(Kind):
    name = NAME
    title = "Tone edits (a test kind)"
    rounds = 1
    prompts = (PROMPT,)
    sends_inputs = True
    outputs = OutputFormat(
        files=True, read=read_outputs, names=("outputs.jsonl",), entries=read_entries,
        digest=lambda root, output: file_sha256(resolve_audio(Path(root), output)),
        check_file=check_upload,
        help="an archive of the edited WAV/FLAC clips and an outputs.jsonl naming them")
    metrics = (
        Metric("followed_share", "share followed", "Clips whose edit the judge said follows "
               "the instruction, of all clips (percent)"),
        Metric("answered_share", "share answered", "Clips with an output (percent)"),
    )
    ranking = ("followed_share", "answered_share")
    ranking_text = "Ranked by the share followed, then the share answered"
    dimensions = (Dimension("group", "kind of clip", GROUPS),)
    item_noun = "clip"
    chart_axes = ("answered_share", "followed_share")
    files = ("tone_verdicts.jsonl",)
    pairwise = ("Followed", None)
    vector_names = ("followed", "missing")

    def simulated_reply(self, body: dict, config) -> tuple[str, list] | None:
        from tests.scoring.kinds.tone import simulated

        return simulated.reply(body, config)

    def load(self, path) -> list[Clip]:
        return load_clips(path)

    def to_rows(self, clip: Clip) -> ItemRows:
        return ItemRows(key=clip.id, dimensions={"group": clip.group},
                        content={"instruction": clip.instruction}, media=[clip.audio],
                        criteria=[{"index": 0, "category": "edit", "question": clip.instruction,
                                   "spec": {}}])

    def from_rows(self, rows: ItemRows) -> Clip:
        return Clip(rows.key, rows.content["instruction"], rows.media[0],
                    rows.dimensions["group"])

    def item_text(self, rows: ItemRows) -> tuple[str, ...]:
        return (rows.content["instruction"],)

    def jobs(self, items: Sequence[Clip], outputs: dict[str, str], *, rounds: int, seed: int,
             options: dict, output_path: Callable[[str], str],
             input_path: Callable[[str], str]) -> list[Job]:
        return [Job(item=clip.id, criterion=0, round=round_, parse=read_word,
                    fields=verdict_fields, messages=[{"role": "user", "content": [
                        {"type": "text", "text": "<audio input>: "},
                        {"type": "audio_url", "audio_url": {"url": Media(input_path(clip.audio))}},
                        {"type": "text", "text": "<audio output>: "},
                        {"type": "audio_url",
                         "audio_url": {"url": Media(output_path(outputs[clip.id]))}},
                        {"type": "text", "text": PROMPT.format(clip.instruction)}]}])
                for clip in items if clip.id in outputs for round_ in range(rounds)]

    def item_result(self, clip: Clip, output: str | None,
                    answers: dict[tuple[int, int], dict]) -> dict:
        answer = answers.get((0, 0))
        followed = bool(answer and answer["error"] is None and answer["verdict"]["followed"])
        return {"id": clip.id, "group": clip.group, "missing": output is None,
                "followed": followed}

    def item_columns(self, row: dict) -> dict:
        return {"values": row, "passed": row["followed"], "score": float(row["followed"])}

    def summarize(self, rows: Sequence[dict]) -> dict:
        return {"overall": _figures(list(rows)),
                "group": {g: _figures([r for r in rows if r["group"] == g])
                          for g in GROUPS if any(r["group"] == g for r in rows)}}

    def item_vector(self, row: dict) -> tuple[float, ...]:
        return float(row["followed"]), float(row["missing"])

    def replicate_figures(self, weights, values: dict, dims: list[dict]) -> dict:
        drawn = weights.sum(axis=1, keepdims=True)
        return {"followed_share": 100 * (weights @ values["followed"]) / drawn,
                "answered_share": 100 * (weights @ (1 - values["missing"])) / drawn}

    def synthetic_row(self, clip: Clip, rng, skill: float) -> dict:
        return {"id": clip.id, "group": clip.group, "missing": False,
                "followed": rng.random() < skill}

    def file_chunks(self, name: str, data: RunData) -> Iterable[str]:
        if name != "tone_verdicts.jsonl":
            raise ValueError(f"{self.name} has no results file {name!r}")
        return (json.dumps({"id": rows.key, "output": data.outputs.get(rows.key), **(row or {})})
                + "\n" for rows, row, _answers in data.items())

    def failed(self, columns: dict) -> bool:
        return not columns["values"].get("followed")

    def how_scoring_works(self) -> list[Section]:
        return [Section("What is asked", (
            "The judge hears each input clip and its edit and says whether the edit follows "
            "the instruction.",))]


def write_benchmark(root: Path, n: int) -> Path:
    """A tone benchmark of `n` one-second clips under `root`; the metadata file's path."""
    from scoring.synthetic import write_wav

    clips = []
    for i in range(n):
        write_wav(root / "in" / f"c{i}.wav", seconds=1.0, frequency=220.0 + 40 * i, seed=i)
        clips.append({"id": f"c{i}", "instruction": f"Make clip {i} brighter",
                      "audio": f"in/c{i}.wav", "group": GROUPS[i % 2]})
    meta = root / "tone.json"
    meta.write_text(json.dumps(clips))
    return meta


def write_outputs(folder: Path, n: int, *, shift: float) -> Path:
    """An upload archive: `n` edited clips and the outputs.jsonl naming them."""
    import zipfile

    from scoring.synthetic import write_wav

    folder.mkdir(parents=True, exist_ok=True)
    archive = folder / "edits.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        lines = []
        for i in range(n):
            clip = folder / f"c{i}.wav"
            write_wav(clip, seconds=1.0, frequency=220.0 + 40 * i + shift, seed=i)
            zf.write(clip, f"out/c{i}.wav")
            lines.append(json.dumps({"id": f"c{i}", "audio": f"out/c{i}.wav"}))
        zf.writestr("outputs.jsonl", "\n".join(lines) + "\n")
    return archive

