"""Telling staff that something failed on our side: a judge that refuses, a run or a
validation that broke for a reason that is not the author's.

`staff_alert` logs the alert at ERROR and emails every active staff user with an address (and
`ADMINS`), at most once per `key` in ALERT_REPEAT_SECONDS, so a fleet refusing every query
sends one email, not thousands. An email that cannot go out is logged; it never breaks the
caller.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.mail import send_mail

log = logging.getLogger("alerts")


def staff_addresses() -> list[str]:
    staff = get_user_model().objects.filter(is_staff=True, is_active=True).exclude(email="")
    addresses = {address for _, address in getattr(settings, "ADMINS", ())}
    addresses.update(staff.values_list("email", flat=True))
    return sorted(addresses)


def staff_alert(subject: str, message: str, *, key: str | None = None) -> bool:
    """Alert staff; True when the alert went out (False: the same key alerted recently)."""
    if key is not None and not cache.add(f"staff-alert:{key}", 1,
                                         settings.ALERT_REPEAT_SECONDS):
        log.debug("staff alert %r (%s) sent recently; not again", subject, key)
        return False
    log.error("staff alert: %s: %s", subject, message)
    try:
        recipients = staff_addresses()
        if recipients:
            send_mail(f"[{settings.SITE_NAME}] {subject}",
                      f"{message}\n\n{settings.SITE_URL}/staff/\n",
                      settings.DEFAULT_FROM_EMAIL, recipients)
    except Exception:
        log.exception("emailing staff the alert %r failed", subject)
    return True
