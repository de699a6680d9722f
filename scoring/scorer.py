"""Score one submission against a judge fleet from files, writing the kind's results files
(for MMAE, SPEC section 6's). The `score` command is a thin wrapper.

Plain Python (asyncio), no Django. Answers are appended to results.jsonl as they arrive, so a
run that is killed loses only the queries in flight; run again on the same output folder, it
asks only the queries with no answer (failed ones included). When every query is answered,
results.jsonl is rewritten in the kind's format, in benchmark order.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from judge.fleet import REFUSED, JudgeFleet
from scoring.cost import FIGURES, tally
from scoring.jobs import ask_jobs
from scoring.kinds import ItemRows, Kind, file_sha256, get_kind
from scoring.kinds.base import answer_record
from scoring.kinds.files import read_text, resolve_audio

RESULTS = "results.jsonl"
RUN = "run.json"


class InputError(ValueError):
    """Bad input found before any query was sent."""


class JudgeRefused(RuntimeError):
    """The judge fleet cannot judge this run: no endpoint serves the model (or takes our
    key), or it refused more than `max_refused_share` of the queries. No figures are
    written."""


@dataclass
class ScoreConfig:
    kind: str
    meta: Path
    predictions: Path
    audio_root: Path
    base_urls: list[str]
    output_dir: Path
    concurrency: int = 32
    timeout: float = 120.0
    max_attempts: int = 5
    seed: int = 0
    model: str = "Qwen3-Omni-30B-A3B-Instruct"
    api_key: str | None = None
    sampling: dict = field(default_factory=lambda: {"temperature": 0.0, "max_tokens": 1024})
    down_wait: float = 600.0
    options: dict = field(default_factory=dict)
    # Above this share of queries refused by the judge (HTTP 400), no figures are written.
    max_refused_share: float = 0.01
    unparseable_retries: int = 1
    # Audio remembered per endpoint to name it by its uuid alone (0: always sent whole)
    audio_cache_bytes: int = 2 * 2**30


@dataclass
class Plan:
    kind: Kind
    items: list  # the kind's items, in benchmark order
    rows: list[ItemRows]
    outputs: dict[str, str]  # item key -> output, for items with a usable output
    missing: dict[str, str]  # item key -> why it has no usable output
    fingerprint: dict


def plan(config: ScoreConfig) -> Plan:
    """Read and check every input; raise InputError naming the fault before any query."""
    kind = get_kind(config.kind)
    try:
        items = kind.load(config.meta)
        rows = [kind.to_rows(item) for item in items]
        text = read_text(config.predictions)
        predicted = kind.read_predictions(text, name=os.fspath(config.predictions),
                                          known_ids={r.key for r in rows})
    except ValueError as exc:
        raise InputError(str(exc)) from None
    root = Path(config.audio_root)
    outputs, missing = {}, {}
    for row in rows:
        output = predicted.get(row.key)
        problem = "no prediction" if output is None else kind.outputs.check(root, output)
        if problem is None:
            outputs[row.key] = output
        else:
            missing[row.key] = problem if output is None else f"{output}: {problem}"
    fingerprint = {
        "meta_sha256": file_sha256(config.meta),
        "predictions_sha256": file_sha256(config.predictions),
        "seed": config.seed,
        "prompt_sha256": kind.prompt_sha256(),
        "rounds": kind.rounds,
    }
    return Plan(kind=kind, items=items, rows=rows, outputs=outputs, missing=missing,
                fingerprint=fingerprint)


def check_audio(plan_: Plan, config: ScoreConfig) -> None:
    """InputError naming every audio file a query would send that is not there (the items'
    inputs, and the outputs when they are files), before any query is sent."""
    root = Path(config.audio_root)
    paths = {resolve_audio(root, path) for rows in plan_.rows if rows.key in plan_.outputs
             for path in rows.media}
    if plan_.kind.outputs.files:
        paths.update(resolve_audio(root, output) for output in plan_.outputs.values())
    absent = sorted(str(path) for path in paths if not path.is_file())
    if absent:
        raise InputError("\n".join(f"audio {path!r} not found under {root}"
                                   for path in absent[:20]))


def plan_jobs(plan_: Plan, config: ScoreConfig) -> Iterator:
    """Every judge query of the plan, item by item, built as they are taken."""
    root = Path(config.audio_root)
    for item in plan_.items:
        yield from plan_.kind.jobs([item], plan_.outputs, rounds=plan_.kind.rounds,
                                   seed=config.seed, options=config.options,
                                   output_path=lambda path: str(resolve_audio(root, path)),
                                   input_path=lambda path: str(resolve_audio(root, path)))


def _pending(jobs: Iterator, answered: dict, counted: list[int]) -> Iterator:
    """The jobs without an answer, built one item at a time as the query loop takes them
    (in the loop's thread: a builder thread beside it took the GIL from the loop while the first
    queries were out); counted[0] is how many the plan has so far."""
    for job in jobs:
        counted[0] += 1
        if (job.item, job.criterion, job.round) not in answered:
            yield job


def read_answers(path: Path) -> dict[tuple, dict]:
    """Answered queries of an earlier run, keyed (id, rubric_index, round).

    A last line cut short by a kill is dropped (and cut from the file); lines with an error are
    dropped, so that their queries are asked again.
    """
    answers: dict[tuple, dict] = {}
    if not path.exists():
        return answers
    with open(path, "rb+") as handle:
        good_end = 0
        for line in handle:
            if not line.endswith(b"\n"):
                break
            try:
                record = json.loads(line)
            except ValueError:
                break
            good_end += len(line)
            if record.get("error") is None and "rubric_index" in record:
                answers[(record["id"], record["rubric_index"], record["round"])] = record
        handle.truncate(good_end)
    return answers


@dataclass
class _FileRun:
    """A run held in memory, as the kind's file writers read it (scoring.kinds.base.RunData)."""

    plan: Plan
    answers: dict[tuple, dict]
    meta: dict
    per_item: list[dict] = field(default_factory=list)

    def __post_init__(self):
        kind = self.plan.kind
        self.outputs = self.plan.outputs
        self.by_item: dict[str, dict] = {}
        for (key, criterion, round_), answer in self.answers.items():
            self.by_item.setdefault(key, {})[(criterion, round_)] = answer
        self.per_item = [kind.item_result(item, self.outputs.get(rows.key),
                                          self.by_item.get(rows.key, {}))
                         for item, rows in zip(self.plan.items, self.plan.rows, strict=True)]

    def items(self) -> Iterator[tuple[ItemRows, dict, dict]]:
        for rows, row in zip(self.plan.rows, self.per_item, strict=True):
            yield rows, row, self.by_item.get(rows.key, {})

    def slices(self) -> dict:
        return self.plan.kind.summarize(self.per_item)


def _write(path: Path, chunks) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        for chunk in chunks:
            handle.write(chunk)
    os.replace(tmp, path)


def _write_json(path: Path, data) -> None:
    _write(path, [json.dumps(data, indent=1, ensure_ascii=False)])


def check_output_dir(out: Path, fingerprint: dict) -> dict:
    """The run.json of an earlier run in `out`; refuse one made from other inputs."""
    run_path = out / RUN
    if not run_path.exists():
        if (out / RESULTS).exists():
            raise InputError(f"{out} holds a results.jsonl but no run.json; use a fresh folder")
        return {}
    earlier = json.loads(run_path.read_text())
    changed = [k for k, v in fingerprint.items() if earlier.get("inputs", {}).get(k) != v]
    if changed:
        raise InputError(
            f"{out} holds a run of other inputs ({', '.join(changed)} differ); "
            "use a fresh --output_dir or delete that folder"
        )
    return earlier


def score(config: ScoreConfig, *, progress: Callable[[int, int], object] | None = None) -> dict:
    """Run (or resume) a scoring run; return run.json's content with the overall figures.
    Raises InputError, or judge.errors.FleetUnavailable with the answers so far kept for a
    resume."""
    plan_ = plan(config)
    check_audio(plan_, config)
    kind = plan_.kind
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    earlier = check_output_dir(out, plan_.fingerprint)
    run = {
        "benchmark": kind.name,
        "judge": {"model": config.model, "base_urls": config.base_urls,
                  "sampling": config.sampling, "max_attempts": config.max_attempts,
                  "timeout": config.timeout, "concurrency": config.concurrency},
        "inputs": plan_.fingerprint,
        "simulated": bool(earlier.get("simulated", False)),
        "started_at": earlier.get("started_at") or time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                 time.gmtime()),
        "finished_at": None,
        "missing": plan_.missing,
    }
    _write_json(out / RUN, run)
    results_path = out / RESULTS
    answers = read_answers(results_path)
    tracker = progress(len(answers), kind.job_count(
        plan_.items, plan_.outputs, rounds=kind.rounds, options=config.options)
    ) if progress else None
    failed = 0
    queries = 0
    cost = Counter(earlier.get("cost") or {})  # a resumed run's card goes on

    with open(results_path, "a", encoding="utf-8") as handle:
        def on_answer(job, answer) -> None:
            nonlocal failed
            record = answer_record(job, answer)
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            handle.flush()
            answers[(job.item, job.criterion, job.round)] = record
            failed += record["error"] is not None
            cost.update(tally(answer))
            run["simulated"] = run["simulated"] or answer.simulated
            if tracker is not None:
                tracker.update(1)
                if failed:
                    tracker.set_postfix(failed=failed, refresh=False)

        async def main():
            nonlocal queries
            async with JudgeFleet(
                config.base_urls, model=config.model, api_key=config.api_key,
                concurrency=config.concurrency, timeout=config.timeout,
                max_attempts=config.max_attempts, sampling=config.sampling,
                down_wait=config.down_wait, unparseable_retries=config.unparseable_retries,
                audio_cache_bytes=config.audio_cache_bytes,
            ) as fleet:
                wrong = await fleet.check()
                if all(e.misconfigured for e in fleet.endpoints):
                    run["fleet"] = fleet.summary()
                    raise JudgeRefused(
                        "no judge endpoint can serve these queries, so none was sent:\n"
                        + "\n".join(f"  {url}: {why}" for url, why in wrong.items()))
                counted = [0]
                try:
                    await ask_jobs(_pending(plan_jobs(plan_, config), dict(answers), counted),
                                   fleet, on_answer)
                finally:
                    queries = counted[0]
                    run["fleet"] = fleet.summary()
                if tracker is not None and tracker.total != queries:
                    tracker.total = queries
                    tracker.refresh()

        try:
            asyncio.run(main())
        finally:
            if tracker is not None:
                tracker.close()
            run["cost"] = {name: round(cost[name], 3) if isinstance(cost[name], float)
                           else cost[name] for name in FIGURES}
            _write_json(out / RUN, run)

    refused = [a for a in answers.values() if a.get("error_kind") == REFUSED]
    run["refused_queries"] = len(refused)
    asked = max(queries, len(answers))
    if len(refused) > config.max_refused_share * asked:
        _write_json(out / RUN, run)
        said = collections.Counter(a["error"] for a in refused).most_common(1)[0][0]
        raise JudgeRefused(
            f"the judge refused {len(refused)} of {asked} queries, more "
            f"than the {config.max_refused_share:.0%} a run may have refused, so no figures "
            f"were written. It said: {said}\nFix the judge (see README, The judge) and run "
            "the same command again: refused queries are asked again.")
    data = _FileRun(plan=plan_, answers=answers, meta={
        "benchmark": kind.name, "kind": kind.name, "judge": config.model,
        "simulated": run["simulated"], "options": config.options,
        "missing": len(plan_.missing)})
    for name in kind.files:
        _write(out / name, kind.file_chunks(name, data))
    run["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    run["queries"] = queries
    run["failed_queries"] = sum(1 for a in answers.values() if a["error"] is not None)
    run["prompt_sha256"] = kind.prompt_sha256()
    _write_json(out / RUN, run)
    return {**run, "overall": data.slices()["overall"]}
