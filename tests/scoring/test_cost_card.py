"""A full scoring run sends each audio once per endpoint (at most 1.5x the distinct audio
bytes) and its cost card (run.json's `cost`; the pipeline's, on the submission page and in the
API) equals the judge simulator's own counts."""

import json
from pathlib import Path

import pytest

from judge.simulator import stats_totals
from scoring.jobs import data_uri
from scoring.kinds.base import Media
from scoring.scorer import ScoreConfig, score
from scoring.synthetic import write_benchmark, write_system


def distinct_audio_bytes(paths) -> int:
    """The characters of the distinct audio's data: URIs (files alike counted once)."""
    found = {}
    for path in paths:
        uri, uuid, _ = data_uri(Media(str(path)))
        found[uuid] = len(uri)
    return sum(found.values())


def simulator_counts(sim) -> dict:
    return stats_totals(sim.urls)


@pytest.mark.slow
@pytest.mark.parametrize("cache_mb", [4096.0, 0.05], ids=["vLLM's default cache",
                                                          "a cache that evicts"])
def test_a_full_run_sends_each_audio_about_once_and_its_card_is_the_judges_count(
        tmp_path, thread_simulator_factory, cache_mb):
    sim = thread_simulator_factory(latency_ms=5, slots=8, audio_cache_mb=cache_mb,
                                   record=False)
    meta = write_benchmark(tmp_path, 12, seed=5, seconds=1.0)
    samples = json.loads(meta.read_text())
    predictions = write_system(tmp_path, samples, name="sys", seconds=1.0)
    out = tmp_path / "out"
    run = score(ScoreConfig(kind="mmae", meta=meta, predictions=predictions,
                            audio_root=tmp_path, base_urls=sim.urls, output_dir=out,
                            concurrency=8, timeout=30))
    assert run["failed_queries"] == 0
    cost = json.loads((out / "run.json").read_text())["cost"]
    counts = simulator_counts(sim)

    audio = list(Path(tmp_path).rglob("*.wav"))  # the inputs and the system's outputs
    distinct = distinct_audio_bytes(audio)
    assert cost["audio_bytes"] == counts["audio_bytes"]
    if cache_mb > 1:
        assert cost["audio_bytes"] <= 1.5 * distinct, (cost["audio_bytes"], distinct)
        assert cost["cache_misses"] == 0
    else:  # misses were sent again, and every query still answered without a fault
        assert cost["cache_misses"] == counts["audio_cache_misses"] > 0
    # The card is the judge's own count.
    assert cost["queries"] == run["queries"] == counts["ok"]
    assert cost["replies"] == counts["ok"]
    assert cost["requests"] == counts["completions"] + counts["refused"]
    for name in ("prompt_tokens", "completion_tokens", "audio_sent", "audio_cached"):
        assert cost[name] == counts[name], name
    assert cost["audio_seconds"] == pytest.approx(counts["audio_seconds"], abs=0.01)
    assert cost["request_bytes"] > cost["audio_bytes"] > 0 and cost["busy_seconds"] > 0


@pytest.mark.django_db
def test_the_scoring_page_gives_a_full_submissions_measured_cost(client, tmp_path):
    from collections import Counter

    from scoring.models import Benchmark, Criterion, ScoringRun
    from scoring.runs import cost_add
    from scoring.services import benchmark_import
    from tests.conftest import judge_config
    from tests.html import texts

    meta = write_benchmark(tmp_path, 5, seed=3)
    benchmark, _ = benchmark_import(kind="mmae", path=meta, audio_root=tmp_path, slug="mmae")
    config = judge_config(["http://127.0.0.1:9"], benchmark=benchmark)
    assert "No finished run" in client.get("/b/mmae/scoring/").content.decode()
    for replies, prompt, completion, seconds in ((100, 30_000, 2_000, 150.0),
                                                 (300, 60_000, 4_000, 300.0)):
        run = ScoringRun.objects.create(
            benchmark=benchmark, judge_config=config, audio_root="/x", judge_model="m",
            prompt_sha256="p", rounds=3, max_attempts=5, status="finished")
        cost_add(run.id, Counter(queries=replies, requests=replies, replies=replies,
                                 prompt_tokens=prompt, completion_tokens=completion,
                                 audio_seconds=seconds))
    queries = Criterion.objects.filter(item__benchmark=benchmark).count() * config.rounds
    html = client.get("/b/mmae/scoring/").content.decode()
    cells = texts(html, "#cost-figures td")
    # Per query: 90,000 / 400 prompt tokens, 6,000 / 400 completion tokens, 450 / 400 s.
    assert cells == ["225.0", f"{225 * queries:,}", "15.0", f"{15 * queries:,}", "1.13",
                     f"{round(1.125 * queries):,}"]
    assert f"makes {queries:,} judge queries" in " ".join(texts(html, "#cost p"))
    # Before a hidden board's reveal, how many queries a submission makes (so how many
    # rubrics there are) is not told.
    Benchmark.objects.filter(pk=benchmark.pk).update(rubrics_hidden=True)
    assert not texts(client.get("/b/mmae/scoring/").content.decode(), "#cost-figures td")
