import random

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone
from tqdm import tqdm

from leaderboard.selectors import benchmark_current
from scoring.judge_configs import judge_config_current
from scoring.kinds import get_kind
from scoring.models import Item, ItemResult, ScoringRun, SliceResult
from scoring.runs import _slices, run_vector_store
from submissions.models import ModelEntry, Submission

SEED_USER = "synthetic-board"
LABEL = "synthetic (seed_board): figures drawn at random, no model and no judge involved"


class Command(BaseCommand):
    help = ("Fill a board with N synthetic scored submissions (labelled synthetic and "
            "simulated) for benchmarks and demos. Figures are drawn at random per rubric.")

    def add_arguments(self, parser):
        parser.add_argument("--benchmark", required=True, help="board slug")
        parser.add_argument("--submissions", type=int, required=True)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--resamples", type=int, default=200,
                            help="bootstrap resamples per slice (aggregation uses 1000)")

    def handle(self, *args, **options):
        benchmark = benchmark_current(options["benchmark"])
        if benchmark is None:
            raise CommandError(f"no benchmark {options['benchmark']!r}; import it first")
        if options["submissions"] < 1:
            raise CommandError("--submissions must be at least 1")
        kind = get_kind(benchmark.kind)
        items = list(Item.objects.filter(benchmark=benchmark).prefetch_related("criteria")
                     .order_by("position"))
        samples = [kind.from_rows(item.as_rows()) for item in items]
        user, _ = get_user_model().objects.get_or_create(
            username=SEED_USER, defaults={"email": "synthetic@localhost", "is_active": False})
        rng = random.Random(options["seed"])
        start = ModelEntry.objects.filter(owner=user).count()
        for number in tqdm(range(start, start + options["submissions"]), unit="submission"):
            self._one(benchmark, kind, items, samples, user, number, rng, options)
        self.stdout.write(f"seeded {options['submissions']} synthetic submissions on "
                          f"{benchmark}")

    @transaction.atomic
    def _one(self, benchmark, kind, items, samples, user, number, rng, options):
        skill = rng.uniform(0.2, 0.8)
        rows = [kind.synthetic_row(item, rng, skill) for item in samples]
        model = ModelEntry.objects.create(
            owner=user, name=f"Synthetic model {number:04d}", organisation="Synthetic",
            licence=rng.choice(["MIT", "Apache-2.0", "proprietary"]),
            open_weights=rng.random() < 0.5, description=LABEL)
        run = ScoringRun.objects.create(
            benchmark=benchmark, judge_config=judge_config_current(benchmark), audio_root="",
            judge_model="synthetic (seed_board)",
            prompt_sha256=kind.prompt_sha256(), rounds=kind.rounds, seed=options["seed"],
            max_attempts=1, status=ScoringRun.Status.FINISHED, simulated=True,
            status_times={"finished": timezone.now().isoformat()},
            total_queries=0)
        ItemResult.objects.bulk_create([
            ItemResult(run=run, item=item, missing=False, **kind.item_columns(row))
            for item, row in zip(items, rows, strict=True)], batch_size=2000)
        intervals = kind.intervals(rows, seed=number, resamples=options["resamples"])
        SliceResult.objects.bulk_create(_slices(run, kind.summarize(rows), intervals))
        run_vector_store(run, kind, rows)
        submission = Submission.objects.create(
            owner=user, model=model, benchmark=benchmark, public=True,
            status=Submission.Status.QUEUED, coverage=1.0, current_run=run,
            report={"errors": [], "warnings": [LABEL], "missing": {}})
        submission.runs.add(run)
