"""The judge simulator's replies to the tone kind's queries: "yes" or "no", hashed from the seed,
the output audio and the instruction, so that a system keeps its verdicts and two systems
differ. Not a model."""

from __future__ import annotations

import hashlib

from judge.simulator import SimulatorConfig
from tests.scoring.kinds.tone.kind import MARK


def reply(body: dict, config: SimulatorConfig) -> tuple[str, list] | None:
    messages = body.get("messages") if isinstance(body, dict) else None
    content = (messages or [{}])[-1].get("content") if isinstance(messages, list) else None
    if not isinstance(content, list):
        return None
    texts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
    question = next((t for t in texts if t.startswith(MARK)), None)
    if question is None:
        return None
    audio = [p["audio_url"]["url"] for p in content
             if isinstance(p, dict) and p.get("type") == "audio_url"]
    digest = hashlib.sha256(f"{config.seed}|{audio[-1]}|{question}".encode()).digest()
    word = "yes" if digest[0] % 3 else "no"
    return word, [question, word]
