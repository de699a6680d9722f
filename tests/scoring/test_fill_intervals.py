"""AIR-Bench runs get 95% intervals from their aggregation (Kind.intervals), on every slice;
`manage.py fill_intervals` gives the same to runs aggregated before, once."""

import io
import json

import pytest
from django.core.management import call_command

from scoring import synthetic_airbench
from scoring.aggregation import run_aggregate
from scoring.kinds.airbench import rules as airbench
from scoring.models import Benchmark, ScoringRun, SliceResult
from scoring.services import benchmark_import
from tests.conftest import judge_config


@pytest.fixture
def foundation_run(db, tmp_path):
    meta = synthetic_airbench.write_foundation(tmp_path, 4, seed=5, seconds=0.2)
    benchmark, _ = benchmark_import(kind=airbench.FOUNDATION, path=meta, audio_root=tmp_path,
                                    slug="af")
    predictions = synthetic_airbench.write_foundation_system(meta, tmp_path / "a.jsonl",
                                                             seed=3, right=0.7)
    outputs = {str(json.loads(line)["uniq_id"]): json.loads(line)["response"]
               for line in predictions.read_text().splitlines()}
    config = judge_config(["http://127.0.0.1:9"], kind=airbench.FOUNDATION, benchmark=benchmark)
    run = ScoringRun.objects.create(
        benchmark=benchmark, judge_config=config, audio_root=str(tmp_path), outputs=outputs,
        judge_model=config.judge_model, prompt_sha256=config.prompt_sha256, rounds=1,
        max_attempts=3, status="aggregating", seed=17, total_queries=0)
    assert run_aggregate(run.id)
    return run


def test_every_slice_of_an_air_bench_run_has_its_intervals_and_the_command_fills_old_ones(
        foundation_run):
    slices = {(s.dimension, s.bucket): s for s in SliceResult.objects.filter(run=foundation_run)}
    assert len(slices) == 1 + len(airbench.DOMAINS) + len(airbench.TASKS)
    for figures in slices.values():
        for metric in ("acc_strict", "acc"):
            lo, hi = figures.interval(metric)
            assert lo <= figures.values[metric] <= hi, (figures.dimension, figures.bucket)
    made = {key: s.intervals for key, s in slices.items()}
    SliceResult.objects.filter(run=foundation_run).update(intervals={})
    version = Benchmark.objects.get(pk=foundation_run.benchmark_id).board_version
    out = io.StringIO()
    call_command("fill_intervals", stdout=out, stderr=io.StringIO())
    assert "intervals given to 1 run(s) of 1 benchmark(s)" in out.getvalue()
    assert {(s.dimension, s.bucket): s.intervals
            for s in SliceResult.objects.filter(run=foundation_run)} == made
    assert Benchmark.objects.get(pk=foundation_run.benchmark_id).board_version > version
    call_command("fill_intervals", stdout=out, stderr=io.StringIO())
    assert "intervals given to 0 run(s)" in out.getvalue()
