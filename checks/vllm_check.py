"""`make vllm-check`: the judge client and the judge simulator checked against vLLM's own code.

1. vLLM (VLLM_VERSION, 0.33.0) in its own cached virtual environment,
   ${XDG_CACHE_HOME:-~/.cache}/mmae-board/vllm-VERSION, installed (CPU build, with the audio
   extra) only when missing; never into the project's.
2. A stand-in Qwen3-Omni model directory (checks/stand_in_model.py: config, processor,
   tokenizer and chat template, no weights, nothing downloaded), rebuilt when missing or when
   that file changes.
3. `vllm launch render` (vLLM's GPU-less server: the same request model, API-key middleware,
   chat parsing, audio loading, Qwen3-Omni processor and prompt-length check as `vllm serve`,
   stopping before generation) with launch_qwen3_omni.sh's own flags, read from the script, its
   guard middleware (extracted from the script), VLLM_API_KEY and its audio limits.
4. Every request body of two scoring runs (`manage.py score` of a synthetic MMAE benchmark and
   of an AIR-Bench chat one, against a simulator that keeps each body) rendered by vLLM: each
   must answer 200.
5. Each refusal case sent to vLLM and to the judge simulator (`manage.py judge_simulator`):
   the statuses must agree.

Each audio item's tokens in vLLM's prompt must also equal the simulator's count, and sit where
the body puts it, after its label (`--chat-template-content-format openai`). Prints a
table of the cases (they agree when the status, and for vLLM's ErrorResponse its
`type` and `param`, are the same); exits 1 on any disagreement or any body vLLM does not render.
Needs about 10 GB for vLLM; not part of `make test`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import importlib.util
import io
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import wave
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx
import numpy as np
import soundfile
from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from judge import limits  # noqa: E402

SCRIPT = ROOT / "launch_qwen3_omni.sh"
STAND_IN = ROOT / "checks" / "stand_in_model.py"
VLLM_VERSION = os.environ.get("VLLM_VERSION", "0.33.0")
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mmae-board"
# Flags of the script's `vllm serve` that only a GPU server takes (render loads no weights).
GPU_FLAGS = ("--host", "--port", "--tensor-parallel-size", "--gpu-memory-utilization")
RENDER = "/v1/chat/completions/render"
NO_KEEPALIVE = httpx.Limits(max_keepalive_connections=0)
CHAT = "/v1/chat/completions"


def log(message: str) -> None:
    print(f"vllm-check: {message}", file=sys.stderr, flush=True)


# --- 1. vLLM's environment ----------------------------------------------------------------------

def ensure_vllm() -> Path:
    venv = CACHE / f"vllm-{VLLM_VERSION}"
    vllm = venv / "bin" / "vllm"
    if vllm.exists():
        return venv
    log(f"installing vLLM {VLLM_VERSION} (CPU) into {venv}; this takes a while and ~10 GB")
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["python3", "-m", "venv", str(venv)], check=True)
    env = {**os.environ, "VLLM_TARGET_DEVICE": "cpu"}
    subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "--upgrade", "pip"],
                   check=True, env=env)
    subprocess.run([str(venv / "bin" / "pip"), "install", f"vllm[audio]=={VLLM_VERSION}"],
                   check=True, env=env)
    return venv


# --- 2. the stand-in model ----------------------------------------------------------------------

def ensure_model(venv: Path) -> Path:
    out = CACHE / "qwen3-omni-stand-in"
    stamp = out / "BUILT-FROM"
    digest = hashlib.sha256(STAND_IN.read_bytes()).hexdigest()
    if (out / "config.json").exists() and stamp.exists() and stamp.read_text() == digest:
        return out
    log(f"writing the stand-in Qwen3-Omni model directory {out}")
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([str(venv / "bin" / "python"), str(STAND_IN), str(out)], check=True)
    stamp.write_text(digest)
    return out


# --- 3. the launch script's server --------------------------------------------------------------

@dataclass
class Launch:
    """What launch_qwen3_omni.sh gives each server by default."""

    settings: dict
    flags: list
    environment: dict
    guard: str


def _substitute(value: str, values: dict, flag: str) -> str:
    def one(match):
        name = match.group(1) or match.group(2)
        if name not in values:
            raise SystemExit(f"{SCRIPT}: {flag} uses ${name}, which has no default")
        return values[name]
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", one, value)


def read_launch_script(text: str) -> Launch:
    settings = dict(re.findall(r"^([A-Z_]+)=\$\{\1:-([^}]*)\}$", text, re.M))
    seconds, file_mb = int(settings["MAX_AUDIO_SECONDS"]), int(settings["MAX_AUDIO_FILE_MB"])
    values = {**settings, "BATCHED_TOKENS": str(limits.batched_tokens_for(seconds))}
    block = re.search(r"^  local cmd=\(\n(.*?)^  \)$", text, re.M | re.S)
    guard = re.search(r"<<'GUARD'\n(.*?)^GUARD$", text, re.M | re.S)
    if block is None or guard is None:
        raise SystemExit(f"{SCRIPT}: no `local cmd=(...)` block or guard heredoc found")
    words = shlex.split(block.group(1))
    if words[:3] != ["vllm", "serve", "$MODEL_DIR"]:
        raise SystemExit(f"{SCRIPT}: the command is not `vllm serve \"$MODEL_DIR\" ...`")
    flags, rest = [], words[3:]
    while rest:
        flag = rest.pop(0)
        value = rest.pop(0) if rest and not rest[0].startswith("--") else None
        if flag in GPU_FLAGS:
            continue
        flags.append(flag)
        if value is not None:
            flags.append(_substitute(value, values, flag))
    for flag in re.findall(r"guard=\((--middleware [\w.]+)\)", text):
        flags += flag.split()
    environment = {k: str(v) for k, v in limits.audio_limits_for(seconds, file_mb).items()}
    for name in environment:
        if name not in text:
            raise SystemExit(f"{SCRIPT}: no longer sets {name}")
    return Launch(settings, flags, environment, guard.group(1))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_ready(url: str, process: subprocess.Popen, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{what} exited with code {process.returncode} before it was ready")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise SystemExit(f"{what} did not answer GET /health within {timeout:.0f} s")


def start_render(venv: Path, model: Path, launch: Launch, key: str, work: Path, log_file):
    guard_dir = work / "guard"
    guard_dir.mkdir()
    (guard_dir / "mmae_judge_guard.py").write_text(launch.guard)
    port = free_port()
    command = [str(venv / "bin" / "vllm"), "launch", "render", str(model), "--host", "127.0.0.1",
               "--port", str(port), *launch.flags]
    env = {**os.environ, **launch.environment, "VLLM_TARGET_DEVICE": "cpu",
           "VLLM_API_KEY": key, "PYTHONPATH": str(guard_dir)}
    log(f"starting {' '.join(shlex.quote(w) for w in command[1:])} with "
        + " ".join(f"{k}={v}" for k, v in launch.environment.items()))
    process = subprocess.Popen(command, env=env, stdout=log_file, stderr=subprocess.STDOUT,
                               start_new_session=True, cwd=work)
    return process, f"http://127.0.0.1:{port}"


def start_simulator(launch: Launch, key: str, log_file):
    port = free_port()
    command = [sys.executable, str(ROOT / "manage.py"), "judge_simulator", "--ports", str(port),
               "--latency-ms", "1", "--model", launch.settings["SERVED_MODEL_NAME"],
               "--max-audios", launch.settings["MAX_AUDIOS"], "--refuse-unreadable-audio"]
    process = subprocess.Popen(command, env={**os.environ, "VLLM_API_KEY": key}, cwd=ROOT,
                               stdout=log_file, stderr=subprocess.STDOUT,
                               start_new_session=True)
    return process, f"http://127.0.0.1:{port}"


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


# --- 4. the bodies of scoring runs --------------------------------------------------------------

class Recorder:
    """A judge simulator in a thread that keeps every chat completion body it is sent."""

    def __init__(self, key: str, model: str):
        import django

        django.setup()
        from aiohttp import web

        from judge.simulator import PortState, SimulatorConfig, make_app
        from scoring.kinds import simulated_replies

        self.bodies: list[bytes] = []
        self.port = free_port()
        config = SimulatorConfig(latency_ms=1, api_key=key, model=model,
                                 replies=simulated_replies())
        app = make_app(PortState(self.port, config))

        @web.middleware
        async def keep(request, handler):
            if request.method == "POST" and request.path == CHAT:
                self.bodies.append(await request.read())
            return await handler(request)

        app.middlewares.append(keep)
        self.loop = asyncio.new_event_loop()
        self.runner = web.AppRunner(app, access_log=None)
        self.loop.run_until_complete(self.runner.setup())
        self.loop.run_until_complete(web.TCPSite(self.runner, "127.0.0.1", self.port).start())
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)


def score(kind: str, meta: Path, predictions: Path, audio_root: Path, out: Path, url: str,
          key: str, model: str) -> None:
    command = [sys.executable, str(ROOT / "manage.py"), "score", "--kind", kind, "--meta",
               str(meta), "--predictions", str(predictions), "--audio_root", str(audio_root),
               "--base_urls", url, "--output_dir", str(out), "--concurrency", "4",
               "--model", model, "--api_key", key]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"manage.py score --kind {kind} failed:\n{done.stdout}{done.stderr}")


def airbench_chat(root: Path) -> tuple[Path, Path]:
    """A small AIR-Bench chat benchmark in the official shape and a system's responses."""
    from scoring.synthetic import write_wav

    tasks = (("speech_QA", "iemocap"), ("speech_dialogue_QA", "fisher"), ("sound_QA", "clotho"),
             ("music_QA", "musiccaps"), ("speech_and_sound_QA", "audiocaps_cv"),
             ("speech_and_music_QA", "musiccaps_cv"))
    items, responses = [], []
    for i in range(24):
        task, dataset = tasks[i % len(tasks)]
        items.append({"meta_info": f"A synthetic description of clip {i}: a tone and noise.",
                      "question": f"What is heard in clip {i}?",
                      "answer_gt": f"A tone of {220 + 10 * i} Hz with a little noise.",
                      "path": f"{i}.wav", "task_name": task, "dataset_name": dataset,
                      "uniq_id": i})
        write_wav(root / "audio" / "Chat" / f"{task}_{dataset}" / f"{i}.wav", seconds=0.5,
                  frequency=220 + 10 * i, seed=i)
        responses.append({"uniq_id": i, "response": f"I hear a steady tone, number {i}."})
    meta = root / "Chat_meta.json"
    meta.write_text(json.dumps(items))
    predictions = root / "responses.jsonl"
    predictions.write_text("".join(json.dumps(r) + "\n" for r in responses))
    return meta, predictions


def scoring_bodies(work: Path, key: str, model: str, samples: int) -> dict[str, list[bytes]]:
    from scoring.synthetic import write_benchmark, write_system

    recorder = Recorder(key, model)
    bodies = {}
    try:
        root = work / "mmae"
        meta = write_benchmark(root, samples, seed=7, seconds=2.5)
        predictions = write_system(root, json.loads(meta.read_text()), name="check",
                                   seconds=3.7)
        score("mmae", meta, predictions, root, work / "mmae-out", recorder.url, key, model)
        bodies["mmae"] = recorder.bodies[:]
        recorder.bodies.clear()
        root = work / "airbench"
        meta, predictions = airbench_chat(root)
        score("airbench-chat", meta, predictions, root / "audio", work / "airbench-out",
              recorder.url, key, model)
        bodies["airbench-chat"] = recorder.bodies[:]
    finally:
        recorder.close()
    return bodies


@dataclass
class Rendered:
    failures: list  # (run, status, message) of each body not rendered
    audio_items: int = 0
    vllm_audio_tokens: int = 0  # the lengths of vLLM's audio placeholders
    simulator_audio_tokens: int = 0  # the simulator's count of the same
    items_counted_differently: int = 0
    # bodies whose audio vLLM's prompt does not place as the body does (each after its label)
    misplaced: list = field(default_factory=list)


def simulator_audio_tokens(body: dict, held: dict[str, str]) -> list[int]:
    """The audio tokens the simulator counts for each audio part of a body, in order; `held`
    (uuid -> data: URL) is the audio the bodies before it sent with a uuid, which a part may
    name by its uuid alone (as vLLM's processor cache holds it), and takes this body's."""
    from judge.requests import check_request
    from judge.simulator import SimulatorConfig

    checked = check_request(body, SimulatorConfig(model=body["model"]), held)
    held.update((uuid, url) for uuid, url, sent in checked.audio if sent and uuid)
    return checked.audio_tokens


def stand_in_tokens() -> dict[str, int]:
    """The stand-in tokenizer's special tokens (checks/stand_in_model.py, which imports
    transformers only when it builds)."""
    spec = importlib.util.spec_from_file_location("stand_in_model", STAND_IN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SPECIAL_TOKENS


def text_before_each_audio(body: dict) -> list[bool]:
    """For each audio part of a body: whether text (its label) comes between it and the start
    of its message or the audio before it."""
    found = []
    for message in body["messages"]:
        text = False
        for part in message["content"] if isinstance(message["content"], list) else []:
            if part.get("type") == "audio_url":
                found.append(text)
                text = False
            elif part.get("type") == "text" and part.get("text", "").strip():
                text = True
    return found


def text_before_each_placeholder(token_ids: list[int]) -> list[bool]:
    """The same read from a rendered prompt: whether each audio's start token follows text,
    rather than the audio before it or its message's header (<|im_start|>role, newline)."""
    tokens = stand_in_tokens()
    start, end, header = (tokens[name] for name in
                          ("<|audio_start|>", "<|audio_end|>", "<|im_start|>"))
    return [not (token_ids[i - 1] == end or (i >= 3 and token_ids[i - 3] == header))
            for i, token in enumerate(token_ids) if token == start]


def render_all(url: str, key: str, bodies: dict[str, list[bytes]]) -> Rendered:
    """Each body POSTed to vLLM's render endpoint; each audio's placeholder tokens compared
    with the simulator's count."""
    rendered = Rendered([])
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    total = sum(len(b) for b in bodies.values())
    progress = tqdm(total=total, desc="rendering bodies", unit="body", file=sys.stderr)
    held: dict[str, str] = {}
    with httpx.Client(timeout=300, limits=NO_KEEPALIVE) as client, progress as bar:
        for run, run_bodies in bodies.items():
            for body in run_bodies:
                bar.update()
                try:
                    response = client.post(url + RENDER, content=body, headers=headers)
                except httpx.HTTPError as exc:
                    rendered.failures.append((run, 0, f"no answer: {exc!r}"))
                    continue
                if response.status_code != 200:
                    rendered.failures.append((run, response.status_code, response.text[:300]))
                    continue
                answer = response.json()
                features = answer.get("features") or {}
                placeholders = [p["length"] for p in
                                (features.get("mm_placeholders") or {}).get("audio", [])]
                parsed = json.loads(body)
                ours = simulator_audio_tokens(parsed, held)
                if text_before_each_audio(parsed) != text_before_each_placeholder(
                        answer.get("token_ids") or []):
                    rendered.misplaced.append(run)
                rendered.audio_items += len(ours)
                rendered.vllm_audio_tokens += sum(placeholders)
                rendered.simulator_audio_tokens += sum(ours)
                rendered.items_counted_differently += sum(
                    a != b for a, b in zip(placeholders, ours, strict=False)) + abs(
                    len(placeholders) - len(ours))
    return rendered


# --- 5. refusal cases ---------------------------------------------------------------------------

def sound(seconds: float, *, rate: int = 16000, channels: int = 1, fmt: str = "WAV",
          subtype: str = "PCM_16") -> bytes:
    """A quiet tone of `seconds` (frames rounded) as a sound file."""
    frames = round(seconds * rate)
    t = np.arange(frames) / rate
    data = np.repeat((0.1 * np.sin(2 * np.pi * 440 * t))[:, None], channels, axis=1)
    buffer = io.BytesIO()
    soundfile.write(buffer, data, rate, format=fmt, subtype=subtype)
    return buffer.getvalue()


def wav_of_size(size: int) -> bytes:
    """A silent 16 kHz mono 16-bit WAV of `size` bytes (header included)."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(16000)
        handle.writeframes(bytes((size - 44) // 2 * 2))
    return buffer.getvalue()


def uri(data: bytes, mime: str = "audio/wav") -> str:
    return f"data:{mime};base64," + base64.b64encode(data).decode()


@dataclass
class Answer:
    status: int
    type: str | None  # the ErrorResponse's, if the answer is one
    param: str | None
    message: str

    def agrees(self, other: Answer) -> bool:
        return (self.status, self.type, self.param) == (other.status, other.type, other.param)


@dataclass
class Case:
    name: str
    body: bytes | None = None  # a chat completion body (sent as JSON unless content_type)
    content_type: str = "application/json"
    key: str | None = "right"  # "right", "wrong" or None (no Authorization header)
    path: str = CHAT  # on the simulator; vLLM's render server takes chat at RENDER
    method: str = "POST"
    expected: int | None = None  # what vLLM 0.33 answers, for the table's reader
    vllm: Answer | None = None
    simulator: Answer | None = None


def cases(launch: Launch) -> list[Case]:
    model = launch.settings["SERVED_MODEL_NAME"]
    max_len = int(launch.settings["MAX_MODEL_LEN"])
    audios = int(launch.settings["MAX_AUDIOS"])
    env = launch.environment
    file_mb = int(env["VLLM_MAX_AUDIO_CLIP_FILESIZE_MB"])
    decode_s = int(env["VLLM_MAX_AUDIO_DECODE_DURATION_S"])
    decode_bytes = int(env["VLLM_MAX_AUDIO_DECODE_BYTES"])
    one_second = uri(sound(1))

    def chat(*audio_uris, text="Is audio 1 speech, music or a tone?", uuid=None,
             **fields) -> bytes:
        """A chat of the audio; with `uuid`, the first audio part carries it (None as the
        URI: the part names its audio by the uuid alone)."""
        content = [{"type": "text", "text": "Audio 1:"}]
        content += [{"type": "audio_url", "audio_url": {"url": u} if u else None}
                    for u in audio_uris]
        if uuid is not None:
            content[1]["uuid"] = uuid
        content.append({"type": "text", "text": text})
        body = {"model": model, "messages": [{"role": "user", "content": content}],
                "max_tokens": 16, "temperature": 0, **fields}
        return json.dumps(body).encode()

    # Decoded float32 bytes just over the limit within the duration limit: 192 kHz, as many
    # channels as it takes (FLAC of a tone stays small).
    channels = -(-decode_bytes // (decode_s * 192_000 * 4)) + 1
    over_bytes_seconds = decode_bytes / (192_000 * channels * 4) * 1.05
    return [
        Case("1 s of 16 kHz audio and text", chat(one_second), expected=200),
        # In this order: vLLM's processor cache holds the audio sent with its uuid.
        Case("1 s of audio with a uuid", chat(one_second, uuid="vllm-check-a"), expected=200),
        Case("that audio by its uuid alone", chat(None, uuid="vllm-check-a"), expected=200),
        Case("an audio by a uuid never sent (cache miss)", chat(None, uuid="vllm-check-b"),
             expected=400),
        Case("an audio with neither data nor uuid", chat(None), expected=400),
        Case(f"audio file over {file_mb} MiB (VLLM_MAX_AUDIO_CLIP_FILESIZE_MB)",
             chat(uri(wav_of_size(file_mb * limits.MiB + 1024))), expected=400),
        Case(f"{decode_s + 1} s of audio (VLLM_MAX_AUDIO_DECODE_DURATION_S {decode_s})",
             chat(uri(sound(decode_s + 1, rate=8000))), expected=400),
        Case(f"{decode_s} s of audio", chat(uri(sound(decode_s, rate=8000))), expected=200),
        Case(f"{over_bytes_seconds:.0f} s at 192 kHz x {channels} channels: over "
             f"{decode_bytes / limits.MiB:.0f} MiB decoded (VLLM_MAX_AUDIO_DECODE_BYTES)",
             chat(uri(sound(over_bytes_seconds, rate=192_000, channels=channels, fmt="FLAC",
                            subtype="PCM_16"), "audio/flac")), expected=400),
        Case(f"{audios + 1} audios (--limit-mm-per-prompt {audios})",
             chat(*[uri(sound(0.5))] * (audios + 1)), expected=400),
        Case(f"{audios} audios", chat(*[uri(sound(0.5))] * audios), expected=200),
        Case(f"a prompt longer than --max-model-len {max_len}",
             chat(one_second, text="word " * (max_len + 8000)), expected=400),
        Case(f"max_tokens {max_len + 1} (over --max-model-len)",
             chat(one_second, max_tokens=max_len + 1), expected=400),
        Case(f"max_tokens {max_len} (prompt + max_tokens over the length)",
             chat(one_second, max_tokens=max_len), expected=200),
        Case("max_tokens 0", chat(one_second, max_tokens=0), expected=400),
        Case("n=3 at temperature 0", chat(one_second, n=3), expected=400),
        Case("n=3 at temperature 1", chat(one_second, n=3, temperature=1.0), expected=200),
        Case("Content-Type: text/plain", chat(one_second), content_type="text/plain",
             expected=400),
        Case("a body that is not JSON", b"{not json", expected=400),
        Case("10 ms of audio (160 samples at 16 kHz)", chat(uri(sound(0.01))), expected=400),
        Case("481 samples at 48 kHz (just over 10 ms)",
             chat(uri(sound(481 / 48_000, rate=48_000))), expected=200),
        Case("an unreadable audio file", chat(uri(b"RIFF\x10\x00\x00\x00WAVEjunk" * 8)),
             expected=500),
        Case("a model it does not serve", json.dumps({**json.loads(chat(one_second)),
                                                      "model": "Qwen2-Audio"}).encode(),
             expected=404),
        Case("no API key", chat(one_second), key=None, expected=401),
        Case("a wrong API key", chat(one_second), key="wrong", expected=401),
        Case("POST /invocations without the key", chat(one_second), key=None,
             path="/invocations", expected=401),
        Case("GET /v1/models without the key", key=None, path="/v1/models", method="GET",
             expected=401),
        Case("GET /v1/models", path="/v1/models", method="GET", expected=200),
        Case("GET /metrics without the key", key=None, path="/metrics", method="GET",
             expected=401),
        Case("GET /health without the key", key=None, path="/health", method="GET",
             expected=200),
    ]


def send(client: httpx.Client, url: str, case: Case, key: str, *, render: bool) -> tuple:
    headers = {}
    if case.key is not None:
        headers["Authorization"] = f"Bearer {key if case.key == 'right' else 'not-the-key'}"
    path = RENDER if render and case.path == CHAT else case.path
    try:
        if case.method == "GET":
            response = client.get(url + path, headers=headers)
        else:
            headers["Content-Type"] = case.content_type
            response = client.post(url + path, content=case.body, headers=headers)
    except httpx.HTTPError as exc:
        return Answer(0, None, None, f"no answer: {exc!r}")
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        error = None
    if isinstance(error, dict):  # vLLM's ErrorResponse
        return Answer(response.status_code, error.get("type"), error.get("param"),
                      str(error.get("message")))
    return Answer(response.status_code, None, None, str(error or ""))


def table(rows: list[Case]) -> str:
    """Each case's status from both; they agree when the status, and for an ErrorResponse its
    type and param, are the same."""
    width = max(len(c.name) for c in rows)
    lines = [f"{'case':<{width}}  vLLM  simulator  agree",
             f"{'-' * width}  ----  ---------  -----"]
    for c in rows:
        if c.vllm.agrees(c.simulator):
            agree = "yes"
        elif c.vllm.status == c.simulator.status:
            agree = f"NO (type/param: {c.vllm.type}/{c.vllm.param} vs " \
                    f"{c.simulator.type}/{c.simulator.param})"
        else:
            agree = "NO"
        lines.append(f"{c.name:<{width}}  {c.vllm.status:>4}  {c.simulator.status:>9}  {agree}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=12,
                        help="samples of the synthetic MMAE benchmark scored (default 12)")
    parser.add_argument("--ready-timeout", type=float, default=900)
    parser.add_argument("--verbose", action="store_true",
                        help="print each case's messages from both servers")
    args = parser.parse_args()

    launch = read_launch_script(SCRIPT.read_text())
    venv = ensure_vllm()
    model = ensure_model(venv)
    key = secrets.token_hex(16)  # a throwaway key for this run
    served = launch.settings["SERVED_MODEL_NAME"]
    with tempfile.TemporaryDirectory(prefix="vllm-check-") as tmp:
        work = Path(tmp)
        render_log = (work / "render.log").open("wb")
        simulator_log = (work / "simulator.log").open("wb")
        render, render_url = start_render(venv, model, launch, key, work, render_log)
        simulator, simulator_url = start_simulator(launch, key, simulator_log)
        try:
            try:
                wait_ready(simulator_url, simulator, "the judge simulator", 120)
                wait_ready(render_url, render, "vllm launch render", args.ready_timeout)
            except SystemExit:
                render_log.flush()
                print((work / "render.log").read_text()[-4000:], file=sys.stderr)
                raise
            log("scoring a synthetic MMAE benchmark and an AIR-Bench chat one to collect "
                "their request bodies")
            bodies = scoring_bodies(work, key, served, args.samples)
            rendered = render_all(render_url, key, bodies)
            failures = rendered.failures
            all_cases = cases(launch)
            # A new connection for each request: both servers close idle ones after 5 s.
            with httpx.Client(timeout=600, limits=NO_KEEPALIVE) as client:
                for case in tqdm(all_cases, desc="refusal cases", unit="case", file=sys.stderr):
                    case.vllm = send(client, render_url, case, key, render=True)
                    case.simulator = send(client, simulator_url, case, key, render=False)
                    case.body = None  # some are large
        finally:
            stop(render)
            stop(simulator)
            render_log.close()
            simulator_log.close()

    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"make vllm-check, {date}: vLLM {VLLM_VERSION} (vllm launch render, stand-in "
          f"Qwen3-Omni) against the judge simulator, launch_qwen3_omni.sh's defaults:")
    print("  " + " ".join(launch.flags))
    print("  " + " ".join(f"{k}={v}" for k, v in launch.environment.items()))
    print()
    for run, run_bodies in bodies.items():
        bad = sum(1 for f in failures if f[0] == run)
        print(f"{run}: {len(run_bodies)} request bodies, {len(run_bodies) - bad} rendered (200)")
    for run, status, message in failures[:10]:
        print(f"  {run}: HTTP {status}: {message}")
    print(f"audio: {rendered.audio_items} items, {rendered.vllm_audio_tokens} placeholder tokens "
          f"in vLLM's prompts, {rendered.simulator_audio_tokens} counted by the simulator; "
          f"{rendered.items_counted_differently} items counted differently")
    print(f"labels: {len(rendered.misplaced)} bodies whose audio vLLM's prompt does not place "
          "where the body does (after its label text)")
    print()
    print(table(all_cases))
    if args.verbose:
        for c in all_cases:
            print(f"\n{c.name}\n  vLLM:      {c.vllm.message[:300]}\n"
                  f"  simulator: {c.simulator.message[:300]}")
    disagree = [c for c in all_cases if not c.vllm.agrees(c.simulator)]
    unexpected = [c for c in all_cases if c.expected is not None and c.vllm.status != c.expected]
    for c in unexpected:
        print(f"note: vLLM answered {c.vllm.status} to {c.name!r}, not the {c.expected} this "
              "check was written for")
    ok = not failures and not disagree and all(bodies.values()) \
        and not rendered.items_counted_differently and not rendered.misplaced
    print(f"\n{'PASS' if ok else 'FAIL'}: {sum(len(b) for b in bodies.values()) - len(failures)}"
          f" of {sum(len(b) for b in bodies.values())} bodies rendered, "
          f"{len(all_cases) - len(disagree)} of {len(all_cases)} cases agree")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
