"""A benchmark kind added as one package (tests/scoring/kinds/tone/: audio outputs, its own
simulated replies), named in BENCHMARK_KINDS_EXTRA and nowhere else, goes through `make run`
(embedded.run: SQLite, a real worker, the judge simulator): imported, uploaded through the API,
validated, scored, shown on its board and in the read API."""

import subprocess
import sys
import zipfile

import httpx
import pytest

from tests.config.test_run import Embedded
from tests.conftest import ROOT
from tests.httpclient import HTTP
from tests.scoring.kinds.tone.kind import write_benchmark, write_outputs

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def embedded(tmp_path_factory):
    instance = Embedded(tmp_path_factory.mktemp("tone-run"),
                        BENCHMARK_KINDS_EXTRA="tests.scoring.kinds.tone")
    yield instance
    instance.stop()


@pytest.fixture(scope="module")
def tone_imported(embedded, tmp_path_factory):
    """The tone benchmark imported by `manage.py import_benchmark`, as staff would."""
    root = tmp_path_factory.mktemp("tone-bench")
    done = subprocess.run(
        [sys.executable, "manage.py", "import_benchmark", "tone-edit",
         str(write_benchmark(root, 6)), "--audio-root", str(root)],
        cwd=ROOT, env=embedded.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def upload(embedded, archive, model_name: str) -> httpx.Response:
    return HTTP.post(
        f"{embedded.base}/api/submissions/", headers={"Authorization": f"Token {embedded.token}"},
        data={"benchmark": "tone-edit", "model_name": model_name, "public": "true"},
        files={"audio": (archive.name, archive.read_bytes())}, timeout=60)


def test_a_kind_of_its_own_package_is_imported_scored_and_shown(embedded, tone_imported,
                                                                 tmp_path):
    assert "imported tone-edit v1 (6 clips)" in tone_imported

    ids = [upload(embedded, write_outputs(tmp_path / name, 6, shift=shift), name).json()["id"]
           for name, shift in (("Bright", 30.0), ("Dull", -30.0))]
    ended = [embedded.wait_until_ended(submission_id) for submission_id in ids]
    assert [body["status"] for body in ended] == ["finished", "finished"], ended
    # The simulator answered every query through the kind's own reply: none unparseable.
    assert all(sum(body["failures"].values()) == 0 for body in ended), ended
    assert all(body["overall"]["n"] == 6 and "followed_share" in body["overall"]
               for body in ended), ended

    board = HTTP.get(f"{embedded.base}/api/leaderboards/tone-edit/", timeout=30).json()
    assert {row["model"] for row in board["rows"]} == {"Bright", "Dull"}
    assert all(row["simulated"] for row in board["rows"])
    assert all(0 <= row["followed_share"] <= 100 for row in board["rows"]), board["rows"]
    page = HTTP.get(f"{embedded.base}/b/tone-edit/", timeout=30)
    assert page.status_code == 200 and "Bright" in page.text and "share followed" in page.text


def test_a_bad_output_is_refused_naming_the_file_and_the_clip(embedded, tone_imported, tmp_path):
    good = write_outputs(tmp_path / "good", 2, shift=10.0)
    archive = tmp_path / "broken.zip"
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(archive, "w") as zf:
        for name in ("out/c0.wav", "out/c1.wav"):
            zf.writestr(name, source.read(name))
        zf.writestr("out/c2.wav", b"not audio at all")
        zf.writestr("outputs.jsonl", "".join(
            f'{{"id": "c{i}", "audio": "out/c{i}.wav"}}\n' for i in range(3)))
    submission_id = upload(embedded, archive, "Broken").json()["id"]
    body = embedded.wait_until_ended(submission_id)
    assert body["status"] == "rejected", body
    assert any("outputs.jsonl line 3 (id c2): out/c2.wav: not readable as WAV or FLAC" in e
               for e in body["report"]["errors"]), body["report"]
