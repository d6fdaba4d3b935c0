"""The SPA on mirrored pairs (a Gaussian's two directions, a subsampled Gaussian at rate 1, a Laplace pair): the
second direction takes the first's estimate where their exact values agree at its tilt, and is certified by the
leader's upper bound's tilt; nothing else changes the answers."""
import math

import pytest
from hypothesis import given, settings, strategies as st

import mechkit as mk
from mechkit.accountants.spa import accountant as spa_accountant
from mechkit.accountants.spa import formulas as spa_formulas
from mechkit.accountants.spa import model as spa_model
from tests.references import mpmath_laws as R


def _without_mirrors(monkeypatch):
    """Turn the shortcut off: every direction is searched and bounded on its own, as before it existed."""
    monkeypatch.setattr(spa_model._Direction, "mirrors", lambda self, other, t, fn: False)


def _spy(monkeypatch, name):
    calls = []
    orig = getattr(spa_accountant, name)

    def spy(*a, **kw):
        calls.append(a[0].direction)
        return orig(*a, **kw)
    monkeypatch.setattr(spa_accountant, name, spy)
    return calls


MIRRORED = [
    ("gaussian", lambda: mk.gaussian(sigma=1.0), 1000, 1e-5),
    ("rate 1", lambda: mk.subsample(mk.gaussian(sigma=0.8), 1.0), 10000, 1e-5),
    ("laplace", lambda: mk.laplace(scale=2.0), 200, 1e-6),
    # a million runs: the two quadratures' log delta differ by ~3e-10, inside the composed CGF's rounding allowance
    ("a million runs", lambda: mk.subsample(mk.gaussian(sigma=1.0), 1.0), 1_000_000, 1e-5),
]


@pytest.mark.parametrize("name, make, k, delta", MIRRORED, ids=[c[0] for c in MIRRORED])
def test_a_mirrored_direction_takes_the_leaders_estimate_and_tilt(monkeypatch, name, make, k, delta):
    # the same answers as with every direction searched (estimate to the polish's tolerance; the upper bound to
    # MIRROR_UPPER; the lower bound is the leader's, which the other direction's own search can beat by its path,
    # ~5e-7 relative on a discrete Gaussian), with one certified_bounds call instead of two
    bounded = _spy(monkeypatch, "certified_bounds")
    tilted = _spy(monkeypatch, "upper_at_tilt_of")
    e = mk.compose((make(), k)).epsilon(delta, method="spa")
    assert bounded == ["remove"] and tilted == ["add"], name
    _without_mirrors(monkeypatch)
    spa_model._DIRECTIONS.clear()
    ref = mk.compose((make(), k)).epsilon(delta, method="spa")
    assert float(e) == pytest.approx(float(ref), rel=1e-10)
    assert abs(e.upper - ref.upper) <= spa_accountant.MIRROR_UPPER * (1.0 + ref.upper)
    assert ref.lower * (1 - 1e-5) <= e.lower <= ref.upper
    assert e.details["reliable"] == ref.details["reliable"]


def test_directions_that_differ_are_not_mirrored():
    # a subsampled Gaussian's directions differ (its remove direction leads at q < 1), and so do a Laplace pair of two
    # scales: neither is taken for the other at the leader's tilt, whatever the tolerance's scale
    for m, k in ((mk.subsample(mk.gaussian(sigma=1.0), 0.01), 1000), (mk.subsample(mk.gaussian(sigma=2.0), 0.5), 100)):
        run = mk.compose((m, k))
        e = run.epsilon(1e-5, method="spa")
        rem, add = spa_model.directions(tuple(run.items))
        t, fn = e.details["saddle_point"], spa_formulas.modelled_value("log_msd1")
        assert not add.mirrors(rem, t, fn)
        assert rem.mirrors(rem, t, fn)  # a direction does mirror itself (the check is not vacuous)


@settings(deadline=None)
@given(sigma=st.floats(0.5, 5.0), k=st.integers(1, 100000), logd=st.floats(-12.0, -3.0))
def test_rate_one_subsampling_is_certified_against_exact_gdp(sigma, k, logd):
    # subsampling at rate 1 is the Gaussian itself: k runs are mu-GDP with mu = sqrt(k)/sigma, delta(eps) =
    # Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (mpmath, tests/references).  Its two directions' laws come from
    # two quadratures, not a closed form: the leader's upper bound's tilt must certify the other direction too
    mu = math.sqrt(k) / sigma
    d = 10.0 ** logd
    exact = float(R.gdp_epsilon(mu, d))
    e = mk.compose((mk.subsample(mk.gaussian(sigma=sigma), 1.0), k)).epsilon(d, method="spa")
    assert e.lower <= exact * (1 + 1e-9) + 1e-12
    assert exact * (1 - 1e-9) - 1e-12 <= e.upper
    assert e.lower <= float(e) <= e.upper
