"""What a board row says of its submission that only an app above the leaderboard knows: that
it was received after its challenge phase's deadline (challenges.models.Entry.late, the fact's
owner). The rule is handed down at start-up (challenges.apps), as scoring.visibility's are:
the leaderboard imports nothing above it.

The rule is a query expression over Submission, read in the very query that reads a row's
submission (leaderboard.boards.state), so a row and its mark are one read of one board state:
an entry is made with its submission in one transaction and its `late` never changes, so the
first state that lists the row already holds the mark."""

from __future__ import annotations

from collections.abc import Callable

from django.db.models import BooleanField, Expression, Value

_late_rules: list[Callable[[], Expression]] = []


def give_late_rule(rule: Callable[[], Expression]) -> None:
    """The challenges app hands over its rule (once, at start-up): rule() -> a boolean
    expression over a Submission row, true when it was received after its phase's deadline."""
    _late_rules[:] = [rule]


def after_deadline() -> Expression:
    """Whether a submission was received after its challenge phase's deadline, as an
    expression to annotate Submission queries with (false everywhere without a rule)."""
    if not _late_rules:
        return Value(False, output_field=BooleanField())
    return _late_rules[0]()
