"""A benchmark kind of audio edits that exists only in the tests: `kind` (its rules, its upload
format, its output checks, its aggregation) and `simulated` (the judge simulator's replies to
its queries). Registered through settings.BENCHMARK_KINDS_EXTRA, it runs under `make run` with
no file outside this package edited (tests/scoring/kinds/test_new_kind_under_make_run.py)."""

from tests.scoring.kinds.tone.kind import Tone

KINDS = (Tone(),)
