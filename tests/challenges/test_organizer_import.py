"""A benchmark imported on the organizer pages (/c/<slug>/manage/phases/<phase>/import/,
challenges.benchmark_imports) and attached as a track's board: its metadata file and an archive
of its input audio uploaded by an organizer, imported by a task (run here as a worker runs it)
with the track's dimension filter, hidden until the reveal, its audio unpacked under
MEDIA_ROOT/benchmarks/<slug>/v1/. 404 to anyone else before the body is read; a hostile archive,
missing audio, malformed metadata, a filter no item matches or a slug taken leave nothing
behind: no benchmark, no board, no folder, no audit record, only the import's record saying
why."""

import io
import json
import stat
import tarfile
import time
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http.multipartparser import MultiPartParser
from django.test import Client
from kombu.exceptions import OperationalError

from audit.models import AuditEvent
from challenges import benchmark_imports
from challenges.models import PhaseBoard, Track
from scoring import synthetic
from scoring.models import Benchmark
from tests.challenges.challenge_factories import add_team, build_challenge
from tests.factories import board_benchmark

pytestmark = pytest.mark.django_db

SLUG = "icassp-final-single-model"
URL = "/c/icassp/manage/phases/final/import/"


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    return settings.MEDIA_ROOT


@pytest.fixture
def built(author, media_root):
    """The challenge with an Agent track ranked in both phases, and a Single Model track
    (complexity = single) with no board yet."""
    built = build_challenge(organizer=author, tracks=("agent",), final_closed=False)
    built.tracks["single"] = Track.objects.create(
        challenge=built.challenge, slug="single", name="Single Model",
        where={"complexity": ["single"]}, position=1)
    add_team(built, "Alpha")
    return built


@pytest.fixture
def final_set(tmp_path):
    """A synthetic MMAE set: its metadata, its samples and the single-complexity ones."""
    meta = synthetic.write_benchmark(tmp_path / "set", 12, seed=4)
    samples = json.loads(meta.read_text())
    single = [s for s in samples if s["complexity"] == "single"]
    assert 0 < len(single) < len(samples)  # the filter keeps some, not all
    return {"root": tmp_path / "set", "meta": meta, "samples": samples, "single": single}


class Queued(list):
    """The imports the page queued, as (task arguments, queue)."""

    def run(self) -> list[dict]:
        """Run them as the validation queue's worker would: their records after."""
        return [benchmark_imports.import_run(*args) for args, _ in self]


@pytest.fixture
def queued(monkeypatch):
    calls = Queued()
    monkeypatch.setattr(benchmark_imports.benchmark_import_run, "apply_async",
                        lambda args, queue: calls.append((args, queue)))
    return calls


def inputs_of(samples) -> list[str]:
    return [p["audio_url"] for s in samples for m in s["messages"] for p in m["content"]
            if p["type"] == "audio"]


def zip_of(root: Path, names: list[str], extra: dict | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in names:
            archive.write(root / name, name)
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return buffer.getvalue()


def wav_zip(final_set) -> bytes:
    """The set's wav/ folder, zipped."""
    root = final_set["root"]
    return zip_of(root, sorted(p.relative_to(root).as_posix()
                               for p in (root / "wav").rglob("*.wav")))


def form(built, final_set, archive: bytes, *, slug=SLUG, archive_name="final-wav.zip",
         meta: bytes | None = None, **fields) -> dict:
    return {"metadata": SimpleUploadedFile(
                "MMAE-meta.json", meta if meta is not None else final_set["meta"].read_bytes()),
            "archive": SimpleUploadedFile(archive_name, archive),
            "kind": "mmae", "track": str(built.tracks["single"].pk), "slug": slug,
            "title": "", "rubrics_hidden": "on", **fields}


def assert_nothing_stored(built, media_root, slug=SLUG):
    assert not Benchmark.objects.filter(slug=slug).exists()
    assert not PhaseBoard.objects.filter(track=built.tracks["single"]).exists()
    assert not AuditEvent.objects.exists()
    assert not (media_root / "benchmarks").exists() or \
        not any((media_root / "benchmarks").iterdir())
    # The import's own record, saying why, is the only file left.
    left = [p.relative_to(media_root).as_posix() for p in media_root.rglob("*") if p.is_file()]
    assert len(left) == 1 and left[0].startswith(f"benchmark-imports/{built.challenge.pk}/") \
        and left[0].endswith(".json"), left


def refused_with(client, built, final_set, queued, media_root, archive: bytes, *needles,
                 archive_name="final-wav.zip", **fields) -> dict:
    """Upload, run the import, and check it was refused, naming each of `needles`, with
    nothing stored."""
    client.force_login(built.organizer)
    page = client.post(URL, form(built, final_set, archive, archive_name=archive_name,
                                 **fields))
    assert page.status_code == 302
    [record] = queued.run()
    assert record["state"] == "refused", record
    text = "\n".join(record["problems"])
    for needle in needles:
        assert needle in text, text
    assert str(media_root) not in text  # named as the organizer knows the files
    shown = client.get(URL).content.decode()
    assert "refused: nothing was imported" in shown
    assert_nothing_stored(built, media_root, fields.get("slug", SLUG))
    return record


@pytest.mark.slow
def test_an_organizer_imports_a_hidden_final_board_for_the_single_model_track(
        client, built, final_set, queued, media_root):
    client.force_login(built.organizer)
    # Linked from the overview and the phase's page; hidden rubrics ticked for a final phase.
    assert URL in client.get("/c/icassp/manage/").content.decode()
    assert URL in client.get("/c/icassp/manage/phases/final/").content.decode()
    page = client.get(URL).content.decode()
    assert 'name="rubrics_hidden" id="id_rubrics_hidden" checked' in page
    assert "Single Model (complexity = single)" in page
    assert 'name="rubrics_hidden" id="id_rubrics_hidden" checked' not in \
        client.get("/c/icassp/manage/phases/dev/import/").content.decode()

    assert client.post(URL, form(built, final_set, wav_zip(final_set))).status_code == 302
    [(args, queue)] = queued
    assert queue == "validation"
    running = client.get(URL, HTTP_HX_REQUEST="true").content.decode()
    assert running.startswith('<section class="panel" id="imports" hx-get=')
    assert "queued: waiting for a worker" in running

    [record] = queued.run()
    assert record["state"] == "done", record
    benchmark = Benchmark.objects.get(slug=SLUG)
    assert benchmark.rubrics_hidden and benchmark.version == 1
    assert sorted(benchmark.items.values_list("key", flat=True)) == \
        sorted(s["id"] for s in final_set["single"])
    assert PhaseBoard.objects.get(phase=built.final, track=built.tracks["single"]).benchmark \
        == benchmark
    # Its audio root holds the track's input audio alone; the uploads are gone.
    root = media_root / "benchmarks" / SLUG / "v1"
    assert Path(benchmark.audio_root) == root.resolve()
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) \
        == sorted(inputs_of(final_set["single"]))
    assert not benchmark_imports.work_dir(built.challenge.pk, args[1]).exists()
    assert not list(media_root.rglob("MMAE-meta.json"))  # no rubric text left on disk
    # Audited: the board attached in public, the import itself for staff.
    attached = AuditEvent.objects.get(object_type="challenges.phaseboard")
    assert attached.public and attached.benchmark_slug == SLUG
    assert attached.after["rubrics_hidden"] is True
    imported = AuditEvent.objects.get(object_type="scoring.benchmark")
    assert not imported.public and imported.actor == built.organizer
    assert imported.after["where"] == {"complexity": ["single"]}
    shown = client.get(URL).content.decode()
    assert f"imported {benchmark}" in shown and f'href="/b/{SLUG}/"' in shown
    assert "hx-get" not in shown  # nothing runs: the page stops polling
    # Every track now has a board in the phase: nothing left to import into.
    assert "Every track has a board" in shown


def test_an_archive_of_the_sets_folder_is_read_from_its_top_level_folder(
        client, built, final_set, queued, media_root):
    root = final_set["root"]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(root / "wav", arcname="final-set/wav")
    client.force_login(built.organizer)
    assert client.post(URL, form(built, final_set, buffer.getvalue(),
                                 archive_name="final-set.tar.gz")).status_code == 302
    [record] = queued.run()
    assert record["state"] == "done", record
    benchmark = Benchmark.objects.get(slug=SLUG)
    assert Path(benchmark.audio_root) == (media_root / "benchmarks" / SLUG / "v1" /
                                          "final-set").resolve()
    assert all((Path(benchmark.audio_root) / m).is_file()
               for m in inputs_of(final_set["single"]))


@pytest.mark.parametrize("who", ["participant", "other_author", "anonymous"])
def test_anyone_else_gets_404_before_the_body_is_read(client, built, final_set, queued,
                                                      media_root, other_author, monkeypatch,
                                                      who):
    if who == "participant":
        client.force_login(built.members["Alpha"])
    elif who == "other_author":
        client.force_login(other_author)
    assert client.get(URL).status_code == 404

    def parse(self):
        raise AssertionError("the body was read")

    monkeypatch.setattr(MultiPartParser, "parse", parse)
    assert client.post(URL, form(built, final_set, wav_zip(final_set))).status_code == 404
    assert not queued and not list(media_root.rglob("*"))
    assert not Benchmark.objects.filter(slug=SLUG).exists()


def test_the_page_needs_the_csrf_token(built, final_set, queued, media_root):
    client = Client(enforce_csrf_checks=True)
    client.force_login(built.organizer)
    assert client.post(URL, form(built, final_set, wav_zip(final_set))).status_code == 403
    assert not queued and not list(media_root.rglob("*"))


def _symlink_tar(final_set) -> bytes:
    root = final_set["root"]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(root / "wav", arcname="wav")
        link = tarfile.TarInfo("wav/passwords.wav")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        archive.addfile(link)
    return buffer.getvalue()


def _symlink_zip(final_set) -> bytes:
    buffer = io.BytesIO(wav_zip(final_set))
    with zipfile.ZipFile(buffer, "a") as archive:
        link = zipfile.ZipInfo("wav/link.wav")
        link.create_system, link.external_attr = 3, (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, "/etc/passwd")
    return buffer.getvalue()


def _escaping_zip(final_set) -> bytes:
    buffer = io.BytesIO(wav_zip(final_set))
    with zipfile.ZipFile(buffer, "a") as archive:
        archive.writestr("wav/../../escaped.wav", b"RIFF")
    return buffer.getvalue()


@pytest.mark.parametrize("hostile, name, needles", [
    (_escaping_zip, "final-wav.zip",
     ["final-wav.zip: member 'wav/../../escaped.wav': absolute paths and '..' are not allowed"]),
    (_symlink_tar, "final-wav.tar.gz",
     ["final-wav.tar.gz: member 'wav/passwords.wav': links (symbolic or hard) are not allowed"]),
    (_symlink_zip, "final-wav.zip",
     ["final-wav.zip: member 'wav/link.wav': links (symbolic or hard) are not allowed"]),
], ids=["path-escaping", "tar-symlink", "zip-symlink"])
def test_a_hostile_archive_is_refused_by_name_and_leaves_nothing(
        client, built, final_set, queued, media_root, hostile, name, needles):
    refused_with(client, built, final_set, queued, media_root, hostile(final_set), *needles,
                 archive_name=name)
    assert not (media_root.parent / "escaped.wav").exists()


def test_too_many_members_or_bytes_are_refused(client, built, final_set, queued, media_root,
                                               settings):
    settings.CHALLENGE_BENCHMARK_MAX_FILES = 3
    refused_with(client, built, final_set, queued, media_root, wav_zip(final_set),
                 "final-wav.zip: more than 3 members (the limit)")
    queued.clear()
    for path in media_root.rglob("*.json"):
        path.unlink()
    settings.CHALLENGE_BENCHMARK_MAX_FILES = 20_000
    settings.CHALLENGE_BENCHMARK_MAX_UNPACKED_BYTES = 1000
    refused_with(client, built, final_set, queued, media_root, wav_zip(final_set),
                 "final-wav.zip: unpacks to more than 1000 bytes (the limit)")


def test_metadata_naming_audio_the_archive_lacks_leaves_nothing(client, built, final_set,
                                                                 queued, media_root):
    root = final_set["root"]
    wanted = inputs_of(final_set["single"])
    held = sorted(p.relative_to(root).as_posix() for p in (root / "wav").rglob("*.wav"))
    lacking = [n for n in held if n != wanted[0]]
    refused_with(client, built, final_set, queued, media_root, zip_of(root, lacking),
                 f"MMAE-meta.json: input audio '{wanted[0]}' is not in final-wav.zip")


def test_malformed_metadata_and_a_bucket_no_item_has_leave_nothing(
        client, built, final_set, queued, media_root):
    record = refused_with(client, built, final_set, queued, media_root, wav_zip(final_set),
                          "MMAE-meta.json", meta=b'[{"id": "x"}')
    assert record["problems"]
    queued.clear()
    for path in media_root.rglob("*.json"):
        path.unlink()
    Track.objects.filter(pk=built.tracks["single"].pk).update(
        where={"complexity": ["singel"]})
    refused_with(client, built, final_set, queued, media_root, wav_zip(final_set),
                 "MMAE-meta.json: no item has complexity = 'singel'")


def test_a_slug_taken_is_refused(client, built, final_set, queued, media_root):
    client.force_login(built.organizer)
    page = client.post(URL, form(built, final_set, wav_zip(final_set),
                                 slug="icassp-final-agent"))
    assert page.status_code == 400
    assert "icassp-final-agent is taken" in page.content.decode()
    assert not queued and not list(media_root.rglob("*"))
    # Taken between the upload and the import: refused then, nothing kept.
    assert client.post(URL, form(built, final_set, wav_zip(final_set))).status_code == 302
    board_benchmark(slug=SLUG)
    [record] = queued.run()
    assert record["state"] == "refused" and f"{SLUG} is taken" in record["problems"][0]
    assert Benchmark.objects.filter(slug=SLUG).count() == 1  # the other one
    assert not PhaseBoard.objects.filter(track=built.tracks["single"]).exists()
    assert not (media_root / "benchmarks").exists()


def test_a_board_that_cannot_be_attached_takes_the_import_back(
        client, built, final_set, queued, media_root, monkeypatch):
    """Refused (or broken) once the audio was moved: the benchmark row, its folder and the
    board go together."""
    client.force_login(built.organizer)
    assert client.post(URL, form(built, final_set, wav_zip(final_set))).status_code == 302
    # Another organizer attached a board to the track meanwhile.
    other = board_benchmark(slug="attached-meanwhile")
    PhaseBoard.objects.create(phase=built.final, track=built.tracks["single"], benchmark=other)
    [record] = queued.run()
    assert record["state"] == "refused"
    assert "Single Model has a board in Final already" in record["problems"][0]
    assert not Benchmark.objects.filter(slug=SLUG).exists()
    assert not (media_root / "benchmarks" / SLUG).exists()
    assert not AuditEvent.objects.exists()

    PhaseBoard.objects.filter(benchmark=other).delete()
    queued.clear()
    assert client.post(URL, form(built, final_set, wav_zip(final_set))).status_code == 302
    monkeypatch.setattr(benchmark_imports, "board_attach",
                        lambda **kwargs: (_ for _ in ()).throw(RuntimeError("disk on fire")))
    [record] = queued.run()
    assert record["state"] == "failed" and "failed on our side" in record["problems"][0]
    assert "disk on fire" not in json.dumps(record)
    assert not Benchmark.objects.filter(slug=SLUG).exists()
    assert not (media_root / "benchmarks" / SLUG).exists()


def test_an_upload_above_the_limit_is_refused_at_the_page(client, built, final_set, queued,
                                                          media_root, settings):
    settings.CHALLENGE_BENCHMARK_MAX_BYTES = 4096
    client.force_login(built.organizer)
    page = client.post(URL, form(built, final_set, wav_zip(final_set)))
    assert page.status_code == 400
    assert "above the limit of 4096 bytes" in page.content.decode()
    assert not queued and not list(media_root.rglob("*"))


def test_a_worker_of_the_validation_queue_imports_it(client, worker_factory, author, tmp_path,
                                                     settings):
    """The page's import through the broker to a real worker (the validation queue's alone),
    its progress on the page until it is done."""
    settings.MEDIA_ROOT = tmp_path / "media"
    start = worker_factory([9])
    built = build_challenge(organizer=author, tracks=("agent",), final_closed=False)
    built.tracks["single"] = Track.objects.create(
        challenge=built.challenge, slug="single", name="Single Model",
        where={"complexity": ["single"]}, position=1)
    meta = synthetic.write_benchmark(tmp_path / "set", 8, seed=6)
    final_set = {"root": tmp_path / "set", "meta": meta}
    client.force_login(author)
    assert client.post(URL, form(built, final_set, wav_zip(final_set))).status_code == 302
    start(queues=("SUBMISSION_VALIDATION_QUEUE",), beat=False)
    deadline = time.monotonic() + 120
    while "imported " not in (page := client.get(URL, HTTP_HX_REQUEST="true")
                              .content.decode()):
        assert "refused" not in page and "failed" not in page, page
        assert time.monotonic() < deadline, start.log_path.read_text()[-3000:]
        time.sleep(0.5)
    benchmark = Benchmark.objects.get(slug=SLUG)
    assert benchmark.rubrics_hidden
    assert PhaseBoard.objects.get(track=built.tracks["single"]).benchmark == benchmark
    singles = [s for s in json.loads(meta.read_text()) if s["complexity"] == "single"]
    assert benchmark.n_items == len(singles)
    assert all((Path(benchmark.audio_root) / m).is_file() for m in inputs_of(singles))


def test_an_import_that_cannot_be_queued_stores_nothing(client, built, final_set, media_root,
                                                        monkeypatch):
    def refuse(args, queue):
        raise OperationalError("the broker is gone")

    monkeypatch.setattr(benchmark_imports.benchmark_import_run, "apply_async", refuse)
    client.force_login(built.organizer)
    page = client.post(URL, form(built, final_set, wav_zip(final_set)))
    assert page.status_code == 400
    assert "Nothing was stored" in page.content.decode()
    assert not [p for p in media_root.rglob("*") if p.is_file()]  # no upload, no record


def test_an_import_whose_worker_died_is_started_again_from_clean(client, built, final_set,
                                                                 queued, media_root):
    client.force_login(built.organizer)
    assert client.post(URL, form(built, final_set, wav_zip(final_set))).status_code == 302
    [(args, _)] = queued
    # The worker died half-way through unpacking, moments ago: a second delivery leaves it.
    record = benchmark_imports.record_read(*args)
    half = benchmark_imports.work_dir(*args) / "audio" / "wav" / "half.wav"
    half.parent.mkdir(parents=True)
    half.write_bytes(b"RIFF")
    benchmark_imports._write(record, state="unpacking", line="unpacking: 50 of 400")
    assert benchmark_imports.import_run(*args)["state"] == "unpacking"
    assert half.exists()
    # Once stale, the next delivery cleans what it left and imports it whole.
    _stale(args)
    [record] = queued.run()
    assert record["state"] == "done", record
    root = Path(Benchmark.objects.get(slug=SLUG).audio_root)
    assert not (root / "wav" / "half.wav").exists()
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) \
        == sorted(inputs_of(final_set["single"]))


def _stale(args, **changes):
    path = benchmark_imports.record_path(*args)
    stale = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes,
                                "updated_at": stale}))


def test_a_worker_that_died_around_the_commit_is_told_apart(client, built, final_set, queued,
                                                             media_root):
    client.force_login(built.organizer)
    assert client.post(URL, form(built, final_set, wav_zip(final_set))).status_code == 302
    [(args, _)] = queued
    final = (media_root / "benchmarks" / SLUG / "v1").resolve()
    # Died after moving the audio, before the commit: the folder goes, the import runs again.
    (final / "wav").mkdir(parents=True)
    (final / "wav" / "moved.wav").write_bytes(b"RIFF")
    _stale(args, state="importing", moving_to=str(final))
    [record] = queued.run()
    assert record["state"] == "done", record
    assert not (final / "wav" / "moved.wav").exists()
    files = sorted(p for p in final.rglob("*") if p.is_file())
    assert len(files) == len(inputs_of(final_set["single"]))
    # Died after the commit, before its record said so: done, its audio left alone.
    _stale(args, state="importing")
    record = benchmark_imports.import_run(*args)
    assert record["state"] == "done" and record["benchmark"] == SLUG
    assert sorted(p for p in final.rglob("*") if p.is_file()) == files
    assert Benchmark.objects.filter(slug=SLUG).count() == 1
