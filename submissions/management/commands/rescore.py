from django.core.management.base import BaseCommand, CommandError

from config.commands import staff_actor
from config.errors import ServiceError
from scoring.models import Benchmark
from submissions.rescoring import RescoreFilter, rescore_request


class Command(BaseCommand):
    help = ("Score submissions of a benchmark again under a judge config (by default its "
            "current one), on the rescoring queue. --dry-run says how many submissions and "
            "judge queries it takes; otherwise type the benchmark's slug to confirm (or --yes).")

    def add_arguments(self, parser):
        parser.add_argument("--benchmark", required=True, help="the benchmark's slug")
        parser.add_argument("--submission", type=int, action="append", default=[],
                            help="a submission id (repeatable); default: all")
        parser.add_argument("--model-contains", default="")
        parser.add_argument("--state", choices=["finished", "failed"], default="")
        parser.add_argument("--config", default="", help="a judge config's name")
        parser.add_argument("--reason", default="", help="shown on the public changelog")
        parser.add_argument("--actor", default="", help="the staff user doing it (audit log)")
        parser.add_argument("--dry-run", action="store_true")
        parser.add_argument("--yes", action="store_true", help="skip the typed confirmation")

    def handle(self, *args, **options):
        benchmark = Benchmark.objects.filter(slug=options["benchmark"]).order_by("-version") \
            .first()
        if benchmark is None:
            raise CommandError(f"no benchmark {options['benchmark']!r}")
        where = RescoreFilter(submission_ids=tuple(options["submission"]),
                              model_contains=options["model_contains"], state=options["state"])
        request = {"benchmark": benchmark, "where": where, "judge_config": options["config"]}
        try:
            plan, _ = rescore_request(actor=None, dry_run=True, **request)
            self.stdout.write(f"{len(plan.submissions)} submission(s) of {benchmark} under "
                              f"{plan.config.name}: {plan.queries} judge queries ({plan.total} "
                              f"answers needed, {plan.cached} from the judgment cache)")
            if options["dry_run"]:
                return
            actor = staff_actor(options["actor"])
            if not options["yes"] and input(f"type {benchmark.slug} to confirm: ").strip() \
                    != benchmark.slug:
                raise CommandError("not confirmed; nothing done")
            _, made = rescore_request(actor=actor, reason=options["reason"],
                                      expected=len(plan.submissions), **request)
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"queued {len(made)} rescoring run(s): "
                          f"{', '.join(str(run.id) for run in made)}")
