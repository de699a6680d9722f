"""The signal card through the API: each output of a validated submission measured once by
the worker's task, per item and in summary, on the same access rule as the audio."""

import io
import zipfile

import jsonschema
import numpy as np
import pytest
import soundfile
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from accounts.models import ApiToken
from submissions.models import OutputSignal, Submission
from submissions.services import submission_create, submission_validate
from submissions.signals import signals_measure
from tests.leaderboard.test_api_bodies import described
from tests.scoring.test_signals import expected


@pytest.fixture
def measured(small_bench, author, settings, tmp_path):
    """A submission whose outputs are the bench's, but the first clipped and the second half
    silent, validated and measured."""
    root, samples = small_bench["root"], small_bench["samples"]
    first, second = (root / f"systems/sys/{s['id']}.wav" for s in samples[:2])
    data, rate = soundfile.read(str(first))
    soundfile.write(first, np.clip(data * 40, -1, 1), rate, subtype="PCM_16")
    data, rate = soundfile.read(str(second))
    soundfile.write(second, np.concatenate([data, np.zeros_like(data)]), rate,
                    subtype="PCM_16")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for sample in samples:
            relative = f"systems/sys/{sample['id']}.wav"
            archive.write(root / relative, relative)
    submission = submission_create(
        user=author, benchmark=small_bench["benchmark"], model_name="Signals", metadata={},
        public=False, predictions=SimpleUploadedFile("submission.jsonl", small_bench["jsonl"]),
        archive=SimpleUploadedFile("audio.zip", buffer.getvalue()))
    submission_validate(submission.id)
    submission = Submission.objects.get(pk=submission.pk)
    assert signals_measure(submission) == 6
    assert signals_measure(submission) == 0  # once: a second call measures nothing
    return submission, samples


def client_of(user):
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=user, name='t')[1]}")
    return client


def test_the_api_gives_each_output_and_a_summary(measured, author, small_bench):
    submission, samples = measured
    body = client_of(author).get(f"/api/submissions/{submission.pk}/signals/").json()
    schema = client_of(None).get("/api/schema/", HTTP_ACCEPT="application/json").json()
    jsonschema.validate(body, described(schema, "/api/submissions/{id}/signals/", 200))
    assert body["state"] == "measured" and body["outputs"] == 6
    by_item = {row["item"]: row for row in body["items"]}
    assert set(by_item) == {s["id"] for s in samples}
    for row in body["items"]:
        assert set(row) == {"item", "lufs", "true_peak_dbtp", "clipped_share", "silent_share",
                            "duration_ratio", "sample_rate", "channels"}
        path = small_bench["root"] / f"systems/sys/{row['item']}.wav"
        wanted = expected(path)
        assert row["lufs"] == pytest.approx(wanted["lufs"], abs=1e-3)
        assert row["clipped_share"] == pytest.approx(wanted["clipped_share"], abs=1e-6)
        assert row["silent_share"] == pytest.approx(wanted["silent_share"], abs=1e-6)
        assert (row["sample_rate"], row["channels"]) == (wanted["sample_rate"],
                                                        wanted["channels"])
        item = next(s for s in samples if s["id"] == row["item"])
        source = next(p["audio_url"] for m in item["messages"] for p in m["content"]
                      if p.get("type") == "audio")
        info = soundfile.info(str(small_bench["root"] / source))
        assert row["duration_ratio"] == pytest.approx(
            wanted["seconds"] / (info.frames / info.samplerate), abs=1e-5)
    clipped, half_silent = by_item[samples[0]["id"]], by_item[samples[1]["id"]]
    assert clipped["clipped_share"] > 0.1 and half_silent["silent_share"] == pytest.approx(
        0.5, abs=0.02)
    summary = body["summary"]
    assert summary["n"] == 6
    assert summary["clipping_share"] > 0 and summary["clipping_share"] == pytest.approx(
        sum(r["clipped_share"] > 0.001 for r in body["items"]) / 6, abs=1e-4)
    assert summary["max_true_peak_dbtp"] == max(r["true_peak_dbtp"] for r in body["items"])


def test_the_card_is_on_the_audios_own_rule(measured, other_author, staff):
    submission, _ = measured
    url = f"/api/submissions/{submission.pk}/signals/"
    assert client_of(None).get(url).status_code == 404  # private: no one else sees it
    assert client_of(other_author).get(url).status_code == 404
    assert client_of(staff).get(url).status_code == 200
    Submission.objects.filter(pk=submission.pk).update(public=True)
    # public but not scored: its audio is no one else's yet either
    assert client_of(other_author).get(url).status_code == 404
    assert OutputSignal.objects.filter(submission=submission).count() == 6


def test_the_explorer_shows_each_outputs_card_beside_its_player(measured, client, author):
    from tests.conftest import CAST_PASSWORD
    from tests.html import one, select

    submission, samples = measured
    assert client.login(username="author", password=CAST_PASSWORD)
    html = client.get(f"/s/{submission.pk}/").content.decode()
    card = one(html, f"#sample-{samples[0]['id']} figure.output p.signals")
    row = OutputSignal.objects.get(submission=submission, item=samples[0]["id"])
    assert f"{row.lufs:.1f} LUFS" in card.text
    assert f"{100 * row.clipped_share:.2f}".rstrip("0").rstrip(".") + "% clipped" in card.text
    assert select(html, f"#sample-{samples[0]['id']} p.signals span.warn")  # it clips
    # One not measured yet says so.
    OutputSignal.objects.filter(submission=submission, item=samples[1]["id"]).delete()
    html = client.get(f"/s/{submission.pk}/").content.decode()
    assert one(html, f"#sample-{samples[1]['id']} p.signals-pending").text \
        == "signals being measured"
