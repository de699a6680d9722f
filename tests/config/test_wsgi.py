"""A web process freezes what its start-up made (config.wsgi), plotly's validators included,
so that the garbage collector's full collections walk only what requests made."""

import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.integration  # a fresh `python -c` imports the WSGI application

PRINT_FROZEN = (
    "import gc; from plotly.validator_cache import ValidatorCache as V; "
    "print(gc.get_freeze_count(), V._json_cache is None); import config.wsgi; "
    "print(gc.get_freeze_count(), V._json_cache is None, "
    "any(o is V._json_cache for o in gc.get_objects()))"
)


def test_start_up_is_frozen_with_plotlys_validators_loaded(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings",
           "VAR_DIR": str(tmp_path / "var")}
    result = subprocess.run([sys.executable, "-c", PRINT_FROZEN], cwd=ROOT, capture_output=True,
                            text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    before, after = result.stdout.splitlines()
    assert before == "0 True"
    frozen, unloaded, tracked = after.split()
    # The validators' table is loaded, and frozen: no longer among the objects a collection
    # walks.
    assert int(frozen) > 100_000 and unloaded == "False" and tracked == "False"
