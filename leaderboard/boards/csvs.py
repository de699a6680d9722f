"""CSV as the project writes it: no cell a spreadsheet would run as a formula."""

import csv
import io
import re
from collections.abc import Iterable, Sequence

# OWASP's CSV injection advice: a spreadsheet runs a cell starting with one of these as a
# formula, so such a text cell gets a leading quote; a number written as text stays as it is.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def csv_cell(value):
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) \
            and not PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def csv_text(rows: Iterable[Sequence]) -> str:
    """Every CSV the project writes goes through here, so no cell can be a formula."""
    buffer = io.StringIO()
    csv.writer(buffer).writerows([csv_cell(v) for v in row] for row in rows)
    return buffer.getvalue()
