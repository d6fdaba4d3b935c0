"""The accountants by method name: ``ACCOUNTANTS[method]`` is (epsilon function, delta function), each taking the
composition's ((mechanism, count), ...) items.  The RDP and GDP answers are wrapped here; the other accountants'
modules are imported on first use, so a query compiles only the accountant it asks for."""
from __future__ import annotations

import functools
import importlib
import inspect
import math
from collections.abc import Callable, Mapping

import numpy as np

from .. import relations
from ..errors import ParameterError
from ..estimate import Estimate, EstimateArray
from ..progress import announce
from . import METHODS
from . import gdp as _gdp
from . import rdp as _rdp


def _rdp_epsilon(items, delta, **options):
    if options:
        raise ParameterError(f"method 'rdp' takes no options, got {sorted(options)}")
    return _rdp.epsilon(items, delta)


def _rdp_delta(items, epsilon, **options):
    raise ParameterError("method 'rdp' answers epsilon(delta) only; use method='fft' for delta(epsilon)")


def _gdp_mu(items):
    """The CLT / mu-GDP approximation: mu^2 = sum k_i Var(L_i), max over directions (notes.md 4.1, 5.6)."""
    mu2 = 0.0
    for d in relations.DIRECTIONS:
        v = sum(c * m.plrv(d).cgf(0.0, 2) for m, c in items)
        if not math.isfinite(v):
            raise ParameterError("method 'gdp' needs a finite variance of every privacy loss")
        mu2 = max(mu2, v)
    return math.sqrt(mu2)


def _gdp_details(mu):
    return {"mu": mu, "note": "central-limit (mu-GDP) approximation: no bounds; it tends to under-report epsilon"}


def _gdp_epsilon(items, delta, **options):
    if options:
        raise ParameterError(f"method 'gdp' takes no options, got {sorted(options)}")
    mu = _gdp_mu(items)
    return Estimate(_gdp.epsilon(mu, delta), 0.0, math.inf, "gdp", False, _gdp_details(mu))


def _gdp_delta(items, epsilon, **options):
    if options:
        raise ParameterError(f"method 'gdp' takes no options, got {sorted(options)}")
    mu = _gdp_mu(items)
    val = np.array([_gdp.delta(mu, e) for e in epsilon])
    return EstimateArray(val, np.zeros_like(val), np.ones_like(val), "gdp", False, _gdp_details(mu))


class _Accountants(Mapping):
    """method -> (epsilon function, delta function).  An accountant's module is imported on its first use, so
    a query compiles (or loads from Numba's cache) only the accountant it asks for."""

    _MODULES = {"fft": "fft", "spa": "spa", "edgeworth": "edgeworth", "auto": "auto"}
    _LOCAL = {"rdp": (_rdp_epsilon, _rdp_delta), "gdp": (_gdp_epsilon, _gdp_delta)}

    def __init__(self):
        self._loaded = dict(self._LOCAL)

    def __getitem__(self, method):
        got = self._loaded.get(method)
        if got is None:
            from ..engine.collection import paused  # the engine (and Numba) only when an accountant is compiled
            with announce(f"compiling the {method} accountant"), paused():
                mod = importlib.import_module(f"{__package__}.{self._MODULES[method]}")
            got = self._loaded[method] = (mod.epsilon, mod.delta)
        return got

    def __contains__(self, method):
        return method in METHODS

    def __iter__(self):
        return iter(METHODS)

    def __len__(self):
        return len(METHODS)


ACCOUNTANTS = _Accountants()


@functools.lru_cache(maxsize=None)
def _options(fn):
    """The keyword options an accountant function takes: its named parameters after (items, delta/epsilon)."""
    params = list(inspect.signature(fn).parameters.values())[2:]
    return [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def check_options(method: str, query: str, fn: Callable, options: dict) -> None:
    """Refuse options the accountant does not take, before any work.

    Parameters
    ----------
    method : the method's name, for the message.
    query : "epsilon" or "delta", for the message.
    fn : the accountant's function.
    options : the options given.

    Raises
    ------
    ParameterError : an option ``fn`` does not take (listing those it takes).
    """
    known = _options(fn)
    unknown = sorted(set(options) - set(known))
    if unknown:
        takes = f"its options are {known}" if known else "it takes no options"
        raise ParameterError(f"unknown option(s) {unknown} for {query} with method {method!r}; {takes}")
