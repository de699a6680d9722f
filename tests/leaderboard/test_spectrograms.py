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
from PIL import Image

from scoring import spectrogram_store
from scoring.services import benchmark_import
from scoring.spectrograms import BOTTOM, HEIGHT, LEFT, WIDTH
from scoring.tasks import draw_input_spectrograms
from submissions.models import Submission
from submissions.services import draw_output_spectrograms, spectrograms_folder
from tests.html import select
from tests.scoring.test_media import bucket  # noqa: F401  (the S3 bucket, moto in process)


@pytest.fixture
def edited(served, settings, tmp_path):
    """The audio page's public finished submission (tests/leaderboard/conftest.py), its first
    output made its first input with the middle third replaced by another tone, and its
    second output longer than its input."""
    settings.MEDIA_ROOT = tmp_path / "media"
    submission, run, root = served["submission"], served["run"], served["root"]
    benchmark = submission.benchmark
    first, second = served["samples"][0]["id"], served["samples"][1]["id"]
    source, rate = soundfile.read(root / benchmark.items.get(key=first).media[0])
    third = len(source) // 3
    t = np.arange(len(source)) / rate
    edit = source.copy()
    edit[third:2 * third] = 0.4 * np.sin(2 * np.pi * 3000 * t[third:2 * third])
    soundfile.write(root / run.outputs[first], edit, rate)
    soundfile.write(root / run.outputs[second], np.zeros(len(source) * 2), rate)
    return {"submission": submission, "benchmark": benchmark, "run": run, "first": first,
            "second": second, "samples": served["samples"],
            "base": f"/s/{submission.pk}/spectrogram/{first}"}


def draw(edited):
    draw_input_spectrograms.apply((edited["benchmark"].pk,))
    draw_output_spectrograms.apply((edited["submission"].pk,))


def image(response) -> np.ndarray:
    png = b"".join(response.streaming_content)
    return np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=np.float64)


def _status(client, user, url):
    client.logout()
    if user is not None:
        client.force_login(user)
    return client.get(url).status_code


@pytest.mark.slow
def test_drawn_images_are_pngs_with_the_audios_cache_headers(client, edited):
    draw(edited)
    for which in ("output", "diff", "input1"):
        response = client.get(f"{edited['base']}/{which}.png")
        assert response.status_code == 200, which
        assert response["Content-Type"] == "image/png"
        assert response["Cache-Control"] == "private, max-age=3600"
        assert "Last-Modified" in response
        assert image(response).shape == (HEIGHT + BOTTOM, LEFT + WIDTH)


@pytest.mark.slow
def test_images_are_stored_beside_the_audio(edited):
    draw(edited)
    folder = spectrograms_folder(edited["submission"])
    assert folder.parent.name == str(edited["submission"].pk)
    assert (folder / edited["first"] / "output.png").is_file()
    inputs = spectrogram_store.inputs_folder(edited["benchmark"])
    assert (inputs / edited["first"] / "input1.png").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("which", ["output", "diff", "input1"])
def test_a_private_submissions_images_are_a_404_except_for_its_owner_and_staff(
        client, edited, which, author, other_author, staff):
    draw(edited)
    Submission.objects.filter(pk=edited["submission"].pk).update(public=False)
    url = f"{edited['base']}/{which}.png"
    assert _status(client, None, url) == 404
    assert _status(client, other_author, url) == 404
    assert _status(client, author, url) == 200
    assert _status(client, staff, url) == 200


@pytest.mark.slow
def test_a_public_submissions_images_are_edited_to_anyone(client, edited, other_author):
    draw(edited)
    url = f"{edited['base']}/output.png"
    assert _status(client, None, url) == 200
    assert _status(client, other_author, url) == 200


def test_an_image_not_drawn_yet_is_a_404(client, edited):
    assert client.get(f"{edited['base']}/output.png").status_code == 404
    assert client.get(f"{edited['base']}/input1.png").status_code == 404


@pytest.mark.slow
@pytest.mark.parametrize("which", ["outputs", "input0", "diff2", "INPUT1", "..%2Foutput"])
def test_a_bad_which_or_item_is_a_404(client, edited, which):
    draw(edited)
    assert client.get(f"{edited['base']}/{which}.png").status_code == 404
    assert client.get(f"/s/{edited['submission'].pk}/spectrogram/{'0' * 24}/output.png") \
        .status_code == 404


@pytest.mark.slow
def test_the_difference_is_drawn_only_for_an_output_as_long_as_its_input(client, edited):
    draw(edited)
    second = f"/s/{edited['submission'].pk}/spectrogram/{edited['second']}"
    assert client.get(f"{second}/output.png").status_code == 200
    assert client.get(f"{second}/diff.png").status_code == 404
    drawn = spectrogram_store.drawn(spectrograms_folder(edited["submission"]))
    assert drawn[edited["first"]] == {"diff": True}
    assert drawn[edited["second"]] == {"diff": False}


@pytest.mark.slow
def test_the_difference_is_brightest_where_the_edit_happened(client, edited):
    draw(edited)
    grey = image(client.get(f"{edited['base']}/diff.png"))[:HEIGHT, LEFT:LEFT + WIDTH]
    third, margin = WIDTH // 3, 12
    middle = grey[:, third + margin:2 * third - margin].mean()
    rest = np.concatenate([grey[:, :third - margin], grey[:, 2 * third + margin:]], axis=1)
    assert middle > 3 * rest.mean()


@pytest.mark.slow
def test_drawing_is_idempotent_and_resumes_where_it_stopped(edited):
    draw(edited)
    folder = spectrograms_folder(edited["submission"])
    stamps = {p: p.stat().st_mtime_ns for p in folder.rglob("*.png")}
    assert len(stamps) == 2 * len(edited["run"].outputs) - 1  # all but one has a difference
    draw(edited)
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("*.png")} == stamps
    # a drawing cut short: no manifest yet, one image missing
    (folder / spectrogram_store.MANIFEST).unlink()
    lost = folder / edited["first"] / "output.png"
    lost.unlink()
    (folder / edited["first"] / "diff.png").unlink()
    run = edited["run"]
    assert spectrogram_store.draw_outputs(run=run, benchmark=edited["benchmark"],
                                          folder=folder) == 1
    assert lost.is_file()
    kept = {p: p.stat().st_mtime_ns for p in folder.rglob("*.png")
            if p.parent.name != edited["first"]}
    assert kept == {p: t for p, t in stamps.items() if p.parent.name != edited["first"]}
    assert json.loads((folder / spectrogram_store.MANIFEST).read_text())[edited["first"]] \
        == {"diff": True}


@pytest.mark.slow
def test_the_page_shows_each_image_beside_its_player(client, edited):
    page = client.get(f"/s/{edited['submission'].pk}/").content.decode()
    assert "spectrogram being drawn" in page
    assert select(page, "img[class=spectrogram]") == []
    draw(edited)
    page = client.get(f"/s/{edited['submission'].pk}/").content.decode()
    assert "spectrogram being drawn" not in page
    for which in ("output", "diff", "input1"):
        assert select(page, f'img.spectrogram[src="{edited["base"]}/{which}.png"]')
    assert len(select(page, "img[loading=lazy]")) >= 2 * len(edited["samples"])
    assert select(page, f'img.spectrogram[alt^="spectrogram of output of {edited["first"]}"]')
    second = f"/s/{edited['submission'].pk}/spectrogram/{edited['second']}"
    assert select(page, f'img.spectrogram[src="{second}/output.png"]')
    assert select(page, f'[src="{second}/diff.png"]') == []


def test_an_import_queues_the_drawing_of_its_inputs(
        db, demo_set, settings, tmp_path, monkeypatch):
    queued = []
    monkeypatch.setattr(draw_input_spectrograms, "delay", lambda pk: queued.append(pk))
    settings.MEDIA_ROOT = tmp_path / "media"
    benchmark, _ = benchmark_import(kind="mmae", path=demo_set["meta"],
                                    audio_root=demo_set["root"], slug="mmae")
    assert queued == [benchmark.pk]


@pytest.mark.slow
def test_with_a_bucket_the_images_are_kept_there_and_edited_by_a_machine_without_them(
        client, edited, bucket, settings):  # noqa: F811
    draw(edited)
    pk, first = edited["submission"].pk, edited["first"]
    assert bucket.exists(f"submissions/{pk}/spectrograms/{first}/output.png")
    assert bucket.exists(f"benchmarks/{edited['benchmark'].pk}/spectrograms/{first}/input1.png")
    shutil.rmtree(settings.MEDIA_ROOT, ignore_errors=True)  # the web machine: nothing here
    assert select(client.get(f"/s/{pk}/"), f'img.spectrogram[src="{edited["base"]}/diff.png"]')
    for which in ("output", "diff", "input1"):
        response = client.get(f"{edited['base']}/{which}.png")
        assert response.status_code == 200 and image(response).shape[1] == LEFT + WIDTH


@pytest.mark.slow
def test_the_command_draws_what_no_worker_drew_and_then_nothing(client, edited):
    inputs = sum(len(m) for m in edited["benchmark"].items.values_list("media", flat=True))
    out = io.StringIO()
    call_command("draw_spectrograms", stdout=out)
    assert out.getvalue().strip() == \
        f"drawn: {inputs} input and {len(edited['run'].outputs)} output spectrogram(s)"
    assert client.get(f"{edited['base']}/diff.png").status_code == 200
    out = io.StringIO()
    call_command("draw_spectrograms", stdout=out)
    assert out.getvalue().strip() == "drawn: 0 input and 0 output spectrogram(s)"


@pytest.mark.slow
def test_the_item_page_shows_each_sides_images_once_drawn(client, edited):
    """Where outputs are compared (the item page, and compare-items through the same
    template): the inputs' images under their players, each side's output and its
    difference from the input, once drawn; nothing (no broken image) before."""
    from scoring.boards import board_changed
    from scoring.models import SliceResult

    # On the board: a row has its overall slice.
    SliceResult.objects.create(run=edited["run"], dimension="overall", bucket="",
                               n=len(edited["samples"]),
                               values={"IFR": 50.0, "CR": 60.0, "EMR": 10.0})
    board_changed(edited["benchmark"].pk)
    url = f"/b/mmae/i/{edited['first']}/"
    page = client.get(url).content.decode()
    assert select(page, "audio") and select(page, "img.spectrogram") == []
    draw(edited)
    board_changed(edited["benchmark"].pk)  # the page is kept per board state
    page = client.get(url).content.decode()
    side = f'section[data-side="{edited["submission"].model_id}"]'
    for which in ("output", "diff"):
        assert select(page, f'{side} img.spectrogram[src="{edited["base"]}/{which}.png"]'), \
            which
    assert select(page, f'.players img.spectrogram[src="{edited["base"]}/input1.png"]')
    second = client.get(f"/b/mmae/i/{edited['second']}/").content.decode()
    base = f"/s/{edited['submission'].pk}/spectrogram/{edited['second']}"
    assert select(second, f'img.spectrogram[src="{base}/output.png"]')
    assert select(second, f'[src="{base}/diff.png"]') == []  # longer than its input
