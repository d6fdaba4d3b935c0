"""Compositions: an immutable multiset of (mechanism, count), answered by a registered accountant.

``mk.compose(m1, (m2, 100), other_composition)`` merges equal mechanisms (same family, same parameter
values) so that each distinct mechanism is processed once.  Queries dispatch by name to an accountant
module with ``epsilon(items, delta, **options)`` and ``delta(items, epsilon, **options)``; accountants see
only the PLRV interface of the mechanisms, never their types.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .accountants import edgeworth, fft, spa
from .accountants import gdp as _gdp
from .accountants import rdp as _rdp
from .errors import ParameterError, check_finite_real
from .estimate import Estimate, EstimateArray
from .laws.family import Mechanism


def _rdp_epsilon(items, delta, **options):
    if options:
        raise ParameterError(f"method 'rdp' takes no options, got {sorted(options)}")
    eps, alpha = _rdp.epsilon(items, delta)
    return Estimate(eps, 0.0, eps, "rdp", True, {"alpha": alpha, "note": "Renyi-DP upper bound"})


def _rdp_delta(items, epsilon, **options):
    raise ParameterError("method 'rdp' answers epsilon(delta) only; use method='fft' for delta(epsilon)")


def _gdp_mu(items):
    """The CLT / mu-GDP approximation: mu^2 = sum k_i Var(L_i), max over directions (notes.md 4.1, 5.6)."""
    mu2 = 0.0
    for d in ("remove", "add"):
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


ACCOUNTANTS = {
    "fft": (fft.epsilon, fft.delta),
    "spa": (spa.epsilon, spa.delta),
    "edgeworth": (edgeworth.epsilon, edgeworth.delta),
    "rdp": (_rdp_epsilon, _rdp_delta),
    "gdp": (_gdp_epsilon, _gdp_delta),
}


def _key(m):
    return (m.family.key, tuple(m.theta.tolist()))


class Composition:
    """An immutable multiset of mechanisms with counts."""

    __slots__ = ("_items",)

    def __init__(self, items):
        merged = {}
        order = []
        for m, c in items:
            k = _key(m)
            if k not in merged:
                merged[k] = [m, 0]
                order.append(k)
            merged[k][1] += c
        object.__setattr__(self, "_items", tuple((merged[k][0], merged[k][1]) for k in order))

    def __setattr__(self, name, value):
        raise AttributeError("a Composition is immutable; compose() a new one")

    @property
    def items(self):
        """((mechanism, count), ...), one entry per distinct mechanism."""
        return self._items

    @property
    def total_count(self):
        return sum(c for _, c in self._items)

    def __len__(self):
        return len(self._items)

    def __repr__(self):
        inner = ", ".join(f"{m.name} x {c}" for m, c in self._items)
        return f"Composition({inner})"

    @staticmethod
    def _method(method):
        if method not in ACCOUNTANTS:
            raise ParameterError(f"unknown method {method!r}; available: {sorted(ACCOUNTANTS)}")
        return ACCOUNTANTS[method]

    def epsilon(self, delta, method="fft", **options):
        """Smallest epsilon with delta(epsilon) <= delta (max over add and remove) -> Estimate."""
        fn = self._method(method)[0]
        if np.ndim(delta) == 0:
            d = check_finite_real("delta", delta, low=0.0, high=1.0)
            return fn(self._items, d, **options)
        ds = [check_finite_real("delta", d, low=0.0, high=1.0) for d in np.ravel(delta)]
        res = [fn(self._items, d, **options) for d in ds]
        return EstimateArray([float(r) for r in res], [r.lower for r in res], [r.upper for r in res],
                             method, all(r.certified for r in res))

    def delta(self, epsilon, method="fft", **options):
        """delta(epsilon) (max over add and remove), vectorised over epsilon -> Estimate(Array)."""
        fn = self._method(method)[1]
        eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
        if eps.size == 0 or np.any(np.isnan(eps)) or np.any(eps < 0) or np.any(np.isinf(eps)):
            bad = [e for e in eps.tolist() if not (0 <= e < math.inf)]
            raise ParameterError(f"epsilon must lie in [0, inf), got {bad[0] if bad else 'an empty list'!r}")
        res = fn(self._items, eps, **options)
        return res[0] if np.ndim(epsilon) == 0 else res


def _as_items(obj):
    if isinstance(obj, Composition):
        return list(obj.items)
    if isinstance(obj, Mechanism):
        return [(obj, 1)]
    if isinstance(obj, tuple) and len(obj) == 2:
        m, c = obj
        if not isinstance(m, (Mechanism, Composition)):
            raise ParameterError(f"expected (mechanism, count), got ({type(m).__name__}, ...)")
        if isinstance(c, bool) or not isinstance(c, numbers.Integral) and not (isinstance(c, float) and c.is_integer()):
            raise ParameterError(f"count must be a positive integer, got {c!r}")
        c = int(c)
        if c < 1:
            raise ParameterError(f"count must be a positive integer (>= 1), got {c}")
        return [(mm, cc * c) for mm, cc in _as_items(m)]
    raise ParameterError(f"cannot compose a {type(obj).__name__}: pass mechanisms, (mechanism, count) pairs "
                         "or compositions")


def compose(*items):
    """Compose mechanisms, (mechanism, count) pairs and compositions, in any mix."""
    if not items:
        raise ParameterError("compose() needs at least one mechanism")
    out = []
    for it in items:
        out.extend(_as_items(it))
    return Composition(out)
