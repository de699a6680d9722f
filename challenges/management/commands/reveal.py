from django.core.management.base import BaseCommand, CommandError

from challenges.models import Phase
from challenges.reveal import RevealError, phase_reveal


class Command(BaseCommand):
    help = ("Reveal a challenge's final phase (or --phase): publish its rubrics, every per-item "
            "result and judge reply, and its final boards.")

    def add_arguments(self, parser):
        parser.add_argument("slug", help="the challenge's slug")
        parser.add_argument("--phase", default="", help="the phase's slug (default: the "
                                                        "challenge's final phase)")

    def handle(self, *args, slug, phase, **options):
        phases = Phase.objects.filter(challenge__slug=slug)
        phases = phases.filter(slug=phase) if phase else phases.filter(kind=Phase.Kind.FINAL)
        found = list(phases)
        if len(found) != 1:
            raise CommandError(f"challenge {slug!r}: {len(found)} phase(s) match "
                               f"{'--phase ' + phase if phase else 'kind final'}; name one "
                               "with --phase")
        try:
            revealed = phase_reveal(found[0])
        except RevealError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"revealed {found[0]}: " + ", ".join(str(b) for b in revealed))
