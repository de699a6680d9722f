"""Text as messages quote it: plain Python (no Django), for the readers of uploaded files too."""

from __future__ import annotations

# A reason is a sentence or two: one longer was made from a value nobody should read back
# whole (a 60 MB path in an error body), and is cut, saying so.
MAX_PROBLEM_CHARS = 2000


def bounded(problem: str) -> str:
    """A reason at most MAX_PROBLEM_CHARS long, cut saying by how much."""
    if len(problem) <= MAX_PROBLEM_CHARS:
        return problem
    cut = len(problem) - MAX_PROBLEM_CHARS + 40
    return f"{problem[:MAX_PROBLEM_CHARS - 40]}... ({cut:,} characters cut)"


# A value quoted in a message (an id, a path) is at most this long.
QUOTED_CHARS = 200


def cut(value: str, limit: int = QUOTED_CHARS) -> str:
    """`value` as a message quotes it: whole up to `limit` characters, else its start and an
    ellipsis."""
    return value if len(value) <= limit else value[:limit - 1] + "\u2026"
