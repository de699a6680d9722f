"""Reads that serve a submission's page: its figures and the per-sample explorer.

The caller has already checked visibility (submissions.selectors.submission_get); these
functions take the submission it returned and never look one up themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.core.cache import cache
from django.core.paginator import Paginator
from django.db.models import Count, Exists, OuterRef, QuerySet

from leaderboard.boards import state
from scoring import media
from scoring.aggregation import answer_groups
from scoring.kinds import ItemRows, Kind, get_kind
from scoring.kinds.files import resolve_audio
from scoring.models import (
    Answer,
    Criterion,
    Item,
    ItemBucket,
    ItemResult,
    ScoringRun,
    SliceResult,
)
from submissions import withheld as withheld_rule
from submissions.models import Submission

PAGE_SIZE = 20
RESULT_COLUMNS = ("missing", "values", "passed", "score")
CRITERION_FIELDS = ("index", "category", "question", "spec")


class ExplorerError(ValueError):
    """A well-formed explorer request that still cannot be served (a page past the last)."""


def finished_run(submission: Submission) -> ScoringRun | None:
    run = submission.current_run
    return run if run is not None and run.status == ScoringRun.Status.FINISHED else None


# --- figures -----------------------------------------------------------------------------


def _figures(s: SliceResult, kind: Kind) -> dict:
    values = s.figures()
    row = {"dimension": s.dimension, "bucket": s.bucket, "n": s.n}
    for metric in kind.metric_keys:
        row[metric] = values.get(metric)
        row[f"{metric}_interval"] = s.interval(metric)
    row["cells"] = [m.cell(row[m.key], row[f"{m.key}_interval"])
                    for m in kind.metrics]  # display order, formatted
    return row


def submission_figures(submission: Submission) -> dict | None:
    """Overall figures and every bucket of every dimension (in the kind's order), with
    bootstrap intervals; None until the current run is finished."""
    run = finished_run(submission)
    if run is None:
        return None
    kind = get_kind(submission.benchmark.kind)
    found = list(SliceResult.objects.filter(run=run))
    rows = [_figures(s, kind) for s in found]
    overall = next((r for r in rows if r["dimension"] == SliceResult.OVERALL), None)
    overall_values = next((s.values for s in found if s.dimension == SliceResult.OVERALL), {})
    order = {d: i for i, d in enumerate(kind.dimension_keys)}
    slices = sorted((r for r in rows if r["dimension"] != SliceResult.OVERALL),
                    key=lambda r: (order.get(r["dimension"], len(order)), r["dimension"],
                                   kind.bucket_key(r["dimension"], r["bucket"])))
    previous = None
    for row in slices:
        row["first_of_dimension"] = row["dimension"] != previous
        row["dimension_label"] = kind.dimension_label(row["dimension"])
        # Each cell with its label, which a phone shows above it (the table stacks there).
        row["labelled"] = list(zip((m.label for m in kind.metrics), row["cells"], strict=True))
        previous = row["dimension"]
    cells = [] if overall is None else [
        (metric.label, *metric.cell(overall[metric.key], overall[f"{metric.key}_interval"])[:2],
         metric.definition, metric.count)
        for metric in kind.metrics]
    judge = [] if overall is None else [
        (m.label, m.format(overall_values.get(m.key)), m.definition) for m in kind.judge_figures]
    return {"overall": overall, "overall_cells": cells, "slices": slices, "judge": judge,
            "labels": [m.label for m in kind.metrics]}


# --- the explorer ------------------------------------------------------------------------


@dataclass(frozen=True)
class ExplorerQuery:
    dimension: str = ""
    bucket: str = ""
    failed: bool = False
    search: str = ""
    page: int = 1


@dataclass(frozen=True)
class ItemRow:
    """What the explorer shows of an item, besides its criteria."""

    id: int
    key: str
    dimensions: dict
    content: dict
    media: tuple[str, ...]


def slice_buckets(benchmark) -> dict[str, list[str]]:
    """dimension -> the buckets that the benchmark's items fall in, read once per benchmark:
    its items never change after import."""
    kind = get_kind(benchmark.kind)

    def read() -> dict[str, list[str]]:
        found: dict[str, list[str]] = {d: [] for d in kind.dimension_keys}
        for dimension, bucket in (ItemBucket.objects.filter(item__benchmark=benchmark)
                                  .values_list("dimension", "bucket").distinct()):
            found.setdefault(dimension, []).append(bucket)
        return {d: sorted(b, key=lambda bucket, d=d: kind.bucket_key(d, bucket))
                for d, b in found.items() if d in kind.dimension_keys}

    return cache.get_or_set(f"explorer-buckets:{benchmark.pk}:{benchmark.sha256}", read,
                            timeout=None)


ITEM_FIELDS = ("id", "key", "dimensions", "content", "media")


class InOrder:
    """Every item of a benchmark in order, for a paginator: the count is the benchmark's, and
    a page is a range of positions (0 to n_items - 1, as imported), read from the index."""

    def __init__(self, benchmark):
        self.benchmark = benchmark

    def count(self) -> int:
        return self.benchmark.n_items

    def __getitem__(self, window: slice) -> list[tuple]:
        return list(Item.objects.filter(benchmark=self.benchmark,
                                        position__gte=window.start, position__lt=window.stop)
                    .order_by("position").values_list(*ITEM_FIELDS))


class ByIds:
    """The items whose ids a query gives in benchmark order, for a paginator: the count and
    a page's ids come from that query (narrow, and filtered by indexes), with the page's
    items read by those ids."""

    def __init__(self, ids: QuerySet):
        self.ids = ids

    def count(self) -> int:
        return self.ids.count()

    def __getitem__(self, window: slice) -> list[tuple]:
        # one query: the page's ids as a subquery (a page keeps benchmark order)
        return list(Item.objects.filter(id__in=self.ids[window]).order_by("position")
                    .values_list(*ITEM_FIELDS))


def _matching(benchmark, query: ExplorerQuery, run: ScoringRun | None,
              submission_id: int) -> InOrder | ByIds:
    """The items the query keeps, in benchmark order, filtered in the database by what import
    and aggregation stored (buckets, search text, failed flags), so that a page reads only
    its own items. A result withheld (submissions.withheld) matches no filter on results."""
    needle = query.search.strip().casefold()
    if not (query.dimension or query.failed or needle):
        return InOrder(benchmark)
    if query.failed and run is None:
        return ByIds(Item.objects.none().values_list("id", flat=True))
    hidden = list(state.withheld(benchmark).items(submission_id)) if query.failed else []
    if query.failed and not (query.dimension or needle):
        # read from the partial index of the run's failed results, in benchmark order
        return ByIds(ItemResult.objects.filter(run=run, failed=True)
                     .exclude(item_id__in=hidden).order_by("position")
                     .values_list("item_id", flat=True))
    items = Item.objects.filter(benchmark=benchmark)
    if query.dimension:
        items = items.filter(Exists(ItemBucket.objects.filter(
            item=OuterRef("pk"), dimension=query.dimension, bucket=query.bucket)))
    if query.failed:
        items = items.filter(Exists(ItemResult.objects.filter(
            run=run, item=OuterRef("pk"), failed=True))).exclude(pk__in=hidden)
    if needle:
        items = items.filter(search_text__contains=needle)
    return ByIds(items.order_by("position").values_list("id", flat=True))


def explorer_page(*, submission: Submission, query: ExplorerQuery) -> dict:
    """One page of items matching the query, each with its audio, figures and how many judge
    answers it has, as the kind shows an item; the answers themselves are read when a
    sample's table is opened (`sample_detail`), the page's bulk before they were.

    A few queries whatever the page size and the benchmark's size: the count of matching
    items, the page's items, their criteria, results and answer counts.
    """
    run = submission.current_run
    kind = get_kind(submission.benchmark.kind)
    paginator = Paginator(_matching(submission.benchmark, query, finished_run(submission),
                                    submission.pk), PAGE_SIZE)
    if query.page > paginator.num_pages:
        raise ExplorerError(f"page {query.page} is past the last page "
                            f"({paginator.num_pages})")
    page = paginator.page(query.page)
    rows = [ItemRow(id=i, key=k, dimensions=d, content=c, media=tuple(m))
            for i, k, d, c, m in page.object_list]
    return {"page": page, "count": paginator.count, "num_pages": paginator.num_pages,
            "samples": _samples(kind, submission, rows, run, with_answers=False),
            "item_noun": kind.item_noun, "run_finished": finished_run(submission) is not None}


def sample_detail(*, submission: Submission, item_key: str) -> dict | None:
    """One sample with every judge answer (for MMAE every rubric's votes), for the table a
    sample's <details> opens; None when the benchmark has no such item."""
    found = (Item.objects.filter(benchmark_id=submission.benchmark_id, key=item_key)
             .values_list(*ITEM_FIELDS).first())
    if found is None:
        return None
    i, k, d, c, m = found
    row = ItemRow(id=i, key=k, dimensions=d, content=c, media=tuple(m))
    kind = get_kind(submission.benchmark.kind)
    return _samples(kind, submission, [row], submission.current_run, with_answers=True)[0]


def published(submission: Submission, user) -> bool:
    """Whether everyone may see the submission (SubmissionQuerySet.PUBLISHED), so that what
    its pages show is no secret of anyone's. An anonymous visitor found it through
    submission_get, which finds nothing else for one: no query then."""
    return (not user.is_authenticated
            or Submission.objects.published().filter(pk=submission.pk).exists())


def _answer_counts(run: ScoringRun, ids: list[int]) -> dict[int, int]:
    return dict(Answer.objects.filter(run=run, criterion__item_id__in=ids)
                .values("criterion__item_id").annotate(n=Count("id"))
                .values_list("criterion__item_id", "n"))


def _samples(kind: Kind, submission: Submission, rows: list[ItemRow],
             run: ScoringRun | None, *, with_answers: bool) -> list[dict]:
    held = state.withheld(submission.benchmark).items(submission.pk)
    ids = [r.id for r in rows]
    shown = [i for i in ids if i not in held]
    criteria: dict[int, list[dict]] = {}
    for item_id, *fields in (Criterion.objects.filter(item_id__in=ids).order_by("item_id", "index")
                             .values_list("item_id", *CRITERION_FIELDS)):
        criteria.setdefault(item_id, []).append(dict(zip(CRITERION_FIELDS, fields, strict=True)))
    results, answers, counts = {}, {}, {}
    if run is not None:
        results = {r["item_id"]: r for r in ItemResult.objects.filter(run=run,
                                                                      item_id__in=shown)
                   .values("item_id", *RESULT_COLUMNS)}
        if with_answers:
            answers = dict(answer_groups(run, shown))
        else:
            counts = _answer_counts(run, shown)
    playable = bool(submission.benchmark.audio_root)
    samples = []
    for row in rows:
        item_rows = ItemRows(key=row.key, dimensions=row.dimensions, content=row.content,
                             media=list(row.media), criteria=criteria.get(row.id, []))
        if row.id in held:
            samples.append(_withheld_sample(kind, item_rows))
            continue
        result = results.get(row.id)
        output = run.outputs.get(row.key) if run is not None else None
        found = answers.get(row.id, {})
        sample = kind.explorer_item(
            item_rows, None if result is None else kind.stored_row(item_rows, result),
            [found[k] for k in sorted(found)], output)
        sample.update({
            "key": row.key, "template": kind.explorer_template,
            "detail_template": kind.explorer_detail_template,
            "n_answers": len(found) if with_answers else counts.get(row.id, 0),
            "inputs": [f"input{n}" for n in range(1, len(row.media) + 1)] if playable else [],
            "missing_reason": "" if output is not None or run is None
            else run.missing.get(row.key, ""),
        })
        samples.append(sample)
    return samples


def _withheld_sample(kind: Kind, rows: ItemRows) -> dict:
    """A sample whose results are withheld (submissions.withheld): its text and tags as the
    kind shows an unscored item, no output, figure, vote or judge reply."""
    sample = kind.explorer_item(rows, None, [], None)
    sample.update({"key": rows.key, "withheld": withheld_rule.NOTE,
                   "template": "leaderboard/_withheld_sample.html",
                   "detail_template": "leaderboard/_withheld_detail.html",
                   "n_answers": 0, "inputs": [], "missing_reason": ""})
    return sample


def output_withheld(submission: Submission, item_key: str) -> bool:
    """Whether the submission's output of the item (its audio, its spectrograms) is
    withheld from its public address (submissions.withheld): the panel plays it to raters
    through addresses of its own, which name no submission."""
    item_id = Item.objects.filter(benchmark_id=submission.benchmark_id, key=item_key) \
        .values_list("id", flat=True).first()
    return item_id is not None and state.withheld(submission.benchmark)(submission.pk, item_id)


# --- audio -------------------------------------------------------------------------------


def audio_file(submission: Submission, item_key: str, which: str) -> Path | None:
    """The file behind one of a sample's players, from the database only; None when there
    is none. `which` is "output" or "inputN" (N from 1, the sample's N-th input audio).

    An output is served only from inside its run's folder: the paths come from an upload.
    When that folder is in a storage other than MEDIA_ROOT, this machine's copy of the file
    is served, fetched from the storage (and checked) the first time it is asked for.
    """
    item = Item.objects.filter(benchmark_id=submission.benchmark_id, key=item_key) \
        .only("media").first()
    if item is None:
        return None
    if which == "output":
        run = submission.current_run
        relative = None if run is None else run.outputs.get(item_key)
        if not isinstance(relative, str):
            return None
        path = media.output_path(run.audio_root, relative, run.digests.get(item_key))
        if path is None:
            return None
    else:
        number = int(which.removeprefix("input"))
        if not 1 <= number <= len(item.media):
            return None
        root = Path(submission.benchmark.audio_root).resolve()
        path = resolve_audio(root, item.media[number - 1]).resolve()
        if not path.is_relative_to(root):
            return None
    return path if path.is_file() else None
