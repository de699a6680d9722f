"""Score one MMAE submission against a judge fleet, writing SPEC section 6's files.

Plain Python (asyncio), no Django: the `score` command is a thin wrapper. Answers are appended
to results.jsonl as they arrive, so a run that is killed loses only the queries in flight; run
again on the same output folder, it asks only the queries with no answer (failed ones included).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import mimetypes
import os
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from judge.fleet import JudgeFleet
from scoring import mmae
from scoring.kinds import MMAE, file_sha256
from scoring.predictions import check_audio, load_predictions, resolve_audio

RESULTS = "results.jsonl"
PER_SAMPLE = "per_sample.json"
TAXONOMY = "taxonomy.json"
RUN = "run.json"


class InputError(ValueError):
    """Bad input found before any query was sent."""


@dataclass
class ScoreConfig:
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


@dataclass
class Plan:
    samples: list[mmae.Sample]
    outputs: dict[str, str]  # sample id -> output path, for samples with a usable output
    missing: dict[str, str]  # sample id -> why it has no usable output
    fingerprint: dict


def prompt_hash() -> str:
    """Identifies the judge prompts; recorded with every run (as judge configs do)."""
    return MMAE.prompt_sha256()


def plan(config: ScoreConfig) -> Plan:
    """Read and check every input; raise InputError naming the fault before any query."""
    try:
        samples = mmae.load_meta(config.meta)
        predictions = load_predictions(config.predictions, known_ids={s.id for s in samples})
    except ValueError as exc:
        raise InputError(str(exc)) from None
    root = Path(config.audio_root)
    missing_inputs = [
        f"sample {s.id}: input audio {path!r} not found under {root}"
        for s in samples for path in s.input_audio if not resolve_audio(root, path).is_file()
    ]
    if missing_inputs:
        raise InputError("\n".join(missing_inputs[:20]))
    by_id = {p.sample_id: p for p in predictions}
    outputs, missing = {}, {}
    for sample in samples:
        prediction = by_id.get(sample.id)
        if prediction is None:
            missing[sample.id] = "no prediction"
            continue
        problem = check_audio(resolve_audio(root, prediction.audio_path))
        if problem:
            missing[sample.id] = f"{prediction.audio_path}: {problem}"
        else:
            outputs[sample.id] = prediction.audio_path
    fingerprint = {
        "meta_sha256": file_sha256(config.meta),
        "predictions_sha256": file_sha256(config.predictions),
        "seed": config.seed,
        "prompt_sha256": prompt_hash(),
        "rounds": mmae.ROUNDS,
    }
    return Plan(samples=samples, outputs=outputs, missing=missing, fingerprint=fingerprint)


class AudioCache:
    """Inline audio as `data:` URIs of the file's original bytes, keeping the recent ones."""

    def __init__(self, root: Path, size: int = 256):
        self.root = root
        self.size = size
        self._cache: OrderedDict[str, str] = OrderedDict()

    def __call__(self, relative: str) -> str:
        uri = self._cache.get(relative)
        if uri is not None:
            self._cache.move_to_end(relative)
            return uri
        path = resolve_audio(self.root, relative)
        mime = mimetypes.guess_type(path.name)[0] or "audio/wav"
        if mime in ("audio/x-wav", "audio/wave"):
            mime = "audio/wav"
        uri = f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"
        self._cache[relative] = uri
        if len(self._cache) > self.size:
            self._cache.popitem(last=False)
        return uri


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
            if record.get("error") is None:
                answers[(record["id"], record["rubric_index"], record["round"])] = record
        handle.truncate(good_end)
    return answers


def _record(sample: mmae.Sample, rubric: mmae.Rubric, query: mmae.Query, answer) -> dict:
    letter, reason = answer.value if answer.ok else (None, None)
    return {
        "id": sample.id,
        "rubric_index": rubric.index,
        "round": query.round,
        "category": rubric.category,
        "choices": list(query.choices),
        "correct_letter": query.correct_letter,
        "choice": letter,
        "correct": letter is not None and letter == query.correct_letter,
        "reason": reason,
        "raw": answer.raw,
        "error": answer.error,
        "endpoint": answer.endpoint,
        "attempts": answer.attempts,
        "latency_ms": None if answer.latency_ms is None else round(answer.latency_ms, 1),
    }


async def ask_all(
    jobs: list[tuple[mmae.Sample, mmae.Rubric, int]],
    fleet: JudgeFleet,
    *,
    seed: int,
    outputs: dict[str, str],
    data_uri: Callable[[str], str],
    on_answer: Callable[[dict, bool], None],
) -> None:
    """Ask every (sample, rubric, round) job, calling on_answer(record, simulated) for each."""
    queue: asyncio.Queue = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)

    async def worker():
        while True:
            try:
                sample, rubric, round_ = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            query = mmae.make_query(sample, rubric, round_, seed=seed)
            messages = mmae.query_messages(sample, rubric, query, output_path=outputs[sample.id],
                                           data_uri=data_uri)
            parse = functools.partial(mmae.parse_reply, n_choices=len(query.choices))
            answer = await fleet.ask(messages, parse)
            on_answer(_record(sample, rubric, query, answer), answer.simulated)

    workers = [asyncio.create_task(worker()) for _ in range(min(fleet.capacity, len(jobs)) or 1)]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)


def per_sample_rows(plan_: Plan, answers: dict[tuple, dict]) -> list[dict]:
    rows = []
    for sample in plan_.samples:
        if sample.id not in plan_.outputs:
            rows.append(mmae.sample_result(sample, None))
            continue
        scores = [
            mmae.rubric_score([answers[(sample.id, r.index, k)]["correct"]
                               for k in range(mmae.ROUNDS)])
            for r in sample.rubrics
        ]
        rows.append(mmae.sample_result(sample, scores))
    return rows


def _write_json(path: Path, data) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False))
    os.replace(tmp, path)


def _rewrite_results(path: Path, plan_: Plan, answers: dict[tuple, dict]) -> None:
    """results.jsonl in benchmark order, one line per query, written atomically."""
    tmp = path.with_suffix(".jsonl.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        for sample in plan_.samples:
            if sample.id not in plan_.outputs:
                continue
            for rubric in sample.rubrics:
                for k in range(mmae.ROUNDS):
                    record = answers[(sample.id, rubric.index, k)]
                    handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


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
    """Run (or resume) a scoring run; return run.json's content. Raises InputError, or
    judge.fleet.FleetUnavailable with the answers so far kept for a resume."""
    plan_ = plan(config)
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    earlier = check_output_dir(out, plan_.fingerprint)
    run = {
        "benchmark": "mmae",
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
    jobs = [
        (sample, rubric, k)
        for sample in plan_.samples if sample.id in plan_.outputs
        for rubric in sample.rubrics for k in range(mmae.ROUNDS)
        if (sample.id, rubric.index, k) not in answers
    ]
    total = sum(len(s.rubrics) * mmae.ROUNDS for s in plan_.samples if s.id in plan_.outputs)
    tracker = progress(len(answers), total) if progress else None
    failed = 0

    with open(results_path, "a", encoding="utf-8") as handle:
        def on_answer(record: dict, simulated: bool) -> None:
            nonlocal failed
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            handle.flush()
            answers[(record["id"], record["rubric_index"], record["round"])] = record
            failed += record["error"] is not None
            run["simulated"] = run["simulated"] or simulated
            if tracker is not None:
                tracker.update(1)
                if failed:
                    tracker.set_postfix(failed=failed, refresh=False)

        async def main():
            async with JudgeFleet(
                config.base_urls, model=config.model, api_key=config.api_key,
                concurrency=config.concurrency, timeout=config.timeout,
                max_attempts=config.max_attempts, sampling=config.sampling,
                down_wait=config.down_wait,
            ) as fleet:
                try:
                    await ask_all(jobs, fleet, seed=config.seed, outputs=plan_.outputs,
                                  data_uri=AudioCache(Path(config.audio_root)),
                                  on_answer=on_answer)
                finally:
                    run["fleet"] = fleet.summary()

        try:
            if jobs:
                asyncio.run(main())
        finally:
            if tracker is not None:
                tracker.close()
            _write_json(out / RUN, run)

    rows = per_sample_rows(plan_, answers)
    _rewrite_results(results_path, plan_, answers)
    _write_json(out / PER_SAMPLE, rows)
    _write_json(out / TAXONOMY, mmae.taxonomy(rows))
    run["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    run["queries"] = total
    run["failed_queries"] = sum(1 for a in answers.values() if a["error"] is not None)
    run["prompt_sha256"] = prompt_hash()
    _write_json(out / RUN, run)
    return run

