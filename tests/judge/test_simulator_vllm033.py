"""The judge simulator refuses what vLLM 0.33 refuses (`make vllm-check` compares them against
vLLM's own code; these run without vLLM): its audio limits, the model length, greedy sampling
with n > 1, a body that is not JSON, and the launch script's guard on /invocations."""

import base64
import importlib.util
import io
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile

from judge import limits
from judge.simulator import SimulatorConfig
from tests.httpclient import HTTP
from tests.judge.test_simulator import MODEL, post, query
from tests.judge.test_simulator_strict import audio_query, refused, wav_uri


def sound_uri(seconds, rate, channels=1, fmt="FLAC"):
    """A silent sound file (FLAC by default: long audio stays small) as a data: URI."""
    buffer = io.BytesIO()
    soundfile.write(buffer, np.zeros((round(seconds * rate), channels), "int16"), rate,
                    format=fmt, subtype="PCM_16")
    return f"data:audio/{fmt.lower()};base64," + base64.b64encode(buffer.getvalue()).decode()


def test_the_defaults_are_the_launch_scripts_audio_limits_and_model_length():
    config = SimulatorConfig()
    assert (config.max_audio_file_mb, config.max_audio_decode_seconds,
            config.max_audio_decode_bytes, config.max_model_len) == (128, 600, 256 * 2**20, 32768)
    assert limits.DEFAULT_AUDIO_LIMITS == limits.audio_limits_for(300, 128)


@pytest.mark.parametrize("name", ["max_audio_file_mb", "max_audio_decode_seconds",
                                  "max_audio_decode_bytes", "max_model_len"])
def test_a_limit_under_one_is_no_configuration(name):
    with pytest.raises(ValueError, match=f"{name} must be at least 1, got 0"):
        SimulatorConfig(**{name: 0})


def test_an_audio_file_over_the_size_limit_is_refused_before_it_is_read(
        thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1, max_audio_file_mb=1,
                                   refuse_unreadable_audio=True)
    # vLLM compares the base64's length with 4 * ceil(limit / 3): the size of the file whose
    # base64 that is. 1 MiB of any bytes (a valid WAV's) passes, one byte more does not,
    # unread (garbage bytes are no 500 here).
    fits = "data:audio/wav;base64," + base64.b64encode(b"\0" * 2**20).decode()
    assert post(sim.urls[0], audio_query(fits)).status_code == 500  # unreadable, but read
    over = "data:audio/wav;base64," + base64.b64encode(b"\0" * (2**20 + 3)).decode()
    response = post(sim.urls[0], audio_query(wav_uri(1), over))
    assert refused(response) == ("Maximum file size exceeded (parameter=audio_filesize_mb, "
                                 "value=1.000004768371582)")
    assert response.json()["error"]["param"] == "audio_filesize_mb"
    assert post(sim.urls[0], audio_query(wav_uri(1))).status_code == 200


def test_audio_longer_than_the_decode_duration_is_refused_with_vllms_words(
        thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1, max_audio_decode_seconds=5)
    assert post(sim.urls[0], audio_query(sound_uri(5, 8000))).status_code == 200
    response = post(sim.urls[0], audio_query(sound_uri(5.5, 8000)))
    assert refused(response) == (
        "Audio exceeds maximum allowed duration of 5s (file contains 5.5s at 8000Hz). "
        "Set VLLM_MAX_AUDIO_DECODE_DURATION_S to increase this limit.")
    assert response.json()["error"]["param"] is None


def test_the_default_decode_duration_is_600_seconds(thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1)
    assert post(sim.urls[0], audio_query(sound_uri(600, 1000))).status_code == 200
    assert "maximum allowed duration of 600s (file contains 601.0s at 1000Hz)" in refused(
        post(sim.urls[0], audio_query(sound_uri(601, 1000))))


def test_audio_decoding_to_more_than_the_byte_limit_is_refused(thread_simulator_factory):
    # frames x channels x 4 bytes of float32, from the header, as vLLM's soundfile loader
    sim = thread_simulator_factory(latency_ms=1, max_audio_decode_bytes=2 * 2**20)
    frames = 2**20 // 4  # 1 MiB a channel
    assert post(sim.urls[0], audio_query(sound_uri(frames / 48000, 48000, 2))).status_code \
        == 200
    response = post(sim.urls[0], audio_query(sound_uri((frames + 1) / 48000, 48000, 2)))
    assert refused(response) == (
        f"Audio would allocate 2 MiB of PCM ({frames + 1} frames x 2 channels x 4B), exceeding "
        "the 2 MiB limit. Set VLLM_MAX_AUDIO_DECODE_BYTES to increase this limit.")


def test_a_prompt_longer_than_the_model_length_is_refused(thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1, max_model_len=100)
    # roughly counted: 4 characters of text to a token, 13 to a second of audio
    body = {"model": MODEL, "messages": [{"role": "user", "content": "x" * 400}]}
    assert post(sim.urls[0], body).status_code == 200
    body["messages"][0]["content"] += "y"
    response = post(sim.urls[0], body)
    assert refused(response) == (
        "This model's maximum context length is 100 tokens. However, your prompt contains 101 "
        "input tokens, which exceeds this limit even without any output tokens. Please reduce "
        "the length of the input prompt. (parameter=input_tokens, value=101)")
    assert response.json()["error"]["param"] == "input_tokens"
    with_audio = audio_query(wav_uri(8))  # 104 tokens of audio alone
    assert "your prompt contains" in refused(post(sim.urls[0], with_audio))


def test_max_tokens_over_the_model_length_is_refused_but_not_with_the_prompt(
        thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1, max_model_len=2000)
    response = post(sim.urls[0], audio_query(wav_uri(1), max_tokens=2001))
    assert refused(response) == (
        "max_tokens=2001 cannot be greater than max_model_len=2000. Please request fewer output "
        "tokens. (parameter=max_tokens, value=2001)")
    assert response.json()["error"]["param"] == "max_tokens"
    assert "max_tokens=2001" in refused(
        post(sim.urls[0], audio_query(wav_uri(1), max_completion_tokens=2001)))
    # vLLM 0.33 shortens the reply budget of a prompt + max_tokens over the length
    answer = post(sim.urls[0], audio_query(wav_uri(1), max_tokens=2000))
    assert answer.json()["choices"][0]["finish_reason"] == "stop"
    assert answer.json()["usage"]["prompt_tokens"] > 13


@pytest.mark.parametrize("fields, status", [
    ({"n": 3, "temperature": 0}, 400),
    ({"n": 3, "temperature": 0.000001}, 400),
    ({"n": 3, "temperature": 0.7}, 200),
    ({"n": 3}, 200),  # vLLM's default temperature (1.0, --generation-config vllm)
    ({"n": 1, "temperature": 0}, 200),
])
def test_n_over_one_is_refused_when_sampling_greedily(thread_simulator_factory, fields,
                                                      status):
    sim = thread_simulator_factory(latency_ms=1)
    response = post(sim.urls[0], {**query(), **fields})
    assert response.status_code == status, response.text
    if status == 400:
        assert refused(response) == "n must be 1 when using greedy sampling, got 3."


def test_n_under_one_is_refused(thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1)
    response = post(sim.urls[0], {**query(), "n": 0})
    assert refused(response) == "n must be at least 1, got 0. (parameter=n, value=0)"


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded",
                                          None])
def test_a_body_that_is_not_declared_json_is_refused(thread_simulator_factory, content_type):
    sim = thread_simulator_factory(latency_ms=1)
    headers = {} if content_type is None else {"Content-Type": content_type}
    response = HTTP.post(f"{sim.urls[0]}/v1/chat/completions", headers=headers,
                          content=httpx.Request("POST", "/", json=query()).content, timeout=30)
    assert refused(response, kind="Bad Request") == (
        "1 validation error:\n  Unsupported Media Type: Only 'application/json' is allowed")
    assert sim.stats()[0]["refused"] == 1
    charset = HTTP.post(f"{sim.urls[0]}/v1/chat/completions", json=query(), timeout=30,
                         headers={"Content-Type": "application/json; charset=utf-8"})
    assert charset.status_code == 200


def test_invocations_answers_chat_completions_as_vllm_serve(thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1)
    answer = HTTP.post(f"{sim.urls[0]}/invocations", json=query(), timeout=30)
    assert answer.json()["object"] == "chat.completion"
    refusal = HTTP.post(f"{sim.urls[0]}/invocations", json={**query(), "model": "x"},
                         timeout=30)
    assert refusal.status_code == 404


def test_a_body_that_is_no_json_is_refused_in_vllms_words(thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1)
    response = HTTP.post(f"{sim.urls[0]}/v1/chat/completions", content=b"{not json",
                          headers={"Content-Type": "application/json"}, timeout=30)
    assert refused(response, kind="Bad Request") == (
        "1 validation error:\n  {'type': 'json_invalid', 'loc': 'body.1', 'msg': 'JSON decode "
        "error', 'input': '<dict of 0 items>', 'ctx': {'error': 'Expecting property name "
        "enclosed in double quotes'}}")
    assert response.json()["error"]["param"] == "body.1"


# (frames, sample rate, tokens in vLLM 0.33's prompt: the length of its audio placeholder)
VLLM_AUDIO_TOKENS = [
    (8000, 16000, 7), (8320, 16000, 7), (16000, 16000, 13), (16159, 16000, 14),
    (16321, 16000, 14), (59200, 16000, 48), (59361, 16000, 48), (1234567, 16000, 1004),
    (22050, 44100, 7), (163170, 44100, 48), (24000, 48000, 7), (24481, 48000, 7),
]


@pytest.mark.parametrize("frames, rate, expected", VLLM_AUDIO_TOKENS)
def test_audio_tokens_are_counted_as_vllm_does(frames, rate, expected):
    assert limits.audio_tokens(frames, rate) == expected


def test_the_reply_usage_counts_audio_tokens_as_vllm_does(thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1)

    def prompt_tokens(uri):
        return post(sim.urls[0], audio_query(uri)).json()["usage"]["prompt_tokens"]

    # 3.7 s is 48 tokens (not ceil(3.7 x 13) = 49), 0.5 s is 7
    assert prompt_tokens(wav_uri(3.7)) - prompt_tokens(wav_uri(0.5)) == 48 - 7
    assert prompt_tokens(wav_uri(3.7, 44100)) - prompt_tokens(wav_uri(0.5)) == 48 - 7


def load_check():
    """checks/vllm_check.py (a command, not a package), whose parts need no vLLM."""
    path = Path(__file__).resolve().parents[2] / "checks" / "vllm_check.py"
    if "vllm_check" not in sys.modules:  # its dataclasses look their module up there
        spec = importlib.util.spec_from_file_location("vllm_check", path)
        sys.modules["vllm_check"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules["vllm_check"])
    return sys.modules["vllm_check"]


def test_the_simulators_defaults_are_the_launch_script_make_vllm_check_starts():
    check = load_check()
    launch = check.read_launch_script(check.SCRIPT.read_text())
    config = SimulatorConfig()
    flags = dict(zip(launch.flags[::2], launch.flags[1::2], strict=True))
    assert flags == {
        "--served-model-name": config.model, "--dtype": "bfloat16",
        "--max-model-len": str(config.max_model_len),
        "--max-num-batched-tokens": str(limits.DEFAULT_BATCHED_TOKENS),
        "--limit-mm-per-prompt": f'{{"audio": {config.max_audios}}}',
        "--mm-processor-cache-gb": f"{config.audio_cache_mb / 1024:g}",
        "--chat-template-content-format": "openai", "--generation-config": "vllm",
        "--middleware": "mmae_judge_guard.KeyEverywhere",
    }
    assert launch.environment == {
        "VLLM_MAX_AUDIO_CLIP_FILESIZE_MB": str(config.max_audio_file_mb),
        "VLLM_MAX_AUDIO_DECODE_DURATION_S": str(config.max_audio_decode_seconds),
        "VLLM_MAX_AUDIO_DECODE_BYTES": str(config.max_audio_decode_bytes),
    }
    assert "class KeyEverywhere:" in launch.guard
    assert 'OPEN_PATHS = ("/health", "/ping")' in launch.guard


def test_make_vllm_check_tells_labelled_audio_from_audio_moved_to_the_front():
    check = load_check()
    start, end, header, user, newline, text = 151669, 151670, 151644, 872, 198, 5
    body = {"messages": [{"role": "user", "content": [
        {"type": "text", "text": "<audio input1>: "}, {"type": "audio_url", "audio_url": {}},
        {"type": "audio_url", "audio_url": {}},
        {"type": "text", "text": "Question?"}]}]}
    assert check.text_before_each_audio(body) == [True, False]
    labelled = [header, user, newline, text, start, 7, end, start, 7, end, text]
    assert check.text_before_each_placeholder(labelled) == [True, False]
    moved = [header, user, newline, start, 7, end, start, 7, end, text, text]
    assert check.text_before_each_placeholder(moved) == [False, False]
