"""Base model families: what an author declares a system is built on, and which family a judge
model belongs to. A judge may favour systems of its own family (self-preference), so every
page marks them, the board can leave them out, and the judge card measures the judge's
agreement with people on them apart.

No Django here, like judge.fleet."""

from __future__ import annotations

import re

NOT_DECLARED = ""
OTHER = "other"

# (key, label): the families an author chooses from, "none / other" last.
FAMILIES: tuple[tuple[str, str], ...] = (
    ("qwen", "Qwen"),
    ("llama", "Llama"),
    ("gemma", "Gemma / Gemini"),
    ("mistral", "Mistral"),
    ("phi", "Phi"),
    ("deepseek", "DeepSeek"),
    ("gpt", "GPT (OpenAI)"),
    ("claude", "Claude"),
    ("whisper", "Whisper"),
    (OTHER, "none / other"),
)
CHOICES = ((NOT_DECLARED, "not declared"), *FAMILIES)
LABELS = dict(CHOICES)

# A judge model's name -> its family: the first pattern found in the name, case aside.
_JUDGE_PATTERNS = (
    ("qwen", r"qwen"), ("llama", r"llama"), ("gemma", r"gemma|gemini"),
    ("mistral", r"mistral|mixtral|voxtral"), ("phi", r"\bphi"), ("deepseek", r"deepseek"),
    ("gpt", r"\bgpt|\bo[134]\b"), ("claude", r"claude"), ("whisper", r"whisper"),
)


def family_of(model_name: str) -> str:
    """The family of a judge model by its name ("Qwen/Qwen3-Omni-30B-A3B-Instruct": "qwen");
    OTHER when no family's name is in it."""
    name = (model_name or "").lower()
    return next((key for key, pattern in _JUDGE_PATTERNS if re.search(pattern, name)), OTHER)


def same_family(declared: str, judge_model: str) -> bool:
    """Whether a system declared of `declared` is of the judge's family (never for a system
    whose author declared none, or "none / other")."""
    return declared not in (NOT_DECLARED, OTHER) and declared == family_of(judge_model)
