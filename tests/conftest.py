import os
import tempfile

import pytest

# the derivation/kernel cache and Hypothesis's example database live outside the checkout: tests write nothing into
# the source tree (an explicit MECHKIT_CACHE_DIR / HYPOTHESIS_STORAGE_DIRECTORY is honoured)
os.environ.setdefault("MECHKIT_CACHE_DIR", os.path.join(tempfile.gettempdir(), "mechkit-test-cache"))
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "mechkit-test-hypothesis"))


@pytest.fixture(scope="session")
def mk():
    import mechkit

    return mechkit
