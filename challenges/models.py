"""A challenge run on the platform: its organizers, phases (each a set of boards, one per track),
tracks, teams and their entries, and finalists' verification.

A phase's board for a track is an ordinary benchmark (scoring.Benchmark): a final phase's is
imported with hidden rubrics, and every page, file and API answer about it follows
scoring.visibility.disclosure, whose rule for hidden-rubric benchmarks is
challenges.disclosure.level."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class Challenge(models.Model):
    slug = models.SlugField(max_length=50, unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    # The organizers' time zone (IANA name): instants are stored in UTC and shown in the
    # visitor's time and in this one.
    time_zone = models.CharField(max_length=64, default="UTC")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return self.title or self.slug


class Organizer(models.Model):
    """A user who runs one challenge (granted by staff): manages its phases, tracks, teams and
    verification, and sees its hidden results."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="organizers")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="organizing")
    granted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    granted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["challenge", "user"],
                                               name="organizer_challenge_user")]

    def __str__(self):
        return f"{self.user} organizes {self.challenge}"


class Track(models.Model):
    """A named subset of a phase benchmark's items (`where`: {dimension: [bucket, ...]}, every
    item when empty), ranked on its own board, with its rules and the attestations a team
    ticks to enter it."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="tracks")
    slug = models.SlugField(max_length=50)
    name = models.CharField(max_length=100)
    rules = models.TextField(blank=True)
    attestations = models.JSONField(default=list, blank=True)
    where = models.JSONField(default=dict, blank=True)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]
        constraints = [models.UniqueConstraint(fields=["challenge", "slug"],
                                               name="track_challenge_slug")]

    def __str__(self):
        return self.name


class Phase(models.Model):
    class Kind(models.TextChoices):
        DEVELOPMENT = "development"
        FINAL = "final"

    class Shown(models.TextChoices):
        """What anyone but its organizers and staff sees of a hidden-rubric phase's results
        before the reveal."""
        NOTHING = "nothing", "nothing"
        OVERALL = "overall", "each team's overall figures"
        SLICES = "slices", "each team's overall figures and slices"

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="phases")
    slug = models.SlugField(max_length=50)
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.DEVELOPMENT)
    opens_at = models.DateTimeField()
    closes_at = models.DateTimeField()
    per_day = models.PositiveIntegerField(default=5, help_text="uploads per team in 24 hours")
    total = models.PositiveIntegerField(default=100, help_text="uploads per team in the phase")
    # Uploads after the closing instant are scored and listed on the open board, never on the
    # official one; when False they are refused.
    late_uploads = models.BooleanField(default=True)
    shown = models.CharField(max_length=20, choices=Shown.choices, default=Shown.NOTHING)
    # The item dimensions (the benchmark kind's dimension keys, e.g. "complexity") given out
    # in the participants' task package beside ids, inputs and instructions; none by default.
    released_dimensions = models.JSONField(default=list, blank=True)
    frozen_at = models.DateTimeField(null=True, blank=True)
    revealed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["opens_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["challenge", "slug"], name="phase_challenge_slug"),
            models.CheckConstraint(condition=Q(closes_at__gt=models.F("opens_at")),
                                   name="phase_closes_after_it_opens"),
        ]

    def __str__(self):
        return f"{self.challenge}: {self.name}"


class ChallengeBenchmark(models.Model):
    """A benchmark version given to a challenge: its organizers may attach it as a board, and
    no other challenge's may. One version, not its slug: a later version of the slug (another
    import) is nobody's until given. Given by the organizer pages' import, by staff attaching
    a board, or by `manage.py challenge_benchmark`."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE,
                                  related_name="benchmarks")
    benchmark = models.OneToOneField("scoring.Benchmark", on_delete=models.CASCADE,
                                     related_name="challenge_grant")
    granted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    granted_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"{self.benchmark} ({self.challenge})"


class PhaseBoard(models.Model):
    """The board of one track in one phase: a benchmark of that track's items."""

    phase = models.ForeignKey(Phase, on_delete=models.CASCADE, related_name="boards")
    track = models.ForeignKey(Track, on_delete=models.CASCADE, related_name="boards")
    benchmark = models.OneToOneField("scoring.Benchmark", on_delete=models.PROTECT,
                                     related_name="phase_board")
    # The board version frozen as the official one at the closing instant (its snapshot).
    frozen_version = models.PositiveBigIntegerField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["phase", "track"],
                                               name="phaseboard_phase_track")]

    def __str__(self):
        return f"{self.phase} / {self.track}"


class Team(models.Model):
    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="teams")
    name = models.CharField(max_length=100)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["challenge", "name"],
                                               name="team_challenge_name")]

    def __str__(self):
        return self.name


class Membership(models.Model):
    """A user's place in a team: invited (accepted_at empty) or a member. `challenge` is the
    team's, kept here so that the database holds a user to one team per challenge. An
    invitation to an address no account has confirmed names no user but `email`: whoever
    confirms that address on an account may accept it."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True,
                             blank=True, related_name="team_memberships")
    email = models.EmailField(blank=True)  # an invitation to an address, lower-cased
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    invited_at = models.DateTimeField(auto_now_add=True)
    accepted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], name="membership_team_user"),
            models.UniqueConstraint(fields=["challenge", "user"],
                                    condition=Q(accepted_at__isnull=False),
                                    name="membership_one_team_per_challenge"),
        ]

    def __str__(self):
        return f"{self.user or self.email} in {self.team}" + \
            ("" if self.accepted_at else " (invited)")


class TrackEntry(models.Model):
    """A team entered in a track, with the attestations it ticked."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="track_entries")
    track = models.ForeignKey(Track, on_delete=models.CASCADE, related_name="entries")
    attested = models.JSONField(default=list)
    entered_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True,
                                   on_delete=models.SET_NULL, related_name="+")
    entered_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "track entries"
        constraints = [models.UniqueConstraint(fields=["team", "track"],
                                               name="trackentry_team_track")]

    def __str__(self):
        return f"{self.team} in {self.track}"


class Entry(models.Model):
    """A team's submission to a phase's board. `late`: its upload ended after the phase
    closed (it is on the open board, never on the official one). `chosen`: the team picked it
    as the one that counts (else its latest on-time submission counts)."""

    submission = models.OneToOneField("submissions.Submission", on_delete=models.CASCADE,
                                      related_name="challenge_entry")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="entries")
    board = models.ForeignKey(PhaseBoard, on_delete=models.CASCADE, related_name="entries")
    received_at = models.DateTimeField()
    late = models.BooleanField(default=False)
    chosen = models.BooleanField(default=False)

    class Meta:
        verbose_name_plural = "entries"
        constraints = [models.UniqueConstraint(fields=["team", "board"],
                                               condition=Q(chosen=True),
                                               name="entry_one_chosen_per_team_board")]

    def __str__(self):
        return f"{self.team}: submission {self.submission_id}" + (" (late)" if self.late else "")


class Verification(models.Model):
    """A finalist's reproducibility check in a final phase: the package it uploaded and the
    organizers' decision, whose reason is public."""

    class State(models.TextChoices):
        AWAITED = "awaited"  # invited, nothing uploaded yet
        SUBMITTED = "submitted"
        VERIFIED = "verified"
        DISQUALIFIED = "disqualified"

    phase = models.ForeignKey(Phase, on_delete=models.CASCADE, related_name="verifications")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="verifications")
    state = models.CharField(max_length=20, choices=State.choices, default=State.AWAITED)
    package = models.CharField(max_length=500, blank=True)  # under MEDIA_ROOT
    package_files = models.JSONField(default=list, blank=True)  # [[name, bytes], ...]
    uploaded_at = models.DateTimeField(null=True, blank=True)
    reason = models.TextField(blank=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["phase", "team"],
                                               name="verification_phase_team")]

    def __str__(self):
        return f"{self.team} in {self.phase}: {self.state}"


class RevealNotice(models.Model):
    """A participant e-mailed the reveal of a phase: the mail task sends to those without one,
    so that its retries (our failures) never mail anyone twice."""

    phase = models.ForeignKey(Phase, on_delete=models.CASCADE, related_name="+")
    membership = models.ForeignKey(Membership, on_delete=models.CASCADE, related_name="+")
    sent_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["phase", "membership"],
                                               name="revealnotice_phase_membership")]

    def __str__(self):
        return f"{self.membership} told of {self.phase}"
