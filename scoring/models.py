import hashlib
import json

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from judge.fleet import full_sampling
from judge.limits import (
    DEFAULT_AUDIO_LIMITS,
    DEFAULT_MAX_AUDIO_SECONDS,
    DEFAULT_MAX_AUDIOS,
    VLLM_VERSION,
)


class JudgeConfig(models.Model):
    """How a benchmark is judged: the judge model, its endpoints, prompts, rounds, sampling,
    seed and retry budget. Every scoring run points to one.

    What decides a verdict (model, prompts, rounds, sampling, seed) is fixed once a run has
    used the config (`in_use`): a change of any of them is a new config. The base URLs and the
    retry budget are operational and may change in place; each change is audited.
    """

    name = models.CharField(max_length=100, unique=True)
    judge_model = models.CharField(max_length=200)
    base_urls = models.JSONField(default=list)
    prompt_sha256 = models.CharField(max_length=64)
    rounds = models.PositiveSmallIntegerField()
    sampling = models.JSONField(default=dict)
    seed = models.IntegerField(default=0)
    max_attempts = models.PositiveSmallIntegerField(default=5)
    # What the judge servers accept (judge.limits; launch_qwen3_omni.sh's MAX_AUDIO_SECONDS
    # and MAX_AUDIOS): the longest audio item, and audios in one prompt. Uploads whose outputs
    # are longer are refused at validation, before anything reaches the judge. Operational,
    # like the base URLs: they follow the deployment and change in place, audited.
    max_audio_seconds = models.FloatField(default=float(DEFAULT_MAX_AUDIO_SECONDS))
    max_audios = models.PositiveSmallIntegerField(default=DEFAULT_MAX_AUDIOS)
    # vLLM 0.33's audio limits as the launch script sets them (judge.limits.audio_limits_for):
    # the largest audio file, and the largest audio once decoded to float32 samples (frames x
    # channels x 4 bytes). Operational too; uploads over them are refused at validation.
    max_audio_file_mb = models.PositiveIntegerField(
        default=DEFAULT_AUDIO_LIMITS["VLLM_MAX_AUDIO_CLIP_FILESIZE_MB"])
    max_audio_decode_bytes = models.PositiveBigIntegerField(
        default=DEFAULT_AUDIO_LIMITS["VLLM_MAX_AUDIO_DECODE_BYTES"])
    # The vLLM release its servers run: part of what decides a verdict, so a config scored
    # under one release stays labelled with it and a board never mixes releases.
    vllm_version = models.CharField(max_length=20, default=VLLM_VERSION)
    notes = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    VERDICT_FIELDS = ("judge_model", "prompt_sha256", "rounds", "sampling", "seed",
                      "vllm_version")

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(rounds__gte=1), name="judgeconfig_rounds_positive"),
            models.CheckConstraint(condition=Q(max_attempts__gte=1),
                                   name="judgeconfig_attempts_positive"),
        ]
        ordering = ["-created_at"]

    def __str__(self):
        return self.name

    @property
    def in_use(self) -> bool:
        return self.runs.exists()

    def as_dict(self) -> dict:
        """The config's settings, as audit records and the API show them."""
        return {"name": self.name, "judge_model": self.judge_model,
                "base_urls": list(self.base_urls), "prompt_sha256": self.prompt_sha256,
                "rounds": self.rounds, "sampling": dict(self.sampling), "seed": self.seed,
                "max_attempts": self.max_attempts,
                "max_audio_seconds": self.max_audio_seconds, "max_audios": self.max_audios,
                "max_audio_file_mb": self.max_audio_file_mb,
                "max_audio_decode_bytes": self.max_audio_decode_bytes,
                "vllm_version": self.vllm_version,
                "verdict_sha256": self.verdict_sha256}

    @property
    def verdict_sha256(self) -> str:
        """A hash of everything that decides a verdict (VERDICT_FIELDS, the sampling in
        full): two configs with the same hash judge alike."""
        fields = {name: getattr(self, name) for name in self.VERDICT_FIELDS}
        fields["sampling"] = full_sampling(fields["sampling"])
        text = json.dumps(fields, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


class Benchmark(models.Model):
    """One imported version of a benchmark's metadata file.

    A slug names the benchmark across versions; importing a changed file adds a version, and the
    same file again changes nothing (its sha256 is already there).
    """

    slug = models.SlugField(max_length=50)
    kind = models.CharField(max_length=20)  # a key of scoring.kinds.KINDS
    version = models.PositiveIntegerField()
    title = models.CharField(max_length=200)
    sha256 = models.CharField(max_length=64)
    source_name = models.CharField(max_length=255)
    audio_root = models.CharField(max_length=1000)
    synthetic = models.BooleanField(default=False)
    n_items = models.PositiveIntegerField()
    n_criteria = models.PositiveIntegerField()
    imported_at = models.DateTimeField(auto_now_add=True)
    # The board shows runs under this config; new submissions are scored with it.
    judge_config = models.ForeignKey(JudgeConfig, null=True, blank=True,
                                     on_delete=models.PROTECT, related_name="benchmarks")
    # Raised by scoring.boards.board_changed whenever what the board shows may change, so that
    # a board's state is read with the benchmark's row, never aggregated per request.
    board_version = models.PositiveBigIntegerField(default=0)
    board_changed_at = models.DateTimeField(default=timezone.now)
    # Its rubric texts, per-item results and judge replies are seen only by those the
    # disclosure rule lets see them (scoring.visibility.disclosure) until the reveal clears it.
    rubrics_hidden = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["slug", "version"], name="benchmark_slug_version"),
            # Serves the "same file again" lookup of the importer.
            models.UniqueConstraint(fields=["slug", "sha256"], name="benchmark_slug_sha256"),
            models.CheckConstraint(condition=Q(version__gte=1), name="benchmark_version_positive"),
        ]
        ordering = ["slug", "-version"]

    def __str__(self):
        return f"{self.slug} v{self.version}"


class Item(models.Model):
    """A benchmark sample: its id, taxonomy dimensions, content and input media."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField()
    key = models.CharField(max_length=100)
    dimensions = models.JSONField()  # MMAE: complexity, modality, granularity, operations
    content = models.JSONField()  # MMAE: messages and tags
    media = models.JSONField(default=list)  # input audio paths, relative to the audio root
    # sha256 of each input audio file, in `media` order (empty when the files are not here):
    # part of the judgment cache's key of a query that sends the file.
    media_sha256 = models.JSONField(default=list)
    # What the explorer's search reads (Kind.search_text: the item's text and key,
    # casefolded), kept so that a search is one LIKE in the database rather than every item
    # read; on PostgreSQL a trigram index serves it (migration scoring 0013).
    search_text = models.TextField(blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["benchmark", "key"], name="item_benchmark_key"),
            # Also serves listing a benchmark's items in file order.
            models.UniqueConstraint(fields=["benchmark", "position"],
                                    name="item_benchmark_position"),
        ]
        ordering = ["benchmark", "position"]

    def __str__(self):
        return self.key

    def ordered_criteria(self) -> list["Criterion"]:
        """Criteria in index order, from a prefetch when there is one."""
        return sorted(self.criteria.all(), key=lambda c: c.index)

    def as_rows(self):
        """The item as its benchmark kind reads it back (scoring.kinds.base.ItemRows)."""
        from scoring.kinds.base import ItemRows

        return ItemRows(key=self.key, dimensions=self.dimensions, content=self.content,
                        media=self.media, criteria=[
                            {"index": c.index, "category": c.category, "question": c.question,
                             "spec": c.spec}
                            for c in self.ordered_criteria()])


class ItemBucket(models.Model):
    """A bucket of a dimension that an item falls in (Kind.buckets), stored at import so that
    the explorer's slice filter is a join: an MMAE sample is in each of its operations."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="buckets")
    dimension = models.CharField(max_length=50)
    bucket = models.CharField(max_length=200)

    class Meta:
        constraints = [
            # Also serves listing a benchmark's buckets for the explorer's form.
            models.UniqueConstraint(fields=["item", "dimension", "bucket"],
                                    name="itembucket_item_dimension_bucket"),
        ]
        indexes = [
            # Serves the explorer's slice filter: the items in one bucket.
            models.Index(fields=["dimension", "bucket", "item"],
                         name="itembucket_dimension_bucket"),
        ]

    def __str__(self):
        return f"{self.item_id} in {self.dimension}/{self.bucket}"


class Criterion(models.Model):
    """One question asked of the judge about an item (an MMAE rubric, an AIR-Bench
    question)."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="criteria")
    index = models.PositiveIntegerField()
    category = models.CharField(max_length=100)
    question = models.TextField()
    # What else the kind needs to ask it, as the kind defines it (Kind.to_rows): MMAE's
    # {"right": option, "wrong": [options]}.
    spec = models.JSONField(default=dict)

    class Meta:
        constraints = [
            # Also serves loading an item's criteria in order.
            models.UniqueConstraint(fields=["item", "index"], name="criterion_item_index"),
        ]
        ordering = ["item", "index"]
        verbose_name_plural = "criteria"

    def __str__(self):
        return f"{self.item.key}#{self.index}"


class ScoringRun(models.Model):
    """One scoring of a set of outputs on a benchmark version, with the judge it used.

    Work is split into batches of items (RunBatch) that workers claim; every answer is a row
    under a unique (run, criterion, round), so a redelivered batch adds nothing twice.
    """

    class Status(models.TextChoices):
        QUEUED = "queued"
        SCORING = "scoring"
        AGGREGATING = "aggregating"
        FINISHED = "finished"
        FAILED = "failed"
        CANCELLED = "cancelled"

    ACTIVE = (Status.QUEUED, Status.SCORING, Status.AGGREGATING)

    class Purpose(models.TextChoices):
        SUBMISSION = "submission"  # a new submission's first scoring
        RESCORE = "rescore"  # staff rescoring: its own queue, below new submissions
        BASELINE = "baseline"  # a calibration baseline (identity, noise)

    benchmark = models.ForeignKey(Benchmark, on_delete=models.PROTECT, related_name="runs")
    judge_config = models.ForeignKey(JudgeConfig, on_delete=models.PROTECT, related_name="runs")
    purpose = models.CharField(max_length=20, choices=Purpose.choices,
                               default=Purpose.SUBMISSION)
    label = models.CharField(max_length=100, blank=True)  # a baseline's system: Identity, Noise
    audio_root = models.CharField(max_length=1000)  # the outputs' folder
    # item key -> output path under audio_root; for text kinds (AIR-Bench), the response
    outputs = models.JSONField(default=dict)
    options = models.JSONField(default=dict)  # upload options of the kind (e.g. "align")
    # item key -> sha256 of what is sent to the judge for that item's output: the key of the
    # judgment cache (with criterion, config and round).
    digests = models.JSONField(default=dict)
    missing = models.JSONField(default=dict)  # item key -> why it has no usable output
    # A copy of the config's settings as they were when the run was made.
    judge_model = models.CharField(max_length=200)
    base_urls = models.JSONField(default=list)
    prompt_sha256 = models.CharField(max_length=64)
    rounds = models.PositiveSmallIntegerField()
    seed = models.IntegerField(default=0)
    sampling = models.JSONField(default=dict)
    max_attempts = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    status_times = models.JSONField(default=dict)  # status -> ISO time it was entered
    error = models.TextField(blank=True)
    total_queries = models.PositiveIntegerField(default=0)
    # Queries the judge refused (HTTP 400, judge.fleet.REFUSED), counted when the run is
    # aggregated: each is a wrong vote (SPEC section 4), and a board row says how many.
    refused_queries = models.PositiveIntegerField(default=0)
    # Judge queries lost on our side (judge.fleet.LOST_KINDS) and asked again, each loss
    # counted: past SCORING_MAX_LOST_SHARE of total_queries the run fails on our side.
    lost_queries = models.PositiveIntegerField(default=0)
    simulated = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            # Serves queue positions: active runs in creation order.
            models.Index(fields=["status", "created_at"], name="run_status_created"),
        ]
        ordering = ["-created_at"]

    def __str__(self):
        return f"run {self.pk} of {self.benchmark} ({self.status})"

    @property
    def judge_name(self) -> str:
        """Who judged the run, as every page and download names it: the judge simulator when
        it answered (it is not a model, and its scores are simulated), else the judge model.
        Figures made up without any judge (seed_board's) say so in their judge_model."""
        if self.simulated and not self.judge_model.startswith("synthetic"):
            return "judge simulator"
        return self.judge_model


class RunCost(models.Model):
    """What a run cost the judge fleet (scoring.cost): one row per run, each figure added to
    by whichever worker asked the queries (atomic increments, so workers side by side add
    up)."""

    run = models.OneToOneField(ScoringRun, on_delete=models.CASCADE, related_name="cost",
                               primary_key=True)
    queries = models.PositiveIntegerField(default=0)  # judge queries answered or refused
    reused = models.PositiveIntegerField(default=0)  # answers taken from the judgment cache
    requests = models.PositiveIntegerField(default=0)  # HTTP requests (attempts) sent
    replies = models.PositiveIntegerField(default=0)  # requests answered 200
    prompt_tokens = models.BigIntegerField(default=0)  # of the 200 replies' usage
    completion_tokens = models.BigIntegerField(default=0)
    audio_seconds = models.FloatField(default=0.0)  # audio the judge took in, per 200 reply
    audio_sent = models.PositiveIntegerField(default=0)  # audio items sent with their data
    audio_bytes = models.BigIntegerField(default=0)  # their data: URLs' characters
    audio_cached = models.PositiveIntegerField(default=0)  # items sent by their uuid alone
    cache_misses = models.PositiveIntegerField(default=0)  # of those, vLLM no longer held
    request_bytes = models.BigIntegerField(default=0)  # every request body's bytes
    busy_seconds = models.FloatField(default=0.0)  # time requests held a slot, summed

    def __str__(self):
        return f"cost of run {self.run_id}"


class RunBatch(models.Model):
    """A slice of a run's items: the unit a worker claims, scores and marks done."""

    class Status(models.TextChoices):
        PENDING = "pending"
        CLAIMED = "claimed"
        DONE = "done"

    run = models.ForeignKey(ScoringRun, on_delete=models.CASCADE, related_name="batches")
    index = models.PositiveIntegerField()
    item_keys = models.JSONField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    claims = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name_plural = "run batches"
        constraints = [
            models.UniqueConstraint(fields=["run", "index"], name="batch_run_index"),
        ]
        indexes = [
            # Serves the sweeper: claimed batches whose heartbeat went stale.
            models.Index(fields=["status", "heartbeat_at"], name="batch_status_heartbeat"),
        ]

    def __str__(self):
        return f"batch {self.index} of run {self.run_id}"


class Answer(models.Model):
    """One judge query's outcome (SPEC section 6 results.jsonl, one line)."""

    run = models.ForeignKey(ScoringRun, on_delete=models.CASCADE, related_name="answers")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="+")
    round = models.PositiveSmallIntegerField()
    # Text fields are nullable on purpose: results.jsonl tells null (no letter, no error)
    # from an empty string (an empty reply).
    choices = models.JSONField()  # as presented
    choice = models.CharField(max_length=1, null=True, blank=True)  # noqa: DJ001
    # The kind's reading of the reply (its Job.fields): MMAE's {"correct_letter", "correct"},
    # AIR-Bench chat's {"scores": [the reference's, the model's]}; {} when the query failed
    # and the kind has nothing to say then.
    verdict = models.JSONField(default=dict)
    reason = models.TextField(null=True, blank=True)  # noqa: DJ001
    raw = models.TextField(null=True, blank=True)  # noqa: DJ001
    error = models.TextField(null=True, blank=True)  # noqa: DJ001
    endpoint = models.CharField(max_length=300, null=True, blank=True)  # noqa: DJ001
    attempts = models.PositiveSmallIntegerField()
    latency_ms = models.FloatField(null=True, blank=True)
    # A numeric verdict (AIR-Bench chat: the model's 1-10 score in this pass); null when the
    # query failed or the kind's verdicts are letters.
    score = models.FloatField(null=True, blank=True)
    # The judgment cache's key: a hash of exactly what the judge received (every text and
    # audio byte), the judge config and the round (scoring.kinds.base.Job.content_key).
    content_key = models.CharField(max_length=64, blank=True)
    # What kind of failure `error` is (judge.fleet sets it on each answer): "" when none.
    error_kind = models.CharField(max_length=20, blank=True)
    # Copied from an earlier answer with the same key: no judge query was sent.
    cached = models.BooleanField(default=False)
    # The run whose answer was copied: cache hits are shown to an author only when that run
    # belongs to their own or to a public submission.
    source_run = models.ForeignKey("ScoringRun", null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # The idempotence of scoring: a redelivered batch cannot add a second answer.
            # Also serves loading a run's answers and counting progress.
            models.UniqueConstraint(fields=["run", "criterion", "round"],
                                    name="answer_run_criterion_round"),
        ]
        indexes = [
            # Serves the judgment cache: earlier answers to the same request.
            models.Index(fields=["content_key"], name="answer_content_key"),
            # Serves the fleet page: recent answers per endpoint.
            models.Index(fields=["answered_at"], name="answer_answered_at"),
        ]

    def __str__(self):
        return f"answer {self.criterion_id}/{self.round} of run {self.run_id}"


class ItemResult(models.Model):
    """Per-sample figures of a run (SPEC section 6 per_sample.json, one object)."""

    run = models.ForeignKey(ScoringRun, on_delete=models.CASCADE, related_name="item_results")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    missing = models.BooleanField(default=False)
    # The kind's per-item row (Kind.item_columns): MMAE's IFR, CR, EM and rubric_scores,
    # AIR-Bench's own figures.
    values = models.JSONField(default=dict)
    # What the compare page counts wins on (Kind.pairwise), kept as columns so that it reads
    # them without every row's values: whether the item passed as a whole (MMAE: exact match;
    # null where a kind has no such outcome) and its mean criterion score (null: none known).
    passed = models.BooleanField(null=True)
    score = models.FloatField(null=True)
    # Whether the explorer's "failed" filter keeps the item (Kind.failed of these columns),
    # and the item's position in its benchmark, stored at aggregation so that a run's failed
    # items are read in benchmark order from one index.
    failed = models.BooleanField(default=False)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "item"], name="itemresult_run_item"),
        ]
        indexes = [
            # Serves the explorer's "failed" filter: a run's failed items.
            models.Index(fields=["run", "position"], condition=Q(failed=True),
                         name="itemresult_run_failed"),
        ]

    def __str__(self):
        return f"{self.item_id} in run {self.run_id}"


class RunVector(models.Model):
    """A finished run's per-item values (its kind's vector_names), one row per item in
    benchmark order, packed as little-endian float32 with NaN for a null: what the paired
    bootstrap of a board's rank ranges resamples, read in one row per run."""

    run = models.OneToOneField(ScoringRun, primary_key=True, on_delete=models.CASCADE,
                               related_name="vector")
    names = models.JSONField(default=list)
    data = models.BinaryField()

    def __str__(self):
        return f"vector of run {self.run_id}"

    @staticmethod
    def pack(vectors) -> bytes:
        import numpy as np

        return np.asarray(vectors, dtype="<f4").tobytes()

    def array(self):
        """items x names, as float64."""
        import numpy as np

        return np.frombuffer(bytes(self.data), dtype="<f4").reshape(-1, len(self.names)) \
            .astype(np.float64)


class SliceResult(models.Model):
    """Aggregate figures of a run over one bucket of one dimension (SPEC section 5)."""

    OVERALL = "overall"

    run = models.ForeignKey(ScoringRun, on_delete=models.CASCADE, related_name="slices")
    dimension = models.CharField(max_length=50)  # "overall" with bucket ""
    bucket = models.CharField(max_length=200, blank=True)
    n = models.PositiveIntegerField()
    # Every figure of the kind's by metric name ("n" included), as its summary gives them.
    values = models.JSONField(default=dict)
    # Seeded bootstrap 95% intervals over items, computed at aggregation: {metric: [lo, hi]}.
    intervals = models.JSONField(default=dict)

    class Meta:
        constraints = [
            # Also serves reading a run's slices for the board and the API.
            models.UniqueConstraint(fields=["run", "dimension", "bucket"],
                                    name="slice_run_dimension_bucket"),
        ]

    def __str__(self):
        return f"{self.dimension}/{self.bucket} of run {self.run_id}"

    def figures(self) -> dict:
        """Every figure by metric name."""
        return {"n": self.n, **self.values}

    def interval(self, metric: str) -> tuple[float, float] | None:
        bounds = self.intervals.get(metric)
        return tuple(bounds) if bounds else None
