from django.core.management.base import BaseCommand, CommandError

from challenges import organizer_services as services
from challenges.models import Challenge, Organizer
from config.errors import ServiceError


class Command(BaseCommand):
    help = ("Grant a user (user name or confirmed e-mail) the organizer role of a challenge, "
            "or --remove it; audited, as on the organizer pages.")

    def add_arguments(self, parser):
        parser.add_argument("slug", help="the challenge's slug")
        parser.add_argument("user", help="user name or confirmed e-mail")
        parser.add_argument("--remove", action="store_true")

    def handle(self, *args, slug, user, remove, **options):
        challenge = Challenge.objects.filter(slug=slug).first()
        if challenge is None:
            raise CommandError(f"no challenge {slug!r}")
        if remove:
            found = Organizer.objects.filter(challenge=challenge, user__username=user) \
                .select_related("user", "challenge").first()
            if found is None:
                raise CommandError(f"{user} does not organize {slug}")
            services.organizer_remove(organizer=found, actor=None)
            self.stdout.write(f"{user} no longer organizes {slug}")
            return
        try:
            granted = services.organizer_grant(challenge=challenge, actor=None, who=user)
        except ServiceError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"{granted.user.username} organizes {slug}")
