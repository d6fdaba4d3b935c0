"""Helpers shared by several test modules (no test module imports another).  Unlike ``tests.references`` they
may use mechkit.

``ROOT``: the repository root; ``approx_dp_pair``: the canonical (eps0, delta0)-DP pair, a family whose privacy
loss has a point mass at +inf (notes.md 1.1); ``Reached``: counts how many examples of a Hypothesis property
reach a check that some inputs skip, and fails the property when too few do.
"""
import collections
import functools
import math
from pathlib import Path

import hypothesis

ROOT = Path(__file__).resolve().parent.parent


def approx_dp_pair():
    import sympy as sp

    import mechkit as mk

    k = sp.Symbol("k", integer=True)
    e0 = sp.Symbol("eps0", positive=True)
    d0 = sp.Symbol("delta0", positive=True)
    hi, lo = (1 - d0) * sp.exp(e0) / (1 + sp.exp(e0)), (1 - d0) / (1 + sp.exp(e0))
    p = sp.Piecewise((d0, sp.Eq(k, 0)), (hi, sp.Eq(k, 1)), (lo, sp.Eq(k, 2)), (0, True))
    q = sp.Piecewise((0, sp.Eq(k, 0)), (lo, sp.Eq(k, 1)), (hi, sp.Eq(k, 2)), (d0, True))
    return mk.Mechanism.from_densities(p, q, k, domain=[0, 1, 2, 3], name="approx_dp",
                                       constraints={"delta0": "(0, 1)"})


class Reached:
    """Counts, for one Hypothesis property, the examples that reach each of its checks that some inputs skip (the
    FFT refusing below its floor, no certificate issued, ...), so that a property that silently tests nothing fails.

    ``Reached(fft=0.5)`` applied as the outermost decorator (above ``@given``): in the property, ``hit("fft")`` where
    the check is made (a Hypothesis event too, shown by ``--hypothesis-show-statistics``); after the run the test fails
    unless each label was reached by at least its share of the passing examples.  Shares, not counts: the same holds
    under every Hypothesis profile (tests/conftest.py).  Inputs out of scope are ``assume``d away instead (Hypothesis
    fails a property whose filter rejects too much).
    """

    def __init__(self, **min_share):
        self.min_share = min_share
        self.counts = collections.Counter()
        self.runs = 0

    def hit(self, label):
        assert label in self.min_share, label
        self.counts[label] += 1
        hypothesis.event(f"reached: {label}")

    def __call__(self, test):
        inner = test.hypothesis.inner_test

        @functools.wraps(inner)
        def counted(*args, **kwargs):
            inner(*args, **kwargs)
            self.runs += 1                      # a passing example (not one rejected by assume)

        test.hypothesis.inner_test = counted

        @functools.wraps(test)
        def run(*args, **kwargs):
            self.counts.clear()
            self.runs = 0
            test(*args, **kwargs)
            for label, share in self.min_share.items():
                assert self.runs > 0 and self.counts[label] >= share * self.runs, (
                    f"only {self.counts[label]} of {self.runs} examples reached {label!r} (at least {share:.0%} "
                    "must): the property (almost) tests nothing there")

        return run


def rr_delta(e0, k, eps):
    """Exact delta(eps) of k-fold randomized response: L = e0 (2j - k), j ~ Binomial(k, e^e0/(1+e^e0))."""
    p = math.exp(e0) / (1 + math.exp(e0))
    tot = 0.0
    for j in range(k + 1):
        loss = e0 * (2 * j - k)
        if loss > eps:
            tot += math.comb(k, j) * p ** j * (1 - p) ** (k - j) * -math.expm1(eps - loss)
    return tot


def second_process_launch(monkeypatch):
    """(args, keyword arguments) with which ``engine.warm.start`` would start the second process on a cold cache
    (``subprocess.Popen`` recorded, not run)."""
    import subprocess

    from mechkit.engine import warm
    seen = {}

    class Recorder:
        def __init__(self, args, **kwargs):
            seen.update(args=args, kwargs=kwargs)
            self.stdout = None

    monkeypatch.setattr(warm, "_STATE", {})
    monkeypatch.setattr(warm, "_cold", lambda: True)
    real = subprocess.Popen
    monkeypatch.setattr(warm.subprocess, "Popen", Recorder)
    monkeypatch.delenv(warm.ENV, raising=False)
    warm.start()
    monkeypatch.setattr(warm.subprocess, "Popen", real)
    return seen["args"], seen["kwargs"]


def assert_same_curve_answers(curve, back, deltas, eps):
    """Two privacy curves (e.g. one saved and loaded again) answer the same floats: epsilon at each of ``deltas``
    (value, bounds and details) and delta at the points ``eps`` (value and bounds)."""
    import numpy as np

    for d in deltas:
        a, b = curve.epsilon(d), back.epsilon(d)
        assert (float(a), a.lower, a.upper, a.details) == (float(b), b.lower, b.upper, b.details)
    a, b = curve.delta(eps), back.delta(eps)
    assert np.array_equal(np.asarray(a), np.asarray(b)) and np.array_equal(a.lower, b.lower)
    assert np.array_equal(a.upper, b.upper)
