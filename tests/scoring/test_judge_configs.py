"""Judge configs: the first seeded from JUDGE_* settings, new ones and endpoint changes
audited, and every run pointing to one."""

import pytest

from audit.models import AuditEvent
from scoring.judge_configs import (
    JudgeConfigError,
    judge_config_create,
    judge_config_current,
    judge_config_update,
)
from scoring.kinds import get_kind
from scoring.models import JudgeConfig
from scoring.runs import run_create
from scoring.services import benchmark_import

pytestmark = pytest.mark.django_db


@pytest.fixture
def benchmark(demo_set):
    benchmark, _ = benchmark_import(kind="mmae", path=demo_set["meta"],
                                    audio_root=demo_set["root"], slug="mmae")
    return benchmark


def test_judge_base_urls_seed_the_first_config(demo_set, settings):
    settings.JUDGE_BASE_URLS = ["http://judge-a:8000", "http://judge-b:8000"]
    settings.JUDGE_MODEL, settings.SCORING_SEED = "Qwen3-Omni-30B-A3B-Instruct", 4
    benchmark, _ = benchmark_import(kind="mmae", path=demo_set["meta"],
                                    audio_root=demo_set["root"], slug="mmae")
    config = judge_config_current(benchmark)
    assert (config.name, config.base_urls, config.seed, config.rounds) == (
        "mmae-default", ["http://judge-a:8000", "http://judge-b:8000"], 4, 3)
    assert config.prompt_sha256 == get_kind("mmae").prompt_sha256()
    assert benchmark.judge_config == config
    settings.JUDGE_BASE_URLS = ["http://elsewhere:1"]
    assert judge_config_current(benchmark) == config  # seeded once


def test_a_run_points_to_the_current_config_and_copies_its_settings(benchmark, demo_set):
    config = judge_config_current(benchmark)
    run = run_create(benchmark=benchmark, audio_root=str(demo_set["root"]), outputs={},
                     missing={})
    assert run.judge_config == config
    assert (run.judge_model, run.base_urls, run.seed, run.rounds, run.max_attempts) == (
        config.judge_model, config.base_urls, config.seed, config.rounds, config.max_attempts)


def test_configs_are_created_and_their_endpoints_changed_with_audit_records(staff):
    config = judge_config_create(
        actor=staff, kind="mmae", name="qwen-t0", judge_model="Qwen3-Omni-30B-A3B-Instruct",
        base_urls=["http://a:8000"], rounds=3, sampling={"temperature": 0.0}, seed=0,
        max_attempts=5, reason="first deployment")
    judge_config_update(actor=staff, config=config, base_urls=["http://a:8000", "http://b:8000"],
                        max_attempts=7, reason="second GPU")
    config.refresh_from_db()
    assert (config.base_urls, config.max_attempts) == (["http://a:8000", "http://b:8000"], 7)
    created, changed = AuditEvent.objects.order_by("id")
    assert (created.action, created.reason, created.before) == ("judge_config",
                                                                "first deployment", {})
    assert created.after["base_urls"] == ["http://a:8000"]
    assert changed.before["base_urls"] == ["http://a:8000"]
    assert (changed.after["max_attempts"], changed.actor) == (7, staff)


def test_a_configs_limits_follow_its_deployment_in_place_audited(staff):
    config = judge_config_create(
        actor=staff, kind="mmae", name="qwen-a100", judge_model="Qwen3-Omni-30B-A3B-Instruct",
        base_urls=["http://a:8000"], rounds=3, sampling={"temperature": 0.0}, seed=0,
        max_attempts=5)
    # the sampling is stored in full, so no server default can decide a verdict
    assert config.sampling == {"temperature": 0.0, "top_p": 1.0, "top_k": -1,
                               "repetition_penalty": 1.0, "max_tokens": 1024}
    assert (config.max_audio_seconds, config.max_audios) == (300.0, 8)
    verdict = config.verdict_sha256
    judge_config_update(actor=staff, config=config, base_urls=["http://a:8000"],
                        max_attempts=5, max_audio_seconds=157.0, max_audios=4,
                        reason="an A100 fleet: vLLM's default encoder cache")
    config.refresh_from_db()
    assert (config.max_audio_seconds, config.max_audios) == (157.0, 4)
    assert config.verdict_sha256 == verdict  # limits do not change what a verdict is
    changed = AuditEvent.objects.order_by("id").last()
    assert (changed.before["max_audio_seconds"], changed.after["max_audio_seconds"]) == (
        300.0, 157.0)
    with pytest.raises(JudgeConfigError):
        judge_config_update(actor=staff, config=config, base_urls=["http://a:8000"],
                            max_attempts=5, max_audio_seconds=0)


def test_bad_configs_are_refused_and_nothing_is_stored(staff):
    base = {"actor": staff, "kind": "mmae", "name": "x", "judge_model": "m",
            "base_urls": ["http://a:1"], "rounds": 3, "sampling": {}, "seed": 0,
            "max_attempts": 5}
    with pytest.raises(JudgeConfigError, match="at least one base URL"):
        judge_config_create(**{**base, "base_urls": []})
    with pytest.raises(JudgeConfigError, match="at least 1"):
        judge_config_create(**{**base, "rounds": 0})
    judge_config_create(**base)
    with pytest.raises(JudgeConfigError, match="named 'x' exists already"):
        judge_config_create(**base)
    with pytest.raises(ValueError, match="unknown benchmark kind"):
        judge_config_create(**{**base, "name": "y", "kind": "nope"})
    assert JudgeConfig.objects.count() == 1 and AuditEvent.objects.count() == 1


def test_a_new_version_of_a_benchmark_keeps_its_judge(
        demo_set, staff):
    first, _ = benchmark_import(kind="mmae", path=demo_set["meta"],
                                audio_root=demo_set["root"], slug="mmae")
    assert first.judge_config is None  # seeded when first scored
    assert judge_config_current(first).name == "mmae-default"
    other = judge_config_create(actor=staff, kind="mmae", name="qwen-2", judge_model="m",
                                base_urls=["http://a:1"], rounds=3, sampling={}, seed=2,
                                max_attempts=5)
    first.judge_config = other
    first.save()
    changed = demo_set["meta"].with_name("changed.json")
    changed.write_text(demo_set["meta"].read_text().replace("clearly audible",
                                                            "plainly audible"))
    second, created = benchmark_import(kind="mmae", path=changed,
                                       audio_root=demo_set["root"], slug="mmae")
    assert created and second.version == 2 and second.judge_config == other
