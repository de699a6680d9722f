"""The `score` command, as plain Python: `manage.py score` runs it without setting Django up
(manage.py hands it the arguments; the scorer needs no database), so that the first judge
queries leave sooner (Django's set-up is about a third of a second). The management command
shares it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

# httpx imports its own command-line tool (click, rich, pygments: about 60 ms) whenever click
# is installed, and falls back to a stub when that import fails; this command never runs it.
sys.modules.setdefault("httpx._main", None)

from judge.base_urls import parse_base_urls  # noqa: E402
from judge.errors import FleetUnavailable  # noqa: E402
from scoring.kinds import get_kind  # noqa: E402
from scoring.scorer import InputError, JudgeRefused, ScoreConfig, score  # noqa: E402

HELP = (
    "Score a submission with a judge fleet; for MMAE (the default kind) a drop-in for the "
    "official evaluator. Writes the kind's results files (MMAE: results.jsonl, "
    "per_sample.json, taxonomy.json) and run.json to --output_dir; run again on the same "
    "folder to resume after a crash or Ctrl-C."
)


class ScoreError(Exception):
    """The command cannot go on; the message says why."""


def kind_name(name: str) -> str:
    """A known kind's name (only its package is imported, not every kind's)."""
    try:
        return get_kind(name).name
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kind", type=kind_name, default="mmae",
                        help="the benchmark's kind (default: mmae, as the official "
                             "MMAE evaluator; a wrong name lists the others)")
    parser.add_argument("--meta", type=Path, required=True,
                        help="the benchmark's metadata file, e.g. MMAE-meta.json")
    parser.add_argument("--predictions", type=Path, required=True,
                        help="predictions.json or submission.jsonl")
    parser.add_argument("--audio_root", type=Path, required=True,
                        help="folder that relative audio paths resolve against")
    parser.add_argument("--base_urls", required=True,
                        help="comma-separated judge base URLs, e.g. http://127.0.0.1:8001")
    parser.add_argument("--output_dir", type=Path, required=True)
    parser.add_argument("--concurrency", type=int, default=32,
                        help="requests in flight per endpoint")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per request")
    parser.add_argument("--max_attempts", type=int, default=5,
                        help="attempts per query before it counts as a failed vote")
    parser.add_argument("--seed", type=int, default=0, help="seed of the choice shuffles")
    parser.add_argument("--model", default="Qwen3-Omni-30B-A3B-Instruct",
                        help="served model name of the judge")
    parser.add_argument("--api_key", default=None)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--max_tokens", type=int, default=1024)
    parser.add_argument("--down_wait", type=float, default=600.0,
                        help="seconds to wait for a judge when every endpoint is down")
    parser.add_argument("--unparseable_retries", type=int, default=1,
                        help="times an unparseable reply is asked again at temperature 0 "
                             "(the same request gives the same reply; default 1)")
    parser.add_argument("--max_refused_share", type=float, default=0.01,
                        help="above this share of queries refused by the judge (HTTP 400), "
                             "no figures are written and the command fails (default 0.01)")


def run(o: dict, stdout: TextIO) -> None:
    """Score as the options say, printing the figures; ScoreError on bad input or an
    outage."""
    from tqdm import tqdm

    if o["concurrency"] < 1 or o["max_attempts"] < 1 or o["timeout"] <= 0:
        raise ScoreError("--concurrency and --max_attempts must be at least 1, "
                         "--timeout above 0")
    if o["unparseable_retries"] < 0 or not 0 <= o["max_refused_share"] <= 1:
        raise ScoreError("--unparseable_retries cannot be negative, and --max_refused_share "
                         "is a share between 0 and 1")
    try:
        base_urls = parse_base_urls(o["base_urls"], name="--base_urls")
    except Exception as exc:
        raise ScoreError(str(exc)) from None
    if not base_urls:
        raise ScoreError("--base_urls names no endpoint")
    kind = get_kind(o["kind"])
    config = ScoreConfig(
        kind=kind.name, meta=o["meta"], predictions=o["predictions"],
        audio_root=o["audio_root"],
        base_urls=base_urls, output_dir=o["output_dir"], concurrency=o["concurrency"],
        timeout=o["timeout"], max_attempts=o["max_attempts"], seed=o["seed"],
        model=o["model"], api_key=o["api_key"], down_wait=o["down_wait"],
        max_refused_share=o["max_refused_share"],
        unparseable_retries=o["unparseable_retries"],
        sampling={"temperature": o["temperature"], "max_tokens": o["max_tokens"]},
    )
    out = o["output_dir"]

    def progress(done, total):
        return tqdm(total=total, initial=done, unit="query", desc="judging",
                    dynamic_ncols=True, smoothing=0.05)

    try:
        run = score(config, progress=progress)
    except InputError as exc:
        raise ScoreError(f"nothing was sent to the judge:\n{exc}") from None
    except JudgeRefused as exc:
        raise ScoreError(f"{exc}\nanswers so far are kept in {out}") from None
    except FleetUnavailable as exc:
        raise ScoreError(f"{exc}\nanswers so far are kept in {out}; run the same command "
                         "again to resume") from None
    except KeyboardInterrupt:
        raise ScoreError(f"interrupted; answers so far are kept in {out}; run the same "
                         "command again to resume") from None
    overall = run["overall"]
    figures = "  ".join(f"{m.label} {m.format(overall.get(m.key))}" for m in kind.metrics)
    stdout.write(f"{overall['n']} samples ({len(run['missing'])} missing), "
                 f"{run['queries']} queries ({run['failed_queries']} failed, "
                 f"{run['refused_queries']} refused by the judge): {figures}\n")
    if run["simulated"]:
        stdout.write("NOTE: the judge was the simulator; these scores are simulated.\n")
    stdout.write(f"wrote {out}/{', '.join(kind.files)}, run.json\n")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="manage.py score", description=HELP)
    add_arguments(parser)
    try:
        run(vars(parser.parse_args(argv)), sys.stdout)
    except ScoreError as exc:
        sys.stderr.write(f"CommandError: {exc}\n")
        return 1
    return 0
