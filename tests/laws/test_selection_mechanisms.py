"""The exponential mechanism and permute-and-flip (issue 20): their catalog pairs against brute force.

The references here use no mechkit code: the output distributions of the exponential mechanism (a softmax) and of
permute-and-flip (exact, by enumerating the permutations) for every utility vector with 2-4 candidates and values
in {0, ..., 3}, against every neighbour that moves each utility by at most the sensitivity 1 (both orders of each
pair), and their hockey-stick divergences.  Claims checked:

* exponential mechanism, one run: sound (mechkit's curve >= every pair's) and tight: equal to every pair that is a
  generalized randomized response (losses t and t - epsilon only) at 2t - epsilon, and to pairs of real utilities built
  to attain any eps;
* permute-and-flip, one run: sound (randomized response at epsilon), and not tight (the enumeration stays below);
* two and three runs: products of the worst pairs, and an adaptive strategy of exponential mechanisms, stay below the
  certified upper bounds; the adaptive strategy exceeds the non-adaptive optimum (Dong, Durfee, Rogers 2020's gap),
  which ``BoundedRange(adaptive=False)`` reproduces exactly for runs fixed in advance.
"""
import itertools
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, strategies as st

import mechkit as mk
from mechkit.errors import ParameterError
from mechkit.laws import selection as S

EPSILONS = (0.5, 1.0, 2.0)
TOL = 1e-12


# -- references (no mechkit) ---------------------------------------------------------------------------------------

def em_probs(u, eps):
    """Exponential mechanism: P(r) proportional to exp(eps u_r / 2) (sensitivity 1), rows of ``u``."""
    z = np.exp(eps * (u - u.max(axis=-1, keepdims=True)) / 2)
    return z / z.sum(axis=-1, keepdims=True)


def pf_probs(u, eps):
    """Permute-and-flip, exactly: average over the k! orders of P(r is the first candidate whose coin comes up),
    coin r with probability exp(eps (u_r - max u) / 2)."""
    n, k = u.shape
    flip = np.exp(eps * (u - u.max(axis=1, keepdims=True)) / 2)
    out = np.zeros((n, k))
    perms = list(itertools.permutations(range(k)))
    for perm in perms:
        rest = np.ones(n)
        for r in perm:
            out[:, r] += rest * flip[:, r]
            rest = rest * (1 - flip[:, r])
    return out / len(perms)


def pf_probs_integral(u, eps):
    """Permute-and-flip by the order-statistics integral p_r int_0^1 prod_(s != r) (1 - x p_s) dx (one row)."""
    p = np.exp(eps * (u - u.max()) / 2)
    out = []
    for r in range(u.size):
        poly = np.polynomial.Polynomial([1.0])
        for s in range(u.size):
            if s != r:
                poly = poly * np.polynomial.Polynomial([1.0, -p[s]])
        out.append(p[r] * (poly.integ()(1.0) - poly.integ()(0.0)))
    return np.array(out)


def hockey(p, q, eps):
    """delta_(P, Q)(eps) = sum (P - e^eps Q)_+ for rows of P and Q and every eps of the grid: shape (rows, eps)."""
    return np.maximum(p[:, None, :] - np.exp(eps)[None, :, None] * q[:, None, :], 0).sum(axis=2)


def neighbours(k):
    """Every utility vector in {0..3}^k with every neighbour u + d, d in {-1, 0, 1}^k: two arrays of rows."""
    u = np.array(list(itertools.product(range(4), repeat=k)), float)
    d = np.array(list(itertools.product((-1, 0, 1), repeat=k)), float)
    a = np.repeat(u, len(d), axis=0)
    return a, a + np.tile(d, (len(u), 1))


def worst(probs, eps, grid, k):
    """Max over every neighbouring pair, both orders, of delta at each eps of the grid; with the pairs."""
    a, b = neighbours(k)
    p, q = probs(a, eps), probs(b, eps)
    both = np.maximum(hockey(p, q, grid), hockey(q, p, grid))
    return both.max(axis=0), p, q, both


def composed_delta(pairs, eps):
    """delta(eps) of the product of the pairs [(P, Q), ...] (a 1-D grid of eps), by enumerating the outcomes."""
    p, q = np.array([1.0]), np.array([1.0])
    for a, b in pairs:
        p, q = np.outer(p, a).ravel(), np.outer(q, b).ravel()
    return hockey(p[None, :], q[None, :], np.asarray(eps, float))[0]


def em_pair_at(eps, t):
    """Two candidates whose utilities move in opposite directions, chosen so that the exponential mechanism's pair
    is RR(eps, t): u = (0, -g), u' = (-1, 1 - g) with e^(-eps g/2) = w solving
    t = eps/2 + log((e^(-eps/2) + w e^(eps/2)) / (1 + w))."""
    r = math.exp(t - eps / 2)
    w = (r - math.exp(-eps / 2)) / (math.exp(eps / 2) - r)
    g = -2 * math.log(w) / eps
    u, v = np.array([[0.0, -g]]), np.array([[-1.0, 1.0 - g]])
    assert np.max(np.abs(u - v)) <= 1 + 1e-12
    return em_probs(u, eps)[0], em_probs(v, eps)[0]


# -- one run -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("eps", EPSILONS)
def test_exponential_mechanism_one_run_is_sound_and_tight(eps):
    em = mk.exponential_mechanism(eps)
    grid = np.linspace(-1.2 * eps, 1.2 * eps, 49)
    curve = em.delta(grid)
    closed = np.where(np.abs(grid) < eps, (math.exp(eps / 2) - np.exp(np.clip(grid, -eps, eps) / 2)) ** 2
                      / math.expm1(eps), np.where(grid <= -eps, -np.expm1(grid), 0.0))
    assert np.max(np.abs(curve - closed)) < TOL
    attained = 0
    for k in (2, 3, 4):
        top, p, q, _ = worst(em_probs, eps, grid, k)
        assert np.all(top <= curve + TOL), (k, np.max(top - curve))
        # every pair whose losses are exactly t and t - eps is RR(eps, t): mechkit equals it at 2t - eps
        for a, b in ((p, q), (q, p)):
            loss = np.log(a) - np.log(b)
            hi, lo = loss.max(axis=1), loss.min(axis=1)
            two = np.all((np.abs(loss - hi[:, None]) < 1e-12) | (np.abs(loss - lo[:, None]) < 1e-12), axis=1)
            rr = np.flatnonzero(two & (np.abs(hi - lo - eps) < 1e-12))
            for i in rr[:: max(1, rr.size // 10)]:
                at = 2 * hi[i] - eps
                assert abs(hockey(a[i:i + 1], b[i:i + 1], np.array([at]))[0, 0] - em.delta(at)) < TOL
                attained += 1
    assert attained > 20
    # and any eps in (-eps, eps) is attained by two candidates with real utilities
    for at in np.linspace(-0.95 * eps, 0.95 * eps, 9):
        a, b = em_pair_at(eps, (eps + at) / 2)
        assert abs(hockey(a[None], b[None], np.array([at]))[0, 0] - em.delta(at)) < TOL


@pytest.mark.parametrize("eps", EPSILONS)
def test_permute_and_flip_one_run_is_sound_not_tight(eps):
    pf = mk.permute_and_flip(eps)
    grid = np.linspace(-1.2 * eps, 1.2 * eps, 49)
    curve = pf.delta(grid)
    rr = np.where(np.abs(grid) < eps, (math.exp(eps) - np.exp(np.clip(grid, -eps, eps))) / (1 + math.exp(eps)),
                  np.where(grid <= -eps, -np.expm1(grid), 0.0))
    assert np.max(np.abs(curve - rr)) < TOL  # randomized response at eps
    u = np.array([[0.0, -1.0, 2.5, 0.5]])
    assert np.allclose(pf_probs(u, eps)[0], pf_probs_integral(u[0], eps), atol=1e-15)
    for k in (2, 3, 4):
        top, *_ = worst(pf_probs, eps, grid, k)
        assert np.all(top <= curve + TOL), (k, np.max(top - curve))
        # not tight: the worst pair found by search is the two-candidate swap (0, -1) -> (-1, 0), with
        # delta(0) = 1 - e^(-eps/2); more candidates (here within 3 of the best) only dilute it
        assert top[24] <= -math.expm1(-eps / 2) + TOL and top[24] < 0.95 * curve[24]
        if k == 2:
            assert top[24] == pytest.approx(-math.expm1(-eps / 2), abs=TOL)


def _utilities(draw_k=st.integers(2, 5)):
    return st.tuples(draw_k, st.integers(0, 2 ** 32 - 1), st.sampled_from(EPSILONS))


@given(_utilities())
def test_random_real_utilities_stay_below_both_pairs(args):
    k, seed, eps = args
    rng = np.random.default_rng(seed)
    u = rng.normal(0, 3, size=(1, k)) * rng.choice([0.1, 1.0, 5.0])
    v = u + rng.uniform(-1, 1, size=(1, k))
    grid = np.linspace(-eps, eps, 9)
    em, pf = _pairs(eps)
    for probs, curve in ((em_probs, em), (pf_probs, pf)):
        p, q = probs(u, eps), probs(v, eps)
        got = np.maximum(hockey(p, q, grid), hockey(q, p, grid))[0]
        assert np.all(got <= curve + TOL)


_CURVES = {}


def _pairs(eps):
    if eps not in _CURVES:
        grid = np.linspace(-eps, eps, 9)
        _CURVES[eps] = (mk.exponential_mechanism(eps).delta(grid), mk.permute_and_flip(eps).delta(grid))
    return _CURVES[eps]


# -- compositions --------------------------------------------------------------------------------------------------

def test_products_of_worst_pairs_stay_below_the_certified_upper_bounds():
    eps = 1.0
    grid = np.linspace(-1.2 * eps, 1.2 * eps, 49)
    for name, probs, make in (("em", em_probs, mk.exponential_mechanism), ("pf", pf_probs, mk.permute_and_flip)):
        _, p, q, both = worst(probs, eps, grid, 3)
        picks = {int(np.argmax(both[:, j])) for j in (10, 20, 24, 30, 36)}
        pairs = [(p[i], q[i]) for i in picks] + [(q[i], p[i]) for i in picks]
        out = np.linspace(0.0, 1.5 * eps, 7)
        for n in (2, 3):
            upper = np.asarray(mk.compose((make(eps), n)).delta(out, method="fft").upper)
            br = mk.compose((make(eps), n)).delta(out, method=mk.BoundedRange()).upper if name == "em" else upper
            na = mk.compose((make(eps), n)).delta(out, method=mk.BoundedRange(adaptive=False)).upper \
                if name == "em" else upper
            seen = 0.0
            for combo in itertools.combinations_with_replacement(range(len(pairs)), n):
                got = composed_delta([pairs[i] for i in combo], out)
                seen = max(seen, float(np.max(got)))
                assert np.all(got <= np.minimum(upper, np.minimum(br, na)) + TOL), (name, n, combo)
            assert seen > 0.1


def _adaptive_two_runs(eps, target):
    """Two exponential mechanisms, the second chosen after the first's output (utilities built by ``em_pair_at``):
    t1 = eps/2, then t2 = (eps + rest)/2 for what is left of ``target`` after the first loss (clipped into (0, eps))."""
    p1, q1 = em_pair_at(eps, eps / 2)
    loss1 = np.log(p1) - np.log(q1)
    p, q = [], []
    for j in range(2):
        t2 = min(max((eps + target - loss1[j]) / 2, 1e-9), eps - 1e-9)
        p2, q2 = em_pair_at(eps, t2)
        p += list(p1[j] * p2)
        q += list(q1[j] * q2)
    return np.array(p), np.array(q)


def test_adaptive_runs_exceed_the_non_adaptive_optimum_but_not_the_upper_bounds():
    eps = 1.0
    p, q = _adaptive_two_runs(eps, 0.0)
    got = hockey(p[None], q[None], np.array([0.0]))[0, 0]
    run = mk.compose((mk.exponential_mechanism(eps), 2))
    na = run.delta(0.0, method=mk.BoundedRange(adaptive=False))
    br = run.delta(0.0, method=mk.BoundedRange())
    pair = run.delta(0.0, method="fft")
    assert got > na.upper + 0.01          # the cost of adaptivity: 0.3034 against 0.2883
    assert br.lower <= na.upper and got <= br.upper and got <= pair.upper
    assert got == pytest.approx(0.3033654964831823, rel=1e-9)
    # the best two adaptive runs: any first t, then the one-run optimum (the envelope) at what is left
    out = np.array([0.0, 0.3, 0.8, 1.4])
    t1 = np.linspace(1e-9, eps - 1e-9, 4001)
    p1 = (math.exp(eps) - np.exp(t1)) / math.expm1(eps)
    one = mk.exponential_mechanism(eps)
    best = np.array([np.max(p1 * one.delta(x - t1) + (1 - p1) * one.delta(x - t1 + eps)) for x in out])
    bracket = run.delta(out, method=mk.BoundedRange())
    assert np.all(best <= np.asarray(bracket.upper) + TOL) and np.all(np.asarray(bracket.lower) <= best + TOL)


def test_non_adaptive_optimum_has_one_common_t_and_is_attained():
    eps = 1.0
    for n, ts in ((2, np.linspace(0, eps, 81)), (3, np.linspace(0, eps, 21))):
        run = mk.compose((mk.exponential_mechanism(eps), n))
        out = np.array([0.0, 0.4, 1.1, 2.0])
        na = run.delta(out, method=mk.BoundedRange(adaptive=False))
        neg = np.array([-0.5, -0.1])  # compositions answer eps >= 0; the optimum itself takes any eps
        grr = {t: S.grr_log_masses(eps, t) for t in ts}
        pair = {t: (np.exp(grr[t]), np.exp([grr[t][0] - t, grr[t][1] + eps - t])) for t in ts}
        best = np.zeros(out.size)
        for combo in itertools.product(ts, repeat=n):
            best = np.maximum(best, composed_delta([pair[t] for t in combo], out))
        assert np.all(best <= np.asarray(na.upper) + TOL)
        assert np.all(np.asarray(na.lower) <= np.asarray(na.upper))
        best_neg = np.zeros(neg.size)
        for combo in itertools.product(ts, repeat=n):
            best_neg = np.maximum(best_neg, composed_delta([pair[t] for t in combo], neg))
        assert np.all(best_neg <= [S.nonadaptive_delta(eps, n, float(x))[0] + TOL for x in neg])
        # attained: RR(eps, t*) composed n times, t* the optimum's t (its pair is an exponential mechanism's)
        for x, value in zip(out, np.asarray(na)):
            d, t, exact = S.nonadaptive_delta(eps, n, float(x))
            assert exact and d == pytest.approx(value, rel=1e-9, abs=1e-15)
            if 0 < t < eps:
                a, b = em_pair_at(eps, t)
                assert composed_delta([(a, b)] * n, [x])[0] == pytest.approx(d, rel=1e-9)


def rr_composed_delta(eps, k, t, x):
    """delta(x) of RR(eps, t) composed k times by the binomial law of the low outputs (no mechkit)."""
    from scipy.stats import binom

    p_lo = math.expm1(t) / math.expm1(eps)
    i = np.arange(k + 1)
    loss = k * t - i * eps
    return float(np.sum(binom.pmf(i, k, p_lo) * np.maximum(0.0, -np.expm1(x - loss))))


@given(st.floats(0.05, 3.0), st.integers(1, 200), st.floats(0.01, 0.99), st.floats(-12.0, -1.0))
def test_random_composed_rr_inversions_are_attained(eps, k, frac, log10_delta):
    t, d = frac * eps, 10.0 ** log10_delta
    x = S.grr_composed_epsilon(eps, k, t, d)
    assert rr_composed_delta(eps, k, t, x + 1e-9 * (1 + x)) <= d * (1 + 1e-8)
    if x > 0:  # the smallest such epsilon: a lower bound that the composition attains
        assert rr_composed_delta(eps, k, t, x * (1 - 1e-7) - 1e-12) >= d * (1 - 1e-8)
    assert S.grr_composed_delta(eps, k, t, x) == pytest.approx(rr_composed_delta(eps, k, t, x), rel=1e-9, abs=1e-300)


def test_bounded_range_epsilon_brackets_and_refusals():
    em = mk.exponential_mechanism(0.5)
    run = mk.compose((em, 20))
    na = run.epsilon(1e-6, method=mk.BoundedRange(adaptive=False))
    ad = run.epsilon(1e-6, method=mk.BoundedRange())
    pair = run.epsilon(1e-6, method="fft")
    assert na.upper - na.lower < 1e-7 and na.certified
    assert S.nonadaptive_delta(0.5, 20, na.upper)[0] <= 1e-6 <= S.nonadaptive_delta(0.5, 20, na.lower)[0]
    assert ad.lower <= na.lower + 1e-9 and ad.upper >= na.upper and ad.upper <= pair.upper + 1e-12
    assert ad.details["upper_rdp"] >= ad.upper and ad.details["upper_pair"] >= ad.upper
    assert "Section 5" in na.details["note"] and ad.details["adaptive"] is True
    with pytest.raises(ParameterError, match="hold exponential mechanisms"):
        mk.compose((mk.permute_and_flip(1.0), 3)).epsilon(1e-6, method=mk.BoundedRange())
    mixed = mk.compose((em, 3), (mk.exponential_mechanism(1.0), 2))
    with pytest.raises(ParameterError, match="one epsilon"):
        mixed.epsilon(1e-6, method=mk.BoundedRange(adaptive=False))
    with_laplace = mk.compose((em, 3), (mk.laplace(2.0), 2))
    got = with_laplace.epsilon(1e-6, method=mk.BoundedRange())
    assert got.lower <= got.upper <= with_laplace.epsilon(1e-6, method="fft").upper + 1e-12


def test_renyi_divergence_of_the_class():
    for eps in (0.1, 1.0, 3.0):
        em = mk.exponential_mechanism(eps)
        ts = np.linspace(1e-9, eps - 1e-9, 20001)
        for alpha in (1.5, 2.0, 8.0, 64.0):
            p = (math.exp(eps) - np.exp(ts)) / math.expm1(eps)
            grid = np.log(p * np.exp((alpha - 1) * ts) + (1 - p) * np.exp((alpha - 1) * (ts - eps))) / (alpha - 1)
            sup = S.bounded_range_rdp(eps, alpha)
            assert grid.max() <= sup + 1e-12 and sup <= grid.max() + 1e-8
            assert sup <= alpha * eps ** 2 / 8 and sup <= em.rdp(alpha)


def test_guarantees_are_stated_and_survive_pickling():
    em, pf = mk.exponential_mechanism(1.0), mk.permute_and_flip(1.0)
    assert "one run tight" in repr(em) and "valid upper bound" in repr(em) and "valid upper bound" in repr(pf)
    assert "tight" in em.guarantee and "Theorem 1" in pf.guarantee
    again = pickle.loads(pickle.dumps(em))
    assert repr(again) == repr(em) and again.delta(0.3) == em.delta(0.3)
    rel = mk.with_relation(em, "replace_one")
    assert S.bounded_range_epsilon(rel) == 1.0 and S.bounded_range_epsilon(pf) is None
    rr = mk.selection.generalized_randomized_response(1.0, 0.75)
    assert rr.delta(0.5) == pytest.approx(em.delta(0.5), rel=1e-12)  # t = (1 + 0.5)/2 is the worst t at 0.5
    with pytest.raises(ParameterError):
        mk.selection.generalized_randomized_response(1.0, 1.0)


def test_a_composed_pair_reports_no_lower_bound_for_the_mechanisms():
    """Composed, the exponential mechanism's pair overstates the mechanisms' worst case (10 runs at epsilon 1: the
    pair's estimate 8.12 lies above BoundedRange's certified upper bound 7.77), so an accountant's lower bound on the
    pairs is no lower bound on the mechanisms: Composition reports 0 and says why.  Alone, one run is tight; the
    accountant that bounds the mechanisms themselves keeps its lower bound; permute-and-flip's pair is never tight."""
    e = mk.exponential_mechanism(1.0)
    assert mk.compose((e, 1)).epsilon(1e-6).lower > 0.98
    ten = mk.compose((e, 10)).epsilon(1e-6, method="fft")
    br = mk.compose((e, 10)).epsilon(1e-6, method=mk.BoundedRange())
    assert float(ten) > br.upper and ten.lower == 0.0 and "pairs' composition" in ten.details["lower"]
    assert 7.7 < br.lower <= br.upper
    mixed = mk.compose((e, 1), mk.gaussian(sigma=2.0)).delta([0.5, 1.0], method="fft")
    assert list(mixed.lower) == [0.0, 0.0]
    assert mk.compose((mk.permute_and_flip(1.0), 1)).epsilon(1e-6).lower == 0.0


def test_a_saved_curve_keeps_the_missing_lower_bound(tmp_path):
    path = tmp_path / "em.npz"
    mk.compose((mk.exponential_mechanism(1.0), 10)).curve(eps_error=0.05, delta_error=1e-8).save(path)
    back = mk.load_curve(path).epsilon(1e-5)
    assert back.lower == 0.0 and "lower" in back.details
    path2 = tmp_path / "g.npz"
    mk.compose((mk.gaussian(sigma=2.0), 10)).curve(eps_error=0.05, delta_error=1e-8).save(path2)
    assert mk.load_curve(path2).epsilon(1e-5).lower > 0
