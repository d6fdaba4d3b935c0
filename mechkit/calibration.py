"""Calibration: the value of one parameter of a family of compositions that meets a privacy target, on the safe
side and tight.

``mk.calibrate(make, epsilon=8, delta=1e-5, bounds=(0.3, 30))`` searches a parameter x for which ``make(x)`` (a
``Composition``, e.g. ``lambda s: mk.dpsgd(noise_multiplier=s, ...)``) has a certified upper epsilon(delta) of at
most ``epsilon``.  The direction is found from the two bounds (noise: larger is more private; steps or rate:
smaller is).  The search keeps a feasible value (certified upper bound within the target) and an infeasible one
(upper bound above it) until they are ``tolerance`` apart (relative; 1 for integers), and returns the feasible
one: its certified upper bound meets the target, and moving it by the tolerance towards the other does not (by
the method's certified bound).  How: the saddle point's *estimate* (milliseconds) places a first guess where it
crosses the target less the FFT's expected excess (``_cheap_crossing``, Illinois regula falsi on log answers
against log parameters); certified answers then take Newton steps from it (``_certified_bracket``: the estimate's
slope, then the secant of the certified answers), each probe half a tolerance on the safe side of the predicted
crossing and, after a feasible one, one tolerance beyond it; regula falsi narrows what remains (``_narrow``).
"""
from __future__ import annotations

import copy
import math
from collections.abc import Callable

from .errors import MechkitError, ParameterError, check_real, quiet
from .estimate import Estimate
from .progress import setting as progress_setting
from .progress import working


class Calibration:
    """The result of ``calibrate``: ``float(cal)`` (``int(cal)`` for an integer parameter) is the value.

    Parameters
    ----------
    value : the calibrated parameter (feasible: ``estimate.upper`` meets the target).
    estimate : the ``Estimate`` of the targeted quantity at ``value`` (certified by the method): epsilon(delta), or
        delta(epsilon), the advantage, or the true-positive rate at the target's false-positive rate.
    neighbour : the parameter ``tolerance`` away on the other side, whose certified upper bound exceeds the target.
    neighbour_upper : that upper bound.
    evaluations : how many compositions were accounted with certified bounds (the saddle-point estimates that place
        the first guess, milliseconds each, are not counted).
    target : (epsilon, delta) for an (epsilon, delta) target; ("advantage", a) or ("tpr", tpr, fpr) otherwise.
    integer : whether the parameter is an integer (``value`` is then an int).
    quantity : what was bounded, in words (e.g. "epsilon(1e-05)", "delta(8)", "advantage", "tpr at fpr 0.01").

    Attributes
    ----------
    value, estimate, neighbour, neighbour_upper, evaluations, target, integer, quantity.
    """

    def __init__(self, value: float, estimate: Estimate, neighbour: float, neighbour_upper: float, evaluations: int,
                 target: tuple, integer: bool, quantity: str | None = None) -> None:
        self.value = int(value) if integer else float(value)
        self.estimate, self.neighbour, self.neighbour_upper = estimate, neighbour, neighbour_upper
        self.evaluations, self.target, self.integer = evaluations, target, integer
        self.quantity = quantity if quantity is not None else f"epsilon({target[1]:g})"

    def __float__(self):
        return float(self.value)

    def __int__(self):
        return int(self.value)

    def __repr__(self):
        limit = self.target[0] if self.quantity.startswith("epsilon") else self.target[1]
        return (f"Calibration(value={self.value!r}: {self.quantity} <= {self.estimate.upper:.6g} <= {limit:g} "
                f"(certified, {self.estimate.method}); at {self.neighbour!r}: {self.neighbour_upper:.6g} > "
                f"{limit:g}; {self.evaluations} evaluations)")


#: with method "auto", an epsilon target's certified evaluations go straight to the FFT where the saddle point's
#: certified interval at the cheap search's last estimate is this many times wider than auto accepts (2 eps_error):
#: within the search's few percent of the parameter it cannot narrow that much, and auto would run it for nothing
SKIP_SPA = 5.0

#: the FFT's eps_error for advantage and tpr targets (their certified bounds move by about this much)
FINE_EPS_ERROR = 0.002


class _Target:
    """What a calibration bounds: ``measure(run)`` (a certified Estimate whose upper bound must be at most
    ``limit``), ``cheap(run)`` (the saddle point's estimate of it, to place a first guess; None: none),
    ``quantity`` and ``target`` (for the result)."""

    def __init__(self, epsilon, delta, advantage, tpr, fpr, query, method, options):
        given = [n for n, v in (("epsilon", epsilon), ("delta", delta), ("advantage", advantage), ("tpr", tpr),
                                ("fpr", fpr)) if v is not None]
        self.method, self.options, self.query = method, options, None
        self.spa_width = 0.0  # the saddle point's certified width at the latest cheap estimate (epsilon queries)
        if set(given) == {"epsilon", "delta"}:
            self.eps = check_real("epsilon", epsilon, low=0.0)
            self.dlt = check_real("delta", delta, low=0.0, high=1.0)
            if query not in ("epsilon", "delta"):
                raise ParameterError(f"query must be 'epsilon' (bound epsilon(delta)) or 'delta' (bound "
                                     f"delta(epsilon)), got {query!r}")
            self.query = query
            self.limit = self.eps if query == "epsilon" else self.dlt
            self.target = (self.eps, self.dlt)
            self.quantity = f"epsilon({self.dlt:g})" if query == "epsilon" else f"delta({self.eps:g})"
        elif given == ["advantage"]:
            self.limit = check_real("advantage", advantage, low=0.0, high=1.0)
            self.target, self.quantity = ("advantage", self.limit), "advantage"
        elif set(given) == {"tpr", "fpr"}:
            self.fpr = check_real("fpr", fpr, low=0.0, high=1.0, low_open=False, high_open=True)
            self.limit = check_real("tpr", tpr, low=self.fpr, high=1.0, low_open=True, high_open=True)
            self.target, self.quantity = ("tpr", self.limit, self.fpr), f"tpr at fpr {self.fpr:g}"
        else:
            raise ParameterError("give one target: epsilon and delta, or advantage, or tpr and fpr (the attacker's "
                                 f"true-positive rate at a false-positive rate); got {', '.join(given) or 'none'}")
        if self.query is None:
            if method not in ("fft", "auto"):
                raise ParameterError("an advantage or tpr target is certified from the FFT's curve: method 'fft'")
            takes = ["eps_error", "delta_error"] + (["memory_limit"] if given == ["advantage"] else [])
            unknown = sorted(set(options) - set(takes))
            if unknown:
                raise ParameterError(f"unknown option(s) {unknown} for an {given[0]} target; its options are {takes}")
            # delta at epsilon 0 moves by about eps_error times P(L > 0) per eps_error: a finer grid than the FFT's
            # default keeps the certified advantage within about 1e-3 of the truth
            self.options = {"eps_error": FINE_EPS_ERROR, **options}

    def measure(self, run):
        if self.query == "epsilon":
            if self.method == "auto" and self.spa_width > SKIP_SPA * 2.0 * self.anticipated_gap():
                # auto would try the saddle point first and find it far too wide here: straight to the FFT
                est = run.epsilon(self.dlt, method="fft", **self.options)
                est.details["auto"] = (f"fft: the saddle point's certified interval near the crossing was "
                                       f"{self.spa_width:.3g} wide (the calibration's estimates), above "
                                       f"{SKIP_SPA:g} x 2 eps_error")
                return est
            return run.epsilon(self.dlt, method=self.method, **self.options)
        if self.query == "delta":
            return run.delta(self.eps, method=self.method, **self.options)
        if self.target[0] == "advantage":
            return run.advantage(**self.options)
        got = run.tpr_at_fpr(self.fpr, **self.options)
        return Estimate(float(got[0]), float(got.lower[0]), float(got.upper[0]), got.method, got.certified,
                        dict(got.details))

    def fallback(self, run):
        """A certified answer where the method cannot answer (a grid too large, a tiny delta): the saddle point's
        for epsilon and delta; for an advantage or tpr target the FFT on coarser grids (eps_error 0.01, then 0.05:
        looser bounds, still certified), else the last error."""
        if self.query == "epsilon":
            return run.epsilon(self.dlt, method="spa")
        if self.query == "delta":
            return run.delta(self.eps, method="spa")
        error = None
        for coarse in (0.01, 0.05):
            if coarse <= self.options.get("eps_error", FINE_EPS_ERROR):
                continue
            try:
                got = _Target.measure(self._coarser(coarse), run)
                got.details["coarser_eps_error"] = coarse
                return got
            except MechkitError as exc:
                error = exc
        raise error

    def _coarser(self, eps_error):
        other = copy.copy(self)
        other.options = {**self.options, "eps_error": eps_error}
        return other

    def anticipated_gap(self):
        """How far above its estimate the certified upper bound is expected to lie, to aim the first certified probe:
        the FFT's eps_error for an epsilon(delta) target (its interval is the estimate +- about eps_error), else 0
        (the probes then learn it)."""
        if self.query == "epsilon" and self.method in ("fft", "auto"):
            from .accountants.fft import DEFAULT_EPS_ERROR
            return float(self.options.get("eps_error", DEFAULT_EPS_ERROR))
        return 0.0

    def cheap(self, run):
        if self.query is None:
            return None
        est = self.fallback(run)
        if self.query == "epsilon":
            width = est.upper - est.lower
            self.spa_width = width if math.isfinite(width) else math.inf
        return float(est)


def calibrate(make: Callable[[float], object], epsilon: float | None = None, delta: float | None = None,
              bounds: tuple[float, float] | None = None, integer: bool = False, tolerance: float | None = None,
              method: str = "auto", *, query: str = "epsilon", advantage: float | None = None,
              tpr: float | None = None, fpr: float | None = None, progress: bool = True,
              **options: object) -> Calibration:
    """The parameter of ``make`` that meets a privacy target by a certified upper bound, tight to ``tolerance``
    (module docstring).

    Parameters
    ----------
    make : parameter -> ``Composition`` (or anything with ``epsilon(delta, method=..., **options)``), monotone in
        its parameter.
    epsilon : the target epsilon, > 0 (with ``delta``).
    delta : the delta of the target, in (0, 1).
    bounds : (low, high), low < high, the interval searched (positive for a continuous parameter).
    integer : True for an integer parameter (steps, batch size).
    tolerance : how far apart the returned value and its infeasible neighbour may be: relative (default 1e-3) for
        a continuous parameter, absolute (default and minimum 1) for an integer one.
    method : the accountant whose certified upper bound decides feasibility: "auto" (default: the saddle point's
        where its certified interval is within 2 eps_error, e.g. long runs, else the FFT's), "fft" or "spa".
    query : with epsilon and delta: "epsilon" (default: the certified upper epsilon(delta) is at most epsilon) or
        "delta" (the certified upper delta(epsilon) is at most delta; the same guarantee, another bound).
    advantage : instead of epsilon and delta: the best attacker's advantage (``Composition.advantage``), in (0, 1).
    tpr, fpr : instead: the best membership attacker's true-positive rate at false-positive rate ``fpr``
        (``Composition.tpr_at_fpr``), fpr < tpr < 1.
    progress : False: no progress line (``mechkit.progress``: one line on stderr if the search still runs after
        ``progress.DELAY`` seconds; its compositions print none, the search's line covers them).
    **options : the method's options (e.g. ``eps_error``); for an advantage or tpr target, the FFT's ``eps_error``
        (default 0.002) and ``delta_error``.

    Returns
    -------
    A ``Calibration``.

    Raises
    ------
    ParameterError : no target or more than one, a target or bounds outside their ranges, a method that does not
        certify upper bounds, equal answers at both bounds (no direction), or a target that no value in the bounds
        meets, or that every value meets (the message gives the bounds' answers).
    """
    tgt = _Target(epsilon, delta, advantage, tpr, fpr, query, method, options)
    if bounds is None:
        raise ParameterError("bounds must be given: (low, high), the interval of the parameter searched")
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
                est = tgt.measure(run)
        except MechkitError as exc:
            if method == "spa":
                raise
            # an extreme value of the parameter (e.g. little noise over many steps) can be beyond the method's grid
            # or floor: the saddle-point accountant needs no grid and certifies its bounds as well (advantage and
            # tpr targets: the FFT on a coarser grid)
            with quiet():
                est = tgt.fallback(run)
            est.details["calibration_fallback"] = f"{method} could not answer ({exc}); a fallback's certified bounds"
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

    what = f"calibration: the parameter in [{lo:g}, {hi:g}] with {tgt.quantity} <= {tgt.limit:g}"
    with progress_setting(progress), working(what):
        limit = tgt.limit
        bracket = None
        if method != "spa" and tgt.query is not None:
            found = _cheap_crossing(make, tgt.cheap, limit - tgt.anticipated_gap(), lo, hi, integer)
            if found is None:
                tgt.spa_width = 0.0  # its last estimate need not be near the crossing: auto decides each probe
            else:
                guess, slope, bad_above = found
                guess = _toward(guess, lo if bad_above else hi, 0.5 * (1 if integer else tol), integer)
                bracket = _certified_bracket(upper, min(max(guess, lo), hi), slope, limit, lo, hi, integer, tol,
                                             bad_above)
        if bracket is None:
            bracket = _bounds_bracket(upper, limit, tgt.quantity, lo, hi)

        def probe(x):
            e = upper(x)
            return e.upper <= limit, e

        good, e_good, bad, e_bad = _narrow(*bracket, probe, close, between, limit, integer, tol)
        return Calibration(good, e_good, bad, e_bad.upper, count[0], tgt.target, integer, tgt.quantity)


def _toward(x, y, step, integer):
    """x moved towards y by ``step`` (relative for a continuous parameter, at least 1 for an integer one)."""
    if integer:
        return x + (1 if y > x else -1) * max(1, int(step))
    return x * (1.0 + step) if y > x else x / (1.0 + step)


def _crossing(good, u_good, bad, u_bad, target, integer, w_good=1.0, w_bad=1.0):
    """Where the certified upper bound crosses the target by linear interpolation between the bracket's ends (in log
    scale for a positive continuous parameter), each end's distance from the target scaled by its weight (Illinois:
    a stale end's is halved); None where the values do not allow it."""
    if not (u_good <= target < u_bad) or not math.isfinite(u_bad):
        return None
    dg, db = w_good * (target - u_good), w_bad * (u_bad - target)
    frac = dg / (dg + db)
    if integer or good <= 0 or bad <= 0:
        x = good + frac * (bad - good)
        return int(round(x)) if integer else x
    return math.exp(math.log(good) + frac * (math.log(bad) - math.log(good)))


def _narrow(good, at_good, bad, at_bad, probe, close, between, target, integer, tol):
    """Narrow a certified bracket (good meets the target, bad does not) until ``close(good, bad)``: regula falsi on
    the certified upper bounds, each interpolated crossing probed half a tolerance on the good side and, where that
    meets the target, one tolerance beyond it (usually the end: two evaluations); the Illinois rule where the same
    end has moved twice running (the other end's weight halved: plain regula falsi stalls on a curved answer, an
    advantage or tpr target from the bounds took 56-127 evaluations); a bisection step where an interpolation gives
    nothing new.  Returns (good, its Estimate, bad, its Estimate) once ``close(good, bad)``."""
    def inside(x):
        return x is not None and min(good, bad) < x < max(good, bad)

    weight = {True: 1.0, False: 1.0}  # the interpolation weights of the good (True) and bad ends
    last = [None]

    def moved(ok):
        if last[0] == ok:
            weight[not ok] *= 0.5  # the same end again: the other is stale
        weight[ok] = 1.0
        last[0] = ok

    while not close(good, bad):
        x = _crossing(good, at_good.upper, bad, at_bad.upper, target, integer, weight[True], weight[False])
        x = _toward(x, good, 0.5 * tol, integer) if inside(x) else None
        if not inside(x):
            x = between(good, bad)
            if x in (good, bad):
                break
        ok, e = probe(x)
        moved(ok)
        if not ok:
            bad, at_bad = x, e
            continue
        good, at_good = x, e
        y = _toward(good, bad, 0.999 * tol if not integer else tol, integer)
        if inside(y):
            ok, e = probe(y)
            moved(ok)
            if ok:
                good, at_good = y, e
            else:
                bad, at_bad = y, e
    return good, at_good, bad, at_bad


def _bounds_bracket(upper, limit, quantity, lo, hi):
    """(feasible end, its Estimate, infeasible end, its Estimate) from certified answers at both bounds, or the
    ParameterError of a target that no value, or every value, in the bounds meets."""
    e_lo, e_hi = upper(lo), upper(hi)
    if e_lo.upper == e_hi.upper:
        raise ParameterError(f"the certified {quantity} is {e_lo.upper:g} at both bounds: no direction to search")
    ok_lo, ok_hi = e_lo.upper <= limit, e_hi.upper <= limit
    if ok_lo == ok_hi:
        what = "every value in bounds meets" if ok_lo else "no value in bounds meets"
        raise ParameterError(f"{what} {quantity} <= {limit:g} (certified upper bounds: {e_lo.upper:.6g} "
                             f"at {lo!r}, {e_hi.upper:.6g} at {hi!r}); change bounds")
    return (lo, e_lo, hi, e_hi) if ok_lo else (hi, e_hi, lo, e_lo)


#: the least answer the cheap search's log scale takes (an estimate of exactly 0 counts as this)
TINY = 1e-300


def _coordinate(x, positive):
    """The search's coordinate of a parameter value: log scale where the parameter is positive (noise, steps and
    rates span decades), the value itself otherwise."""
    return math.log(x) if positive else float(x)


def _from_coordinate(X, positive, integer):
    x = math.exp(X) if positive else X
    return int(round(x)) if integer else x


def _response(u, logged):
    """The answer in the search's scale: log where answers and target are positive (``logged``: epsilon and delta
    are close to power laws of the parameter there), the answer itself otherwise."""
    return math.log(u) if logged else u


def _cheap_crossing(make, estimate, eps, lo, hi, integer):
    """Where the saddle point's *estimate* of the targeted quantity crosses ``eps`` (milliseconds an evaluation;
    ``estimate(run)``), by the Illinois variant of regula falsi on log answers against log parameters: a guess that
    the certified search starts from, with the estimate's slope there and whether the infeasible side lies above.
    Returns (guess, slope, bad_above), or None where the estimates cannot place one (the search then starts from the
    bounds).  Nothing is certified from it."""

    memo = {}

    def cheap(x):
        if x not in memo:  # integer parameters: rounding can propose a point twice
            try:
                with quiet():
                    v = estimate(make(int(x) if integer else float(x)))
            except MechkitError:
                v = None
            memo[x] = v if v is not None and not math.isnan(v) else None
        return memo[x]

    c_lo, c_hi = cheap(lo), cheap(hi)
    if c_lo is None or c_hi is None or c_lo == c_hi or (c_lo <= eps) == (c_hi <= eps):
        return None
    positive = lo > 0
    logged = eps > 0 and min(c_lo, c_hi) >= 0 and math.isfinite(max(c_lo, c_hi))
    f = (lambda v: _response(max(v, TINY), logged) - _response(eps, logged))  # an answer 0: log TINY
    a, fa, b, fb = _coordinate(lo, positive), f(c_lo), _coordinate(hi, positive), f(c_hi)
    if fa > 0:  # a: the end estimated feasible
        a, fa, b, fb = b, fb, a, fa
    side, last = 0, [(a, fa), (b, fb)]
    for _ in range(60):
        X = (a * fb - b * fa) / (fb - fa)
        if not min(a, b) < X < max(a, b):
            X = 0.5 * (a + b)
        x = _from_coordinate(X, positive, integer)
        if integer:
            x = min(max(x, int(min(lo, hi))), int(max(lo, hi)))
            X = _coordinate(x, positive)
        c = cheap(x)
        if c is None or (logged and c < 0):
            return None
        fx = f(c)
        last = [last[-1], (X, fx)]
        if (fx <= 0) == (fa <= 0):
            a, fa = X, fx
            fb, side = (fb / 2.0 if side == -1 else fb), -1
        else:
            b, fb = X, fx
            fa, side = (fa / 2.0 if side == +1 else fa), +1
        done = abs(b - a) <= (1e-4 if positive else 1e-4 * max(abs(a), abs(b)))
        if integer:
            done = abs(_from_coordinate(a, positive, True) - _from_coordinate(b, positive, True)) <= 1
        if done or abs(fx) <= (1e-9 if logged else 1e-9 * abs(eps)):
            break
    # a: the estimated-feasible end (f <= 0); the slope of the response per unit coordinate, from the last two
    # estimates (the nearest the crossing; the bracket's far end can be decades away)
    (x1, f1), (x2, f2) = last
    slope = (f2 - f1) / (x2 - x1) if x2 != x1 else 0.0
    good = _from_coordinate(a, positive, integer)
    return good, abs(slope) if slope else None, b > a


def _certified_bracket(upper, guess, slope, eps, lo, hi, integer, tol, bad_above):
    """(feasible, its Estimate, infeasible, its Estimate) by certified answers, by Newton steps from ``guess`` on the
    log-log scale of ``_cheap_crossing`` (``slope``: the saddle point estimate's, then the secant of the certified
    answers), each probe placed half a tolerance on the feasible side of the predicted crossing, and after a
    feasible probe one tolerance beyond it where the prediction is that close.  None where a bound is reached
    first or the steps do not bracket the target (the caller then brackets from the bounds, which also reports a
    target outside them)."""
    positive, logged = lo > 0, eps > 0
    tol_x = 1.0 if integer else tol
    good = bad = None
    seen = []
    x = guess
    for _ in range(8):
        e = upper(x)
        u = e.upper
        if u <= eps:
            good = (x, e)  # each probe is nearer the crossing than the last on its side
        else:
            bad = (x, e)
        if good is not None and bad is not None:
            return good[0], good[1], bad[0], bad[1]
        if not math.isfinite(u) or (logged and u <= 0):
            return None
        X, R = _coordinate(x, positive), _response(u, logged)
        s = slope
        if seen and seen[-1][0] != X and seen[-1][1] != R:
            secant = (R - seen[-1][1]) / (X - seen[-1][0])
            s = abs(secant) if (secant > 0) == bad_above else slope
        seen.append((X, R))
        if not s:
            return None
        step = (_response(eps, logged) - R) / (s if bad_above else -s)  # Newton: to the predicted crossing
        step = max(-math.log(2.0), min(math.log(2.0), step)) if positive else step
        c = _from_coordinate(X + step, positive, integer)
        toward_good = lo if bad_above else hi
        toward_bad = hi if bad_above else lo
        y = _toward(c, toward_good, 0.5 * tol_x, integer) if c != x else c
        if u <= eps:
            tight = _toward(x, toward_bad, 0.999 * tol_x if not integer else tol_x, integer)
            y = max(y, tight) if bad_above else min(y, tight)
        elif (y >= x) == bad_above:
            y = _toward(x, toward_good, tol_x, integer)
        y = min(max(y, lo), hi)
        if y == x:
            return None
        x = y
    return None


__all__ = ["Calibration", "calibrate"]
