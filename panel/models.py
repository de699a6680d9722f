"""The listening panel's rows: a task (one rubric of one public representative's output), a
rater's assignment to it, their answer, and a rater staff removed. The tables keep the names
they had when the panel was part of `leaderboard` (migrations: panel 0001, leaderboard 0009)."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from scoring.models import Benchmark, Criterion
from submissions.models import Submission


class PanelTask(models.Model):
    """One rubric asked about one submission's output, to PANEL_RATERS_PER_TASK raters. The
    strata the drawing balances (the rubric's category, and the item's stratum as its kind
    names it: Kind.panel_stratum) are kept here so that counting tasks per stratum is one
    query."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="+")
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="+")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="+")
    category = models.CharField(max_length=100)
    stratum = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "leaderboard_paneltask"
        constraints = [
            # One task per rubric and output: two raters drawing the same pair at once share it.
            models.UniqueConstraint(fields=["submission", "criterion"],
                                    name="paneltask_submission_criterion"),
        ]
        indexes = [
            # Serves counting a benchmark's tasks per stratum when a new one is drawn.
            models.Index(fields=["benchmark", "category", "stratum"], name="paneltask_stratum"),
        ]

    def __str__(self):
        return f"panel task {self.pk} (submission {self.submission_id}, rubric {self.criterion_id})"


class PanelAssignment(models.Model):
    """A task handed to a rater; `repeat` marks the second asking of a task the rater has
    answered already (their self-consistency). Answered when its answer exists. `served`
    records each audio of the task sent to the rater (label -> when it was first sent and how
    many bytes): the server's evidence of listening (panel.services)."""

    task = models.ForeignKey(PanelTask, on_delete=models.CASCADE, related_name="assignments")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                              related_name="+")
    repeat = models.BooleanField(default=False)
    answered = models.BooleanField(default=False)
    served = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "leaderboard_panelassignment"
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
        db_table = "leaderboard_panelanswer"
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

    class Meta:
        db_table = "leaderboard_panelremoval"

    def __str__(self):
        return f"rater {self.rater_id} removed from the panel"
