"""Names an author gives (a model's, an organisation's) as the board shows them: one spelling
for what looks the same, and a skeleton that tells look-alikes apart from different names.

The form, the API, the service and the data migration share it.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import regex
from django.core.exceptions import ValidationError

# Control, format (zero-width characters, bidi overrides and isolates) and private use: none
# shows as itself, and a bidi override reorders what follows it on the page.
HIDDEN = frozenset({"Cc", "Cf", "Co"})
# Unicode's default-ignorable code points (variation selectors, the combining grapheme joiner,
# Mongolian free variation selectors, the Hangul fillers...) and the Braille blank: each renders
# as nothing or as a blank, so a name holding them looks like one without.
INVISIBLE = regex.compile(r"[\p{Default_Ignorable_Code_Point}\u2800]")
SPACES = re.compile(r"\s+")
# confusables.txt wraps right-to-left characters in left-to-right marks in its comments,
# from which confusable-homoglyphs reads its pairs.
MARKS = str.maketrans("", "", "\u200e\u200f")


def name_normalise(value: str) -> str:
    """NFKC, without hidden or invisible characters, every run of whitespace (no-break spaces
    included) one space, stripped."""
    text = INVISIBLE.sub("", unicodedata.normalize("NFKC", value))
    text = "".join(" " if c.isspace() else c for c in text
                   if c.isspace() or unicodedata.category(c) not in HIDDEN)
    return SPACES.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def name_problem(value: str, *, field: str, required: bool = True) -> str | None:
    """Why a given name cannot be taken once normalised, naming its field; None if it can. An
    optional field may be left blank, but not filled with hidden characters only."""
    if name_normalise(value) or not (required or value.strip()):
        return None
    return (f"the {field} is empty once control, invisible and formatting characters are "
            "removed")


# What the columns of a model's name and organisation hold (submissions.models.ModelEntry).
NAME_MAX_LENGTH = 200


def length_problem(value: str, *, label: str, limit: int = NAME_MAX_LENGTH) -> str | None:
    """A value over its limit is refused saying by how much, never cut to fit."""
    if len(value) <= limit:
        return None
    return f"{label} is {len(value)} characters; the limit is {limit}"


def name_fault(value: str, *, field: str, required: bool = True,
               label: str = "Name") -> str | None:
    """Why a given name cannot be taken: nothing left of it once normalised, or too long
    once normalised (as the board stores it); None if it can."""
    return name_problem(value, field=field, required=required) \
        or length_problem(name_normalise(value), label=label)


def name_clean(value: str, *, field: str, required: bool = True, label: str = "Name") -> str:
    """The normalised name, for a form's or a serializer's field (both take Django's
    ValidationError, naming the field, when name_fault finds one)."""
    problem = name_fault(value, field=field, required=required, label=label)
    if problem:
        raise ValidationError(problem)
    return name_normalise(value)


@lru_cache(maxsize=1)
def _prototypes() -> dict[str, str]:
    """Each character of Unicode's confusables (TR39) -> the prototype of its group.

    confusable-homoglyphs keeps each pair both ways; in confusables.txt every group is a
    prototype with the characters that map to it, and no prototype maps further. So a
    character with one look-alike maps to it when that one has others (or is a sequence);
    of two that only have each other, the smaller stands for both. (Its table is imported
    here, the first time a name is checked: 76 ms that every process of the site paid at
    start, python -X importtime, 2026-12-06.)"""
    from confusable_homoglyphs.confusables import confusables_data

    pairs = {key.translate(MARKS): [entry["c"].translate(MARKS) for entry in found]
             for key, found in confusables_data.items()}
    prototypes = {}
    for char, alike in pairs.items():
        if len(char) != 1 or len(alike) != 1:
            continue
        other = alike[0]
        if len(other) > 1 or len(pairs.get(other, ())) > 1 or other < char:
            prototypes[char] = other
    return prototypes


def name_skeletons(name: str) -> frozenset[str]:
    """The TR39 skeletons of a normalised name, casefolded: two names look alike when they
    share one. Both orders count: casefolded first, "ALICE" and "Alice" meet; skeleton first,
    a capital I meets a small l ("AIice" and "Alice"), which its small i does not."""
    return frozenset({_skeleton(name.casefold()).casefold(), _skeleton(name).casefold()})


def _skeleton(text: str) -> str:
    prototypes = _prototypes()
    mapped = "".join(prototypes.get(c, c) for c in unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFD", mapped)
