"""Issue "Any density a paper writes", defect 6: an unusable cache directory, or no writable Numba cache, falls
back with one CacheWarning instead of failing.  References are closed forms (the discrete Laplace curve)."""
import math
import os
import subprocess
import sys
import textwrap

import pytest
import sympy as sp

import mechkit as mk
from tests.helpers import ROOT

k = sp.Symbol("k", integer=True)


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
    from mechkit import cache
    monkeypatch.setattr(cache, "usable", lambda d: False)   # neither the configured nor a temporary directory
    monkeypatch.setattr(cache, "_FALLBACK", {})
    monkeypatch.setattr(cache, "_WARNED", set())
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
    call = (f"from mechkit import cache\n"
            f"assert cache.ensure_numba_cache({str(pkg / 'probe_mod.py')!r}) is not None")
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
    # the engine compiles on first use, into the fallback location, its largest subjects in a second process
    # (engine.warm) that must find the same location; a composition's epsilon needs them (through the CGF; the FFT:
    # auto would compile the saddle point's tilted moments too, 5 s more of the same thing)
    code = ("import mechkit as mk\nfrom mechkit.engine import warm\n"
            "e = mk.compose((mk.gaussian(sigma=1.0), 2)).epsilon(1e-5, method='fft')\n"
            "from mechkit.engine import quadrature as Q\n"
            "print('EPS', e.lower, e.upper, mk.gdp.epsilon(2 ** 0.5, 1e-5), 'WARMER', warm.started(),\n"
            "      'LOADED', sum(Q.gk_adaptive.stats.cache_hits.values()) > 0)")
    out = run_python(code, env, tmp_path)
    assert out.returncode == 0 and "EPS" in out.stdout, out.stderr[-2000:]
    lower, upper, exact = (float(v) for v in out.stdout.split("EPS")[1].split()[:3])
    assert lower <= exact <= upper and upper - lower < 0.05  # two Gaussians, sigma 1: mu = sqrt(2) exactly
    # the second process started, and this one loaded its work from the shared location instead of compiling
    assert out.stdout.split("WARMER")[1].split() == ["True", "LOADED", "True"]
    assert out.stderr.count("CacheWarning") == 1, out.stderr[-2000:]
