"""A user's epoch (config.page_cache.user_epoch) is renewed whenever what their pages show of them
may have changed, so that the front answers none of the pages kept for them before: their
account saved (name, staff, active, password: a changed password ends their other sessions)
or deleted, once the change commits; and a log-out, at once (the session it ends may be
replayed)."""

from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_out
from django.db import transaction
from django.db.models.signals import post_delete, post_save

from config import page_cache


def _account_changed(sender, instance, **kwargs) -> None:
    # After the commit: a page rendered from the account as it was before is then sure to
    # hold the older epoch (leaderboard.pages.responses reads the epoch before the user).
    user_id = instance.pk  # a deleted instance's pk is None by the commit
    transaction.on_commit(lambda: page_cache.new_epoch(user_id), robust=True)


def _logged_out(sender, request, user, **kwargs) -> None:
    if user is not None:
        page_cache.new_epoch(user.pk)


def connect() -> None:
    user_model = get_user_model()
    post_save.connect(_account_changed, sender=user_model, dispatch_uid="epoch-saved")
    post_delete.connect(_account_changed, sender=user_model, dispatch_uid="epoch-deleted")
    user_logged_out.connect(_logged_out, dispatch_uid="epoch-logged-out")
