"""A board as a dataset: one row per (public representative, item) with the model, the
submission, the item, its slice keys (the buckets of each of the kind's dimensions), whether
its output is missing and its per-item figures under the kind's names (Kind.item_fields),
written by pandas and pyarrow as Parquet, CSV or JSONL, a representative at a time so that
the response streams and no board is held in memory whole. A result withheld
(submissions.withheld) has no row until it leaves the listening panel's pool."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from leaderboard.boards import state
from leaderboard.boards.csvs import csv_cell
from scoring.kinds import Kind, get_kind
from scoring.models import Benchmark, Item, ItemBucket, ItemResult

if TYPE_CHECKING:
    import pandas as pd  # imported where a dataset is written: 0.26 s at every process's start

FORMATS = {"parquet": "application/vnd.apache.parquet", "csv": "text/csv; charset=utf-8",
           "jsonl": "application/x-ndjson; charset=utf-8"}
TYPES = {"float": pa.float64(), "int": pa.int64(), "bool": pa.bool_(), "string": pa.string(),
         "list<int>": pa.list_(pa.int64())}


def _items(benchmark: Benchmark, dimension: str, bucket: str) -> list[tuple[int, str, dict]]:
    """(id, key, dimensions) of the items of the slice, in benchmark order."""
    items = Item.objects.filter(benchmark=benchmark).order_by("position")
    if dimension != state.OVERALL:
        items = items.filter(id__in=ItemBucket.objects.filter(
            dimension=dimension, bucket=bucket).values("item_id"))
    return list(items.values_list("id", "key", "dimensions"))


def _slice_keys(kind: Kind, items: list[tuple[int, str, dict]]) -> dict[str, bool]:
    """Each dimension -> whether an item may be in several of its buckets (a list column)."""
    return {d: any(len(kind.buckets(d, dims)) != 1 for _, _, dims in items)
            for d in kind.dimension_keys}


def schema(kind: Kind, lists: dict[str, bool]) -> pa.Schema:
    return pa.schema([
        ("model", pa.string()), ("submission", pa.int64()), ("item", pa.string()),
        *((d, pa.list_(pa.string()) if many else pa.string()) for d, many in lists.items()),
        ("missing", pa.bool_()),
        *((name, TYPES[kind_type]) for name, kind_type in kind.item_fields)])


def frames(benchmark: Benchmark, *, dimension: str = state.OVERALL,
           bucket: str = "") -> tuple[pa.Schema, Iterator[pd.DataFrame]]:
    """The dataset's schema, and its rows as one DataFrame per public representative (in
    the order the board state lists them)."""
    kind = get_kind(benchmark.kind)
    every = _items(benchmark, state.OVERALL, "")
    lists = _slice_keys(kind, every)  # from every item, so that each slice has one schema
    items = every if dimension == state.OVERALL else _items(benchmark, dimension, bucket)
    keys = {item_id: (key, {d: (kind.buckets(d, dims) if many else
                                (kind.buckets(d, dims) or [None])[0])
                            for d, many in lists.items()})
            for item_id, key, dims in items}
    columns = schema(kind, lists).names

    held = state.withheld(benchmark)

    def each() -> Iterator[pd.DataFrame]:
        import pandas as pd

        for shown in state.representatives(benchmark):
            results = ItemResult.objects.filter(run_id=shown.current_run_id,
                                                item_id__in=list(keys)) \
                .exclude(item_id__in=list(held.items(shown.id))).order_by("position")
            rows = [{"model": shown.model.name, "submission": shown.id, "item": keys[i][0],
                     **keys[i][1], "missing": missing,
                     **{name: values.get(name) for name, _ in kind.item_fields}}
                    for i, missing, values in results.values_list("item_id", "missing",
                                                                   "values")]
            yield pd.DataFrame(rows, columns=columns)

    return schema(kind, lists), each()


class _Sink(io.RawIOBase):
    """A file pyarrow writes to, whose bytes are taken as they come."""

    def __init__(self):
        self.parts: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        data, self.parts = b"".join(self.parts), []
        return data


def stream(benchmark: Benchmark, fmt: str, *, dimension: str = state.OVERALL,
           bucket: str = "") -> Iterator[bytes]:
    """The dataset's bytes in `fmt` (a key of FORMATS), a representative at a time."""
    table_schema, parts = frames(benchmark, dimension=dimension, bucket=bucket)
    if fmt == "parquet":
        sink = _Sink()
        with pq.ParquetWriter(sink, table_schema) as writer:
            for frame in parts:
                writer.write_table(pa.Table.from_pandas(frame, schema=table_schema,
                                                        preserve_index=False))
                yield sink.take()
        yield sink.take()
        return
    header = True
    for frame in parts:
        if fmt == "csv":
            for name in frame.columns:  # lists as JSON; no text cell a spreadsheet would run
                if frame[name].dtype == object:
                    frame[name] = frame[name].map(
                        lambda v: json.dumps(v) if isinstance(v, list) else csv_cell(v))
            yield frame.to_csv(index=False, header=header, lineterminator="\n").encode()
            header = False
        else:
            yield frame.to_json(orient="records", lines=True, force_ascii=False).encode()
    if fmt == "csv" and header:  # no representative: the header alone
        yield (",".join(table_schema.names) + "\n").encode()


def filename(benchmark: Benchmark, stamp: str, fmt: str, dimension: str, bucket: str) -> str:
    """Named after the board state: its benchmark, version and board version, and the slice."""
    part = "" if dimension == state.OVERALL else f"-{dimension}-{bucket}"
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in part)
    return (f"{benchmark.slug}-v{benchmark.version}-board{benchmark.board_version}"
            f"{safe}-items.{fmt}")
