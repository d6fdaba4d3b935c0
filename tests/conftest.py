import os

import pytest

os.environ.setdefault("MECHKIT_CACHE_DIR", os.path.join(os.path.dirname(__file__), "..", ".mechkit-cache"))


@pytest.fixture(scope="session")
def mk():
    import mechkit

    return mechkit
