from django.core.management.base import BaseCommand, CommandError

from challenges import verification
from challenges.models import Phase, Team
from config.errors import ServiceError


class Command(BaseCommand):
    help = ("Invite a final phase's finalists to the reproducibility check: the top N of each "
            "track's official ranking (--top, 3 by default) or the --team named; audited.")

    def add_arguments(self, parser):
        parser.add_argument("slug", help="the challenge's slug")
        parser.add_argument("--phase", default="", help="the phase's slug (default: the "
                                                        "challenge's final phase)")
        parser.add_argument("--top", type=int, default=None)
        parser.add_argument("--team", action="append", default=[],
                            help="a team's name (repeat for several)")

    def handle(self, *args, slug, phase, top, team, **options):
        phases = Phase.objects.filter(challenge__slug=slug)
        phases = phases.filter(slug=phase) if phase else phases.filter(kind=Phase.Kind.FINAL)
        found = list(phases)
        if len(found) != 1:
            raise CommandError(f"challenge {slug!r}: {len(found)} phase(s) match; name one "
                               "with --phase")
        teams = None
        if team:
            teams = list(Team.objects.filter(challenge=found[0].challenge, name__in=team))
            missing = sorted(set(team) - {t.name for t in teams})
            if missing:
                raise CommandError(f"no team named {', '.join(missing)}")
        try:
            made = verification.finalists_invite(phase=found[0], actor=None, top=top,
                                                 teams=teams)
        except ServiceError as error:
            raise CommandError(str(error)) from None
        for check in made:
            self.stdout.write(f"invited {check.team.name}")
        if not made:
            self.stdout.write("every finalist was invited already")
