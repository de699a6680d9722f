import pytest
from rest_framework.throttling import SimpleRateThrottle

# The pages a Redis outage must not break need a board and a benchmark to upload to, as the
# leaderboard and submissions tests make them.
from tests.leaderboard.conftest import board  # noqa: F401
from tests.submissions.conftest import small_bench  # noqa: F401


@pytest.fixture
def api_rates(monkeypatch):
    """DRF reads its rates once, at import: a test sets them on the throttle class."""

    def set_rates(**rates):
        defaults = {"anon": None, "user": None, "uploads": None}
        monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {**defaults, **rates})

    return set_rates
