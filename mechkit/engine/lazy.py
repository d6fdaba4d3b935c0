"""Compiled entry points that most queries never call: an explicit signature (a structural cache key, as every
engine function has), compiled -- or loaded from Numba's disk cache -- at the first call instead of at import.

A signature given to ``@njit`` compiles at import: a module's rarely used entry points (the FFT's running minimum
for a curve's later queries, its exponent pass for losses wider than 700 nats, the vectorised checked inverse, the
tails of a law's atoms, the tilted moments' scan grids) were compiled by every cold process that imported the
module, ~0.9 s of the README command's first run.
"""
from __future__ import annotations

import threading
from collections.abc import Callable

from numba import njit

from .collection import paused

_LOCK = threading.Lock()


class LazyEntry:
    """A Python-callable compiled function with one signature, compiled (or loaded from the cache) at its first call
    and closed to other signatures then.  Compiled code cannot call it (give such callees ``@njit`` itself).

    Parameters
    ----------
    dispatcher : the ``@njit(cache=True, ...)`` dispatcher, without a signature.
    signature : the Numba signature it is compiled for.
    """

    def __init__(self, dispatcher: object, signature: object) -> None:
        self.dispatcher, self.signature = dispatcher, signature
        self.__wrapped__ = dispatcher.py_func
        self.__doc__, self.__name__ = dispatcher.py_func.__doc__, dispatcher.py_func.__name__

    def __call__(self, *args: object) -> object:
        d = self.dispatcher
        if not d.signatures:
            with _LOCK, paused():
                if not d.signatures:
                    d.compile(self.signature)
                    d.disable_compile()
        return d(*args)

    @property
    def compiled(self) -> bool:
        """Whether it has been compiled (or loaded) in this process."""
        return bool(self.dispatcher.signatures)


def entry(signature: object, **options: object) -> Callable[[Callable], LazyEntry]:
    """Decorator: ``@njit(signature, cache=True, **options)`` compiled at the first call (``LazyEntry``).

    Parameters
    ----------
    signature : the Numba signature.
    **options : ``njit``'s other options (``error_model``, ``nogil``...).

    Returns
    -------
    The decorator.
    """
    def wrap(py):
        return LazyEntry(njit(cache=True, **options)(py), signature)
    return wrap
