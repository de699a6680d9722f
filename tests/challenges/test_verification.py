"""Finalists' verification: organizers invite the top N of each track (or teams they name); a
member of an invited team uploads a reproducibility package, read by the uploads' safe archive
reader within CHALLENGE_PACKAGE_* limits (a hostile archive refused by the name of the member
at fault); organizers download it and decide, a disqualification with a public reason that
takes the team out of the ranking. Every step is audited."""

import io
import tarfile
import zipfile

import pytest
from django.core import mail
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from audit.models import AuditEvent
from challenges import verification as checks
from challenges.models import Verification
from challenges.official import official_ranking
from config.errors import ServiceError
from tests.challenges.challenge_factories import add_team, build_challenge, enter

pytestmark = pytest.mark.django_db


@pytest.fixture
def built(author):
    built = build_challenge(organizer=author)
    for name, single, agent in (("Alpha", 0.9, 0.1), ("Bravo", 0.8, 0.2),
                                ("Charlie", 0.7, 0.3), ("Delta", 0.6, 0.9)):
        add_team(built, name)
        enter(built, name, "final", "single", (0.5, 0.5, single))
        enter(built, name, "final", "agent", (0.5, 0.5, agent))
    return built


def zipped(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


PACKAGE = {"code/run.py": b"print('edit')\n", "environment.yml": b"name: edit\n",
           "prompts/system.txt": b"You edit audio.\n", "seeds.json": b"[1, 2, 3]\n",
           "runtimes.csv": b"item,seconds\nx,1.5\n", "tool_calls.jsonl": b"{}\n"}


def upload(client, built, team: str, data: bytes, name="package.zip"):
    verification = Verification.objects.get(phase=built.final, team=built.teams[team])
    file = io.BytesIO(data)
    file.name = name
    client.force_login(built.members[team])
    return client.post("/c/icassp/verification/", {"verification": verification.pk,
                                                    "package": file})


def test_the_top_n_of_each_track_are_invited_and_audited(
        built, author, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        made = checks.finalists_invite(phase=built.final, actor=author, top=1)
    assert sorted(m.to[0] for m in mail.outbox) == ["alpha@example.com", "delta@example.com"]
    assert "/c/icassp/verification/" in mail.outbox[0].body
    assert "is invited to the reproducibility check" in mail.outbox[0].subject
    assert sorted(v.team.name for v in made) == ["Alpha", "Delta"]  # single's 1st, agent's 1st
    assert {v.state for v in made} == {Verification.State.AWAITED}
    assert AuditEvent.objects.filter(action="challenge", object_type="challenges.verification",
                                     actor=author).count() == 2
    again = checks.finalists_invite(phase=built.final, actor=author, top=2)
    assert sorted(v.team.name for v in again) == ["Bravo", "Charlie"]  # the others kept
    with pytest.raises(ServiceError, match="development phase"):
        checks.finalists_invite(phase=built.development, actor=author)


def test_organizers_invite_through_their_page(client, built, author):
    client.force_login(author)
    page = client.get("/c/icassp/manage/phases/final/verification/").content.decode()
    assert '<td class="num">0.90</td>' in page  # the hidden board's figures, to organizers
    page = client.post("/c/icassp/manage/phases/final/verification/",
                       {"teams": [built.teams["Charlie"].pk]})
    assert page.status_code == 302
    assert list(Verification.objects.values_list("team__name", flat=True)) == ["Charlie"]


def test_a_member_uploads_a_package_the_organizers_download_it(client, built, author,
                                                               other_author):
    checks.finalists_invite(phase=built.final, actor=author, top=1)
    data = zipped(PACKAGE)
    assert upload(client, built, "Alpha", data).status_code == 302
    verification = Verification.objects.get(team=built.teams["Alpha"])
    assert verification.state == Verification.State.SUBMITTED
    assert sorted(name for name, _ in verification.package_files) == sorted(PACKAGE)
    assert AuditEvent.objects.filter(object_type="challenges.verification",
                                     actor=built.members["Alpha"]).exists()
    url = f"/c/icassp/manage/verification/{verification.pk}/package/"
    assert client.get(url).status_code == 404  # the finalist is no organizer
    client.force_login(other_author)
    assert client.get(url).status_code == 404
    assert client.get("/c/icassp/verification/").status_code == 404  # not a finalist
    client.force_login(author)
    download = client.get(url)
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == data
    # A team that was not invited has no page; another team's check cannot be posted to.
    client.force_login(built.members["Bravo"])
    assert client.get("/c/icassp/verification/").status_code == 404


def test_a_package_over_the_limits_is_refused(client, built, author, settings):
    checks.finalists_invite(phase=built.final, actor=author, top=1)
    settings.CHALLENGE_PACKAGE_MAX_FILES = 3
    page = upload(client, built, "Alpha", zipped(PACKAGE))
    assert page.status_code == 400
    assert "more than 3 members (the limit)" in page.content.decode()
    settings.CHALLENGE_PACKAGE_MAX_FILES = 100
    settings.CHALLENGE_PACKAGE_MAX_UNPACKED_BYTES = 1000
    page = upload(client, built, "Alpha", zipped({"big.bin": b"\0" * 5000}))
    assert "unpacks to more than 1000 bytes (the limit)" in page.content.decode()
    settings.CHALLENGE_PACKAGE_MAX_BYTES = 100
    # The page stops reading the upload at the limit; the service checks the size itself.
    page = upload(client, built, "Alpha", zipped(PACKAGE))
    assert "package.zip: above the limit of 100 bytes" in page.content.decode()
    verification = Verification.objects.get(team=built.teams["Alpha"])
    data = zipped(PACKAGE)
    with pytest.raises(ServiceError, match=f"p.zip: {len(data)} bytes, above the limit of 100"):
        checks.package_upload(verification=verification, user=built.members["Alpha"],
                              upload=SimpleUploadedFile("p.zip", data))
    assert Verification.objects.get(team=built.teams["Alpha"]).state == "awaited"


def _tar_with_link() -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        info = tarfile.TarInfo("code/run.py")
        info.size = 3
        archive.addfile(info, io.BytesIO(b"abc"))
        link = tarfile.TarInfo("secrets")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        archive.addfile(link)
    return out.getvalue()


@pytest.mark.parametrize("data, name, refusal", [
    (zipped({"code/run.py": b"x", "../../evil.sh": b"rm -rf /"}), "package.zip",
     "member '../../evil.sh': absolute paths and '..' are not allowed"),
    (_tar_with_link(), "package.tar.gz",
     "member 'secrets': links (symbolic or hard) are not allowed"),
    (b"just some text, no archive", "package.zip", "not a .zip or .tar.gz archive"),
])
def test_a_hostile_archive_is_refused_by_name(client, built, author, data, name, refusal):
    checks.finalists_invite(phase=built.final, actor=author, top=1)
    page = upload(client, built, "Alpha", data, name=name)
    assert page.status_code == 400
    assert refusal in page.content.decode().replace("&#x27;", "'")
    assert Verification.objects.get(team=built.teams["Alpha"]).package == ""


def test_a_member_whose_bytes_exceed_its_header_is_refused(tmp_path):
    data = bytearray(zipped({"model.bin": b"\1" * 4000}))
    # The central directory and local header declare 40 bytes; the stream holds 4000.
    good = zipfile.ZipFile(io.BytesIO(bytes(data))).getinfo("model.bin")
    declared = (4000).to_bytes(4, "little")
    assert data.count(declared) == 2 and good.file_size == 4000
    data = data.replace(declared, (40).to_bytes(4, "little"))
    path = tmp_path / "lying.zip"
    path.write_bytes(bytes(data))
    # zipfile stops at the declared size and finds the CRC wrong; either way it is refused.
    with pytest.raises(ServiceError, match=r"lying.zip: (damaged archive|member 'model.bin' "
                                           r"unpacks to more than the 40 bytes)"):
        checks.package_read(path, "lying.zip")


def test_decisions_are_audited_and_a_disqualification_is_public(client, built, author):
    checks.finalists_invite(phase=built.final, actor=author, top=1)
    alpha = Verification.objects.get(team=built.teams["Alpha"])
    client.force_login(author)
    url = f"/c/icassp/manage/verification/{alpha.pk}/decide/"
    refused = client.post(url, {"state": "disqualified", "reason": ""})
    assert refused.status_code == 400 and "needs a reason" in refused.content.decode()
    assert client.post(url, {"state": "disqualified",
                             "reason": "the code does not run"}).status_code == 302
    alpha.refresh_from_db()
    assert (alpha.state, alpha.reason, alpha.decided_by) == ("disqualified",
                                                             "the code does not run", author)
    public = AuditEvent.objects.filter(object_type="challenges.verification", public=True)
    assert sorted(public.values_list("benchmark_slug", flat=True)) == [
        "icassp-final-agent", "icassp-final-single"]
    ranking = official_ranking(built.board("final", "single"))
    assert [r.team for r in ranking.disqualified] == ["Alpha"]
    assert "Alpha" not in [r.team for r in ranking.ranked]
    # Decided: the package can no longer change.
    client.force_login(built.members["Alpha"])
    page = upload(client, built, "Alpha", zipped(PACKAGE))
    assert page.status_code == 400 and "can no longer be changed" in page.content.decode()
    delta = Verification.objects.get(team=built.teams["Delta"])
    client.force_login(author)
    client.post(f"/c/icassp/manage/verification/{delta.pk}/decide/", {"state": "verified"})
    assert Verification.objects.get(pk=delta.pk).state == "verified"
    assert not AuditEvent.objects.filter(object_id=str(delta.pk), public=True,
                                         object_type="challenges.verification").exists()


def test_the_package_page_checks_csrf(built, author):
    checks.finalists_invite(phase=built.final, actor=author, top=1)
    client = Client(enforce_csrf_checks=True)
    page = upload(client, built, "Alpha", zipped(PACKAGE))
    assert page.status_code == 403
    assert Verification.objects.get(team=built.teams["Alpha"]).package == ""
