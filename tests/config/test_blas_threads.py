"""A process of the site starts numpy's and scipy's BLAS on one thread each (config/__init__.py),
unless its environment asks for more."""

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.integration

COUNT = "import os, numpy, scipy.linalg; print(len(os.listdir('/proc/self/task')))"


def threads(*command: str, **env: str) -> int:
    """The threads of a process of the site (`command` running COUNT) once numpy and scipy's
    BLAS (scipy.linalg) are imported."""
    base = {k: v for k, v in os.environ.items()
            if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    done = subprocess.run([sys.executable, *command, COUNT],
                          cwd=ROOT, env={**base, **env}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


def test_numpy_and_scipy_start_no_thread_of_their_own_unless_asked():
    assert threads("manage.py", "shell", "--no-imports", "-c") == 1
    # The operator's word is kept (the package alone: what the site's processes import first).
    assert threads("-c", "import config;" + COUNT, OPENBLAS_NUM_THREADS="2") == 3
