"""Bad input: a clear MechkitError naming the parameter, raised before heavy work."""
import pytest
import sympy as sp

import mechkit as mk
from mechkit import ParameterError, SpecificationError

x = sp.Symbol("x", real=True)
b = sp.Symbol("b", positive=True)


def lap(loc, scale=b):
    return sp.exp(-sp.Abs(x - loc) / scale) / (2 * scale)


def test_errors_are_value_errors():
    assert issubclass(mk.MechkitError, ValueError)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), "a"])
def test_non_positive_scale(bad):
    with pytest.raises(ParameterError, match="sigma"):
        mk.gaussian(sigma=bad)


@pytest.mark.parametrize("q", [0.0, -0.1, 1.5])
def test_sampling_rate_range(q):
    with pytest.raises(ParameterError, match=r"q must lie in \(0.0, 1.0\]"):
        mk.subsample(mk.gaussian(sigma=1.0), q)


def test_sampling_rate_nan():
    with pytest.raises(ParameterError, match="q must be finite"):
        mk.subsample(mk.gaussian(sigma=1.0), float("nan"))


def test_unknown_and_missing_parameters():
    fam = mk.Mechanism.from_densities(lap(0), lap(1), x, name="lap")
    with pytest.raises(ParameterError, match="unknown parameter"):
        fam(b=1.0, c=2.0)
    with pytest.raises(ParameterError, match="missing value"):
        fam()


def test_var_not_in_densities():
    y = sp.Symbol("y", real=True)
    with pytest.raises(SpecificationError, match="does not appear"):
        mk.Mechanism.from_densities(lap(0), lap(1), y)


def test_strings_that_are_not_expressions():
    with pytest.raises(SpecificationError, match="not a SymPy expression"):
        mk.Mechanism.from_densities("exp(-x**2/2", "exp(-(x-1)**2/2)/sqrt(2*pi)", x)
    with pytest.raises(SpecificationError, match="must be a SymPy expression"):
        mk.Mechanism.from_densities(object(), lap(1), x)


def test_strings_that_are_expressions_work():
    fam = mk.Mechanism.from_densities("exp(-x**2/2)/sqrt(2*pi)", "exp(-(x-1)**2/2)/sqrt(2*pi)", x)
    m = fam()
    assert m.delta(1.0) == pytest.approx(mk.gdp.delta(1.0, 1.0), rel=1e-9)


def test_density_not_normalised_says_what_it_integrates_to():
    fam = mk.Mechanism.from_densities(2 * lap(0), lap(1), x, name="bad")
    with pytest.raises(SpecificationError, match="integrates to 2"):
        fam(b=1.0)


def test_negative_density():
    fam = mk.Mechanism.from_densities(lap(0) * (1 - 2 * sp.exp(-x ** 2)), lap(1), x)
    with pytest.raises(SpecificationError, match="negative"):
        fam(b=1.0)


def test_negative_pmf_and_sums_to():
    k = sp.Symbol("k", integer=True)
    fam = mk.Mechanism.from_densities(sp.Rational(1, 2) - 2 * k, (1 + k) / 3, k, domain=[0, 1])
    with pytest.raises(SpecificationError, match="negative"):
        fam()
    fam = mk.Mechanism.from_densities((1 + k) / 4, (2 - k) / 3, k, domain=[0, 1])
    with pytest.raises(SpecificationError, match="pmf p sums to 0.75"):
        fam()


def test_disjoint_support():
    k = sp.Symbol("k", integer=True)
    fam = mk.Mechanism.from_densities(1 - k, k, k, domain=[0, 1])
    with pytest.raises(SpecificationError, match="disjoint"):
        fam()


def test_query_ranges():
    m = mk.gaussian(sigma=1.0)
    for bad in (1.0, -1e-3, float("nan")):  # delta = 0 is answered: the largest loss
        with pytest.raises(ParameterError, match="delta"):
            m.epsilon(bad)
    for bad in (float("nan"), -float("inf")):  # negative epsilons are answered (the hockey-stick at e^eps < 1)
        with pytest.raises(ParameterError, match="epsilon"):
            m.delta(bad)
    with pytest.raises(ParameterError, match="alpha"):
        m.rdp(1.0)
    with pytest.raises(ParameterError, match="direction"):
        m.delta(1.0, direction="substitute")
    with pytest.raises(ParameterError, match="order"):
        m.remove.cgf(1.0, order=7)


def test_constraint_error_names_parameter_and_range():
    with pytest.raises(ParameterError, match=r"sampling_rate must lie in \(0.0, 1.0\]"):
        mk.subsampled_family(mk.gaussian(sigma=1.0).family)(sigma=1.0, sampling_rate=2.0)
