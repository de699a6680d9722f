"""Synthetic AIR-Bench data in the official shapes (../shared/airbench/SPEC.md), for the demo:
both tracks' metadata, their audio (tones and noise) where the real layout puts it, and
demo systems' predictions files. Everything here is labelled synthetic: the questions,
choices, descriptions and answers are generated text.

The foundation track covers every task of the published table, one dataset folder each (two
tasks binary, as the real ones); the chat track every category. A demo system answers in the
shapes real models do: a letter, a letter in a sentence the official rule reads, and now and
then a sentence it cannot read (so `acc` and `acc_strict` differ, as on the real board).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from scoring.kinds.airbench import rules as airbench
from scoring.synthetic import write_wav

BINARY = {"Speaker_Gender_Recognition": ("female", "male"),
          "Synthesized_Voice_Detection": ("real", "synthesized")}
FOUNDATION_META = "Foundation_meta.json"
CHAT_META = "Chat_meta.json"


def _audio(root: Path, media: str, *, seconds: float, seed: int) -> None:
    path = root / media
    if path.suffix == ".flac":  # Audio_Grounding's files are FLAC on disk
        import numpy as np
        import soundfile

        rng = np.random.default_rng(seed)
        t = np.arange(int(seconds * 16000)) / 16000
        signal = 0.4 * np.sin(2 * np.pi * (220 + 40 * (seed % 12)) * t) \
            + 0.05 * rng.standard_normal(t.size)
        path.parent.mkdir(parents=True, exist_ok=True)
        soundfile.write(path, signal, 16000, format="FLAC")
    else:
        write_wav(path, seconds=seconds, frequency=220 + 40 * (seed % 12), seed=seed)


def write_foundation(root: Path, per_task: int, *, seed: int = 0,
                     seconds: float = 2.0) -> Path:
    """Foundation_meta.json under `root` with `per_task` questions for each task, and their
    audio at Foundation/<task>_<dataset>/<path>."""
    rng = random.Random(seed)
    items, uniq = [], 0
    for task in airbench.TASKS:
        dataset = "synthetic"
        for n in range(per_task):
            uniq += 1
            choices = list(BINARY.get(task, [f"option {c} of question {uniq}"
                                             for c in "wxyz"]))
            answer = rng.choice(choices)
            padded = choices + [None] * (4 - len(choices))
            path = f"{task.lower()}_{n}.wav"
            items.append({"path": path, "question": f"Synthetic question {uniq} on "
                          f"{airbench.TASKS[task][1].lower()}: which option fits the clip?",
                          "choice_a": padded[0], "choice_b": padded[1],
                          "choice_c": padded[2], "choice_d": padded[3], "answer_gt": answer,
                          "task_name": task, "dataset_name": dataset, "uniq_id": uniq})
            _audio(root, airbench.audio_path("Foundation", task, dataset, path),
                   seconds=seconds, seed=seed * 1000 + uniq)
    meta = root / FOUNDATION_META
    meta.parent.mkdir(parents=True, exist_ok=True)
    meta.write_text(json.dumps(items, indent=1))
    return meta


def write_chat(root: Path, per_category: int, *, seed: int = 0, seconds: float = 2.0) -> Path:
    """Chat_meta.json under `root` with `per_category` open questions for each category, and
    their audio at Chat/<task>_<dataset>/<path>."""
    items, uniq = [], 0
    for category in airbench.CHAT_CATEGORIES:
        for n in range(per_category):
            uniq += 1
            path = f"{category.lower()}_{n}.wav"
            items.append({
                "meta_info": f"A synthetic clip ({category.replace('_', ' ')}, number {uniq}): "
                             f"a steady tone of {220 + 40 * (uniq % 12)} Hz with soft noise.",
                "question": f"Synthetic question {uniq}: what does the clip sound like?",
                "answer_gt": f"A steady tone of {220 + 40 * (uniq % 12)} Hz over soft noise.",
                "path": path, "task_name": category, "dataset_name": "synthetic",
                "uniq_id": uniq})
            _audio(root, airbench.audio_path("Chat", category, "synthetic", path),
                   seconds=seconds, seed=seed * 1000 + uniq)
    meta = root / CHAT_META
    meta.parent.mkdir(parents=True, exist_ok=True)
    meta.write_text(json.dumps(items, indent=1))
    return meta


def write_foundation_system(meta: Path, out: Path, *, seed: int, right: float) -> Path:
    """A system's predictions JSONL: each item's fields and a `response` that is the right
    letter with probability `right`, in one of the shapes real models answer in."""
    rng = random.Random(seed)
    rows = []
    for item in json.loads(meta.read_text()):
        letters = [airbench.LETTERS[i] for i, key in enumerate(("choice_a", "choice_b",
                                                                "choice_c", "choice_d"))
                   if item[key] is not None]
        truth = letters[[item[f"choice_{c}"] for c in "abcd"].index(item["answer_gt"])]
        letter = truth if rng.random() < right else rng.choice(letters)
        shape = rng.random()
        response = (letter if shape < 0.6 else f"The answer is {letter}." if shape < 0.9
                    else "I cannot tell from this clip.")
        rows.append({**item, "response": response})
    return _jsonl(out, rows)


def write_chat_system(meta: Path, out: Path, *, seed: int, detail: float) -> Path:
    """A system's chat predictions JSONL: an answer that keeps the reference's words with
    probability `detail`, else a vaguer one."""
    rng = random.Random(seed)
    rows = []
    for item in json.loads(meta.read_text()):
        response = item["answer_gt"] if rng.random() < detail \
            else "It sounds like a short recording with some noise."
        rows.append({**item, "response": response})
    return _jsonl(out, rows)


def _jsonl(out: Path, rows: list[dict]) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return out
