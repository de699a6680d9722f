# The pages a Redis outage must not break need a board and a benchmark to upload to, as the
# leaderboard and submissions tests make them.
from tests.leaderboard.conftest import board  # noqa: F401
from tests.submissions.conftest import small_bench  # noqa: F401
