"""The protocol of a benchmark kind: everything the platform asks of a benchmark.

The importer, the upload validation, the scoring pipeline, the `score` command, the boards, the
explorer and the results files talk to a benchmark only through a `Kind`. Adding a benchmark is
one new subclass, registered in `scoring.kinds`.

Plain Python with no Django import: the kinds are shared by the workers, the command line and
the tests.
"""

from __future__ import annotations

import abc
import hashlib
import json
import mimetypes
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from scoring.kinds.files import MAX_PER_KIND


@dataclass(frozen=True)
class ItemRows:
    """An item as the database stores it: its key, dimensions, content, input media and
    criteria (index, category, question, and the kind's spec of it)."""

    key: str
    dimensions: dict
    content: dict
    media: list[str]
    criteria: list[dict]


@dataclass(frozen=True)
class Metric:
    key: str  # the name figures are stored under
    label: str  # what a visitor reads ("pass A", never "pass_A")
    definition: str  # one line, shown on column headers and the scoring page
    count: bool = False  # a count (of failures): no leader, no axis, no interval
    digits: int = 2  # decimals shown, the same on every page

    def format(self, value) -> str:
        """The figure as every page, table, chart and email shows it."""
        if value is None:
            return "–"
        return f"{value:,.0f}" if self.count else f"{value:.{self.digits}f}"

    def cell(self, value, interval) -> tuple[str, tuple[str, str] | None, bool]:
        """(the figure, its interval's bounds or None, whether it is a count), formatted."""
        bounds = None if interval is None or self.count else \
            (self.format(interval[0]), self.format(interval[1]))
        return self.format(value), bounds, self.count


@dataclass(frozen=True)
class Dimension:
    key: str
    label: str
    order: tuple[str, ...] = ()  # buckets in display order; others after them, by name

    def bucket_key(self, bucket: str) -> tuple:
        return (self.order.index(bucket) if bucket in self.order else len(self.order), bucket)


@dataclass(frozen=True)
class Section:
    """A part of a kind's "How scoring works" page: a title and its paragraphs."""

    title: str
    paragraphs: tuple[str, ...]


@dataclass(frozen=True)
class Media:
    """An audio file sent inline in a judge request, as a `data:` URI of its bytes."""

    path: str  # absolute

    @property
    def mime(self) -> str:
        mime = mimetypes.guess_type(self.path)[0] or "audio/wav"
        return "audio/wav" if mime in ("audio/x-wav", "audio/wave") else mime


@dataclass(eq=False)
class Job:
    """One judge query: what is sent, how the reply is read, what an answer is stored under.

    `messages` are OpenAI chat messages in which each inlined audio part carries a `Media`
    where its URL goes; the query loop puts the file's `data:` URI there when it sends.
    `fields(value)` turns the parsed reply (None when the query failed) into the answer's
    fields: choices, choice, reason, score and the kind's verdict (a dict).
    """

    item: str  # the item's key
    criterion: int  # the criterion's index within the item
    round: int
    messages: list
    parse: Callable[[str], Any] = field(repr=False)
    fields: Callable[[Any], dict] = field(repr=False)

    def media(self) -> list[Media]:
        return [m for m in _walk(self.messages) if isinstance(m, Media)]

    def content_key(self, *, config: str, digest: Callable[[Media], str]) -> str:
        """The judgment cache's key: a hash of exactly what the judge receives (every text
        and the sha256 of every audio file's bytes, with its MIME type), the judge config and
        the round. An identical request under one config is never asked twice."""
        def default(value):
            if isinstance(value, Media):
                return f"data:{value.mime};sha256,{digest(value)}"
            raise TypeError(f"cannot hash {type(value).__name__} in a judge request")

        text = json.dumps([config, self.round, self.messages], default=default,
                          ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def _walk(value) -> Iterator:
    if isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item)
    else:
        yield value


def answer_record(job: Job, answer) -> dict:
    """One answered query as a flat record (the names of the Answer model's fields);
    `answer` is a judge.fleet.JudgeAnswer."""
    return {
        "id": job.item, "rubric_index": job.criterion, "round": job.round,
        **job.fields(answer.value if answer.ok else None),
        "raw": answer.raw, "error": answer.error, "error_kind": answer.error_kind,
        "endpoint": answer.endpoint,
        "attempts": answer.attempts,
        "latency_ms": None if answer.latency_ms is None else round(answer.latency_ms, 1),
    }


@dataclass(frozen=True)
class PanelQuestion:
    """One rubric about one system's output as a person on the listening panel is asked it
    (Kind.panel_question): what the system was asked, the question, its options with the one
    that says the output passes first (the panel shuffles them for each rater), the audio to
    hear in full and the texts to read before answering."""

    instruction: str
    question: str
    options: tuple[str, ...]
    audio: tuple[str, ...] = ()  # audio labels as the explorer serves them: output, input1, ...
    texts: tuple[tuple[str, str], ...] = ()  # (what it is, its text)
    # How to read the question's notation, in words (the judge is told it in its prompt).
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReferenceRow:
    """A published result (a paper's table row), with its figures per slice."""

    model: str
    note: str
    scope: str
    n_samples: int | None
    figures: list[tuple[str, str, dict]]  # (dimension, bucket, {metric: value})


class RunData(Protocol):
    """What a kind reads to write a run's results files: from the database (the pipeline) or
    from memory (the `score` command)."""

    meta: dict  # benchmark, version, kind, judge, simulated, options, missing
    outputs: dict[str, str]  # item key -> its output (a file's path, or a text response)

    def items(self) -> Iterator[tuple[ItemRows, dict | None, dict]]:
        """(item, its per-item row or None, {(criterion index, round): answer record}) in
        benchmark order."""

    def slices(self) -> dict:
        """{"overall": figures, dimension: {bucket: figures}}"""


@dataclass(frozen=True)
class OutputFormat:
    """How a kind's outputs arrive: files named by a predictions file, in an archive (audio),
    or text responses inside the predictions file itself."""

    files: bool  # the predictions name files that come in an archive
    help: str  # what an author uploads, for the upload form and errors
    # (text or text stream, *, name, known_ids, per_kind) -> {item key: output}; raises
    # PredictionError naming faults
    read: Callable[..., dict[str, str]]
    # (outputs' folder, output) -> sha256 of what the judge receives for it
    digest: Callable[[str, str], str]
    # (outputs' folder, output) -> why the output cannot be judged, or None
    check: Callable[[Any, str], str | None] = lambda root, output: None
    # Outputs that are files: the predictions file's names in an archive, its reader to
    # entries that say where each one is (scoring.kinds.files.Prediction; same arguments as
    # `read`), and the upload's check of one extracted output under the upload limits
    # ((path, limits) -> why not, or None; scoring.kinds.audio for audio).
    names: tuple[str, ...] = ()
    entries: Callable[..., list] | None = None
    check_file: Callable[[Any, Any], str | None] | None = None


def text_sha256(root, text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def file_sha256(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def nan_if_none(value) -> float:
    return float("nan") if value is None else float(value)


def mean_score(scores: Sequence) -> float | None:
    """The mean of the known scores (None: none known), as ItemResult.score keeps it."""
    known = [score for score in scores if score is not None]
    return sum(known) / len(known) if known else None


def rank_value(value) -> float:
    """A figure as a ranking key compares it: exact to 1e-9, so float noise from different
    summation orders never decides a rank; a missing figure ranks last."""
    return -1e18 if value is None else round(float(value), 9)


class Kind(abc.ABC):
    """A benchmark kind. Subclasses set the class attributes and implement the abstract
    methods."""

    name: ClassVar[str]
    title: ClassVar[str]
    slug: ClassVar[str] = ""  # the board's address a first import gives it (default: name)
    meta_file: ClassVar[str] = "metadata file"  # what `import_benchmark` reads, for its help
    rounds: ClassVar[int]  # judge rounds per criterion, for a new judge config
    prompts: ClassVar[tuple[str, ...]]  # the judge prompts verbatim; hashed into configs
    outputs: ClassVar[OutputFormat]
    options: ClassVar[tuple[str, ...]] = ()  # upload options read (e.g. "align")
    # The judge hears the items' input audio: a benchmark of this kind needs its audio root.
    sends_inputs: ClassVar[bool] = False
    # The calibration baselines (scoring.baselines: Identity returns each item's first input,
    # Noise white noise of its length) make sense for it: audio outputs made from audio inputs.
    calibration_baselines: ClassVar[bool] = False
    # The figures in the one order every page, table, chart, export and email lists them:
    # the ranking key's metrics first, in its order (so a phone's first screen shows the
    # figures that rank), then the others.
    metrics: ClassVar[tuple[Metric, ...]]
    # Figures of the judge rather than of the model (its agreement with itself, its bias),
    # kept on every slice beside the metrics, with "judged": how many answers they cover.
    judge_figures: ClassVar[tuple[Metric, ...]] = ()
    ranking: ClassVar[tuple[str, ...]]  # the ranking key: metrics, best first, in order
    ranking_text: ClassVar[str]
    # A ranking metric -> the figure published tables give in its place (the official,
    # answered-only one): where a reported row lacks the first, the second places it.
    published: ClassVar[dict[str, str]] = {}
    dimensions: ClassVar[tuple[Dimension, ...]]
    main_dimension: ClassVar[str] = ""  # the one a pivot opens on (default: the first)
    item_noun: ClassVar[str] = "item"  # what its items are called ("sample")
    # The benchmark's data on the Hugging Face Hub (owner/name), which a model repository's
    # .eval_results entries name (exports.eee); "" where it has none.
    hub_dataset: ClassVar[str] = ""
    # What the explorer's "failed" filter keeps, as its checkbox says it (see `failed`).
    failed_filter: ClassVar[str] = "only items that failed"
    # How a query that failed after every attempt counts, as the status page says it.
    failed_queries: ClassVar[str] = "counted, and left out of the figures they would have made"
    criteria_noun: ClassVar[str] = ""  # what its criteria are called, if shown ("rubric")
    chart_axes: ClassVar[tuple[str, str]]  # (x, y) of the board's scatter
    scale: ClassVar[float] = 100.0  # the top of the metrics' scale
    files: ClassVar[tuple[str, ...]]  # results files of a finished run
    # What the compare page's per-item wins count: ItemResult.passed and ItemResult.score
    # (item_columns), by these names (None: not shown).
    pairwise: ClassVar[tuple[str | None, str | None]] = (None, None)
    explorer_template: ClassVar[str] = "leaderboard/_text_sample.html"
    # What a sample's <details> opens, fetched when opened: every judge answer of an item.
    explorer_detail_template: ClassVar[str] = "leaderboard/_text_judgments.html"
    # The per-item figures the board's items dataset carries (leaderboard.boards.datasets), by their
    # names in ItemResult.values, with their types: "float", "int", "bool", "string" or
    # "list<int>".
    item_fields: ClassVar[tuple[tuple[str, str], ...]] = ()
    # One item with several systems' outputs of it side by side (the item pages).
    versus_template: ClassVar[str] = "leaderboard/_text_versus.html"
    # People answer its rubrics as the judge is asked them (the listening panel, app `panel`),
    # and the judge card sets their verdicts against the judge's: the `panel_` methods.
    has_panel: ClassVar[bool] = False
    panel_how: ClassVar[str] = ""  # what a rater does, as the panel's page tells them

    # --- the judge simulator -----------------------------------------------------------

    def simulated_reply(self, body: dict, config) -> tuple[str, list] | None:
        """The judge simulator's reply to a query of this kind (judge.simulator, whose config
        is `config`): (content, what its stats record), or None when the query is not one of
        this kind's. A kind judged by the fleet defines it so that `make run` scores it."""
        return None

    # --- labels ------------------------------------------------------------------------

    def metric(self, key: str) -> Metric:
        for metric in self.metrics:
            if metric.key == key:
                return metric
        raise KeyError(f"{self.name} has no metric {key!r}")

    def label(self, key: str) -> str:
        return self.metric(key).label

    @property
    def metric_keys(self) -> tuple[str, ...]:
        return tuple(m.key for m in self.metrics)

    @property
    def counts(self) -> tuple[str, ...]:
        return tuple(m.key for m in self.metrics if m.count)

    @property
    def dimension_keys(self) -> tuple[str, ...]:
        return tuple(d.key for d in self.dimensions)

    def dimension(self, key: str) -> Dimension:
        for dimension in self.dimensions:
            if dimension.key == key:
                return dimension
        return Dimension(key, key.replace("_", " "))

    def dimension_label(self, key: str) -> str:
        return "overall" if key == "overall" else self.dimension(key).label

    def bucket_key(self, dimension: str, bucket: str) -> tuple:
        return self.dimension(dimension).bucket_key(bucket)

    def rank_key(self, figures: dict) -> tuple:
        """Sort key of the ranking, best first: each ranking metric descending."""
        return tuple(-rank_value(figures.get(k)) for k in self.ranking)

    def sort_key(self, metric: str, figures: dict) -> tuple:
        """Sort key when a visitor sorts by `metric`: that metric, then the ranking."""
        return (-rank_value(figures.get(metric)), *self.rank_key(figures))

    def prompt_sha256(self) -> str:
        return hashlib.sha256("\x00".join(self.prompts).encode()).hexdigest()

    # --- metadata ----------------------------------------------------------------------

    @abc.abstractmethod
    def load(self, path) -> list:
        """Read and check a metadata file into items; raise MetaError naming every fault."""

    @abc.abstractmethod
    def to_rows(self, item) -> ItemRows:
        """An item as database rows."""

    @abc.abstractmethod
    def from_rows(self, rows: ItemRows):
        """An item back from its database rows."""

    def buckets(self, dimension: str, dims: dict) -> list[str]:
        """The buckets of `dimension` that an item (its dimensions) falls in."""
        return [dims[dimension]]

    def item_text(self, rows: ItemRows) -> tuple[str, ...]:
        """The item's text a visitor searches and reads: its instruction or question."""
        question = rows.content.get("question")
        return (question,) if isinstance(question, str) else ()

    # --- submissions -------------------------------------------------------------------

    def read_predictions(self, text, *, name: str, known_ids: set[str],
                         per_kind: int = MAX_PER_KIND) -> dict[str, str]:
        """item key -> output (a file's path, or a text response), from a predictions file's
        text or a text stream; PredictionError names the faults by file, line and id, the
        first `per_kind` of each kind and how many more."""
        return self.outputs.read(text, name=name, known_ids=known_ids, per_kind=per_kind)

    # --- judging -----------------------------------------------------------------------

    @abc.abstractmethod
    def jobs(self, items: Sequence, outputs: dict[str, str], *, rounds: int, seed: int,
             options: dict, output_path: Callable[[str], str],
             input_path: Callable[[str], str]) -> list[Job]:
        """The judge queries of the items that have an output. `output_path(output)` and
        `input_path(media)` give absolute paths of audio to inline."""

    def job_count(self, items: Sequence, outputs: dict[str, str], *, rounds: int,
                  options: dict) -> int | None:
        """How many queries `jobs` gives for these items, without building them (the `score`
        command's progress bar and ETA from its start); None when it cannot say so
        cheaply."""
        return None

    # --- aggregation -------------------------------------------------------------------

    @abc.abstractmethod
    def item_result(self, item, output: str | None, answers: dict[tuple[int, int], dict]
                    ) -> dict:
        """One item's per-item row from its output (None: missing) and its answers, keyed
        (criterion index, round)."""

    @abc.abstractmethod
    def item_columns(self, row: dict) -> dict:
        """A per-item row as ItemResult's columns: values (the kind's figures), passed and
        score (what `pairwise` counts; mean_score gives a mean of criterion scores)."""

    def stored_row(self, rows: ItemRows, columns: dict) -> dict:
        """A per-item row back from ItemResult's columns."""
        return columns["values"]

    @abc.abstractmethod
    def summarize(self, rows: Sequence[dict]) -> dict:
        """{"overall": figures, dimension: {bucket: figures}} over per-item rows."""

    # The per-item values a paired bootstrap resamples (item_vector gives them in this order);
    # "missing" (1 for an item without an output) is always one of them.
    vector_names: ClassVar[tuple[str, ...]] = ()

    @abc.abstractmethod
    def item_vector(self, row: dict) -> tuple[float, ...]:
        """A per-item row's values named by vector_names, as floats (NaN for a null)."""

    @abc.abstractmethod
    def replicate_figures(self, weights, values: dict, dims: list[dict]) -> dict:
        """Every metric a board ranks or sorts by (not the counts), for each bootstrap
        replicate and model at once: {metric: R x M array}. `weights` (R x n) are how many times
        each of n items was drawn, `values` the vector_names' n x M arrays of those items, `dims`
        their dimensions. With every weight 1 it gives summarize()'s figures of those items
        (scoring.kinds.resample has the arithmetic)."""

    # Replicates drawn at a time for intervals: R x n weights of a 25,000-item set are 200 MB.
    INTERVAL_CHUNK: ClassVar[int] = 100

    def intervals(self, rows: Sequence[dict], *, seed: int, resamples: int = 1000) -> dict:
        """Seeded bootstrap 95% intervals shaped like summarize(): {metric: (lo, hi)} per
        slice, of every figure replicate_figures gives (the figures a board ranks or sorts
        by). Each slice's items are drawn with replacement and its figures computed as
        summarize() computes them (a task's accuracy, a domain the mean of its tasks, ...),
        the 2.5th and 97.5th percentiles of 1,000 replicates; a figure no replicate has
        (NaN: nothing to average) has none."""
        import numpy as np

        from scoring.kinds import resample  # numpy: imported here so `score` starts sooner
        if not rows or not self.vector_names:
            return {}
        members: dict[str, dict[str, list[int]]] = {"overall": {"": list(range(len(rows)))}}
        for dimension in self.dimension_keys:
            for position, row in enumerate(rows):
                for bucket in self.buckets(dimension, row):
                    members.setdefault(dimension, {}).setdefault(bucket, []).append(position)
        vectors = np.array([self.item_vector(r) for r in rows], dtype=float).reshape(
            len(rows), len(self.vector_names))
        rng = np.random.default_rng(seed)
        result: dict = {}
        for dimension, buckets in members.items():
            for bucket, at in buckets.items():
                values = {name: vectors[at, k][:, None]
                          for k, name in enumerate(self.vector_names)}
                dims = [rows[i] for i in at]
                drawn: dict[str, list] = {}
                for start in range(0, resamples, self.INTERVAL_CHUNK):
                    weights = resample.draws(len(at), min(self.INTERVAL_CHUNK,
                                                          resamples - start), rng)
                    for metric, figure in self.replicate_figures(weights, values,
                                                                 dims).items():
                        drawn.setdefault(metric, []).append(figure[:, 0])
                bounds = {metric: _percentiles(np.concatenate(parts))
                          for metric, parts in drawn.items()}
                if dimension == "overall":
                    result["overall"] = bounds
                else:
                    result.setdefault(dimension, {})[bucket] = bounds
        return result

    @abc.abstractmethod
    def synthetic_row(self, item, rng, skill: float) -> dict:
        """A made-up per-item row for a system of `skill` (0 to 1), drawn with `rng` (a
        random.Random): what `manage.py seed_board` fills boards with, labelled synthetic."""

    # --- results files -----------------------------------------------------------------

    @abc.abstractmethod
    def file_chunks(self, name: str, data: RunData) -> Iterable[str]:
        """The text of results file `name` (one of `files`) of a run."""

    # --- published results -------------------------------------------------------------

    def parse_reference(self, data, path) -> list[ReferenceRow]:
        """Rows of a published table (a paper's), checked; raise ValueError naming faults."""
        raise ValueError(f"{self.title} has no published tables to load")

    # --- the explorer ------------------------------------------------------------------

    def explorer_item(self, rows: ItemRows, result: dict | None, answers: list[dict],
                      output: str | None) -> dict:
        """What the explorer shows of one item: its text, its output, its outcome in a few
        words (the default template shows it once scored) and every judgment. `answers` are
        the item's answer records in (criterion, round) order."""
        return {
            "turns": self.item_text(rows), "response": output,
            "has_output": output is not None, "scored": result is not None,
            "result": result or {}, "outcome": None,
            "judgments": [{"label": f"round {a['round'] + 1}", "raw": a["raw"],
                           "error": a["error"], "score": a.get("score"),
                           "choice": a.get("choice"), "attempts": a["attempts"]}
                          for a in answers],
        }

    def item_difference(self, a: dict, b: dict) -> tuple[float, ...]:
        """How far apart two systems' results on one item are, by their ItemResult columns
        (missing, values, passed, score), as a key the compare page's list of differing items
        sorts on, most different first; all zeros where they agree. By default: whether one
        passed and the other did not, then how far apart their scores are (an unknown on
        either side is no difference)."""
        known = a["passed"] is not None and b["passed"] is not None
        scored = a["score"] is not None and b["score"] is not None
        return (float(known and a["passed"] != b["passed"]),
                abs(a["score"] - b["score"]) if scored else 0.0)

    def failed(self, columns: dict) -> bool:
        """Whether the explorer's "failed" filter keeps an item, by its ItemResult columns
        (missing, values, passed, score)."""
        return bool(columns["missing"])

    SEARCH_SEPARATOR: ClassVar[str] = "\n\x1f\n"  # between the text and the key

    def search_text(self, rows: ItemRows) -> str:
        """What the explorer's search looks in: the item's text, then its key, casefolded as
        the search's words are. Stored with the item at import."""
        return self.SEARCH_SEPARATOR.join(("\n".join(self.item_text(rows)), rows.key)).casefold()

    def item_buckets(self, dims: dict) -> list[tuple[str, str]]:
        """(dimension, bucket) for every bucket of every dimension an item falls in. Stored
        with the item at import."""
        return [(d, b) for d in self.dimension_keys for b in dict.fromkeys(self.buckets(d, dims))]

    # --- the listening panel (a kind that has_panel) ---------------------------------------

    def panel_question(self, rows: ItemRows, index: int, output: str | None) -> PanelQuestion:
        """Criterion `index` of an item about a system's output of it (a file's path, or a
        text response; None: missing) as a rater is asked it."""
        raise NotImplementedError(f"{self.title} has no listening panel")

    def panel_verdict(self, values: dict, index: int) -> bool | None:
        """The judge's verdict on criterion `index` of an item, read from the item's per-item
        row as ItemResult.values keeps it: whether the output passes, as a rater says by
        choosing the question's first option; None where the judge gave none."""
        raise NotImplementedError(f"{self.title} has no listening panel")

    def panel_axis(self, category: str) -> str | None:
        """The per-item figure (a key of ItemResult.values, averaged over items into the
        board's metric of the same name) that a criterion of this category counts toward,
        for figures corrected by the panel's answers (panel.corrected); None: none."""
        return None

    def panel_stratum(self, dims: dict) -> str:
        """The stratum of an item (its dimensions) that the panel spreads its tasks over,
        besides the criterion's category; by default one for every item."""
        return ""

    # --- documentation -----------------------------------------------------------------

    @abc.abstractmethod
    def how_scoring_works(self) -> list[Section]:
        """The kind's "How scoring works" page: what each metric means and how it is
        computed, how a missing output counts, the slices and the ranking rule."""


def _percentiles(values) -> tuple[float, float] | None:
    """The 2.5th and 97.5th percentiles of a figure's replicates that have it."""
    import numpy as np

    values = values[~np.isnan(values)]
    if not len(values):
        return None
    lo, hi = np.percentile(values, [2.5, 97.5])
    return float(lo), float(hi)
