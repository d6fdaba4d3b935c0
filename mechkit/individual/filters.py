"""Individual and fully adaptive privacy accounting with Gaussian DP (Koskela, Tobaben, Honkela; notes.md 4).

**Fully adaptive composition (Theorem 2, notes.md 4.3).**  Run mechanisms one after another, each chosen after
seeing the previous outputs.  If step j is mu_j-GDP given the past (mu_j may depend on the past) and, with
probability one, ``sum_j mu_j^2 <= B^2`` for a budget B fixed in advance, the whole sequence is B-GDP, so it is
(epsilon, delta(epsilon))-DP for every epsilon >= 0 with the exact curve (Corollary 2, notes.md 8.1 V9)

    delta(epsilon) = Phi(-epsilon/B + B/2) - e^epsilon Phi(-epsilon/B - B/2),

evaluated in log space by :mod:`mechkit.gdp`.  :class:`AdaptiveGDPFilter` enforces the condition (Algorithm 2).

**Individual filter (Algorithm 1, notes.md 4.4).**  The same guarantee holds per example: example i may take part
in step j with its own mu_j^(i) as long as its own ``sum_j (mu_j^(i))^2 <= B^2``; examples that would exceed the
budget drop out (their mu is zeroed) while the others continue.  :class:`GDPFilter` keeps, for N examples, the
spent ``sum_j (mu_j^(i))^2`` and decides each step who takes part.  For (full-batch) DP-GD, where step j releases
``sum_i g_i + N(0, sigma^2 I)`` with per-example clipped gradients g_i (``||g_i|| <= clip``),

    mu_j^(i) = ||g_i||_2 / sigma            (notes.md 4.4, C.2; :func:`mu_from_norms`)

where sigma is the standard deviation of the noise added to the sum (with a noise multiplier z, sigma = z * clip).
With ``scale_last_step=True`` (Remark 3) an example that would overshoot takes part once more with its
contribution scaled by ``sqrt(remaining budget) / mu`` (multiply its gradient by the returned factor), so it spends
its budget exactly: ``sum_j (mu_j^(i))^2 = B^2`` and the (epsilon, delta) curve above is then tight for it.

**Odometer (C.5).**  :class:`GDPOdometer` records the per-example spending without stopping anyone.  With an
increment Delta it reports the C.5 guarantee: a run stopped when an example's spending first reaches level
``m Delta^2`` is ``sqrt(m) Delta``-GDP for it (a sequence of filters with budgets B_m^2 = m Delta^2).

**RDP baseline (Feldman and Zrnic; notes.md 4.5).**  :class:`RDPFilter` is the individual Renyi filter: the
Gaussian step has RDP ``alpha mu^2 / 2`` at every order alpha, so the per-order filters ``sum_j alpha
(mu_j^(i))^2 / 2 <= rho`` are all the same condition on ``sum_j (mu_j^(i))^2`` and the RDP guarantee holds at every
order at once; it is converted to (epsilon, delta) with the conversion :mod:`mechkit.rdp` uses,

    epsilon = min over alpha > 1 of  RDP(alpha) + log((alpha - 1)/alpha) - (log delta + log alpha)/(alpha - 1).

Both filters halt on the same statistic, so at equal (epsilon, delta) the GDP filter allows more steps: the gain is
entirely in the conversion (notes.md 8.1 V4: sigma = 100, delta = 1e-5, 420 RDP steps vs 495 GDP steps).

What the per-example ``epsilon(delta)`` reports: the epsilon of the privacy each example has spent so far,
mu_i = sqrt(sum_j (mu_j^(i))^2) (the individual epsilons of P3's histograms).  The filter's guarantee, the same for
every example, is ``budget_epsilon(delta)``; examples that exhausted the budget reach it exactly.

Everything is vectorised over examples (no Python loop over examples); one step of a filter over N = 1e6 examples
takes a few milliseconds.  ``save(path)`` / ``load(path)`` store the state atomically in a checksummed file;
a restored accountant continues bit-identically.
"""
from __future__ import annotations

import math
from concurrent.futures import Executor
from functools import partial
from typing import NoReturn

import numpy as np
from numpy.typing import ArrayLike

from ..accountants import gdp as _gdp
from ..errors import ParameterError, check_finite_real
from .conversions import gdp_delta_values, gdp_eps_unique, mu_from_epsilon, per_example, rdp_cap_for, rdp_eps_sq_unique
from .state import KINDS, Persistent, check_array, check_delta, check_n

__all__ = ["GDPFilter", "AdaptiveGDPFilter", "GDPOdometer", "RDPFilter"]


#: a full step that lands within this relative distance below the budget exhausts it (spent is set to the budget;
#: conservative, and it avoids absurdly small last steps caused by rounding in the sum of squares)
EXHAUST_RTOL = 1e-12


class _Accountant(Persistent):
    """Per-example spent sum of mu^2 for N examples; conversions."""

    _array_names = ("spent_sq",)

    def _init_state(self, n):
        self._n = n
        self._spent = np.zeros(n)
        self._steps = 0

    # ----- views
    @property
    def spent_sq(self) -> np.ndarray:
        """Per-example spent sum_j (mu_j^(i))^2 (a copy)."""
        return self._spent.copy()

    @property
    def spent_mu(self) -> np.ndarray:
        """Per-example GDP parameter of the privacy spent so far, sqrt(sum_j (mu_j^(i))^2)."""
        return np.sqrt(self._spent)

    def _report_mu(self):
        return np.sqrt(self._spent)

    def _epsilon_job(self, d):
        """(values, block function) of epsilon(d): the reported mu on the exact mu-GDP curve."""
        return self._report_mu(), partial(gdp_eps_unique, delta=d)

    def epsilon(self, delta: float, *, executor: Executor | None = None, progress: bool = True) -> np.ndarray:
        """Per-example epsilon(delta) of the privacy spent so far, shape (N,): on the exact mu-GDP curve (by the RDP
        conversion for ``RDPFilter``).

        Parameters
        ----------
        delta : in (0, 1); a ``ParameterError`` otherwise.
        executor : a ``concurrent.futures.Executor``: blocks of ``conversions.BLOCK`` distinct values, one task each,
            bit-identical to None (default: here); pays for the GDP epsilon (10-30 us a value) of >= 1e5 examples.
        progress : False: no progress line (one on stderr if the call still runs after ``mechkit.progress.DELAY`` s).
        """
        values, fn = self._epsilon_job(check_delta(delta))
        return per_example(f"{type(self).__name__}.epsilon", values, fn, executor, progress)

    def delta(self, epsilon: float, *, executor: Executor | None = None, progress: bool = True) -> np.ndarray:
        """Per-example delta(epsilon) of the privacy spent so far (exact mu-GDP curve), shape (N,).

        Parameters
        ----------
        epsilon : finite, >= 0; a ``ParameterError`` otherwise.
        executor, progress : as for ``epsilon`` (the positive values in blocks).
        """
        e = check_finite_real("epsilon", epsilon, low=0.0, low_open=False)
        fn = partial(gdp_delta_values, epsilon=e)
        return per_example(f"{type(self).__name__}.delta", self._report_mu(), fn, executor, progress, unique=False)

    # ----- validation shared by the subclasses
    def _check_step(self, mu):
        return check_array("mu", mu, length=self._n)

    def _arrays(self):
        return {"spent_sq": self._spent, "steps": np.array(self._steps, dtype=np.int64)}

    @classmethod
    def _array_specs(cls, n, params):
        need = {"spent_sq": (np.float64, (n,)), "steps": (np.int64, ())}
        need.update(cls._extra_arrays(n))
        return need

    @classmethod
    def _extra_arrays(cls, n):
        return {}


class _SquaredBudgetFilter(_Accountant):
    """Individual filter on sum_j (mu_j^(i))^2 <= cap (Algorithm 1 with the Remark 3 last-step scaling)."""

    _raw_params = ("scale_last_step",)

    def _init_filter(self, n, cap, scale_last_step):
        self._init_state(n)
        self._cap = float(cap)
        self._cap_lo = self._cap * (1.0 - EXHAUST_RTOL)
        self._scale_last = bool(scale_last_step)
        self._halted_at = np.full(n, -1, dtype=np.int64)
        self._live = np.ones(n)                  # 1.0 while the budget is not exhausted, then 0.0
        self._thr = np.full(n, self._cap_lo)     # cap_lo while active, +inf once exhausted
        self._scale = np.ones(n)
        self._new = np.empty(n)
        self._sq = np.empty(n)

    @classmethod
    def _extra_arrays(cls, n):
        return {"halted_at": (np.int64, (n,)), "last_scale": (np.float64, (n,))}

    def _arrays(self):
        out = super()._arrays()
        out.update(halted_at=self._halted_at, last_scale=self._scale)
        return out

    def _set_arrays(self, arrays):
        spent, halted_at, scale = arrays["spent_sq"], arrays["halted_at"], arrays["last_scale"]
        if np.any(spent > self._cap):
            raise ParameterError("spent_sq exceeds the budget")
        steps = int(arrays["steps"])
        if steps < 0 or np.any(halted_at < -1) or np.any(halted_at > steps):
            raise ParameterError("halted_at / steps out of range")
        if np.any((halted_at >= 0) & (spent != self._cap)):
            raise ParameterError("a halted example has not spent its budget")
        self._spent[:] = spent
        self._halted_at[:] = halted_at
        halted = halted_at >= 0
        self._live[:] = np.where(halted, 0.0, 1.0)
        self._thr[:] = np.where(halted, np.inf, self._cap_lo)
        self._scale[:] = scale
        self._steps = steps

    # ----- views
    @property
    def halted_at(self) -> np.ndarray:
        """Per-example step (1-based) at which the budget was exhausted, -1 while still active (a copy)."""
        return self._halted_at.copy()

    @property
    def active(self) -> np.ndarray:
        """Boolean mask of the examples that have not exhausted their budget."""
        return self._halted_at < 0

    @property
    def n_active(self) -> int:
        """The number of examples that have not exhausted their budget."""
        return int(np.count_nonzero(self._halted_at < 0))

    @property
    def last_scale(self) -> np.ndarray:
        """The factors of the last step: 1 full contribution, (0, 1) scaled last step, 0 left out."""
        return self._scale.copy()

    @property
    def remaining_sq(self) -> np.ndarray:
        """Per-example budget left, cap - spent_sq (a new array)."""
        return self._cap - self._spent

    @property
    def scale_last_step(self) -> bool:
        """Whether an overshooting example takes part once more, scaled (Remark 3)."""
        return self._scale_last

    # ----- the step
    def step(self, mu: ArrayLike, return_scale: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Account one step with per-example GDP parameters.

        Parameters
        ----------
        mu : length N, in [0, 1e100] (``state.MU_MAX``; see :func:`mu_from_norms`).
        return_scale : also return the scale factors.

        Returns
        -------
        The boolean mask of the examples that take part in this step (before it, they had not exhausted the budget,
        and their step fits or is scaled to fit); with ``return_scale``, ``(active, scale)``: multiply example i's
        contribution (its clipped gradient) by ``scale[i]``: 1 for a full step, in (0, 1) for the last step of an
        example whose budget is then exactly used up (Remark 3), 0 for examples left out.

        Raises
        ------
        ParameterError : ``mu`` not numeric, of another shape or out of range (before any state changes).
        """
        mu = self._check_step(mu)
        sq = np.multiply(mu, mu, out=self._sq)
        sq *= self._live                               # exhausted examples: mu zeroed (Algorithm 1, step 3)
        new = np.add(self._spent, sq, out=self._new)
        scale = self._scale
        np.copyto(scale, self._live)
        hit = new >= self._thr                         # threshold +inf for exhausted examples
        if hit.any():                                  # only the examples reaching their budget this step
            idx = np.flatnonzero(hit)
            over = new[idx] > self._cap
            o = idx[over]
            if self._scale_last:                       # Remark 3: scale the last step to use the budget exactly
                rem = self._cap - self._spent[o]
                with np.errstate(divide="ignore", invalid="ignore"):
                    f = np.sqrt(rem / sq[o])
                f = np.minimum(np.nextafter(f, 0.0), 1.0)  # round down: (f mu)^2 <= rem
                scale[o] = np.where(rem > 0, f, 0.0)
                newly = idx                            # scaled, or landed within EXHAUST_RTOL of the budget
            else:  # Algorithm 1 as printed: left out of this step (mu zeroed), may take part later
                scale[o] = 0.0
                new[o] = self._spent[o]
                newly = idx[~over]
            new[newly] = self._cap
            self._halted_at[newly] = self._steps + 1
            self._live[newly] = 0.0
            self._thr[newly] = np.inf
        self._new, self._spent = self._spent, new
        self._steps += 1
        active = scale > 0
        if return_scale:
            return active, scale.copy()
        return active

    def _params(self):
        return {"cap_sq": self._cap, "scale_last_step": self._scale_last}


class GDPFilter(_SquaredBudgetFilter):
    """Individual GDP filter (Algorithm 1 of Koskela, Tobaben, Honkela) over ``n_examples`` examples.

    Budget: a GDP parameter ``budget_mu`` = B, or a target ``(epsilon, delta)`` converted to the largest B with
    delta_B(epsilon) <= delta on the exact mu-GDP curve.  Every example may spend sum_j (mu_j^(i))^2 <= B^2; the
    output is then B-GDP with respect to each example (Theorem 1 / Corollary 2, notes.md 4.4).

    ``step(mu)`` takes this step's per-example mu (for DP-GD ``mu_from_norms(norms, clip, sigma)``, sigma the noise
    standard deviation on the gradient sum) and returns the mask of examples taking part.  ``epsilon(delta)`` and
    ``delta(epsilon)`` give each example's individual values from its spent sqrt(sum mu^2);
    ``budget_epsilon(delta)`` is the guarantee (reached exactly by the examples whose budget is used up).

    Parameters
    ----------
    n_examples : N, a positive integer.
    budget_mu : B > 0; or instead ``epsilon`` > 0 and ``delta`` in (0, 1).
    scale_last_step : scale an overshooting example's last step (Remark 3); False leaves it out of the step
        (Algorithm 1 as printed; it may take part again later with a smaller mu).

    Raises
    ------
    ParameterError : a bad N, both or neither form of the budget, or a value out of range.
    """

    _kind = "GDPFilter"

    def __init__(self, n_examples: int, budget_mu: float | None = None, epsilon: float | None = None,
                 delta: float | None = None, *, scale_last_step: bool = True) -> None:
        n = check_n(n_examples)
        if budget_mu is not None:
            if epsilon is not None or delta is not None:
                raise ParameterError("give the budget either as budget_mu or as (epsilon, delta), not both")
            b = check_finite_real("budget_mu", budget_mu, low=0.0)
            self._target = (math.nan, math.nan)
        else:
            if epsilon is None or delta is None:
                raise ParameterError("give the budget as budget_mu (> 0) or as both epsilon (> 0) and delta in (0, 1)")
            e = check_finite_real("epsilon", epsilon, low=0.0)
            d = check_delta(delta)
            b = mu_from_epsilon(e, d)
            self._target = (e, d)
        self._budget = b
        self._init_filter(n, b * b, scale_last_step)

    @property
    def budget_mu(self) -> float:
        """The budget B (GDP parameter)."""
        return self._budget

    def budget_epsilon(self, delta: float) -> float:
        """epsilon(delta) of the filter's guarantee, B-GDP (exact curve, :func:`mechkit.gdp.epsilon`).

        Parameters
        ----------
        delta : in (0, 1); a ``ParameterError`` otherwise.
        """
        return _gdp.epsilon(self._budget, check_delta(delta))

    def budget_delta(self, epsilon: float) -> float:
        """delta(epsilon) of the filter's guarantee, B-GDP (exact curve).

        Parameters
        ----------
        epsilon : finite, >= 0; a ``ParameterError`` otherwise.
        """
        return _gdp.delta(self._budget, check_finite_real("epsilon", epsilon, low=0.0, low_open=False))

    def _params(self):
        p = super()._params()
        p.update(budget_mu=self._budget, target_epsilon=self._target[0], target_delta=self._target[1])
        return p

    @classmethod
    def _construct(cls, n, params):
        return cls(n, budget_mu=params["budget_mu"], scale_last_step=bool(params["scale_last_step"]))

    @classmethod
    def _restore(cls, n, params, arrays):
        obj = cls._construct(n, params)
        obj._target = (params["target_epsilon"], params["target_delta"])
        if obj._cap != params["cap_sq"]:
            raise ParameterError("cap_sq does not match budget_mu")
        obj._set_arrays(arrays)
        return obj

    def __repr__(self):
        return (f"GDPFilter(n_examples={self._n}, budget_mu={self._budget!r}, steps={self._steps}, "
                f"active={self.n_active})")


class AdaptiveGDPFilter(GDPFilter):
    """The GDP filter of Algorithm 2 / Theorem 2: one stream of adaptively chosen mu_j-GDP steps.

    ``step(mu)`` takes this step's (scalar) mu_j, e.g. max_i ||g_i||/sigma for DP-GD, and returns the factor to
    apply to the step's sensitivity: 1.0 run it, in (0, 1) run it scaled (then the budget is used up), 0.0 halt.
    While the factors are obeyed, sum_j mu_j^2 <= B^2 and the run is B-GDP (``budget_epsilon``).

    Parameters
    ----------
    budget_mu, epsilon, delta, scale_last_step : as for ``GDPFilter``.
    """

    _kind = "AdaptiveGDPFilter"

    def __init__(self, budget_mu: float | None = None, epsilon: float | None = None, delta: float | None = None, *,
                 scale_last_step: bool = True) -> None:
        super().__init__(1, budget_mu, epsilon, delta, scale_last_step=scale_last_step)

    def step(self, mu: float) -> float:
        """Account one step; returns the factor for its sensitivity (see above).

        Parameters
        ----------
        mu : this step's GDP parameter, a finite scalar >= 0; a ``ParameterError`` otherwise.
        """
        if np.ndim(mu) != 0:
            raise ParameterError(f"mu must be a scalar (this step's GDP parameter), got shape {np.shape(mu)}")
        m = check_finite_real("mu", mu, low=0.0, low_open=False)
        _, scale = super().step(np.array([m]), return_scale=True)
        return float(scale[0])

    @property
    def halted(self) -> bool:
        """Whether the budget is used up."""
        return bool(self._halted_at[0] >= 0)

    def epsilon(self, delta: float) -> float:
        """epsilon(delta) of the privacy spent so far (sqrt(sum mu_j^2)-GDP curve); the guarantee is budget_epsilon.

        Parameters
        ----------
        delta : in (0, 1); a ``ParameterError`` otherwise.
        """
        return float(super().epsilon(delta)[0])

    def delta(self, epsilon: float) -> float:
        """delta(epsilon) of the privacy spent so far (sqrt(sum mu_j^2)-GDP curve).

        Parameters
        ----------
        epsilon : finite, >= 0; a ``ParameterError`` otherwise.
        """
        return float(super().delta(epsilon)[0])

    @classmethod
    def _construct(cls, n, params):
        if n != 1:
            raise ParameterError("an AdaptiveGDPFilter has one stream")
        return cls(budget_mu=params["budget_mu"], scale_last_step=bool(params["scale_last_step"]))

    def __repr__(self):
        return f"AdaptiveGDPFilter(budget_mu={self._budget!r}, steps={self._steps}, halted={self.halted})"


class GDPOdometer(_Accountant):
    """Per-example GDP odometer (notes.md 4.4, C.5): records sum_j (mu_j^(i))^2 and stops no one.

    Without ``increment``, ``epsilon(delta)`` is that of the spent sqrt(sum mu^2) (the individual epsilon so far).
    With ``increment`` = Delta > 0 it is that of the C.5 guarantee sqrt(m) Delta, m = ceil(sum mu^2 / Delta^2): the
    state released when an example's spending first reaches the level m Delta^2 is sqrt(m) Delta-GDP for it.

    Parameters
    ----------
    n_examples : N, a positive integer.
    increment : Delta > 0, or None.
    """

    _kind = "GDPOdometer"

    def __init__(self, n_examples: int, increment: float | None = None) -> None:
        n = check_n(n_examples)
        self._increment = None if increment is None else check_finite_real("increment", increment, low=0.0)
        self._init_state(n)

    @property
    def increment(self) -> float | None:
        """The level increment Delta (None without one)."""
        return self._increment

    def step(self, mu: ArrayLike) -> None:
        """Add one step's per-example mu.

        Parameters
        ----------
        mu : length N, in [0, 1e100]; a ``ParameterError`` otherwise (before any state changes).
        """
        mu = self._check_step(mu)
        self._spent += mu * mu
        self._steps += 1

    def levels(self) -> np.ndarray:
        """Per-example odometer level m = ceil(sum mu^2 / Delta^2); a ``ParameterError`` without ``increment``."""
        if self._increment is None:
            raise ParameterError("levels need an increment (GDPOdometer(n, increment=...))")
        return np.ceil(self._spent / (self._increment * self._increment)).astype(np.int64)

    def _report_mu(self):
        if self._increment is None:
            return np.sqrt(self._spent)
        return np.sqrt(self.levels().astype(float)) * self._increment

    def reported_mu(self) -> np.ndarray:
        """The per-example GDP parameter that ``epsilon``/``delta`` report."""
        return self._report_mu()

    def _params(self):
        return {"increment": math.nan if self._increment is None else self._increment}

    @classmethod
    def _restore(cls, n, params, arrays):
        inc = params["increment"]
        obj = cls(n, increment=None if math.isnan(inc) else inc)
        obj._spent[:] = arrays["spent_sq"]
        obj._steps = int(arrays["steps"])
        if obj._steps < 0:
            raise ParameterError("steps < 0")
        return obj

    def __repr__(self):
        return f"GDPOdometer(n_examples={self._n}, increment={self._increment!r}, steps={self._steps})"


class RDPFilter(_SquaredBudgetFilter):
    """The Feldman-Zrnic individual RDP filter for Gaussian steps (the baseline of notes.md 4.5).

    Budget: ``(alpha, rho)``, i.e. (alpha, rho)-RDP, so sum_j alpha (mu_j^(i))^2 / 2 <= rho; or a target
    ``(epsilon, delta)``: the largest sum mu^2 whose RDP curve alpha sum mu^2 / 2 converts (improved conversion,
    minimised over alpha) to at most epsilon.  Since the Gaussian's RDP is alpha mu^2/2 at every order, the filter
    condition is the same at all orders, and every example's RDP curve is alpha * spent_sq / 2.

    Parameters
    ----------
    n_examples : N, a positive integer.
    alpha, rho : the RDP budget, alpha > 1 and rho > 0; or instead ``epsilon`` > 0 and ``delta`` in (0, 1).
    scale_last_step : as for ``GDPFilter``.

    Raises
    ------
    ParameterError : a bad N, both, neither or half of a form of the budget, or a value out of range.
    """

    _kind = "RDPFilter"

    def __init__(self, n_examples: int, *, alpha: float | None = None, rho: float | None = None,
                 epsilon: float | None = None, delta: float | None = None, scale_last_step: bool = True) -> None:
        n = check_n(n_examples)
        if alpha is not None or rho is not None:
            if epsilon is not None or delta is not None:
                raise ParameterError("give the budget either as (alpha, rho) or as (epsilon, delta), not both")
            if alpha is None or rho is None:
                raise ParameterError("an RDP budget needs both alpha (> 1) and rho (> 0)")
            a = check_finite_real("alpha", alpha, low=1.0)
            r = check_finite_real("rho", rho, low=0.0)
            cap = 2.0 * r / a
            self._budget = (a, r, math.nan, math.nan)
        else:
            if epsilon is None or delta is None:
                raise ParameterError("give the budget as (alpha > 1, rho > 0) or as epsilon (> 0) and delta in (0, 1)")
            e = check_finite_real("epsilon", epsilon, low=0.0)
            d = check_delta(delta)
            cap = rdp_cap_for(e, d)
            self._budget = (math.nan, math.nan, e, d)
        self._init_filter(n, cap, scale_last_step)

    @property
    def budget_sq(self) -> float:
        """The cap on each example's sum_j (mu_j^(i))^2."""
        return self._cap

    def rdp(self, alpha: float | ArrayLike) -> np.ndarray:
        """Per-example RDP of the spent privacy, alpha * spent_sq / 2: shape (N,), or (N, A) for A orders.

        Parameters
        ----------
        alpha : an order > 1, or a non-empty array of them; a ``ParameterError`` for orders <= 1 or not finite.
        """
        a = np.asarray(alpha, dtype=float)
        if a.size == 0 or not np.all(np.isfinite(a)) or np.any(a <= 1):
            raise ParameterError(f"alpha must lie in (1, inf), got {alpha!r}")
        if a.ndim == 0:
            return 0.5 * float(a) * self._spent
        return 0.5 * self._spent[:, None] * a.ravel()[None, :]

    def _epsilon_job(self, d):  # via RDP: the improved conversion of the spent sum mu^2, minimised over alpha
        return self._spent, partial(rdp_eps_sq_unique, delta=d)

    def delta(self, epsilon: float) -> NoReturn:
        """Refused with a ``ParameterError``: the RDP filter answers epsilon(delta) only.

        Parameters
        ----------
        epsilon : ignored.
        """
        raise ParameterError("the RDP filter answers epsilon(delta) only")

    def budget_epsilon(self, delta: float) -> float:
        """epsilon(delta) of the filter's guarantee, the RDP conversion of the budget.

        Parameters
        ----------
        delta : in (0, 1); a ``ParameterError`` otherwise.
        """
        return float(rdp_eps_sq_unique(np.array([self._cap]), check_delta(delta))[0])

    def _params(self):
        p = super()._params()
        p.update(alpha=self._budget[0], rho=self._budget[1], target_epsilon=self._budget[2],
                 target_delta=self._budget[3])
        return p

    @classmethod
    def _restore(cls, n, params, arrays):
        obj = cls.__new__(cls)
        obj._budget = (params["alpha"], params["rho"], params["target_epsilon"], params["target_delta"])
        cap = params["cap_sq"]
        if not (isinstance(cap, float) and math.isfinite(cap) and cap > 0):
            raise ParameterError(f"cap_sq = {cap!r}")
        obj._init_filter(n, cap, bool(params["scale_last_step"]))
        obj._set_arrays(arrays)
        return obj

    def __repr__(self):
        return f"RDPFilter(n_examples={self._n}, budget_sq={self._cap!r}, steps={self._steps}, active={self.n_active})"


for _cls in (GDPFilter, AdaptiveGDPFilter, GDPOdometer, RDPFilter):
    KINDS[_cls._kind] = _cls
