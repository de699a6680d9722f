"""How long the worker takes to store a board state's rank ranges and ranked orders
(leaderboard.boards.rank_ranges.refresh) at 1,000 and 10,000 submissions, against the targets of
30 s and 120 s: the window after a change, during which pages say that ranges are being
computed.

As board_latency.py seeds it: a scratch PostgreSQL database without planner statistics, a
synthetic MMAE benchmark of --samples items, `seed_board` submissions; then the board changes
(its version raised) and refresh runs in this process, timed by phase (representatives, slice
figures, the bootstrap, the orders, the store). --profile prints cProfile's top functions.

    .venv/bin/python bench/rank_ranges.py [--submissions 1000 10000] [--samples 100]
        [--replicates 1000] [--profile] [--threads N]
"""

import argparse
import cProfile
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import _scratch  # noqa: E402

from scoring import synthetic  # noqa: E402

TARGETS = {1000: 30.0, 10000: 120.0}


def timed_refresh(replicates: int) -> dict[str, float]:
    """refresh of the board's current state, its phases timed (the functions it calls)."""
    from leaderboard.boards import rank_ranges, state
    from scoring.models import Benchmark

    phases: dict[str, float] = {}
    originals = {}

    def timing(name, function):
        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                phases[name] = phases.get(name, 0.0) + time.perf_counter() - started
        return timed

    for module, name, label in ((rank_ranges, "representatives", "representatives"),
                                (rank_ranges, "slice_figures", "slice figures"),
                                (rank_ranges, "compute", "bootstrap"),
                                (rank_ranges, "orders", "orders")):
        originals[(module, name)] = getattr(module, name)
        setattr(module, name, timing(label, getattr(module, name)))
    try:
        state.forget()  # a worker that has not read the new state
        started = time.perf_counter()
        assert rank_ranges.refresh(Benchmark.objects.get(slug="mmae"), replicates=replicates)
        phases["total"] = time.perf_counter() - started
    finally:
        for (module, name), function in originals.items():
            setattr(module, name, function)
    phases["store"] = phases["total"] - sum(v for k, v in phases.items() if k != "total")
    return phases


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--threads", type=int, default=None,
                        help="slices computed at once (rank_ranges.SLICE_THREADS); 1 lets "
                             "--profile see inside the slices")
    args = parser.parse_args()

    name, database_url = _scratch.create_database("bench_ranges")
    work = Path(tempfile.mkdtemp(prefix="ranges-bench-"))
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": "",
           "DJANGO_SETTINGS_MODULE": "config.settings", "VAR_DIR": str(work / "var"),
           "LOG_LEVEL": "WARNING", "CELERY_BROKER_URL": "memory://"}
    os.environ.update(env)
    try:
        _scratch.migrate(env)
        with psycopg.connect(database_url, autocommit=True) as conn:
            for (table,) in conn.execute("SELECT tablename FROM pg_tables "
                                         "WHERE schemaname = 'public'").fetchall():
                conn.execute(f'ALTER TABLE "{table}" SET (autovacuum_enabled = false)')
        meta = synthetic.write_benchmark(work / "bench", args.samples, seed=1)
        subprocess.run(_scratch.manage("import_mmae", str(meta), "--audio-root",
                                       str(work / "bench")), env=env, check=True)
        import django

        django.setup()
        from unittest import mock

        if args.threads:
            from leaderboard.boards import rank_ranges

            rank_ranges.SLICE_THREADS = args.threads

        seeded = 0
        print(f"{'submissions':>11} {'phase':<16} {'seconds':>8}")
        for size in sorted(args.submissions):
            subprocess.run(_scratch.manage("seed_board", "--benchmark", "mmae",
                                           "--submissions", str(size - seeded),
                                           "--resamples", "20"), env=env, check=True)
            seeded = size
            # The seeding asked a worker (none runs here) for the ranges: refresh runs here.
            with mock.patch("celery.current_app.send_task"):
                from scoring.boards import board_changed

                board_changed(slug="mmae")
            profile = cProfile.Profile() if args.profile else None
            if profile:
                profile.enable()
            phases = timed_refresh(args.replicates)
            if profile:
                profile.disable()
                stats = pstats.Stats(profile).sort_stats("tottime")
                stats.print_stats(25)
                stats.print_callers(8)
            for phase, seconds in phases.items():
                print(f"{size:11d} {phase:<16} {seconds:8.2f}")
            target = TARGETS.get(size)
            if target:
                print(f"{size:11d} {'ratio to target':<16} {phases['total'] / target:8.2f}"
                      f"   (target {target:g} s)", flush=True)
    finally:
        _scratch.close_and_drop(name)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
