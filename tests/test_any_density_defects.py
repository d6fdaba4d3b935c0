"""Issue "Any density a paper writes", defects 3-7: negative or unnormalised densities refused before the
derivation, the subsampled discrete Gaussian, epsilon below the composed mass at +inf, an unusable cache, and bad
input that escaped as a non-Mechkit exception.  References are closed forms, exact sums in mpmath or the exact
probability of an infinite loss; never mechkit itself."""
import math
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import mpmath
import numpy as np
import pytest
import sympy as sp

import mechkit as mk
from mechkit import ParameterError, SpecificationError
from mechkit.composition import ACCOUNTANTS
from mechkit.laws import family as F

ROOT = Path(__file__).resolve().parent.parent
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


# ---- defect 5: delta below the composed mass at +inf ---------------------------------------------------------------

from test_fft import approx_dp_pair  # noqa: E402  (the canonical (eps0, delta0)-DP pair)


@pytest.mark.parametrize("method", sorted(ACCOUNTANTS))
def test_epsilon_below_the_composed_inf_mass_is_infinite(method):
    fam = approx_dp_pair()
    a, b = fam(eps0=0.5, delta0=1e-3), fam(eps0=0.2, delta0=2e-3)
    run = mk.compose((a, 100), (b, 50), mk.gaussian(sigma=2.0))
    mass = 1 - (1 - 1e-3) ** 100 * (1 - 2e-3) ** 50  # exact: an infinite loss in any run is infinite in the sum
    assert run.inf_mass("remove") == pytest.approx(mass, rel=1e-12)
    assert mass > max(1 - (1 - 1e-3) ** 100, 1 - (1 - 2e-3) ** 50) + 0.05  # neither part alone reaches it
    for d in (0.5 * mass, mass * (1 - 1e-9)):
        est = run.epsilon(d, method=method)
        assert est == math.inf and est.lower == math.inf and est.upper == math.inf
        assert est.certified and est.method == method
        assert est.details["inf_mass"] == pytest.approx(mass, rel=1e-12)
    arr = run.epsilon([0.5 * mass, 0.9 * mass], method=method)
    assert np.all(np.isinf(arr)) and np.all(np.isinf(arr.lower))


def test_above_the_inf_mass_the_accountant_answers():
    m = approx_dp_pair()(eps0=0.5, delta0=1e-3)
    run = mk.compose((m, 100))
    mass = 1 - (1 - 1e-3) ** 100
    est = run.epsilon(mass + 0.01)
    assert math.isfinite(est) and 0 <= est.lower <= est.upper < math.inf


def test_inf_mass_of_the_add_direction():
    # q > 0 = p at k = 2: the add direction's loss log q/p is +inf with Q-mass 1/10; the remove direction has none
    p = sp.Piecewise((sp.Rational(1, 2), sp.Eq(k, 0)), (sp.Rational(1, 2), sp.Eq(k, 1)), (0, True))
    q = sp.Piecewise((sp.Rational(9, 20), sp.Eq(k, 0)), (sp.Rational(9, 20), sp.Eq(k, 1)), (sp.Rational(1, 10), True))
    m = mk.Mechanism.from_densities(p, q, k, domain=[0, 1, 2], name="add_only")()
    run = mk.compose((m, 3))
    assert run.inf_mass("remove") == 0.0
    assert run.inf_mass("add") == pytest.approx(1 - 0.9 ** 3, rel=1e-12)
    est = run.epsilon(0.2, method="fft")
    assert est == math.inf and est.details["direction"] == "add"


# ---- defect 6: an unusable cache directory, or no writable Numba cache ---------------------------------------------

def run_python(code, env_extra, tmp_path):
    env = {k_: v for k_, v in os.environ.items() if k_ not in ("MECHKIT_CACHE_DIR", "NUMBA_CACHE_DIR")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env.update(env_extra)
    return subprocess.run([sys.executable, "-W", "default", "-c", textwrap.dedent(code)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


#: a read-only directory: chmod where it binds, else (as root) writes into it refused as the kernel would
READ_ONLY_PRELUDE = """
import errno, os, tempfile
ro = os.environ.get("RO_DIR")
if ro and os.geteuid() == 0:
    def _guard(d):
        if d is not None and os.path.realpath(str(d)).startswith(os.path.realpath(ro)):
            raise PermissionError(errno.EACCES, "Permission denied", str(d))
    _mkstemp, _tmpfile = tempfile.mkstemp, tempfile.TemporaryFile
    tempfile.mkstemp = lambda *a, **kw: (_guard(kw.get("dir")), _mkstemp(*a, **kw))[1]
    tempfile.TemporaryFile = lambda *a, **kw: (_guard(kw.get("dir")), _tmpfile(*a, **kw))[1]
"""

CHECK = """
import mechkit as mk
m = mk.discrete_laplace(1.0)
print("DELTA", repr(m.delta(0.25)), repr(mk.discrete_laplace(2.0).delta(0.25)))
"""


@pytest.mark.parametrize("kind", ["regular file", "under a regular file", "read-only directory"])
def test_unusable_cache_dir_falls_back_with_one_warning(tmp_path, kind):
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    env = {}
    if kind == "regular file":
        env["MECHKIT_CACHE_DIR"] = str(blocker)
    elif kind == "under a regular file":
        env["MECHKIT_CACHE_DIR"] = str(blocker / "cache")
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        env["MECHKIT_CACHE_DIR"] = env["RO_DIR"] = str(ro)
    out = run_python(READ_ONLY_PRELUDE + CHECK, env, tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert out.stderr.count("CacheWarning") == 1, out.stderr
    # discrete Laplace: delta(eps) = (1 - e^(eps - 1/b)) / (1 + e^(-1/b)) for eps < 1/b (the exact sum's closed form)
    vals = [float(v) for v in out.stdout.split("DELTA")[1].split()]
    ref = [(1 - math.exp(0.25 - 1 / b)) / (1 + math.exp(-1 / b)) for b in (1.0, 2.0)]
    assert vals == pytest.approx(ref, rel=1e-12)
    if kind == "read-only directory":
        assert not any((tmp_path / "ro").iterdir())


def test_no_writable_directory_at_all_builds_in_memory(monkeypatch):
    from mechkit.symbolic import codegen
    monkeypatch.setattr(codegen, "_usable", lambda d: False)   # neither the configured nor a temporary directory
    monkeypatch.setattr(codegen, "_FALLBACK", {})
    monkeypatch.setattr(codegen, "_WARNED", set())
    bb = sp.Symbol("bb", positive=True)
    dlap = lambda loc: sp.tanh(1 / (2 * bb)) * sp.exp(-sp.Abs(k - loc) / bb)
    fam = mk.Mechanism.from_densities(dlap(1), dlap(0), k, name="in_memory_dlap")
    with pytest.warns(mk.errors.CacheWarning):
        m = fam(bb=1.0)
    assert m.family.module.__file__.startswith("<mechkit generated")
    assert m.delta(0.25) == pytest.approx((1 - math.exp(0.25 - 1)) / (1 + math.exp(-1)), rel=1e-12)


NUMBA_PROBE = """
import sys
{call}
sys.path.insert(0, {pkg!r})
import probe_mod
print("VALUE", probe_mod.twice(21.0))
"""


def numba_blocked_env(tmp_path):
    """A module whose __pycache__ is a regular file, with the user-wide and NUMBA_CACHE_DIR locations unusable."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "probe_mod.py").write_text("from numba import njit\n\n@njit('float64(float64)', cache=True)\n"
                                      "def twice(v):\n    return 2.0 * v\n")
    (pkg / "__pycache__").write_text("blocks the in-tree cache")
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    env = {"XDG_CACHE_HOME": str(blocker / "xdg"), "HOME": str(blocker / "home"),
           "MECHKIT_CACHE_DIR": str(tmp_path / "mk")}
    return pkg, env


def test_no_writable_numba_cache_location_falls_back(tmp_path):
    pkg, env = numba_blocked_env(tmp_path)
    # the control: Numba itself refuses to compile a cache=True function there
    bare = run_python(NUMBA_PROBE.format(call="", pkg=str(pkg)), env, tmp_path)
    assert bare.returncode != 0 and "no locator available" in bare.stderr
    call = (f"from mechkit.symbolic import codegen\n"
            f"assert codegen.ensure_numba_cache({str(pkg / 'probe_mod.py')!r}) is not None")
    out = run_python(NUMBA_PROBE.format(call=call, pkg=str(pkg)), env, tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "VALUE 42.0" in out.stdout and out.stderr.count("CacheWarning") == 1


@pytest.mark.slow
def test_import_mechkit_without_a_writable_numba_cache(tmp_path):
    import shutil
    copy = tmp_path / "src"
    for name in ("mechkit", "mechanisms"):  # a source tree: the package and its catalog folder
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    for d in (copy / "mechkit").rglob("*"):
        if d.is_dir():
            (d / "__pycache__").write_text("blocks the in-tree cache")
    (copy / "mechkit" / "__pycache__").write_text("blocks the in-tree cache")
    _, env = numba_blocked_env(tmp_path)
    env["PYTHONPATH"] = str(copy)
    out = run_python("import mechkit\nprint('IMPORTED')", env, tmp_path)
    assert out.returncode == 0 and "IMPORTED" in out.stdout, out.stderr[-2000:]


# ---- defect 7: bad input escaped as a non-Mechkit exception ---------------------------------------------------------

@pytest.fixture(scope="module")
def run():
    return mk.compose((mk.gaussian(sigma=1.0), 10))


@pytest.mark.parametrize("bad", ["abc", "0.5", ["0.5"], None, [0.5, "x"], 1 + 2j, True])
def test_delta_of_a_non_number_names_epsilon(run, bad):
    with pytest.raises(ParameterError, match="epsilon must be a real number"):
        run.delta(bad)
    with pytest.raises(ParameterError, match="epsilon must be a real number"):
        mk.gaussian(sigma=1.0).delta(bad)


@pytest.mark.parametrize("bad", ["1e-5", ["1e-5"]])
def test_epsilon_of_a_non_number_names_delta(run, bad):
    with pytest.raises(ParameterError, match="delta must be a real number"):
        run.epsilon(bad)


@pytest.mark.parametrize("method", sorted(ACCOUNTANTS))
def test_unknown_options_are_named_before_dispatch(run, method):
    for query, arg in (("epsilon", 1e-5), ("delta", 1.0)):
        with pytest.raises(ParameterError, match=r"unknown option\(s\) \['foo'\] for " + query):
            getattr(run, query)(arg, method=method, foo=1)


def test_known_options_still_reach_the_accountant(run):
    assert run.epsilon(1e-5, eps_error=0.05).details["eps_error"] == 0.05


def test_empty_arrays_are_refused_alike(run):
    for call in (lambda: run.epsilon([]), lambda: run.delta([]), lambda: mk.gaussian(sigma=1.0).epsilon([]),
                 lambda: mk.gaussian(sigma=1.0).delta(np.array([]))):
        with pytest.raises(ParameterError, match="is empty"):
            call()


def test_family_called_with_positional_values_names_its_parameters():
    with pytest.raises(ParameterError, match=r"by name, gaussian\(sensitivity=\.\.\., sigma=\.\.\.\)"):
        mk.catalog("gaussian").family(1.0)
    assert float(mk.gaussian(1.0).delta(0.0)) > 0  # the convenience function still takes positions


@pytest.mark.parametrize("call, name", [
    (lambda: mk.gaussian(sigma="1.0"), "sigma"),
    (lambda: mk.gaussian(1.0, sensitivity="2"), "sensitivity"),
    (lambda: mk.catalog("laplace").family(scale=b"1", sensitivity=1.0), "scale"),
    (lambda: mk.subsample(mk.gaussian(sigma=1.0), "0.1"), "q"),
])
def test_numeric_strings_are_refused_naming_the_parameter(call, name):
    with pytest.raises(ParameterError, match=f"{name} must be a real number"):
        call()


@pytest.mark.parametrize("sigma, word", [(1e-300, ">="), (1e300, "<=")])
def test_parameter_beyond_double_precision_is_named_with_its_range(sigma, word):
    pattern = re.escape(f"sigma = {sigma:g} is too") + f".*sigma must be {word} about"
    with pytest.raises(ParameterError, match=pattern) as info:
        mk.gaussian(sigma=sigma)
    bound = float(info.value.args[0].split(f"{word} about ")[1].split(" ")[0])
    inside, outside = (bound * 4, bound / 4) if word == ">=" else (bound / 4, bound * 4)
    assert 0 <= mk.gaussian(sigma=inside).delta(1.0) <= 1  # the range it names works ...
    with pytest.raises(mk.MechkitError):
        mk.gaussian(sigma=outside)  # ... and beyond it binding fails


def test_discrete_parameter_beyond_double_precision_is_named():
    with pytest.raises(ParameterError, match="sigma = 1e-300 is too small"):
        mk.discrete_gaussian(1e-300)


@pytest.mark.parametrize("count", [10 ** 30, 1e30, 2 ** 53 + 1, 2.5, 0, -3, True, "10"])
def test_counts_must_be_integers_up_to_2_pow_53(count):
    with pytest.raises(ParameterError, match=r"count must be an integer in \[1, 2\*\*53"):
        mk.compose((mk.gaussian(sigma=1.0), count))


def test_merged_counts_are_checked_too():
    g = mk.gaussian(sigma=1.0)
    assert mk.compose((g, 2 ** 53)).total_count == 2 ** 53
    with pytest.raises(ParameterError, match=r"total count .* 2\*\*53"):
        mk.compose((g, 2 ** 53), g)
    with pytest.raises(ParameterError, match=r"2\*\*53"):
        mk.compose((mk.compose((g, 2 ** 30)), 2 ** 30))
