"""A submission's spectrograms are drawn by their own task, queued when validation passes."""

import io
import zipfile

from scoring import spectrogram_store
from submissions import services
from submissions.models import Submission
from submissions.services import spectrograms_folder, submission_validate


def test_validation_queues_the_drawing_which_stores_every_outputs_images(
        make_submission, author, small_bench, monkeypatch):
    queued = []
    monkeypatch.setattr(services.draw_output_spectrograms, "delay", queued.append)
    submission = make_submission(author)
    assert submission_validate(submission.id) is True
    assert queued == [submission.id]
    services.draw_output_spectrograms.apply((submission.id,))
    submission = Submission.objects.get(id=submission.id)
    folder = spectrograms_folder(submission)
    drawn = spectrogram_store.drawn(folder)
    assert set(drawn) == set(submission.current_run.outputs) == \
        {s["id"] for s in small_bench["samples"]}
    for key in drawn:
        assert spectrogram_store.image_file(folder, key, "output") is not None


def test_a_rejected_upload_queues_no_drawing(make_submission, author, small_bench,
                                             monkeypatch):
    queued = []
    monkeypatch.setattr(services.draw_output_spectrograms, "delay", queued.append)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(f"systems/sys/{small_bench['samples'][0]['id']}.wav", b"not audio")
    submission = make_submission(author, archive=buffer.getvalue())
    submission_validate(submission.id)
    assert Submission.objects.get(id=submission.id).status == Submission.Status.REJECTED
    assert queued == []
