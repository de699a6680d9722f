"""The organizers' commands: `challenge_create`, `organizer` (grant and --remove) and
`finalists`, each through the same services as the pages, audited."""

import pytest
from django.core.management import CommandError, call_command

from audit.models import AuditEvent
from challenges.models import Challenge, Organizer, Verification
from tests.challenges.challenge_factories import add_team, build_challenge, enter

pytestmark = pytest.mark.django_db


def test_create_a_challenge_and_grant_and_remove_an_organizer(author, capsys):
    call_command("challenge_create", "aec", "--title", "Audio Editing Challenge",
                 "--time-zone", "America/Los_Angeles")
    assert Challenge.objects.get(slug="aec").time_zone == "America/Los_Angeles"
    with pytest.raises(CommandError, match="exists already"):
        call_command("challenge_create", "aec", "--title", "Again")
    with pytest.raises(CommandError, match="no IANA time zone"):
        call_command("challenge_create", "other", "--title", "X", "--time-zone", "Nowhere")
    call_command("organizer", "aec", "author@example.com")
    assert Organizer.objects.filter(challenge__slug="aec", user=author).exists()
    with pytest.raises(CommandError, match="organizes"):
        call_command("organizer", "aec", "author")
    call_command("organizer", "aec", "author", "--remove")
    assert not Organizer.objects.exists()
    assert "no longer organizes" in capsys.readouterr().out
    assert list(AuditEvent.objects.order_by("id").values_list("reason", flat=True)) == [
        "challenge created", "organizer role granted", "organizer role removed"]


def test_invite_the_finalists(author, capsys):
    built = build_challenge(organizer=author, tracks=("single",))
    for name, emr in (("Alpha", 0.9), ("Bravo", 0.5), ("Charlie", 0.2)):
        add_team(built, name)
        enter(built, name, "final", "single", (0.5, 0.5, emr))
    call_command("finalists", "icassp", "--top", "2")
    assert sorted(Verification.objects.values_list("team__name", flat=True)) == [
        "Alpha", "Bravo"]
    call_command("finalists", "icassp", "--team", "Charlie")
    assert "invited Charlie" in capsys.readouterr().out
    with pytest.raises(CommandError, match="no team named Zulu"):
        call_command("finalists", "icassp", "--team", "Zulu")
    with pytest.raises(CommandError, match="development phase"):
        call_command("finalists", "icassp", "--phase", "dev")
