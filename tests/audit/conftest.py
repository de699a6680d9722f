# The changelog is read on a board: the leaderboard tests' board fixture.
from tests.leaderboard.conftest import board  # noqa: F401
