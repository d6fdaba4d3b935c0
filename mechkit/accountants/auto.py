"""``method="auto"``: a certified answer from the fastest accountant that gives one within the requested budget.

For epsilon(delta): the saddle-point accountant first (milliseconds, no grid); its answer is kept where its
certified interval is at most ``2 eps_error`` wide (the FFT's own width), else the FFT composer answers.  The
saddle point is not tried where its interval is sure to be wider: the width of Theorem 5's interval in epsilon is
about c R, R = sum_i k_i E|L_i - E L_i|^3 / sum_i k_i Var L_i the composition's ratio of absolute third moment to
variance (Berry-Esseen's, at the saddle point; k-independent for one mechanism), with c >= 2.2 measured over
sigma 0.5-5 x q 1e-3-1 x k 1e2-1e6 for the subsampled Gaussian and c >= 1.66 over Laplace, randomized response, the
discrete Gaussian, zCDP and their subsampled forms at k 10-1e4 (pure-DP mechanisms composed a few times aside:
``TOP_MARGIN``).  R at t = 0 is one quadrature a mechanism; where it is above ``SKIP_RATIO`` eps_error in both
directions the interval is predicted at least 6.6 eps_error wide (a margin of 3.3 over the 2 eps_error kept) and
the FFT answers at once: on a fresh machine that spares the saddle point's compilation, ~5 s
(docs/performance.md).  Where the FFT cannot (a grid above ``memory_limit``, a delta below its floating-point floor)
the saddle point's certified interval is returned, wider than asked, and says so.  delta(epsilon) goes to the
FFT, and to the saddle point where the FFT cannot answer.  ``est.details["auto"]`` says what ran and why.
"""
from __future__ import annotations

import math

from ..errors import MechkitError, ParameterError, check_finite_real
from ..relations import DIRECTIONS
from . import fft

SKIP_RATIO = 4.0  # the saddle point is skipped where R (module docstring) > SKIP_RATIO * eps_error in both directions
TOP_MARGIN = 1e-6  # ... and no composed point mass at the largest loss above TOP_MARGIN * delta


def spa_ruled_out(items, delta_, eps_error):
    """Whether the saddle point's certified interval is predicted wider than ``2 eps_error`` by a margin (module
    docstring): R at t = 0 above ``SKIP_RATIO`` eps_error in both directions, and no direction whose composed loss
    has a point mass at its largest value above ``TOP_MARGIN`` delta (there the saddle point answers from that mass,
    narrowly: Laplace or randomized response composed a few times).  False where R is not finite or a moment cannot
    be computed (the saddle point is then tried, as before).  One quadrature pass a mechanism gives the central
    moments m2, m4, and m2^1.5 <= E|L - EL|^3 <= sqrt(m2 m4) bracket R; the absolute moment's own pass is made only
    where the bracket straddles the threshold."""
    threshold = SKIP_RATIO * eps_error
    for d in DIRECTIONS:
        laws, top_logp = [], 0.0
        try:
            for m, c in items:
                z = m.plrv(d)
                z = z.finite_part() if z.inf_mass > 0 else z
                v = z.cgf_vector(0.0, 4)
                laws.append((z, c, float(v[2]), float(v[4] + 3.0 * v[2] * v[2])))
                top_logp += c * _top_log_mass(z)
            den = sum(c * m2 for _, c, m2, _ in laws)
            if not (den > 0.0 and math.isfinite(den)) or top_logp > math.log(TOP_MARGIN * delta_):
                return False
            if sum(c * math.sqrt(max(m2 * m4, 0.0)) for _, c, m2, m4 in laws) / den <= threshold:
                return False  # R is at most this: the saddle point may answer
            if sum(c * max(m2, 0.0) ** 1.5 for _, c, m2, _ in laws) / den > threshold:
                continue  # R is at least this: ruled out in this direction
            num = sum(c * z.tilted_abs3(0.0) for z, c, _, _ in laws)
        except MechkitError:
            return False
        if not (math.isfinite(num) and num / den > threshold):
            return False
    return True


def _top_log_mass(z):
    """log P(Z = its largest value) where that value is finite and carries a point mass, else -inf."""
    if not (z.has_atoms and math.isfinite(z.support[1])):
        return -math.inf
    vals, probs = z.atoms()
    return math.log(probs[-1]) if vals.size and vals[-1] == z.support[1] and probs[-1] > 0 else -math.inf


def epsilon(items, delta_, eps_error=fft.DEFAULT_EPS_ERROR, delta_error=None, memory_limit=fft.DEFAULT_MEMORY_LIMIT):
    """Smallest epsilon with delta(epsilon) <= delta_ (an ``Estimate``, certified): module docstring."""
    d = check_finite_real("delta", delta_, low=0.0, high=1.0)  # the budgets are checked before either method runs
    de = d / 1000.0 if delta_error is None else delta_error
    fft.check_budgets(eps_error, de, memory_limit)
    if not de < d:
        raise ParameterError(f"delta_error must be below delta = {d:g}, got {de:g}")
    def saddle_point():
        from .spa import accountant as spa  # imported on use: its formulas compile on a fresh machine (~0.7 s, once)
        try:
            return spa.epsilon(items, delta_), None
        except MechkitError as exc:
            return None, exc

    fft.compile_meanwhile(items)  # a cold engine's wait for its second process (spa_ruled_out's moments) is not idle
    skipped = spa_ruled_out(items, d, eps_error)
    if skipped:
        first, why = None, (f"the saddle point's certified interval is predicted wider than 2 eps_error (third "
                            f"absolute moment / variance above {SKIP_RATIO:g} eps_error), not tried")
    else:
        first, exc = saddle_point()
        if first is None:
            why = f"spa could not answer ({exc})"
        else:
            width = first.upper - first.lower
            if first.certified and width <= 2.0 * eps_error:
                first.details["auto"] = f"spa: its certified interval ({width:.3g} wide) is within 2 eps_error"
                return first
            why = f"spa's certified interval is {width:.3g} wide, above 2 eps_error = {2 * eps_error:g}"
    try:
        est = fft.epsilon(items, delta_, eps_error, delta_error, memory_limit)
    except MechkitError as exc:
        if skipped:
            first, _ = saddle_point()
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
        from .spa import accountant as spa
        est = spa.delta(items, epsilon)
        est.details["auto"] = f"spa: the fft could not answer ({exc})"
        return est
    est.details["auto"] = "fft"
    return est
