"""Teams (challenges.teams and their pages): made by a signed-in user, who invites by user name
or e-mail address (an e-mail with the link to accept); one team per user and challenge, said
plainly; a track entered only with every attestation ticked; the public changes audited."""

import re

import pytest
from allauth.account.models import EmailAddress
from django.core import mail

from audit.models import AuditEvent
from challenges import teams
from challenges.models import Challenge, Membership, Team, Track, TrackEntry
from config.errors import ServiceError
from tests.conftest import cast_member

pytestmark = pytest.mark.django_db

ATTESTATIONS = ["open-source components only", "no human in the loop"]


@pytest.fixture
def challenge():
    made = Challenge.objects.create(slug="icassp", title="ICASSP challenge")
    Track.objects.create(challenge=made, slug="agent", name="Agent", attestations=ATTESTATIONS)
    return made


@pytest.fixture
def third(django_user_model):
    return cast_member(django_user_model, "third", "third@example.com")


def test_a_team_is_made_with_its_maker_as_member_and_audited(challenge, author):
    team = teams.team_create(challenge=challenge, user=author, name="  Wave\u00a0forms ")
    assert team.name == "Wave forms"
    assert [m.user for m in teams.members(team)] == [author]
    event = AuditEvent.objects.get(action=AuditEvent.Action.CHALLENGE)
    assert event.public and event.after == {"team": "Wave forms", "members": ["author"]}


def test_a_name_like_another_teams_is_refused(challenge, author, other_author):
    teams.team_create(challenge=challenge, user=author, name="Waveforms")
    with pytest.raises(ServiceError, match="taken by another team"):
        teams.team_create(challenge=challenge, user=other_author, name="WAVEFORMS")


def test_an_invitation_by_email_is_mailed_and_accepted(challenge, author, other_author,
                                                       django_capture_on_commit_callbacks):
    team = teams.team_create(challenge=challenge, user=author, name="Waveforms")
    with django_capture_on_commit_callbacks(execute=True):
        invitation = teams.team_invite(team=team, inviter=author, who="OTHER@example.com")
    assert invitation.user == other_author and invitation.accepted_at is None
    (sent,) = mail.outbox
    assert sent.to == ["other@example.com"] and "Waveforms" in sent.subject
    link = re.search(r"https?://\S+", sent.body).group(0)
    assert link.endswith(f"/c/icassp/invitations/{invitation.pk}/")
    teams.invitation_accept(invitation=invitation, user=other_author)
    assert [m.user for m in teams.members(team)] == [author, other_author]
    assert AuditEvent.objects.filter(action=AuditEvent.Action.CHALLENGE, public=True,
                                     after__joined="other_author").exists()


def test_a_user_cannot_join_two_teams(challenge, author, other_author, third):
    first = teams.team_create(challenge=challenge, user=author, name="Waveforms")
    second = teams.team_create(challenge=challenge, user=other_author, name="Spectra")
    with pytest.raises(ServiceError, match="author is already in the team 'Waveforms'"):
        teams.team_invite(team=second, inviter=other_author, who="author")
    with pytest.raises(ServiceError, match="you are already in the team 'Waveforms'"):
        teams.team_create(challenge=challenge, user=author, name="Third")
    # Invited by both, accepted by one: the other invitation is withdrawn, and answering it
    # once more is refused.
    one = teams.team_invite(team=first, inviter=author, who="third")
    two = teams.team_invite(team=second, inviter=other_author, who="third")
    teams.invitation_accept(invitation=one, user=third)
    assert not Membership.objects.filter(pk=two.pk).exists()
    with pytest.raises(ServiceError, match="already in the team 'Waveforms'"):
        teams.invitation_accept(invitation=two, user=third)
    assert Membership.objects.filter(user=third, accepted_at__isnull=False).count() == 1


def test_the_database_holds_one_team_per_user_and_challenge(challenge, author, monkeypatch):
    """Two acceptances passing the check together: the constraint refuses the second."""
    teams.team_create(challenge=challenge, user=author, name="Waveforms")
    other = Team.objects.create(challenge=challenge, name="Spectra")
    invitation = Membership.objects.create(team=other, challenge=challenge, user=author)
    with pytest.raises(ServiceError, match="already in"):
        teams.invitation_accept(invitation=invitation, user=author)
    monkeypatch.setattr(teams, "_already_in", lambda *args, **kwargs: None)  # a race
    with pytest.raises(ServiceError, match="one team per challenge"):
        teams.invitation_accept(invitation=invitation, user=author)
    assert Membership.objects.filter(user=author, accepted_at__isnull=False).count() == 1


def test_an_unknown_user_name_and_a_non_member_inviter_are_refused(challenge, author,
                                                                   other_author):
    team = teams.team_create(challenge=challenge, user=author, name="Waveforms")
    with pytest.raises(ServiceError, match="no user 'nobody'"):
        teams.team_invite(team=team, inviter=author, who="nobody")
    with pytest.raises(ServiceError, match="not a member"):
        teams.team_invite(team=team, inviter=other_author, who="other_author")


def test_an_address_no_account_has_is_invited_to_sign_up_and_only_its_owner_accepts(
        challenge, author, other_author, django_user_model, client,
        django_capture_on_commit_callbacks):
    team = teams.team_create(challenge=challenge, user=author, name="Waveforms")
    with django_capture_on_commit_callbacks(execute=True):
        invitation = teams.team_invite(team=team, inviter=author, who="New.Comer@example.com")
    # The same answer as for a registered address: whether one is registered is not told.
    assert (invitation.user, invitation.email) == (None, "new.comer@example.com")
    (sent,) = mail.outbox
    assert sent.to == ["new.comer@example.com"] and "Sign up on the site" in sent.body
    with pytest.raises(ServiceError, match="already invited"):
        teams.team_invite(team=team, inviter=author, who="new.comer@example.com")
    # Someone else, even knowing the link, finds nothing to answer.
    client.force_login(other_author)
    url = f"/c/icassp/invitations/{invitation.pk}/"
    assert client.get(url).status_code == 404
    with pytest.raises(ServiceError, match="not yours"):
        teams.invitation_accept(invitation=invitation, user=other_author)
    # An account with the address, unconfirmed: still nothing.
    newcomer = django_user_model.objects.create_user("newcomer", "new.comer@example.com",
                                                     "pw-newcomer-1")
    EmailAddress.objects.create(user=newcomer, email="new.comer@example.com", verified=False,
                                primary=True)
    client.force_login(newcomer)
    assert client.get(url).status_code == 404
    # Once confirmed, the invitation is theirs.
    EmailAddress.objects.filter(user=newcomer).update(verified=True)
    assert client.get(url).status_code == 200
    assert [i.pk for i in teams.invitations_of(challenge, newcomer)] == [invitation.pk]
    teams.invitation_accept(invitation=invitation, user=newcomer)
    assert [m.user for m in teams.members(team)] == [author, newcomer]
    assert Membership.objects.get(pk=invitation.pk).user == newcomer


def test_a_track_needs_every_attestation_ticked(challenge, author):
    team = teams.team_create(challenge=challenge, user=author, name="Waveforms")
    track = Track.objects.get()
    with pytest.raises(ServiceError, match="not ticked: no human in the loop"):
        teams.track_enter(team=team, track=track, user=author, attested=ATTESTATIONS[:1])
    assert not TrackEntry.objects.exists()
    entry = teams.track_enter(team=team, track=track, user=author, attested=ATTESTATIONS)
    assert entry.attested == ATTESTATIONS
    assert AuditEvent.objects.filter(object_type="challenges.trackentry", public=True).exists()


def test_the_pages_make_a_team_invite_accept_and_enter_a_track(challenge, author,
                                                               other_author, client):
    client.force_login(author)
    assert b"You are in no team" in client.get("/c/icassp/team/").content
    made = client.post("/c/icassp/teams/new/", {"name": "Waveforms"})
    assert made.status_code == 302 and made["Location"] == "/c/icassp/team/"
    again = client.post("/c/icassp/teams/new/", {"name": "Other"})
    assert again.status_code == 409
    assert b"already in the team" in again.content
    client.post("/c/icassp/team/invite/", {"who": "other_author"})
    refused = client.post("/c/icassp/tracks/agent/enter/", {"a0": "on"})
    assert refused.status_code == 400 and b"not ticked: no human in the loop" in refused.content
    entered = client.post("/c/icassp/tracks/agent/enter/", {"a0": "on", "a1": "on"})
    assert entered.status_code == 302
    invitation = Membership.objects.get(user=other_author)
    client.force_login(other_author)
    page = client.get(f"/c/icassp/invitations/{invitation.pk}/")
    assert page.status_code == 200 and b"Join Waveforms?" in page.content
    client.post(f"/c/icassp/invitations/{invitation.pk}/", {"answer": "accept"})
    team_page = client.get("/c/icassp/team/").content.decode()
    assert "<h1>Waveforms" in team_page
    assert "<li>author</li>" in team_page and "other_author (you)" in team_page
    assert "entered" in team_page
    # An invitation of someone else's answers 404.
    client.force_login(author)
    assert client.get(f"/c/icassp/invitations/{invitation.pk}/").status_code == 404


def test_declining_an_invitation_removes_it(challenge, author, other_author, client):
    team = teams.team_create(challenge=challenge, user=author, name="Waveforms")
    invitation = teams.team_invite(team=team, inviter=author, who="other_author")
    client.force_login(other_author)
    client.post(f"/c/icassp/invitations/{invitation.pk}/", {"answer": "decline"})
    assert not Membership.objects.filter(pk=invitation.pk).exists()
    assert teams.team_of(challenge, other_author) is None
