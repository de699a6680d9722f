"""Defects a review found, each pinned by a test."""

import json

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from config.errors import ServiceError
from submissions import file_checks, services
from submissions.models import ModelEntry, Submission
from submissions.services import submission_fail_validation, submission_validate


def test_a_predictions_file_above_its_limit_is_refused_before_it_is_read(
        author, make_submission, monkeypatch):
    monkeypatch.setattr(file_checks, "MAX_PREDICTIONS_BYTES", 10)
    monkeypatch.setattr(services, "_check_predictions",
                        lambda *a: pytest.fail("the file must not be read"))
    with pytest.raises(ServiceError, match="is above the limit of 10 for a predictions"):
        make_submission(author)
    assert Submission.objects.count() == 0


def test_a_private_upload_does_not_rewrite_the_models_details(author, make_submission,
                                                             small_bench):
    first = make_submission(author, public=True, name="Editor")
    submission_validate(first.id)
    p, a = (SimpleUploadedFile("submission.jsonl", small_bench["jsonl"]),
            SimpleUploadedFile("audio.zip", small_bench["zip"]))
    private = services.submission_create(
        user=author, benchmark=small_bench["benchmark"], model_name="Editor",
        metadata={"organisation": "Secret Lab", "description": "unreleased"}, public=False,
        predictions=p, archive=a)
    submission_validate(private.id)
    assert ModelEntry.objects.get(name="Editor").organisation == "Lab"


def test_a_public_upload_that_passes_validation_updates_the_details(author, make_submission,
                                                                    small_bench):
    make_submission(author, public=True, name="Editor")
    p, a = (SimpleUploadedFile("submission.jsonl", small_bench["jsonl"]),
            SimpleUploadedFile("audio.zip", small_bench["zip"]))
    second = services.submission_create(
        user=author, benchmark=small_bench["benchmark"], model_name="Editor",
        metadata={"organisation": "New Lab"}, public=True, predictions=p, archive=a)
    assert ModelEntry.objects.get(name="Editor").organisation == "Lab"  # not yet validated
    submission_validate(second.id)
    assert ModelEntry.objects.get(name="Editor").organisation == "New Lab"


def test_the_quota_is_checked_again_under_the_authors_lock(author, make_submission,
                                                           small_bench, settings,
                                                           monkeypatch):
    settings.SUBMISSIONS_PER_DAY = 1
    check = services._check_predictions

    def meanwhile(predictions, benchmark):  # another upload finishes during this one's check
        monkeypatch.setattr(services, "_check_predictions", check)
        make_submission(author, name="Parallel")
        return []

    monkeypatch.setattr(services, "_check_predictions", meanwhile)
    with pytest.raises(ServiceError, match="daily quota reached"):
        make_submission(author, name="Late")
    assert list(Submission.objects.values_list("model__name", flat=True)) == ["Parallel"]


def test_failing_a_rejected_submission_again_deletes_nothing_else(author, make_submission,
                                                                  small_bench):
    rejected = make_submission(author, archive=b"PK\x03\x04 but not an archive")
    submission_validate(rejected.id)
    other = make_submission(author, name="Other")
    kept = list((settings.MEDIA_ROOT / "submissions" / str(other.id)).rglob("*"))
    assert kept
    submission_fail_validation(rejected.id, "broke twice")
    assert all(path.exists() for path in kept)


def test_a_predictions_file_with_a_byte_order_mark_is_read(author, make_submission,
                                                           small_bench):
    submission = make_submission(author, predictions=b"\xef\xbb\xbf" + small_bench["jsonl"])
    assert submission.status == "uploaded"
    submission_validate(submission.id)
    submission.refresh_from_db()
    assert submission.state == "queued" and submission.coverage == 1.0


def test_an_input_audio_path_outside_the_audio_root_is_refused(db, tmp_path):
    from scoring.services import BenchmarkFileError, benchmark_import
    from scoring.synthetic import write_benchmark

    meta = write_benchmark(tmp_path / "b", 2, seed=1)
    data = json.loads(meta.read_text())
    (tmp_path / "secret.wav").write_bytes(b"x")
    data[0]["messages"][0]["content"][1]["audio_url"] = "wav/../../secret.wav"
    meta.write_text(json.dumps(data))
    with pytest.raises(BenchmarkFileError, match="'wav/../../secret.wav' lies outside"):
        benchmark_import(kind="mmae", path=meta, audio_root=tmp_path / "b", slug="x")
