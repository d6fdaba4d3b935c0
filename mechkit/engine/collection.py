"""Python's cyclic garbage collector paused while Numba compiles (or loads from its cache) mechkit's functions.

Numba's compiler allocates many short-lived objects; each of the collector's passes meanwhile walks every object
alive (Numba's and SciPy's heaps included): ~6% of a cold first answer.  ``paused()`` turns the collector off for
the ``with`` body and back on when the outermost body ends (re-entrant, across threads), if it was on when the
first began; the garbage made meanwhile goes to its next passes.  The switch is the process's: the other threads,
a user's too, go without collections for as long (seconds on a cold cache, milliseconds on a warm one).  Only
mechkit's own compilations are wrapped (an engine subject's or an accountant's import, a family's kernels, an entry
compiled at its first call, the FFT's low-frequency sums): a user's Numba code compiles as it did.
"""
from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_LOCK = threading.Lock()
_STATE = {"depth": 0, "restore": False}


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Run the ``with`` body with the cyclic garbage collector off (``gc.disable``); the outermost body of any thread
    turns it on again when it ends, if it was on when the first body began."""
    with _LOCK:
        if _STATE["depth"] == 0:
            _STATE["restore"] = gc.isenabled()
            gc.disable()
        _STATE["depth"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _STATE["depth"] -= 1
            if _STATE["depth"] == 0 and _STATE["restore"]:
                gc.enable()
