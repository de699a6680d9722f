from django.core.management.base import BaseCommand, CommandError

from config.commands import staff_actor
from config.errors import ServiceError
from scoring.baselines import BASELINES, baselines_create
from scoring.models import Benchmark


class Command(BaseCommand):
    help = ("Queue the calibration baselines of an MMAE benchmark (Identity: each input "
            "unchanged; Noise: white noise of the input's length; the battery: Silence, Reversed, "
            "Shuffled) under its current judge config; the board shows them beside the "
            "paper's own.")

    def add_arguments(self, parser):
        parser.add_argument("--benchmark", required=True, help="the benchmark's slug")
        parser.add_argument("--actor", default="", help="a staff user, for the audit log")
        parser.add_argument("--reason", default="")

    def handle(self, *args, **options):
        benchmark = Benchmark.objects.filter(slug=options["benchmark"]).order_by("-version") \
            .first()
        if benchmark is None:
            raise CommandError(f"no benchmark {options['benchmark']!r}")
        actor = staff_actor(options["actor"]) if options["actor"] else None
        try:
            made = baselines_create(actor=actor, benchmark=benchmark, reason=options["reason"],
                                    progress=True)
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write("queued " + ", ".join(f"{run.label} (run {run.id}, "
                                                f"{run.total_queries} queries)" for run in made))
        for label in BASELINES:
            if label not in {run.label for run in made}:
                self.stdout.write(f"{label} not queued: no public system has outputs to "
                                  "shuffle")
