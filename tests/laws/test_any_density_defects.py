"""Issue "Any density a paper writes", defects 3 and 4: negative or unnormalised densities refused before the
derivation (the screen of mechkit.laws), and the subsampled discrete Gaussian.  References are closed forms and exact
sums in mpmath; never mechkit itself.  Defects 5-7 of the issue: accountants/test_inf_mass.py,
test_cache_fallback.py, test_bad_input.py."""
import math

import mpmath
import pytest
import sympy as sp

import mechkit as mk
from mechkit import SpecificationError
from mechkit.laws import family as F

x = sp.Symbol("x", real=True)
k = sp.Symbol("k", integer=True)


def normal(mean):
    return sp.exp(-(x - mean) ** 2 / 2) / sp.sqrt(2 * sp.pi)


# ---- defect 3: a density negative somewhere, or not integrating to 1, is refused before the derivation ----------

@pytest.fixture
def no_derivation(tmp_path, monkeypatch):
    """A cold cache whose derivation step fails the test if it is ever reached."""
    monkeypatch.setenv("MECHKIT_CACHE_DIR", str(tmp_path))

    def forbidden(spec):
        raise AssertionError("the derivation ran before the densities were checked")

    monkeypatch.setattr(F, "derive", forbidden)


@pytest.mark.parametrize("p, q, domain, where", [
    (x * sp.exp(-x ** 2 / 2), normal(1), None, lambda v: v < 0),            # the first example
    (4 * x - 1, sp.Integer(1), sp.Interval(0, 1), lambda v: 0 <= v < 0.25),  # the second: negative on [0, 1/4)
])
def test_negative_density_is_refused_before_the_derivation(no_derivation, p, q, domain, where):
    fam = mk.Mechanism.from_densities(p, q, x, domain=domain, name="negative")
    with pytest.raises(SpecificationError, match=r"density p is negative at x = (\S+) \(p\(x\) = (\S+)\)") as info:
        fam()
    # the point named is one where p really is negative (closed form)
    xv = float(info.value.args[0].split("x = ")[1].split(" ")[0])
    assert where(xv) and float(p.subs(x, xv)) < 0


def test_the_screen_uses_scipy_only_for_the_functions_numpy_lacks(no_derivation):
    """Elementary densities are screened with NumPy alone (no SciPy import for lambdify); one with erf, which NumPy
    lacks, with SciPy's, and its negative region is still found (erf(x) < 0 for x < 0 on a finite domain)."""
    from mechkit.laws import screen
    gauss = mk.Mechanism.from_densities(normal(0), normal(1), x, name="elementary")
    assert screen._numpy_modules(gauss.spec) == ["numpy"]
    fam = mk.Mechanism.from_densities(sp.erf(x), sp.Integer(1) / 2, x, domain=sp.Interval(-1, 1), name="with_erf")
    assert screen._numpy_modules(fam.spec) == ["scipy", "numpy"]
    with pytest.raises(SpecificationError, match=r"density p is negative at x = (\S+)") as info:
        fam()
    assert float(info.value.args[0].split("x = ")[1].split(" ")[0]) < 0


@pytest.mark.parametrize("p, total", [
    (sp.exp(-x ** 2 / 2), math.sqrt(2 * math.pi)),               # the normaliser forgotten: 2.5066
    (sp.exp(-x ** 2 / 2) / (2 * sp.pi), 1 / math.sqrt(2 * math.pi)),  # a wrong one: 0.3989
    (sp.exp(-sp.Abs(x)), 2.0),                                   # Laplace without its 1/2
])
def test_unnormalised_density_is_refused_before_the_derivation(no_derivation, p, total):
    fam = mk.Mechanism.from_densities(p, normal(1), x, name="unnormalised")
    with pytest.raises(SpecificationError, match="density p integrates to") as info:
        fam()
    said = float(info.value.args[0].split("integrates to ")[1].split(" ")[0])
    assert said == pytest.approx(total, rel=1e-5)


def test_a_derivation_asked_for_without_values_checks_a_family_without_parameters(no_derivation):
    fam = mk.Mechanism.from_densities(4 * x - 1, sp.Integer(1), x, domain=sp.Interval(0, 1), name="negative")
    with pytest.raises(SpecificationError, match="density p is negative"):
        fam.privacy_loss


def test_unnormalised_pmf_on_a_finite_domain_is_refused_before_the_derivation(no_derivation):
    fam = mk.Mechanism.from_densities((1 + k) / 4, (2 - k) / 3, k, domain=[0, 1], name="unnormalised_pmf")
    with pytest.raises(SpecificationError, match="pmf p sums to 0.75"):
        fam()


def test_the_check_uses_the_bound_parameter_values():
    # p is a density only for |a| <= 2 (x/(1+x^2) lies in [-1/2, 1/2], and its integral against the normal is 0)
    a = sp.Symbol("a", real=True)
    p = (1 + a * x / (1 + x ** 2)) * normal(0)
    fam = mk.Mechanism.from_densities(p, normal(1), x, name="tilted")
    from mechkit.laws.screen import screen
    screen(fam, fam._theta({"a": 1.5}))  # fine
    with pytest.raises(SpecificationError, match="density p is negative"):
        screen(fam, fam._theta({"a": 5.0}))  # negative on (-4.79, -0.21)


def test_a_cached_derivation_is_not_screened_and_the_core_still_refuses_bad_values(tmp_path, monkeypatch):
    """The screen guards the slow derivation only: where the family's entry is already in the cache (a new process,
    a new Family object from the same spec), binding skips it (its lambdified densities cost ~0.1-0.2 s of a cached
    bind, seconds of a cold one), and values where the density is negative are still refused, by the core's exact
    checks."""
    from mechkit.laws import screen
    monkeypatch.setenv("MECHKIT_CACHE_DIR", str(tmp_path))
    a = sp.Symbol("a", real=True)
    p = 1 + a * (x - sp.Rational(1, 2))  # on [0, 1]: normalised for every a, negative somewhere for |a| > 2

    def family():
        return mk.Mechanism.from_densities(p, sp.Integer(1), x, domain=sp.Interval(0, 1), name="linear")
    family()(a=1.0)  # derived: the entry is now on disk
    calls = []
    real = screen.screen
    monkeypatch.setattr(screen, "screen", lambda fam, theta: (calls.append(1), real(fam, theta))[1])
    monkeypatch.setattr(F, "_FAMILIES", {})  # as in a new process
    fam = family()
    m = fam(a=1.0)
    assert calls == []
    # delta(0) = TV = integral of (p - 1)_+ = a / 8 (closed form)
    assert m.delta(0.0) == pytest.approx(1.0 / 8.0, rel=1e-9)
    with pytest.raises(SpecificationError, match="density p is negative"):
        fam(a=5.0)  # negative on [0, 0.4)
    assert calls == []
    monkeypatch.setenv("MECHKIT_CACHE_DIR", str(tmp_path / "empty"))  # a cache without the entry: screened again
    monkeypatch.setattr(F, "_FAMILIES", {})
    with pytest.raises(SpecificationError, match="density p is negative"):
        family()(a=5.0)
    assert calls == [1]


@pytest.mark.parametrize("build, values", [
    (lambda: mk.catalog("gaussian").family, [{"sigma": s, "sensitivity": 1.0} for s in (1e-6, 1e-2, 1.0, 1e6)]),
    (lambda: mk.catalog("laplace").family, [{"scale": s, "sensitivity": 1.0} for s in (1e-5, 1.0, 1e6)]),
    (lambda: mk.subsampled_family(mk.catalog("gaussian").family),
     [{"sigma": 1e-3, "sensitivity": 1.0, "sampling_rate": 0.5}, {"sigma": 1e-4, "sensitivity": 1e4,
                                                                    "sampling_rate": 1e-6}]),
    (lambda: mk.catalog("discrete_gaussian").family, [{"sigma": s, "sensitivity": 1} for s in (0.3, 1e3)]),
    (lambda: mk.Mechanism.from_densities(1 / (sp.pi * (1 + x ** 2)), 1 / (sp.pi * (1 + (x - 1) ** 2)), x,
                                         name="cauchy"), [{}]),
    (lambda: mk.Mechanism.from_densities(sp.Rational(1, 4) / (1 + sp.Abs(x)) ** sp.Rational(3, 2),
                                         sp.Rational(1, 4) / (1 + sp.Abs(x - 1)) ** sp.Rational(3, 2), x,
                                         name="heavy"), [{}]),
    (lambda: mk.Mechanism.from_densities(1 / (sp.pi * sp.sqrt(x * (1 - x))), sp.Integer(1), x,
                                         domain=sp.Interval(0, 1), name="arcsine"), [{}]),
])
def test_valid_densities_pass_the_check(build, values):
    # the check must never refuse a valid density: narrow peaks far from 0, heavy tails, end singularities
    from mechkit.laws.screen import screen
    fam = build()
    for v in values:
        screen(fam, fam._theta(fam._check_params(v)))


# ---- defect 4: the subsampled discrete Gaussian -------------------------------------------------------------------

def exact_hockey_sticks(sigma, rate, eps, half_width=80):
    """delta(eps) of both directions of ((1-q) Q + q P, Q), P = N_Z(1, sigma^2), Q = N_Z(0, sigma^2), summed exactly
    over the integers in mpmath (terms beyond the window are below 1e-1000)."""
    with mpmath.workdps(40):
        ks = range(-half_width, half_width + 1)
        g = lambda c: [mpmath.exp(-mpmath.mpf(j - c) ** 2 / (2 * mpmath.mpf(sigma) ** 2)) for j in ks]
        P, Q = g(1), g(0)
        P = [v / mpmath.fsum(P) for v in P]
        Q = [v / mpmath.fsum(Q) for v in Q]
        p2 = [(1 - mpmath.mpf(rate)) * b + mpmath.mpf(rate) * a for a, b in zip(P, Q)]
        e = mpmath.exp(mpmath.mpf(eps))
        remove = mpmath.fsum(max(0, a - e * b) for a, b in zip(p2, Q))
        add = mpmath.fsum(max(0, b - e * a) for a, b in zip(p2, Q))
        return float(remove), float(add)


@pytest.mark.parametrize("sigma, rate", [(1.0, 0.1), (2.5, 0.3)])
def test_subsampled_discrete_gaussian_one_shot_curve_is_the_exact_sum(sigma, rate):
    m = mk.subsample(mk.discrete_gaussian(sigma), rate)
    assert [s.name for s in m.family.parameters] == ["sampling_rate", "sensitivity", "sigma"]
    for eps in (0.0, 0.05, 0.5, 1.0, 2.0, 4.0):
        remove, add = exact_hockey_sticks(sigma, rate, eps)
        assert m.delta(eps, direction="remove") == pytest.approx(remove, rel=1e-9, abs=1e-300)
        assert m.delta(eps, direction="add") == pytest.approx(add, rel=1e-9, abs=1e-300)
        assert m.delta(eps) == pytest.approx(max(remove, add), rel=1e-9, abs=1e-300)


def test_subsampled_discrete_gaussian_composes_and_shows():
    from mechkit.cli import main
    import io
    m = mk.subsample(mk.discrete_gaussian(1.0), 0.1)
    # p2 >= (1 - q) Q > 0 wherever Q is: the loss is >= log(1 - q) and never -inf (no spurious atom from a log-pmf
    # kernel underflowing far out), so there is no mass at +inf in the add direction
    assert m.remove.support[0] == pytest.approx(math.log(0.9), rel=1e-12)
    assert m.add.inf_mass == 0.0 and m.remove.inf_mass == 0.0
    est = mk.compose((m, 100)).epsilon(1e-5)
    assert math.isfinite(est) and est.lower <= est <= est.upper
    out = io.StringIO()
    assert main(["show", "subsampled-discrete-gaussian", "--sigma", "1", "--q", "0.1"], out=out) == 0
    assert "subsampled_discrete_gaussian" in out.getvalue()


@pytest.mark.parametrize("sigma", [300.0, 1e4])
def test_wide_discrete_gaussian_normaliser(sigma):
    # the normalising Sum of the discrete Gaussian by Poisson summation: sqrt(2 pi) sigma (1 + 2 sum exp(-2 pi^2
    # sigma^2 n^2)); mpmath's default nsum was 5e-4 (sigma = 300) to 97% (1e4) low, and binding failed
    m = mk.discrete_gaussian(sigma)
    ref = math.sqrt(2 * math.pi) * sigma  # the correction terms are below 1e-300 here
    assert m.theta[-1] == pytest.approx(ref, rel=1e-14)


def test_without_a_cache_directory_every_family_counts_as_to_be_derived(monkeypatch):
    # no writable cache directory: load_or_build derives even a shipped family, so the screen must run first
    from mechkit.laws import catalog
    from mechkit.symbolic import codegen
    spec = mk.catalog("gaussian").family.spec
    assert codegen.available(spec, catalog.prederived_dir())  # shipped
    monkeypatch.setattr(codegen, "cache_dir", lambda: None)
    assert not codegen.available(spec, catalog.prederived_dir())
