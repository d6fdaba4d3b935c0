"""``method="auto"``: a certified answer from the fastest accountant that gives one within the requested budget.

For epsilon(delta): the saddle-point accountant first (milliseconds, no grid); its answer is kept where its
certified interval is at most ``2 eps_error`` wide (the FFT's own width), else the FFT composer answers.  Where the
FFT cannot (a grid above ``memory_limit``, a delta below its floating-point floor) the saddle point's certified
interval is returned, wider than asked, and says so.  delta(epsilon) goes to the FFT, and to the saddle point
where the FFT cannot answer.  ``est.details["auto"]`` says what ran and why.
"""
from __future__ import annotations

from ..errors import MechkitError, ParameterError, check_finite_real
from . import fft
from .spa import accountant as spa


def epsilon(items, delta_, eps_error=fft.DEFAULT_EPS_ERROR, delta_error=None, memory_limit=fft.DEFAULT_MEMORY_LIMIT):
    """Smallest epsilon with delta(epsilon) <= delta_ (an ``Estimate``, certified): module docstring."""
    d = check_finite_real("delta", delta_, low=0.0, high=1.0)  # the budgets are checked before either method runs
    de = d / 1000.0 if delta_error is None else delta_error
    fft.check_budgets(eps_error, de, memory_limit)
    if not de < d:
        raise ParameterError(f"delta_error must be below delta = {d:g}, got {de:g}")
    first, why = None, ""
    try:
        first = spa.epsilon(items, delta_)
        width = first.upper - first.lower
        if first.certified and width <= 2.0 * eps_error:
            first.details["auto"] = f"spa: its certified interval ({width:.3g} wide) is within 2 eps_error"
            return first
        why = f"spa's certified interval is {width:.3g} wide, above 2 eps_error = {2 * eps_error:g}"
    except MechkitError as exc:
        why = f"spa could not answer ({exc})"
    try:
        est = fft.epsilon(items, delta_, eps_error, delta_error, memory_limit)
    except MechkitError as exc:
        if first is None or not first.certified:
            raise
        first.details["auto"] = (f"spa: the fft could not answer ({exc}); the saddle point's certified interval, "
                                 f"wider than 2 eps_error")
        return first
    est.details["auto"] = f"fft: {why}"
    return est


def delta(items, epsilon, eps_error=fft.DEFAULT_EPS_ERROR, delta_error=1e-10, memory_limit=fft.DEFAULT_MEMORY_LIMIT):
    """delta(epsilon) (an ``EstimateArray``, certified): the FFT, or the saddle point where the FFT cannot answer."""
    fft.check_budgets(eps_error, delta_error, memory_limit)
    try:
        est = fft.delta(items, epsilon, eps_error, delta_error, memory_limit)
    except MechkitError as exc:
        est = spa.delta(items, epsilon)
        est.details["auto"] = f"spa: the fft could not answer ({exc})"
        return est
    est.details["auto"] = "fft"
    return est
