"""The saddle-point approximations and Theorem 5's certified bounds at one tilt, in log space (notes.md 3.3):
SP-MSD0, SP-MSD1, SP-CLT and the Berry-Esseen error term from a direction's CGF values; the regime flag and
the details an estimate reports.
"""
from __future__ import annotations

import math

from ...engine import scalars as _sc
from ...errors import NumericalLimitError, ParameterError
from . import compiled as _sb

C_BE2 = 1.12  # 2 * C_BE, Shevtsova's constant for non-identical summands (the authors' code)


LOG_2PI = math.log(2.0 * math.pi)


T_MIN, T_MAX = 1e-9, 1e7


#: relative allowance for the quadrature behind the CGF values (about 1e-13) in the certified bounds
QUAD_SLACK = 1e-9


VARIANTS = ("msd", "clt")


#: log(e^{x^2/2} Q(x)), the log scaled Mills ratio (compiled: cheap scalar calls from Python)
_log_psi = _sb.log_mills


def exp_or_inf(x):
    """e^x, inf where that overflows (math.exp raises)."""
    return math.exp(x) if x < 709.0 else math.inf


def psi2(t, K2):
    """psi''(t) = K''(t) + 1/t^2 + 1/(1+t)^2, the slope of eps_of(t) = K'(t) - 1/t - 1/(1+t)."""
    return K2 + 1.0 / t ** 2 + 1.0 / (1.0 + t) ** 2


def evaluate(t, vec, eps, A=None, n=0.0):
    """The SPA's approximations of log delta(eps) at tilt t from [K..K''''] (and the certified bounds from A, an
    upper bound on the tilted absolute third moments, when given: Theorem 5 holds at every tilt)."""
    K, K1, K2, K3, K4 = vec
    p2 = psi2(t, K2)
    if not (p2 > 0.0 and math.isfinite(p2) and math.isfinite(K)):
        # K'' of a law is positive: a negative or non-finite value is the quadrature's cancellation at an extreme
        # tilt (e.g. sampling rate 1e-6, tilt 5e4), where no expansion can be trusted
        raise NumericalLimitError(f"the saddle-point expansion breaks down at tilt {t:.3g} (K''(t) = {K2:.3g}, not a "
                                  "positive number): use method='fft'")
    p3 = K3 - 2.0 / t ** 3 - 2.0 / (1.0 + t) ** 3
    p4 = K4 + 6.0 / t ** 4 + 6.0 / (1.0 + t) ** 4
    log_msd0 = K - eps * t - math.log(t) - math.log1p(t) - 0.5 * (LOG_2PI + math.log(p2))
    a, b = p4 / (8.0 * p2 * p2), 5.0 * (p3 * p3) / (24.0 * p2 * p2 * p2)
    corr = 1.0 + a - b  # (inf, not an error, on overflow)
    log_msd1 = log_msd0 + math.log(corr) if corr > 0 else math.nan
    out = _Result(t=t, eps=eps, p2=p2, p3=p3, p4=p4, log_msd0=log_msd0, log_msd1=log_msd1, corr=corr,
                  terms=abs(a) + b)
    out.clt_args = (K, K1, K2)
    if A is not None:
        # n: the composition's number of mechanisms, for the rounding allowance of the bounds
        out.update(_log_bounds(t, K, K2, A, eps, out["log_clt"], rounding_slack(t, vec, n)))
    return out


class _Result(dict):
    """``evaluate``'s answers; SP-CLT ("log_clt", two erfc evaluations) is computed when first looked up (the
    model searches of MSD0 and MSD1 do not need it)."""
    __slots__ = ("clt_args",)

    def __missing__(self, key):
        if key != "log_clt":
            raise KeyError(key)
        v = self["log_clt"] = _log_clt(self["t"], *self.clt_args, self["eps"])
        return v


def _log_clt(t, K, K1, K2, eps):
    """log of SP-CLT (eq. 79) at tilt t."""
    return _clt_terms(t, K, K1, math.sqrt(K2), eps)[0]


#: (log SP-CLT, g, a, b, log Psi(b) - log Psi(a)) at tilt t, s = sqrt(K''): the value and what its slope in epsilon
#: needs; the point-mass limit where K'' is 0 (``_numerics.clt_terms``, also the bounds' own)
_clt_terms = _sb.clt_terms


LOG_SLACK = math.log1p(QUAD_SLACK)


#: units in the last place allowed for each mechanism's CGF value at a tilt, in the rounding allowance of the bounds
CGF_ULPS = 64.0
_U = 2.0 ** -53


def rounding_slack(t, vec, n):
    """An allowance on log delta for the rounding of the composed CGF at tilt t: each of the n mechanisms' K_i(t)
    is accurate to CGF_ULPS ulps of 1 + K_i(t) (closed forms lose relative precision where K_i is tiny: log of
    M = 1 + x), and K - t eps is formed from terms of size K and t K'.  K_i(t) >= t E[L_i] >= 0 for t >= 0, so the
    sum of the |K_i| is K itself.  Relative to K it is about 1e-14; it matters where K and t eps are large and t is
    small (the Gaussian at k = 1e12: K = 2.2e6 at t = 4.5e-6, an error of 1.3e-4 in log delta, 30 in epsilon)."""
    return CGF_ULPS * _U * (n + abs(vec[0]) + t * abs(vec[1]))


def log_err0(t, K, K2, A, slack=0.0):
    """log of Theorem 5's error term at tilt t for epsilon = 0, with the quadrature and rounding allowances (the
    term is e^(-t eps) times it)."""
    if not K2 > 0.0:
        return math.inf  # a (numerically) degenerate tilted law: Berry-Esseen says nothing here
    if not A > 0:
        return -math.inf
    return math.log(C_BE2) + K + log_max_theta(t) + math.log(A) - 1.5 * math.log(K2) + LOG_SLACK + slack


def log_max_theta(t):
    """log max_y e^(-t y) (1 - e^(-y)) = log t^t / (1+t)^(1+t) (Theorem 5's and Chernoff's factor)."""
    return t * math.log(t) - (1.0 + t) * math.log1p(t)


def _log_upper(log_clt, log_err, slack=0.0):
    """log(SP-CLT + error), with the quadrature and rounding allowances."""
    a = log_clt + (LOG_SLACK + slack)  # grouped as the compiled bound_value adds them
    hi = max(a, log_err)
    return hi if hi == -math.inf else hi + math.log1p(math.exp(min(a, log_err) - hi))


def _log_lower(log_clt, log_err, slack=0.0):
    """log(SP-CLT - error), with the quadrature and rounding allowances (-inf where the error is the larger)."""
    if not log_err < log_clt:
        return -math.inf
    return log_clt + _sc.log1mexp(min(log_err - log_clt, 0.0)) - (QUAD_SLACK + slack)


def _log_bounds(t, K, K2, A, eps, log_clt, slack=0.0):
    """Theorem 5 at tilt t: the log of its error term, and of SP-CLT -/+ it (with the quadrature allowance and the
    rounding allowance ``slack``)."""
    log_err = log_err0(t, K, K2, A, slack) - t * eps
    return {"log_err": log_err, "log_upper": _log_upper(log_clt, log_err, slack),
            "log_lower": _log_lower(log_clt, log_err, slack)}


def estimate_key(order, variant):
    if variant == "clt":
        return "log_clt"
    return "log_msd1" if order == 1 else "log_msd0"


def check_options(order, variant):
    if variant not in VARIANTS:
        raise ParameterError(f"variant must be one of {VARIANTS} for method='spa', got {variant!r}")
    if order not in (0, 1):
        raise ParameterError(f"order must be 0 or 1 for method='spa', got {order!r}")


def modelled_value(key):
    """fn(r) for _solve_t: the estimate's log-delta at r."""
    def fn(r):
        return estimate_log_delta(r, key)
    fn.key = key
    return fn


def estimate_log_delta(res, key):
    """The estimate's log-delta; MSD1 falls back to MSD0 where its correction factor is not positive."""
    v = res[key]
    if math.isnan(v):
        v = res["log_msd0"]
    return v


class ZeroDelta(Exception):
    """epsilon is at or above the largest value of the composed loss: delta is exactly 0 there."""


#: ``reliable``: the MSD1 correction factor within this of 1 (0.05 until the twenty-eighth session: over 31,740
#: random DP-SGD queries, 143 of the 19,727 then reliable were off by more than 1e-3 in epsilon, up to 4.2e-3, with
#: factors 1.02-1.05; within 0.015, 18,257 reliable and at most 7.2e-4 off: docs/performance.md, "SPA reliable")
RELIABLE_CORRECTION = 0.015
#: and the bound on each of its two parts: measured on subsampled Gaussians (docs/performance.md, "SPA reliable"),
#: parts up to 0.09 came with estimates within 1e-5 of the truth, the cancelling 0.27 + 1.41 with one 1.6% off
RELIABLE_TERMS = 0.2
#: and the saddle point's tilt at most this: beyond it (DP-SGD with about one expected sampled step or fewer, a
#: small epsilon: t = 173-1510) estimates were 2-12% off with small correction terms (benchmarks/spa.py, table 4;
#: tests/accountants/test_spa.py), where tilts up to 58 gave estimates within 5e-5
RELIABLE_MAX_TILT = 100.0


def reliable(res):
    """The next-order (Daniels) term decides whether the expansion is in its regime: its size, and each of its two
    parts, the standardised fourth cumulant's and the squared third's (they can cancel: subsampled Gaussian sigma 1,
    q 0.01, k 1000 has a correction factor 0.983 from parts 0.27 and 1.41, and an estimate 1.6% low in epsilon,
    20% in delta)."""
    return bool(abs(res["corr"] - 1.0) <= RELIABLE_CORRECTION and res["terms"] <= RELIABLE_TERMS
                and res["t"] <= RELIABLE_MAX_TILT)


#: ``second_term_reliable``: the expansion's next term (``second_term``, a relative change of delta) at most this
#: times t epsilon, the relative change of epsilon it makes (d log delta / d epsilon = -t).  Random mixtures of few
#: runs (logistic x 10, subsampled Gaussian x 50 with two single runs) had MSD1 1.1-2.3e-3 off in epsilon with a
#: Daniels term of 1e-4-4e-3 and a next term of 3-10e-3 that predicted the error to ~20%; DP-SGD at sigma 0.8,
#: q 0.01, k 1e4 has 3.5e-4 at t epsilon = 19 (docs/performance.md, "SPA reliable", twenty-ninth session)
RELIABLE_SECOND = 5e-4


def second_term(res, k5, k6):
    """The O(1/n^2) term of the steepest-descent expansion behind SP-MSD1 (Laplace's method on
    psi(t) = K(t) - t eps - log t - log(1 + t) along the vertical line through the saddle point; SP-MSD1 keeps the
    O(1/n) term ``corr`` - 1): -l6/48 + 35 l4^2/384 + 7 l3 l5/48 - 35 l3^2 l4/64 + 385 l3^4/1152 with
    l_r = psi^(r)/psi''^(r/2), from K^(5), K^(6) at the saddle point."""
    t, p2 = res["t"], res["p2"]
    p5 = k5 - 24.0 / t ** 5 - 24.0 / (1.0 + t) ** 5
    p6 = k6 + 120.0 / t ** 6 + 120.0 / (1.0 + t) ** 6
    l3, l4 = res["p3"] / p2 ** 1.5, res["p4"] / p2 ** 2
    l5, l6 = p5 / p2 ** 2.5, p6 / p2 ** 3
    l3s = l3 * l3
    return (-l6 / 48.0 + 35.0 * l4 * l4 / 384.0 + 7.0 * l3 * l5 / 48.0 - 35.0 * l3s * l4 / 64.0
            + 385.0 * l3s * l3s / 1152.0)


def second_term_reliable(res, k5, k6):
    """True where the expansion's next term (``second_term``) moves epsilon by at most RELIABLE_SECOND relative."""
    return bool(abs(second_term(res, k5, k6)) <= RELIABLE_SECOND * res["t"] * res["eps"])


def result_details(order, variant, res, rel=None):
    """What the estimate rests on, and whether the regime suits it.

    ``reliable`` is true when the MSD1 correction factor is within 1.5% of 1 and each of its two parts within 0.2,
    i.e. the expansion's next term is small, at a saddle point t <= 100 (the accountant then applies
    ``accountant.out_of_regime`` too: lattices, few effective runs, the O(1/n^2) term).  Where it is not (e.g.
    DP-SGD with about one expected sampled step per individual, so the tilted sum is far from Gaussian) the estimate
    may be far off; the certified bounds hold regardless.
    ``relative_error_bound`` (epsilon queries) is Theorem 5's Berry-Esseen error over the SP-CLT value at the
    upper bound's tilt (conservative).
    """
    out = {"order": order, "variant": variant, "C_BE": C_BE2 / 2,
           "note": "bounds: Theorem 5 of Alghamdi et al. (Berry-Esseen on the tilted sum)"}
    if res is not None:
        out.update({"saddle_point": res["t"], "reliable": reliable(res), "msd1_correction": res["corr"]})
    if rel is not None:
        out["relative_error_bound"] = rel
    return out
