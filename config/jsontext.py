"""JSON and JSONL as people send them: predictions, benchmark files, API request bodies.

Plain Python. `loads` is json.loads with a bound on nesting: the json module recurses once per
level, so `[` repeated 100,000 times raises RecursionError, and even a few hundred levels that
it does read can overflow the stack of code that walks or prints the value later. `lines`
splits JSONL exactly as the official AIR-Bench and MMAE scripts read it (`for line in open(f)`).
"""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Iterator

# Benchmark and predictions files nest 6 levels at most; API bodies fewer.
MAX_DEPTH = 64
# A whole string (escapes included), or a bracket that opens or closes a level.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_SAME_BRACKETS = str.maketrans("{}", "[]")


def loads(text: str | bytes, **options) -> object:
    """json.loads(text, **options); nesting deeper than MAX_DEPTH raises json.JSONDecodeError
    ("nested too deeply") at the bracket that goes too deep, before json reads anything."""
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8")
    if text.count("[") + text.count("{") > MAX_DEPTH and not _shallow(text):
        _check_depth(text)
    try:
        return json.loads(text, **options)
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        # Python refuses to convert an integer over sys.get_int_max_str_digits() digits with a
        # hint about its interpreter; the sender is told what is wrong, and where.
        if "integer string conversion" not in str(exc):
            raise
        limit = sys.get_int_max_str_digits()
        long = re.search(rf"\d{{{limit + 1},}}", text)
        raise json.JSONDecodeError(f"a number of more than {limit:,} digits", text,
                                   long.start() if long else 0) from None


def _shallow(text: str) -> bool:
    """True when the text's brackets balance and nest MAX_DEPTH levels at most; False
    leaves it to _check_depth (which finds where). Each round cuts every innermost pair,
    so the rounds that empty the brackets are their depth; every step runs in C (a file of
    2,000 MMAE samples: a few ms, against about 90 for the token scan)."""
    # With escaped backslashes and quotes gone, every quote left opens or closes a string,
    # so the even pieces between quotes are the text outside strings.
    outside = "".join(text.replace("\\\\", "").replace('\\"', "").split('"')[::2])
    brackets = _NOT_BRACKETS.sub("", outside).translate(_SAME_BRACKETS)
    for _ in range(MAX_DEPTH):
        if not brackets:
            return True
        cut = brackets.replace("[]", "")
        if len(cut) == len(brackets):
            return False  # unbalanced: json reports it, once the scan finds no depth fault
        brackets = cut
    return not brackets


def _check_depth(text: str) -> None:
    depth = 0
    for token in _TOKEN.finditer(text):
        bracket = token.group()
        if bracket in ("[", "{"):
            depth += 1
            if depth > MAX_DEPTH:
                raise json.JSONDecodeError(f"nested too deeply (more than {MAX_DEPTH} levels)",
                                           text, token.start())
        elif bracket in ("]", "}"):
            depth -= 1


def lines(text) -> Iterator[tuple[int, str]]:
    """(line number from 1, line without its end) for each non-blank line of a text or of a
    text stream (opened with newline=None, read a line at a time). Lines end at "\\n",
    "\\r\\n" or "\\r", as Python's text files read them, and nowhere else: U+2028, U+2029 and
    U+0085, which json.dumps(..., ensure_ascii=False) writes raw inside strings, are not line
    ends here (str.splitlines() would split on them)."""
    for number, line, _ in bounded_lines(text, None):
        yield number, line


# How much of an over-long line is read at a time while it is skipped.
SKIP_CHARS = 1024**2


def bounded_lines(text, max_chars: int | None) -> Iterator[tuple[int, str | None, int]]:
    """lines(), each with its length, but never holding more than `max_chars` characters of
    one line: a longer line is read past in pieces and given as (number, None, its length)."""
    stream = io.StringIO(text, newline=None) if isinstance(text, str) else text
    number = 0
    while line := stream.readline(-1 if max_chars is None else max_chars + 1):
        number += 1
        if max_chars is not None and len(line) > max_chars and not line.endswith("\n"):
            length = len(line)
            while (rest := stream.readline(SKIP_CHARS)) and not rest.endswith("\n"):
                length += len(rest)
            yield number, None, length + len(rest.removesuffix("\n"))
            continue
        line = line.removesuffix("\n")
        if line.strip():
            yield number, line, len(line)
