from django.apps import AppConfig
from django.db import transaction
from django.db.models.signals import post_delete, post_save


def _organizer_changed(sender, instance, **kwargs) -> None:
    """A user made or unmade an organizer sees a hidden-rubric board's pages otherwise: none
    of the pages the front kept for them before is answered again (their epoch, renewed once
    the change commits, as accounts.epochs renews it for an account's change)."""
    from config import page_cache

    user_id = instance.user_id
    transaction.on_commit(lambda: page_cache.new_epoch(user_id), robust=True)


class ChallengesConfig(AppConfig):
    name = "challenges"

    def ready(self):
        from challenges import disclosure
        from challenges.models import Organizer
        from scoring import visibility

        # The rule of what a hidden-rubric benchmark shows to whom reads this app's
        # organizers and phases (scoring imports nothing above it).
        visibility.give_disclosure_rule(disclosure.level)
        # A phase board's benchmark takes uploads through its challenge's door only (the
        # team's limits and entry): challenges.entries.
        from challenges.entries import plain_upload_refusal
        from submissions.services import give_door_rule

        give_door_rule(plain_upload_refusal)
        # A board row received after its phase's deadline says so (leaderboard.boards.marks).
        from challenges.board_marks import late_submission
        from leaderboard.boards import marks

        marks.give_late_rule(late_submission)
        post_save.connect(_organizer_changed, sender=Organizer,
                          dispatch_uid="organizer-epoch-saved")
        post_delete.connect(_organizer_changed, sender=Organizer,
                            dispatch_uid="organizer-epoch-deleted")
