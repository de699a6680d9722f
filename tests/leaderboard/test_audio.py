"""The submission page's audio: access-checked, resolved from the database, with byte ranges."""

import numpy as np
import pytest
import soundfile

from leaderboard.pages.explorer import RangeNotSatisfiable, byte_range
from scoring.models import ScoringRun
from submissions.models import Submission


def test_an_output_is_served_whole_with_accept_ranges(client, served):
    response = client.get(served["url"])
    assert response.status_code == 200
    assert response["Accept-Ranges"] == "bytes"
    assert response["Content-Type"] == "audio/wav"
    assert int(response["Content-Length"]) == len(served["bytes"])
    assert b"".join(response.streaming_content) == served["bytes"]


def test_a_range_of_the_first_100_bytes_is_a_206(client, served):
    response = client.get(served["url"], HTTP_RANGE="bytes=0-99")
    body = b"".join(response.streaming_content)
    assert response.status_code == 206
    assert len(body) == 100 and body == served["bytes"][:100]
    assert response["Content-Length"] == "100"
    assert response["Content-Range"] == f"bytes 0-99/{len(served['bytes'])}"
    assert response["Content-Type"] == "audio/wav"


def test_a_suffix_range_serves_the_last_bytes(client, served):
    size = len(served["bytes"])
    response = client.get(served["url"], HTTP_RANGE="bytes=-10")
    assert response.status_code == 206
    assert b"".join(response.streaming_content) == served["bytes"][-10:]
    assert response["Content-Range"] == f"bytes {size - 10}-{size - 1}/{size}"


def test_an_open_range_serves_to_the_end(client, served):
    size = len(served["bytes"])
    response = client.get(served["url"], HTTP_RANGE="bytes=100-")
    assert response.status_code == 206
    assert b"".join(response.streaming_content) == served["bytes"][100:]
    assert response["Content-Range"] == f"bytes 100-{size - 1}/{size}"
    assert response["Content-Length"] == str(size - 100)


def test_a_range_past_the_end_is_a_416(client, served):
    size = len(served["bytes"])
    response = client.get(served["url"], HTTP_RANGE=f"bytes={size}-")
    assert response.status_code == 416
    assert response["Content-Range"] == f"bytes */{size}"


def test_a_range_ending_past_the_end_stops_at_the_end(client, served):
    size = len(served["bytes"])
    response = client.get(served["url"], HTTP_RANGE="bytes=16000-99999999")
    assert response.status_code == 206
    assert response["Content-Range"] == f"bytes 16000-{size - 1}/{size}"
    assert b"".join(response.streaming_content) == served["bytes"][16000:]


@pytest.mark.parametrize("header", ["bytes=0-1,5-6", "items=0-5", "bytes=9-3", "bytes=x-"])
def test_a_range_this_server_ignores_gets_the_whole_file(client, served, header):
    response = client.get(served["url"], HTTP_RANGE=header)
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == served["bytes"]


@pytest.mark.parametrize("header", ["bytes=" + "9" * 5000 + "-", "bytes=-" + "9" * 5000,
                                    "bytes=0-" + "9" * 5000])
def test_a_range_with_a_number_longer_than_any_file_gets_the_whole_file(client, served,
                                                                         header):
    response = client.get(served["url"], HTTP_RANGE=header)
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == served["bytes"]


def test_leading_zeros_do_not_make_a_number_long(client, served):
    response = client.get(served["url"], HTTP_RANGE="bytes=" + "0" * 5000 + "1-")
    assert response.status_code == 206
    assert b"".join(response.streaming_content) == served["bytes"][1:]


def test_a_stale_if_range_gets_the_whole_file(client, served):
    modified = client.get(served["url"])["Last-Modified"]
    fresh = client.get(served["url"], HTTP_RANGE="bytes=0-9", HTTP_IF_RANGE=modified)
    stale = client.get(served["url"], HTTP_RANGE="bytes=0-9",
                       HTTP_IF_RANGE="Thu, 01 Jan 1970 00:00:00 GMT")
    assert fresh.status_code == 206 and stale.status_code == 200


@pytest.mark.parametrize(("header", "size", "expected"), [
    (None, 10, None), ("", 10, None), ("bytes=0-0", 10, (0, 0)), ("bytes=2-", 10, (2, 9)),
    ("bytes=-3", 10, (7, 9)), ("bytes=-30", 10, (0, 9)), ("bytes=5-100", 10, (5, 9)),
    ("bytes=-", 10, None), ("bytes=4-2", 10, None), ("bytes=0-1, 3-4", 10, None),
    ("bytes=" + "1" * 20 + "-", 10, None), ("bytes=-" + "1" * 20, 10, None),
    ("bytes=" + "0" * 30 + "2-" + "0" * 30 + "3", 10, (2, 3)),
    ("bytes=9223372036854775807-", 2**63, (2**63 - 1, 2**63 - 1)),
])
def test_byte_range_reads_one_range_as_rfc_9110_says(header, size, expected):
    assert byte_range(header, size) == expected


@pytest.mark.parametrize(("header", "size"), [("bytes=10-", 10), ("bytes=-0", 10),
                                              ("bytes=0-5", 0), ("bytes=-5", 0)])
def test_byte_range_refuses_what_cannot_be_satisfied(header, size):
    with pytest.raises(RangeNotSatisfiable):
        byte_range(header, size)


def test_inputs_are_the_benchmarks_own_files(client, served):
    multi = next(s for s in served["samples"] if s["complexity"] == "multi-audio")
    base = f"/s/{served['submission'].pk}/audio/{multi['id']}"
    for n in (1, 2):
        response = client.get(f"{base}/input{n}")
        assert response.status_code == 200 and response["Content-Type"] == "audio/wav"
        assert b"".join(response.streaming_content) == \
            (served["root"] / f"wav/{multi['id']}/audio{n}.wav").read_bytes()
    assert client.get(f"{base}/input3").status_code == 404


def test_a_missing_output_is_a_404(client, served):
    missing = served["samples"][-1]["id"]
    assert missing in served["run"].missing
    url = f"/s/{served['submission'].pk}/audio/{missing}/output"
    assert client.get(url).status_code == 404
    assert client.get(url.replace("/output", "/input1")).status_code == 200


@pytest.mark.parametrize("which", ["outputs", "input0", "input", "output1", "INPUT1",
                                   "input1.wav", "input01"])
def test_a_bad_which_is_a_404(client, served, which):
    assert client.get(served["url"].replace("/output", f"/{which}")).status_code == 404


def test_an_unknown_sample_is_a_404(client, served):
    assert client.get(f"/s/{served['submission'].pk}/audio/{'0' * 24}/output").status_code \
        == 404


def test_an_output_path_outside_the_runs_folder_is_never_served(client, served):
    run = served["run"]
    outside = served["root"].parent / "secret.wav"
    outside.write_bytes(served["bytes"])
    run.outputs = {**run.outputs, served["key"]: "../secret.wav"}
    run.save()
    assert client.get(served["url"]).status_code == 404
    run.outputs = {**run.outputs, served["key"]: str(outside)}
    run.save()
    assert client.get(served["url"]).status_code == 404


def test_a_flac_output_is_served_as_audio_flac(client, served):
    path = served["root"] / "systems" / "sys-a" / "edited.flac"
    soundfile.write(str(path), np.zeros(1600), 16000, format="FLAC")
    run = served["run"]
    run.outputs = {**run.outputs, served["key"]: "systems/sys-a/edited.flac"}
    run.save()
    response = client.get(served["url"])
    assert response.status_code == 200 and response["Content-Type"] == "audio/flac"


def test_audio_answers_get_and_head_only(client, served):
    assert client.head(served["url"]).status_code == 200
    assert client.post(served["url"]).status_code == 405


def _status(client, user, url):
    client.logout()
    if user is not None:
        client.force_login(user)
    return client.get(url).status_code


@pytest.mark.parametrize("change", [{"public": False}, {"run_status": "scoring"}])
def test_hidden_audio_is_a_404_except_for_its_owner_and_staff(
        client, served, change, author, other_author, staff):
    submission = served["submission"]
    if "public" in change:
        Submission.objects.filter(pk=submission.pk).update(public=False)
    else:
        ScoringRun.objects.filter(pk=served["run"].pk).update(status=change["run_status"])
    for url in (served["url"], served["url"].replace("/output", "/input1")):
        assert _status(client, None, url) == 404
        assert _status(client, other_author, url) == 404
        assert _status(client, author, url) == 200
        assert _status(client, staff, url) == 200


def test_public_finished_audio_is_served_to_anyone(client, served, other_author):
    assert _status(client, None, served["url"]) == 200
    assert _status(client, other_author, served["url"]) == 200

