from django.db import models
from django.db.models import Q


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


class Criterion(models.Model):
    """One question asked of the judge about an item (an MMAE rubric)."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="criteria")
    index = models.PositiveIntegerField()
    category = models.CharField(max_length=100)
    question = models.TextField()
    right_choice = models.TextField()
    wrong_choices = models.JSONField(default=list)

    class Meta:
        constraints = [
            # Also serves loading an item's criteria in order.
            models.UniqueConstraint(fields=["item", "index"], name="criterion_item_index"),
        ]
        ordering = ["item", "index"]
        verbose_name_plural = "criteria"

    def __str__(self):
        return f"{self.item.key}#{self.index}"
