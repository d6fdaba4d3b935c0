"""mechkit's f-DP views (``run.tradeoff(alpha)``, ``run.tpr_at_fpr(fpr)``, ``run.advantage()``, mechkit/fdp.py)
against riskcal's numbers for DP-SGD and against the exact mu-GDP trade-off curve (issue 22).  Optional: ``pip install
"mechkit[peers]"``; the module skips (pytest.importorskip) without riskcal.

riskcal (``riskcal.calibration.dpsgd.get_beta_for_dpsgd`` / ``get_advantage_for_dpsgd``) composes dp_accounting's
connect-the-dots PLD of the Poisson-subsampled Gaussian (value_discretization_interval ``grid_step`` = 1e-4, its
default) and reads the trade-off curve off it (Kulynych, Gomez et al. 2024, Algorithm 1, symmetrised for add/remove
neighbours by Dong et al.'s Definition F.1); its advantage is the PLD's delta at epsilon 0.  It documents no error
bound.  mechkit's trade-off function is the one its certified privacy curve implies (sup over epsilon of the lines
1 - delta(eps) - e^eps alpha and their mirrors, delta the max over directions: the convex symmetric f of the
add/remove pair), with certified [lower, upper] (eps_error 0.01).  What is asserted:

* mu-GDP (q = 1: k steps of noise sigma are exactly mu = sqrt(k) / sigma GDP; sigma 2, 16 steps, mu = 2): the exact
  Phi(Phi^-1(1 - alpha) - mu) and advantage 2 Phi(mu / 2) - 1 lie in mechkit's certified intervals; riskcal's
  closed forms are exactly them, and its PLD numbers are within 1e-5 of them (measured: 2e-6) and inside mechkit's
  intervals;
* DP-SGD (q = 0.01, 1000 steps, noise 0.8 and 1.0): at alpha >= 0.01, riskcal's beta (and its TPR, 1 - beta) and its
  advantage lie in mechkit's certified intervals, with no widening: dp_accounting's pessimistic discretisation
  could only lower riskcal's beta (raise its advantage), and measured, riskcal's values sit between mechkit's
  estimate and its upper bound for beta, and within 6.2e-7 of mechkit's estimate of the advantage;
* at alpha = 1e-4 and 1e-3 riskcal's beta is *above* mechkit's certified upper bound: a strict xfail (below), since
  riskcal is the one wrong.  A reference computed without mechkit brackets the truth there: the trade-off function
  of each ordered pair from dp_accounting's own per-direction hockey-stick curves, which depend only on the upper
  tails of the privacy losses (lower bound: the lines of the connect-the-dots, pessimistic, deltas on an epsilon
  grid; upper bound: the optimistic PLD's deltas, each grid interval bounded by its ends).  The bracket meets
  mechkit's interval, excludes riskcal's value at 1e-4, and shows that the other order's curve is higher there, so
  the symmetrised curve is this one (no convex-hull subtlety: the f-DP curve and the pointwise worst case coincide).

Why riskcal is off: for alpha below the symmetrisation point, riskcal reads T(P, Q)(alpha) from X = -L_add (the
add-direction privacy loss of dp_accounting's PLD, reversed) in its *upper* tail, i.e. the add loss's lower tail,
which dp_accounting's discretisation does not keep faithful (delta never looks there): the composed add pmf sums to
1.0000225 at interval 1e-4 (1.00063 at 2e-5), and after riskcal renormalises it, P_Q(X > 4) = 1.4e-5 where the
remove direction gives E_P[e^-L; L > 4] = 2.3e-8 (the two must agree for one pair).  The spurious tail mass moves the
Neyman-Pearson threshold out and overstates beta; refining the grid makes it worse (beta(1e-4) = 1.0 at interval
2e-5).

Values when written (riskcal 1.5.1, dp_accounting 0.6.0; mechkit's [lower, estimate, upper]):

 run (q, steps)      alpha   mechkit beta [lower, estimate, upper]    riskcal     truth / reference bracket
 sigma 2, q 1, 16    1e-4    0.956964  0.957194  0.957503             0.957196    0.957194 (exact, mu = 2)
                     1e-3    0.861539  0.862195  0.863074             0.862196    0.862195
                     0.01    0.626498  0.627919  0.629830             0.627920    0.627919
                     0.1     0.234486  0.236240  0.238611             0.236241    0.236240
                     0.5     0.022524  0.022750  0.023059             0.022750    0.022750
                     adv.    0.681101  0.682689  0.684274             0.682690    0.682689
 sigma 0.8, 0.01,    1e-4    0.998713  0.998723  0.998734             0.998936 x  [0.998723, 0.998775]
 1000                1e-3    0.992093  0.992154  0.992224             0.992289 x  [0.992154, 0.992470]
                     0.01    0.953317  0.953669  0.954069             0.953747
                     0.05    0.845725  0.846838  0.848103             0.846885
                     0.1     0.747086  0.748852  0.750860             0.748887
                     0.3     0.470840  0.474190  0.478005             0.474208
                     0.5     0.274520  0.277279  0.280471             0.277295
                     adv.    0.225881  0.229544  0.233584             0.229545
 sigma 1.0, 0.01,    1e-4    0.999448  0.999453  0.999458             0.999522 x
 1000                1e-3    0.995896  0.995932  0.995969             0.995986 x
                     0.01    0.970614  0.970861  0.971125             0.970900
                     0.1     0.804245  0.805799  0.807464             0.805821
                     0.5     0.338026  0.341423  0.345132             0.341434
                     adv.    0.156961  0.161018  0.165349             0.161018

(x: above mechkit's certified upper bound, the strict xfail.)  The module takes about 8 s.
"""
from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import pytest
from scipy import special

import mechkit as mk

riskcal = pytest.importorskip("riskcal")
pytest.importorskip("dp_accounting")  # riskcal's own dependency, read directly by the reference below

from dp_accounting.pld import privacy_loss_distribution as pld_module  # noqa: E402
from riskcal.analysis import get_advantage_from_gdp, get_beta_from_gdp  # noqa: E402
from riskcal.calibration.dpsgd import get_advantage_for_dpsgd, get_beta_for_dpsgd  # noqa: E402

GRID = 1e-4                                  # riskcal's default grid_step (dp_accounting's discretisation interval)
SLACK = 1e-9
ALPHAS = (0.01, 0.05, 0.1, 0.3, 0.5)         # where riskcal agrees
SMALL = (1e-4, 1e-3)                         # where it overstates beta
ALL = SMALL + ALPHAS
Q = 0.01
DP_SGD = [(0.8, 1000), (1.0, 1000)]          # (noise multiplier, steps) at sampling rate Q
GDP = (2.0, 1.0, 16)                         # (sigma, q, steps): mu = sqrt(16) / 2 = 2

RISKCAL_TAIL = ("riskcal 1.5.1 overstates beta at small alpha: it reads T(P, Q) from the add-direction loss's lower "
                "tail of dp_accounting's composed PLD, which carries spurious mass there (its pmf sums to 1.0000225); "
                "beta(1e-4) of DP-SGD 0.8 x 1000 is 0.998936 against the truth's bracket [0.998723, 0.998775] "
                "(module docstring)")


@functools.lru_cache(maxsize=None)
def mechkit_fdp(sigma, q, steps):
    """(tradeoff, tpr_at_fpr) at ALL and the advantage of the DP-SGD run: EstimateArrays and an Estimate."""
    run = mk.dpsgd(sigma, q, steps)
    return run.tradeoff(list(ALL)), run.tpr_at_fpr(list(ALL)), run.advantage()


@functools.lru_cache(maxsize=None)
def riskcal_dpsgd(sigma, q, steps):
    """riskcal's beta at ALL and its advantage for the run, from its DP-SGD functions."""
    beta = get_beta_for_dpsgd(noise_multiplier=sigma, sample_rate=q, num_steps=steps, alpha=np.array(ALL),
                              grid_step=GRID)
    adv = get_advantage_for_dpsgd(noise_multiplier=sigma, sample_rate=q, num_steps=steps, grid_step=GRID)
    return dict(zip(ALL, np.asarray(beta, float).tolist())), float(adv)


def _in(value, lower, upper, what):
    assert lower - SLACK <= value <= upper + SLACK, f"{what}: {value} outside mechkit's [{lower}, {upper}]"


def test_full_batch_against_the_exact_gdp_curve():
    sigma, q, steps = GDP
    mu = math.sqrt(steps) / sigma
    beta, tpr, adv = mechkit_fdp(*GDP)
    rc_beta, rc_adv = riskcal_dpsgd(*GDP)
    for i, a in enumerate(ALL):
        exact = float(special.ndtr(special.ndtri(1.0 - a) - mu))
        _in(exact, beta.lower[i], beta.upper[i], f"exact beta({a})")
        _in(1.0 - exact, tpr.lower[i], tpr.upper[i], f"exact tpr({a})")
        assert float(get_beta_from_gdp(mu, a)) == pytest.approx(exact, rel=1e-12, abs=1e-15)
        assert abs(rc_beta[a] - exact) <= 1e-5, (a, rc_beta[a], exact)
        _in(rc_beta[a], beta.lower[i], beta.upper[i], f"riskcal beta({a})")
    exact_adv = float(2.0 * special.ndtr(mu / 2.0) - 1.0)
    _in(exact_adv, adv.lower, adv.upper, "exact advantage")
    assert float(get_advantage_from_gdp(mu)) == pytest.approx(exact_adv, rel=1e-12)
    assert abs(rc_adv - exact_adv) <= 1e-5
    _in(rc_adv, adv.lower, adv.upper, "riskcal advantage")


@pytest.mark.parametrize("sigma, steps", DP_SGD)
@pytest.mark.parametrize("alpha", ALPHAS)
def test_dpsgd_tradeoff_and_tpr(sigma, steps, alpha):
    beta, tpr, _ = mechkit_fdp(sigma, Q, steps)
    rc = riskcal_dpsgd(sigma, Q, steps)[0][alpha]
    i = ALL.index(alpha)
    _in(rc, beta.lower[i], beta.upper[i], f"riskcal beta({alpha})")
    _in(1.0 - rc, tpr.lower[i], tpr.upper[i], f"riskcal tpr at fpr {alpha}")


@pytest.mark.parametrize("sigma, steps", DP_SGD)
def test_dpsgd_advantage(sigma, steps):
    adv = mechkit_fdp(sigma, Q, steps)[2]
    rc = riskcal_dpsgd(sigma, Q, steps)[1]
    # riskcal's advantage is dp_accounting's pessimistic delta(0): sound only if at least mechkit's lower bound
    _in(rc, adv.lower, adv.upper, "riskcal advantage")


@pytest.mark.xfail(strict=True, reason=RISKCAL_TAIL)
@pytest.mark.parametrize("sigma, steps", DP_SGD)
@pytest.mark.parametrize("alpha", SMALL)
def test_dpsgd_tradeoff_small_alpha(sigma, steps, alpha):
    beta = mechkit_fdp(sigma, Q, steps)[0]
    i = ALL.index(alpha)
    _in(riskcal_dpsgd(sigma, Q, steps)[0][alpha], beta.lower[i], beta.upper[i], f"riskcal beta({alpha})")


@functools.lru_cache(maxsize=None)
def ordered_pair_brackets(sigma, steps, top=10.0, points=4001):
    """{alpha: {"T1": (lower, upper), "T2": ...}} for alpha in SMALL: bounds on the trade-off functions of the two
    ordered pairs from dp_accounting's per-direction delta curves (T1: remove-direction lines and add-direction
    mirrors, the order riskcal reads below its symmetrisation point; T2: the other).  Lower: pessimistic
    (connect-the-dots) deltas at the grid points; upper: optimistic deltas, each interval's lines bounded by its
    ends, the lines beyond ``top`` by 1 - e^top alpha and e^-top (1 - alpha)."""
    def composed(**kw):
        return pld_module.from_gaussian_mechanism(standard_deviation=sigma, sampling_prob=Q,
                                                  value_discretization_interval=GRID, **kw).self_compose(steps)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pess, opt = composed(use_connect_dots=True), composed(pessimistic_estimate=False, use_connect_dots=False)
    eps = np.linspace(0.0, top, points)
    e = np.exp(eps)
    d = {(p, r): np.asarray(getattr(pld, f"_pmf_{r}").get_delta_for_epsilon(eps), float)
         for p, pld in (("pess", pess), ("opt", opt)) for r in ("remove", "add")}
    out = {}
    for alpha in SMALL:
        out[alpha] = {}
        for name, (steep, mirror) in {"T1": ("remove", "add"), "T2": ("add", "remove")}.items():
            low = np.max(np.maximum(1 - d["pess", steep] - e * alpha, (1 - d["pess", mirror] - alpha) / e))
            up = np.max(np.maximum(1 - d["opt", steep][1:] - e[:-1] * alpha,
                                   (1 - d["opt", mirror][1:] - alpha) / e[:-1]))
            up = max(up, 1 - e[-1] * alpha, (1 - alpha) / e[-1])
            out[alpha][name] = (min(max(float(low), 0.0), 1 - alpha), min(float(up), 1 - alpha))
    return out


@pytest.mark.parametrize("alpha", SMALL)
def test_small_alpha_reference_without_mechkit(alpha):
    sigma, steps = DP_SGD[0]
    ref = ordered_pair_brackets(sigma, steps)[alpha]
    (lo, up), (lo2, _) = ref["T1"], ref["T2"]
    assert lo2 > up, f"the other order's curve is not above at {alpha}: {ref}"   # the symmetrised curve is T1 here
    beta = mechkit_fdp(sigma, Q, steps)[0]
    i = ALL.index(alpha)
    assert lo <= beta.upper[i] + SLACK and beta.lower[i] <= up + SLACK, (ref["T1"], beta.lower[i], beta.upper[i])
