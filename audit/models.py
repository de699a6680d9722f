from django.conf import settings
from django.db import models


class AuditEvent(models.Model):
    """An append-only record of a staff action: who, when, on what, before and after, why.

    Events marked public make a benchmark's changelog.
    """

    class Action(models.TextChoices):
        RESCORE = "rescore"
        VISIBILITY = "visibility"
        DELETION = "deletion"
        FLAG = "flag"
        HIDE = "hide"
        JUDGE_CONFIG = "judge_config"
        QUOTA = "quota"
        ENDPOINT = "endpoint"
        BASELINE = "baseline"
        PANEL_RATER = "panel_rater"  # a rater removed from the listening panel
        CHALLENGE = "challenge"  # an organizer's or staff's change to a challenge
        REVEAL = "reveal"  # a challenge phase's hidden rubrics and results made public

    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                              on_delete=models.SET_NULL, related_name="+")
    actor_name = models.CharField(max_length=150)  # kept when the account is gone
    action = models.CharField(max_length=20, choices=Action.choices)
    benchmark_slug = models.SlugField(max_length=50, blank=True)
    object_type = models.CharField(max_length=50)
    object_id = models.CharField(max_length=50, blank=True)
    object_repr = models.CharField(max_length=300)
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)
    reason = models.TextField(blank=True)
    public = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # The table keeps the name it had when the model lived in `scoring`
        # (scoring/0007_audit_append_only's triggers are on it).
        db_table = "scoring_auditevent"
        indexes = [
            # Serves a benchmark's public changelog, newest first.
            models.Index(fields=["benchmark_slug", "public", "created_at"],
                         name="audit_changelog"),
        ]
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"{self.actor_name} {self.action} {self.object_repr}"
