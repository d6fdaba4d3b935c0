"""Composition.curve (issues 21, 23): the composition's privacy curve composed once; its epsilon and delta answer as
the composition's FFT queries with the same variant and budgets (the same floats), and contain the closed-form truth
(k Gaussian runs are sqrt(k) / sigma GDP exactly)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import optimize, special

import mechkit as mk
from mechkit.errors import NumericalLimitError, ParameterError
from tests.helpers import assert_same_curve_answers


def gdp_delta(mu, eps):
    return special.ndtr(-eps / mu + mu / 2) - math.exp(eps + special.log_ndtr(-eps / mu - mu / 2))


@pytest.mark.parametrize("variant", ["ctd", "prv"])
def test_curve_contains_the_closed_form_and_equals_the_direct_queries(variant):
    run = mk.compose((mk.gaussian(2.0), 10))
    mu = math.sqrt(10) / 2.0
    curve = run.curve(eps_error=0.01, delta_error=1e-12, variant=variant)
    assert curve.variant == variant and f"variant={variant!r}" in repr(curve)
    deltas = [1e-3, 1e-5, 1e-7, 1e-9]
    est = curve.epsilon(deltas)
    for d, v, lo, up in zip(deltas, est, est.lower, est.upper):
        truth = optimize.brentq(lambda e: gdp_delta(mu, e) - d, 0.0, 100.0, xtol=1e-13)
        assert lo <= truth <= up and up - lo <= 0.021
        direct = run.epsilon(d, method="fft", variant=variant, delta_error=1e-12)
        assert (v, lo, up) == (float(direct), direct.lower, direct.upper)
        assert curve.epsilon(d).details == direct.details and direct.details["variant"] == variant
    eps = np.array([0.0, 0.5, 2.0, 6.0])
    dl = curve.delta(eps)
    truth = np.array([gdp_delta(mu, e) for e in eps])
    assert np.all(dl.lower <= truth) and np.all(truth <= dl.upper)
    direct = run.delta(eps, method="fft", variant=variant, delta_error=1e-12)
    assert np.array_equal(np.asarray(dl), np.asarray(direct)) and np.array_equal(dl.upper, direct.upper)
    assert np.array_equal(dl.lower, direct.lower)
    assert curve.delta(2.0) == dl[2] and isinstance(curve.epsilon(1e-5), mk.Estimate)


def test_curve_of_a_one_sided_composition_keeps_its_attained_lower_bound():
    m = mk.subsample(mk.gaussian(1.0), 0.05, scheme="without_replacement", relation="replace_one")
    run = mk.compose((m, 20))
    for variant in ("ctd", "prv"):
        c = run.curve(variant=variant)
        a, b = c.epsilon(1e-5), run.epsilon(1e-5, method="fft", variant=variant, delta_error=1e-10)
        assert (float(a), a.lower, a.upper) == (float(b), b.lower, b.upper) and "one_sided" in a.details


def test_curve_refuses_what_it_cannot_certify():
    run = mk.compose((mk.gaussian(1.0), 3))
    curve = run.curve(delta_error=1e-6, variant="prv")     # Theorem 5.5 charges delta_error itself
    with pytest.raises(NumericalLimitError, match="smallest certifiable delta"):
        curve.epsilon(1e-6)
    ctd = run.curve(delta_error=1e-6)   # connect the dots charges what the tails hold: it certifies delta_error
    a = ctd.epsilon(1e-6)
    truth = optimize.brentq(lambda e: gdp_delta(math.sqrt(3.0), e) - 1e-6, 0.0, 100.0, xtol=1e-13)
    assert a.lower <= truth <= a.upper and a.upper - a.lower < 0.03
    with pytest.raises(NumericalLimitError, match="smallest certifiable delta"):
        ctd.epsilon(1e-18)                              # below its rounding allowance
    with pytest.raises(ParameterError, match="delta"):
        curve.epsilon(1.5)
    with pytest.raises(ParameterError, match="eps_error"):
        mk.compose((mk.gaussian(1.0), 3)).curve(eps_error=-1.0)
    with pytest.raises(ParameterError, match="variant must be 'ctd'"):
        mk.compose((mk.gaussian(1.0), 3)).curve(variant="fa")
    assert curve.epsilon(0.0) == math.inf  # the Gaussian loss is unbounded: exact, no lookup


@pytest.mark.parametrize("variant", ["ctd", "prv"])
def test_saved_curve_answers_bit_for_bit_and_refuses_bad_files(tmp_path, variant):
    run = mk.dpsgd(noise_multiplier=1.0, sampling_rate=0.02, steps=200)
    curve = run.curve(variant=variant)
    path = tmp_path / "run.curve"
    curve.save(path)
    back = mk.load_curve(path)
    assert repr(back.composition) == repr(run) and back.eps_error == curve.eps_error and back.variant == variant
    assert_same_curve_answers(curve, back, (0.0, 1e-3, 1e-6, 1e-9), [0.0, 0.5, 1.0, 3.0])
    data = path.read_bytes()
    corrupt = tmp_path / "corrupt.curve"
    corrupt.write_bytes(data[:-200] + bytes(200))
    with pytest.raises(mk.CurveFileError, match="not a valid mechkit privacy-curve file"):
        mk.load_curve(corrupt)
    (tmp_path / "short.curve").write_bytes(data[: len(data) // 2])
    with pytest.raises(mk.CurveFileError, match="truncated or corrupt"):
        mk.load_curve(tmp_path / "short.curve")
    state = tmp_path / "filter.npz"
    mk.GDPFilter(3, epsilon=1.0, delta=1e-5).save(state)
    with pytest.raises(mk.CurveFileError, match="not written by PrivacyCurve.save"):
        mk.load_curve(state)
    with pytest.raises(FileNotFoundError):
        mk.load_curve(tmp_path / "missing.curve")


def test_any_accountant_object_answers_through_the_composition():
    """method= takes an object with account_epsilon/account_delta (a PrivacyCurve is one): the composition's own
    rules still apply around it (exact at delta 0, the +inf mass, the cap at the largest loss)."""
    run = mk.compose((mk.laplace(1.0), 3))  # largest loss 3, exactly

    class Constant:
        method = "constant"

        def account_epsilon(self, items, delta):
            return mk.Estimate(10.0, 9.0, 11.0, self.method, True)

        def account_delta(self, items, epsilon):
            return mk.EstimateArray(np.full(len(epsilon), 0.5), np.zeros(len(epsilon)), np.ones(len(epsilon)),
                                    self.method, True)

    est = run.epsilon(1e-5, method=Constant())
    # capped at the largest loss (3, up to the rounding the cap allows for)
    assert est.method == "constant" and float(est) == pytest.approx(3.0, abs=1e-9) and est.upper < 3.0 + 1e-9
    assert run.epsilon(0.0, method=Constant()) == pytest.approx(3.0, abs=1e-9)
    assert float(run.delta(1.0, method=Constant())) == 0.5
    with pytest.raises(ParameterError, match="accountant object"):
        run.epsilon(1e-5, method=object())
    with pytest.raises(ParameterError, match="unknown option"):
        run.epsilon(1e-5, method=Constant(), eps_error=0.1)


def test_a_loaded_ctd_curve_lacking_a_finer_grid_answers_certified_with_a_warning(tmp_path):
    """Connect the dots refines its grid for some queries (here 3 Gaussian runs of sigma 5 at eps_error 0.003: the
    mesh's spread model is set for delta 1e-5, and delta 1e-8 refines; 10 runs of sigma 2 at 0.01 did under the
    law-free model); a curve saved before such a query holds only its first grid: loaded, it answers that query with
    the first grid's certified interval (wider than eps_error) and a warning; saved after the query, it answers with
    the live floats."""
    import warnings

    run = mk.compose((mk.gaussian(5.0), 3))
    mu = math.sqrt(3) / 5.0
    live = run.curve(eps_error=0.003)
    live.save(tmp_path / "first.curve")
    back = mk.load_curve(tmp_path / "first.curve")
    refining = []
    for d in (1e-1, 1e-3, 1e-5, 1e-8):
        before = len(live._upper.grids)
        live.epsilon(d)
        if len(live._upper.grids) > before:
            refining.append(d)
    assert refining                                          # the premise: some query refines
    d = refining[0]
    a = live.epsilon(d)
    truth = optimize.brentq(lambda e: gdp_delta(mu, e) - d, 0.0, 100.0, xtol=1e-13)
    with pytest.warns(mk.MechkitWarning, match="wider than eps_error.*loaded from a file"):
        b = back.epsilon(d)
    assert b.lower <= truth <= b.upper and a.lower <= truth <= a.upper
    assert b.details["within_budget"] is False and "within_budget" not in a.details
    assert b.upper - b.lower >= a.upper - a.lower
    live.save(tmp_path / "all.curve")
    again = mk.load_curve(tmp_path / "all.curve")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for q in (1e-1, 1e-3, 1e-5, 1e-8):
            x, y = live.epsilon(q), again.epsilon(q)
            assert (float(x), x.lower, x.upper, x.details) == (float(y), y.lower, y.upper, y.details)


def test_version_1_curve_files_still_load(tmp_path):
    """Files written before connect the dots (format version 1, no variant: the PRV variant's curves) load as PRV
    curves with the same answers."""
    from mechkit import persist

    run = mk.compose((mk.gaussian(2.0), 10))
    curve = run.curve(variant="prv")
    curve.save(tmp_path / "v2.curve")
    meta, arrays = persist.load(tmp_path / "v2.curve", lambda why: AssertionError(why))
    meta["version"] = 1
    del meta["variant"]
    persist.save(tmp_path / "v1.curve", meta, arrays)
    old = mk.load_curve(tmp_path / "v1.curve")
    assert old.variant == "prv"
    a, b = curve.epsilon(1e-5), old.epsilon(1e-5)
    assert (float(a), a.lower, a.upper) == (float(b), b.lower, b.upper)
    meta["version"] = 3
    persist.save(tmp_path / "v3.curve", meta, arrays)
    with pytest.raises(mk.CurveFileError, match="format version 3"):
        mk.load_curve(tmp_path / "v3.curve")


@given(sigma=st.floats(0.5, 8.0), k=st.integers(1, 200), log_delta=st.floats(-9.0, -2.0),
       eps=st.floats(0.0, 8.0), eps_error=st.sampled_from([0.003, 0.01, 0.05]))
def test_random_gaussian_curves_hold_the_closed_form_and_equal_the_direct_queries(sigma, k, log_delta, eps, eps_error):
    """k Gaussian runs are sqrt(k)/sigma-GDP exactly: a connect-the-dots curve's certified epsilon and delta hold the
    truth at random settings, and are the direct FFT query's floats."""
    run = mk.compose((mk.gaussian(sigma), k))
    mu, d = math.sqrt(k) / sigma, 10.0 ** log_delta
    curve = run.curve(eps_error=eps_error, delta_error=1e-12)
    e = curve.epsilon(d)
    hi = mu * mu / 2 + 10 * mu + 10
    truth = optimize.brentq(lambda x: gdp_delta(mu, x) - d, 0.0, hi, xtol=1e-13) if gdp_delta(mu, 0.0) > d else 0.0
    assert e.lower - 1e-9 <= truth <= e.upper + 1e-9, (e, truth)
    direct = run.epsilon(d, method="fft", eps_error=eps_error, delta_error=1e-12)
    assert (float(e), e.lower, e.upper) == (float(direct), direct.lower, direct.upper)
    dl = curve.delta([eps])
    assert dl.lower[0] <= gdp_delta(mu, eps) + 1e-15 and gdp_delta(mu, eps) <= dl.upper[0] + 1e-15
