"""Calibration: the value of one parameter of a family of compositions that meets a privacy target, on the safe
side and tight.

``mk.calibrate(make, epsilon=8, delta=1e-5, bounds=(0.3, 30))`` searches a parameter x for which ``make(x)`` (a
``Composition``, e.g. ``lambda s: mk.dpsgd(noise_multiplier=s, ...)``) has a certified upper epsilon(delta) of at
most ``epsilon``.  The direction is found from the two bounds (noise: larger is more private; steps or rate:
smaller is).  Bisection keeps a feasible end (certified upper bound within the target) and an infeasible one
(upper bound above it) until they are ``tolerance`` apart (relative; 1 for integers), and returns the feasible
end: its certified upper bound meets the target, and moving it by the tolerance towards the other end does not
(by the method's certified bound).  Continuous positive parameters are bisected in log scale.
"""
from __future__ import annotations

import math
from collections.abc import Callable

from .errors import MechkitError, ParameterError, check_real, quiet
from .estimate import Estimate


class Calibration:
    """The result of ``calibrate``: ``float(cal)`` (``int(cal)`` for an integer parameter) is the value.

    Parameters
    ----------
    value : the calibrated parameter (feasible: ``estimate.upper`` meets the target).
    estimate : the ``Estimate`` of epsilon(delta) at ``value`` (certified by the method).
    neighbour : the parameter ``tolerance`` away on the other side, whose certified upper bound exceeds the target.
    neighbour_upper : that upper bound.
    evaluations : how many compositions were accounted with certified bounds (the saddle-point estimates that place
        the first guess, milliseconds each, are not counted).
    target : (epsilon, delta).
    integer : whether the parameter is an integer (``value`` is then an int).

    Attributes
    ----------
    value, estimate, neighbour, neighbour_upper, evaluations, target, integer.
    """

    def __init__(self, value: float, estimate: Estimate, neighbour: float, neighbour_upper: float, evaluations: int,
                 target: tuple[float, float], integer: bool) -> None:
        self.value = int(value) if integer else float(value)
        self.estimate, self.neighbour, self.neighbour_upper = estimate, neighbour, neighbour_upper
        self.evaluations, self.target, self.integer = evaluations, target, integer

    def __float__(self):
        return float(self.value)

    def __int__(self):
        return int(self.value)

    def __repr__(self):
        eps, delta = self.target
        return (f"Calibration(value={self.value!r}: epsilon({delta:g}) <= {self.estimate.upper:.6g} <= {eps:g} "
                f"(certified, {self.estimate.method}); at {self.neighbour!r}: {self.neighbour_upper:.6g} > {eps:g}; "
                f"{self.evaluations} evaluations)")


def calibrate(make: Callable[[float], object], epsilon: float, delta: float, bounds: tuple[float, float],
              integer: bool = False, tolerance: float | None = None, method: str = "fft",
              **options: object) -> Calibration:
    """The parameter of ``make`` that meets ``epsilon`` at ``delta`` by a certified upper bound, tight to
    ``tolerance`` (module docstring).

    Parameters
    ----------
    make : parameter -> ``Composition`` (or anything with ``epsilon(delta, method=..., **options)``), monotone in
        its parameter.
    epsilon : the target epsilon, > 0.
    delta : the delta of the target, in (0, 1).
    bounds : (low, high), low < high, the interval searched (positive for a continuous parameter).
    integer : True for an integer parameter (steps, batch size).
    tolerance : how far apart the returned value and its infeasible neighbour may be: relative (default 1e-3) for
        a continuous parameter, absolute (default and minimum 1) for an integer one.
    method : the accountant, "fft" by default; its certified upper bound decides feasibility.
    **options : the method's options (e.g. ``eps_error``).

    Returns
    -------
    A ``Calibration``.

    Raises
    ------
    ParameterError : a target or bounds outside their ranges, a method that does not certify upper bounds, equal
        answers at both bounds (no direction), or a target that no value in the bounds meets, or that every value
        meets (the message gives the bounds' epsilons).
    """
    eps = check_real("epsilon", epsilon, low=0.0)
    dlt = check_real("delta", delta, low=0.0, high=1.0)
    try:
        lo, hi = bounds
    except (TypeError, ValueError):
        raise ParameterError(f"bounds must be a pair (low, high), got {bounds!r}") from None
    lo = check_real("bounds[0]", lo, low=0.0 if not integer else None, low_open=not integer)
    hi = check_real("bounds[1]", hi, low=lo)
    if integer:
        if lo != int(lo) or hi != int(hi):
            raise ParameterError(f"bounds of an integer parameter must be integers, got {bounds!r}")
        lo, hi = int(lo), int(hi)
        tol = 1 if tolerance is None else max(1, int(check_real("tolerance", tolerance, low=0.0)))
    else:
        tol = 1e-3 if tolerance is None else check_real("tolerance", tolerance, low=0.0, high=1.0)
    count = [0]

    def upper(x):
        count[0] += 1
        run = make(int(x) if integer else float(x))
        try:
            with quiet():  # the search's own queries: only the answer's Estimate speaks
                est = run.epsilon(dlt, method=method, **options)
        except MechkitError as exc:
            if method == "spa":
                raise
            # an extreme value of the parameter (e.g. little noise over many steps) can be beyond the method's grid
            # or floor: the saddle-point accountant needs no grid and certifies its bounds as well
            with quiet():
                est = run.epsilon(dlt, method="spa")
            est.details["calibration_fallback"] = f"{method} could not answer ({exc}); the saddle-point bounds"
        if not getattr(est, "certified", False):
            raise ParameterError(f"method {method!r} does not certify an upper bound; calibrate with 'fft' or 'spa'")
        return est

    def close(a, b):
        return abs(a - b) <= tol if integer else abs(a - b) <= tol * min(abs(a), abs(b))

    def between(a, b):
        """A point between a and b: geometric where both are positive and far apart (the parameters span decades),
        arithmetic otherwise; an integer for an integer parameter."""
        if integer:
            if min(a, b) >= 1 and max(a, b) > 2 * min(a, b):
                return int(round(math.sqrt(a * b)))
            return (a + b) // 2
        return math.sqrt(a * b) if a > 0 and b > 0 else 0.5 * (a + b)

    bracket = None
    if method != "spa":
        guess = _cheap_crossing(make, dlt, eps, lo, hi, integer, between)
        if guess is not None:
            bracket = _certified_bracket(upper, guess, eps, lo, hi, integer)
    if bracket is None:
        bracket = _bounds_bracket(upper, eps, dlt, lo, hi)
    def probe(x):
        e = upper(x)
        return e.upper <= eps, e

    good, e_good, bad, e_bad = _bisect(*bracket, probe, close, between)
    return Calibration(good, e_good, bad, e_bad.upper, count[0], (eps, dlt), integer)


def _bisect(good, at_good, bad, at_bad, probe, close, between, limit=None):
    """Narrow a bracket (good: meets the target, bad: does not) until ``close(good, bad)`` or the midpoint repeats
    an end, at most ``limit`` probes: ``probe(x)`` is (meets the target, what to keep at x), or None to give up
    (``_bisect`` then returns None).  Returns (good, at good, bad, at bad)."""
    n = 0
    while not close(good, bad) and (limit is None or n < limit):
        mid = between(good, bad)
        if mid in (good, bad):
            break
        got = probe(mid)
        if got is None:
            return None
        n += 1
        if got[0]:
            good, at_good = mid, got[1]
        else:
            bad, at_bad = mid, got[1]
    return good, at_good, bad, at_bad


def _bounds_bracket(upper, eps, dlt, lo, hi):
    """(feasible end, its Estimate, infeasible end, its Estimate) from certified answers at both bounds, or the
    ParameterError of a target that no value, or every value, in the bounds meets."""
    e_lo, e_hi = upper(lo), upper(hi)
    if e_lo.upper == e_hi.upper:
        raise ParameterError(f"the certified epsilon is {e_lo.upper:g} at both bounds: no direction to search")
    ok_lo, ok_hi = e_lo.upper <= eps, e_hi.upper <= eps
    if ok_lo == ok_hi:
        what = "every value in bounds meets" if ok_lo else "no value in bounds meets"
        raise ParameterError(f"{what} epsilon = {eps:g} at delta = {dlt:g} (certified upper bounds: {e_lo.upper:.6g} "
                             f"at {lo!r}, {e_hi.upper:.6g} at {hi!r}); change bounds")
    return (lo, e_lo, hi, e_hi) if ok_lo else (hi, e_hi, lo, e_lo)


def _cheap_crossing(make, dlt, eps, lo, hi, integer, between):
    """Where the saddle point's *estimate* of epsilon crosses the target (milliseconds an evaluation): a guess that
    the certified search starts from, None where the estimates cannot place one (the search then starts from the
    bounds).  Nothing is certified from it."""

    def cheap(x):
        try:
            with quiet():
                v = float(make(int(x) if integer else float(x)).epsilon(dlt, method="spa"))
        except MechkitError:
            return None
        return v if not math.isnan(v) else None

    c_lo, c_hi = cheap(lo), cheap(hi)
    if c_lo is None or c_hi is None or c_lo == c_hi or (c_lo <= eps) == (c_hi <= eps):
        return None
    a, b = (lo, hi) if c_lo <= eps else (hi, lo)  # a: estimated feasible

    def close(u, v):
        return abs(u - v) <= 1 if integer else abs(u - v) <= 1e-4 * min(abs(u), abs(v))

    def probe(x):
        c = cheap(x)
        return None if c is None else (c <= eps, None)

    found = _bisect(a, None, b, None, probe, close, between, limit=60)
    return None if found is None else found[0]


def _certified_bracket(upper, guess, eps, lo, hi, integer):
    """(feasible, its Estimate, infeasible, its Estimate) by certified answers, stepping out from ``guess`` (1% at
    first, doubling) until the target is crossed; None where a bound is reached first (the caller then brackets
    from the bounds, which also reports a target outside them)."""
    e = upper(guess)
    feasible = e.upper <= eps
    # the side to search: towards the infeasible values from a feasible guess, and back from an infeasible one;
    # which way that is comes from the certified answers at the guess and one step away
    step = max(1, round(0.01 * abs(guess))) if integer else 0.01
    for direction in (+1, -1):
        x, ex, k = guess, e, step
        while True:
            y = (x + direction * k) if integer else x * (1.0 + k) ** direction
            y = min(max(y, lo), hi)
            if y == x:
                break
            ey = upper(y)
            if (ey.upper <= eps) != feasible:
                if feasible:
                    return x, ex, y, ey
                return y, ey, x, ex
            if (ey.upper > ex.upper) == feasible and ey.upper != ex.upper:
                x, ex = y, ey  # moving towards the crossing: keep going, farther each time
                k *= 2
            else:
                break  # moving away from the crossing: try the other direction
    return None


__all__ = ["Calibration", "calibrate"]
