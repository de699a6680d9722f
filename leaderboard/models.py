from django.conf import settings
from django.db import models
from django.db.models import Q

from scoring.models import Benchmark, Criterion
from submissions.models import Submission


class ReferenceResult(models.Model):
    """A published result (a paper's table), shown on a board marked "reported", never ranked
    with scored submissions."""

    benchmark_slug = models.SlugField(max_length=50)
    model = models.CharField(max_length=200)
    note = models.CharField(max_length=300, blank=True)
    scope = models.CharField(max_length=200)  # e.g. "2,000 samples"
    n_samples = models.PositiveIntegerField(null=True, blank=True)
    source = models.CharField(max_length=300)
    loaded_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            # Also serves listing a board's reported rows.
            models.UniqueConstraint(fields=["benchmark_slug", "model"],
                                    name="reference_benchmark_model"),
        ]

    def __str__(self):
        return f"{self.model} (reported, {self.scope})"


class ReferenceFigure(models.Model):
    result = models.ForeignKey(ReferenceResult, on_delete=models.CASCADE, related_name="figures")
    dimension = models.CharField(max_length=50)  # "overall" with bucket ""
    bucket = models.CharField(max_length=200, blank=True)
    values = models.JSONField(default=dict)  # the published figures, by metric name

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["result", "dimension", "bucket"],
                                    name="referencefigure_result_dimension_bucket"),
        ]

    def __str__(self):
        return f"{self.result.model} {self.dimension}/{self.bucket}"

    def figures(self) -> dict:
        return dict(self.values)


class RankRanges(models.Model):
    """A board slice's rank ranges from the paired bootstrap (leaderboard.ranking), for the
    board state they were computed at: {"rank" or a metric: {submission id: [best, worst]}},
    and the slice's ranked order at that state (leaderboard.board_pages reads a page of it):
    [[submission id, rank, *ranking key], ...] best first. Recomputed in the background
    whenever the board's state changes, never per request."""

    benchmark = models.ForeignKey("scoring.Benchmark", on_delete=models.CASCADE,
                                  related_name="+")
    state = models.CharField(max_length=300)  # leaderboard.state.board_stamp
    dimension = models.CharField(max_length=50)  # "overall" with bucket ""
    bucket = models.CharField(max_length=200, blank=True)
    ranges = models.JSONField(default=dict)
    order = models.JSONField(default=list)
    replicates = models.PositiveIntegerField()
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            # Also serves reading one slice's ranges for a board page.
            models.UniqueConstraint(fields=["benchmark", "dimension", "bucket"],
                                    name="rankranges_benchmark_slice"),
        ]

    def __str__(self):
        return f"rank ranges of {self.benchmark_id} {self.dimension}/{self.bucket}"


class BoardSnapshot(models.Model):
    """A board as it was at one board version, kept from the first time a visitor cites it
    (leaderboard.snapshots): its overall rows as the read API gives them and its items
    dataset (Parquet), never changed after. `/b/<slug>/v/<version>/` renders it."""

    benchmark = models.ForeignKey("scoring.Benchmark", on_delete=models.CASCADE,
                                  related_name="+")
    board_version = models.PositiveBigIntegerField()
    taken_at = models.DateTimeField(auto_now_add=True)
    state = models.CharField(max_length=300)  # leaderboard.state.board_stamp
    rows = models.JSONField(default=list)  # leaderboard.serializers.BoardRowOut, overall
    items = models.BinaryField()  # leaderboard.datasets as Parquet

    class Meta:
        constraints = [
            # Also serves finding a board version's snapshot.
            models.UniqueConstraint(fields=["benchmark", "board_version"],
                                    name="boardsnapshot_benchmark_version"),
        ]

    def __str__(self):
        return f"{self.benchmark} board version {self.board_version}"


# --- the listening panel (leaderboard.panel): a task (one rubric of one public representative
# output), a rater's assignment to it, their answer, and a rater staff removed ----------------


class PanelTask(models.Model):
    """One rubric asked about one submission's output, to PANEL_RATERS_PER_TASK raters. The
    strata the drawing balances (rubric category, item modality and complexity) are kept here
    so that counting tasks per stratum is one query."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="+")
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="+")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="+")
    category = models.CharField(max_length=100)
    modality = models.CharField(max_length=100)
    complexity = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # One task per rubric and output: two raters drawing the same pair at once share it.
            models.UniqueConstraint(fields=["submission", "criterion"],
                                    name="paneltask_submission_criterion"),
        ]
        indexes = [
            # Serves counting a benchmark's tasks per stratum when a new one is drawn.
            models.Index(fields=["benchmark", "category", "modality", "complexity"],
                         name="paneltask_stratum"),
        ]

    def __str__(self):
        return f"panel task {self.pk} (submission {self.submission_id}, rubric {self.criterion_id})"


class PanelAssignment(models.Model):
    """A task handed to a rater; `repeat` marks the second asking of a task the rater has
    answered already (their self-consistency). Answered when its answer exists."""

    task = models.ForeignKey(PanelTask, on_delete=models.CASCADE, related_name="assignments")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                              related_name="+")
    repeat = models.BooleanField(default=False)
    answered = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # A rater is asked a task once, and once more as a repeat.
            models.UniqueConstraint(fields=["task", "rater", "repeat"],
                                    name="panelassignment_task_rater_repeat"),
        ]
        indexes = [
            # Serves finding a rater's open assignment (the task given again until answered).
            models.Index(fields=["rater", "answered"], name="panelassignment_rater_open"),
        ]

    def __str__(self):
        return f"task {self.task_id} for rater {self.rater_id}{' (repeat)' if self.repeat else ''}"


class PanelAnswer(models.Model):
    """A rater's answer: the letter they chose among the choices as shown to them, the
    option's text, whether it is the right one, and how long they listened to each audio."""

    assignment = models.OneToOneField(PanelAssignment, on_delete=models.CASCADE,
                                      related_name="answer")
    task = models.ForeignKey(PanelTask, on_delete=models.CASCADE, related_name="answers")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                              related_name="+")
    repeat = models.BooleanField(default=False)
    choices = models.JSONField()  # the option texts in the order shown to this rater
    letter = models.CharField(max_length=1)
    chosen = models.TextField()
    right = models.BooleanField()
    listened = models.JSONField(default=dict)  # audio label -> seconds heard
    answered_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "rater", "repeat"],
                                    name="panelanswer_task_rater_repeat"),
        ]
        indexes = [
            # Serves the card: a benchmark's first answers, task by task.
            models.Index(fields=["task"], condition=Q(repeat=False),
                         name="panelanswer_task_first"),
        ]

    def __str__(self):
        return f"answer {self.letter} of rater {self.rater_id} to task {self.task_id}"


class PanelRemoval(models.Model):
    """A rater staff removed from the panel: their answers are deleted with this row's making
    (audited) and they are given no task again."""

    rater = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                 related_name="+")
    removed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True,
                                   on_delete=models.SET_NULL, related_name="+")
    reason = models.TextField()
    answers_removed = models.PositiveIntegerField(default=0)
    removed_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"rater {self.rater_id} removed from the panel"
