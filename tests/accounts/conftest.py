# The upload checks need a benchmark to upload to, as the submissions tests make it.
from tests.submissions.conftest import small_bench  # noqa: F401
