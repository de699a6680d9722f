"""The robustness battery: outputs no honest judge should reward, built from a benchmark's
inputs (Silence, Reversed) or from a public system's outputs given to the wrong items
(Shuffled), and the figure an honest judge should give each of them and the paper's Identity
and Noise rows (EXPECTED). scoring.baselines scores them as calibration baselines; the
judge card (leaderboard.boards.judge_checks) sets what the judge gave against these figures.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile

from scoring import media, visibility
from scoring.kinds.files import resolve_audio
from scoring.models import Benchmark, ScoringRun

IDENTITY, NOISE = "Identity", "Noise"
SILENCE, SHUFFLED, REVERSED = "Silence", "Shuffled", "Reversed"


@dataclass(frozen=True)
class Expected:
    """The figure an honest judge gives a baseline (percent), give or take `tolerance`, and
    why: the card's verdict is whether the judge's figure lands in that band."""

    metric: str
    value: float
    tolerance: float
    why: str


# MMAE figures. Identity and Noise are held to the paper's own judge on the full set (SPEC
# section 7): there the question is whether this deployment judges as the paper's did, so the
# tolerance is what 2,000 samples against a smaller set and another serving can move them.
# The other three are held to an honest listener, not to any judge's habits.
EXPECTED: dict[str, tuple[Expected, ...]] = {
    IDENTITY: (
        Expected("IFR", 27.37, 10, "the paper's judge on the unchanged input: only rubrics "
                 "already true of the input pass"),
        Expected("CR", 94.13, 10, "the paper's judge: the unchanged input keeps everything "
                 "the edit should have kept"),
        Expected("EMR", 4.6, 5, "the paper's judge on the unchanged input"),
    ),
    NOISE: (
        Expected("IFR", 32.08, 10, "the paper's judge on white noise (SPEC section 7)"),
        Expected("CR", 15.68, 10, "the paper's judge on white noise"),
        Expected("EMR", 0.0, 2, "the paper's judge on white noise"),
    ),
    SILENCE: (
        # Silence holds none of the requested content; the rubrics it may honestly pass are
        # those asking that something be gone (a removal), a small share of the set.
        Expected("IFR", 0.0, 10, "silence performs no edit; only removals can pass"),
        # Nothing of the input survives in silence, so no consistency rubric should pass.
        Expected("CR", 0.0, 10, "silence keeps nothing of the input"),
        # A sample passes whole only if every rubric does: a few points at most.
        Expected("EMR", 0.0, 2, "no sample can pass every rubric on silence"),
    ),
    REVERSED: (
        # Played backwards, the input keeps its spectrum (voices, instruments, noises) but
        # loses words and melodies: an honest judge gives at most what the unchanged input
        # gets (Identity's 27.37), hence a band up to 30.
        Expected("IFR", 0.0, 30, "the input backwards performs no edit; at most what the "
                 "unchanged input gets"),
        # Consistency is not declared: rubrics on timbre or presence rightly pass on a
        # reversed input, those on words or order rightly fail, in proportions the benchmark
        # does not fix.
        Expected("EMR", 0.0, 5, "at most the unchanged input's 4.6"),
    ),
    SHUFFLED: (
        # Another item's edit follows another instruction on another input: a rubric passes
        # only by coincidence (the same modality, a similar edit), a fifth at most.
        Expected("IFR", 0.0, 20, "another item's edit follows another instruction"),
        Expected("CR", 0.0, 20, "another item's edit keeps nothing of this input"),
        Expected("EMR", 0.0, 2, "no sample should pass whole on another item's edit"),
    ),
}


def derangement(keys: list[str], *, seed: int) -> dict[str, str]:
    """Each key -> another key, seeded: the keys in a seeded order, each mapped to the next
    and the last to the first, make one cycle through every key, so no key is mapped to
    itself (with fewer than two keys there is none to give: empty)."""
    if len(keys) < 2:
        return {}
    rng = np.random.default_rng([seed, len(keys)])
    order = [keys[i] for i in rng.permutation(len(keys))]
    return {key: order[(i + 1) % len(order)] for i, key in enumerate(order)}


def _written(folder: Path, number: int, samples: np.ndarray, rate: int, subtype: str) -> str:
    relative = f"{folder.name}/{number:05d}.wav"
    if not soundfile.check_format("WAV", subtype):
        subtype = "FLOAT"
    soundfile.write(str(folder.parent / relative), samples, rate, subtype=subtype)
    return relative


def write_from_inputs(benchmark: Benchmark, inputs: dict[str, str], folder: Path,
                      make) -> dict[str, str]:
    """One WAV per sample, `make(samples, info)` applied to its first input; item key ->
    path relative to the folder's parent. The file keeps the input's rate and channels."""
    folder.mkdir(parents=True, exist_ok=True)
    root = Path(benchmark.audio_root)
    outputs = {}
    for number, (key, path) in enumerate(inputs.items()):
        source = str(resolve_audio(root, path))
        samples, rate = soundfile.read(source, always_2d=True, dtype="float32")
        subtype = soundfile.info(source).subtype
        outputs[key] = _written(folder, number, make(samples), rate, subtype)
    return outputs


def silence(samples: np.ndarray) -> np.ndarray:
    """All zeros, as many frames and channels as the input."""
    return np.zeros_like(samples)


def reversed_samples(samples: np.ndarray) -> np.ndarray:
    """The input played backwards (frames in reverse order, channels kept)."""
    return np.ascontiguousarray(samples[::-1])


def public_source(benchmark: Benchmark) -> ScoringRun | None:
    """The public system whose outputs Shuffled hands to the wrong items: the finished run of
    a public submission not hidden (anyone may download those files) with the most outputs,
    the earliest on a tie, so that the choice is deterministic."""
    runs = (visibility.published_runs().filter(
        benchmark=benchmark,
        purpose__in=[ScoringRun.Purpose.SUBMISSION, ScoringRun.Purpose.RESCORE]).order_by("id"))
    best = None
    for run in runs:
        if best is None or len(run.outputs) > len(best.outputs):
            best = run
    return best


def write_shuffled(benchmark: Benchmark, source: ScoringRun, folder: Path, *,
                   seed: int) -> tuple[dict[str, str], dict[str, str]]:
    """(outputs, missing): each item gets the source's output of the item a seeded
    derangement maps it to, walking on along the cycle past items the source has no output
    for; an item for which no other item has one is missing, with the reason."""
    folder.mkdir(parents=True, exist_ok=True)
    keys = list(benchmark.items.order_by("position").values_list("key", flat=True))
    cycle = derangement(keys, seed=seed)
    root = media.local_root(source.audio_root)
    outputs, missing = {}, {}
    for number, key in enumerate(keys):
        donor = cycle.get(key)
        while donor is not None and donor != key and donor not in source.outputs:
            donor = cycle[donor]
        if donor is None or donor == key:
            missing[key] = (f"no other item has an output in the public system "
                            f"(run {source.id}) to give it")
            continue
        given = resolve_audio(root, source.outputs[donor])
        relative = f"{folder.name}/{number:05d}{given.suffix.lower()}"
        shutil.copyfile(given, folder.parent / relative)
        outputs[key] = relative
    return outputs, missing
