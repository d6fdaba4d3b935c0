"""The derivation and the compiled kernels are reused by a second process; the wheel ships the catalog."""
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.helpers import ROOT

SCRIPT = r"""
import sys
sys.path.insert(0, {root!r})
import mechkit.laws.family as F
if {forbid}:
    def boom(spec):
        raise SystemExit("derivation was run again")
    F.derive = boom
import mechkit as mk
m = mk.subsample(mk.gaussian(sigma=1.3), 0.02)
print(float(m.remove.cdf(0.1)), m.remove.cgf(0.5, 2), m.delta(0.5))
"""


def run(cache, forbid):
    env = dict(os.environ, MECHKIT_CACHE_DIR=str(cache), NUMBA_DEBUG_CACHE="1")
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(root=str(ROOT), forbid=forbid)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


@pytest.mark.slow
def test_second_process_neither_derives_nor_compiles(tmp_path):
    first = run(tmp_path, False)
    second = run(tmp_path, True)
    assert first.strip().splitlines()[-1] == second.strip().splitlines()[-1]
    # NUMBA_DEBUG_CACHE reports every compilation it saves; a warm process saves nothing
    assert "data saved" not in second


@pytest.mark.slow
def test_wheel_ships_the_catalog(tmp_path):
    # built from a copy of the project: pip builds in the source tree (build/, mechkit.egg-info/)
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for name in ("mechkit", "mechanisms"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-q", "-w", str(tmp_path)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    wheel = next(tmp_path.glob("mechkit-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for mod in ("gaussian", "laplace", "randomized_response", "discrete_laplace", "discrete_gaussian"):
        assert f"mechkit/mechanisms/{mod}.py" in names
    shipped = sorted(p.name for p in (ROOT / "mechanisms" / "_derived").glob("fam_*.json"))
    assert shipped and all(f"mechkit/mechanisms/_derived/{n}" in names for n in shipped)
    # every module of every stage folder ships (a folder missing from pyproject's package list would not)
    for f in (ROOT / "mechkit").rglob("*.py"):
        assert f"mechkit/{f.relative_to(ROOT / 'mechkit').as_posix()}" in names

    # the installed layout works: the wheel alone on sys.path, the catalog reached repeatedly
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = (f"import sys; sys.path.insert(0, {str(site)!r}); import mechkit as mk; "
            f"assert mk.__file__.startswith({str(site)!r}), mk.__file__; "
            "import mechkit.laws.family as F; F.derive = None; "
            "a = mk.gaussian(sigma=1.0); b = mk.gaussian(sigma=2.0); c = mk.catalog('laplace').family; "
            "print(callable(mk.catalog), a.delta(1.0) > b.delta(1.0))")
    # the first use copies the shipped derivations into the empty cache: no derivation runs (F.derive is None)
    env = dict(os.environ, MECHKIT_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env,
                         cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "True"]


def test_a_kernel_too_large_to_compile_is_recorded_as_failed():
    # repeated differentiation can give kernels of 10^5-10^6 characters (e.g. the closed-form CGF of a subsampled
    # randomized response), which Numba would take minutes to compile: they are recorded as failed instead
    import sympy as sp
    from mechkit.symbolic import algebra as sy, codegen
    big = sp.Add(*[sp.exp(sy.X * i) / (i + sy.X) for i in range(1, 1500)])
    src = codegen.render_module({"K5": big, "K0": sy.X ** 2}, [])
    assert len(codegen._NumbaPrinter({sy.X: "X"}).doprint(big)) > codegen.MAX_KERNEL_CHARS
    assert "FAILED.append('K5')" in src and "def k_K5" not in src
    assert "def k_K0" in src  # a small one is compiled as before


RACE = r"""
import os, sys, time
sys.path.insert(0, {root!r})
import sympy as sp
import mechkit.laws.family as F
import mechkit as mk
derive = F.derive


def counted(spec):                      # record every derivation, and hold it long enough to overlap the other's
    with open({log!r}, "a") as f:
        f.write("derived\n")
    time.sleep(0.5)
    return derive(spec)


F.derive = counted
open({ready!r} + sys.argv[1], "w").close()
while not all(os.path.exists({ready!r} + w) for w in "ab"):   # both processes reach the bind together
    time.sleep(0.01)
x = sp.Symbol("x")
fam = mk.Mechanism.from_densities(sp.Rational(3, 4) - x / 2, sp.Rational(1, 4) + x / 2, x, domain=[0, 1],
                                  name="race_rr")
print(fam().delta(0.5))
"""


def test_two_processes_binding_a_new_family_derive_it_once(tmp_path):
    """The second process waits for the first one's derivation (``cache.exclusive``) and loads it from the cache;
    without the lock both miss the cache and both derive (the log would hold two lines)."""
    log, ready = tmp_path / "log", tmp_path / "ready_"
    code = RACE.format(root=str(ROOT), log=str(log), ready=str(ready))
    env = dict(os.environ, MECHKIT_CACHE_DIR=str(tmp_path / "cache"))
    procs = [subprocess.Popen([sys.executable, "-c", code, w], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for w in "ab"]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-2000:]
    assert outs[0][0].split()[-1] == outs[1][0].split()[-1]
    assert log.read_text().splitlines() == ["derived"]
