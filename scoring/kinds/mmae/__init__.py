"""MMAE: its rules as SPEC.md defines them (`rules`), its upload format (`predictions`), the
kind the platform uses (`kind`) and the judge simulator's replies to its queries
(`simulated`)."""

from scoring.kinds.mmae.kind import MMAE

KINDS = (MMAE(),)
