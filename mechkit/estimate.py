"""``Estimate``: a number that carries its certified bounds.

An ``Estimate`` is a ``float`` (so it behaves as its value in arithmetic and comparisons) with
``lower``, ``upper``, ``method``, ``certified`` and a ``details`` dict.  When ``certified`` is true,
``lower <= truth <= upper`` is guaranteed by the method's theorem; otherwise the bounds are ``None``.
Vectorised queries return an ``EstimateArray`` (a NumPy array with ``lower``/``upper`` arrays).
"""
from __future__ import annotations

import numpy as np


def clamp_into(value, lower, upper):
    """An approximation moved into its certified interval, and whether it had to be (elementwise).

    An estimate outside ``[lower, upper]`` is known to be wrong; the nearest bound is closer to the truth.
    The composers flag such answers as not reliable.
    """
    v = np.asarray(value, dtype=float)
    out = np.minimum(np.maximum(v, lower), upper)
    moved = out != v
    if np.ndim(out) == 0:
        return float(out), bool(moved)
    return out, moved


class Estimate(float):
    def __new__(cls, value, lower=None, upper=None, method="", certified=False, details=None):
        obj = super().__new__(cls, value)
        obj.lower = None if lower is None else float(lower)
        obj.upper = None if upper is None else float(upper)
        obj.method = method
        obj.certified = bool(certified)
        obj.details = dict(details or {})
        return obj

    @property
    def value(self):
        return float(self)

    def __repr__(self):
        if self.certified:
            return f"Estimate({float(self):.10g}, lower={self.lower:.10g}, upper={self.upper:.10g}, method={self.method!r})"
        return f"Estimate({float(self):.10g}, method={self.method!r}, certified=False)"

    def __reduce__(self):
        return (Estimate, (float(self), self.lower, self.upper, self.method, self.certified, self.details))


class EstimateArray(np.ndarray):
    """Values of a vectorised query, with ``lower`` and ``upper`` arrays of the same shape."""

    def __new__(cls, values, lower, upper, method="", certified=False, details=None):
        obj = np.asarray(values, dtype=float).view(cls)
        obj.lower = np.asarray(lower, dtype=float)
        obj.upper = np.asarray(upper, dtype=float)
        obj.method = method
        obj.certified = certified
        obj.details = dict(details or {})
        return obj

    def __array_finalize__(self, obj):
        if obj is None:
            return
        for name in ("lower", "upper", "method", "certified", "details"):
            setattr(self, name, getattr(obj, name, None))

    @property
    def value(self):
        return np.asarray(self)

    def __getitem__(self, i):
        v = np.asarray(self)[i]
        if np.ndim(v) == 0:
            return Estimate(v, self.lower[i], self.upper[i], self.method, self.certified, self.details)
        return super().__getitem__(i)
