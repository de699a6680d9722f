"""Who may run a challenge: its organizers (granted by staff) and site staff. The one rule every
organizer page, API endpoint and command checks."""

from __future__ import annotations

from django.http import Http404

from challenges.models import Challenge, Organizer


def may_organize(challenge: Challenge, user) -> bool:
    if user is None or not user.is_authenticated:
        return False
    return user.is_staff or Organizer.objects.filter(challenge=challenge, user=user).exists()


def organized_challenge(slug: str, user) -> Challenge:
    """The challenge `slug` if `user` may organize it; 404 otherwise (as for a challenge that
    does not exist: whether it does is not told to others)."""
    challenge = Challenge.objects.filter(slug=slug).first()
    if challenge is None or not may_organize(challenge, user):
        raise Http404("No such challenge.")
    return challenge
