"""Tabulated mechanisms (``mk.tabulated``, ``mk.tabulated_losses``; issue 22's from_pld builds on them): one-shot
curves against the exact finite sums, compositions against brute-force enumeration of every output tuple, the
catalog's randomized response, argument checks, pickling, and the refusals of the symbolic transforms.

References (no mechkit code): delta(eps) = sum_i max(0, p_i - e^eps q_i) for remove (outputs with q_i = 0 included:
the mass at +inf), the same with p and q exchanged for add; a composition's pair is the product of the tables over
all output tuples."""
from __future__ import annotations

import itertools
import math
import pickle

import numpy as np
import pytest

import mechkit as mk
from mechkit.errors import ParameterError

EPS = [0.0, 0.05, 0.3, 0.7, 1.2, 2.5]


def hockey(p, q, eps):
    """sum max(0, p - e^eps q), summed in extended precision."""
    return math.fsum(max(0.0, a - math.exp(eps) * b) for a, b in zip(p, q))


def loss_hockey(losses, probs, inf, eps):
    return inf + math.fsum(w * -math.expm1(eps - l) for l, w in zip(losses, probs) if l > eps)


# pairs with zeros on either side (losses of +-inf), equal ratios (merged atoms), and a near-1 ratio
TABLES = [
    ([0.5, 0.3, 0.2, 0.0], [0.1, 0.3, 0.4, 0.2]),
    ([0.05, 0.2, 0.25, 0.5], [0.0, 0.2, 0.3, 0.5]),
    ([0.7, 0.3], [0.6, 0.4]),
    ([0.1, 0.2, 0.3, 0.4], [0.2, 0.4, 0.15, 0.25]),
]


@pytest.mark.parametrize("p, q", TABLES)
def test_one_shot_curve_is_the_exact_finite_sum(p, q):
    m = mk.tabulated(p, q)
    for eps in EPS:
        remove, add = hockey(p, q, eps), hockey(q, p, eps)
        assert m.delta(eps, direction="remove") == pytest.approx(remove, rel=1e-13, abs=1e-16)
        assert m.delta(eps, direction="add") == pytest.approx(add, rel=1e-13, abs=1e-16)
        assert m.delta(eps) == pytest.approx(max(remove, add), rel=1e-13, abs=1e-16)
    assert m.remove.inf_mass == pytest.approx(sum(a for a, b in zip(p, q) if b == 0 < a), abs=1e-16)
    assert m.add.inf_mass == pytest.approx(sum(b for a, b in zip(p, q) if a == 0 < b), abs=1e-16)
    for d in (0.2, 0.05, 1e-3):
        e = m.epsilon(d)
        if math.isfinite(e) and e > 0:
            assert max(hockey(p, q, e), hockey(q, p, e)) == pytest.approx(d, rel=1e-9)


@pytest.mark.parametrize("tables", [(0, 3), (1, 2, 3)])
def test_compositions_against_every_output_tuple(tables):
    """Two or three tabulated mechanisms composed by mk.compose (FFT, certified) against the product pair
    enumerated over all output tuples: the exact delta lies in the certified interval, and the product tabulated
    directly has exactly that delta."""
    pairs = [TABLES[i] for i in tables]
    P = [math.prod(t) for t in itertools.product(*(p for p, _ in pairs))]
    Q = [math.prod(t) for t in itertools.product(*(q for _, q in pairs))]
    run = mk.compose(*(mk.tabulated(p, q, name=f"t{i}") for i, (p, q) in zip(tables, pairs)))
    product = mk.tabulated(P, Q)
    eps = np.array([0.1, 0.5, 1.0])
    exact = np.array([max(hockey(P, Q, e), hockey(Q, P, e)) for e in eps])
    est = run.delta(eps, method="fft", eps_error=0.005)
    assert np.all(np.asarray(est.lower) - 1e-12 <= exact) and np.all(exact <= np.asarray(est.upper) + 1e-12)
    np.testing.assert_allclose(product.delta(eps), exact, rtol=1e-12, atol=1e-16)


def test_tabulated_randomized_response_is_the_catalogs():
    e0 = 0.8
    hi, lo = math.exp(e0) / (1 + math.exp(e0)), 1 / (1 + math.exp(e0))
    tab, rr = mk.tabulated([lo, hi], [hi, lo], name="rr"), mk.randomized_response(e0)
    eps = np.array([0.0, 0.2, 0.5, 0.79])
    np.testing.assert_allclose(tab.delta(eps), rr.delta(eps), rtol=1e-12, atol=1e-15)
    assert tab.epsilon(1e-3) == pytest.approx(rr.epsilon(1e-3), rel=1e-12)
    assert tab.remove.cgf(0.7, 2) == pytest.approx(rr.remove.cgf(0.7, 2), rel=1e-12)
    # beside a catalog mechanism in one composition: the same answers as with the catalog's RR
    a = mk.compose((tab, 6), (mk.laplace(3.0), 2)).epsilon(1e-4, method="fft")
    b = mk.compose((rr, 6), (mk.laplace(3.0), 2)).epsilon(1e-4, method="fft")
    assert float(a) == pytest.approx(float(b), rel=1e-12)
    assert (a.lower, a.upper) == pytest.approx((b.lower, b.upper), rel=1e-12)


def test_a_loss_distribution_determines_its_pair():
    """tabulated_losses: the remove direction has exactly the given law, the add direction the pair's (log q/p
    under Q: mass w e^-l at -l, the rest of Q at +inf); with add= the add direction has its own law."""
    losses, probs, inf = [-0.5, 0.0, 0.4, 1.0], [0.2, 0.3, 0.3, 0.15], 0.05
    m = mk.tabulated_losses(losses, probs, inf)
    vals, ps = m.remove.atoms()
    np.testing.assert_allclose(vals, losses + [math.inf])
    np.testing.assert_allclose(ps, probs + [inf], rtol=1e-15)
    q = [w * math.exp(-l) for l, w in zip(losses, probs)]
    for eps in EPS:
        assert m.delta(eps, direction="remove") == pytest.approx(loss_hockey(losses, probs, inf, eps), rel=1e-13)
        add_exact = loss_hockey([-l for l in losses], q, 1.0 - math.fsum(q), eps)
        assert m.delta(eps, direction="add") == pytest.approx(add_exact, rel=1e-13)
    assert not m.two_pairs
    own = ([-0.5, 0.3, 0.6], [0.2, 0.5, 0.3], 0.0)
    two = mk.tabulated_losses(losses, probs, inf, add=own)
    assert two.two_pairs
    vals, ps = two.add.atoms()
    np.testing.assert_allclose(vals, own[0])
    np.testing.assert_allclose(ps, own[1], rtol=1e-15)
    for eps in EPS:
        assert two.delta(eps, direction="add") == pytest.approx(loss_hockey(*own, eps), rel=1e-13, abs=1e-16)
        assert two.delta(eps, direction="remove") == m.delta(eps, direction="remove")
    # the add law's dual is its own pair's Q' = w e^-l (here summing to 0.865: the rest at -inf)
    vals, qs = two.add.dual.atoms()
    q_own = [w * math.exp(-l) for l, w in zip(*own[:2])]
    np.testing.assert_allclose(vals, [-math.inf] + own[0])
    np.testing.assert_allclose(qs, [1.0 - math.fsum(q_own)] + q_own, rtol=1e-13)
    # two pairs compose like any mechanism: directions separately, the maximum reported
    est = mk.compose((two, 3)).delta(0.5, method="fft")
    assert est.lower <= est.upper and est.certified


def test_pickling_and_merging():
    m = mk.tabulated([0.1, 0.2, 0.7], [0.3, 0.3, 0.4], name="three", relation="replace_one")
    two = mk.tabulated_losses([0.3, -0.2], [0.5, 0.5], add=([0.05], [1.0]), details={"from": "test"})
    for obj in (m, two):
        back = pickle.loads(pickle.dumps(obj))
        assert type(back) is type(obj) and back.family.key == obj.family.key and back.relation == obj.relation
        assert back.name == obj.name and back.details == obj.details
        np.testing.assert_array_equal(back.delta(np.array(EPS)), obj.delta(np.array(EPS)))
    run = pickle.loads(pickle.dumps(mk.compose((m, 2), m)))
    assert len(run) == 1 and run.items[0][1] == 3 and run.relation == "replace_one"
    # equal tables (up to the order of the outputs) are one mechanism; a different table is another
    assert len(mk.compose(m, mk.tabulated([0.1, 0.2, 0.7], [0.3, 0.3, 0.4], relation="replace_one"))) == 1
    assert len(mk.compose(m, mk.tabulated([0.2, 0.7, 0.1], [0.3, 0.4, 0.3], relation="replace_one"))) == 1
    assert len(mk.compose(m, mk.tabulated([0.15, 0.15, 0.7], [0.3, 0.3, 0.4], relation="replace_one"))) == 2
    with pytest.raises(ParameterError, match="mix neighbouring relations"):
        mk.compose(m, mk.tabulated([0.5, 0.5], [0.4, 0.6]))


@pytest.mark.parametrize("p, q, match", [
    ([0.5, 0.5], [0.5, 0.25, 0.25], "same length"),
    ([0.5, -0.1, 0.6], [0.3, 0.3, 0.4], "p must be non-negative"),
    ([0.5, 0.5], [0.5, float("nan")], "q must be finite"),
    ([0.5, 0.6], [0.5, 0.5], "p must sum to 1"),
    ([0.5, 0.5], [0.5, 0.5 - 1e-7], "q must sum to 1"),
    ([[0.5, 0.5]], [[0.5, 0.5]], "1-D"),
    ([1.0, 0.0], [0.0, 1.0], "disjoint supports"),
    ("0.5 0.5", [0.5, 0.5], "p must be a real number"),
])
def test_bad_tables_are_refused_by_name(p, q, match):
    with pytest.raises(ParameterError, match=match):
        mk.tabulated(p, q)


@pytest.mark.parametrize("args, kwargs, match", [
    (([0.0, 1.0], [0.5, 0.6]), {}, "probs plus infinity_mass must sum to 1"),
    (([-3.0, 1.0], [0.5, 0.5]), {}, "exceeds 1"),
    (([0.0, float("inf")], [0.5, 0.5]), {}, "losses must be finite"),
    (([0.0], [1.0], 1.5), {}, "infinity_mass"),
    (([0.0], [1.0]), {"add": [0.0]}, "add must be None or a tuple"),
    (([0.0], [1.0]), {"add": ([0.0, 1.0], [1.0])}, "losses_add and probs_add"),
    (([0.0], [0.0], 1.0), {}, "infinite everywhere"),
    (([0.0], [1.0]), {"relation": "neighbours"}, "relation must be one of"),
])
def test_bad_loss_distributions_are_refused_by_name(args, kwargs, match):
    with pytest.raises(ParameterError, match=match):
        mk.tabulated_losses(*args, **kwargs)


def test_symbolic_transforms_refuse_a_table():
    m = mk.tabulated([0.6, 0.4], [0.4, 0.6])
    for transform in (lambda: mk.subsample(m, 0.1), lambda: mk.replace_one(m),
                      lambda: mk.with_relation(m, "replace_one")):
        with pytest.raises(ParameterError, match="tabulated mechanism: it has no densities"):
            transform()
    assert mk.with_relation(m, "add_remove") is m
