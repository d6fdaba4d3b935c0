"""Selection mechanisms: what the catalog pairs of the exponential mechanism and of permute-and-flip guarantee, and the
closed forms of the generalized randomized response pairs that bound an epsilon-bounded-range mechanism.

**Bounded range.**  A mechanism is epsilon-bounded-range (epsilon-BR; Durfee, Rogers 2019; Dong, Durfee, Rogers 2020,
"DDR") if for every pair of neighbouring datasets its privacy loss L = log P(y)/Q(y) lies in [t - epsilon, t] for some
t, which is then in [0, epsilon] (L takes both signs).  The exponential mechanism with parameter epsilon (candidate r
with probability proportional to exp(epsilon u(x, r) / (2 Delta))) is epsilon-BR (DDR, Proposition 2, as OpenDP's
proofs cite it; the differentialprivacy.org note "The Exponential Mechanism and Bounded Range Privacy", Lemma 3).

**Generalized randomized response** RR(epsilon, t): two outputs with losses t and t - epsilon, P-masses
p_t = (e^epsilon - e^t) / (e^epsilon - 1) and 1 - p_t (so that Q sums to 1).  Every pair whose loss lies in
[t - epsilon, t] is dominated by RR(epsilon, t) (DDR Section 4: E_Q[(Y - e^eps)_+] is convex in the likelihood ratio
Y in [e^(t - epsilon), e^t] with E_Q[Y] = 1, so the two-point law on the ends is the worst).  The one-run curve of
the epsilon-BR class is therefore sup_t delta_RR(epsilon, t)(eps): the maximiser is t = (epsilon + eps) / 2 and

    delta(eps) = (e^(epsilon/2) - e^(eps/2))^2 / (e^epsilon - 1)   for |eps| <= epsilon,

1 - e^eps below -epsilon and 0 above epsilon.  It is the hockey-stick curve of one pair: the law of L with density
e^((epsilon + l)/2) / (2 (e^epsilon - 1)) on [-epsilon, epsilon] under P (the catalog's ``exponential_mechanism``
family), which thus dominates every epsilon-BR pair (the tightly dominating pair of the class, Zhu, Dong, Wang 2022
Proposition 8) and composes adaptively with anything (ibid., Theorem 10).  Being the least pair that dominates every
RR(epsilon, t), it cannot be improved as a pair; but its k-fold composition is not the k-fold optimum, since the worst t
depends on the epsilon asked for.

**Compositions** (``nonadaptive_delta``): for k runs fixed in advance the worst case is RR(epsilon, t)^k with one common
t (DDR Section 5, the homogeneous non-adaptive optimum; checked here by a grid over (t_1, ..., t_k) for k = 2, 3), and
with l the number of low outcomes kept by the hockey stick the optimum over t of each partial sum is at
t_l = (eps + (l + 1) epsilon) / (k + 1) (its derivative in s = e^t is a positive factor times
e^(eps + (l + 1) epsilon) s^-(k + 1) - 1), so the non-adaptive optimum is max_l delta_RR(epsilon, t_l)^k(eps).  Runs
chosen adaptively can do worse (DDR's "cost of adaptivity"): there the non-adaptive optimum is a lower bound only
(attained), and upper bounds come from the pair above or from the Renyi divergences ``bounded_range_rdp`` (the supremum
over t of RR(epsilon, t)'s, attained at a closed-form t; it is at most alpha epsilon^2 / 8, Cesar, Rogers 2021).
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from ..errors import ParameterError, check_finite_real
from .family import Mechanism

#: what each catalog selection mechanism's pair guarantees (shown by ``SelectionMechanism.guarantee``)
GUARANTEES = {
    "exponential_mechanism": (
        "epsilon-bounded-range (the exponential mechanism, any utility of sensitivity Delta): one run is tight (the "
        "supremum over all utility functions, attained by two candidates); a composition is a valid upper bound "
        "(the pair dominates every epsilon-BR pair, so it composes adaptively with any mechanism), not tight, and "
        "an accountant's lower bound is then the pair's, not the mechanism's: mk.BoundedRange() brackets "
        "compositions of exponential mechanisms (non-adaptive optimum, attained, to a valid upper bound)"),
    "permute_and_flip": (
        "epsilon-DP (McKenna, Sheldon 2020, Theorem 1): randomized response at epsilon dominates every epsilon-DP "
        "pair, so one run and every composition are a valid upper bound; not known to be tight for permute-and-flip "
        "(its worst case found by search is below randomized response's, e.g. delta(0) = 1 - e^(-epsilon/2))"),
}
_SHORT = {"exponential_mechanism": "epsilon-BR: one run tight, composed a valid upper bound",
          "permute_and_flip": "epsilon-DP: a valid upper bound"}


class SelectionMechanism(Mechanism):
    """A catalog selection mechanism (``mk.exponential_mechanism``, ``mk.permute_and_flip``): a ``Mechanism`` whose
    repr and ``guarantee`` say what its pair guarantees.

    Parameters
    ----------
    family : the catalog family.
    values : parameter name -> value.
    theta : the kernels' parameter vector (default: computed from ``values``).
    """

    @property
    def pair_tightness(self) -> str:
        """Where the pair's answers are the mechanism's own (``Composition`` reads it: elsewhere an accountant's lower
        bound is set to 0): "one run" (the exponential mechanism, tight alone) or "never" (permute-and-flip)."""
        return "one run" if self.family.name == "exponential_mechanism" else "never"

    @property
    def guarantee(self) -> str:
        """Which guarantee the answers carry: tight (the mechanism's own worst case) or a valid upper bound."""
        return GUARANTEES.get(self.family.name, "")

    def __repr__(self):
        rel = "" if self.relation == "add_remove" else f"{self.relation}; "
        return f"<Mechanism {self.name} ({rel}{_SHORT.get(self.family.name, '')})>"


def bounded_range_epsilon(mechanism: object) -> float | None:
    """The epsilon of an exponential mechanism: ``mechanism``'s parameter where it is the catalog's
    ``exponential_mechanism`` pair (under any relation, ``mk.with_relation``), else None.

    Parameters
    ----------
    mechanism : anything a composition holds.

    Returns
    -------
    epsilon, or None.
    """
    from .catalog import catalog
    from .family import Family

    fam = getattr(mechanism, "family", None)
    if not isinstance(fam, Family) or fam.name != "exponential_mechanism":
        return None
    ref = catalog("exponential_mechanism").family
    if fam is not ref and not (fam.p == ref.p and fam.q == ref.q and fam.var == ref.var):
        return None
    return float(mechanism.params["epsilon"])


def _log_expm1(x):
    """log(e^x - 1) for x > 0, without overflow."""
    return x + math.log(-math.expm1(-x)) if x > 1.0 else math.log(math.expm1(x))


def grr_log_masses(epsilon: float, t: float) -> tuple[float, float]:
    """log P of the two outputs of RR(epsilon, t): the one with loss t and the one with loss t - epsilon.

    Parameters
    ----------
    epsilon : the bounded-range parameter, > 0.
    t : in [0, epsilon].

    Returns
    -------
    (log p_t, log(1 - p_t)), p_t = (e^epsilon - e^t) / (e^epsilon - 1); -inf for a zero mass (t = epsilon or 0).

    Raises
    ------
    ParameterError : epsilon not positive or t outside [0, epsilon].
    """
    e = check_finite_real("epsilon", epsilon, low=0.0)
    t = check_finite_real("t", t, low=0.0, high=e, low_open=False, high_open=False)
    lhi = -math.inf if t >= e else math.log(-math.expm1(t - e)) - math.log(-math.expm1(-e))
    llo = -math.inf if t <= 0.0 else _log_expm1(t) - _log_expm1(e)
    return lhi, llo


def _log_weights(k, llo, lhi, i):
    """log P(I = i), I ~ Binomial(k, e^llo) the number of low outputs in k runs."""
    return gammaln(k + 1.0) - gammaln(i + 1.0) - gammaln(k - i + 1.0) + (k - i) * lhi + i * llo


def _log_delta_many(epsilon, k, ts, eps):
    """log delta(eps) of RR(epsilon, t)^k for every t of ``ts`` (a 1-D array in [0, epsilon]): for each t the sum over
    the outputs i with loss k t - i epsilon > eps of P(I = i) (1 - e^(eps - loss)), in log space, over a window of i
    around the largest weight in reach, grown until its edges are below e^-60 of it (the weights are log-concave in i,
    so the rest are smaller still: a relative error below k e^-60)."""
    ts = np.asarray(ts, dtype=float)
    out = np.full(ts.size, -np.inf)
    one = (ts <= 0.0) | (ts >= epsilon)  # one output: P = Q
    if eps < 0.0:
        out[one] = math.log(-math.expm1(eps))
    rows = max(1, int(4e6 // (22.0 * math.sqrt(k / 4.0) + 81.0)))  # rows x window within a few million cells
    for start in range(0, ts.size, rows):
        sel = np.flatnonzero(~one[start:start + rows]) + start
        if sel.size:
            out[sel] = _log_delta_rows(epsilon, k, ts[sel], eps)
    return out


def _log_delta_rows(epsilon, k, t, eps):
    with np.errstate(divide="ignore"):
        lhi = np.log(-np.expm1(t - epsilon)) - math.log(-math.expm1(-epsilon))
        llo = np.log(np.expm1(t)) - _log_expm1(epsilon)
    top = np.ceil((k * t - eps) / epsilon) - 1.0  # the last i with k t - i epsilon > eps, after rounding fixes
    top = np.where(k * t - (top + 1.0) * epsilon > eps, top + 1.0, top)
    top = np.where(k * t - top * epsilon > eps, top, top - 1.0)
    top = np.minimum(top, float(k))
    p = np.exp(llo)
    centre = np.minimum(np.clip(np.floor((k + 1.0) * p), 0.0, float(k)), top)
    half = int(11.0 * math.sqrt(float(np.max(k * p * (1.0 - p)))) + 40)
    while True:
        i = centre[:, None] + np.arange(-half, half + 1, dtype=float)[None, :]
        valid = (i >= 0.0) & (i <= top[:, None])
        ic = np.clip(i, 0.0, float(k))
        lw = gammaln(k + 1.0) - gammaln(ic + 1.0) - gammaln(k - ic + 1.0) + (k - ic) * lhi[:, None] + ic * llo[:, None]
        lw = np.where(valid, lw, -np.inf)
        peak = lw.max(axis=1)
        low_edge = (i[:, 0] <= 0.0) | (lw[:, 0] < peak - 60.0)
        high_edge = (i[:, -1] >= top) | (lw[:, -1] < peak - 60.0)
        if np.all(low_edge | (top < 0)) and np.all(high_edge | (top < 0)):
            break
        half *= 2
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = k * t[:, None] - ic * epsilon - eps
        terms = np.where(valid, lw + np.log(-np.expm1(-np.maximum(gap, 0.0))), -np.inf)
        m = terms.max(axis=1)
        res = m + np.log(np.sum(np.exp(terms - np.where(np.isfinite(m), m, 0.0)[:, None]), axis=1))
    return np.where(top < 0, -np.inf, res)


def grr_composed_delta(epsilon: float, count: int, t: float, eps: float) -> float:
    """delta(eps) of RR(epsilon, t) composed ``count`` times, exactly (a binomial sum of positive terms).

    Parameters
    ----------
    epsilon : the bounded-range parameter, > 0.
    count : the number of runs, >= 1.
    t : in [0, epsilon].
    eps : any real epsilon.

    Returns
    -------
    sum over i of P(I = i) (1 - e^(eps - k t + i epsilon))_+, I ~ Binomial(k, 1 - p_t).

    Raises
    ------
    ParameterError : arguments out of range.
    """
    grr_log_masses(epsilon, t)  # checks
    eps = check_finite_real("eps", eps)
    return float(np.exp(_log_delta_many(float(epsilon), _count(count, 2 ** 53), np.array([float(t)]), eps)[0]))


def grr_composed_epsilon(epsilon: float, count: int, t: float, delta: float) -> float:
    """The smallest eps >= 0 with delta(eps) <= ``delta`` for RR(epsilon, t) composed ``count`` times, exactly (the
    curve is A_j - e^eps B_j between consecutive losses, A and B prefix sums).

    Parameters
    ----------
    epsilon : the bounded-range parameter, > 0.
    count : the number of runs, >= 1.
    t : in [0, epsilon].
    delta : in (0, 1).

    Returns
    -------
    The epsilon (0 where delta(0) <= delta already).

    Raises
    ------
    ParameterError : arguments out of range.
    """
    lhi, llo = grr_log_masses(epsilon, t)
    d = check_finite_real("delta", delta, low=0.0, high=1.0)
    k = int(count)
    if lhi == -math.inf or llo == -math.inf:
        return 0.0
    i = np.arange(k + 1, dtype=float)
    lw = _log_weights(k, llo, lhi, i)
    loss = k * t - i * epsilon                       # decreasing in i
    log_a = np.logaddexp.accumulate(lw)              # log sum_{i' <= i} P(I = i')
    log_b = np.logaddexp.accumulate(lw - loss)       # log sum_{i' <= i} P(I = i') e^-loss
    # delta at the loss of output j: only outputs i < j lie above it
    at = np.zeros(k + 1)
    at[1:] = np.exp(log_a[:-1]) * -np.expm1(np.minimum(loss[1:] + log_b[:-1] - log_a[:-1], 0.0))
    if grr_composed_delta(epsilon, k, t, 0.0) <= d:
        return 0.0
    j = int(np.searchsorted(at, d, side="right")) - 1   # at[j] <= d < at[j + 1] (at increases with j)
    rest = math.exp(log_a[j]) - d                       # > 0: delta stays below A_j on (loss_(j+1), loss_j]
    x = math.log(rest) - log_b[j] if rest > 0.0 else loss[j]
    return max(float(min(x, loss[j])), 0.0)


#: above this count the non-adaptive optimum is not computed exactly (``nonadaptive_delta``: count windows each)
MAX_EXACT_COUNT = 20_000


def _candidates(epsilon, k, eps):
    """The t_l = (eps + (l + 1) epsilon) / (k + 1) of DDR's homogeneous optimum, clipped to [0, epsilon], distinct."""
    t = np.clip((eps + (np.arange(k + 1) + 1.0) * epsilon) / (k + 1.0), 0.0, epsilon)
    return np.unique(t)


def nonadaptive_delta(epsilon: float, count: int, eps: float) -> tuple[float, float, bool]:
    """The optimal delta(eps) of ``count`` epsilon-BR mechanisms composed non-adaptively (module docstring): the
    maximum over l of RR(epsilon, t_l) composed ``count`` times, each exact.

    Parameters
    ----------
    epsilon : the bounded-range parameter of every run, > 0.
    count : the number of runs, >= 1.
    eps : any real epsilon.

    Returns
    -------
    (delta, t, exact): the optimum and the common t that attains it, exact (every t_l tried) up to
    ``MAX_EXACT_COUNT`` runs; above it the best of a subset of the t_l, refined around the best, a lower bound that a
    composition attains (``exact`` False).

    Raises
    ------
    ParameterError : arguments out of range.
    """
    e = check_finite_real("epsilon", epsilon, low=0.0)
    k = _count(count, 2 ** 53)
    eps = check_finite_real("eps", eps)
    ts = _candidates(e, k, eps)
    exact = k <= MAX_EXACT_COUNT
    if not exact:  # every 1/256 of them, then every one between the best's neighbours
        step = max(1, ts.size // 256)
        j = int(np.argmax(_log_delta_many(e, k, ts[::step], eps)))
        ts = ts[max(0, (j - 1) * step): (j + 1) * step + 1]
    vals = _log_delta_many(e, k, ts, eps)
    j = int(np.argmax(vals))
    return float(np.exp(vals[j])), float(ts[j]), exact


def nonadaptive_epsilon(epsilon: float, count: int, delta: float, certify: bool = True
                        ) -> tuple[float, float | None, float]:
    """The optimal epsilon(delta) of ``count`` epsilon-BR mechanisms composed non-adaptively, as a bracket.

    The lower end is the epsilon of RR(epsilon, t)^count at the best t found (attained): a grid over t, then the
    fixed point eps <- epsilon of RR(epsilon, t(eps))^count, t(eps) the t of ``nonadaptive_delta`` at eps (each step
    is attained and can only raise eps).  Up to ``MAX_EXACT_COUNT`` runs the upper end is checked with the exact
    ``nonadaptive_delta`` (bisection on it where the check fails).

    Parameters
    ----------
    epsilon : the bounded-range parameter of every run, > 0.
    count : the number of runs, >= 1.
    delta : in (0, 1).
    certify : find the upper end (default True); without it only the lower end is computed.

    Returns
    -------
    (lower, upper, t): upper is None above ``MAX_EXACT_COUNT`` runs or without ``certify``; t attains lower.

    Raises
    ------
    ParameterError : arguments out of range.
    """
    e = check_finite_real("epsilon", epsilon, low=0.0)
    k = _count(count, 2 ** 53)
    d = check_finite_real("delta", delta, low=0.0, high=1.0)
    grid = np.linspace(0.0, e, 34)[1:-1]
    lower, t = max((grr_composed_epsilon(e, k, float(x), d), float(x)) for x in grid)
    for _ in range(30):
        t_at = nonadaptive_delta(e, k, lower)[1]
        new = grr_composed_epsilon(e, k, t_at, d)
        if not new > lower * (1.0 + 1e-13):
            break
        lower, t = new, t_at
    if k > MAX_EXACT_COUNT or not certify:
        return lower, None, t
    hi = lower * (1.0 + 1e-9) + 1e-12
    if nonadaptive_delta(e, k, hi)[0] > d:  # not at the optimum yet: bisect on the exact optimum
        lo_, hi_ = hi, k * e  # delta is 0 at k epsilon, the largest loss
        for _ in range(60):
            mid = 0.5 * (lo_ + hi_)
            lo_, hi_ = (mid, hi_) if nonadaptive_delta(e, k, mid)[0] > d else (lo_, mid)
        hi = hi_
    return lower, hi, t


def _count(count, limit):
    if isinstance(count, bool) or not float(count).is_integer() or not 1 <= count <= limit:
        raise ParameterError(f"count must be an integer in [1, {limit}], got {count!r}")
    return int(count)


def bounded_range_rdp(epsilon: float, alpha: float) -> float:
    """The largest Renyi divergence of order alpha over all epsilon-BR pairs: that of RR(epsilon, t*), the supremum
    over t being attained at e^t* = beta (e^epsilon - e^(-beta epsilon)) / ((1 + beta)(1 - e^(-beta epsilon))),
    beta = alpha - 1 (the log of the Renyi moment is concave in e^t).

    Parameters
    ----------
    epsilon : the bounded-range parameter, > 0.
    alpha : the order, > 1.

    Returns
    -------
    The divergence (at most alpha epsilon^2 / 8; both directions alike, the class being closed under swapping P and Q).

    Raises
    ------
    ParameterError : arguments out of range.
    """
    e = check_finite_real("epsilon", epsilon, low=0.0)
    b = check_finite_real("alpha", alpha, low=1.0) - 1.0
    # e^t* = b (e^e - e^(-b e)) / ((1 + b)(1 - e^(-b e))); in logs, without overflow
    log_s = math.log(b) + e + math.log1p(-math.exp(-(1.0 + b) * e)) - math.log1p(b) - math.log(-math.expm1(-b * e))
    t = min(max(log_s, 0.0), e)
    lhi, llo = grr_log_masses(e, t)
    return float(np.logaddexp(lhi + b * t, llo + b * (t - e)) / b)
