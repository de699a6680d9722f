"""launch_qwen3_omni.sh: starts a fleet of vLLM servers, waits for them, stops them all.

A stand-in `vllm` first on PATH plays each server: it records how it was started, starts a child
process (as vLLM starts its tensor-parallel workers) and answers GET /v1/models on its --port.
A stand-in `nvidia-smi` lists eight GPUs, so the tests do not depend on the machine's.
"""

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "launch_qwen3_omni.sh"
SETTINGS = (
    "MODEL_DIR", "NUM_INSTANCES", "GPUS_PER_INSTANCE", "FIRST_GPU", "BASE_PORT", "HOST",
    "PUBLIC_HOST", "SERVED_MODEL_NAME", "MAX_MODEL_LEN", "DTYPE", "GPU_MEMORY_UTILIZATION",
    "READY_TIMEOUT", "GRACE_SECONDS", "LOG_DIR", "VLLM_EXTRA_ARGS",
)
STARTUP = 30  # seconds for the script to start stand-ins that answer at once
SHUTDOWN = 30  # seconds for the script to stop everything and exit

pytestmark = pytest.mark.integration

STANDIN_VLLM = """#!{python}
import json, os, signal, subprocess, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

args = sys.argv[1:]
port = int(args[args.index("--port") + 1])
name = args[args.index("--served-model-name") + 1]
if os.environ.get("STANDIN_IGNORE_TERM"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
record = {{
    "pid": os.getpid(), "pgid": os.getpgrp(), "worker": worker.pid, "argv": args,
    "cuda": os.environ.get("CUDA_VISIBLE_DEVICES"),
}}
with open(os.environ["STANDIN_RECORD"], "a") as f:
    f.write(json.dumps(record) + "\\n")
if os.environ.get("STANDIN_FAIL_PORT") == str(port):
    print("stand-in: failing on purpose", file=sys.stderr, flush=True)
    sys.exit(3)
if os.environ.get("STANDIN_SILENT"):
    signal.pause()


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path != "/v1/models":
            self.send_error(404)
            return
        body = json.dumps({{"object": "list", "data": [{{"id": name}}]}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


def free_base_port(count: int) -> int:
    """The first of `count` consecutive loopback ports that are free right now."""
    for _ in range(200):
        base = random.randint(20000, 60000)
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
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in (out := self.output()):
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
        self.model_dir = tmp_path / "model"
        self.model_dir.mkdir()
        self.record = tmp_path / "standins.jsonl"
        self.launches: list[Launch] = []
        vllm = self.bin / "vllm"
        vllm.write_text(STANDIN_VLLM.format(python=sys.executable))
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
        launch = Launch(self, self.env(**settings))
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
        assert flag(argv, "--host") == "0.0.0.0"
        assert flag(argv, "--served-model-name") == "Qwen3-Omni-30B-A3B-Instruct"
        assert flag(argv, "--tensor-parallel-size") == "4"
        assert flag(argv, "--dtype") == "bfloat16"
        assert flag(argv, "--max-model-len") == "32768"
        assert flag(argv, "--gpu-memory-utilization") == "0.9"
        assert json.loads(flag(argv, "--limit-mm-per-prompt")) == {"audio": 8}
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
    env = fleet.env()
    env["STANDIN_FAIL_PORT"] = str(int(env["BASE_PORT"]) + 1)
    launch = Launch(fleet, env)
    fleet.launches.append(launch)

    assert launch.finish() == 1

    errors = launch.errors()
    assert f"instance 1 (port {launch.base_port + 1}, GPUs 4,5,6,7) exited with code 3" in errors
    assert "stand-in: failing on purpose" in errors  # the tail of its log
    assert "JUDGE_BASE_URLS" not in launch.output()
    assert wait_until_gone(fleet.pids()) == []


def test_it_stops_all_when_a_server_dies_after_start(fleet):
    launch = fleet.launch()
    launch.wait_for_output("JUDGE_BASE_URLS=")
    first = min(launch.standins(), key=lambda s: int(flag(s["argv"], "--port")))

    os.kill(first["pid"], signal.SIGKILL)

    assert launch.finish() == 1
    assert f"instance 0 (port {launch.base_port}, GPUs 0,1,2,3) exited with code 137" in (
        launch.errors()
    )
    assert wait_until_gone(fleet.pids()) == []


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
