"""launch_qwen3_omni.sh: starts a fleet of vLLM servers, checks them, restarts one that ends,
stops them all.

A stand-in `vllm` first on PATH plays each server: `vllm --version` reports a version, and
`vllm serve` records how it was started (its arguments and the environment the script gives
it), starts a child process (as vLLM starts its tensor-parallel workers) and, on its --port,
answers GET /health, GET /v1/models and POST /v1/chat/completions (which checks the request
carries one 1 s 16 kHz WAV), requiring VLLM_API_KEY on /v1 as vLLM does. It records every
request it answers. The guard the script writes for --middleware is checked on its own.
A stand-in `nvidia-smi` lists eight GPUs, so the tests do not depend on the machine's.
"""

import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from judge.limits import (
    DEFAULT_BATCHED_TOKENS,
    DEFAULT_MAX_AUDIO_FILE_MB,
    DEFAULT_MAX_AUDIO_SECONDS,
    DEFAULT_MAX_AUDIOS,
    audio_limits_for,
    batched_tokens_for,
)

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "launch_qwen3_omni.sh"
SETTINGS = (
    "MODEL_DIR", "NUM_INSTANCES", "GPUS_PER_INSTANCE", "FIRST_GPU", "BASE_PORT", "HOST",
    "PUBLIC_HOST", "SERVED_MODEL_NAME", "MAX_MODEL_LEN", "DTYPE", "GPU_MEMORY_UTILIZATION",
    "READY_TIMEOUT", "GRACE_SECONDS", "LOG_DIR", "VLLM_EXTRA_ARGS", "MAX_AUDIO_SECONDS",
    "MAX_AUDIOS", "API_KEY", "VLLM_VERSION", "ALLOW_OTHER_VLLM", "SMOKE_TIMEOUT",
    "RESTART_BACKOFF", "RESTART_BACKOFF_MAX", "MAX_AUDIO_FILE_MB", "POLL_SECONDS",
)
# The release the script is written for, as it reads it: VLLM_VERSION=${VLLM_VERSION:-0.33.0}.
PINNED = re.search(r"^VLLM_VERSION=\$\{VLLM_VERSION:-([^}]+)\}$", SCRIPT.read_text(), re.M)[1]
INSTRUCT_CONFIG = {
    "architectures": ["Qwen3OmniMoeForConditionalGeneration"], "model_type": "qwen3_omni_moe",
    "enable_audio_output": True, "thinker_config": {"model_type": "qwen3_omni_moe_thinker"},
}
STARTUP = 30  # seconds for the script to start stand-ins that answer at once
SHUTDOWN = 30  # seconds for the script to stop everything and exit

pytestmark = pytest.mark.integration

STANDIN_VLLM = """#!{python}
import base64, io, json, os, signal, subprocess, sys, time, wave
from http.server import BaseHTTPRequestHandler, HTTPServer

args = sys.argv[1:]
if args == ["--version"]:
    print(os.environ.get("STANDIN_VERSION", "{version}"))
    sys.exit()
port = int(args[args.index("--port") + 1])
name = args[args.index("--served-model-name") + 1]
key = os.environ.get("VLLM_API_KEY")
started = time.monotonic()
if os.environ.get("STANDIN_IGNORE_TERM"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
record = {{
    "pid": os.getpid(), "pgid": os.getpgrp(), "worker": worker.pid, "argv": args,
    "cuda": os.environ.get("CUDA_VISIBLE_DEVICES"),
    "env": {{name: value for name, value in os.environ.items()
            if name.startswith("VLLM_") or name == "PYTHONPATH"}},
}}
with open(os.environ["STANDIN_RECORD"], "a") as f:
    f.write(json.dumps(record) + "\\n")
print(f"stand-in pid {{os.getpid()}} on port {{port}}", file=sys.stderr, flush=True)
if os.environ.get("STANDIN_FAIL_PORT") == str(port):
    print("stand-in: failing on purpose", file=sys.stderr, flush=True)
    sys.exit(3)
if os.environ.get("STANDIN_SILENT"):
    signal.pause()


def audio_parts(body):
    \"\"\"The part types of the one user message, and the WAV's rate and frames.\"\"\"
    [message] = body["messages"]
    kinds = [part["type"] for part in message["content"]]
    [audio] = [part for part in message["content"] if part["type"] == "audio_url"]
    prefix = "data:audio/wav;base64,"
    assert audio["audio_url"]["url"].startswith(prefix)
    data = base64.b64decode(audio["audio_url"]["url"][len(prefix):], validate=True)
    with wave.open(io.BytesIO(data)) as wav:
        return kinds, wav.getframerate(), wav.getnframes(), wav.getnchannels()


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/health":
            delay = float(os.environ.get("STANDIN_HEALTH_DELAY", "0"))
            self.answer(200 if time.monotonic() - started >= delay else 503, b"")
        elif self.path == "/v1/models" and self.authorized():
            self.answer(200, {{"object": "list", "data": [{{"id": name}}]}})
        elif not self.path.startswith("/v1/"):
            self.answer(404, {{"error": "not found"}})

    def do_POST(self):
        if self.path != "/v1/chat/completions":
            self.answer(404, {{"error": "not found"}})
            return
        if not self.authorized():
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if os.environ.get("STANDIN_SMOKE_FAIL_PORT") == str(port):
            self.answer(500, b"")  # as vLLM answers after an EngineDeadError
            return
        try:
            kinds, rate, frames, channels = audio_parts(body)
            assert body["model"] == name and (rate, frames, channels) == (16000, 16000, 1)
        except Exception as error:
            self.answer(400, {{"error": f"stand-in refuses the request: {{error!r}}"}})
            return
        self.answer(200, {{"object": "chat.completion", "model": name, "parts": kinds,
                          "choices": [{{"index": 0, "message": {{"role": "assistant",
                                                               "content": "Tone."}}}}]}})

    def authorized(self):
        if key is None or self.headers.get("Authorization") == f"Bearer {{key}}":
            return True
        self.answer(401, {{"error": "Unauthorized"}})
        return False

    def answer(self, status, payload):
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        with open(os.environ["STANDIN_REQUESTS"], "a") as f:
            f.write(json.dumps({{
                "port": port, "method": self.command, "path": self.path, "status": status,
                "authorization": self.headers.get("Authorization"), "at": time.time(),
                "reply": payload if isinstance(payload, dict) else None,
            }}) + "\\n")

    def log_message(self, *args):
        pass


HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


def free_base_port(count: int) -> int:
    """The first of `count` consecutive loopback ports that are free right now, below the
    kernel's ephemeral range: there no outgoing connection and no server bound to port 0 (the
    other tests' servers: tests.servers.free_ports) takes one between this check and the
    stand-in's bind (a CI run failed on "Address already in use" at port 42352)."""
    low, _ = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    for _ in range(200):
        base = random.randint(10000, low - count - 1)
        sockets = []
        try:
            for port in range(base, base + count):
                sock = socket.socket()
                sockets.append(sock)
                sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
        return base
    raise RuntimeError(f"no {count} consecutive free ports found")


def running(pid: int) -> bool:
    """Whether `pid` is a live process; a zombie waiting to be reaped counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_until_gone(pids: list[int], timeout: float = 10) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := [pid for pid in pids if running(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def http_status(url: str, key: str | None = None) -> int:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as error:
        return error.code


def by_port(standins: list[dict]) -> list[dict]:
    return sorted(standins, key=lambda s: int(flag(s["argv"], "--port")))


def default_signals():
    # A test run started in the background inherits SIGINT ignored, and bash cannot trap a
    # signal that was ignored when it started.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


class Launch:
    """One run of the script, its output in files, its stand-ins read from their record."""

    def __init__(self, fleet: "Fleet", env: dict[str, str]):
        self.fleet = fleet
        self.env = env
        self.base_port = int(env["BASE_PORT"])
        self.stdout = fleet.tmp_path / f"stdout-{len(fleet.launches)}.txt"
        self.stderr = fleet.tmp_path / f"stderr-{len(fleet.launches)}.txt"
        with self.stdout.open("w") as out, self.stderr.open("w") as err:
            self.process = subprocess.Popen(
                ["bash", str(SCRIPT)], env=env, cwd=fleet.tmp_path, stdin=subprocess.DEVNULL,
                stdout=out, stderr=err, start_new_session=True, preexec_fn=default_signals,
            )

    def output(self) -> str:
        return self.stdout.read_text()

    def errors(self) -> str:
        return self.stderr.read_text()

    def wait_for_output(self, text: str, timeout: float = STARTUP) -> str:
        return self._wait_for(self.output, text, 1, timeout)

    def wait_for_errors(self, text: str, count: int = 1, timeout: float = STARTUP) -> str:
        return self._wait_for(self.errors, text, count, timeout)

    def _wait_for(self, read, text: str, count: int, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if (out := read()).count(text) >= count:
                return out
            if self.process.poll() is not None:
                pytest.fail(f"script exited with {self.process.returncode} before printing "
                            f"{text!r}:\n{self.errors()}")
            time.sleep(0.1)
        pytest.fail(f"no {text!r} within {timeout}s:\n{self.errors()}")

    def finish(self, timeout: float = SHUTDOWN) -> int:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"script still running {timeout}s later:\n{self.errors()}")

    def stop(self, sig: int) -> int:
        self.process.send_signal(sig)
        return self.finish()

    def standins(self) -> list[dict]:
        return self.fleet.standins()


class Fleet:
    """Stand-in tools on PATH, a model directory, and every process started, for clean-up."""

    def __init__(self, tmp_path: Path):
        self.tmp_path = tmp_path
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        self.model_dir = tmp_path / "Qwen3-Omni-30B-A3B-Instruct"
        self.model_dir.mkdir()
        (self.model_dir / "config.json").write_text(json.dumps(INSTRUCT_CONFIG))
        self.record = tmp_path / "standins.jsonl"
        self.request_log = tmp_path / "requests.jsonl"
        self.launches: list[Launch] = []
        vllm = self.bin / "vllm"
        vllm.write_text(STANDIN_VLLM.format(python=sys.executable, version=PINNED))
        vllm.chmod(0o755)
        self.set_gpu_count(8)

    def set_gpu_count(self, count: int | None):
        smi = self.bin / "nvidia-smi"
        if count is None:
            smi.unlink(missing_ok=True)
            return
        lines = "".join(f"GPU {i}: Stand-in GPU (UUID: GPU-{i:08d})\\n" for i in range(count))
        smi.write_text(f"#!/bin/sh\nprintf '{lines}'\n")
        smi.chmod(0o755)

    def env(self, **settings: str) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if key not in SETTINGS}
        env.update(
            PATH=f"{self.bin}{os.pathsep}{env.get('PATH', os.defpath)}",
            MODEL_DIR=str(self.model_dir),
            LOG_DIR=str(self.tmp_path / "logs"),
            STANDIN_RECORD=str(self.record),
            STANDIN_REQUESTS=str(self.request_log),
            POLL_SECONDS="0.2",  # the servers looked at five times a second, not once
        )
        count = settings.get("NUM_INSTANCES", "2")
        env["BASE_PORT"] = str(free_base_port(int(count) if count.isdigit() else 2))
        for key, value in settings.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return env

    def launch(self, **settings: str) -> Launch:
        return self._start(self.env(**settings))

    def launch_troubling_the_second(self, variable: str) -> Launch:
        """A launch whose stand-ins read `variable` as the port of the one that misbehaves."""
        env = self.env()
        env[variable] = str(int(env["BASE_PORT"]) + 1)
        return self._start(env)

    def _start(self, env: dict[str, str]) -> Launch:
        launch = Launch(self, env)
        self.launches.append(launch)
        return launch

    def run(self, **settings: str) -> subprocess.CompletedProcess:
        """A run expected to end on its own (a refusal), with a bound on how long it may take."""
        return subprocess.run(
            ["bash", str(SCRIPT)], env=self.env(**settings), cwd=self.tmp_path,
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=SHUTDOWN,
        )

    def standins(self) -> list[dict]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines()]

    def requests(self, path: str | None = None) -> list[dict]:
        """The requests the stand-ins answered (to `path` only, when given), oldest first."""
        if not self.request_log.exists():
            return []
        lines = [json.loads(line) for line in self.request_log.read_text().splitlines()]
        return [r for r in lines if path is None or r["path"] == path]

    def pids(self) -> list[int]:
        return [pid for s in self.standins() for pid in (s["pid"], s["worker"])]

    def clean_up(self):
        for launch in self.launches:
            if launch.process.poll() is None:
                os.killpg(launch.process.pid, signal.SIGKILL)
                launch.process.wait(timeout=10)
        for standin in self.standins():
            for kill, target in ((os.killpg, standin["pgid"]), (os.kill, standin["worker"])):
                try:
                    kill(target, signal.SIGKILL)
                except ProcessLookupError:
                    pass


@pytest.fixture
def fleet(tmp_path):
    fleet = Fleet(tmp_path)
    yield fleet
    fleet.clean_up()


def test_it_starts_one_server_per_gpu_group_and_stops_them_on_sigterm(fleet):
    launch = fleet.launch()
    base = launch.base_port
    urls = f"http://127.0.0.1:{base},http://127.0.0.1:{base + 1}"

    out = launch.wait_for_output("JUDGE_BASE_URLS=")

    assert f'--base_urls "{urls}"\n' in out
    assert f"JUDGE_BASE_URLS={urls}\n" in out
    standins = sorted(launch.standins(), key=lambda s: int(flag(s["argv"], "--port")))
    assert [s["cuda"] for s in standins] == ["0,1,2,3", "4,5,6,7"]
    assert [flag(s["argv"], "--port") for s in standins] == [str(base), str(base + 1)]
    for standin in standins:
        argv = standin["argv"]
        assert argv[:2] == ["serve", str(fleet.model_dir)]
        assert flag(argv, "--host") == "127.0.0.1"  # the default: loopback only
        assert flag(argv, "--served-model-name") == "Qwen3-Omni-30B-A3B-Instruct"
        assert flag(argv, "--tensor-parallel-size") == "4"
        assert flag(argv, "--dtype") == "bfloat16"
        assert flag(argv, "--max-model-len") == "32768"
        assert flag(argv, "--gpu-memory-utilization") == "0.9"
        assert json.loads(flag(argv, "--limit-mm-per-prompt")) == {"audio": DEFAULT_MAX_AUDIOS}
        assert flag(argv, "--max-num-batched-tokens") == str(DEFAULT_BATCHED_TOKENS)
        # the cache that lets the client name an audio sent before by its uuid alone
        assert flag(argv, "--mm-processor-cache-gb") == "4"
        assert flag(argv, "--chat-template-content-format") == "openai"
        assert flag(argv, "--generation-config") == "vllm"
        assert "--api-key" not in argv
        assert standin["pgid"] == standin["pid"]  # each server leads its own process group
    logs = sorted(p.name for p in (fleet.tmp_path / "logs").iterdir())
    assert logs == [f"qwen3-omni-{base}.log", f"qwen3-omni-{base + 1}.log"]

    assert launch.stop(signal.SIGTERM) == 143
    assert wait_until_gone(fleet.pids()) == []
    assert "all servers stopped" in launch.errors()


@pytest.mark.parametrize(("variables", "groups"), [
    ({"NUM_INSTANCES": "3", "GPUS_PER_INSTANCE": "2"}, ["0,1", "2,3", "4,5"]),
    ({"NUM_INSTANCES": "2", "GPUS_PER_INSTANCE": "1", "FIRST_GPU": "6"}, ["6", "7"]),
])
def test_it_gives_each_instance_its_own_block_of_gpus(fleet, variables, groups):
    launch = fleet.launch(**variables)
    base = launch.base_port
    ports = [base + i for i in range(len(groups))]

    out = launch.wait_for_output("JUDGE_BASE_URLS=")

    assert out.splitlines()[0] == (
        "--base_urls \"" + ",".join(f"http://127.0.0.1:{p}" for p in ports) + '"'
    )
    standins = sorted(launch.standins(), key=lambda s: int(flag(s["argv"], "--port")))
    assert [s["cuda"] for s in standins] == groups
    assert [int(flag(s["argv"], "--port")) for s in standins] == ports
    assert {flag(s["argv"], "--tensor-parallel-size") for s in standins} == {
        variables["GPUS_PER_INSTANCE"]
    }
    launch.stop(signal.SIGTERM)
    assert wait_until_gone(fleet.pids()) == []


def test_it_stops_every_server_on_sigint(fleet):
    launch = fleet.launch()
    launch.wait_for_output("JUDGE_BASE_URLS=")
    assert all(running(pid) for pid in fleet.pids())

    assert launch.stop(signal.SIGINT) == 130
    assert wait_until_gone(fleet.pids()) == []


def test_it_passes_settings_and_extra_args_to_vllm(fleet):
    launch = fleet.launch(
        NUM_INSTANCES="1", GPUS_PER_INSTANCE="2", HOST="127.0.0.1", PUBLIC_HOST="gpu-7.example",
        SERVED_MODEL_NAME="judge", MAX_MODEL_LEN="8192", DTYPE="float16",
        GPU_MEMORY_UTILIZATION="0.85", VLLM_EXTRA_ARGS="--max-num-seqs 16  --enforce-eager",
    )

    out = launch.wait_for_output("JUDGE_BASE_URLS=")

    assert f"JUDGE_BASE_URLS=http://gpu-7.example:{launch.base_port}\n" in out
    [standin] = launch.standins()
    argv = standin["argv"]
    assert flag(argv, "--host") == "127.0.0.1"
    assert flag(argv, "--served-model-name") == "judge"
    assert flag(argv, "--tensor-parallel-size") == "2"
    assert flag(argv, "--max-model-len") == "8192"
    assert flag(argv, "--dtype") == "float16"
    assert flag(argv, "--gpu-memory-utilization") == "0.85"
    assert argv[-3:] == ["--max-num-seqs", "16", "--enforce-eager"]
    launch.stop(signal.SIGTERM)


def test_it_kills_a_server_that_ignores_sigterm_after_the_grace_period(fleet):
    launch = fleet.launch(NUM_INSTANCES="1", GPUS_PER_INSTANCE="1", GRACE_SECONDS="1",
                          STANDIN_IGNORE_TERM="1")
    launch.wait_for_output("JUDGE_BASE_URLS=")

    launch.stop(signal.SIGTERM)

    assert wait_until_gone(fleet.pids()) == []
    assert "sending KILL" in launch.errors()


def test_it_stops_all_and_names_the_instance_that_fails_to_start(fleet):
    launch = fleet.launch_troubling_the_second("STANDIN_FAIL_PORT")

    assert launch.finish() == 1

    errors = launch.errors()
    assert f"instance 1 (port {launch.base_port + 1}, GPUs 4,5,6,7) exited with code 3" in errors
    assert "stand-in: failing on purpose" in errors  # the tail of its log
    assert "JUDGE_BASE_URLS" not in launch.output()
    assert wait_until_gone(fleet.pids()) == []


def test_it_restarts_a_server_that_dies_while_the_other_keeps_serving(fleet):
    launch = fleet.launch(RESTART_BACKOFF="1", RESTART_BACKOFF_MAX="4")
    launch.wait_for_output("JUDGE_BASE_URLS=")
    first, second = by_port(launch.standins())
    base = launch.base_port
    log = fleet.tmp_path / "logs" / f"qwen3-omni-{base}.log"
    statuses: list[int] = []
    done = threading.Event()

    def poll_the_other():
        while not done.is_set():
            statuses.append(http_status(f"http://127.0.0.1:{base + 1}/v1/models"))
            time.sleep(0.05)

    poller = threading.Thread(target=poll_the_other)
    poller.start()
    try:
        os.killpg(first["pgid"], signal.SIGKILL)  # the server and its worker
        launch.wait_for_errors(f"instance 0 (port {base}, GPUs 0,1,2,3) is serving again")
        os.killpg(launch.standins()[-1]["pgid"], signal.SIGKILL)  # the restarted one
        launch.wait_for_errors("restarting it in 2s")
        launch.wait_for_errors("is serving again", count=2)
    finally:
        done.set()
        poller.join()

    errors = launch.errors()
    assert f"instance 0 (port {base}, GPUs 0,1,2,3) exited with code 137; restarting it in 1s" in (
        errors
    )
    assert "the other servers keep serving" in errors
    assert len(statuses) > 20 and set(statuses) == {200}
    ports = [int(flag(s["argv"], "--port")) for s in launch.standins()]
    assert ports.count(base) == 3 and ports.count(base + 1) == 1
    pids = [s["pid"] for s in launch.standins() if int(flag(s["argv"], "--port")) == base]
    assert len(set(pids)) == 3
    assert f"stand-in pid {pids[2]} on port {base}" in log.read_text()
    assert f"stand-in pid {pids[1]} on port {base}" in Path(f"{log}.1").read_text()
    assert f"stand-in pid {pids[0]} on port {base}" in Path(f"{log}.2").read_text()
    assert running(second["pid"])
    assert "JUDGE_BASE_URLS" in launch.output() and launch.process.poll() is None

    assert launch.stop(signal.SIGTERM) == 143
    assert wait_until_gone(fleet.pids()) == []
    assert "all servers stopped" in launch.errors()


def test_it_gives_up_on_a_server_that_never_answers(fleet):
    launch = fleet.launch(NUM_INSTANCES="1", READY_TIMEOUT="1", STANDIN_SILENT="1")

    assert launch.finish() == 1

    assert "instance 0" in launch.errors()
    assert "did not answer within READY_TIMEOUT=1s" in launch.errors()
    assert wait_until_gone(fleet.pids()) == []


@pytest.mark.parametrize("model_dir", [None, "", "does-not-exist"])
def test_it_requires_a_model_directory(fleet, model_dir):
    result = fleet.run(MODEL_DIR=model_dir)

    assert result.returncode != 0
    assert "MODEL_DIR" in result.stderr
    assert fleet.standins() == []


@pytest.mark.parametrize(("name", "value"), [
    ("NUM_INSTANCES", "two"),
    ("NUM_INSTANCES", "0"),
    ("GPUS_PER_INSTANCE", "4.5"),
    ("FIRST_GPU", "-1"),
    ("BASE_PORT", "70000"),
    ("MAX_MODEL_LEN", "32k"),
    ("READY_TIMEOUT", "1h"),
    ("GRACE_SECONDS", "soon"),
    ("GPU_MEMORY_UTILIZATION", "1.5"),
    ("GPU_MEMORY_UTILIZATION", "0"),
    ("POLL_SECONDS", "0"),
    ("POLL_SECONDS", "-1"),
    ("POLL_SECONDS", "1s"),
])
def test_it_names_a_setting_with_a_bad_value(fleet, name, value):
    result = fleet.run(**{name: value})

    assert result.returncode != 0
    assert name in result.stderr
    assert fleet.standins() == []


def test_it_refuses_to_run_on_fewer_gpus_than_needed(fleet):
    fleet.set_gpu_count(4)

    result = fleet.run()

    assert result.returncode != 0
    assert "nvidia-smi lists 4 GPU(s)" in result.stderr
    assert fleet.standins() == []


def test_it_skips_the_gpu_count_without_nvidia_smi(fleet):
    if shutil.which("nvidia-smi"):
        pytest.skip("this machine has a real nvidia-smi")
    fleet.set_gpu_count(None)
    launch = fleet.launch(NUM_INSTANCES="1", FIRST_GPU="64")

    launch.wait_for_output("JUDGE_BASE_URLS=")

    assert launch.standins()[0]["cuda"] == "64,65,66,67"
    launch.stop(signal.SIGTERM)


def test_it_refuses_a_port_that_is_already_taken(fleet):
    env = fleet.env(NUM_INSTANCES="1")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", int(env["BASE_PORT"])))
        busy.listen()
        result = subprocess.run(
            ["bash", str(SCRIPT)], env=env, cwd=fleet.tmp_path, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=SHUTDOWN,
        )

    assert result.returncode != 0
    assert f"port {env['BASE_PORT']} on 127.0.0.1 is already in use" in result.stderr
    assert fleet.standins() == []


@pytest.mark.parametrize(("seconds", "audios"), [
    (None, None), ("1", "1"), ("157", "2"), ("301", "8"), ("600", "16"), ("3600", "3"),
])
def test_its_audio_limits_are_the_ones_judge_limits_computes(fleet, seconds, audios):
    launch = fleet.launch(NUM_INSTANCES="1", MAX_AUDIO_SECONDS=seconds, MAX_AUDIOS=audios)
    launch.wait_for_output("JUDGE_BASE_URLS=")

    [standin] = launch.standins()
    argv = standin["argv"]
    limits = audio_limits_for(int(seconds or DEFAULT_MAX_AUDIO_SECONDS), DEFAULT_MAX_AUDIO_FILE_MB)
    assert {name: int(standin["env"][name]) for name in limits} == limits
    assert f"files up to {limits['VLLM_MAX_AUDIO_CLIP_FILESIZE_MB']} MiB" in launch.errors()
    expected = batched_tokens_for(int(seconds or DEFAULT_MAX_AUDIO_SECONDS))
    assert flag(argv, "--max-num-batched-tokens") == str(expected)
    assert json.loads(flag(argv, "--limit-mm-per-prompt")) == {
        "audio": int(audios or DEFAULT_MAX_AUDIOS)
    }
    launch.stop(signal.SIGTERM)


def test_it_waits_for_health_then_sends_one_audio_smoke_request_per_server(fleet):
    launch = fleet.launch(STANDIN_HEALTH_DELAY="2")
    launch.wait_for_output("JUDGE_BASE_URLS=")
    printed = time.time()

    base = launch.base_port
    for port in (base, base + 1):
        health = [r for r in fleet.requests("/health") if r["port"] == port]
        [smoke] = [r for r in fleet.requests("/v1/chat/completions") if r["port"] == port]
        assert [r["status"] for r in health][-1] == 200 and 503 in {r["status"] for r in health}
        first_ok = min(r["at"] for r in health if r["status"] == 200)
        assert first_ok <= smoke["at"] <= printed
        assert smoke["status"] == 200
        # Text, then the audio, then the question: the order the judge's prompts use.
        assert smoke["reply"]["parts"] == ["text", "audio_url", "text"]
    assert fleet.requests("/v1/models") == []
    assert f"instance 1 (port {base + 1}, GPUs 4,5,6,7) is ready" in launch.errors()
    launch.stop(signal.SIGTERM)


def test_it_forwards_the_api_key_and_sends_it_on_its_own_requests_only(fleet):
    key = "k3y-for-the-judge"
    launch = fleet.launch(NUM_INSTANCES="1", API_KEY=key)
    launch.wait_for_output("JUDGE_BASE_URLS=")

    [standin] = launch.standins()
    # In the server's environment only: never on a command line, which every user can list.
    assert standin["env"]["VLLM_API_KEY"] == key and key not in " ".join(standin["argv"])
    assert flag(standin["argv"], "--middleware") == "mmae_judge_guard.KeyEverywhere"
    assert (Path(standin["env"]["PYTHONPATH"].split(":")[0]) / "mmae_judge_guard.py").is_file()
    url = f"http://127.0.0.1:{launch.base_port}/v1/models"
    assert (http_status(url), http_status(url, key)) == (401, 200)  # the server requires it
    requests = fleet.requests()
    assert {r["path"] for r in requests} >= {"/health", "/v1/chat/completions"}
    own = [r for r in requests if r["path"] != "/v1/models"]
    assert {(r["authorization"], r["status"]) for r in own} == {(f"Bearer {key}", 200)}
    log = (fleet.tmp_path / "logs" / f"qwen3-omni-{launch.base_port}.log").read_text()
    assert "'--middleware' 'mmae_judge_guard.KeyEverywhere'" in log
    launch.stop(signal.SIGTERM)
    assert key not in launch.errors() + launch.output() + log


def test_it_stops_all_when_a_smoke_request_fails_and_names_the_server(fleet):
    launch = fleet.launch_troubling_the_second("STANDIN_SMOKE_FAIL_PORT")

    assert launch.finish() == 1

    port = launch.base_port + 1
    errors = launch.errors()
    assert (f"instance 1 (port {port}, GPUs 4,5,6,7) answered its smoke request (1 s of 16 kHz "
            "audio and a text) with HTTP 500: an empty body") in errors
    assert f"last lines of {fleet.tmp_path}/logs/qwen3-omni-{port}.log" in errors
    assert "JUDGE_BASE_URLS" not in launch.output()
    assert wait_until_gone(fleet.pids()) == []


@pytest.mark.parametrize(("variables", "started"), [
    ({"STANDIN_VERSION": "0.11.2"}, False),
    ({"STANDIN_VERSION": "0.11.2", "ALLOW_OTHER_VLLM": "1"}, True),
    ({"STANDIN_VERSION": f"{PINNED}+cu129", "VLLM_VERSION": f"v{PINNED}"}, True),
])
def test_it_checks_the_vllm_version(fleet, variables, started):
    if not started:
        result = fleet.run(**variables)
        assert result.returncode == 2
        assert f"vllm --version says 0.11.2, but this script is written for vLLM {PINNED}" in (
            result.stderr
        )
        assert "ALLOW_OTHER_VLLM=1" in result.stderr
        assert fleet.standins() == []
        return
    launch = fleet.launch(NUM_INSTANCES="1", **variables)
    launch.wait_for_output("JUDGE_BASE_URLS=")
    assert ("warning: vllm --version says 0.11.2" in launch.errors()) == (
        "ALLOW_OTHER_VLLM" in variables
    )
    launch.stop(signal.SIGTERM)


@pytest.mark.parametrize(("name", "config", "message"), [
    ("Qwen3-Omni-30B-A3B-Thinking", INSTRUCT_CONFIG, "is the Thinking variant"),
    ("qwen3-omni-captioner", None, "is the Captioner variant"),
    ("judge-weights", {**INSTRUCT_CONFIG, "_name_or_path": "Qwen/Qwen3-Omni-30B-A3B-Thinking"},
     "names the Thinking variant ('Qwen/Qwen3-Omni-30B-A3B-Thinking')"),
    ("judge-weights", {"model_type": "qwen2_5_omni"},
     "names model_type 'qwen2_5_omni', not Qwen3-Omni's qwen3_omni_moe"),
])
def test_it_refuses_a_model_other_than_the_instruct_variant(fleet, name, config, message):
    model_dir = fleet.tmp_path / name
    model_dir.mkdir()
    if config is not None:
        (model_dir / "config.json").write_text(json.dumps(config))

    result = fleet.run(MODEL_DIR=str(model_dir))

    assert result.returncode == 2
    assert message in result.stderr
    assert "only Qwen3-Omni-30B-A3B-Instruct is supported" in result.stderr
    assert fleet.standins() == []


def test_the_judge_image_builds_the_vllm_release_the_script_expects():
    dockerfile = (ROOT / "docker" / "Dockerfile.judge").read_text()
    [default] = re.findall(r"^ARG VLLM_VERSION=v?(\S+)$", dockerfile, re.M)
    assert default == PINNED
    assert "FROM vllm/vllm-openai:${VLLM_VERSION}" in dockerfile
    assert '"vllm[audio]==${VLLM_VERSION#v}"' in dockerfile
    assert re.search(r"^\s+VLLM_VERSION=\$\{VLLM_VERSION\}$", dockerfile, re.M)
    compose = (ROOT / "docker" / "compose.yml").read_text()
    assert f"VLLM_VERSION: ${{VLLM_VERSION:-v{PINNED}}}" in compose


def test_it_binds_the_loopback_address_unless_told_and_never_every_interface_without_a_key(
        fleet):
    env = fleet.env(NUM_INSTANCES="1")
    env.pop("HOST", None)
    launch = Launch(fleet, env)
    fleet.launches.append(launch)
    launch.wait_for_output("JUDGE_BASE_URLS=")
    assert flag(launch.standins()[0]["argv"], "--host") == "127.0.0.1"
    launch.stop(signal.SIGTERM)

    result = fleet.run(HOST="0.0.0.0")
    assert result.returncode != 0
    assert "HOST=0.0.0.0 binds every interface, but API_KEY is not set" in result.stderr


def guard_class():
    """The guard middleware as the script writes it for `vllm serve --middleware`."""
    source = re.search(r"<<'GUARD'\n(.*?)\nGUARD\n", SCRIPT.read_text(), re.S)[1]
    namespace: dict = {}
    exec(compile(source, "mmae_judge_guard.py", "exec"), namespace)  # noqa: S102
    return namespace["KeyEverywhere"]


def through_guard(monkeypatch, scope: dict, key: str | None = "s3cret") -> tuple[bool, list]:
    """Whether the app behind the guard was reached, and what the guard sent itself."""
    import asyncio

    if key is None:
        monkeypatch.delenv("VLLM_API_KEY", raising=False)
    else:
        monkeypatch.setenv("VLLM_API_KEY", key)
    reached, sent = [], []

    async def app(scope, receive, send):
        reached.append(scope["path"])

    async def receive():
        return {"type": "http.request", "body": b""}

    async def send(message):
        sent.append(message)

    asyncio.run(guard_class()(app)({"root_path": "", **scope}, receive, send))
    return bool(reached), sent


def http(method: str, path: str, authorization: str | None = None) -> dict:
    headers = [(b"authorization", authorization.encode())] if authorization else []
    return {"type": "http", "method": method, "path": path, "headers": headers}


@pytest.mark.parametrize(("scope", "allowed"), [
    (http("GET", "/health"), True),
    (http("HEAD", "/ping"), True),
    (http("POST", "/invocations"), False),  # chat completions for SageMaker, unguarded by vLLM
    (http("POST", "/invocations", "Bearer wrong"), False),
    (http("POST", "/invocations", "Bearer s3cret"), True),
    (http("POST", "/v1/chat/completions", "bearer s3cret"), True),
    (http("POST", "/health"), False),
    (http("GET", "/metrics"), False),
    (http("GET", "/metrics", "Bearer s3cret"), True),
    (http("POST", "/tokenize"), False),
    (http("GET", "/v1/models", "Basic s3cret"), False),
    ({"type": "websocket", "path": "/v1/realtime", "headers": []}, False),
])
def test_the_guard_asks_the_key_everywhere_but_the_health_probes(monkeypatch, scope, allowed):
    reached, sent = through_guard(monkeypatch, scope)
    assert reached is allowed
    if not allowed and scope["type"] == "http":
        assert sent[0]["status"] == 401 and json.loads(sent[1]["body"]) == {
            "error": "Unauthorized"}
    if not allowed and scope["type"] == "websocket":
        assert sent == [{"type": "websocket.close", "code": 1008}]


def test_the_guard_lets_everything_through_without_a_key(monkeypatch):
    assert through_guard(monkeypatch, http("POST", "/invocations"), key=None) == (True, [])
