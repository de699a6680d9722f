from django.core.management.base import BaseCommand, CommandError

from config.commands import staff_actor
from config.errors import ServiceError
from submissions import moderation
from submissions.models import Submission


class Command(BaseCommand):
    help = ("Hide, unhide, flag, unflag or delete a submission, as the staff pages and the API "
            "do (the same services, audited under --actor with --reason).")

    def add_arguments(self, parser):
        parser.add_argument("submission", type=int, help="the submission's id")
        action = parser.add_mutually_exclusive_group(required=True)
        for name in ("hide", "unhide", "flag", "unflag", "delete"):
            action.add_argument(f"--{name}", dest="action", action="store_const", const=name)
        parser.add_argument("--reason", default="", help="kept in the audit log (a flag's "
                            "reason is public)")
        parser.add_argument("--actor", default="", help="the staff user doing it")
        parser.add_argument("--yes", action="store_true",
                            help="delete without typing the submission's id to confirm")

    def handle(self, *args, **options):
        actor = staff_actor(options["actor"])
        submission = Submission.objects.filter(pk=options["submission"]).first()
        if submission is None:
            raise CommandError(f"no submission {options['submission']}")
        action = options["action"]
        if action == "delete" and not options["yes"] \
                and input(f"type {submission.pk} to confirm: ").strip() != str(submission.pk):
            raise CommandError("not confirmed; nothing done")
        common = {"actor": actor, "submission": submission, "reason": options["reason"]}
        change = {
            "hide": lambda: moderation.submission_hide(hidden=True, **common),
            "unhide": lambda: moderation.submission_hide(hidden=False, **common),
            "flag": lambda: moderation.submission_flag(flagged=True, **common),
            "unflag": lambda: moderation.submission_flag(flagged=False, **common),
            "delete": lambda: moderation.submission_delete(**common),
        }[action]
        try:
            change()
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"submission {submission.pk}: {action} done")
