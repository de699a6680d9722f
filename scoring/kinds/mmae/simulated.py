"""The judge simulator's replies to MMAE's queries (judge.simulator): not a model. The option
picked is hashed from the seed, the output audio (else every audio) and the question and its
options, so a system gets the same answer in every round but for the `noise` share."""

from __future__ import annotations

import hashlib
import json
import re

from judge.simulator import SimulatorConfig

_CHOICE_LINE_RE = re.compile(r"^([A-Z])\. (.*)$")


def parse_query(body: dict) -> dict | None:
    """Question, presented choices and the audio each label points to, from an MMAE query."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return None
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        audio: dict[str, str] = {}
        label = None
        question = choices = None
        for part in content:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "text":
                text = part.get("text") or ""
                match = re.fullmatch(r"<audio ([^>]+)>: ", text)
                if match:
                    label = match.group(1)
                elif "\nQuestion: " in text and "\n\nChoices: " in text:
                    question = text.split("\nQuestion: ", 1)[1].split("\n\nChoices: ", 1)[0]
                    lines = text.split("\n\nChoices: ", 1)[1].split("\n")
                    choices = [m.group(2) for m in map(_CHOICE_LINE_RE.match, lines) if m]
            elif part.get("type") == "audio_url":
                url = (part.get("audio_url") or {}).get("url") or ""
                audio[label or f"audio{len(audio)}"] = url
        if question is not None and choices:
            return {"question": question, "choices": choices, "audio": audio}
    return None


def verdict(query: dict, config: SimulatorConfig) -> tuple[str, str]:
    """(letter, reason) for a parsed query: the system's usual pick, sometimes another one.

    The usual pick depends on the seed, the output audio (else every audio) and the question and
    its options regardless of their order, so a system gets the same answer in every round but
    for the `noise` share, which also depends on the presented order.
    """
    audio = query["audio"].get("output") or "".join(sorted(query["audio"].values()))
    audio_digest = hashlib.sha1(audio.encode()).hexdigest()
    options = sorted(query["choices"])
    key = f"{config.seed}|{audio_digest}|{query['question']}|{json.dumps(options)}"
    digest = hashlib.sha256(key.encode()).digest()
    pick = options[digest[0] % len(options)]
    noise_key = hashlib.sha256((key + json.dumps(query["choices"])).encode()).digest()
    if noise_key[0] / 256 < config.noise:
        pick = options[noise_key[1] % len(options)]
    letter = chr(ord("A") + query["choices"].index(pick))
    return letter, f"Simulated judge, not a model: option {letter} was picked by hashing the input."


def reply(body: dict, config: SimulatorConfig) -> tuple[str, list] | None:
    """The JSON reply SPEC section 3 asks for, and (question, choices, letter) to record; None
    for a query that is not MMAE's."""
    query = parse_query(body)
    if query is None:
        return None
    letter, reason = verdict(query, config)
    return json.dumps({"reason": reason, "choice": letter}), \
        [query["question"], query["choices"], letter]
