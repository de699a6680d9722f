"""The registry of benchmark kinds: what each kind plugs into the shared machinery.

A kind reads its source file into items, turns an item into database rows and back, builds the
judge queries of an item, parses replies and aggregates per-item results into slices. The
importer, the scorer and the pipeline only talk to a kind through this interface.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from scoring import mmae


@dataclass(frozen=True)
class ItemRows:
    key: str
    dimensions: dict
    content: dict
    media: list[str]
    criteria: list[dict]  # index, category, question, right_choice, wrong_choices


@dataclass(frozen=True)
class BenchmarkKind:
    name: str
    title: str
    rounds: int
    load: Callable  # path -> list of items; raises ValueError subclasses naming each fault
    to_rows: Callable  # item -> ItemRows
    from_rows: Callable  # ItemRows -> item
    media_of: Callable  # item -> list of input media paths
    make_query: Callable  # (item, criterion, round, *, seed) -> query
    parse_reply: Callable  # (text, n_choices) -> (letter, reason)
    score_item: Callable  # (item, criterion scores or None when missing) -> per-item row
    aggregate: Callable  # per-item rows -> slices
    intervals: Callable  # (per-item rows, *, seed) -> bootstrap intervals, shaped as slices
    dimensions: tuple[str, ...]


def _mmae_to_rows(sample: mmae.Sample) -> ItemRows:
    return ItemRows(
        key=sample.id,
        dimensions=sample.dimensions(),
        content={"messages": sample.messages, "tags": sample.tags},
        media=list(sample.input_audio),
        criteria=[
            {"index": r.index, "category": r.category, "question": r.question,
             "right_choice": r.right_choice, "wrong_choices": list(r.wrong_choices)}
            for r in sample.rubrics
        ],
    )


def _mmae_from_rows(rows: ItemRows) -> mmae.Sample:
    dims = rows.dimensions
    return mmae.Sample(
        id=rows.key,
        complexity=dims["complexity"],
        modality=dims["modality"],
        granularity=tuple(dims["granularity"]),
        operations=tuple((op["granularity"], op["operation"]) for op in dims["operations"]),
        messages=rows.content["messages"],
        tags=rows.content.get("tags", []),
        rubrics=tuple(
            mmae.Rubric(index=c["index"], category=c["category"], question=c["question"],
                        right_choice=c["right_choice"], wrong_choices=tuple(c["wrong_choices"]))
            for c in rows.criteria
        ),
        input_audio=tuple(rows.media),
    )


MMAE = BenchmarkKind(
    name=mmae.KIND,
    title="MMAE (Massive Multitask Audio Editing)",
    rounds=mmae.ROUNDS,
    load=mmae.load_meta,
    to_rows=_mmae_to_rows,
    from_rows=_mmae_from_rows,
    media_of=lambda sample: list(sample.input_audio),
    make_query=mmae.make_query,
    parse_reply=mmae.parse_reply,
    score_item=mmae.sample_result,
    aggregate=mmae.taxonomy,
    intervals=mmae.taxonomy_intervals,
    dimensions=mmae.DIMENSIONS,
)

KINDS: dict[str, BenchmarkKind] = {MMAE.name: MMAE}


def get_kind(name: str) -> BenchmarkKind:
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown benchmark kind {name!r}; known: {', '.join(KINDS)}") from None
