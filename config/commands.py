"""What management commands share."""

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError


def staff_actor(username: str):
    """The active staff user a command acts as, named in the audit log."""
    if not username:
        raise CommandError("--actor: name the staff user doing this (for the audit log)")
    user = get_user_model().objects.filter(username=username, is_staff=True,
                                           is_active=True).first()
    if user is None:
        raise CommandError(f"--actor: no staff user {username!r}")
    return user
