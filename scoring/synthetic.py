"""Synthetic MMAE data in the real formats, for tests, benchmarks and the demo.

Everything made here is labelled synthetic: the instructions and rubrics are generated text and
the audio is tones and noise. It exercises every field, tier, modality, granularity and
operation of SPEC.md, including multi-audio and multi-round samples and sliced audio labels.
"""

from __future__ import annotations

import json
import random
import wave
from pathlib import Path

import numpy as np

COMPLEXITIES = ("single", "multi-part", "multi-instruction", "multi-audio", "multi-round",
                "multi-hop")
MODALITIES = ("sound", "music", "speech", "sound-music", "sound-speech", "music-speech",
              "sound-music-speech")
OPERATIONS = (("local", "addition"), ("local", "removal"), ("local", "replacement"),
              ("local", "extraction"), ("local", "alteration"), ("global", "background change"),
              ("global", "foreground change"), ("global", "alteration"))
SAMPLE_RATE = 16000


def write_wav(path: Path, *, seconds: float, frequency: float, seed: int,
              sample_rate: int = SAMPLE_RATE) -> None:
    """A mono 16-bit WAV: a tone plus a little seeded noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sample_rate)) / sample_rate
    signal = 0.4 * np.sin(2 * np.pi * frequency * t) + 0.05 * rng.standard_normal(t.size)
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(sample_rate)
        handle.writeframes((np.clip(signal, -1, 1) * 32767).astype("<i2").tobytes())


def _rubric(rng: random.Random, number: int, sample_id: str, n_inputs: int, *, consistency: bool):
    start = rng.choice([0.0, 0.5, 1.0])
    target = rng.choice(["<audio output>", f"<audio output[{start}s:{start + 1.5}s]>",
                         "<audio output[:2.0s]>", "<audio output[-1.0s:]>"])
    if consistency:
        source = f"<audio input{rng.randint(1, n_inputs)}>"
        question = (f"Compared with {source}, is the unedited content of {target} preserved "
                    f"(check {number} of {sample_id})?")
    elif rng.random() < 0.05:
        question = f"Is the requested edit audible in the result (check {number} of {sample_id})?"
    else:
        question = f"In {target}, is the requested edit clearly audible (check {number} of " \
                   f"{sample_id})?"
    n_wrong = rng.choice([1, 2, 2, 3])
    wrong = [f"No, variant {k} of the edit is missing" for k in range(1, n_wrong)]
    return {
        "category": "Consistency" if consistency else "Instruction Following",
        "question": question,
        "right_choice": "Yes, the edit is clearly audible" if not consistency
        else "Yes, it is preserved",
        "wrong_choices": [*wrong, "None of the above"],
    }


def make_meta(n_samples: int, *, seed: int = 0, n_rubrics: int | None = None) -> list[dict]:
    """Metadata records; `n_rubrics` fixes the total (the real set has 17,741 for 2,000)."""
    rng = random.Random(seed)
    total = n_rubrics if n_rubrics is not None else n_samples * 9
    if total < n_samples:
        raise ValueError("every sample needs at least one rubric")
    counts = [total // n_samples + (1 if i < total % n_samples else 0) for i in range(n_samples)]
    samples = []
    for i in range(n_samples):
        sample_id = f"{rng.getrandbits(96):024x}"
        complexity = "single" if i % 2 == 0 else COMPLEXITIES[1 + (i // 2) % 5]
        n_inputs = 2 if complexity == "multi-audio" else 1
        ops = rng.sample(OPERATIONS, 1 if complexity == "single" else 2)
        granularity = sorted({g for g, _ in ops})
        audio_parts = [{"type": "audio", "audio_url": f"wav/{sample_id}/audio{k + 1}.wav"}
                       for k in range(n_inputs)]
        messages = [{"role": "user", "content": [
            {"type": "text", "text": f"Synthetic instruction {i}: apply "
             f"{' and '.join(op for _, op in ops)} to the clip."},
            *audio_parts,
        ]}]
        if complexity == "multi-round":
            messages.append({"role": "user", "content": [
                {"type": "text", "text": "Now also make the result a little quieter."}]})
        rubrics = [
            _rubric(rng, k, sample_id, n_inputs, consistency=(k % 3 == 2))
            for k in range(counts[i])
        ]
        samples.append({
            "id": sample_id,
            "complexity": complexity,
            "modality": MODALITIES[i % len(MODALITIES)],
            "granularity": granularity,
            "operations": [{"granularity": g, "operation": o} for g, o in ops],
            "messages": messages,
            "tags": [["synthetic"]],
            "rubrics": rubrics,
        })
    return samples


def write_benchmark(root: Path, n_samples: int, *, seed: int = 0, n_rubrics: int | None = None,
                    seconds: float = 0.5) -> Path:
    """Write MMAE-meta.json and every input WAV under `root`; return the metadata path."""
    root.mkdir(parents=True, exist_ok=True)
    samples = make_meta(n_samples, seed=seed, n_rubrics=n_rubrics)
    for i, sample in enumerate(samples):
        for k, part in enumerate(p for m in sample["messages"] for p in m["content"]
                                 if p["type"] == "audio"):
            write_wav(root / part["audio_url"], seconds=seconds, frequency=220 + 40 * k,
                      seed=seed * 100003 + i * 7 + k)
    meta = root / "MMAE-meta.json"
    meta.write_text(json.dumps(samples, indent=1))
    return meta


def write_system(root: Path, samples: list[dict], *, name: str, seed: int = 1,
                 fmt: str = "predictions", missing: int = 0, seconds: float = 0.5) -> Path:
    """Edited outputs of a made-up system under root/systems/<name>/ and its submission file.

    `fmt` is "predictions" (predictions.json) or "jsonl" (submission.jsonl); the last `missing`
    samples get no prediction. Paths in the file are relative to `root`.
    """
    folder = root / "systems" / name
    entries = []
    for i, sample in enumerate(samples[: len(samples) - missing]):
        relative = f"systems/{name}/{sample['id']}.wav"
        write_wav(root / relative, seconds=seconds, frequency=300 + (seed % 50) * 10,
                  seed=seed * 1000003 + i)
        if fmt == "jsonl":
            entries.append({"id": sample["id"], "audio_path": relative})
        else:
            entries.append({"id": sample["id"], "messages": [
                *sample["messages"],
                {"role": "assistant", "content": [{"type": "audio", "audio_url": relative}]},
            ]})
    folder.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        path = folder / "submission.jsonl"
        path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    else:
        path = folder / "predictions.json"
        path.write_text(json.dumps(entries))
    return path


def write_meta_with_empty_audio(samples: list[dict], meta_path: Path, audio_root: Path) -> Path:
    """Write metadata and an empty file for every input audio it names: enough where only
    the files' existence is checked (import speed, storage benchmarks)."""
    meta_path.write_text(json.dumps(samples))
    for sample in samples:
        for message in sample["messages"]:
            for part in message["content"]:
                if part["type"] == "audio":
                    path = audio_root / part["audio_url"]
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.touch()
    return meta_path
