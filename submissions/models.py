
from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from judge import families
from scoring.models import Benchmark, ScoringRun


class ModelEntry(models.Model):
    """A model (system) as its author describes it; its submissions are scored on boards."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                              related_name="model_entries")
    name = models.CharField(max_length=200)
    organisation = models.CharField(max_length=200, blank=True)
    link = models.URLField(blank=True, help_text="paper or code")
    parameters = models.CharField(max_length=50, blank=True, help_text="e.g. 7B")
    licence = models.CharField(max_length=100, blank=True)
    open_weights = models.BooleanField(default=False)
    # What the system is built on (judge.families): a judge may favour its own family.
    base_family = models.CharField(
        max_length=20, blank=True, choices=families.CHOICES, default=families.NOT_DECLARED,
        help_text="the base model family the system is built on")
    description = models.TextField(blank=True)
    # An anonymous entry's stand-in ("Anonymous submission N": submissions.anonymity): it
    # holds the entry until its reveal, with nothing of the real model but its base family,
    # and no page shows who owns it.
    pseudonym = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="modelentry_owner_name"),
        ]
        verbose_name = "model"

    def __str__(self):
        return self.name


class SubmissionQuerySet(models.QuerySet):
    """The one rule of who sees which submission: `published()` for everyone (public, not
    hidden by staff, scored), `visible_to(user)` adds an author's own and, for staff, all."""

    # What its author and staff let everyone see; published once its current run is finished.
    # An embargoed one (publish_at set) is public from the moment submissions.embargo
    # releases it, which clears publish_at: until then it is shown nowhere.
    SHOWN = Q(public=True, hidden=False, publish_at__isnull=True)
    PUBLISHED = SHOWN & Q(current_run__status=ScoringRun.Status.FINISHED)

    def published(self):
        return self.filter(self.PUBLISHED)

    def shown(self):
        """Public and not hidden, whatever their runs (a board checks those apart)."""
        return self.filter(self.SHOWN)

    def visible_to(self, user):
        if user.is_authenticated and user.is_staff:
            return self.all()
        if user.is_authenticated:
            return self.filter(self.PUBLISHED | Q(owner=user))
        return self.published()

    def in_flight(self):
        """Submissions still being handled: uploaded, validating, or with an active run."""
        return self.filter(
            Q(status__in=[Submission.Status.UPLOADED, Submission.Status.VALIDATING])
            | Q(status=Submission.Status.QUEUED, current_run__status__in=ScoringRun.ACTIVE)
        )

    def counting_for_quota(self):
        """Rejected submissions and those that failed on our side (in validation or in
        scoring) cost no quota."""
        return self.exclude(status__in=[Submission.Status.REJECTED, Submission.Status.FAILED]) \
            .exclude(current_run__status=ScoringRun.Status.FAILED)


class Submission(models.Model):
    """An author's predictions for one benchmark version, and where they stand.

    Until it is queued the submission's own status tells its state; from then on its current
    scoring run's status does (see `state`).
    """

    class Status(models.TextChoices):
        UPLOADED = "uploaded"
        VALIDATING = "validating"
        REJECTED = "rejected"  # the author's fault: the report names the file, line or sample
        FAILED = "failed"  # validation broke on our side; its files are kept for a retry
        QUEUED = "queued"  # handed to scoring: current_run carries the state

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                              related_name="submissions")
    model = models.ForeignKey(ModelEntry, on_delete=models.CASCADE, related_name="submissions")
    benchmark = models.ForeignKey(Benchmark, on_delete=models.PROTECT,
                                  related_name="submissions")
    public = models.BooleanField(default=False)
    # An embargo: scored now, public from this moment on (submissions.embargo releases it
    # and clears the field); while set, the submission is shown nowhere, whatever `public`.
    publish_at = models.DateTimeField(null=True, blank=True)
    # An anonymous entry (submissions.anonymity): until this moment it belongs to a pseudonym
    # model, "Anonymous submission <anonymous_number>", and reveal_as is the model it is shown
    # under from then on; review_token makes its private review link. The number and the
    # token stay after the reveal (the link then leads to the model).
    anonymous_until = models.DateTimeField(null=True, blank=True)
    anonymous_number = models.PositiveIntegerField(null=True, blank=True, unique=True)
    reveal_as = models.ForeignKey(ModelEntry, null=True, blank=True, on_delete=models.CASCADE,
                                  related_name="+")
    review_token = models.CharField(max_length=43, blank=True, db_index=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.UPLOADED)
    status_times = models.JSONField(default=dict)
    report = models.JSONField(default=dict)  # the validation report
    # Model details sent with this upload for an existing model; applied when it passes
    # validation, if public (services._apply_model_details).
    model_details = models.JSONField(default=dict, blank=True)
    options = models.JSONField(default=dict, blank=True)  # the benchmark kind's upload options
    coverage = models.FloatField(null=True, blank=True)  # share of items with an output
    files_dir = models.CharField(max_length=500, blank=True)  # under MEDIA_ROOT
    # The state (one of NOTIFIED_STATES) its author was last emailed about; "" before any.
    # services.submission_notify claims each email by a conditional UPDATE of this field.
    notified_state = models.CharField(max_length=20, blank=True)
    current_run = models.ForeignKey(ScoringRun, null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+")
    runs = models.ManyToManyField(ScoringRun, blank=True, related_name="submissions")
    # Moderation (submissions.moderation): a hidden submission leaves the board and every
    # public page; a flagged one stays, with its flag and this public reason shown beside it.
    hidden = models.BooleanField(default=False)
    flag_reason = models.TextField(blank=True)
    # Chosen by its author to represent its model on the benchmark's board (while it is
    # public, finished and not hidden; otherwise the model's latest such submission does).
    representative = models.BooleanField(default=False)
    # Touched while a worker validates it; a validation whose heartbeat went stale lost its
    # worker (services.validations_to_retry).
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # Why validation failed on our side (for staff; the author is told in plain words), and
    # how many times the sweeper has retried it, or its failed run, by itself.
    error = models.TextField(blank=True)
    retries = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = SubmissionQuerySet.as_manager()

    # The states an author is emailed about: the end of the submission's handling.
    NOTIFIED_STATES = ("finished", "failed", "rejected")

    class Meta:
        constraints = [
            # One chosen representative per model and benchmark version; also serves
            # clearing the previous choice when another is made.
            models.UniqueConstraint(fields=["model", "benchmark"],
                                    condition=Q(representative=True),
                                    name="submission_one_representative"),
        ]
        indexes = [
            # Serves an author's list and the daily quota count.
            models.Index(fields=["owner", "created_at"], name="submission_owner_created"),
        ]
        ordering = ["-created_at"]

    def __str__(self):
        return f"submission {self.pk} ({self.model} on {self.benchmark})"

    @property
    def state(self) -> str:
        if self.status == self.Status.QUEUED and self.current_run is not None:
            return self.current_run.status
        return self.status

    @property
    def state_times(self) -> dict[str, str]:
        """When it entered each state `state` passes through, in that order: the upload's own
        (uploaded, validating, rejected), then, once queued, its current run's. (PostgreSQL's
        jsonb keeps keys in an order of its own, so they are sorted by their ISO times.)"""
        times = self.status_times
        if self.status == self.Status.QUEUED and self.current_run is not None:
            run = self.current_run.status_times
            times = {**{k: v for k, v in times.items() if k not in run}, **run}
        return dict(sorted(times.items(), key=lambda entry: entry[1]))

    @property
    def flagged(self) -> bool:
        return bool(self.flag_reason)

    @property
    def partial(self) -> bool:
        return self.coverage is not None and self.coverage < 1.0

    @property
    def failed_on_our_side(self) -> bool:
        return self.state == self.Status.FAILED

    def failure_notice(self) -> str:
        """What its author is told, in plain words, when it failed on our side."""
        later = ("It will be retried automatically; staff have been told."
                 if self.retries < settings.SUBMISSION_RETRY_TIMES else
                 "Staff have been told and will retry it once the fault is fixed.")
        step = "Validating" if self.status == self.Status.FAILED else "Scoring"
        return (f"{step} this submission failed on our side, not yours: nothing is wrong with "
                "your upload, its files are kept, and it does not count against your quota. "
                f"{later}")

    def mark(self, status: str) -> None:
        """Enter a status, recording when (the caller saves)."""
        self.status = status
        self.status_times = {**self.status_times, status: timezone.now().isoformat()}


class AnonymousNumber(models.Model):
    """The numbers of anonymous entries ("Anonymous submission N": submissions.anonymity), one
    row each, never deleted: a number is never given twice, even once its entry is gone."""

    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self):
        return f"anonymous number {self.pk}"


class DeletedAttempt(models.Model):
    """A scored submission that staff deleted, kept so that its author's attempt count on
    the benchmark (submissions.attempts) never falls: the board discloses every scored
    attempt, public or private, and deleting one must not withdraw it."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                              related_name="+")
    benchmark = models.ForeignKey(Benchmark, on_delete=models.PROTECT, related_name="+")
    # The deleted submission's id: one record per submission, however often it is asked.
    submission_id = models.PositiveIntegerField(unique=True)
    submitted_at = models.DateTimeField()
    deleted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            # Serves counting an author's attempts per benchmark.
            models.Index(fields=["owner", "benchmark"], name="deletedattempt_owner_bench"),
        ]

    def __str__(self):
        return f"deleted submission {self.submission_id} of {self.owner_id}"


class QuotaOverride(models.Model):
    """A user's own upload limits, set by staff in place of SUBMISSIONS_PER_DAY and
    SUBMISSIONS_IN_FLIGHT (None keeps the site's limit)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="quota_override")
    per_day = models.PositiveIntegerField(null=True, blank=True)
    in_flight = models.PositiveIntegerField(null=True, blank=True)
    reason = models.TextField()
    set_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                               on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(per_day__isnull=False)
                                   | Q(in_flight__isnull=False),
                                   name="quotaoverride_overrides_something"),
        ]

    def __str__(self):
        return f"quota of {self.user}"

    def as_dict(self) -> dict:
        """The limits it sets, as audit records show them."""
        return {"per_day": self.per_day, "in_flight": self.in_flight}


class PoolRelease(models.Model):
    """A submission's results on one item of the listening panel's pool that left the pool:
    people have rated them (panel.pool), so every public page shows them from then on. Until
    this row exists, submissions.withheld withholds them."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="+")
    item = models.ForeignKey("scoring.Item", on_delete=models.CASCADE, related_name="+")
    released_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["submission", "item"],
                                    name="poolrelease_submission_item"),
        ]

    def __str__(self):
        return f"submission {self.submission_id} on item {self.item_id}, out of the pool"


def published_runs():
    """The finished runs of shown submissions (current or earlier runs: a public submission's
    page shows them all): what anyone may learn from (scoring.visibility)."""
    return ScoringRun.objects.filter(
        status=ScoringRun.Status.FINISHED,
        id__in=Submission.runs.through.objects.filter(
            submission__in=Submission.objects.shown()).values("scoringrun_id"))


class OutputSignal(models.Model):
    """The objective signals of one output of a submission (scoring.signals), measured once
    by a worker after validation: what anyone may check before trusting a judge's word."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE,
                                   related_name="signals")
    item = models.CharField(max_length=200)  # the item's key
    lufs = models.FloatField(null=True)  # integrated loudness; null: silent or under 0.4 s
    true_peak_dbtp = models.FloatField(null=True)  # null: digital silence
    clipped_share = models.FloatField()
    silent_share = models.FloatField()
    seconds = models.FloatField()
    duration_ratio = models.FloatField(null=True)  # against the item's first input
    sample_rate = models.PositiveIntegerField()
    channels = models.PositiveSmallIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["submission", "item"],
                                               name="outputsignal_submission_item")]

    def __str__(self):
        return f"signals of {self.item} in submission {self.submission_id}"
