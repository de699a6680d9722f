"""Storing one full MMAE run's answers in PostgreSQL: the pipeline's way against a bare COPY.

Makes a scratch database (bench_store_<pid>), migrates it, imports a synthetic full-size
benchmark (2,000 samples, 17,741 rubrics; the input WAVs are empty files, enough for the
importer's existence checks) and adds a ScoringRun. Then, for the same 53,223 answer rows
(17,741 rubrics x 3 rounds; choices of 3-4 strings, reason ~120 chars, raw ~200 chars):
  (a) stores them as the pipeline does: scoring.judgments.answers_write per batch of 40 items
      (SCORING_BATCH_ITEMS), i.e. COPY into a temporary table, then INSERT ... ON CONFLICT
      DO NOTHING from it;
  (b) truncates the table and stores them with one bare psycopg3 `COPY scoring_answer FROM
      STDIN` of the same columns (write_row per row);
and prints both times and the ratio (a)/(b). The scratch database is always dropped.

    .venv/bin/python bench/store_answers.py [--samples 2000 --rubrics 17741 --repeat 3]
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import _scratch

ROOT = _scratch.ROOT
sys.path.insert(0, str(ROOT))

def make_records(items, rounds: int, seed: int) -> list[list[dict]]:
    """Judge records (scoring.scorer._record's shape) grouped per item, realistic sizes."""
    rng = random.Random(seed)
    grouped = []
    for item in items:
        records = []
        for criterion in item.criteria.all():
            for k in range(rounds):
                right = criterion.spec["right"]
                options = [right, *criterion.spec["wrong"]]
                while len(options) < 3:
                    options.append(f"No, the edit is only partly there (variant {len(options)})")
                if len(options) < 4 and rng.random() < 0.5:
                    options.append("It cannot be told from the audio")
                rng.shuffle(options)
                letters = "ABCD"[: len(options)]
                correct_letter = letters[options.index(right)]
                choice = rng.choice(letters)
                reason = (f"The output {'does' if choice == correct_letter else 'does not'} "
                          f"match the requested edit; rubric {criterion.index}, round {k}, "
                          "judged from the audio.").ljust(120, ".")
                raw = json.dumps({"choice": choice, "reason": reason})[:200].ljust(200)
                records.append({
                    "id": item.key, "rubric_index": criterion.index, "round": k,
                    "category": criterion.category, "choices": options,
                    "choice": choice, "reason": reason, "raw": raw,
                    "verdict": {"correct_letter": correct_letter,
                                "correct": choice == correct_letter},
                    "error": None, "error_kind": "",
                    "endpoint": f"http://127.0.0.1:{8001 + k % 2}",
                    "attempts": 1, "latency_ms": round(rng.uniform(190, 260), 1),
                })
        grouped.append(records)
    return grouped


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--rubrics", type=int, default=17741)
    parser.add_argument("--batch-items", type=int, default=40,
                        help="items per pipeline batch (SCORING_BATCH_ITEMS)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="measure (a) then (b) this many times; the best of each counts")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-store-"))
    db_name = None
    try:
        db_name, url = _scratch.create_database("bench_store")
        os.environ.update({"DATABASE_URL": url, "VAR_DIR": str(work / "var"),
                           "DJANGO_SETTINGS_MODULE": "config.settings"})
        _scratch.migrate(dict(os.environ))

        import django

        django.setup()
        from django.db import connection

        from scoring import synthetic
        from scoring.judge_configs import judge_config_current
        from scoring.judgments import STORED_FIELDS, answer_from, answers_store
        from scoring.kinds import get_kind
        from scoring.models import Answer, Item, ScoringRun
        from scoring.services import benchmark_import

        meta = synthetic.make_meta(args.samples, n_rubrics=args.rubrics)
        meta_path = work / "MMAE-meta.json"
        synthetic.write_meta_with_empty_audio(meta, meta_path, work / "audio")
        started = time.monotonic()
        benchmark, _ = benchmark_import(kind="mmae", path=meta_path, audio_root=work / "audio",
                                        slug="mmae", synthetic=True)
        print(f"benchmark import: {benchmark.n_items} samples, {benchmark.n_criteria} rubrics "
              f"in {time.monotonic() - started:.2f} s")
        rounds = 3
        run = ScoringRun.objects.create(
            benchmark=benchmark, judge_config=judge_config_current(benchmark),
            audio_root=str(work), outputs={}, missing={},
            judge_model="bench", base_urls=["http://127.0.0.1:8001"],
            prompt_sha256=get_kind("mmae").prompt_sha256(), rounds=rounds, max_attempts=5,
            total_queries=benchmark.n_criteria * rounds)

        items = list(Item.objects.filter(benchmark=benchmark).order_by("position")
                     .prefetch_related("criteria"))
        criterion_ids = {(item.key, c.index): c.id for item in items for c in item.criteria.all()}
        grouped = make_records(items, rounds, seed=1)
        batches = [
            [r for records in grouped[i:i + args.batch_items] for r in records]
            for i in range(0, len(grouped), args.batch_items)
        ]
        n_rows = sum(len(b) for b in batches)
        print(f"rows: {n_rows} ({benchmark.n_criteria} rubrics x {rounds} rounds) in "
              f"{len(batches)} batches of {args.batch_items} items")

        raw_conn = connection  # Django's; (b) uses the psycopg connection underneath

        def truncate():
            with raw_conn.cursor() as cursor:
                cursor.execute("TRUNCATE scoring_answer")

        # The same Answer objects for both, built once (as the pipeline builds them while
        # its queries are answered): what is timed is storing them.
        prepared = [[answer_from(run, criterion_ids[(r["id"], r["rubric_index"])], "", r)
                     for r in records] for records in batches]
        fields = [Answer._meta.get_field(name.removesuffix("_id")) for name in STORED_FIELDS]
        columns = ", ".join(field.column for field in fields)
        values = operator.attrgetter(*(field.attname for field in fields))
        jsons = [i for i, field in enumerate(fields) if field.get_internal_type() == "JSONField"]

        def pipeline_store() -> float:
            truncate()
            started = time.perf_counter()
            for answers in prepared:
                answers_store(run, answers, [True] * len(answers))
            return time.perf_counter() - started

        def copy_store() -> float:
            truncate()
            raw_conn.ensure_connection()
            pg = raw_conn.connection  # a psycopg.Connection, autocommit as Django keeps it
            started = time.perf_counter()
            with pg.transaction(), pg.cursor() as cursor:
                with cursor.copy(f"COPY scoring_answer ({columns}) FROM STDIN") as copy:
                    for answers in prepared:
                        for answer in answers:
                            row = list(values(answer))
                            for i in jsons:
                                row[i] = json.dumps(row[i])
                            copy.write_row(row)
            return time.perf_counter() - started

        best_a = best_b = float("inf")
        for attempt in range(1, args.repeat + 1):
            a = pipeline_store()
            count_a = Answer.objects.filter(run=run).count()
            b = copy_store()
            count_b = Answer.objects.filter(run=run).count()
            if count_a != n_rows or count_b != n_rows:
                raise SystemExit(f"row counts differ: (a) {count_a}, (b) {count_b}, "
                                 f"expected {n_rows}")
            best_a, best_b = min(best_a, a), min(best_b, b)
            print(f"repeat {attempt}: (a) pipeline store {a:.2f} s, (b) COPY {b:.2f} s, "
                  f"ratio {a / b:.2f}")
        print(f"(a) pipeline answers_store (COPY to a temporary table, INSERT ... ON CONFLICT DO "
              f"NOTHING) per batch of {args.batch_items} items: {best_a:.2f} s = "
              f"{n_rows / best_a:,.0f} rows/s")
        print(f"(b) one COPY FROM STDIN (write_row): {best_b:.2f} s = {n_rows / best_b:,.0f} "
              f"rows/s")
        print(f"ratio (a)/(b): {best_a / best_b:.2f} (best of {args.repeat})")
        connection.close()
    finally:
        _scratch.close_and_drop(db_name)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
