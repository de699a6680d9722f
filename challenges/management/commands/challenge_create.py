import zoneinfo

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from audit.models import AuditEvent
from audit.services import audit_record
from challenges.models import Challenge


class Command(BaseCommand):
    help = ("Create a challenge (its organizers are then granted on /c/SLUG/manage/organizers/ "
            "by staff, or with `manage.py organizer SLUG USER`).")

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--title", required=True)
        parser.add_argument("--description", default="")
        parser.add_argument("--time-zone", default="UTC",
                            help="the organizers' IANA time zone (America/Los_Angeles)")

    def handle(self, *args, slug, title, description, time_zone, **options):
        try:
            zoneinfo.ZoneInfo(time_zone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise CommandError(f"{time_zone!r} is no IANA time zone") from None
        if Challenge.objects.filter(slug=slug).exists():
            raise CommandError(f"a challenge {slug!r} exists already")
        with transaction.atomic():
            challenge = Challenge.objects.create(slug=slug, title=title,
                                                 description=description, time_zone=time_zone)
            audit_record(actor=None, action=AuditEvent.Action.CHALLENGE, obj=challenge,
                         after={"slug": slug, "title": title, "time_zone": time_zone},
                         reason="challenge created")
        self.stdout.write(f"created {challenge.slug}: /c/{challenge.slug}/")
