from django.db import models


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
    """A board slice's rank ranges from the paired bootstrap (leaderboard.boards.ranking), for the
    board state they were computed at: {"rank" or a metric: {submission id: [best, worst]}},
    and the slice's ranked order at that state (leaderboard.boards.board_pages reads a page of it):
    [[submission id, rank, *ranking key], ...] best first. Recomputed in the background
    whenever the board's state changes, never per request."""

    benchmark = models.ForeignKey("scoring.Benchmark", on_delete=models.CASCADE,
                                  related_name="+")
    state = models.CharField(max_length=300)  # leaderboard.boards.state.board_stamp
    dimension = models.CharField(max_length=50)  # "overall" with bucket ""
    bucket = models.CharField(max_length=200, blank=True)
    ranges = models.JSONField(default=dict)
    # What the slice's bootstrap can tell apart: {"items": n, "metrics": {metric:
    # {"difference", "pairs"}}} (leaderboard.boards.ranking.separable_differences).
    separable = models.JSONField(default=dict)
    order = models.JSONField(default=list)
    replicates = models.PositiveIntegerField()
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "rank ranges"
        constraints = [
            # Also serves reading one slice's ranges for a board page.
            models.UniqueConstraint(fields=["benchmark", "dimension", "bucket"],
                                    name="rankranges_benchmark_slice"),
        ]

    def __str__(self):
        return f"rank ranges of {self.benchmark_id} {self.dimension}/{self.bucket}"


class BoardSnapshot(models.Model):
    """A board as it was at one board version, kept by the worker or staff, never by a visitor
    (leaderboard.boards.snapshots): its overall rows as the read API gives them and the
    storage name of that state's items dataset (Parquet; leaderboard.boards.dataset_files),
    never changed after. `/b/<slug>/v/<version>/` renders it without the rows of submissions
    withdrawn since."""

    benchmark = models.ForeignKey("scoring.Benchmark", on_delete=models.CASCADE,
                                  related_name="+")
    board_version = models.PositiveBigIntegerField()
    taken_at = models.DateTimeField(auto_now_add=True)
    state = models.CharField(max_length=300)  # leaderboard.boards.state.board_stamp
    rows = models.JSONField(default=list)  # leaderboard.boards.serializers.BoardRowOut, overall
    items_file = models.CharField(max_length=300)  # leaderboard.boards.dataset_files.file_name

    class Meta:
        constraints = [
            # Also serves finding a board version's snapshot.
            models.UniqueConstraint(fields=["benchmark", "board_version"],
                                    name="boardsnapshot_benchmark_version"),
        ]

    def __str__(self):
        return f"{self.benchmark} board version {self.board_version}"
