import pytest

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
