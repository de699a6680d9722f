"""The marks this app gives the leaderboard's rows (leaderboard.boards.marks): a submission
whose team entry was received after its phase's deadline (Entry.late) is listed on the open
board "after the deadline"."""

from __future__ import annotations

from django.db.models import Exists, OuterRef

from challenges.models import Entry


def late_submission():
    """True for a Submission row whose entry is late (one indexed lookup per row:
    Entry.submission is unique)."""
    return Exists(Entry.objects.filter(submission_id=OuterRef("pk"), late=True))
