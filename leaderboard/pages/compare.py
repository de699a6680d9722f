"""Reads of the compare page: two or more models' representatives side by side, slice by slice,
and their wins and losses item by item."""

from __future__ import annotations

import re
from itertools import combinations

from leaderboard.boards import board_pages, lookups, ranking  # noqa: F401 - lookups registers field__any
from leaderboard.boards.model_pages import model_labels, slice_order
from leaderboard.boards.selectors import metric_figures
from leaderboard.boards.state import representatives, representatives_of, shown, withheld
from leaderboard.pages.forms import MODEL_ID
from scoring.kinds import Kind
from scoring.models import Benchmark, ItemResult, SliceResult
from submissions.models import Submission


def board_models(benchmark: Benchmark, model_ids: list[int]) -> dict[int, Submission]:
    """model id -> its representative on the board, of the models asked for (those without
    one left out), for the forms that choose models to compare."""
    return representatives_of(benchmark, model_ids)


def asked_ids(values: list[str]) -> list[int]:
    """The model ids among a query's `models` values (`1,2` or repeated): what the forms
    check, each once; text that is not an id (MODEL_ID: at most 18 digits, so a bigint) is
    left to the form to refuse."""
    parts = (p.strip() for p in ",".join(values).split(","))
    return list(dict.fromkeys(int(p) for p in parts if re.fullmatch(MODEL_ID, p)))


def compared_models(submissions: list[Submission]) -> list[dict]:
    """The columns of a comparison, in the order asked for."""
    labels = model_labels([s.model for s in submissions])
    return [{"model": labels[s.model_id], "model_id": s.model_id, "submission": s.id,
             "organisation": s.model.organisation} for s in submissions]


def compare_rows(submissions: list[Submission], kind: Kind) -> list[dict]:
    """The slices of several runs side by side: one row per (dimension, bucket), one cell per
    submission (None where a run has no figures for the slice), the leaders of each metric
    marked. Reads all the runs' slices in one query."""
    runs = [s.current_run_id for s in submissions]
    by_slice: dict[tuple[str, str], dict[int, SliceResult]] = {}
    for figures in SliceResult.objects.filter(run_id__in=runs):
        by_slice.setdefault((figures.dimension, figures.bucket), {})[figures.run_id] = figures
    rows = []
    for dimension, bucket in sorted(by_slice, key=lambda k: slice_order(*k, kind)):
        found = by_slice[(dimension, bucket)]
        cells = [metric_figures(found[run], kind) if run in found else None for run in runs]
        for m in kind.metrics:
            metric = m.key
            # Figures as shown: two that read alike (27.78 and 27.78, their last bits apart)
            # are a tie, never a lead. All alike leads nobody; counts (failures) neither.
            shown = {m.format(c[metric]) for c in cells if c and c[metric] is not None}
            values = [c[metric] for c in cells if c and c[metric] is not None]
            best = m.format(max(values)) if len(shown) > 1 and metric not in kind.counts \
                else None
            for cell in cells:
                if cell is not None:
                    cell[f"{metric}_best"] = best is not None and cell[metric] is not None \
                        and m.format(cell[metric]) == best
        for cell in cells:
            if cell is not None:  # display order, for templates
                cell["cells"] = [(m.format(cell[m.key]), cell[f"{m.key}_best"])
                                 for m in kind.metrics]
        rows.append({"dimension": dimension, "dimension_label": kind.dimension_label(dimension),
                     "bucket": bucket, "n": next(c["n"] for c in cells if c is not None),
                     "cells": cells})
    return rows


def _outcome(mine, theirs) -> str:
    return "wins" if mine > theirs else "losses" if mine < theirs else "ties"


def pairwise(submissions: list[Submission]) -> list[dict]:
    """Per-sample wins, losses and ties of each pair (A, B) of submissions over the samples both
    runs scored: on EM, and on the per-sample mean rubric score. Counts are A's view. A sample
    whose result of either is withheld (submissions.withheld) is not counted, as the list of
    samples each count links to (item_pages.differing) leaves it out; `withheld` says how
    many."""
    runs = [s.current_run_id for s in submissions]
    per_run: dict[int, dict[int, tuple[int, float | None]]] = {run: {} for run in runs}
    for run, item, passed, score in (ItemResult.objects.filter(run_id__in=runs)
                                     .values_list("run_id", "item_id", "passed", "score")):
        per_run[run][item] = (passed, score)
    held = withheld(Benchmark.objects.get(runs=submissions[0].current_run_id))
    labels = model_labels([s.model for s in submissions])
    pairs = []
    for a, b in combinations(submissions, 2):
        mine, theirs = per_run[a.current_run_id], per_run[b.current_run_id]
        scored = mine.keys() & theirs.keys()
        common = {item for item in scored if not (held(a.id, item) or held(b.id, item))}
        em = dict.fromkeys(("wins", "losses", "ties"), 0)
        rubric = dict.fromkeys(("wins", "losses", "ties"), 0)
        for item in common:
            if mine[item][0] is not None and theirs[item][0] is not None:
                em[_outcome(mine[item][0], theirs[item][0])] += 1
            if mine[item][1] is not None and theirs[item][1] is not None:
                rubric[_outcome(mine[item][1], theirs[item][1])] += 1
        pairs.append({"a": labels[a.model_id], "a_id": a.model_id, "b": labels[b.model_id],
                      "b_id": b.model_id, "n": len(common), "withheld": len(scored - common),
                      "EM": em, "rubric": rubric})
    return pairs


# --- the picker ----------------------------------------------------------------------------

PICKER_LIMIT = 20  # models a search shows: a board of 10,000 must not list them all


def picker_needle(text: str) -> str:
    """A search as the picker matches it: spaces collapsed, case folded."""
    return " ".join(text.split()).casefold()


def picker_rows(benchmark: Benchmark, needle: str = "", *,
                limit: int = PICKER_LIMIT) -> tuple[list[dict], int]:
    """The board's public representatives as the picker lists them (model id, name,
    organisation and overall rank), in board order, and how many the board ranks: every one
    for a search, the first `limit` without. Read from the stored overall order (or the
    database's ranking) and the rows' own models, not by ranking the whole board in Python
    (two seconds at 10,000 submissions)."""
    if needle:
        window, total, _ = board_pages.overall_order(benchmark)
        by_id = {s.id: s for s in representatives(benchmark)}
    else:
        window, total, _ = board_pages.overall_window(benchmark, start=0, stop=limit)
        by_id = shown(benchmark, [pk for pk, *_ in window])
    return [{"model_id": s.model_id, "model": s.model.name,
             "organisation": s.model.organisation, "rank": rank}
            for pk, rank, _ in window if (s := by_id.get(pk)) is not None], total


def picker_matches(benchmark: Benchmark, needle: str, *,
                   limit: int = PICKER_LIMIT) -> tuple[list[dict], int]:
    """At most `limit` of the board's public representatives whose model or organisation
    holds `needle` (every one when it is empty): names that start with it first, then the
    rest, each group in board order; and how many matched in all."""
    rows, total = picker_rows(benchmark, needle, limit=limit)
    if not needle:
        return [_choice(r) for r in rows[:limit]], total
    found = [r for r in rows if needle in r["model"].casefold()
             or needle in r["organisation"].casefold()]
    found.sort(key=lambda r: not r["model"].casefold().startswith(needle))  # stable: rank
    return [_choice(r) for r in found[:limit]], len(found)


def picker_choices(benchmark: Benchmark, chosen: list[int], found: dict[int, Submission],
                   needle: str) -> dict:
    """The picker's boxes: the chosen models (`found`: board_models of `chosen`) first,
    checked, in the order asked; then the search's matches (the board's first models without
    a search)."""
    picked = [{"id": s.model_id, "model": s.model.name, "organisation": s.model.organisation,
               "checked": True} for i in chosen if (s := found.get(i))]
    matches, count = picker_matches(benchmark, needle)
    taken = {c["id"] for c in picked}
    return {"choices": picked + [{**m, "checked": False} for m in matches
                                 if m["id"] not in taken],
            "note": picker_note(needle, len(matches), count)}


def picker_note(needle: str, shown: int, count: int) -> str:
    """What the picker says of a search's matches (the endpoint sends it too)."""
    quoted = f"\u201c{needle}\u201d"
    if not count:
        return f"No model matches {quoted}." if needle else "No scored public submission yet."
    if count > shown:
        return (f"{shown} of the {count} models matching {quoted}" if needle else
                f"The board\u2019s first {shown} of {count} models") + ": search for the others."
    if needle:
        verb = "model matches" if count == 1 else "models match"
        return f"{count} {verb} {quoted}."
    return ""


def _choice(row: dict) -> dict:
    return {"id": row["model_id"], "model": row["model"],
            "organisation": row["organisation"], "rank": row["rank"]}
