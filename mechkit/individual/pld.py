"""Individual PLD accounting for Poisson-subsampled DP-SGD (Koskela, Tobaben, Honkela, Section 5 and Appendix D;
notes.md 4.6-4.7).

**What is accounted.**  DP-SGD step j samples every example with probability q (Poisson), clips the sampled
per-example gradients at C and releases their sum plus N(0, (z C)^2 I).  For example i with gradient norm n_ij the
step is dominated by the pair of Appendix D.3, which is exactly ``mk.subsample(mk.gaussian(sigma_ij), q)`` with the
effective noise ``sigma_ij = z C / min(n_ij, C)`` (>= z; a norm of 0 is no release about i at all).  Example i's
privacy after T steps is that of the heterogeneous composition of its own per-step pairs (Theorem 4 / Cor. 7).

**Buckets (App. D.2).**  Each sigma_ij is rounded *down* to a geometric grid ``sigma_b = z r^b``, b = 0..B-1
(``sigma_ratio`` r, B = 1 + ceil(log(max_sigma_factor) / log r)); sigmas above the last grid point go to the last
bucket.  Less noise is a dominating pair of more noise (data processing, App. D Theorem 2), so the bucketed
composition dominates the example's true one: every bound reported here holds for the example.  What it costs: each
step's sensitivity is overstated by a factor < r (at most r - 1 relative, e.g. 5% for r = 1.05), and a step with
sigma above ``max_sigma_factor * z`` (norm below C / max_sigma_factor) is charged as that sigma.  An example at the
clip bound is in bucket 0, sigma = z: exactly the worst case.  The state is one row of bucket counts per example
(uint16, uint32 after 65535 steps).  A geometric grid bounds the *relative* overstatement of every step uniformly;
the paper's linear grid in sigma (or one in the sensitivity) bounds it only absolutely, which inflates the small
individual epsilons most (measured in ``benchmarks/individual.py``).

**Composition on one grid (fft_grid.py).**  The grid is the FFT composer's (Theorem 5.5 mesh for the largest number of
steps, Remark 5.6 domain for the worst-case composition, which dominates every example's), on a circle of N = 2^p
points; each bucket's pair is discretised once per direction (``fft.discretise``, mean-preserving).  Example i's
composed pmf has the spectrum ``prod_b X_b^(k_ib)``, computed as ``exp(counts @ log X)`` for the distinct rows of
counts only (``buckets.distinct_rows``).  Two reductions make a row cost O(B J) with J ~ 20-500 instead of O(B N):

* *zoom*: a Chernoff bound from the exact cumulant generating functions of the discretised buckets
  (``sum_b k_b Khat_b(t) - t x``) gives a window of cells outside which the row's pmf has mass <= tau on each side;
  the pmf wrapped onto a circle of N / s >= window cells (s a power of 2) has the spectrum ``X(s j)`` (aliasing),
  and differs from the full circle's composition by <= 4 tau;
* *band limit*: the composed spectrum decays like a Gaussian's; frequencies j >= J are dropped when the suffix
  maxima of |X_b| bound what they contribute to any delta by tau.

delta(epsilon) is the Plancherel inner product of App. D Lemma 1 with the hockey-stick weights, whose DFT is a
geometric series in closed form: for each row two small inverse FFTs (of the band-limited spectrum divided by
``1 - zeta^j`` and ``1 - e^-h zeta^j``) give the suffix sums ``A(r) = sum_{r' >= r} p_r'`` and
``B(r) = sum_{r' >= r} e^-(r'-r+1)h p_r'`` at every (N'/N_c)-th cell (N_c >= 8 J), which is the exact discrete curve
there; single cells are evaluated by the same sums directly.  epsilon(delta) is bracketed on that table, its cell
found by interpolation in log delta (safeguarded by bisection) and inverted exactly inside the cell (as
``fft.DiscreteCurve``).  This is three orders of magnitude faster per distinct row than an inverse FFT per row
(the other way App. D allows), with the same epsilons (``benchmarks/individual.py``, docs/performance.md).

**Bounds.**  As ``mk.compose(...).epsilon(delta)``: Theorem 5.5 gives ``delta(eps) <= delta~(eps - eps_error) +
delta_error`` and ``>= delta~(eps + eps_error) - delta_error``; each row adds its own allowance: floating-point
error of the spectra and sums (the first-order model of ``fft_grid._Amplification``, per frequency), the dropped band,
the wrapped tails and the finite mass the discretisation dropped.  ``lower`` bounds the bucketed composition, not
the example (bucketing only ever overstates); ``upper`` is a certified upper bound for the example itself.

**The approximative filter (Section 5).**  ``fitted_mu()``: per example the smallest mu such that the mu-GDP curve
lies above its certified upper curve, (5.1).  It is computed in closed form from the trade-off function: each point
(eps, delta_up) of the upper curve gives the line ``f(a) >= 1 - delta_up - e^eps a`` (and its mirror image), the
lines of the tabulated points bound the trade-off function from below (valid because delta_up bounds the true delta
from above), and mu-GDP's convex ``Phi(Phi^-1(1 - a) - mu)`` lies below such a piecewise-linear function iff it does
at its vertices and where it meets the diagonal: mu = max of ``Phi^-1(1 - a) - Phi^-1(f)`` there.  So the mu-GDP
curve dominates every privacy curve consistent with the bounds, the example's true one included; just above eps = 0
it may lie below the raw upper curve, which there is delta~ shifted by eps_error and not itself a privacy curve.
The check covers eps from 0 to where the upper curve falls to ``fit_delta_min`` (default 1000 delta_error): below
that delta the numerical bounds certify nothing, which is one reason this filter is *approximative* and not a
certified GDP filter; the fit is conservative by about 1% in mu against a pointwise check (its vertices compare at
equal type-I error, not at equal eps), and it is never below about 1.3 eps_error (the bounds' uncertainty in eps:
the certified delta at eps = 0 is at least 1 - e^-eps_error).  With a budget, ``step`` leaves out (for good) every
example whose fitted mu including the step would exceed it.  The paper's argument (Blackwell, then Feldman-Zrnic's
RDP filter, (5.2)-(5.3)) turns "every example stays below B-GDP" into RDP alpha B^2 / 2, so the filter's (epsilon,
delta) guarantee is the RDP conversion of B (``budget_epsilon``), and an (epsilon, delta) budget is converted to B
that way.  To avoid a fit per example per step, a fit also tries rows with s extra worst-case steps (which dominate
any steps), s = 1, s*/2 and 0.95 s*, s* guessed from the fitted mu of k worst-case steps; an example that passes
with s extra steps takes s more steps without a new fit ("headroom").
"""
from __future__ import annotations

import math
import numbers
from concurrent.futures import Executor
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ..accountants import fft as _fft
from ..errors import NumericalLimitError, ParameterError, check_finite_real
from ..estimate import EstimateArray
from ..progress import check_executor, setting, working
from .buckets import UINT16_MAX, Plan, distinct_rows, effective_sigma, evaluate_blocks, n_buckets, plan_for
from .conversions import rdp_cap_for, rdp_epsilon_from_mu
from .state import KINDS, Persistent, check_array, check_delta, check_n

if TYPE_CHECKING:
    from ..laws.family import Mechanism

__all__ = ["IndividualPLDAccountant", "effective_sigma"]


class IndividualPLDAccountant(Persistent):
    """Per-example PLD accounting for DP-SGD with Poisson sampling (module docstring), optionally a filter.

    ``IndividualPLDAccountant(n_examples, sampling_rate, noise_multiplier, clip)``; each ``step(norms)`` takes the
    per-example gradient norms of one step (before clipping; the sampling itself needs no input: the accounting
    covers every example as if it could have been sampled, which is what Poisson subsampling's guarantee is about).

    ``epsilon(delta)``, ``delta(epsilon)``: per-example ``EstimateArray`` with certified ``lower``/``upper`` of the
    bucketed composition (``upper`` holds for the example itself).  ``fitted_mu()``: the Section 5 mu per example.

    Parameters
    ----------
    n_examples : N, a positive integer.
    sampling_rate : the Poisson sampling rate q, in (0, 1].
    noise_multiplier : z > 0 (the noise on the gradient sum has standard deviation z C).
    clip : the clipping bound C > 0.
    sigma_ratio, max_sigma_factor : r in (1, 16] and a factor in [1, 1e6] setting the bucket grid ``z r^b`` (at
        most 4096 buckets).
    eps_error, delta_error : the FFT error budgets (Theorem 5.5), in (0, 1) and (0, 1e-3).
    max_steps : plan the grid once for that many steps (default: for the steps so far, rounded up to a power of 2,
        re-planned when they are exceeded); a positive integer.
    budget_mu, epsilon, delta : a budget B > 0, or (epsilon > 0, delta in (0, 1)) converted to B through RDP:
        switches on the approximative filter (needs ``max_steps``).
    fit_delta_min : the smallest delta the mu fit checks (default 1000 delta_error; above 10 delta_error).
    memory_limit : bytes the FFT grid may take (> 0).

    Raises
    ------
    ParameterError : a value out of range, too many buckets, or an inconsistent budget.
    """

    _kind = "IndividualPLDAccountant"
    _raw_params = ("n_buckets", "max_steps")

    def __init__(self, n_examples: int, sampling_rate: float, noise_multiplier: float, clip: float, *,
                 sigma_ratio: float = 1.05, max_sigma_factor: float = 100.0, eps_error: float = 0.01,
                 delta_error: float = 1e-10, max_steps: int | None = None, budget_mu: float | None = None,
                 epsilon: float | None = None, delta: float | None = None, fit_delta_min: float | None = None,
                 memory_limit: float = _fft.DEFAULT_MEMORY_LIMIT) -> None:
        n = check_n(n_examples)
        self._q = check_finite_real("sampling_rate", sampling_rate, low=0.0, high=1.0, high_open=False)
        self._z = check_finite_real("noise_multiplier", noise_multiplier, low=0.0)
        self._clip = check_finite_real("clip", clip, low=0.0)
        self._ratio = check_finite_real("sigma_ratio", sigma_ratio, low=1.0, high=16.0, high_open=False)
        self._factor = check_finite_real("max_sigma_factor", max_sigma_factor, low=1.0, low_open=False, high=1e6,
                                         high_open=False)
        self._eps_error = check_finite_real("eps_error", eps_error, low=0.0, high=1.0)
        self._delta_error = check_finite_real("delta_error", delta_error, low=0.0, high=1e-3)
        self._memory = check_finite_real("memory_limit", memory_limit, low=0.0)
        if max_steps is not None:
            if isinstance(max_steps, bool) or not isinstance(max_steps, numbers.Integral) or max_steps < 1:
                raise ParameterError(f"max_steps must be a positive integer, got {max_steps!r}")
            max_steps = int(max_steps)
        self._max_steps = max_steps
        floor = 1000.0 * self._delta_error if fit_delta_min is None else fit_delta_min
        self._floor = check_finite_real("fit_delta_min", floor, low=0.0, high=1.0)
        if not self._floor > 10.0 * self._delta_error:
            raise ParameterError(f"fit_delta_min must exceed 10 * delta_error = {10 * self._delta_error:g}, got "
                                 f"{self._floor!r}")
        B = n_buckets(self._ratio, self._factor)
        if B > 4096:
            raise ParameterError(f"sigma_ratio={self._ratio!r} and max_sigma_factor={self._factor!r} give {B} "
                                 "buckets; at most 4096 are allowed (raise sigma_ratio)")
        self._ratios = self._ratio ** np.arange(B)
        self._sigmas = self._z * self._ratios
        self._target = (math.nan, math.nan)
        if budget_mu is not None or epsilon is not None or delta is not None:
            if budget_mu is not None:
                if epsilon is not None or delta is not None:
                    raise ParameterError("give the budget either as budget_mu or as (epsilon, delta), not both")
                self._budget = check_finite_real("budget_mu", budget_mu, low=0.0)
            else:
                if epsilon is None or delta is None:
                    raise ParameterError("an (epsilon, delta) budget needs both epsilon (> 0) and delta in (0, 1)")
                e = check_finite_real("epsilon", epsilon, low=0.0)
                d = check_delta(delta)
                self._budget = math.sqrt(rdp_cap_for(e, d))
                self._target = (e, d)
            if max_steps is None:
                raise ParameterError("the filter needs max_steps (the largest number of steps it will run)")
        else:
            self._budget = None
        self._n = n
        self._steps = 0
        self._counts = np.zeros((n, B), dtype=np.uint16)
        self._active = np.ones(n, dtype=bool)
        self._deactivated_at = np.full(n, -1, dtype=np.int64)
        self._headroom = np.zeros(n, dtype=np.int64)
        self._plan = None
        self._worst = None

    # ----- views
    @property
    def n_buckets(self) -> int:
        """The number of buckets B."""
        return self._sigmas.size

    @property
    def bucket_sigmas(self) -> np.ndarray:
        """The noise multipliers of the buckets, z r^b (a copy)."""
        return self._sigmas.copy()

    @property
    def counts(self) -> np.ndarray:
        """Per-example bucket counts, shape (N, B) (a copy)."""
        return self._counts.copy()

    @property
    def active(self) -> np.ndarray:
        """Examples still taking part (all, without a budget)."""
        return self._active.copy()

    @property
    def n_active(self) -> int:
        """The number of examples still taking part."""
        return int(np.count_nonzero(self._active))

    @property
    def deactivated_at(self) -> np.ndarray:
        """Per example the (1-based) step at which the filter left it out for good, -1 while active."""
        return self._deactivated_at.copy()

    @property
    def budget_mu(self) -> float | None:
        """The filter's GDP budget B (None without a budget)."""
        return self._budget

    @property
    def sampling_rate(self) -> float:
        """The Poisson sampling rate q."""
        return self._q

    @property
    def noise_multiplier(self) -> float:
        """The noise multiplier z (noise std z C on the sum)."""
        return self._z

    @property
    def clip(self) -> float:
        """The clipping bound C."""
        return self._clip

    def budget_epsilon(self, delta: float) -> float:
        """epsilon(delta) of the filter's guarantee: the RDP conversion of B-GDP's RDP alpha B^2 / 2 (Section 5).

        Parameters
        ----------
        delta : in (0, 1).

        Raises
        ------
        ParameterError : no budget, or delta not in (0, 1).
        """
        if self._budget is None:
            raise ParameterError("this accountant has no budget (pass budget_mu or epsilon and delta)")
        return float(rdp_epsilon_from_mu(self._budget, check_delta(delta)))

    def buckets(self, norms: float | ArrayLike) -> np.ndarray:
        """Bucket of each example for gradient norms (-1 for a norm of 0: no release about it).

        Parameters
        ----------
        norms : gradient norms before clipping (finite, >= 0; any shape); a ``ParameterError`` otherwise.
        """
        g = np.minimum(check_array("norms", norms, allow_scalar=True, high=None), self._clip)
        pos = g > 0
        with np.errstate(divide="ignore"):
            # sigma_eff / z, rounded down by a relative 1e-12 (a grid point goes to the bucket below: conservative)
            ratio = np.where(pos, self._clip / np.where(pos, g, 1.0), 1.0) * (1.0 - 1e-12)
        b = np.floor(np.log(ratio) / math.log(self._ratio))
        b = np.clip(b, 0, self._sigmas.size - 1).astype(np.int64)
        b = np.where(self._ratios[b] > ratio, np.maximum(b - 1, 0), b)    # guard the rounding of the logarithm
        b = np.where(self._ratios[b] > ratio, 0, b)
        return np.where(pos, b, -1)

    def example_composition(self, i: int) -> list[tuple[Mechanism, int]]:
        """The bucketed composition of an example as (mechanism, count) pairs (for ``mk.compose``).

        Parameters
        ----------
        i : the example's index.
        """
        from ..laws.shipped import convenience
        from ..transforms import subsample

        gaussian = convenience("gaussian")

        k = self._counts[int(i)]
        return [(subsample(gaussian(float(self._sigmas[b])), self._q), int(k[b])) for b in np.flatnonzero(k)]

    # ----- the step
    def step(self, norms: ArrayLike, *, progress: bool = True) -> np.ndarray:
        """Account one step with the per-example gradient norms.

        Parameters
        ----------
        norms : length N, finite, >= 0 (before clipping).
        progress : False: no progress line.  With a budget a step fits mu for the examples without headroom (and
            the first one plans the grid): one line on stderr if it still runs after ``mechkit.progress.DELAY`` s.

        Returns
        -------
        The mask of examples that take part (all not left out by the filter).

        Raises
        ------
        ParameterError : bad ``norms`` or ``progress``, or a filter past ``max_steps`` (before any state changes).
        """
        with setting(progress), working(f"individual PLD filter: step {self._steps + 1}, fitting mu for up to "
                                        f"{self._n} examples", when=self._budget is not None):
            return self._step(norms)

    def _step(self, norms):
        norms = check_array("norms", norms, length=self._n, high=None)
        b = self.buckets(norms)
        part = (b >= 0) & self._active
        active = self._active.copy()
        headroom = self._headroom.copy()
        deact = self._deactivated_at.copy()
        if self._budget is not None:
            if self._steps >= self._max_steps:
                raise ParameterError(f"the filter was planned for max_steps={self._max_steps} steps")
            need = np.flatnonzero(part & (headroom <= 0))
            if need.size:
                base = self._counts[need].astype(np.int64)
                base[np.arange(need.size), b[need]] += 1
                mu0 = self._fit_rows(base)
                fits = mu0 <= self._budget
                drop = need[~fits]
                active[drop] = False
                deact[drop] = self._steps + 1
                part[drop] = False
                remaining = self._max_steps - self._steps - 1
                keep = np.flatnonzero(fits)
                if remaining > 0 and keep.size:
                    # headroom: rows with s extra worst-case steps (which dominate any steps), s guessed from the
                    # worst-case curve (the example counts as the k_eq worst-case steps with its fitted mu), verified
                    ks, mus = self._worst_curve()
                    k_eq = np.interp(mu0[keep], mus, ks, left=0.0)
                    k_b = float(np.interp(self._budget, mus, ks))
                    s_star = np.maximum(np.floor(k_b - k_eq), 1.0)
                    cand = np.stack([np.ones_like(s_star), np.floor(s_star / 2), np.floor(0.95 * s_star)], axis=1)
                    cand = np.clip(cand, 1, remaining).astype(np.int64)
                    rows = np.repeat(base[keep][:, None, :], 3, axis=1)
                    rows[:, :, 0] += cand
                    mu = self._fit_rows(rows.reshape(-1, rows.shape[2])).reshape(keep.size, 3)
                    ok = mu <= self._budget
                    headroom[need[keep]] = np.where(ok, cand, 0).max(axis=1)
            pre = part & (self._headroom > 0)
            headroom[pre] -= 1
        # commit
        if self._steps + 1 > UINT16_MAX and self._counts.dtype == np.uint16:
            self._counts = self._counts.astype(np.uint32)
        idx = np.flatnonzero(part)
        self._counts.reshape(-1)[idx * self._counts.shape[1] + b[idx]] += 1
        self._active, self._headroom, self._deactivated_at = active, headroom, deact
        self._steps += 1
        return active.copy()

    # ----- queries
    def _plan_for(self, K):
        K = max(int(K), 1)
        target = self._max_steps if (self._max_steps is not None and K <= self._max_steps) else \
            1 << int(math.ceil(math.log2(K)))
        if self._plan is None or self._plan.K != target:
            # shared with every accountant of the same grid in this process (a restored checkpoint, a probe
            # accountant beside the real one): built once
            self._plan = plan_for(Plan.spec_of(self._sigmas, self._q, target, self._eps_error, self._delta_error,
                                               self._memory))
        return self._plan

    def _distinct(self):
        return distinct_rows(self._counts)

    def _fit_rows(self, rows, executor=None):
        rows, inv = distinct_rows(rows)
        mu = np.zeros(rows.shape[0])
        nz = np.flatnonzero(rows.sum(axis=1) > 0)
        if nz.size:
            plan = self._plan_for(rows[nz].sum(axis=1).max())
            res = evaluate_blocks(plan, rows[nz], self._eps_error, self._delta_error, executor, fit=self._floor)
            mu[nz] = np.maximum(res["remove"]["mu"], res["add"]["mu"])
        return mu[inv]

    def _worst_curve(self):
        """(k, fitted mu of k worst-case steps) on a geometric grid of k up to the planned steps (for the filter)."""
        plan = self._plan_for(self._max_steps)
        if self._worst is None or self._worst[0] is not plan:   # kept here: plans may be shared (``plan_for``)
            ks = np.unique(np.geomspace(1, plan.K, 40).astype(np.int64))
            rows = np.zeros((ks.size, self.n_buckets), dtype=np.int64)
            rows[:, 0] = ks
            mus = np.maximum.accumulate(self._fit_rows(rows))
            self._worst = (plan, (ks.astype(float), mus))
        return self._worst[1]

    def fitted_mu(self, *, executor: Executor | None = None, progress: bool = True) -> np.ndarray:
        """Per example the smallest mu whose mu-GDP curve dominates its upper delta curve for delta >= fit_delta_min
        (Section 5, (5.1)); 0 for examples that never took part.

        Parameters
        ----------
        executor, progress : as for ``epsilon``.
        """
        check_executor(executor)
        with setting(progress), working(self._what("the fitted mu")):
            return self._fit_rows(self._counts, executor)

    def _details(self, plan):
        d = plan.details() if plan is not None else {}
        d.update(eps_error=self._eps_error, delta_error=self._delta_error, n_buckets=self.n_buckets,
                 sigma_ratio=self._ratio, max_sigma_factor=self._factor,
                 note="bounds of the bucketed composition; upper is an upper bound for the example itself")
        return d

    def _what(self, what):
        return f"individual PLD accounting: {what} of {self._n} examples after {self._steps} steps"

    def _query(self, combine, executor, progress, what, **targets):
        """Evaluate the distinct rows with ``evaluate(**targets)`` (on ``executor``); ``combine(remove, add)`` ->
        (value, lower, upper) of the rows that took part (the others are 0) -> EstimateArray over the examples."""
        check_executor(executor)
        with setting(progress), working(self._what(what)):
            rows, inv = self._distinct()
            out = np.zeros((3, rows.shape[0]))
            nz = np.flatnonzero(rows.sum(axis=1) > 0)
            plan = None
            if nz.size:
                plan = self._plan_for(rows[nz].sum(axis=1).max())
                res = evaluate_blocks(plan, rows[nz], self._eps_error, self._delta_error, executor, **targets)
                out[:, nz] = combine(res["remove"], res["add"])
        return EstimateArray(out[0][inv], out[1][inv], out[2][inv], "individual-pld", True, self._details(plan))

    def epsilon(self, delta: float, *, executor: Executor | None = None, progress: bool = True) -> EstimateArray:
        """Per-example epsilon(delta) (max over add and remove) -> EstimateArray with certified lower/upper.

        Parameters
        ----------
        delta : in (delta_error, 1).
        executor : a ``concurrent.futures.Executor`` (a process pool, dask.distributed's
            ``Client.get_executor()``...): the distinct rows of bucket counts in blocks of ``buckets.ROW_BLOCK``
            (8192), one task each; the answers are bit-identical to None's (default: in this process).  A worker
            rebuilds the FFT grid's plan once (seconds) and keeps it for the next tasks, so it pays from about two
            blocks of rows (fewer are evaluated here).  Give a process pool's workers one BLAS thread each
            (``OPENBLAS_NUM_THREADS=1``, as dask's workers have; docs/individual.md).
        progress : False: no progress line (one on stderr if the call still runs after ``mechkit.progress.DELAY``
            seconds; planning the grid alone may take that long).

        Raises
        ------
        ParameterError : delta out of range, an executor without ``submit``, or ``progress`` not a bool.
        NumericalLimitError : delta too small to certify with this ``delta_error``.
        """
        d = check_delta(delta)
        ee, de = self._eps_error, self._delta_error
        if not de < d:
            raise ParameterError(f"delta must exceed delta_error = {de:g}, got {d!r}")

        def combine(r, a):
            worst = max(float(np.max(r["slack"])), float(np.max(a["slack"])))
            if d - de - worst <= 0:
                raise NumericalLimitError(
                    f"delta = {d:g} cannot be certified with delta_error={de:g} (largest per-example floating-point "
                    f"and truncation allowance {worst:.2g}); use a larger delta or a smaller delta_error")
            return (np.maximum(r["val"], a["val"]), np.maximum(np.maximum(r["lo"], a["lo"]) - ee, 0.0),
                    np.maximum(r["up"], a["up"]) + ee)

        return self._query(combine, executor, progress, f"epsilon at delta={d:g}",
                           eps_targets=(("val", d, 0.0), ("up", d, -1.0), ("lo", d, 1.0)))

    def delta(self, epsilon: float, *, executor: Executor | None = None, progress: bool = True) -> EstimateArray:
        """Per-example delta(epsilon) (max over add and remove) -> EstimateArray with certified lower/upper.

        Parameters
        ----------
        epsilon : finite, >= 0; a ``ParameterError`` otherwise.
        executor, progress : as for ``epsilon``.
        """
        e = check_finite_real("epsilon", epsilon, low=0.0, low_open=False)
        ee, de = self._eps_error, self._delta_error

        def combine(r, a):
            return (np.maximum(r["val"], a["val"]),
                    np.maximum(np.maximum(r["lo"] - r["slack"], a["lo"] - a["slack"]) - de, 0.0),
                    np.minimum(np.maximum(r["up"] + r["slack"], a["up"] + a["slack"]) + de, 1.0))

        return self._query(combine, executor, progress, f"delta at epsilon={e:g}",
                           delta_points=(("val", e), ("up", e - ee), ("lo", e + ee)))

    # ----- persistence (the helpers of mechkit.individual)
    def _params(self):
        return {"sampling_rate": self._q, "noise_multiplier": self._z, "clip": self._clip, "sigma_ratio": self._ratio,
                "max_sigma_factor": self._factor, "eps_error": self._eps_error, "delta_error": self._delta_error,
                "fit_delta_min": self._floor, "memory_limit": self._memory,
                "budget_mu": math.nan if self._budget is None else self._budget,
                "target_epsilon": self._target[0], "target_delta": self._target[1],
                "n_buckets": int(self.n_buckets), "max_steps": self._max_steps}

    def _arrays(self):
        return {"counts": self._counts, "steps": np.array(self._steps, dtype=np.int64), "active": self._active,
                "deactivated_at": self._deactivated_at, "headroom": self._headroom}

    @classmethod
    def _array_specs(cls, n, params):
        B = params.get("n_buckets")
        if isinstance(B, bool) or not isinstance(B, int) or B < 1:
            raise ParameterError(f"n_buckets = {B!r}")
        return {"counts": ((np.uint16, np.uint32), (n, B)), "steps": (np.int64, ()), "active": (np.bool_, (n,)),
                "deactivated_at": (np.int64, (n,)), "headroom": (np.int64, (n,))}

    @classmethod
    def _restore(cls, n, params, arrays):
        budget = params["budget_mu"]
        kw = dict(sigma_ratio=params["sigma_ratio"], max_sigma_factor=params["max_sigma_factor"],
                  eps_error=params["eps_error"], delta_error=params["delta_error"], max_steps=params["max_steps"],
                  fit_delta_min=params["fit_delta_min"], memory_limit=params["memory_limit"])
        if not math.isnan(budget):
            kw["budget_mu"] = budget
        obj = cls(n, params["sampling_rate"], params["noise_multiplier"], params["clip"], **kw)
        obj._target = (params["target_epsilon"], params["target_delta"])
        if obj.n_buckets != params["n_buckets"]:
            raise ParameterError("n_buckets does not match sigma_ratio and max_sigma_factor")
        counts, steps = arrays["counts"], int(arrays["steps"])
        active, deact, headroom = arrays["active"], arrays["deactivated_at"], arrays["headroom"]
        if steps < 0 or np.any(counts.sum(axis=1, dtype=np.int64) > steps):
            raise ParameterError("bucket counts exceed the number of steps")
        if np.any(deact < -1) or np.any(deact > steps) or np.any((deact >= 0) == active):
            raise ParameterError("deactivated_at / active are inconsistent")
        if np.any(headroom < 0) or (obj._budget is None and np.any(headroom)):
            raise ParameterError("headroom out of range")
        if obj._max_steps is not None and obj._budget is not None and steps > obj._max_steps:
            raise ParameterError("steps exceed max_steps")
        obj._counts = counts.copy()
        obj._steps = steps
        obj._active = active.copy()
        obj._deactivated_at = deact.copy()
        obj._headroom = headroom.copy()
        return obj

    def __repr__(self):
        budget = "" if self._budget is None else f", budget_mu={self._budget!r}, active={self.n_active}"
        return (f"IndividualPLDAccountant(n_examples={self._n}, sampling_rate={self._q!r}, noise_multiplier="
                f"{self._z!r}, clip={self._clip!r}, n_buckets={self.n_buckets}, steps={self._steps}{budget})")


KINDS[IndividualPLDAccountant._kind] = IndividualPLDAccountant
