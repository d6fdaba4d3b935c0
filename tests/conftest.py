import os
import subprocess
import sys
import tempfile

import pytest
from hypothesis import settings

# the derivation/kernel cache and Hypothesis's example database live outside the checkout: tests write nothing into
# the source tree (an explicit MECHKIT_CACHE_DIR / HYPOTHESIS_STORAGE_DIRECTORY is honoured)
os.environ.setdefault("MECHKIT_CACHE_DIR", os.path.join(tempfile.gettempdir(), "mechkit-test-cache"))
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "mechkit-test-hypothesis"))

# Hypothesis profiles, chosen by HYPOTHESIS_PROFILE (default "ci", also what CI=true gets; pytest's
# --hypothesis-profile overrides).  "ci": 100 examples per property, a fixed seed per test (derandomize: every run
# tests the same examples, so a failure reproduces and the run time is stable; no example database), the failing
# example's blob printed.  "nightly": 1000 examples from a fresh random seed, failures kept in the example database.
# "dev": a quick look (20 examples, random).  Tests set max_examples themselves only where they scale the profile's
# count (cheap properties: a multiple of it) or are listed, with the reason, in tests/test_hypothesis_setup.py
# (PINNED); a property that may skip an input counts what it checked (tests.helpers.Reached), so an empty run fails
# under every profile.
# (each from Hypothesis's own defaults: with CI set, Hypothesis has already loaded its built-in "ci" profile)
_base = settings.get_profile("default")
settings.register_profile("ci", _base, max_examples=100, deadline=None, derandomize=True, print_blob=True)
settings.register_profile("nightly", _base, max_examples=1000, deadline=None, print_blob=True)
settings.register_profile("dev", _base, max_examples=20, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "ci")


@pytest.fixture(scope="session")
def mk():
    import mechkit

    return mechkit


#: what an xdist run compiles once before its workers start (on a cold Numba cache each worker would otherwise
#: compile the same engine and accountants at the same time, with a second process each: four compilers on the
#: machine's cores); the cold paths themselves are tested in subprocesses with caches of their own
#: (test_cache_fallback, test_cache_and_packaging, test_startup)
PREWARM = ("import mechkit.engine.numerics as N\n"
           "for n in N.__all__: getattr(N, n)\n"
           "from mechkit.accountants.registry import ACCOUNTANTS\n"
           "for m in ('fft', 'spa', 'edgeworth', 'auto'): ACCOUNTANTS[m]\n")


def pytest_configure(config):
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        subprocess.run([sys.executable, "-c", PREWARM], check=False, stdin=subprocess.DEVNULL)
