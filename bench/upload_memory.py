"""Peak memory of the web process while it takes a 1 GB upload through the API.

Sets up a scratch PostgreSQL database (bench_upload_<pid>) with a synthetic benchmark (the
input WAVs are empty files, enough for the importer), a user and an ApiToken; writes a ~1 GB
.zip of incompressible WAVs (random noise, stored, not deflated: 2,000 WAVs of ~0.5 MB by
default) and its submission.jsonl in a temporary folder; starts gunicorn
(`python -m gunicorn config.wsgi --workers 1 --timeout 300`); then POSTs both files to
/api/submissions/ with httpx, which streams the file objects (nothing is read whole), while
sampling the gunicorn worker's VmRSS; prints the worker's peak RSS (VmHWM from
/proc/PID/status, which the kernel keeps), the upload's seconds and MB/s. No Celery worker
runs: the submission stays "uploaded"; the broker is Redis db 14 (flushed before and after).
The temporary folder (about 3 GB with Django's temporary upload file and the stored copy) and
the scratch database are removed at the end.

    .venv/bin/python bench/upload_memory.py [--megabytes 1024 --files 2000]
        [--predictions-megabytes 100]

With --predictions-megabytes, each line of submission.jsonl carries a padding field so that
the file is that large (the checks made at upload read it a line at a time): the worker's
peak then shows what a large predictions file costs the web process.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import _scratch
import httpx
import redis

ROOT = _scratch.ROOT
sys.path.insert(0, str(ROOT))
REDIS_URL = "redis://127.0.0.1:6379/14"
MB = 1024**2


def wav_header(n_bytes: int, sample_rate: int = 16000) -> bytes:
    """A 44-byte header of a mono 16-bit PCM WAV holding n_bytes of samples."""
    return (b"RIFF" + struct.pack("<I", 36 + n_bytes) + b"WAVE"
            + b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, sample_rate, 2 * sample_rate, 2, 16)
            + b"data" + struct.pack("<I", n_bytes))


def write_archive(path: Path, keys: list[str], total_bytes: int) -> int:
    """A stored (not deflated) zip of one noise WAV per key, ~total_bytes in all."""
    per_file = (total_bytes // len(keys)) & ~1  # whole 16-bit samples
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for key in keys:
            archive.writestr(f"systems/bench/{key}.wav",
                             wav_header(per_file) + os.urandom(per_file))
    return path.stat().st_size


class RssSampler(threading.Thread):
    """Samples a process's VmRSS (kB) every `interval` seconds."""

    def __init__(self, pid: int, interval: float = 0.02):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peak_kb = 0
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.wait(self.interval):
            rss = _scratch.proc_status_kb(self.pid, "VmRSS")
            if rss is not None:
                self.peak_kb = max(self.peak_kb, rss)

    def stop(self):
        self.stopped.set()
        self.join(timeout=5)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=1024, help="size of the archive")
    parser.add_argument("--files", type=int, default=2000,
                        help="WAVs in the archive (= samples of the benchmark)")
    parser.add_argument("--timeout", type=float, default=300, help="of the upload request")
    parser.add_argument("--predictions-megabytes", type=int, default=0,
                        help="pad submission.jsonl to this size (0: no padding)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-upload-"))
    broker = redis.Redis.from_url(REDIS_URL)
    db_name = server = sampler = None
    try:
        broker.flushdb()
        db_name, url = _scratch.create_database("bench_upload")
        (work / "tmp").mkdir()
        port = _scratch.free_ports(1)[0]
        os.environ.update({
            "DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": url,
            "VAR_DIR": str(work / "var"), "MEDIA_ROOT": str(work / "media"),
            "REDIS_URL": REDIS_URL, "CELERY_BROKER_URL": REDIS_URL,
            "SUBMISSIONS_PER_DAY": "1000", "SUBMISSIONS_IN_FLIGHT": "10",
            "ALLOWED_HOSTS": "127.0.0.1,localhost", "LOG_LEVEL": "WARNING",
        })
        env = {**os.environ, "TMPDIR": str(work / "tmp")}  # Django's temporary upload file
        _scratch.migrate(env)

        import django

        django.setup()
        from allauth.account.models import EmailAddress
        from django.contrib.auth import get_user_model

        from accounts.models import ApiToken, Submission
        from scoring import synthetic
        from scoring.services import benchmark_import

        meta = synthetic.make_meta(args.files)
        meta_path = work / "MMAE-meta.json"
        synthetic.write_meta_with_empty_audio(meta, meta_path, work / "inputs")
        benchmark_import(kind="mmae", path=meta_path, audio_root=work / "inputs", slug="mmae",
                         synthetic=True)
        user = get_user_model().objects.create_user("bench", "bench@example.com", "pw-bench-1")
        # Uploads wait for a confirmed email address (accounts.verification).
        EmailAddress.objects.create(user=user, email=user.email, primary=True, verified=True)
        _, key = ApiToken.issue(user=user, name="bench")

        keys = [sample["id"] for sample in meta]
        predictions = work / "submission.jsonl"
        pad = "x" * max(0, args.predictions_megabytes * MB // len(keys) - 60)
        with open(predictions, "w") as handle:
            for k in keys:
                line = {"id": k, "audio_path": f"systems/bench/{k}.wav"}
                if pad:
                    line["note"] = pad
                handle.write(json.dumps(line) + "\n")
        print(f"predictions: {predictions.stat().st_size / MB:.1f} MB, {len(keys)} lines",
              flush=True)
        started = time.monotonic()
        archive = work / "audio.zip"
        size = write_archive(archive, keys, args.megabytes * MB)
        print(f"archive: {size / MB:.0f} MB ({size} bytes), {len(keys)} noise WAVs, stored; "
              f"written in {time.monotonic() - started:.1f} s", flush=True)

        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{port}",
             "-c", "python:config.gunicorn", "--workers", "1", "--timeout", "300",
             "--log-level", "warning"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        base = f"http://127.0.0.1:{port}"
        headers = {"Authorization": f"Token {key}"}
        deadline = time.monotonic() + 60
        while True:  # up when the API answers; this first request also warms the worker up
            if server.poll() is not None:
                raise RuntimeError(f"gunicorn exited with code {server.returncode}")
            try:
                if httpx.get(f"{base}/api/submissions/", headers=headers,
                             timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("gunicorn did not answer within 60 s")
            time.sleep(0.2)
        workers = _scratch.children(server.pid)
        if len(workers) != 1:
            raise RuntimeError(f"expected one gunicorn worker, found {workers}")
        worker = workers[0]
        before_rss = _scratch.proc_status_kb(worker, "VmRSS")
        before_hwm = _scratch.proc_status_kb(worker, "VmHWM")
        print(f"gunicorn worker {worker} after a warm-up request: RSS {before_rss / 1024:.1f} MB, "
              f"peak so far {before_hwm / 1024:.1f} MB", flush=True)

        sampler = RssSampler(worker)
        sampler.start()
        started = time.monotonic()
        with open(predictions, "rb") as p, open(archive, "rb") as a, \
                httpx.Client(timeout=args.timeout) as client:
            response = client.post(
                f"{base}/api/submissions/", headers=headers,
                data={"benchmark": "mmae", "model_name": "Upload Bench"},
                files={"predictions": ("submission.jsonl", p, "application/x-ndjson"),
                       "audio": ("audio.zip", a, "application/zip")})
        seconds = time.monotonic() - started
        sampler.stop()
        peak_hwm = _scratch.proc_status_kb(worker, "VmHWM")
        after_rss = _scratch.proc_status_kb(worker, "VmRSS")
        if response.status_code != 201:
            raise SystemExit(f"upload refused: HTTP {response.status_code} {response.text[:500]}")
        submission = Submission.objects.get(id=response.json()["id"])
        stored = sum(f.stat().st_size for f in (work / "media").rglob("*") if f.is_file())
        client_hwm = _scratch.proc_status_kb(os.getpid(), "VmHWM")

        print(f"upload: HTTP {response.status_code}, submission {submission.id} "
              f"'{submission.status}'; {stored / MB:.0f} MB stored under MEDIA_ROOT")
        print(f"upload time: {seconds:.1f} s = {size / MB / seconds:.0f} MB/s "
              f"(request sent to response received)")
        print(f"gunicorn worker peak RSS (VmHWM): {peak_hwm / 1024:.1f} MB "
              f"(+{(peak_hwm - before_hwm) / 1024:.1f} MB over its peak before the upload)")
        print(f"gunicorn worker RSS sampled every 20 ms: max {sampler.peak_kb / 1024:.1f} MB; "
              f"before {before_rss / 1024:.1f} MB, after {after_rss / 1024:.1f} MB")
        print(f"this client's peak RSS (VmHWM): {client_hwm / 1024:.1f} MB (the archive was "
              f"streamed, not read whole)")
    finally:
        if sampler is not None:
            sampler.stop()
        _scratch.stop_group(server)
        _scratch.close_and_drop(db_name)
        broker.flushdb()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
