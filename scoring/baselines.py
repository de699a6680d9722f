"""Calibration baselines: the paper's diagnostic systems and the robustness battery, scored by
this deployment's judge.

Identity returns each sample's first input audio unchanged; Noise returns seeded white noise of
the input's length and sample rate. Scored under the benchmark's current judge config, their
figures sit beside the paper's own Identity and Noise rows (SPEC section 7), so a judge
deployment can be checked against the paper. The battery (scoring.battery) adds Silence (all
zeros of the input's length), Reversed (the input backwards) and Shuffled (a public system's
outputs, each given to another item), each with the figure an honest judge should give.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile
from django.conf import settings
from django.db import transaction
from tqdm import tqdm

from audit.models import AuditEvent
from audit.services import audit_record
from config.errors import ServiceError
from scoring import battery
from scoring.battery import IDENTITY, NOISE, REVERSED, SHUFFLED, SILENCE
from scoring.boards import board_changed
from scoring.judge_configs import judge_config_current
from scoring.kinds import get_kind
from scoring.kinds.files import resolve_audio
from scoring.models import Benchmark, ScoringRun
from scoring.runs import run_create
from scoring.tasks import enqueue_run

BASELINES = (IDENTITY, NOISE, SILENCE, REVERSED, SHUFFLED)


class BaselineError(ServiceError):
    """Calibration baselines refused (config.errors.ServiceError)."""


def baseline_folder(benchmark: Benchmark) -> Path:
    return Path(settings.MEDIA_ROOT) / "baselines" / str(benchmark.id)


def identity_outputs(benchmark: Benchmark) -> dict[str, str]:
    """item key -> its first input audio, relative to the benchmark's audio root."""
    return {key: media[0] for key, media in
            benchmark.items.order_by("position").values_list("key", "media") if media}


def write_noise(benchmark: Benchmark, *, seed: int = 0, progress: bool = False
                ) -> dict[str, str]:
    """White noise as long as each sample's first input (same frames and sample rate), one
    seeded WAV per sample; item key -> path relative to the baseline folder."""
    folder = baseline_folder(benchmark) / f"noise-{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    root = Path(benchmark.audio_root)
    outputs = {}
    items = identity_outputs(benchmark)
    for number, (key, media) in enumerate(tqdm(items.items(), disable=not progress,
                                               unit="sample", desc="noise")):
        info = soundfile.info(str(resolve_audio(root, media)))
        rng = np.random.default_rng([seed, number])
        noise = rng.uniform(-0.5, 0.5, size=(info.frames, info.channels)).astype(np.float32)
        relative = f"{folder.name}/{number:05d}.wav"
        soundfile.write(str(folder.parent / relative), noise, info.samplerate,
                        subtype="PCM_16")
        outputs[key] = relative
    return outputs


def _inputs_runs(benchmark: Benchmark, identity: dict[str, str], seed: int,
                 progress: bool) -> list[tuple[str, str, dict, dict]]:
    """(label, audio root, outputs, missing) of the baselines made from the inputs."""
    folder = baseline_folder(benchmark)
    made = [(IDENTITY, benchmark.audio_root, identity, {}),
            (NOISE, str(folder), write_noise(benchmark, seed=seed, progress=progress), {})]
    for label, make in ((SILENCE, battery.silence), (REVERSED, battery.reversed_samples)):
        outputs = battery.write_from_inputs(benchmark, identity,
                                            folder / f"{label.lower()}-{seed}", make)
        made.append((label, str(folder), outputs, {}))
    return made


def _shuffled_run(benchmark: Benchmark, seed: int) -> tuple[str, str, dict, dict] | None:
    """Shuffled's (label, root, outputs, missing), None when no public system has outputs."""
    source = battery.public_source(benchmark)
    if source is None:
        return None
    outputs, missing = battery.write_shuffled(
        benchmark, source, baseline_folder(benchmark) / f"shuffled-{seed}", seed=seed)
    return SHUFFLED, str(baseline_folder(benchmark)), outputs, missing


def baselines_create(*, actor, benchmark: Benchmark, reason: str = "",
                     progress: bool = False) -> list[ScoringRun]:
    """The calibration baselines (BASELINES) under the benchmark's current judge config,
    queued on the rescoring queue; audited. A baseline already in progress under that config
    is refused. Shuffled is left out, and the audit record says why, while no public
    system has outputs to shuffle."""
    if not get_kind(benchmark.kind).calibration_baselines:
        raise BaselineError("calibration baselines (the input returned unchanged, white noise) "
                            f"do not apply to {benchmark.kind} benchmarks")
    config = judge_config_current(benchmark)
    busy = ScoringRun.objects.filter(benchmark=benchmark, judge_config=config,
                                     purpose=ScoringRun.Purpose.BASELINE,
                                     status__in=ScoringRun.ACTIVE)
    if busy.exists():
        raise BaselineError(f"baselines of {benchmark} under {config.name} are being scored "
                            "already")
    identity = identity_outputs(benchmark)
    if not identity:
        raise BaselineError(f"{benchmark} has no sample with an input audio")
    planned = _inputs_runs(benchmark, identity, config.seed, progress)
    shuffled = _shuffled_run(benchmark, config.seed)
    skipped = {} if shuffled else {SHUFFLED: "no public system has outputs to shuffle"}
    made = []
    with transaction.atomic():
        for label, root, outputs, missing in planned + ([shuffled] if shuffled else []):
            run = run_create(benchmark=benchmark, audio_root=root, outputs=outputs,
                             missing=missing, config=config,
                             purpose=ScoringRun.Purpose.BASELINE, label=label)
            enqueue_run(run.id)
            made.append(run)
        board_changed(slug=benchmark.slug)
        audit_record(actor=actor, action=AuditEvent.Action.BASELINE, obj=benchmark,
                     after={"runs": {run.label: run.id for run in made},
                            "judge_config": config.name, "skipped": skipped},
                     reason=reason or "calibration baselines", benchmark_slug=benchmark.slug,
                     public=True)
    return made
