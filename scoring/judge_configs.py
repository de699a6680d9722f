"""Judge configs: seeding the first from settings, creating, changing endpoints, and making
one a benchmark's current config. Every change by staff is audited."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from audit.models import AuditEvent
from audit.services import audit_record
from config.errors import ServiceError
from judge.fleet import full_sampling
from scoring.boards import board_changed
from scoring.kinds import get_kind
from scoring.models import Benchmark, JudgeConfig

DEFAULT_SAMPLING = full_sampling({"temperature": 0.0, "max_tokens": 1024})


class JudgeConfigError(ServiceError):
    """A judge config change refused (config.errors.ServiceError)."""


def judge_config_seed(*, kind: str) -> JudgeConfig:
    """The first config of a benchmark kind, from JUDGE_* settings (JUDGE_BASE_URLS)."""
    benchmark_kind = get_kind(kind)
    config, _ = JudgeConfig.objects.get_or_create(
        name=f"{kind}-default",
        defaults={"judge_model": settings.JUDGE_MODEL,
                  "base_urls": list(settings.JUDGE_BASE_URLS),
                  "prompt_sha256": benchmark_kind.prompt_sha256(),
                  "rounds": benchmark_kind.rounds, "sampling": dict(DEFAULT_SAMPLING),
                  "seed": settings.SCORING_SEED,
                  "max_attempts": settings.JUDGE_MAX_ATTEMPTS,
                  "notes": "seeded from the JUDGE_* settings"},
    )
    return config


def judge_config_current(benchmark: Benchmark) -> JudgeConfig:
    """The benchmark's current config, seeding it from settings the first time."""
    if benchmark.judge_config_id is None:
        config = judge_config_seed(kind=benchmark.kind)
        Benchmark.objects.filter(id=benchmark.id, judge_config=None).update(judge_config=config)
        benchmark.refresh_from_db(fields=["judge_config"])
    return benchmark.judge_config


def _check(*, rounds: int, base_urls: list[str], max_attempts: int) -> None:
    if not base_urls:
        raise JudgeConfigError("a judge config needs at least one base URL")
    if rounds < 1 or max_attempts < 1:
        raise JudgeConfigError("rounds and max attempts must be at least 1")


@transaction.atomic
def judge_config_create(*, actor, kind: str, name: str, judge_model: str, base_urls: list[str],
                        rounds: int, sampling: dict, seed: int, max_attempts: int,
                        notes: str = "", reason: str = "") -> JudgeConfig:
    benchmark_kind = get_kind(kind)
    _check(rounds=rounds, base_urls=base_urls, max_attempts=max_attempts)
    if JudgeConfig.objects.filter(name=name).exists():
        raise JudgeConfigError(f"a judge config named {name!r} exists already")
    config = JudgeConfig.objects.create(
        name=name, judge_model=judge_model, base_urls=list(base_urls),
        prompt_sha256=benchmark_kind.prompt_sha256(), rounds=rounds,
        sampling=full_sampling(sampling),
        seed=seed, max_attempts=max_attempts, notes=notes, created_by=actor)
    audit_record(actor=actor, action=AuditEvent.Action.JUDGE_CONFIG, obj=config,
                 after=config.as_dict(), reason=reason)
    return config


@transaction.atomic
def judge_config_update(*, actor, config: JudgeConfig, base_urls: list[str],
                        max_attempts: int, max_audio_seconds: float | None = None,
                        max_audios: int | None = None, reason: str = "") -> JudgeConfig:
    """Change a config's operational settings (endpoints, retry budget, what its servers
    accept) in place. What decides a verdict cannot change here: that is a new config."""
    config = JudgeConfig.objects.select_for_update().get(id=config.id)
    _check(rounds=config.rounds, base_urls=base_urls, max_attempts=max_attempts)
    if (max_audio_seconds is not None and max_audio_seconds <= 0) or \
            (max_audios is not None and max_audios < 1):
        raise JudgeConfigError("the longest audio must be above 0 s and the audios per "
                               "prompt at least 1")
    before = config.as_dict()
    config.base_urls, config.max_attempts = list(base_urls), max_attempts
    if max_audio_seconds is not None:
        config.max_audio_seconds = max_audio_seconds
    if max_audios is not None:
        config.max_audios = max_audios
    config.save(update_fields=["base_urls", "max_attempts", "max_audio_seconds",
                               "max_audios"])
    audit_record(actor=actor, action=AuditEvent.Action.JUDGE_CONFIG, obj=config, before=before,
                 after=config.as_dict(), reason=reason)
    return config


@transaction.atomic
def benchmark_set_judge_config(*, actor, benchmark: Benchmark, config: JudgeConfig,
                               reason: str) -> Benchmark:
    """Make `config` the benchmark's current judge config: its board shows runs under it and
    new submissions are scored with it (audited, on the public changelog). Each submission's
    board run then moves to its latest finished run under it (the submissions app reconciles);
    submissions without one leave the board until they are rescored."""
    if not reason.strip():
        raise JudgeConfigError("changing a benchmark's judge config needs a reason")
    if config.prompt_sha256 != get_kind(benchmark.kind).prompt_sha256():
        raise JudgeConfigError(f"judge config {config.name!r} was made for other prompts than "
                               f"those of {benchmark.kind} benchmarks")
    benchmark = Benchmark.objects.select_for_update().get(id=benchmark.id)
    before = benchmark.judge_config.name if benchmark.judge_config_id else None
    benchmark.judge_config = config
    benchmark.save(update_fields=["judge_config"])
    board_changed(slug=benchmark.slug)
    audit_record(actor=actor, action=AuditEvent.Action.JUDGE_CONFIG, obj=benchmark,
                 before={"judge_config": before}, after={"judge_config": config.name},
                 reason=reason, benchmark_slug=benchmark.slug, public=True)
    return benchmark
