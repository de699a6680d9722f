import pytest

from scoring import runs
from scoring.kinds.mmae.predictions import load_predictions
from scoring.services import benchmark_import
from tests.conftest import judge_config


@pytest.fixture
def bench(demo_set, settings, tmp_path, thread_simulator_factory):
    """The demo set imported and judged by a simulator in this process: (benchmark, sim)."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.SCORING_BATCH_ITEMS = 5
    sim = thread_simulator_factory(latency_ms=1)
    benchmark, _ = benchmark_import(kind="mmae", path=demo_set["meta"],
                                    audio_root=demo_set["root"], slug="mmae", synthetic=True)
    judge_config(sim.urls, benchmark=benchmark)
    return benchmark, sim


@pytest.fixture
def run_setup(demo_set, settings):
    """`run_setup(urls)`: the demo set imported, and a queued run of system A's outputs (2
    missing) under a judge config listing `urls`."""
    settings.SCORING_BATCH_ITEMS = 5
    benchmark, _ = benchmark_import(kind="mmae", path=demo_set["meta"],
                                    audio_root=demo_set["root"], slug="mmae")
    predictions = load_predictions(demo_set["predictions"],
                                   known_ids={s["id"] for s in demo_set["samples"]})
    outputs = {p.sample_id: p.audio_path for p in predictions}
    missing = {s["id"]: "no prediction" for s in demo_set["samples"] if s["id"] not in outputs}

    def create(urls):
        return runs.run_create(benchmark=benchmark, audio_root=str(demo_set["root"]),
                               outputs=outputs, missing=missing,
                               config=judge_config(urls))
    return create
