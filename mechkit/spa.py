"""The saddle-point accountant (Alghamdi et al.; notes.md section 5), from the derived CGFs.

For one direction, L = sum of independent privacy losses, K(t) = sum_i k_i K_i(t) (counts multiply).  With

    psi(t) = K(t) - eps t - log t - log(1 + t),

the saddle point t0 > 0 solves psi'(t0) = 0, i.e. K'(t0) = eps + 1/t0 + 1/(1 + t0) (psi is strictly convex on
the CGF's domain of finiteness, so t0 is unique when it exists).  The answers:

* ``order=0`` (SP-MSD0):  delta = e^{psi(t0)} / sqrt(2 pi psi''(t0))
* ``order=1`` (SP-MSD1, Daniels):  delta_0 * [1 + psi''''/(8 psi''^2) - 5 psi'''^2/(24 psi''^3)]
* ``variant="clt"`` (SP-CLT, eq. 79):  exp(K - t0 eps - g^2/2) [Psi(a) - Psi(b)], s = sqrt(K''), g = (K' - eps)/s,
  a = t0 s - g, b = a + s, Psi(x) = e^{x^2/2} Q(x)

and the certified bounds of Theorem 5 (Berry-Esseen on the tilted sum, 2 C_BE = 1.12):

    |delta - delta_CLT| <= 1.12 e^{K - t0 eps} t0^t0/(1+t0)^(1+t0) sum_i k_i E|L_i,t0 - K_i'(t0)|^3 / K''(t0)^{3/2}.

Everything is computed in log space, so delta = 1e-100 is as accurate as 1e-5.  epsilon(delta) is solved in the
saddle point itself: eps(t) = K'(t) - 1/t - 1/(1+t) is increasing in t, delta(eps(t)) decreasing, so one
bracketed root search in log t needs one CGF evaluation (orders 0..4) per step.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr

from . import _numerics as _nm
from .errors import NumericalLimitError, ParameterError, check_finite_real
from .estimate import Estimate, EstimateArray, clamp_into

C_BE2 = 1.12  # 2 * C_BE, Shevtsova's constant for non-identical summands (the authors' code)
LOG_2PI = math.log(2.0 * math.pi)
T_MIN, T_MAX = 1e-9, 1e7
#: relative allowance for the quadrature behind the CGF values (about 1e-13) in the certified bounds
QUAD_SLACK = 1e-9

VARIANTS = ("msd", "clt")


def _log_psi(x):
    """log(e^{x^2/2} Q(x)), the log scaled Mills ratio, stable for all x."""
    return 0.5 * x * x + float(log_ndtr(-x))


class _Direction:
    """The CGF of the composition in one direction, with everything the SPA needs at a tilt t."""

    def __init__(self, items, direction):
        self.direction = direction
        self.parts = [(m.plrv(direction), c) for m, c in items]
        for plrv, _ in self.parts:
            if plrv.inf_mass > 0:
                raise NumericalLimitError(
                    f"{plrv.mechanism.name} has a point mass at +inf (probability {plrv.inf_mass:.3g}): its CGF is "
                    "infinite for every t > 0, so no saddle point exists; use method='fft'")
        self._start = None
        self._t_zero = None

    def vector(self, t):
        """[K, K', K'', K''', K''''] of the composition at t (inf when t is outside the domain)."""
        out = np.zeros(5)
        for plrv, c in self.parts:
            v = plrv.cgf_vector(t, 4)
            if not np.all(np.isfinite(v)):
                return np.full(5, np.inf)
            out += c * v
        return out

    def abs3(self, t):
        return sum(c * plrv.tilted_abs3(t) for plrv, c in self.parts)

    def model_start(self, target):
        """log t where a Gaussian model of K (from K'(0), K''(0)) puts log delta_MSD0 at ``target``: a cheap,
        usually close first guess for the search (the search itself uses the real K)."""
        v0 = self.vector(0.0)
        m1, var = float(v0[1]), float(v0[2])
        if not (math.isfinite(m1) and math.isfinite(var) and var > 0):
            return None

        def logd(u):
            t = math.exp(u)
            eps = m1 + var * t - 1.0 / t - 1.0 / (1.0 + t)
            p2 = var + 1.0 / t ** 2 + 1.0 / (1.0 + t) ** 2
            return m1 * t + 0.5 * var * t * t - eps * t - math.log(t) - math.log1p(t) - 0.5 * (LOG_2PI + math.log(p2))

        lo, hi = math.log(T_MIN), math.log(T_MAX)
        if not (logd(lo) > target > logd(hi)):
            return None
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if logd(mid) > target else (lo, mid)
        return 0.5 * (lo + hi)

    def sup(self):
        """The largest value the composed loss can take (inf for unbounded losses)."""
        return sum(c * plrv.support[1] for plrv, c in self.parts)

    def finite(self, t):
        return bool(np.isfinite(self.vector(t)[0]))

    def start(self):
        """A tilt inside the CGF's domain of finiteness (t = 1 when possible)."""
        if self._start is None:
            if self.finite(1.0):
                self._start = 1.0
            else:
                lo, hi = 0.0, 1.0
                for _ in range(60):
                    mid = 0.5 * (lo + hi)
                    lo, hi = (mid, hi) if self.finite(mid) else (lo, mid)
                if lo < T_MIN:
                    raise NumericalLimitError(
                        f"the CGF of the composition ({self.direction} direction) is finite only at t = 0: "
                        "no saddle point exists (heavy-tailed privacy loss); use method='fft'")
                self._start = 0.5 * lo
        return self._start

    def up(self, t):
        """The next tilt above t for a bracket search: 2t, or the end of the domain of finiteness (None at it)."""
        t2 = 2.0 * t
        if t2 > T_MAX:
            return None
        if self.finite(t2):
            return t2
        lo, hi = t, t2
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if self.finite(mid) else (lo, mid)
        return lo if lo > t * (1.0 + 1e-9) else None

    # -- the saddle point for a given epsilon ----------------------------------------------------------
    def eps_of(self, t, vec=None):
        vec = self.vector(t) if vec is None else vec
        return vec[1] - 1.0 / t - 1.0 / (1.0 + t)

    def saddle(self, eps):
        """t0 with K'(t0) = eps + 1/t0 + 1/(1+t0), by bracketed bisection in log t polished by Newton steps."""
        lo, hi = None, None
        t = self.start()
        if self.eps_of(t) < eps:
            lo = t
            while True:
                t2 = self.up(t)
                if t2 is None and eps >= self.sup():
                    raise _ZeroDelta()
                if t2 is None:
                    raise NumericalLimitError(
                        f"no saddle point for epsilon = {eps:g} ({self.direction} direction): K'(t) - 1/t - 1/(1+t) "
                        f"stays below epsilon up to the end of the CGF's domain (t = {t:.3g}); epsilon is beyond "
                        "the range where delta can be resolved by the SPA")
                t = t2
                if self.eps_of(t) >= eps:
                    hi = t
                    break
                lo = t
        else:
            hi = t
            while True:
                t = 0.5 * t
                if t < T_MIN:
                    raise NumericalLimitError(f"no saddle point above t = {T_MIN:g} for epsilon = {eps:g}")
                if self.eps_of(t) < eps:
                    lo = t
                    break
                hi = t
        # eps_of is increasing in t (its derivative is psi'' > 0): safeguarded Newton on eps_of(t) = eps
        t = math.sqrt(lo * hi)
        for _ in range(100):
            vec = self.vector(t)
            f = self.eps_of(t, vec) - eps
            if f < 0:
                lo = t
            else:
                hi = t
            d = vec[2] + 1.0 / t ** 2 + 1.0 / (1.0 + t) ** 2
            nt = t - f / d
            if not (lo < nt < hi):
                nt = math.sqrt(lo * hi)
            if abs(nt - t) <= 1e-13 * t or hi - lo <= 1e-14 * hi:
                return nt
            t = nt
        return t

    # -- delta at a tilt ------------------------------------------------------------------------------------
    def at(self, t, eps=None, want_bounds=True):
        """Everything at tilt t for epsilon eps (default: the epsilon whose saddle point is t)."""
        vec = self.vector(t)
        K, K1, K2, K3, K4 = vec
        if eps is None:
            eps = self.eps_of(t, vec)
        p2 = K2 + 1.0 / t ** 2 + 1.0 / (1.0 + t) ** 2
        p3 = K3 - 2.0 / t ** 3 - 2.0 / (1.0 + t) ** 3
        p4 = K4 + 6.0 / t ** 4 + 6.0 / (1.0 + t) ** 4
        log_psi0 = K - eps * t - math.log(t) - math.log1p(t)
        log_msd0 = log_psi0 - 0.5 * (LOG_2PI + math.log(p2))
        corr = 1.0 + p4 / (8.0 * p2 ** 2) - 5.0 * p3 ** 2 / (24.0 * p2 ** 3)
        log_msd1 = log_msd0 + math.log(corr) if corr > 0 else math.nan
        s = math.sqrt(K2)
        g = (K1 - eps) / s
        a = t * s - g
        b = a + s
        la, lb = _log_psi(a), _log_psi(b)
        base = K - t * eps
        log_clt = base - 0.5 * g * g + la + _nm.log1mexp(lb - la) if lb < la else -math.inf
        out = {"t": t, "eps": eps, "p2": p2, "log_msd0": log_msd0, "log_msd1": log_msd1, "log_clt": log_clt, "corr": corr}
        if want_bounds:
            log_max_theta = t * math.log(t) - (1.0 + t) * math.log1p(t)
            A = self.abs3(t)
            log_err = math.log(C_BE2) + base + log_max_theta + math.log(A) - 1.5 * math.log(K2) if A > 0 else -math.inf
            out["log_err"] = log_err + math.log1p(QUAD_SLACK)
            out["log_upper"] = np.logaddexp(log_clt + math.log1p(QUAD_SLACK), out["log_err"])
            out["log_lower"] = (log_clt + _nm.log1mexp(min(out["log_err"] - log_clt, 0.0)) - QUAD_SLACK
                                if out["log_err"] < log_clt else -math.inf)
        return out


def _estimate_key(order, variant):
    if variant == "clt":
        return "log_clt"
    return "log_msd1" if order == 1 else "log_msd0"


def _check(order, variant):
    if variant not in VARIANTS:
        raise ParameterError(f"variant must be one of {VARIANTS} for method='spa', got {variant!r}")
    if order not in (0, 1):
        raise ParameterError(f"order must be 0 or 1 for method='spa', got {order!r}")


def _value(res, key):
    """The estimate's log-delta; MSD1 falls back to MSD0 where its correction factor is not positive."""
    v = res[key]
    if math.isnan(v):
        v = res["log_msd0"]
    return v


class _ZeroDelta(Exception):
    """epsilon is at or above the largest value of the composed loss: delta is exactly 0 there."""


def _delta_one(dirn, eps, key):
    try:
        t = dirn.saddle(eps)
    except _ZeroDelta:
        r = {"t": math.nan, "log_err": -math.inf, "log_clt": -math.inf, "corr": 1.0}
        return -math.inf, -math.inf, -math.inf, r
    res = dirn.at(t, eps)
    return _value(res, key), res["log_lower"], res["log_upper"], res


def delta(items, epsilon, order=1, variant="msd"):
    """delta(epsilon) by the SPA (max over add and remove); EstimateArray with certified bounds."""
    _check(order, variant)
    eps = np.atleast_1d(np.asarray(epsilon, float))
    key = _estimate_key(order, variant)
    dirs = [_Direction(items, d) for d in ("remove", "add")]
    val, lo, up, ts, rel = [], [], [], [], []
    for e in eps:
        rs = [_delta_one(d, float(e), key) for d in dirs]
        val.append(math.exp(max(r[0] for r in rs)))
        lo.append(math.exp(max(r[1] for r in rs)))
        up.append(min(1.0, math.exp(max(r[2] for r in rs))))
        ts.append([r[3]["t"] for r in rs])
        top = max(rs, key=lambda r: r[0])[3]
        rel.append(_reliable(top))
    val, moved = clamp_into(np.minimum(np.array(val), 1.0), np.array(lo), np.array(up))
    details = _details(order, variant, None)
    details["saddle_points"] = ts
    details["reliable"] = [bool(r) and not m for r, m in zip(rel, moved)]
    details["clamped"] = moved.tolist()
    return EstimateArray(val, np.array(lo), np.array(up), "spa", True, details)


def _solve_t(dirn, target, fn, bounds, u0=None):
    """log of the tilt t at which fn(at(t)) (a log-delta decreasing in t) equals target, or None when even the
    smallest resolvable epsilon has a log-delta below the target (then epsilon is 0).

    Newton in u = log t with the envelope slope d log(delta)/du ~ -t^2 psi''(t) until the root is bracketed
    (steps capped at a factor 16 in t), then Illinois regula falsi (bisection where a value is not finite).
    ``u0`` warm-starts the search (the bounds start from the estimate's tilt).
    """
    if u0 is None:
        u0 = dirn.model_start(target)
        if u0 is not None and not dirn.finite(math.exp(u0)):
            u0 = None
    u = math.log(dirn.start()) if u0 is None else u0
    lo_u, hi_u = -math.inf, math.inf  # fn > target at lo_u, < target at hi_u
    lo_v, hi_v = math.nan, math.nan
    side = 0  # Illinois bookkeeping: which end was kept last
    prev = None
    stalls, last_v = 0, math.inf
    widths = []
    cap = math.log(16.0)
    for _ in range(200):
        t = math.exp(u)
        if not dirn.finite(t):
            hi_u, hi_v = u, -math.inf
            nu = 0.5 * (u + lo_u) if lo_u > -math.inf else u - cap
        else:
            r = dirn.at(t, want_bounds=bounds)
            v = fn(r) - target
            if v == 0.0 or (math.isfinite(v) and abs(v) <= 1e-10):
                return u
            if v > 0:
                lo_u, lo_v = u, v
                if side == +1:
                    hi_v *= 0.5
                side = +1
            else:
                hi_u, hi_v = u, v
                if side == -1:
                    lo_v *= 0.5
                side = -1
            # slope: secant through the previous point where it is usable, else the envelope estimate
            slope = -t * t * r["p2"]
            if prev is not None and math.isfinite(v) and math.isfinite(prev[1]) and prev[0] != u:
                sec = (v - prev[1]) / (u - prev[0])
                if sec < 0:
                    slope = sec
            prev = (u, v)
            if lo_u > -math.inf and hi_u < math.inf:
                if hi_u - lo_u <= 1e-13 * max(1.0, abs(hi_u)):
                    return hi_u if bounds else u
                nu = u - v / slope if math.isfinite(v) else math.nan
                width = hi_u - lo_u
                widths.append(width)
                if len(widths) >= 4 and width > 0.5 * widths[-4]:
                    nu = 0.5 * (lo_u + hi_u)  # the bracket is not shrinking fast enough: bisect
                    widths.clear()
                elif not (lo_u < nu < hi_u) or stalls >= 2:
                    # Illinois regula falsi (bisection where a value is not finite)
                    if math.isfinite(lo_v) and math.isfinite(hi_v) and hi_v < 0 < lo_v:
                        nu = lo_u + (hi_u - lo_u) * lo_v / (lo_v - hi_v)
                        if not (lo_u < nu < hi_u):
                            nu = 0.5 * (lo_u + hi_u)
                    else:
                        nu = 0.5 * (lo_u + hi_u)
                    stalls = 0
                elif abs(v) > 0.5 * abs(last_v):
                    stalls += 1
                last_v = v
            else:
                # one side unknown: a Newton step, capped at a factor 16 in t
                nu = u - v / slope if math.isfinite(v) and slope < 0 else math.nan
                if not math.isfinite(nu):
                    nu = u + cap if v > 0 else u - cap
                nu = min(max(nu, u - cap), u + cap)
                if v > 0:
                    nu = max(nu, u + 1e-3)
                else:
                    nu = min(nu, u - 1e-3)
        if nu > math.log(T_MAX):
            raise NumericalLimitError(
                f"delta = {math.exp(target):.3g} is not reached before the end of the CGF's domain (t = "
                f"{math.exp(u):.3g}); the SPA cannot resolve it for this composition")
        if hi_u < math.log(T_MIN):
            return None  # delta is below the target already at the smallest tilt: epsilon is 0
        if nu < math.log(T_MIN):
            nu = math.log(T_MIN) if hi_u > math.log(T_MIN) else nu
            if lo_u == -math.inf and u <= math.log(T_MIN) * (1 - 1e-12):
                return None
        u = nu
    raise NumericalLimitError("the saddle-point search did not converge (report this as a bug)")


def at_zero(dirn, fn, target, bounds):
    """True when the curve fn is already <= target at epsilon = 0 (then epsilon is 0 for this direction).

    Needed near delta = 1: the approximations can stay below the target at every tilt (MSD1 peaks below 1),
    so a root search in t would find no crossing.
    """
    if dirn._t_zero is None:
        try:
            dirn._t_zero = dirn.saddle(0.0)
        except _ZeroDelta:
            dirn._t_zero = math.nan
    t0 = dirn._t_zero
    return math.isnan(t0) or fn(dirn.at(t0, 0.0, want_bounds=bounds)) <= target


def epsilon(items, delta_, order=1, variant="msd"):
    """epsilon(delta) by the SPA (max over add and remove), with certified lower and upper bounds."""
    _check(order, variant)
    d = check_finite_real("delta", delta_, low=0.0, high=1.0)
    target = math.log(d)
    key = _estimate_key(order, variant)
    dirs = [_Direction(items, dr) for dr in ("remove", "add")]

    warm = {}

    def solve(fn, bounds, side):
        best = 0.0
        where = None
        for dirn in dirs:
            if at_zero(dirn, fn, target, bounds):
                continue
            u = _solve_t(dirn, target, fn, bounds, warm.get(dirn.direction))
            if u is not None and not bounds:
                warm[dirn.direction] = u
            if u is None:
                continue
            t = math.exp(u)
            # certify the root: the upper bound must be <= delta at the returned epsilon (step t up), the lower
            # bound >= delta (step t down); epsilon is increasing in t
            for i in range(60):
                v = fn(dirn.at(t, want_bounds=bounds))
                if side == 0 or (side > 0 and v <= target) or (side < 0 and v >= target):
                    break
                t *= (1.0 + 1e-12 * 2 ** i) if side > 0 else 1.0 / (1.0 + 1e-12 * 2 ** i)
            e = dirn.eps_of(t)
            if where is None or e > best:
                best, where = e, (dirn, t)
        return max(best, 0.0), where

    val, where = solve(lambda r: _value(r, key), False, 0)
    up, _ = solve(lambda r: r["log_upper"], True, +1)
    lo, _ = solve(lambda r: r["log_lower"], True, -1)
    details = _details(order, variant, where[0].at(where[1]) if where else None)
    val, moved = clamp_into(val, lo, up)
    if moved or (where is None and up > 0):
        # outside its own certified interval, or 0 only because the approximation never reaches delta
        details.update(reliable=False, clamped=moved)
    return Estimate(val, lo, up, "spa", True, details)


RELIABLE_CORRECTION = 0.05


def _reliable(res):
    """The size of the next-order (Daniels) term decides whether the expansion is in its regime."""
    return bool(abs(res["corr"] - 1.0) <= RELIABLE_CORRECTION)


def _details(order, variant, res):
    """What the estimate rests on, and whether the regime suits it.

    ``reliable`` is true when the MSD1 correction factor is within 5% of 1, i.e. the expansion's next term
    is small.  Where it is not (e.g. DP-SGD with about one expected sampled step per individual, so the
    tilted sum is far from Gaussian) the estimate may be far off; the certified bounds hold regardless.
    ``relative_error_bound`` is Theorem 5's Berry-Esseen error over the SP-CLT value (conservative).
    """
    out = {"order": order, "variant": variant, "C_BE": C_BE2 / 2,
           "note": "bounds: Theorem 5 of Alghamdi et al. (Berry-Esseen on the tilted sum)"}
    if res is not None:
        rel = math.exp(res["log_err"] - res["log_clt"]) if res["log_clt"] > -math.inf else math.inf
        out.update({"saddle_point": res["t"], "relative_error_bound": rel, "reliable": _reliable(res),
                    "msd1_correction": res["corr"]})
    return out
