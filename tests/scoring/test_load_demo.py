"""`manage.py load_demo`: the demo's clips are long enough for every segment its rubrics name
(a rubric about output[1.0s:2.5s] of a 0.5 s clip read as a scoring bug)."""

import json
import re
import zipfile

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
