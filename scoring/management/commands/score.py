from django.core.management.base import BaseCommand, CommandError

from scoring import cli


class Command(BaseCommand):
    help = cli.HELP
    requires_system_checks = []

    def add_arguments(self, parser):
        cli.add_arguments(parser)

    def handle(self, *args, **options):
        try:
            cli.run(options, self.stdout)
        except cli.ScoreError as exc:
            raise CommandError(str(exc)) from None
