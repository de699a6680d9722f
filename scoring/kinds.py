"""The registry of benchmark kinds: what each kind plugs into the shared machinery.

A kind reads its source file into items, turns an item into database rows and back, builds the
judge queries of an item, parses replies and aggregates per-item results into slices. The
importer, the scorer and the pipeline only talk to a kind through this interface.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from scoring import airbench, mmae


@dataclass(frozen=True)
class ItemRows:
    key: str
    dimensions: dict
    content: dict
    media: list[str]
    criteria: list[dict]  # index, category, question, right_choice, wrong_choices


@dataclass(frozen=True, kw_only=True)
class BenchmarkKind:
    name: str
    title: str
    rounds: int
    load: Callable  # path -> list of items; raises ValueError subclasses naming each fault
    to_rows: Callable  # item -> ItemRows
    from_rows: Callable  # ItemRows -> item
    media_of: Callable  # item -> list of input media paths
    dimensions: tuple[str, ...]
    # Audio-output kinds (MMAE): queries with audio, majority votes, IFR/CR/EMR slices.
    make_query: Callable | None = None  # (item, criterion, round, *, seed) -> query
    parse_reply: Callable | None = None  # (text, n_choices) -> (letter, reason)
    score_item: Callable | None = None  # (item, criterion scores or None if missing) -> row
    aggregate: Callable | None = None  # per-item rows -> slices
    intervals: Callable | None = None  # (per-item rows, *, seed) -> bootstrap intervals
    # What a board shows: metrics (keys of a slice's figures), their labels, the rank order,
    # the metric whose intervals give rank ranges (None: no intervals), the two metrics the
    # board's chart plots and the top of the metrics' scale.
    metrics: tuple[str, ...] = ("IFR", "CR", "EMR")
    metric_labels: dict = field(default_factory=dict)
    rank_key: Callable = mmae.rank_key
    ranking: str = "Ranked by EMR, then IFR, then CR"
    interval_metric: str | None = "EMR"
    chart_axes: tuple[str, str] = ("IFR", "EMR")
    scale: float = 100.0
    counts: tuple[str, ...] = ()  # metrics that are counts (of failures): no leader, no axis
    # (dimension, an item's dimensions) -> the buckets of that dimension the item falls in.
    buckets: Callable = lambda dimension, dims: [dims[dimension]]
    # dimension -> its buckets in display order (others by name, after them).
    bucket_order: dict = field(default_factory=dict)
    # What the compare page's per-item wins count: ItemResult.em and the mean of its
    # rubric_scores, by these names (None: not shown).
    pairwise: tuple[str | None, str | None] = ("Exact match (EM)", "Mean rubric score")
    # Outputs: "audio" (an archive of files) or "text" (responses in a predictions file).
    output: str = "audio"
    # Text kinds: (text, *, name, known_ids) -> {key: response}, raising PredictionError.
    parse_outputs: Callable | None = None
    # Text kinds: (items, outputs, options) -> judge jobs (scoring.jobs.TextJob).
    text_jobs: Callable | None = None
    # Text kinds: (items, outputs, answers by (key, round)) -> (per-item rows, summary).
    results: Callable | None = None
    # Text kinds: per-item row -> ItemResult's em and rubric_scores.
    item_columns: Callable | None = None
    files: tuple[str, ...] = ("results.jsonl", "per_sample.json", "taxonomy.json")
    options: tuple[str, ...] = ()  # upload options the kind reads (e.g. "align")
    # The judge prompts verbatim; their hash identifies them in judge configs.
    prompts: tuple[str, ...] = ()
    # (run's audio root, an item's output) -> sha256 of what is sent to the judge for it; the
    # judgment cache's key. Outputs are files by default.
    output_digest: Callable = lambda root, output: file_sha256(Path(root) / output)

    def prompt_sha256(self) -> str:
        return hashlib.sha256("\x00".join(self.prompts).encode()).hexdigest()

    def label(self, metric: str) -> str:
        return self.metric_labels.get(metric, metric)

    def bucket_key(self, dimension: str, bucket: str) -> tuple:
        order = self.bucket_order.get(dimension, ())
        return (order.index(bucket) if bucket in order else len(order), bucket)


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
    buckets=mmae.buckets,
    dimensions=mmae.DIMENSIONS,
    prompts=(mmae.SYSTEM_PROMPT, mmae.QUERY_TEMPLATE),
)

def _parse_responses(text: str, *, name: str, known_ids: set[str]) -> dict[str, str]:
    responses = airbench.parse_responses(text, name=name, known_ids=known_ids)
    return {r.uniq_id: r.response for r in responses}


def _foundation_to_rows(item: airbench.FoundationItem) -> ItemRows:
    return ItemRows(
        key=item.uniq_id, dimensions=item.dimensions(),
        content={"question": item.question, "choices": list(item.choices),
                 "answer_gt": item.answer_gt, "path": item.path},
        media=[item.media],
        criteria=[{"index": 0, "category": item.task_name, "question": item.question,
                   "right_choice": item.answer_gt,
                   "wrong_choices": [c for c in item.choices if c != item.answer_gt]}],
    )


def _foundation_from_rows(rows: ItemRows) -> airbench.FoundationItem:
    return airbench.FoundationItem(
        uniq_id=rows.key, path=rows.content["path"], question=rows.content["question"],
        choices=tuple(rows.content["choices"]), answer_gt=rows.content["answer_gt"],
        task_name=rows.dimensions["task_name"], dataset_name=rows.dimensions["dataset"])


def _chat_to_rows(item: airbench.ChatItem) -> ItemRows:
    return ItemRows(
        key=item.uniq_id, dimensions=item.dimensions(),
        content={"question": item.question, "answer_gt": item.answer_gt,
                 "meta_info": item.meta_info, "path": item.path},
        media=[item.media],
        criteria=[{"index": 0, "category": item.task_name, "question": item.question,
                   "right_choice": item.answer_gt, "wrong_choices": []}],
    )


def _chat_from_rows(rows: ItemRows) -> airbench.ChatItem:
    return airbench.ChatItem(
        uniq_id=rows.key, path=rows.content["path"], question=rows.content["question"],
        answer_gt=rows.content["answer_gt"], meta_info=rows.content["meta_info"],
        task_name=rows.dimensions["task"], dataset_name=rows.dimensions["dataset"])


AIRBENCH_FILES = ("scores.json", "results.jsonl")


def _text_digest(root, response: str) -> str:
    """A response is sent as text: its digest is that of the text (the prompt around it is
    fixed by the item, the round and the config's prompt hash)."""
    return hashlib.sha256(response.encode()).hexdigest()

AIRBENCH_FOUNDATION = BenchmarkKind(
    name=airbench.FOUNDATION,
    title="AIR-Bench foundation (single-choice audio understanding)",
    rounds=1,
    load=airbench.load_foundation,
    to_rows=_foundation_to_rows,
    from_rows=_foundation_from_rows,
    media_of=lambda item: [item.media],
    dimensions=("domain", "task"),
    bucket_order={"domain": airbench.DOMAINS, "task": tuple(airbench.TASK_ORDER)},
    pairwise=("Correct answer", None),
    metrics=("acc_strict", "acc", "unparsed"),
    counts=("unparsed",),
    metric_labels={"acc_strict": "acc (strict)", "acc": "acc (parsed)",
                   "unparsed": "unparsed"},
    rank_key=airbench.foundation_rank_key,
    ranking=("Ranked by strict accuracy (correct of all items), then accuracy over the items "
             "whose answer could be read (the published figure)"),
    interval_metric=None,
    chart_axes=("acc", "acc_strict"),
    output="text",
    parse_outputs=_parse_responses,
    text_jobs=lambda items, outputs, options: airbench.foundation_jobs(
        items, outputs, align=bool(options.get("align"))),
    results=airbench.foundation_results,
    item_columns=airbench.foundation_columns,
    files=AIRBENCH_FILES,
    options=("align",),
    prompts=(airbench.ALIGN_TEMPLATE, airbench.ALIGN_CLOSING),
    output_digest=_text_digest,
)

AIRBENCH_CHAT = BenchmarkKind(
    name=airbench.CHAT,
    title="AIR-Bench chat (open questions, judged with position swap)",
    rounds=airbench.CHAT_ROUNDS,
    load=airbench.load_chat,
    to_rows=_chat_to_rows,
    from_rows=_chat_from_rows,
    media_of=lambda item: [item.media],
    dimensions=("category", "task"),
    bucket_order={"category": airbench.CATEGORY_ORDER, "task": tuple(airbench.CHAT_TASK_ORDER)},
    pairwise=(None, "Mean score of the two passes"),
    metrics=("score", "pass_A", "pass_B", "failed"),
    counts=("failed",),
    metric_labels={"score": "score", "pass_A": "pass A", "pass_B": "pass B",
                   "failed": "failed replies"},
    rank_key=airbench.chat_rank_key,
    ranking=("Ranked by the average of speech, sound, music and mixed audio, each the mean "
             "of its two passes (reference first, then swapped); scores 1 to 10"),
    interval_metric=None,
    chart_axes=("pass_A", "pass_B"),
    scale=10.0,
    output="text",
    parse_outputs=_parse_responses,
    text_jobs=lambda items, outputs, options: airbench.chat_jobs(items, outputs),
    results=airbench.chat_results,
    item_columns=airbench.chat_columns,
    files=AIRBENCH_FILES,
    prompts=(airbench.CHAT_TEMPLATE,),
    output_digest=_text_digest,
)

KINDS: dict[str, BenchmarkKind] = {
    kind.name: kind for kind in (MMAE, AIRBENCH_FOUNDATION, AIRBENCH_CHAT)}


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def get_kind(name: str) -> BenchmarkKind:
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown benchmark kind {name!r}; known: {', '.join(KINDS)}") from None
