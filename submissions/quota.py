"""An author's upload quota: what is used and left of it, and when the next upload is
possible. The upload page shows what `quota_left` answers and the service refuses on it, so
the two cannot disagree."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from submissions.models import QuotaOverride, Submission

WINDOW = timedelta(days=1)


def quota_left(user, now: datetime | None = None) -> dict:
    """What the user may still submit: today (rolling 24 h) and at once, under the site's
    limits or the user's own (QuotaOverride, set by staff); and, when today's are spent, when
    the next one is possible (`next_at`: None when per_day is 0)."""
    now = now or timezone.now()
    mine = Submission.objects.filter(owner=user)
    counted = list(mine.counting_for_quota().filter(created_at__gt=now - WINDOW)
                   .order_by("created_at").values_list("created_at", flat=True))
    in_flight = mine.in_flight().count()
    override = QuotaOverride.objects.filter(user=user).first()
    per_day = settings.SUBMISSIONS_PER_DAY if override is None or override.per_day is None \
        else override.per_day
    at_once = settings.SUBMISSIONS_IN_FLIGHT if override is None or override.in_flight is None \
        else override.in_flight
    return {
        "per_day": per_day,
        "used": len(counted),
        "today": max(0, per_day - len(counted)),
        "next_at": _next_at(counted, per_day),
        "in_flight_limit": at_once,
        "in_flight_used": in_flight,
        "in_flight": max(0, at_once - in_flight),
        "overridden": override is not None,
    }


def _next_at(counted: list[datetime], per_day: int) -> datetime | None:
    """When the window holds one fewer than per_day: once enough of the oldest uploads in it
    are 24 hours old, to the next whole second (as the page shows it, and from which an
    upload is let through). None while one is possible now, or never (per_day 0)."""
    if per_day <= 0 or len(counted) < per_day:
        return None
    moment = counted[len(counted) - per_day] + WINDOW
    return moment.replace(microsecond=0) + timedelta(seconds=1) if moment.microsecond \
        else moment


def quota_problems(left: dict) -> list[str]:
    """Why an upload is refused under the quota `quota_left` answered; none if it is not."""
    problems = []
    if left["today"] <= 0:
        when = f"; the next upload is possible at {left['next_at']:%Y-%m-%d %H:%M:%S} UTC" \
            if left["next_at"] else ""
        problems.append(f"daily quota reached: {left['per_day']} submissions in 24 hours{when}")
    if left["in_flight"] <= 0:
        problems.append(f"{left['in_flight_limit']} submission(s) are still being scored; "
                        "wait for one to finish")
    return problems


def quota_shown(user) -> dict:
    """The quota as the upload page shows it: what quota_left answers, why an upload would be
    refused now (the service's own words), and whether it would be."""
    left = quota_left(user)
    problems = quota_problems(left)
    return {**left, "problems": problems, "spent": bool(problems)}


# An upload refused for the uploads in flight may try again when one of them ends, which no
# one knows: the answer says to ask again in this many seconds.
IN_FLIGHT_RETRY_SECONDS = 60


def quota_retry_after(left: dict, now: datetime | None = None) -> int | None:
    """Seconds until an upload refused under `left` may be tried again: until the next one
    the daily quota lets through, or IN_FLIGHT_RETRY_SECONDS for the uploads in flight; None
    when it is not refused, or never will pass (per_day 0)."""
    now = now or timezone.now()
    if left["today"] <= 0:
        if left["next_at"] is None:
            return None
        return max(1, math.ceil((left["next_at"] - now).total_seconds()))
    if left["in_flight"] <= 0:
        return IN_FLIGHT_RETRY_SECONDS
    return None
