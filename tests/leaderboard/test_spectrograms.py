"""Spectrograms beside a submission's players: drawn once by a task, stored beside the audio,
served under the submission's address through the same access check as its audio, shown on
its page."""

import io
import json
import shutil

import numpy as np
import pytest
import soundfile
from django.core.management import call_command
from django.utils import timezone
from PIL import Image

from scoring import spectrogram_store
from scoring.kinds.mmae.predictions import load_predictions
from scoring.models import ScoringRun
from scoring.services import benchmark_import
from scoring.spectrograms import HEIGHT, LEFT, WIDTH
from scoring.tasks import draw_input_spectrograms
from submissions.models import ModelEntry, Submission
from submissions.services import draw_output_spectrograms, spectrograms_folder
from tests.conftest import judge_config
from tests.scoring.test_media import bucket  # noqa: F401  (the S3 bucket, moto in process)


@pytest.fixture
def served(demo_set, author, settings, tmp_path):
    """A public finished submission of system A (2 samples without output); its first
    output is its first input with the middle third replaced by another tone, and its
    second output is longer than its input."""
    settings.MEDIA_ROOT = tmp_path / "media"
    benchmark, _ = benchmark_import(kind="mmae", path=demo_set["meta"],
                                    audio_root=demo_set["root"], slug="mmae")
    samples = demo_set["samples"]
    outputs = {p.sample_id: p.audio_path for p in load_predictions(
        demo_set["predictions"], known_ids={s["id"] for s in samples})}
    first, second = samples[0]["id"], samples[1]["id"]
    source, rate = soundfile.read(demo_set["root"] / benchmark.items.get(key=first).media[0])
    third = len(source) // 3
    t = np.arange(len(source)) / rate
    edit = source.copy()
    edit[third:2 * third] = 0.4 * np.sin(2 * np.pi * 3000 * t[third:2 * third])
    soundfile.write(demo_set["root"] / outputs[first], edit, rate)
    soundfile.write(demo_set["root"] / outputs[second], np.zeros(len(source) * 2), rate)
    run = ScoringRun.objects.create(
        benchmark=benchmark, judge_config=judge_config(["http://127.0.0.1:9"],
                                                       benchmark=benchmark),
        audio_root=str(demo_set["root"]), outputs=outputs,
        missing={s["id"]: "no prediction" for s in samples if s["id"] not in outputs},
        judge_model="Qwen3-Omni-30B-A3B-Instruct", prompt_sha256="p" * 64, rounds=3,
        max_attempts=5, status="finished", status_times={"finished": timezone.now().isoformat()})
    model = ModelEntry.objects.create(owner=author, name="Echo Editor")
    submission = Submission.objects.create(owner=author, model=model, benchmark=benchmark,
                                           public=True, status="queued", current_run=run,
                                           coverage=12 / 14)
    base = f"/s/{submission.pk}/spectrogram/{first}"
    return {"submission": submission, "benchmark": benchmark, "run": run, "first": first,
            "second": second, "samples": samples, "base": base}


def draw(served):
    draw_input_spectrograms.apply((served["benchmark"].pk,))
    draw_output_spectrograms.apply((served["submission"].pk,))


def image(response) -> np.ndarray:
    png = b"".join(response.streaming_content)
    return np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=np.float64)


def _status(client, user, url):
    client.logout()
    if user is not None:
        client.force_login(user)
    return client.get(url).status_code


def test_drawn_images_are_pngs_with_the_audios_cache_headers(client, served):
    draw(served)
    for which in ("output", "diff", "input1"):
        response = client.get(f"{served['base']}/{which}.png")
        assert response.status_code == 200, which
        assert response["Content-Type"] == "image/png"
        assert response["Cache-Control"] == "private, max-age=3600"
        assert "Last-Modified" in response
        assert image(response).shape == (HEIGHT + 14, LEFT + WIDTH)


def test_images_are_stored_beside_the_audio(served):
    draw(served)
    folder = spectrograms_folder(served["submission"])
    assert folder.parent.name == str(served["submission"].pk)
    assert (folder / served["first"] / "output.png").is_file()
    inputs = spectrogram_store.inputs_folder(served["benchmark"])
    assert (inputs / served["first"] / "input1.png").is_file()


@pytest.mark.parametrize("which", ["output", "diff", "input1"])
def test_a_private_submissions_images_are_a_404_except_for_its_owner_and_staff(
        client, served, which, author, other_author, staff):
    draw(served)
    Submission.objects.filter(pk=served["submission"].pk).update(public=False)
    url = f"{served['base']}/{which}.png"
    assert _status(client, None, url) == 404
    assert _status(client, other_author, url) == 404
    assert _status(client, author, url) == 200
    assert _status(client, staff, url) == 200


def test_a_public_submissions_images_are_served_to_anyone(client, served, other_author):
    draw(served)
    url = f"{served['base']}/output.png"
    assert _status(client, None, url) == 200
    assert _status(client, other_author, url) == 200


def test_an_image_not_drawn_yet_is_a_404(client, served):
    assert client.get(f"{served['base']}/output.png").status_code == 404
    assert client.get(f"{served['base']}/input1.png").status_code == 404


@pytest.mark.parametrize("which", ["outputs", "input0", "diff2", "INPUT1", "..%2Foutput"])
def test_a_bad_which_or_item_is_a_404(client, served, which):
    draw(served)
    assert client.get(f"{served['base']}/{which}.png").status_code == 404
    assert client.get(f"/s/{served['submission'].pk}/spectrogram/{'0' * 24}/output.png") \
        .status_code == 404


def test_the_difference_is_drawn_only_for_an_output_as_long_as_its_input(client, served):
    draw(served)
    second = f"/s/{served['submission'].pk}/spectrogram/{served['second']}"
    assert client.get(f"{second}/output.png").status_code == 200
    assert client.get(f"{second}/diff.png").status_code == 404
    drawn = spectrogram_store.drawn(spectrograms_folder(served["submission"]))
    assert drawn[served["first"]] == {"diff": True}
    assert drawn[served["second"]] == {"diff": False}


def test_the_difference_is_brightest_where_the_edit_happened(client, served):
    draw(served)
    grey = image(client.get(f"{served['base']}/diff.png"))[:HEIGHT, LEFT:LEFT + WIDTH]
    third, margin = WIDTH // 3, 12
    middle = grey[:, third + margin:2 * third - margin].mean()
    rest = np.concatenate([grey[:, :third - margin], grey[:, 2 * third + margin:]], axis=1)
    assert middle > 3 * rest.mean()


def test_drawing_is_idempotent_and_resumes_where_it_stopped(served):
    draw(served)
    folder = spectrograms_folder(served["submission"])
    stamps = {p: p.stat().st_mtime_ns for p in folder.rglob("*.png")}
    assert len(stamps) == 2 * len(served["run"].outputs) - 1  # all but one has a difference
    draw(served)
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("*.png")} == stamps
    # a drawing cut short: no manifest yet, one image missing
    (folder / spectrogram_store.MANIFEST).unlink()
    lost = folder / served["first"] / "output.png"
    lost.unlink()
    (folder / served["first"] / "diff.png").unlink()
    run = served["run"]
    assert spectrogram_store.draw_outputs(run=run, benchmark=served["benchmark"],
                                          folder=folder) == 1
    assert lost.is_file()
    kept = {p: p.stat().st_mtime_ns for p in folder.rglob("*.png")
            if p.parent.name != served["first"]}
    assert kept == {p: t for p, t in stamps.items() if p.parent.name != served["first"]}
    assert json.loads((folder / spectrogram_store.MANIFEST).read_text())[served["first"]] \
        == {"diff": True}


def test_the_page_shows_each_image_beside_its_player(client, served):
    page = client.get(f"/s/{served['submission'].pk}/").content.decode()
    assert "spectrogram being drawn" in page
    assert 'class="spectrogram"' not in page
    draw(served)
    page = client.get(f"/s/{served['submission'].pk}/").content.decode()
    assert "spectrogram being drawn" not in page
    for which in ("output", "diff", "input1"):
        assert f'src="{served["base"]}/{which}.png"' in page
    assert page.count('loading="lazy"') >= 2 * len(served["samples"])
    assert f"spectrogram of output of {served['first']}" in page
    second = f"/s/{served['submission'].pk}/spectrogram/{served['second']}"
    assert f'src="{second}/output.png"' in page and f'src="{second}/diff.png"' not in page


def test_an_import_queues_the_drawing_of_its_inputs(
        db, demo_set, settings, tmp_path, monkeypatch):
    queued = []
    monkeypatch.setattr(draw_input_spectrograms, "delay", lambda pk: queued.append(pk))
    settings.MEDIA_ROOT = tmp_path / "media"
    benchmark, _ = benchmark_import(kind="mmae", path=demo_set["meta"],
                                    audio_root=demo_set["root"], slug="mmae")
    assert queued == [benchmark.pk]


def test_with_a_bucket_the_images_are_kept_there_and_served_by_a_machine_without_them(
        client, served, bucket, settings):  # noqa: F811
    draw(served)
    pk, first = served["submission"].pk, served["first"]
    assert bucket.exists(f"submissions/{pk}/spectrograms/{first}/output.png")
    assert bucket.exists(f"benchmarks/{served['benchmark'].pk}/spectrograms/{first}/input1.png")
    shutil.rmtree(settings.MEDIA_ROOT, ignore_errors=True)  # the web machine: nothing here
    assert f'src="{served["base"]}/diff.png"' in client.get(f"/s/{pk}/").content.decode()
    for which in ("output", "diff", "input1"):
        response = client.get(f"{served['base']}/{which}.png")
        assert response.status_code == 200 and image(response).shape[1] == LEFT + WIDTH


def test_the_command_draws_what_no_worker_drew_and_then_nothing(client, served):
    inputs = sum(len(m) for m in served["benchmark"].items.values_list("media", flat=True))
    out = io.StringIO()
    call_command("draw_spectrograms", stdout=out)
    assert out.getvalue().strip() == \
        f"drawn: {inputs} input and {len(served['run'].outputs)} output spectrogram(s)"
    assert client.get(f"{served['base']}/diff.png").status_code == 200
    out = io.StringIO()
    call_command("draw_spectrograms", stdout=out)
    assert out.getvalue().strip() == "drawn: 0 input and 0 output spectrogram(s)"
