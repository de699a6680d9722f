"""The judge simulator's options are checked before it listens: each bad one is refused,
naming it (the command line's exit status: tests/judge/test_simulator.py)."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError


@pytest.mark.parametrize("args, message", [
    (["--fail-rate", "1.5"], "fail_rate must be between 0 and 1"),
    (["--ports", "80a"], "give comma-separated port numbers"),
    (["--ports", "8001,8001"], "give distinct port numbers"),
    (["--slots", "0"], "slots must be at least 1"),
    (["--die-after", "-1"], "die_after cannot be negative"),
    (["--max-audio-seconds", "0.001"], "max_audio_seconds must be at least 0.01"),
])
def test_bad_options_are_refused(args, message):
    with pytest.raises(CommandError, match=message):
        call_command("judge_simulator", *args)
