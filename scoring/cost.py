"""What a scoring run cost the judge fleet: its cost card.

One owner of the figures: `tally` counts a judge query's answer (judge.fleet.JudgeAnswer: its
requests, bytes, tokens, time and the seconds of audio it carries). The `score` command keeps
the tally in run.json; the pipeline adds each worker's to the run's RunCost row
(scoring.runs.cost_add, atomic increments), which scoring.runs.cost_card reads for the
submission page and the API, with the run's wall time. No Django here (the `score` command
uses it).
"""

from __future__ import annotations

from collections import Counter

# The cost card's figures, in the order pages show them, each with what it says.
FIGURES = {
    "queries": "judge queries asked (answered or refused)",
    "reused": "answers taken from the judgment cache instead of asking",
    "requests": "HTTP requests sent (a query retried counts each time)",
    "replies": "requests the judge answered",
    "prompt_tokens": "prompt tokens (the replies' usage)",
    "completion_tokens": "completion tokens (the replies' usage)",
    "audio_seconds": "seconds of audio the judge took in",
    "audio_sent": "audio items sent with their data",
    "audio_bytes": "bytes of audio sent (base64)",
    "audio_cached": "audio items named by their uuid alone (the judge held them)",
    "cache_misses": "of those, ones the judge no longer held (sent again)",
    "request_bytes": "bytes of request bodies sent",
    "busy_seconds": "fleet-busy seconds (time requests held a judge slot, summed)",
}


def tally(answer) -> Counter:
    """One query's cost (its audio, `answer.audio_seconds`, taken in once per reply)."""
    return Counter({
        # A query lost on our side is asked again: counted once, when it ends.
        "queries": 0 if answer.lost else 1, "requests": answer.attempts + answer.cache_misses,
        "replies": answer.replies, "prompt_tokens": answer.prompt_tokens,
        "completion_tokens": answer.completion_tokens,
        "audio_seconds": answer.audio_seconds * answer.replies, "audio_sent": answer.audio_sent,
        "audio_bytes": answer.audio_bytes, "audio_cached": answer.audio_cached,
        "cache_misses": answer.cache_misses, "request_bytes": answer.bytes_sent,
        "busy_seconds": answer.busy_ms / 1000})




def card_rows(card: dict) -> list[tuple[str, str, str]]:
    """(figure, value as read, what it says) of a cost card (scoring.runs.cost_card), for a
    page: counts with thousands separators, bytes in MB, times in seconds or hours."""
    def shown(name, value):
        if value is None:
            return "\u2013"
        if name.endswith("_bytes"):
            return f"{value / 1e6:,.1f} MB"
        if name.endswith("_seconds"):
            return f"{value:,.1f} s" if value < 3600 else f"{value / 3600:,.2f} h"
        return f"{value:,}"

    figures = {**FIGURES, "wall_seconds": "wall time of the scoring, from its start to its "
                                          "end (or to now)"}
    return [(name.replace("_", " "), shown(name, card.get(name)), what)
            for name, what in figures.items()]
