"""Benchmark: symbolic derivation, Numba compile, cached load and kernel throughput of mechkit families.

Families: the catalog's gaussian, laplace, randomized_response, discrete_laplace, discrete_gaussian, the
Poisson-subsampled Gaussian and a user-defined logistic family (the README example).  Each family gets a
new temporary directory; ``MECHKIT_CACHE_DIR`` (derivations, generated modules) and ``NUMBA_CACHE_DIR``
(machine code, including mechkit's shared engine in ``_numerics``) point into it, so the cold run starts
from nothing.  Every phase runs in a fresh subprocess: the script re-invokes itself with the hidden
arguments ``--worker FAMILY --phase cold|warm``, and the worker prints one JSON line with its timings.

cold (empty caches)
  import    ``import mechkit`` (the shared Numba engine is compiled here: its functions carry signatures)
  derive    ``family.derive()``: SymPy derivation, code generation and compile of the generated kernels
  compile   first ``family(**params)`` plus the first ``remove.cdf``, ``remove.logsf`` and ``remove.cgf(0.5)``
warm (fresh process, the caches the cold run filled)
  import    ``import mechkit``, reported on its own
  load      from just after the import to a bound mechanism that has evaluated ``remove.cdf`` and ``remove.cgf``
  cdf/s     ``m.remove.cdf`` on a numpy array of 1e5 loss values evenly spread over the support, clipped to
            mean +/- 8 sd of the PLRV where the support is unbounded (best of up to 5 calls)
  cgf/s     ``m.remove.cgf(t)`` and ``m.remove.cgf(t, 2)`` for scalar t in [0.05, 2] in a Python loop (best of 3
            passes of 100 values; no t repeats, so a CGF memo cannot answer)
  scipy     the scipy.stats equivalent on the same array: Gaussian remove PLRV = N(mu^2/2, mu^2),
            mu = sensitivity/sigma, so ``norm(mu**2/2, mu).cdf``; Laplace: ``scipy.stats.laplace.cdf`` in
            x-space (nearest equivalent, not the PLRV); none for the others.  ratio = mechkit / scipy.

Targets (the issue): derive + compile < 10 s per family, cached load < 1 s, CDF throughput ratio >= 0.5.
Timings are wall-clock on whatever else the machine is doing.  mechkit is imported from this source tree.

    python benchmarks/derive.py                 # all families, table + benchmarks/results/derive.json
    python benchmarks/derive.py --quick         # gaussian and logistic only
    python benchmarks/derive.py --families laplace discrete_gaussian
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from importlib import metadata
from pathlib import Path

from _common import readme_logistic

ROOT = Path(__file__).resolve().parent.parent
PARAMS = {"gaussian": {"sigma": 1.0}, "laplace": {"scale": 1.0}, "randomized_response": {"epsilon": 1.0},
          "discrete_laplace": {"scale": 2.0}, "discrete_gaussian": {"sigma": 3.0},
          "subsampled_gaussian": {"sigma": 1.0, "sampling_rate": 0.01}, "logistic": {"b": 2.0}}
FAMILIES = tuple(PARAMS)
QUICK = ("gaussian", "logistic")
N_CDF = 100_000
TARGETS = {"derive_compile_s": 10.0, "cached_load_s": 1.0, "throughput_ratio": 0.5}
PROBE = [-1.0, 0.0, 0.5, 2.0]  # first-use loss values: both tails, so both code paths compile


# ---------------------------------------------------------------------------------------------- worker
def build_family(mk, name):
    if name == "subsampled_gaussian":
        return mk.subsampled_family(mk.catalog("gaussian").family)
    if name == "logistic":
        return readme_logistic(mk)
    return mk.catalog(name).family


def best_rate(fn, count, repeats=5, budget=2.0):
    """count / (best wall time of fn()) over up to `repeats` calls, stopping once `budget` s are spent."""
    best, start = math.inf, time.perf_counter()
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
        if time.perf_counter() - start > budget:
            break
    return count / best


def loss_grid(np, plrv, n):
    lo, hi = plrv.support
    mean, sd = plrv.cgf(0.0, 1), math.sqrt(max(plrv.cgf(0.0, 2), 0.0))
    a, b = max(lo, mean - 8 * sd), min(hi, mean + 8 * sd)
    if not a < b:  # degenerate spread: fall back to the finite ends of the support, then +/-1
        a, b = (lo if math.isfinite(lo) else mean - 1), (hi if math.isfinite(hi) else mean + 1)
    return np.linspace(a, b, n)


def worker(name, phase):
    out = {"family": name, "phase": phase, "params": PARAMS[name]}
    try:
        t0 = time.perf_counter()
        import mechkit as mk
        t1 = time.perf_counter()
        out["import_s"] = t1 - t0
        import numpy as np
        if phase == "cold":
            fam = build_family(mk, name)
            t2 = time.perf_counter()
            out["define_s"] = t2 - t1
            fam.derive()
            t3 = time.perf_counter()
            out["derive_s"] = t3 - t2
            m = fam(**PARAMS[name])
            m.remove.cdf(np.array(PROBE))
            m.remove.logsf(np.array(PROBE))
            m.remove.cgf(0.5)
            out["compile_s"] = time.perf_counter() - t3
            out["derive_compile_s"] = out["derive_s"] + out["compile_s"]
        else:
            fam = build_family(mk, name)
            m = fam(**PARAMS[name])
            m.remove.cdf(np.array(PROBE))
            m.remove.cgf(0.5)
            out["cached_load_s"] = time.perf_counter() - t1
            out["cgf_source"] = m.core.cgf_source
            if hasattr(m, "cgf_check_failed"):
                out["cgf_check_failed"] = m.cgf_check_failed
            s = loss_grid(np, m.remove, N_CDF)
            out["grid"] = [float(s[0]), float(s[-1])]
            out["cdf_per_s"] = best_rate(lambda: m.remove.cdf(s), N_CDF)
            # distinct t in every pass: mechkit may memoise CGF values per (t, order), repeats would time the memo
            for order, key in ((0, "cgf_per_s"), (2, "cgf2_per_s")):
                passes = iter(np.linspace(0.0513, 2.0017, 300).reshape(100, 3).T)
                out[key] = best_rate(lambda: [m.remove.cgf(float(t), order) for t in next(passes)], 100, 3, 1.0)
            if name in ("gaussian", "laplace"):
                import scipy.stats as st
                if name == "gaussian":
                    mu = m.params["sensitivity"] / m.params["sigma"]
                    ref = st.norm(mu ** 2 / 2, mu)
                    out["max_abs_diff_vs_scipy"] = float(np.max(np.abs(m.remove.cdf(s) - ref.cdf(s))))
                    out["scipy_cdf_per_s"] = best_rate(lambda: ref.cdf(s), N_CDF)
                else:
                    xs = np.linspace(-8.0, 8.0, N_CDF)
                    out["scipy_cdf_per_s"] = best_rate(lambda: st.laplace.cdf(xs, 0.0, m.params["scale"]), N_CDF)
                out["ratio"] = out["cdf_per_s"] / out["scipy_cdf_per_s"]
    except Exception:
        out["error"] = traceback.format_exc()
    print(json.dumps(out), flush=True)
    return 1 if "error" in out else 0


# ---------------------------------------------------------------------------------------------- driver
def run_phase(name, phase, cache, timeout):
    env = dict(os.environ, MECHKIT_CACHE_DIR=str(cache / "mechkit"), NUMBA_CACHE_DIR=str(cache / "numba"))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name, "--phase", phase]
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=str(ROOT))
    except subprocess.TimeoutExpired:
        return {"error": f"{phase} worker timed out after {timeout} s"}
    for line in reversed(r.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"error": f"{phase} worker exited with {r.returncode} and no result\n{r.stderr[-4000:]}"}


def notes(name, w):
    out = []
    if name == "gaussian":
        out.append(f"scipy: norm(mu^2/2, mu).cdf, max|diff| {w.get('max_abs_diff_vs_scipy', float('nan')):.1e}")
    elif name == "laplace":
        out.append("scipy: laplace.cdf in x-space (nearest equivalent, not the PLRV)")
    else:
        out.append("no scipy PLRV equivalent")
    if "cgf_source" in w:
        out.append(f"cgf: {w['cgf_source']}")
    if "cgf_check_failed" in w:
        out.append("closed-form cgf rejected")
    return "; ".join(out)


def row(r):
    c, w = r["cold"], r["warm"]

    def f(d, k, fmt):
        return format(d[k], fmt) if k in d else "-"

    def ok(v, good):
        return "-" if v is None else ("pass" if good(v) else "FAIL")

    return [r["family"], f(c, "import_s", ".2f"), f(c, "derive_s", ".2f"), f(c, "compile_s", ".2f"),
            f(c, "derive_compile_s", ".2f"), ok(c.get("derive_compile_s"), lambda v: v < TARGETS["derive_compile_s"]),
            f(w, "import_s", ".2f"), f(w, "cached_load_s", ".3f"),
            ok(w.get("cached_load_s"), lambda v: v < TARGETS["cached_load_s"]),
            f(w, "cdf_per_s", ".3g"), f(w, "scipy_cdf_per_s", ".3g"), f(w, "ratio", ".3g"),
            ok(w.get("ratio"), lambda v: v >= TARGETS["throughput_ratio"]) if "ratio" in w else "n/a",
            f(w, "cgf_per_s", ".3g"), f(w, "cgf2_per_s", ".3g"),
            "ERROR (see below)" if r.get("errors") else notes(r["family"], w)]


HEADER = ["family", "cold import s", "derive s", "compile+bind s", "total s", "<10s", "warm import s",
          "cached load s", "<1s", "cdf/s", "scipy cdf/s", "ratio", ">=0.5", "cgf/s", "cgf''/s", "notes"]


def table(results):
    rows = [HEADER] + [row(r) for r in results]
    widths = [max(len(x[i]) for x in rows) for i in range(len(HEADER))]
    lines = [" | ".join(x[i].ljust(widths[i]) for i in range(len(HEADER))).rstrip() for x in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="only " + " and ".join(QUICK))
    ap.add_argument("--families", nargs="+", metavar="NAME", help="any of: " + ", ".join(FAMILIES))
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "derive.json"))
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per worker process")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--phase", choices=("cold", "warm"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        return worker(a.worker, a.phase)
    names = [n for x in (a.families or []) for n in x.split(",") if n] or list(QUICK if a.quick else FAMILIES)
    unknown = [n for n in names if n not in PARAMS]
    if unknown:
        ap.error(f"unknown families {unknown}; choose from {', '.join(FAMILIES)}")
    results = []
    for name in names:
        cache = Path(tempfile.mkdtemp(prefix=f"mechkit-bench-{name}-"))
        try:
            cold = run_phase(name, "cold", cache, a.timeout)
            skipped = {"error": "skipped (cold run failed)"}
            warm = run_phase(name, "warm", cache, a.timeout) if "error" not in cold else skipped
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        errors = {ph: d["error"] for ph, d in (("cold", cold), ("warm", warm)) if "error" in d}
        results.append({"family": name, "params": PARAMS[name], "cold": cold, "warm": warm, "errors": errors})
        print(f"  {name}: done" + (" (with errors)" if errors else ""), file=sys.stderr, flush=True)
    vers = {p: metadata.version(p) for p in ("numpy", "scipy", "sympy", "numba")}
    head = (f"targets (issue): derivation + compile < {TARGETS['derive_compile_s']:g} s per family | cached load "
            f"< {TARGETS['cached_load_s']:g} s | CDF throughput >= {TARGETS['throughput_ratio']:g} x scipy.stats\n"
            f"cold = empty MECHKIT_CACHE_DIR and NUMBA_CACHE_DIR; cdf on {N_CDF:g} loss values; python "
            f"{platform.python_version()}, " + ", ".join(f"{k} {v}" for k, v in vers.items()) +
            f", {os.cpu_count()} cpus")
    print(head + "\n" + table(results))
    for r in results:
        for ph, err in r["errors"].items():
            print(f"\n{r['family']} ({ph}):\n{err}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "python": platform.python_version(), **vers,
            "platform": platform.platform(), "cpus": os.cpu_count(), "targets": TARGETS, "n_cdf": N_CDF}
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=1) + "\n")
    print(f"\nwrote {out}")
    return 1 if any(r["errors"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
