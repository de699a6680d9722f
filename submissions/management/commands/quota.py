from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from config.commands import staff_actor
from config.errors import ServiceError
from submissions import moderation
from submissions.services import quota_left


class Command(BaseCommand):
    help = ("Give a user their own upload limits, as the staff quota page and the API do (the "
            "same service, audited); neither limit given removes the user's override.")

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--per-day", type=int, default=None,
                            help="submissions per 24 hours (default: the site's)")
        parser.add_argument("--in-flight", type=int, default=None,
                            help="submissions scored at once (default: the site's)")
        parser.add_argument("--reason", default="", help="kept in the audit log")
        parser.add_argument("--actor", default="", help="the staff user doing it")

    def handle(self, *args, **options):
        actor = staff_actor(options["actor"])
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user {options['username']!r}")
        try:
            moderation.quota_override(actor=actor, user=user, per_day=options["per_day"],
                                      in_flight=options["in_flight"], reason=options["reason"])
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        left = quota_left(user)
        self.stdout.write(f"{user.get_username()} may now submit {left['per_day']} per 24 "
                          f"hours, {left['in_flight_limit']} at once")
