"""What a vLLM 0.33 server of Qwen3-Omni started by launch_qwen3_omni.sh refuses in a chat
completion request, and how it says so (status, `{"error": {"message", "type", "param", "code"}}`,
vLLM's words), as the judge simulator checks it: a malformed body, `max_tokens` under 1 or over
the model length, `n` > 1 at temperature 0, a model it does not serve, an unknown content part,
more audio items than `max_audios`, an audio file over VLLM_MAX_AUDIO_CLIP_FILESIZE_MB, audio
longer than VLLM_MAX_AUDIO_DECODE_DURATION_S or decoding to more than VLLM_MAX_AUDIO_DECODE_BYTES,
audio of 10 ms or less or longer than the encoder cache takes, a prompt longer than the model
length. `make vllm-check` (checks/vllm_check.py) compares each with vLLM's own code.

Audio is measured from the data: URI's sound file header (soundfile), not by decoding its
samples; audio tokens are counted as vLLM does (judge.limits.audio_tokens), text tokens roughly
(CHARS_PER_TOKEN), so a prompt near the model length may be counted differently from vLLM.
`config` is the simulator's (judge.simulator.SimulatorConfig)."""

from __future__ import annotations

import base64
import binascii
import io
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import soundfile

from judge import limits

CHARS_PER_TOKEN = 4  # a rough token count: vLLM counts with the model's tokenizer


MAX_MODEL_LEN = limits.DEFAULT_MAX_MODEL_LEN


# Content part types vLLM's chat parser knows (vllm/entrypoints/chat_utils.py MM_PARSER_MAP).
TEXT_PARTS = ("text", "input_text", "output_text", "refusal", "thinking")


AUDIO_PARTS = ("audio_url", "input_audio")


OTHER_PARTS = ("image_url", "input_image", "image_embeds", "image_pil", "audio_embeds",
               "video_url")


class Refusal(Exception):
    """A request vLLM refuses: the message, HTTP status and error type of its ErrorResponse."""

    def __init__(self, message: str, *, status: int = 400, kind: str = "BadRequestError",
                 param: str | None = None):
        super().__init__(message)
        self.message, self.status, self.kind, self.param = message, status, kind, param


def _malformed(where: str, problem: str) -> Refusal:
    """What vLLM's request validation answers (its RequestValidationError handler's type)."""
    return Refusal(f"{where}: {problem}", kind="Bad Request")


@dataclass
class Checked:
    """What the simulator needs of a request vLLM would take."""

    max_tokens: int | None
    audio_tokens: list  # of each audio item that could be measured
    text_chars: int
    # (uuid, data: URL, sent with its data) of each audio item, in order: the URL sent, or
    # for an item sent by its uuid alone, the one the cache held; the uuid None where none
    # was given.
    audio: list = field(default_factory=list)


def tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def check_request(body, config, cache: Mapping[str, str] | None = None) -> Checked:
    """Refuse (raise Refusal) what vLLM refuses, in the order it checks: the body's shape, the
    sampling parameters, the model, each content part's type, the number of audio items, an
    audio item without data and without a uuid, each audio sent (file size, length, decoded
    size, at least 10 ms, the encoder cache), each audio sent by its uuid alone (found in
    `cache`, uuid -> data: URL, vLLM's multimodal processor cache; else a cache miss), then the
    prompt's length."""
    if not isinstance(body, dict):
        raise _malformed("body", "Input should be a valid dictionary")
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise _malformed("body.messages", "Field required" if messages is None
                         else "Input should be a valid list")
    for m, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise _malformed(f"body.messages.{m}", "a message needs a string 'role'")
        if not isinstance(message.get("content"), (str, list, type(None))):
            raise _malformed(f"body.messages.{m}.content",
                             "Input should be a valid string or list")
    max_tokens = _max_tokens(body)
    if max_tokens is not None and max_tokens > config.max_model_len:
        raise Refusal(f"max_tokens={max_tokens} cannot be greater than max_model_len="
                      f"{config.max_model_len}. Please request fewer output tokens. "
                      f"(parameter=max_tokens, value={max_tokens})", param="max_tokens")
    _check_n(body)
    model = body.get("model")
    if model is not None and model != config.model:
        raise Refusal(f"The model `{model}` does not exist. Valid aliases: {config.model}.",
                      status=404, kind="NotFoundError", param="model")
    audio, text_chars = _parts(messages)
    if len(audio) > config.max_audios:
        raise Refusal(f"At most {config.max_audios} audio(s) may be provided in one prompt. "
                      "(parameter=audio)", param="audio")
    _check_uuids(audio)
    counts = [n for where, url, _ in audio
              if url is not None and (n := _checked_tokens(where, url, config)) is not None]
    resolved = []
    for index, (where, url, uuid) in enumerate(audio):
        sent = url is not None
        if not sent:
            url = (cache or {}).get(uuid)
            if url is None:  # vLLM's multimodal processor has no item under the uuid
                raise Refusal(f"Cache miss for audio at index {index} but data is not "
                              "provided.")
            if (n := _checked_tokens(where, url, config)) is not None:
                counts.append(n)
        resolved.append((uuid, url, sent))
    prompt = prompt_tokens(text_chars, counts)
    if prompt > config.max_model_len:
        raise Refusal(f"This model's maximum context length is {config.max_model_len} tokens. "
                      f"However, your prompt contains {prompt} input tokens, which exceeds this "
                      "limit even without any output tokens. Please reduce the length of the "
                      f"input prompt. (parameter=input_tokens, value={prompt})",
                      param="input_tokens")
    return Checked(max_tokens, counts, text_chars, resolved)


def _check_uuids(audio: list) -> None:
    """vLLM's check of items given by their uuid alone: an item without data needs one."""
    given = any(uuid is not None for *_, uuid in audio)
    for index, (_, url, uuid) in enumerate(audio):
        if url is None and uuid is None:
            raise Refusal(f"multi_modal_data['audio'][{index}] is empty but "
                          f"multi_modal_uuids['audio']{f'[{index}]' if given else ''} is "
                          "missing.")


def prompt_tokens(text_chars: int, audio_tokens: list) -> int:
    """The length of a prompt: its text's tokens, roughly, and its audio's, as vLLM counts
    them (judge.limits.audio_tokens)."""
    return math.ceil(text_chars / CHARS_PER_TOKEN) + sum(audio_tokens)


def _check_n(body: dict) -> None:
    """vLLM's sampling parameters: n at least 1, and 1 when sampling greedily (a temperature
    under SAMPLING_EPS; without one, vLLM's default 1.0 with --generation-config vllm)."""
    n = body.get("n")
    if n is None:
        return
    if not isinstance(n, int) or isinstance(n, bool):
        raise _malformed("body.n", "Input should be a valid integer")
    if n < 1:
        raise Refusal(f"n must be at least 1, got {n}. (parameter=n, value={n})", param="n")
    temperature = body.get("temperature")
    if n > 1 and isinstance(temperature, (int, float)) and temperature < limits.SAMPLING_EPS:
        raise Refusal(f"n must be 1 when using greedy sampling, got {n}.")


def _max_tokens(body: dict) -> int | None:
    for name in ("max_completion_tokens", "max_tokens"):
        value = body.get(name)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            raise _malformed(f"body.{name}", "Input should be a valid integer")
        if value < 1:
            raise Refusal(f"max_tokens must be at least 1, got {value}. "
                          f"(parameter=max_tokens, value={value})", param="max_tokens")
        return value
    return None


def _parts(messages: list) -> tuple[list, int]:
    """([(where, audio URL or None, uuid or None)], characters of text) of the messages'
    content parts (an audio part may leave out its data when it gives a uuid)."""
    audio, text_chars = [], 0
    for m, message in enumerate(messages):
        content = message.get("content")
        if isinstance(content, str):
            text_chars += len(content)
            continue
        for p, part in enumerate(content or []):
            where = f"messages[{m}].content[{p}]"
            if isinstance(part, str):
                text_chars += len(part)
                continue
            if not isinstance(part, dict):
                raise _malformed(f"body.{where}", "Input should be a valid dictionary")
            kind = part.get("type")
            if kind is None:
                raise Refusal("Missing 'type' field in multimodal part.")
            if kind in TEXT_PARTS:
                key = kind if kind in ("refusal", "thinking") else "text"
                text_chars += len(str(part.get(key) or ""))
            elif kind in AUDIO_PARTS:
                uuid = part.get("uuid")
                if uuid is not None and not isinstance(uuid, str):
                    raise _malformed(f"body.{where}.uuid", "Input should be a valid string")
                audio.append((where, _audio_url(where, part), uuid))
            elif kind not in OTHER_PARTS:
                raise Refusal(f"Unknown part type: {kind}")
    return audio, text_chars


def _audio_url(where: str, part: dict) -> str | None:
    """The part's audio as a URL; None for a part without data (`"audio_url": null`, or
    `"input_audio": null` or with empty data), which vLLM takes when it has a uuid."""
    if part["type"] == "input_audio":
        given = part.get("input_audio")
        if given is None:
            return None
        if not isinstance(given, dict) or not isinstance(given.get("data", ""), str):
            raise _malformed(f"body.{where}.input_audio", "needs a base64 'data' string")
        if not given.get("data"):
            return None
        return f"data:audio/{given.get('format') or 'wav'};base64,{given['data']}"
    given = part.get("audio_url")
    if given is None:
        return None
    url = given.get("url") if isinstance(given, dict) else given
    if not isinstance(url, str):
        raise _malformed(f"body.{where}.audio_url", "needs a 'url' string")
    return url or None


class _Base64View(io.RawIOBase):
    """The bytes of `text[start:]`'s base64, decoded only where they are read: soundfile reads
    a sound file's header, so a long audio costs no more to measure than a short one."""

    def __init__(self, text: str, start: int):
        self.text, self.start, self.pos = text, start, 0
        tail = text[-2:]
        self.size = (len(text) - start) // 4 * 3 - (len(tail) - len(tail.rstrip("=")))

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def readinto(self, buffer) -> int:
        end = min(self.pos + len(buffer), self.size)
        if end <= self.pos:
            return 0
        first, last = self.pos // 3, -(-end // 3)  # the 4-character groups holding the bytes
        decoded = base64.b64decode(self.text[self.start + 4 * first:self.start + 4 * last])
        data = decoded[self.pos - 3 * first:end - 3 * first]
        buffer[:len(data)] = data
        self.pos += len(data)
        return len(data)


@dataclass
class AudioHeader:
    frames: int
    samplerate: int
    channels: int

    @property
    def seconds(self) -> float:
        return self.frames / self.samplerate


def audio_seconds(url: str) -> float:
    """The length of a data: URI's sound file, from its header; ValueError if unreadable."""
    return audio_header(url).seconds


def encoded_bytes(url: str) -> float:
    """The size of a data: URI's file as vLLM estimates it before decoding: 3/4 of its
    base64's length."""
    comma = url.find(",", 0, 256)
    return (len(url) - comma - 1) * 3 / 4


def audio_header(url: str) -> AudioHeader:
    """Frames, rate and channels of a data: URI's sound file, from its header; ValueError if
    unreadable."""
    comma = url.find(",", 0, 256)
    spec = url[:comma]
    if not spec.startswith("data:") or comma < 0:
        raise ValueError("the simulator reads audio from data: URLs only")
    if not spec.endswith(";base64"):
        raise ValueError("Only base64 data URLs are supported for now.")
    start = comma + 1
    try:
        if (len(url) - start) % 4:  # not canonical base64: decode it whole, which checks it
            source = io.BytesIO(base64.b64decode(url[start:]))
        else:
            source = _Base64View(url, start)
        with soundfile.SoundFile(source) as sound:
            return AudioHeader(sound.frames, sound.samplerate, sound.channels)
    except soundfile.LibsndfileError as exc:
        raise ValueError(f"not a readable sound file ({exc.error_string})") from None
    except (binascii.Error, RuntimeError) as exc:
        raise ValueError(f"not a readable sound file ({exc})") from None


def _checked_tokens(where: str, url: str, config) -> int | None:
    """The tokens of one audio item, after vLLM 0.33's checks in its order: the file's size
    (before decoding), its length and decoded size (from its header, as vLLM's soundfile
    loader), then what Qwen3-Omni's processor and the encoder cache take."""
    max_bytes = config.max_audio_file_mb * limits.MiB
    if url.startswith("data:") and len(url) - url.find(",", 0, 256) - 1 > 4 * (
            (max_bytes + 2) // 3):
        raise Refusal("Maximum file size exceeded (parameter=audio_filesize_mb, value="
                      f"{encoded_bytes(url) / limits.MiB})", param="audio_filesize_mb")
    try:
        header = audio_header(url)
    except ValueError as exc:
        if config.refuse_unreadable_audio:
            # vLLM answers an audio it cannot open with a 500 (its loader's error is no
            # validation error), though the fault is the request's.
            raise Refusal(f"Failed to load the audio of {where}: {exc}", status=500,
                          kind="InternalServerError") from None
        return None
    seconds = header.seconds
    if seconds > config.max_audio_decode_seconds:
        raise Refusal(f"Audio exceeds maximum allowed duration of "
                      f"{config.max_audio_decode_seconds}s (file contains {seconds:.1f}s at "
                      f"{header.samplerate}Hz). Set VLLM_MAX_AUDIO_DECODE_DURATION_S to "
                      "increase this limit.")
    decoded = header.frames * header.channels * 4
    if decoded > config.max_audio_decode_bytes:
        raise Refusal(f"Audio would allocate {decoded / limits.MiB:.0f} MiB of PCM "
                      f"({header.frames} frames x {header.channels} channels x 4B), exceeding "
                      f"the {config.max_audio_decode_bytes / limits.MiB:.0f} MiB limit. Set "
                      "VLLM_MAX_AUDIO_DECODE_BYTES to increase this limit.")
    # At most 160 samples once resampled to 16 kHz (resampling rounds up): 10 ms or less.
    if header.frames * limits.FEATURE_RATE <= round(
            limits.MIN_AUDIO_SECONDS * limits.FEATURE_RATE) * header.samplerate:
        raise Refusal(f"Failed to apply Qwen3OmniMoeProcessor: the audio of {where} is "
                      f"{1000 * seconds:.1f} ms long; audio of "
                      f"{1000 * limits.MIN_AUDIO_SECONDS:g} ms or less is refused.")
    if seconds > config.max_audio_seconds:
        cache = round(config.max_audio_seconds * limits.TOKENS_PER_AUDIO_SECOND)
        length = limits.audio_tokens(header.frames, header.samplerate)
        raise Refusal(f"The decoder prompt contains a(n) audio item with length {length}, which "
                      f"exceeds the pre-allocated encoder cache size {cache}. Please reduce the "
                      "input size or increase the encoder cache size by setting "
                      "--limit-mm-per-prompt at startup.")
    return limits.audio_tokens(header.frames, header.samplerate)
