"""`manage.py load_demo`: the demo's clips are long enough for every segment its rubrics name
(a rubric about output[1.0s:2.5s] of a 0.5 s clip read as a scoring bug)."""

import json
import re
import zipfile

import pytest
import soundfile
from django.core.management import call_command

from scoring.management.commands.load_demo import DEMO_SECONDS

SPAN = re.compile(r"<audio (\w+)\[(-?[\d.]*)s?:(-?[\d.]*)s?\]>")


def test_every_segment_a_demo_rubric_names_lies_inside_its_clip(db, tmp_path):
    call_command("load_demo", "--root", str(tmp_path), "--samples", "12", "--slug", "demo-x")
    samples = json.loads((tmp_path / "MMAE-meta.json").read_text())
    spans = [m.groups() for s in samples for r in s["rubrics"]
             for m in SPAN.finditer(r["question"])]
    assert spans  # the rubrics do name segments
    for _, start, end in spans:
        for bound in (start, end):
            assert not bound or abs(float(bound)) <= DEMO_SECONDS, (start, end)
    inputs = {part["audio_url"] for s in samples for message in s["messages"]
              for part in message["content"] if part["type"] == "audio"}
    assert {round(soundfile.info(tmp_path / path).duration, 3) for path in inputs} == {
        DEMO_SECONDS}
    with zipfile.ZipFile(tmp_path / "uploads" / "demo-system-a.zip") as archive:
        wavs = [n for n in archive.namelist() if n.endswith(".wav")]
        assert wavs
        with archive.open(wavs[0]) as first:
            assert round(soundfile.info(first).duration, 3) == DEMO_SECONDS


@pytest.mark.slow
def test_the_demo_has_both_air_bench_tracks_with_predictions_that_pass_their_checks(
        db, tmp_path, client):
    """The header promises AIR-Bench: the demo imports both tracks (every foundation task,
    every chat category) with audio where the real layout puts it, and two predictions files
    each that the upload's own checks take whole."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from scoring.kinds.airbench import rules as airbench
    from scoring.models import Benchmark
    from submissions.services import upload_file_problems

    call_command("load_demo", "--root", str(tmp_path), "--samples", "6")
    foundation = Benchmark.objects.get(slug="airbench-foundation-demo")
    chat = Benchmark.objects.get(slug="airbench-chat-demo")
    assert foundation.synthetic and chat.synthetic
    assert "synthetic" in foundation.title and "synthetic" in chat.title
    assert foundation.items.count() == 3 * len(airbench.TASKS)
    assert chat.items.count() == 3 * len(airbench.CHAT_CATEGORIES)
    tasks = {item.dimensions["task"] for item in foundation.items.all()}
    assert len(tasks) == len(airbench.TASKS)
    for benchmark in (foundation, chat):
        for item in benchmark.items.all()[:5]:
            assert soundfile.info(tmp_path / "airbench" / item.media[0]).duration > 1
        for system in ("a", "b"):
            path = tmp_path / "uploads" / f"{benchmark.kind}-demo-system-{system}.jsonl"
            lines = path.read_text().splitlines()
            assert len(lines) == benchmark.items.count()
            upload = SimpleUploadedFile(path.name, path.read_bytes())
            assert upload_file_problems(benchmark=benchmark, predictions=upload, archive=None,
                                        options={}) == {}
    # Some responses are sentences the official letter rule cannot read, as real ones are.
    responses = [json.loads(line)["response"] for line in (
        tmp_path / "uploads" / "airbench-foundation-demo-system-b.jsonl").read_text()
        .splitlines()]
    assert any(len(r) == 1 for r in responses) and any(len(r) > 3 for r in responses)
    call_command("load_demo", "--root", str(tmp_path), "--samples", "6")  # idempotent
    assert Benchmark.objects.filter(slug__endswith="-demo").count() == 3
    # The site still opens on the MMAE demo, imported first.
    assert client.get("/")["Location"] == "/b/mmae-demo/"
    assert "AIR-Bench chat demo" in client.get("/b/mmae-demo/").content.decode()
