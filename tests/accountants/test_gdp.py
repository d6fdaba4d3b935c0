"""The mu-GDP curve (mk.gdp) against mpmath at 50-60 digits, including tiny mu and delta where its two terms
nearly cancel."""
import mpmath
import pytest

import mechkit as mk


def test_gdp_against_mpmath():
    with mpmath.workdps(50):
        for mu, eps in [(0.3, 0.1), (1.0, 1.0), (2.0, 5.0), (0.5, 10.0), (5.0, 1.0)]:
            ref = mpmath.ncdf(-eps / mu + mu / 2) - mpmath.e ** eps * mpmath.ncdf(-eps / mu - mu / 2)
            assert mk.gdp.delta(mu, eps) == pytest.approx(float(ref), rel=1e-10)
            assert mk.gdp.epsilon(mu, float(ref)) == pytest.approx(eps, rel=1e-9, abs=1e-10)


@pytest.mark.parametrize("mu,d", [(1e-8, 1e-300), (1.5e-6, 1e-100), (0.01, 1e-30), (0.49, 1e-200), (0.51, 1e-200),
                                  (1.0, 1e-10), (20.0, 1e-100)])
def test_gdp_epsilon_tiny_mu_and_delta_against_mpmath(mu, d):
    # the mu-GDP curve is a difference of two nearly equal terms when mu is small: mechkit computes the
    # difference without cancellation; mpmath at 60 digits is the reference
    import mpmath as mp
    with mp.workdps(60):
        m, dd = mp.mpf(mu), mp.mpf(d)
        f = lambda e: mp.ncdf(-e / m + m / 2) - mp.exp(e) * mp.ncdf(-e / m - m / 2)  # noqa: E731
        lo, hi = mp.mpf(0), mp.mpf(1)
        while f(hi) > dd:
            hi *= 2
        for _ in range(120):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) > dd else (lo, mid)
        ref = float(hi)
        eps_probe = ref
        d_probe = float(f(mp.mpf(eps_probe)))
    assert mk.gdp.epsilon(mu, d) == pytest.approx(ref, rel=1e-9)
    # delta itself, where the cancellation bites (epsilon is insensitive to it)
    assert mk.gdp.delta(mu, eps_probe) == pytest.approx(d_probe, rel=1e-9, abs=0.0)
