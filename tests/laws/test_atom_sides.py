"""The tails of a loss with atoms put each atom on the right side (P(Z > a) excludes the atom at a, P(Z <= a)
includes it), checked at the atoms themselves against the atoms' probabilities; found by a mutation check, where a
flipped side changed no privacy curve (the atom's term vanishes at eps = a) and one exact == 0.0 caught it."""
import numpy as np
import pytest

import mechkit as mk
from tests.helpers import approx_dp_pair


@pytest.mark.parametrize("make", [lambda: mk.randomized_response(epsilon=0.7), lambda: mk.discrete_laplace(3.0),
                                  lambda: mk.laplace(scale=1.3), lambda: mk.subsample(mk.randomized_response(1.0), 0.1),
                                  lambda: approx_dp_pair()(eps0=0.5, delta0=1e-3)])
def test_tails_at_the_atoms_put_the_atom_on_the_right_side(make):
    # P(Z > a) excludes the atom at a and P(Z <= a) includes it, in both directions and under the dual measure.
    # Every other test evaluates the tails away from the atoms (or through the hockey stick, which is continuous
    # in eps: the atom at a contributes p_a (1 - e^(a - a)) = 0), so a swapped side went unnoticed but for one
    # exact-zero assertion.
    m = make()
    for plrv in (m.remove, m.add, m.remove.dual, m.add.dual):
        vals, probs = plrv.atoms()
        fin = np.isfinite(vals)
        a = vals[fin]
        above = np.array([probs[vals > x].sum() for x in a])
        cdf_atoms = np.array([probs[(vals <= x)].sum() for x in a])
        sf, cdf = plrv.sf(a), plrv.cdf(a)
        jump = cdf - (1.0 - plrv.sf(np.nextafter(a, -np.inf)))       # P(Z = a) = F(a) - F(a-)
        np.testing.assert_allclose(jump, probs[fin], rtol=1e-9, atol=1e-15)
        if not plrv.has_monotone_pieces:                             # purely atomic: tails are the sums
            np.testing.assert_allclose(sf, above, rtol=1e-12, atol=1e-300)
            np.testing.assert_allclose(cdf, cdf_atoms, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("prob", [True, False])
@pytest.mark.parametrize("closed", [True, False])
def test_a_law_without_atoms_gives_the_compiled_pass_answer_without_it(prob, closed):
    """``AtomSet.tails`` answers an empty set itself (mass 0, log -inf) and leaves ``atom_tails`` uncompiled where no
    law has atoms: the same numbers as the compiled pass over no atoms."""
    from mechkit.engine import numerics as N
    from mechkit.laws.core import AtomSet
    empty = AtomSet([], [], [])
    s = np.array([-np.inf, -3.0, 0.0, 0.5, 2.0, np.inf])
    for m in (0, 1):
        got, want = np.full(s.shape, np.nan), np.full(s.shape, np.nan)
        empty.tails(m, s, 0.5, closed, prob, got)
        N.atom_tails(empty.values, empty._below[m], empty._above[m], s, 0.5, closed, prob, want)
        assert got.tolist() == want.tolist() == ([0.0] * 6 if prob else [-np.inf] * 6)


@pytest.mark.parametrize("make", [lambda: mk.subsample(mk.gaussian(sigma=0.8), 0.01), lambda: mk.gaussian(sigma=1e-7),
                                  lambda: mk.laplace(scale=1.3), lambda: mk.subsample(mk.randomized_response(1.0), 0.1),
                                  lambda: mk.discrete_gaussian(sigma=3.0), lambda: mk.zcdp(rho=1e14),
                                  lambda: mk.zcdp(rho=1e50), lambda: approx_dp_pair()(eps0=0.5, delta0=1e-3)])
def test_the_median_scan_evaluates_far_losses_only_where_they_decide(monkeypatch, make):
    # the split point of the tails (near the median) is bracketed by a scan over +-1e-12 .. 1e300 (coarse points
    # -1e12, 1e-8 between the far ones, 1e24 the next); the far points (costly) are evaluated only on a side where
    # the crossing may lie: the same median as evaluating every point, for medians near 0, far out on either side
    # (zCDP at rho 1e50: 1e50 and, under the dual measure, -1e50; a Gaussian of sigma 1e-7: 5e13) and on atoms
    from mechkit.laws.plrv import PLRV

    def medians():
        m = make()
        return [p._median() for p in (m.remove, m.add, m.remove.dual, m.add.dual)]
    got = medians()
    monkeypatch.setattr(PLRV, "_coarse_below", lambda self, pts, half: self._lower(pts) <= half)
    assert got == medians()
