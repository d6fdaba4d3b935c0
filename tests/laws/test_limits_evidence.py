"""The limit of the privacy loss at an infinite end (``laws.limits.decide``): SymPy's limits of equivalent forms
weighed against numeric evidence.  The derivation computes log p - log q's limit; the simplified form's is asked
for only where that one is not confirmed by the double-precision walk (``sym_more``)."""
from __future__ import annotations

import math

import pytest
import sympy as sp

from mechkit.errors import DerivationError
from mechkit.laws import limits


def _never():
    raise AssertionError("asked for evidence that was not needed")


def test_a_confirmed_first_form_needs_no_other():
    assert limits.decide([0.5], ("converged", 0.5), _never, math.inf, _never, _never) == 0.5


def test_the_other_form_is_asked_for_where_the_first_is_not_confirmed():
    asked = []

    def more():
        asked.append(1)
        return [0.5]
    # the first form's 1.0 disagrees with the walk's 0.5, the second agrees: they are inconsistent, so the
    # precision-checked walk decides, as when both forms came from the derivation
    got = limits.decide([1.0], ("converged", 0.5), lambda: ("converged", 0.5), math.inf, lambda: math.nan, more)
    assert got == 0.5 and asked == [1]
    # the same evidence with both forms given at once decides the same way
    assert limits.decide([1.0, 0.5], ("converged", 0.5), lambda: ("converged", 0.5), math.inf) == 0.5
    # no first form at all (SymPy failed on it): the other form, confirmed by the walk
    assert limits.decide([], ("converged", 0.5), _never, math.inf, _never, lambda: [0.5]) == 0.5


def test_disagreeing_forms_without_numeric_evidence_still_raise():
    with pytest.raises(DerivationError, match="disagree"):
        limits.decide([1.0], ("unknown", math.nan), lambda: None, -math.inf, lambda: math.nan, lambda: [0.5])


def test_the_simplified_forms_limit_is_symbolic_in_the_parameters_then_evaluated():
    x, b = sp.Symbol("x", real=True), sp.Symbol("b", positive=True)
    text = sp.srepr(-2 * sp.log(1 + sp.exp(-x / b)) + 2 * sp.log(sp.exp((1 - x) / b) + 1) - 1 / b)
    assert limits.symbolic_limit(text, "x", ["b"], [2.0], math.inf) == pytest.approx(-0.5, abs=1e-15)
    assert limits.symbolic_limit(text, "x", ["b"], [4.0], -math.inf) == pytest.approx(0.25, abs=1e-15)
    assert math.isnan(limits.symbolic_limit(sp.srepr(sp.sin(x)), "x", [], [], math.inf))  # no limit: nan


def test_the_logistic_loss_takes_its_limits_from_log_p_minus_log_q():
    """SymPy's limit of the simplified logistic loss is wrong (2/b); log p - log q's is right (1/b) and confirmed
    by the walk, so the simplified form is never asked for, and the loss's range is (-1/b, 1/b)."""
    import mechkit as mk
    x, b = sp.Symbol("x", real=True), sp.Symbol("b", positive=True)
    fam = mk.Mechanism.from_densities(
        p=sp.exp(-x / b) / (b * (1 + sp.exp(-x / b)) ** 2),
        q=sp.exp(-(x - 1) / b) / (b * (1 + sp.exp(-(x - 1) / b)) ** 2), var=x, name="logistic")
    limits._SYMBOLIC.clear()
    m = fam(b=2.0)
    lo, hi = m.remove.support
    assert lo == pytest.approx(-0.5, abs=1e-12) and hi == pytest.approx(0.5, abs=1e-12)
    assert not limits._SYMBOLIC
