"""What a vLLM server of Qwen3-Omni started by launch_qwen3_omni.sh refuses in a chat completion
request, and how it says so (status, `{"error": {"message", "type", "param", "code"}}`), as the
judge simulator checks it: a malformed body, a model it does not serve, an unknown content part,
more audio items than `max_audios`, audio longer than the encoder cache takes or shorter than
MIN_AUDIO_SECONDS. Audio length is read from the data: URI's sound file header (soundfile), not
by decoding its samples; tokens are counted roughly (CHARS_PER_TOKEN, TOKENS_PER_AUDIO_SECOND).
`config` is the simulator's (judge.simulator.SimulatorConfig)."""

from __future__ import annotations

import base64
import binascii
import io
import math
from dataclasses import dataclass

import soundfile

from judge import limits

CHARS_PER_TOKEN = 4  # a rough token count: vLLM counts with the model's tokenizer


MAX_MODEL_LEN = 32768


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
    audio_seconds: list  # of each audio item that could be measured
    text_chars: int


def tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def check_request(body, config) -> Checked:
    """Refuse (raise Refusal) what vLLM refuses, in the order it checks: the body's shape, the
    model, each content part's type, the number of audio items, then each audio's length."""
    if not isinstance(body, dict):
        raise _malformed("body", "Input should be a valid dictionary")
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise _malformed("body.messages", "Field required" if messages is None
                         else "Input should be a valid list")
    max_tokens = _max_tokens(body)
    for m, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise _malformed(f"body.messages.{m}", "a message needs a string 'role'")
        if not isinstance(message.get("content"), (str, list, type(None))):
            raise _malformed(f"body.messages.{m}.content",
                             "Input should be a valid string or list")
    model = body.get("model")
    if model is not None and model != config.model:
        raise Refusal(f"The model `{model}` does not exist.", status=404,
                      kind="NotFoundError", param="model")
    audio, text_chars = _parts(messages)
    if len(audio) > config.max_audios:
        raise Refusal(f"At most {config.max_audios} audio(s) may be provided in one prompt.")
    seconds = [s for where, url in audio
               if (s := _checked_seconds(where, url, config)) is not None]
    return Checked(max_tokens, seconds, text_chars)


def _max_tokens(body: dict) -> int | None:
    for name in ("max_completion_tokens", "max_tokens"):
        value = body.get(name)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            raise _malformed(f"body.{name}", "Input should be a valid integer")
        if value < 1:
            raise Refusal(f"max_tokens must be at least 1, got {value}.")
        return value
    return None


def _parts(messages: list) -> tuple[list, int]:
    """([(where, audio URL)], characters of text) of the messages' content parts."""
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
                audio.append((where, _audio_url(where, part)))
            elif kind not in OTHER_PARTS:
                raise Refusal(f"Unknown part type: {kind}")
    return audio, text_chars


def _audio_url(where: str, part: dict) -> str:
    if part["type"] == "input_audio":
        given = part.get("input_audio")
        if not isinstance(given, dict) or not isinstance(given.get("data"), str):
            raise _malformed(f"body.{where}.input_audio", "needs a base64 'data' string")
        return f"data:audio/{given.get('format') or 'wav'};base64,{given['data']}"
    given = part.get("audio_url")
    url = given.get("url") if isinstance(given, dict) else given
    if not isinstance(url, str):
        raise _malformed(f"body.{where}.audio_url", "needs a 'url' string")
    return url


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


def audio_seconds(url: str) -> float:
    """The length of a data: URI's sound file, from its header; ValueError if unreadable."""
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
            return sound.frames / sound.samplerate
    except soundfile.LibsndfileError as exc:
        raise ValueError(f"not a readable sound file ({exc.error_string})") from None
    except (binascii.Error, RuntimeError) as exc:
        raise ValueError(f"not a readable sound file ({exc})") from None


def _checked_seconds(where: str, url: str, config) -> float | None:
    try:
        seconds = audio_seconds(url)
    except ValueError as exc:
        if config.refuse_unreadable_audio:
            raise Refusal(f"Failed to load the audio of {where}: {exc}") from None
        return None
    if seconds < limits.MIN_AUDIO_SECONDS:
        raise Refusal(f"The audio of {where} is {1000 * seconds:.1f} ms long, shorter than the "
                      f"{1000 * limits.MIN_AUDIO_SECONDS:g} ms the audio feature extractor needs.")
    if seconds > config.max_audio_seconds:
        cache = round(config.max_audio_seconds * limits.TOKENS_PER_AUDIO_SECOND)
        length = math.ceil(seconds * limits.TOKENS_PER_AUDIO_SECOND)
        raise Refusal(f"The decoder prompt contains a(n) audio item with length {length}, which "
                      f"exceeds the pre-allocated encoder cache size {cache}. Please reduce the "
                      "input size or increase the encoder cache size by setting "
                      "--limit-mm-per-prompt at startup.")
    return seconds
