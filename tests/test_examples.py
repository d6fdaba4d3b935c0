"""The scripts under examples/ run end to end (a user's first contact with the library)."""
import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT


@pytest.mark.slow
@pytest.mark.parametrize("script,expect", [("custom_mechanism.py", "privacy loss"), ("individual_dpgd.py", "epsilon"),
                                           ("individual_dpsgd.py", "individual epsilon")])
def test_example_runs(script, expect, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")  # MECHKIT_CACHE_DIR: set by conftest.py
    out = subprocess.run([sys.executable, str(ROOT / "examples" / script)], capture_output=True, text=True,
                         timeout=600, cwd=str(tmp_path), env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert expect in out.stdout.lower()
