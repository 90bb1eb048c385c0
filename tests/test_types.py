"""mypy over the package, with pyproject's [tool.mypy]: the types the code declares hold.

One run of mypy costs about a minute of one core from a cold cache, so the test is marked
`early`: conftest.py puts it first in the collection, and the first worker starts it while the
others run the rest of the suite, instead of it being the last test still running."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.early
def test_mypy_reports_nothing():
    pytest.importorskip("mypy", reason="mypy is not installed (`pip install -e '.[test]'` installs it)")
    # No cache read or written: a stale one from another checkout could hide an error, and
    # writing one that nothing reads again costs a tenth of the run.
    run = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", os.devnull],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, f"mypy found type errors:\n{run.stdout}{run.stderr}"
