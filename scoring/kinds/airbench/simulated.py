"""The judge simulator's replies to AIR-Bench's text queries (judge.simulator): not a model. A chat
review gets two scores, each hashed from the seed, the question and one answer (the same in
either position); an alignment query gets a letter hashed from the seed, the question and the
response."""

from __future__ import annotations

import hashlib
import re

from judge.simulator import SimulatorConfig

_CHOICE_LINE_RE = re.compile(r"^([A-Z])\. (.*)$")
_CHAT_ANSWER_RE = re.compile(
    r"\[The Start of Assistant ([12])s Answer\]\n(.*?)\n\[The End of Assistant \1s Answer\]",
    re.DOTALL)
_ALIGN_MARK = "Among the following choices, which option best matches this response?"
_ALIGN_RE = re.compile(r'^There is a question "(.*)", and one response is "(.*)"\. Among ',
                       re.DOTALL)


def _user_text(body: dict) -> str | None:
    """The text of a text-only user message, if that is what the query is."""
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, dict) and message.get("role") == "user" \
                and isinstance(message.get("content"), str):
            return message["content"]
    return None


def chat_score(question: str, answer: str, seed: int) -> int:
    """The simulated 1-10 score of one answer: a hash, the same in either position."""
    digest = hashlib.sha256(f"{seed}|chat|{question}|{answer}".encode()).digest()
    return 1 + digest[0] % 10


def align_letter(question: str, response: str, n_options: int, seed: int) -> str:
    digest = hashlib.sha256(f"{seed}|align|{question}|{response}".encode()).digest()
    return "ABCD"[digest[0] % n_options]


def reply(body: dict, config: SimulatorConfig) -> tuple[str, list] | None:
    """(reply, what to record) for an AIR-Bench text query, else None."""
    text = _user_text(body)
    if text is None:
        return None
    answers = dict(_CHAT_ANSWER_RE.findall(text))
    if "1" in answers and "2" in answers and "[Question]\n" in text:
        question = text.split("[Question]\n", 1)[1].split("\n[The Start of Assistant 1s", 1)[0]
        scores = [chat_score(question, answers[k], config.seed) for k in ("1", "2")]
        return f"{scores[0]} {scores[1]}", [question, [answers["1"], answers["2"]]]
    match = _ALIGN_RE.match(text)
    if _ALIGN_MARK in text and match:
        listed = text.split("The following lines are the options.", 1)[-1]
        listed = listed.split("\nTo reiterate, the response", 1)[0]
        options = [m.group(2) for m in map(_CHOICE_LINE_RE.match, listed.split("\n")) if m]
        if options:
            question, response = match.groups()
            return align_letter(question, response, len(options), config.seed), \
                [question, options]
    return None
