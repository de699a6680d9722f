"""Teams of a challenge: made by a signed-in user (its first member), who invites others by
user name or e-mail address; an invitee accepts or declines. A user is a member of one team per
challenge at most (the database holds it: challenges.models.Membership). A team enters a track
by ticking every one of the track's attestations.

What changes what the public sees (a team made, a member joined, a track entered) is in the
audit log, public (challenges.models: the team's name and members are shown)."""

from __future__ import annotations

import logging

from allauth.account.models import EmailAddress
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import audit_record
from challenges.models import Challenge, Membership, Team, Track, TrackEntry
from config.errors import ServiceError
from submissions.names import name_fault, name_normalise, name_skeletons

log = logging.getLogger(__name__)


def team_of(challenge: Challenge, user) -> Team | None:
    """The team `user` is a member of in `challenge` (an accepted membership), or None."""
    if user is None or not user.is_authenticated:
        return None
    membership = Membership.objects.filter(challenge=challenge, user=user,
                                           accepted_at__isnull=False) \
        .select_related("team").first()
    return membership.team if membership else None


def members(team: Team) -> list[Membership]:
    """The team's members (accepted), the earliest first."""
    return list(team.memberships.filter(accepted_at__isnull=False).select_related("user")
                .order_by("accepted_at", "id"))


def invitations_pending(team: Team) -> list[Membership]:
    return list(team.memberships.filter(accepted_at__isnull=True)
                .select_related("user", "invited_by").order_by("invited_at", "id"))


def _addressed_to(user) -> Q:
    """Invitations addressed to `user`: by account, or to an address the user confirmed."""
    confirmed = EmailAddress.objects.filter(user=user, verified=True).values("email")
    return Q(user=user) | Q(user__isnull=True, email__in=[e.lower() for e in
                                                         confirmed.values_list("email",
                                                                               flat=True)])


def _is_for(invitation: Membership, user) -> bool:
    """Whether `invitation` is addressed to `user` (as _addressed_to reads it)."""
    if invitation.user_id is not None:
        return invitation.user_id == user.pk
    return EmailAddress.objects.filter(user=user, verified=True,
                                       email__iexact=invitation.email).exists()


def invitations_of(challenge: Challenge, user) -> list[Membership]:
    """The invitations `user` has not answered in `challenge`."""
    return list(Membership.objects.filter(_addressed_to(user), challenge=challenge,
                                          accepted_at__isnull=True)
                .select_related("team", "invited_by").order_by("invited_at", "id"))


def _already_in(challenge: Challenge, user, *, who: str) -> None:
    team = team_of(challenge, user)
    if team is not None:
        raise ServiceError(f"{who} already in the team {team.name!r} in this challenge: a "
                           "user is in one team per challenge", code="conflict")


def team_create(*, challenge: Challenge, user, name: str) -> Team:
    """Make a team in `challenge` with `user` as its first member. Refused when the user is
    in a team of the challenge already, or the name (normalised as the board's names are)
    looks like another team's."""
    problem = name_fault(name, field="team name", label="Team name")
    if problem:
        raise ServiceError({"name": [problem]})
    name = name_normalise(name)
    if len(name) > Team._meta.get_field("name").max_length:
        raise ServiceError({"name": [f"Team name is {len(name)} characters; the limit is "
                                     f"{Team._meta.get_field('name').max_length}"]})
    try:
        with transaction.atomic():
            # One team made at a time per challenge, so two look-alike names cannot both pass.
            Challenge.objects.select_for_update().get(pk=challenge.pk)
            _already_in(challenge, user, who="you are")
            skeletons = name_skeletons(name)
            for other in Team.objects.filter(challenge=challenge).values_list("name", flat=True):
                if skeletons & name_skeletons(other):
                    raise ServiceError({"name": [f"the name {name!r} is taken by another team "
                                                 "(names that look alike count as the same)"]},
                                       code="conflict")
            team = Team.objects.create(challenge=challenge, name=name, created_by=user)
            Membership.objects.create(team=team, challenge=challenge, user=user,
                                      accepted_at=timezone.now())
            audit_record(actor=user, action=AuditEvent.Action.CHALLENGE, obj=team,
                         after={"team": team.name, "members": [user.username]}, public=True,
                         reason=f"team {team.name!r} made in {challenge.slug}")
    except IntegrityError:  # joined another team at the same instant
        raise ServiceError("you are already in a team in this challenge: a user is in one "
                           "team per challenge", code="conflict") from None
    return team


def _member_required(team: Team, user) -> None:
    if not Membership.objects.filter(team=team, user=user, accepted_at__isnull=False).exists():
        raise ServiceError(f"you are not a member of the team {team.name!r}", code="conflict")


def _user_named(who: str):
    """The user whose user name or e-mail address is `who` (case does not matter)."""
    who = who.strip()
    if not who:
        raise ServiceError({"who": ["give a user name or an e-mail address"]})
    users = get_user_model().objects
    if "@" in who:
        found = users.filter(Q(email__iexact=who) | Q(
            id__in=EmailAddress.objects.filter(email__iexact=who).values("user_id"))).first()
    else:
        found = users.filter(username__iexact=who).first()
    if found is None and "@" in who:
        return None  # an address no account has: invited by e-mail, to sign up with it
    if found is None or not found.is_active:
        raise ServiceError({"who": [f"no user {who!r}: invite them by the e-mail address "
                                    "they will sign up with"]})
    return found


def team_invite(*, team: Team, inviter, who: str) -> Membership:
    """Invite the user named `who` (user name or e-mail address) into `team`, by a member of
    it; they are e-mailed a link to accept. Refused when they are in a team of the challenge
    already, or invited to this one."""
    _member_required(team, inviter)
    invitee = _user_named(who)
    challenge = team.challenge
    if invitee is None:
        return _address_invite(team=team, inviter=inviter, email=who.strip().lower())
    existing = Membership.objects.filter(team=team, user=invitee).first()
    if existing is not None:
        raise ServiceError({"who": [f"{invitee.username} is already "
                                    f"{'a member of' if existing.accepted_at else 'invited to'}"
                                    f" {team.name!r}"]}, code="conflict")
    _already_in(challenge, invitee, who=f"{invitee.username} is")
    try:
        with transaction.atomic():
            invitation = Membership.objects.create(team=team, challenge=challenge,
                                                   user=invitee, invited_by=inviter)
    except IntegrityError:  # the same invitation sent twice at once
        raise ServiceError({"who": [f"{invitee.username} is already invited to "
                                    f"{team.name!r}"]}, code="conflict") from None
    transaction.on_commit(lambda: _invitation_email(invitation.pk), robust=True)
    return invitation


def _address_invite(*, team: Team, inviter, email: str) -> Membership:
    """An invitation to an address no account has (the answer is the same as for one that
    has: whether an address is registered is not told). Whoever confirms it on an account
    sees the invitation and may accept it."""
    if Membership.objects.filter(team=team, user__isnull=True, email=email).exists():
        raise ServiceError({"who": [f"{email} is already invited to {team.name!r}"]},
                           code="conflict")
    invitation = Membership.objects.create(team=team, challenge=team.challenge, email=email,
                                           invited_by=inviter)
    transaction.on_commit(lambda: _invitation_email(invitation.pk), robust=True)
    return invitation


def invitation_url(invitation: Membership) -> str:
    return settings.SITE_URL.rstrip("/") + reverse(
        "challenges:invitation", args=[invitation.challenge.slug, invitation.pk])


def _invitation_email(invitation_id: int) -> None:
    invitation = Membership.objects.select_related("team", "challenge", "user", "invited_by") \
        .filter(pk=invitation_id, accepted_at__isnull=True).first()
    if invitation is None:
        return
    address = invitation.user.email if invitation.user else invitation.email
    if not address:
        return
    sign_up = "" if invitation.user else (
        "\nSign up on the site with this address (or add it to your account and confirm it) "
        "to see the invitation there.\n")
    inviter = invitation.invited_by.username if invitation.invited_by else "A member"
    send_mail(
        subject=f"{inviter} invites you to the team {invitation.team.name} "
                f"({invitation.challenge.title})",
        message=(f"{inviter} invites you to join the team {invitation.team.name} in "
                 f"{invitation.challenge.title}.\n\nAccept or decline the invitation here:\n"
                 f"{invitation_url(invitation)}\n{sign_up}\nA user is in one team per "
                 "challenge; nothing changes until you accept.\n"),
        from_email=None, recipient_list=[address])


def invitation_for(challenge: Challenge, pk: int, user) -> Membership | None:
    """The invitation `pk` of `challenge` addressed to `user` and not answered yet."""
    if user is None or not user.is_authenticated:
        return None
    return Membership.objects.filter(_addressed_to(user), pk=pk, challenge=challenge,
                                     accepted_at__isnull=True) \
        .select_related("team", "invited_by").first()


def invitation_accept(*, invitation: Membership, user) -> Team:
    """`user` accepts their invitation: a member of its team. Refused when they are in a team
    of the challenge already; their other invitations in the challenge are withdrawn."""
    if not _is_for(invitation, user):
        raise ServiceError("this invitation is not yours", code="conflict")
    challenge = invitation.challenge
    try:
        with transaction.atomic():
            _already_in(challenge, user, who="you are")
            if Membership.objects.filter(team=invitation.team, user=user).exclude(
                    pk=invitation.pk).exists():  # invited by account and by address alike
                Membership.objects.filter(team=invitation.team, user=user).exclude(
                    pk=invitation.pk).delete()
            if not Membership.objects.filter(pk=invitation.pk, accepted_at__isnull=True) \
                    .update(accepted_at=timezone.now(), user=user):
                raise ServiceError("this invitation was answered already or withdrawn",
                                   code="conflict")
            Membership.objects.filter(_addressed_to(user), challenge=challenge,
                                      accepted_at__isnull=True).delete()
            team = invitation.team
            audit_record(actor=user, action=AuditEvent.Action.CHALLENGE, obj=team,
                         after={"joined": user.username,
                                "members": [m.user.username for m in members(team)]},
                         public=True, reason=f"{user.username} joined {team.name!r}")
    except IntegrityError:  # accepted another team's at the same instant
        raise ServiceError("you are already in a team in this challenge: a user is in one "
                           "team per challenge", code="conflict") from None
    return team


def invitation_decline(*, invitation: Membership, user) -> None:
    if not _is_for(invitation, user):
        raise ServiceError("this invitation is not yours", code="conflict")
    Membership.objects.filter(pk=invitation.pk, accepted_at__isnull=True).delete()


def missing_attestations(track: Track, ticked) -> list[str]:
    """The track's attestations not among those ticked, in the track's order."""
    ticked = {str(t).strip() for t in ticked or []}
    return [a for a in track.attestations if a.strip() not in ticked]


def track_enter(*, team: Team, track: Track, user, attested) -> TrackEntry:
    """Enter `team` in `track`, by a member ticking every one of the track's attestations;
    refused naming those not ticked."""
    if track.challenge_id != team.challenge_id:
        raise ServiceError(f"the track {track.name!r} is not of this challenge")
    _member_required(team, user)
    missing = missing_attestations(track, attested)
    if missing:
        raise ServiceError(f"tick every attestation to enter {track.name}; not ticked: "
                           f"{'; '.join(missing)}")
    found = TrackEntry.objects.filter(team=team, track=track).first()
    if found is not None:
        return found
    try:
        with transaction.atomic():
            entry = TrackEntry.objects.create(team=team, track=track,
                                              attested=list(track.attestations),
                                              entered_by=user)
            audit_record(actor=user, action=AuditEvent.Action.CHALLENGE, obj=entry,
                         after={"team": team.name, "track": track.slug,
                                "attested": list(track.attestations)}, public=True,
                         reason=f"{team.name!r} entered the track {track.name}")
    except IntegrityError:  # entered by a teammate at the same instant
        return TrackEntry.objects.get(team=team, track=track)
    return entry


def tracks_entered(team: Team) -> set[int]:
    return set(TrackEntry.objects.filter(team=team).values_list("track_id", flat=True))
