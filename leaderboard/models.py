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
