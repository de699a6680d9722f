"""Calibration baselines: the paper's diagnostic systems, scored by this deployment's judge.

Identity returns each sample's first input audio unchanged; Noise returns seeded white noise of
the input's length and sample rate. Scored under the benchmark's current judge config, their
figures sit beside the paper's own Identity and Noise rows (SPEC section 7), so a judge
deployment can be checked against the paper.
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
from scoring.boards import board_changed
from scoring.judge_configs import judge_config_current
from scoring.kinds import get_kind
from scoring.kinds.files import resolve_audio
from scoring.models import Benchmark, ScoringRun
from scoring.runs import run_create
from scoring.tasks import enqueue_run

IDENTITY, NOISE = "Identity", "Noise"
BASELINES = (IDENTITY, NOISE)


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


def baselines_create(*, actor, benchmark: Benchmark, reason: str = "",
                     progress: bool = False) -> list[ScoringRun]:
    """Identity and Noise runs under the benchmark's current judge config, queued on the
    rescoring queue; audited. A baseline already in progress under that config is refused."""
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
    noise = write_noise(benchmark, seed=config.seed, progress=progress)
    made = []
    with transaction.atomic():
        for label, root, outputs in ((IDENTITY, benchmark.audio_root, identity),
                                     (NOISE, str(baseline_folder(benchmark)), noise)):
            run = run_create(benchmark=benchmark, audio_root=root, outputs=outputs, missing={},
                             config=config, purpose=ScoringRun.Purpose.BASELINE, label=label)
            enqueue_run(run.id)
            made.append(run)
        board_changed(slug=benchmark.slug)
        audit_record(actor=actor, action=AuditEvent.Action.BASELINE, obj=benchmark,
                     after={"runs": {run.label: run.id for run in made},
                            "judge_config": config.name},
                     reason=reason or "calibration baselines", benchmark_slug=benchmark.slug,
                     public=True)
    return made
