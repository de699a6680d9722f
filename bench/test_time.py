"""How long the test suite takes at two commits, side by side: each commit is cloned into a
folder of its own and installed there (`make install`), then its suite runs as `make test-fast`
(or `make test`) runs it, the two alternately for `--rounds` rounds, against the same
PostgreSQL and Redis. Prints each run's wall time and the ratio of the medians (new / old).

Figures of different days are compared through such runs only: the same machine kind differs
by half from one day to the next. A fresh clone's first run also writes its bytecode (and
pytest's rewritten test modules), which later runs read: with `--rounds 2` or more, the later
rounds are the working loop's figure.

    .venv/bin/python bench/test_time.py --old 97e1553 [--new HEAD] [--rounds 2] [--target test-fast]
        [--database-url postgres://postgres@127.0.0.1:5432/mmae_board_bench]
        [--redis-url redis://127.0.0.1:6379/12]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent


def clone(commit: str, folder: Path) -> str:
    subprocess.run(["git", "clone", "-q", str(ROOT), str(folder)], check=True)
    subprocess.run(["git", "checkout", "-q", commit], cwd=folder, check=True)
    subprocess.run(["make", "install"], cwd=folder, check=True, capture_output=True)
    return subprocess.run(["git", "log", "--oneline", "-1"], cwd=folder, check=True,
                          capture_output=True, text=True).stdout.strip()


def database_exists(url: str) -> None:
    """The suite's database URL must name a database that exists (its test databases are
    made beside it)."""
    import psycopg
    from psycopg import sql

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as server:
        if not server.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                              (name,)).fetchone():
            server.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def timed_run(folder: Path, target: str, env: dict, log: Path) -> tuple[float, str]:
    started = time.monotonic()
    with log.open("w") as out:
        done = subprocess.run(["make", target], cwd=folder, env=env, stdout=out,
                              stderr=subprocess.STDOUT)
    spent = time.monotonic() - started
    lines = [line for line in log.read_text().splitlines() if " passed" in line
             or " failed" in line]
    if done.returncode != 0:
        raise SystemExit(f"make {target} failed in {folder} (see {log})")
    return spent, (lines[-1].strip("= ") if lines else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", required=True, help="the commit to compare against")
    parser.add_argument("--new", default="HEAD")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--target", default="test-fast", choices=["test-fast", "test"])
    parser.add_argument("--database-url",
                        default="postgres://postgres@127.0.0.1:5432/mmae_board_bench")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/12")
    args = parser.parse_args()

    database_exists(args.database_url)
    env = {**os.environ, "TEST_DATABASE_URL": args.database_url,
           "TEST_REDIS_URL": args.redis_url}
    with tempfile.TemporaryDirectory(prefix="test-time-") as scratch:
        folders = {"old": Path(scratch) / "old", "new": Path(scratch) / "new"}
        for side, commit in (("old", args.old), ("new", args.new)):
            print(f"{side}: {clone(commit, folders[side])}", flush=True)
        times: dict[str, list[float]] = {"old": [], "new": []}
        runs = [(r, side) for r in range(args.rounds) for side in ("old", "new")]
        for r, side in tqdm(runs, desc=f"make {args.target}", unit="run"):
            spent, summary = timed_run(folders[side], args.target, env,
                                       Path(scratch) / f"{side}-{r}.log")
            times[side].append(spent)
            tqdm.write(f"{side} round {r + 1}: {spent:.1f} s ({summary})")
    old, new = (statistics.median(times[side]) for side in ("old", "new"))
    print(f"median: old {old:.1f} s, new {new:.1f} s; new / old = {new / old:.3f}")


if __name__ == "__main__":
    sys.exit(main())
