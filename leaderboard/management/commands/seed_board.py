import os
import random
from multiprocessing import get_context

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone
from tqdm import tqdm

from config.database import analyze
from leaderboard.boards.state import benchmark_current
from scoring.aggregation import item_results_store, slice_results
from scoring.boards import board_changed
from scoring.judge_configs import judge_config_current
from scoring.kinds import get_kind
from scoring.models import Item, ItemResult, RunVector, ScoringRun, SliceResult
from submissions.models import ModelEntry, Submission

SEED_USER = "synthetic-board"
LABEL = "synthetic (seed_board): figures drawn at random, no model and no judge involved"
CHUNK = 200  # submissions drawn by a process and stored in one transaction


class Command(BaseCommand):
    help = ("Fill a board with N synthetic scored submissions (labelled synthetic and "
            "simulated) for benchmarks and demos. Figures are drawn at random per rubric, "
            "in parallel processes, and stored in bulk (per-item results with COPY on "
            "PostgreSQL).")

    def add_arguments(self, parser):
        parser.add_argument("--benchmark", required=True, help="board slug")
        parser.add_argument("--submissions", type=int, required=True)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--resamples", type=int, default=200,
                            help="bootstrap resamples per slice (aggregation uses 1000)")
        parser.add_argument("--processes", type=int, default=os.cpu_count() or 1,
                            help="processes drawing figures (default: one per core)")

    def handle(self, *args, **options):
        benchmark = benchmark_current(options["benchmark"])
        if benchmark is None:
            raise CommandError(f"no benchmark {options['benchmark']!r}; import it first")
        for name in ("submissions", "processes", "resamples"):
            if options[name] < 1:
                raise CommandError(f"--{name} must be at least 1")
        kind = get_kind(benchmark.kind)
        items = list(Item.objects.filter(benchmark=benchmark).prefetch_related("criteria")
                     .order_by("position"))
        samples = [kind.from_rows(item.as_rows()) for item in items]
        user, _ = get_user_model().objects.get_or_create(
            username=SEED_USER, defaults={"email": "synthetic@localhost", "is_active": False})
        config = judge_config_current(benchmark)
        start = ModelEntry.objects.filter(owner=user).count()
        numbers = range(start, start + options["submissions"])
        chunks = [numbers[i:i + CHUNK] for i in range(0, len(numbers), CHUNK)]
        init = (benchmark.kind, samples, options["seed"], options["resamples"])
        with tqdm(total=len(numbers), unit="submission") as bar:
            for drawn in _drawn(chunks, init, options["processes"]):
                _store(benchmark, kind, config, items, user, drawn, seed=options["seed"])
                bar.update(len(drawn))
        analyze(ScoringRun, SliceResult, RunVector, ItemResult, ModelEntry, Submission)
        board_changed(benchmark.id)
        self.stdout.write(f"seeded {options['submissions']} synthetic submissions on "
                          f"{benchmark}")


_drawing: dict = {}


def _drawn(chunks: list[range], init: tuple, processes: int):
    """Each chunk's drawn figures, in order: in this process when asked for one, else in
    forked processes, which only compute (they never touch the database, and leave through
    os._exit, so this process's connection is neither used nor closed there)."""
    if processes == 1:
        _start(*init)
        yield from map(_draw, chunks)
        return
    with get_context("fork").Pool(processes, initializer=_start, initargs=init) as pool:
        yield from pool.imap(_draw, chunks)


def _start(kind_name: str, samples: list, seed: int, resamples: int) -> None:
    _drawing.update(kind=get_kind(kind_name), samples=samples, seed=seed, resamples=resamples)


def _draw(numbers: range) -> list[dict]:
    """The figures of submissions `numbers`, each drawn from its own seeded generator (the
    same whatever the chunking and the number of processes)."""
    kind, samples = _drawing["kind"], _drawing["samples"]
    drawn = []
    for number in numbers:
        rng = random.Random(f"{_drawing['seed']}:{number}")
        skill = rng.uniform(0.2, 0.8)
        rows = [kind.synthetic_row(sample, rng, skill) for sample in samples]
        drawn.append({
            "number": number, "licence": rng.choice(["MIT", "Apache-2.0", "proprietary"]),
            "open_weights": rng.random() < 0.5,
            "columns": [kind.item_columns(row) for row in rows],
            "summary": kind.summarize(rows),
            "intervals": kind.intervals(rows, seed=number, resamples=_drawing["resamples"]),
            "vector": RunVector.pack([kind.item_vector(row) for row in rows]),
        })
    return drawn


@transaction.atomic
def _store(benchmark, kind, config, items, user, drawn: list[dict], *, seed: int) -> None:
    now = timezone.now()
    models = ModelEntry.objects.bulk_create([ModelEntry(
        owner=user, name=f"Synthetic model {d['number']:04d}", organisation="Synthetic",
        licence=d["licence"], open_weights=d["open_weights"], description=LABEL)
        for d in drawn])
    runs = ScoringRun.objects.bulk_create([ScoringRun(
        benchmark=benchmark, judge_config=config, audio_root="",
        judge_model="synthetic (seed_board)", prompt_sha256=kind.prompt_sha256(),
        rounds=kind.rounds, seed=seed, max_attempts=1, status=ScoringRun.Status.FINISHED,
        simulated=True, status_times={"finished": now.isoformat()}, total_queries=0)
        for _ in drawn])
    SliceResult.objects.bulk_create([s for run, d in zip(runs, drawn, strict=True)
                                     for s in slice_results(run, d["summary"], d["intervals"])],
                                    batch_size=5000)
    RunVector.objects.bulk_create([RunVector(run=run, names=list(kind.vector_names),
                                             data=d["vector"])
                                   for run, d in zip(runs, drawn, strict=True)])
    _item_results(kind, runs, items, drawn)
    submissions = Submission.objects.bulk_create([Submission(
        owner=user, model=model, benchmark=benchmark, public=True,
        status=Submission.Status.QUEUED, coverage=1.0, current_run=run,
        report={"errors": [], "warnings": [LABEL], "missing": {}})
        for model, run in zip(models, runs, strict=True)])
    Submission.runs.through.objects.bulk_create([
        Submission.runs.through(submission_id=s.id, scoringrun_id=run.id)
        for s, run in zip(submissions, runs, strict=True)])


def _item_results(kind, runs, items, drawn: list[dict]) -> None:
    """Every per-item result of the chunk, in one COPY on PostgreSQL."""
    item_results_store(kind, [
        {"run_id": run.id, "item_id": item.id, "missing": False, "position": item.position,
         **columns}
        for run, d in zip(runs, drawn, strict=True)
        for item, columns in zip(items, d["columns"], strict=True)])
