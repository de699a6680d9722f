"""What a board shows of a submission's owner, their user name ("by ...") and "verified" while
a GitHub or Hugging Face account is linked, changes the boards of their submissions wherever
it changes: a rename (the admin, a shell), a log-in account linked or unlinked (allauth's
pages, the admin), the account deleted with its submissions. Each raises those boards'
versions (scoring.boards.board_changed) in the change's own transaction, so that nothing kept
for a board's state shows the owner as they were."""

from allauth.socialaccount.models import SocialAccount
from django.contrib.auth import get_user_model
from django.db.models.signals import post_delete, post_save, pre_delete, pre_save

from accounts.saves import changes
from accounts.verification import VERIFYING_PROVIDERS
from scoring.boards import board_changed
from submissions.selectors import boards_showing

_RENAMED = "_board_name_changed"


def _note_rename(sender, instance, update_fields=None, **kwargs) -> None:
    setattr(instance, _RENAMED, changes(sender, instance, "username", update_fields))


def _renamed(sender, instance, created, **kwargs) -> None:
    if getattr(instance, _RENAMED, False):
        setattr(instance, _RENAMED, False)
        board_changed(*boards_showing(owner_id=instance.pk))


def _deleted(sender, instance, **kwargs) -> None:
    # Before the cascade takes the submissions (and in its transaction).
    board_changed(*boards_showing(owner_id=instance.pk))


def _linked(sender, instance, created=True, **kwargs) -> None:
    """A verifying log-in account added or removed (post_save with created, post_delete)."""
    if created and instance.provider in VERIFYING_PROVIDERS:
        board_changed(*boards_showing(owner_id=instance.user_id))


def connect() -> None:
    user_model = get_user_model()
    pre_save.connect(_note_rename, sender=user_model, dispatch_uid="owner-rename-noted")
    post_save.connect(_renamed, sender=user_model, dispatch_uid="owner-renamed")
    pre_delete.connect(_deleted, sender=user_model, dispatch_uid="owner-deleted")
    post_save.connect(_linked, sender=SocialAccount, dispatch_uid="owner-account-linked")
    post_delete.connect(_linked, sender=SocialAccount, dispatch_uid="owner-account-unlinked")
