"""A password changed anywhere (the site's form, a reset, the admin, `manage.py
changepassword`, a shell) revokes the account's API tokens: whoever held the old password may
have made some. The site's own forms also tell the author which (accounts.adapter)."""

from django.contrib.auth import get_user_model
from django.db.models.signals import post_save, pre_save
from django.utils import timezone

from accounts.models import ApiToken
from accounts.saves import changes

_CHANGED = "_password_changed"
_REVOKED = "_tokens_revoked"


def tokens_revoke(user) -> list[str]:
    """Revoke every active API token of the user; their names, in order."""
    active = ApiToken.objects.filter(user=user, revoked_at=None)
    names = list(active.order_by("name", "pk").values_list("name", flat=True))
    active.update(revoked_at=timezone.now())
    return names


def revoked_by_last_save(user) -> list[str]:
    """The tokens that saving `user` with a new password revoked (none otherwise)."""
    return getattr(user, _REVOKED, [])


def _note(sender, instance, update_fields=None, **kwargs) -> None:
    setattr(instance, _CHANGED, changes(sender, instance, "password", update_fields))


def _revoke(sender, instance, created, **kwargs) -> None:
    if not created and getattr(instance, _CHANGED, False):
        setattr(instance, _REVOKED, tokens_revoke(instance))
        setattr(instance, _CHANGED, False)


def connect() -> None:
    user_model = get_user_model()
    pre_save.connect(_note, sender=user_model, dispatch_uid="password-change-noted")
    post_save.connect(_revoke, sender=user_model, dispatch_uid="password-change-revokes")
