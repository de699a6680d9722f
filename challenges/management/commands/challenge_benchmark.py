from django.core.management.base import BaseCommand, CommandError

from challenges import organizer_services as services
from challenges.models import Challenge
from config.errors import ServiceError


class Command(BaseCommand):
    help = ("Give benchmarks (the newest version of each slug) to a challenge: its organizers "
            "may attach them as boards, and no other challenge's may; audited.")

    def add_arguments(self, parser):
        parser.add_argument("slug", help="the challenge's slug")
        parser.add_argument("benchmarks", nargs="+", help="the benchmarks' slugs")

    def handle(self, *args, slug, benchmarks, **options):
        challenge = Challenge.objects.filter(slug=slug).first()
        if challenge is None:
            raise CommandError(f"no challenge {slug!r}")
        problems = []
        for benchmark in benchmarks:
            try:
                services.benchmark_give(challenge=challenge, slug=benchmark, actor=None)
            except ServiceError as error:
                problems.append(str(error))
                continue
            self.stdout.write(f"{benchmark} is {slug}'s")
        if problems:
            raise CommandError("; ".join(problems))
