"""Benchmark: the individual GDP filter (mechkit.individual) and the individual RDP filter baseline.

``python benchmarks/individual.py`` (a few minutes; JSON to ``benchmarks/results/individual.json``).

For N in {1e4, 1e5, 1e6} examples and 1000 steps, each (filter, N) runs in a fresh subprocess (the script
re-invokes itself as ``--worker KIND N STEPS``), so the memory columns belong to that case alone.  In the worker:

1. a pool of 4 per-step mu arrays of length N is drawn (mu_i = 0.1 * min(1, level_i * U(0, 1)), level_i ~ U(0.2, 2):
   DP-GD with noise multiplier 10 and heterogeneous gradient norms); step j uses pool[j % 4], so drawing random
   numbers is not timed;
2. the current RSS is read and the kernel's peak-RSS mark is reset (``/proc/self/clear_refs``);
3. timed (``time.perf_counter``): construction of the filter (budget epsilon = 2 at delta = 1e-5, converted to a
   GDP budget by the exact mu-GDP curve, or to a cap on sum mu^2 by the RDP conversion) and ``steps`` calls of
   ``step(mu, return_scale=True)``  -> ``steps s``, ``ms/step``;
4. timed: ``epsilon(1e-5)`` for all N examples (vectorised exact GDP inversion, or the RDP conversion minimised
   over the orders)  -> ``eps s``;
5. timed: ``save`` to a temp file and ``load`` back  -> ``save s``, ``load s``;
6. ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` -> ``peak MB`` (whole worker, NumPy and mechkit imports
   included) and ``+MB`` = peak minus the RSS before step 3 (the filter's own state and temporaries).

``halted`` is the number of examples that exhausted their budget within the steps.  Target (issue): 1e6 examples
x 1000 steps within seconds.

**Individual PLD accountant** (``mechkit.IndividualPLDAccountant``, DP-SGD with Poisson sampling q = 0.01, noise
multiplier 1, clip 1, default grid sigma_ratio 1.05 / 96 buckets, eps_error 0.01, delta_error 1e-10): for N in
{1e3, 1e4, 1e5} examples and 1000 steps, one worker each (``--worker pld N STEPS``): per step the norms
``level_i * U(0, 1)``, level_i ~ U(0.2, 2), are drawn outside the timed region; timed are the ``step`` calls
(``steps s``), the grid plan with the 2 x 96 bucket discretisations (``plan s``), ``epsilon(1e-5)`` for all examples
(``eps s``; with ``--pool W`` and N >= 1e5 also on a pool of W spawned processes, ``pool s``, start-up and the
workers' plans included, the answer checked bit-identical), ``fitted_mu()`` (``mu s``), ``delta(1.0)``
(``delta s``), save and load; memory as above.  ``rows`` is the
number of distinct count rows (what is evaluated).

**Bucketing error** (in this process): 8 examples with levels from 0.05 to 2 over 200 steps (same q, z); ``exact``
is the FFT composition of each example's own per-step pairs (``mk.compose`` of its exact effective sigmas), the
columns the bucketed epsilon(1e-5) of the geometric grids r = 1.02, 1.05 (default), 1.1 and of the paper's linear
grid in sigma (App. D.2) from z to 100 z with the default's 96 buckets, and the relative error.

**Plancherel vs inverse FFT**: the accountant's evaluation (zoom, band limit, Plancherel tables) against an inverse
FFT of size N per distinct row (the full spectrum product, ``fft.DiscreteCurve``), per row, on the 1e4-example run's
first 40 rows; the epsilons agree to ~1e-9.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _memory import reset_peak, rss_kib  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EPS_BUDGET, DELTA = 2.0, 1e-5


_rss_kib = rss_kib
_reset_peak = reset_peak


def save_and_load(acc, load):
    """(restored accountant, seconds to save, seconds to load) through a temporary file."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.npz"
        t0 = time.perf_counter()
        acc.save(path)
        t_save = time.perf_counter() - t0
        t0 = time.perf_counter()
        back = load(path)
        return back, t_save, time.perf_counter() - t0


def worker(kind, n, steps):
    import numpy as np

    from mechkit import individual as ind

    rng = np.random.default_rng(0)
    level = rng.uniform(0.2, 2.0, n)
    pool = [0.1 * np.minimum(1.0, level * rng.uniform(0.0, 1.0, n)) for _ in range(4)]
    # warm-up on a tiny case (imports, first calls)
    w = ind.GDPFilter(4, epsilon=1.0, delta=DELTA) if kind == "gdp" else ind.RDPFilter(4, epsilon=1.0, delta=DELTA)
    w.step(np.full(4, 0.1))
    w.epsilon(DELTA)

    base = _rss_kib()
    reset = _reset_peak()
    t0 = time.perf_counter()
    if kind == "gdp":
        filt = ind.GDPFilter(n, epsilon=EPS_BUDGET, delta=DELTA)
    else:
        filt = ind.RDPFilter(n, epsilon=EPS_BUDGET, delta=DELTA)
    for j in range(steps):
        filt.step(pool[j % 4], return_scale=True)
    t_steps = time.perf_counter() - t0
    t0 = time.perf_counter()
    eps = filt.epsilon(DELTA)
    t_eps = time.perf_counter() - t0
    back, t_save, t_load = save_and_load(filt, ind.load)
    assert np.array_equal(back.spent_sq, filt.spent_sq)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"kind": kind, "n": n, "steps": steps, "steps_s": t_steps, "ms_per_step": 1e3 * t_steps / steps,
            "eps_s": t_eps, "save_s": t_save, "load_s": t_load, "peak_mib": peak / 1024,
            "peak_extra_mib": max(peak - base, 0) / 1024, "hwm_reset": reset,
            "halted": int(np.count_nonzero(filt.halted_at > 0)), "eps_max": float(eps.max()),
            "eps_median": float(np.median(eps)), "budget_epsilon": float(filt.budget_epsilon(DELTA))}


Q, Z, CLIP = 0.01, 1.0, 1.0
#: worker processes for the pooled epsilon of N >= 1e5 examples (``--pool``; 0: not measured)
POOL_WORKERS = int(os.environ.get("MECHKIT_BENCH_POOL", "0"))


def pld_worker(n, steps):
    import numpy as np

    import mechkit as mk

    rng = np.random.default_rng(0)
    level = rng.uniform(0.2, 2.0, n)
    warm = mk.IndividualPLDAccountant(4, Q, Z, CLIP, sigma_ratio=2.0, max_sigma_factor=4.0)  # imports, kernels
    warm.step(np.full(4, 0.5))
    warm.epsilon(DELTA)

    base = _rss_kib()
    reset = _reset_peak()
    acc = mk.IndividualPLDAccountant(n, Q, Z, CLIP, max_steps=steps)
    t_steps = 0.0
    for _ in range(steps):
        norms = level * rng.uniform(0.0, 1.0, n)
        t0 = time.perf_counter()
        acc.step(norms)
        t_steps += time.perf_counter() - t0
    t0 = time.perf_counter()
    acc._plan_for(steps)
    t_plan = time.perf_counter() - t0
    t0 = time.perf_counter()
    eps = acc.epsilon(DELTA)
    t_eps = time.perf_counter() - t0
    t_pool = None
    if POOL_WORKERS and n >= 100_000:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        os.environ["OPENBLAS_NUM_THREADS"] = "1"   # for the spawned workers (this process's BLAS is already up)
        t0 = time.perf_counter()
        with ProcessPoolExecutor(POOL_WORKERS, mp_context=multiprocessing.get_context("spawn")) as pool:
            pooled = acc.epsilon(DELTA, executor=pool)
        t_pool = time.perf_counter() - t0
        assert np.array_equal(pooled.upper, eps.upper) and np.array_equal(pooled.value, eps.value)
    t0 = time.perf_counter()
    mu = acc.fitted_mu()
    t_mu = time.perf_counter() - t0
    t0 = time.perf_counter()
    acc.delta(1.0)
    t_delta = time.perf_counter() - t0
    back, t_save, t_load = save_and_load(acc, mk.individual.load)
    assert np.array_equal(back.counts, acc.counts)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = {"kind": "pld", "n": n, "steps": steps, "steps_s": t_steps, "ms_per_step": 1e3 * t_steps / steps,
           "plan_s": t_plan, "eps_s": t_eps, "eps_pool_s": t_pool,
           "pool_workers": POOL_WORKERS, "mu_s": t_mu, "delta_s": t_delta, "save_s": t_save, "load_s": t_load,
           "peak_mib": peak / 1024, "peak_extra_mib": max(peak - base, 0) / 1024, "hwm_reset": reset,
           "rows": int(np.unique(acc.counts, axis=0).shape[0]), "buckets": acc.n_buckets,
           "eps_median": float(np.median(eps)), "eps_max": float(eps.max()),
           "width_max": float(np.max(eps.upper - eps.lower)), "mu_median": float(np.median(mu))}
    if n == 10_000:
        out["plancherel_vs_ifft"] = plancherel_vs_ifft(acc, 40)
    return out


def plancherel_vs_ifft(acc, n_rows):
    """Seconds per distinct row: the accountant's evaluation vs an inverse FFT of size N per row."""
    import math

    import numpy as np
    import scipy.fft as sfft

    from mechkit.accountants import fft as mfft
    from mechkit.individual import buckets

    rows = np.unique(acc.counts, axis=0)[:n_rows].astype(np.int64)
    plan = acc._plan_for(int(rows.sum(axis=1).max()))
    t0 = time.perf_counter()
    res = buckets.evaluate(plan, rows, acc._eps_error, acc._delta_error, eps_targets=(("val", DELTA, 0.0),))
    ours = np.maximum(res["remove"]["val"], res["add"]["val"])
    t_ours = (time.perf_counter() - t0) / rows.shape[0]
    t0 = time.perf_counter()
    naive = np.zeros(rows.shape[0])
    N = plan.grid.N
    half = N // 2 + 1
    order = np.concatenate((np.arange(half, N), np.arange(half)))
    for d, side in plan.sides.items():
        logX = np.log(np.stack([sfft.rfft(side._on_circle(b, N)) for b in range(side.B)]).astype(complex))
        for i, k in enumerate(rows):
            nz = np.flatnonzero(k)
            pmf = sfft.irfft(np.exp(k[nz].astype(float) @ logX[nz]), N)
            curve = mfft.DiscreteCurve(half - N, plan.grid.h, float(k @ side.mu), pmf[order], 0.0)
            naive[i] = max(naive[i], curve.epsilon(DELTA))
    t_naive = (time.perf_counter() - t0) / rows.shape[0]
    return {"rows": int(rows.shape[0]), "grid_points": N, "ours_ms_per_row": 1e3 * t_ours,
            "ifft_ms_per_row": 1e3 * t_naive, "max_abs_diff": float(np.max(np.abs(ours - naive))),
            "speedup": t_naive / t_ours if t_ours > 0 else math.inf}


def bucketing_error(n_examples=8, steps=200):
    """epsilon(1e-5) of the bucketed composition (several grids) vs the example's own per-step composition."""
    import math

    import numpy as np

    import mechkit as mk

    rng = np.random.default_rng(7)
    levels = np.geomspace(0.05, 2.0, n_examples)
    norms = np.minimum(levels[None, :] * rng.uniform(0.0, 1.0, (steps, n_examples)), 10.0)
    grids = {"r=1.02": 1.02, "r=1.05": 1.05, "r=1.1": 1.1}
    eps = {}
    for name, r in grids.items():
        acc = mk.IndividualPLDAccountant(n_examples, Q, Z, CLIP, sigma_ratio=r, max_steps=steps)
        for row in norms:
            acc.step(row)
        eps[name] = (np.asarray(acc.epsilon(DELTA)), acc.n_buckets)
    n_lin = eps["r=1.05"][1]
    lin = np.linspace(Z, 100 * Z, n_lin)

    def comp(sigmas):
        u, c = np.unique(sigmas, return_counts=True)
        return mk.compose(*[(mk.subsample(mk.gaussian(float(s)), Q), int(k)) for s, k in zip(u, c)])

    out = []
    for i in range(n_examples):
        sig = mk.individual_pld.effective_sigma(norms[:, i], Z, CLIP)
        sig = sig[np.isfinite(sig)]
        t0 = time.perf_counter()
        exact = float(comp(sig).epsilon(DELTA, delta_error=1e-10))
        t_exact = time.perf_counter() - t0
        b = np.clip(np.searchsorted(lin, sig, side="right") - 1, 0, n_lin - 1)
        linear = float(comp(lin[b]).epsilon(DELTA, delta_error=1e-10))
        row = {"level": float(levels[i]), "exact": exact, "exact_s": t_exact, "linear": linear,
               "linear_rel": linear / exact - 1 if exact > 0 else math.nan}
        for name in grids:
            row[name] = float(eps[name][0][i])
            row[name + "_rel"] = row[name] / exact - 1 if exact > 0 else math.nan
        out.append(row)
    return {"steps": steps, "buckets": {k: v[1] for k, v in eps.items()} | {"linear": n_lin}, "rows": out}


def _pool(row):
    t = row.get("eps_pool_s")
    return "-" if t is None else f"{t:.2f}"


def run_worker(kind, n, steps, env):
    """One (kind, N) case in a fresh subprocess; its JSON row, or None after printing why it failed."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, str(n), str(steps)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=str(ROOT))
    if r.returncode != 0:
        print(f"{kind:>6} {n:>9}  worker failed:\n{r.stderr}")
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", nargs=3, metavar=("KIND", "N", "STEPS"))
    ap.add_argument("--sizes", type=float, nargs="+", default=[1e4, 1e5, 1e6])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--kinds", nargs="+", default=["gdp", "rdp"], choices=["gdp", "rdp"])
    ap.add_argument("--pld-sizes", type=float, nargs="*", default=[1e3, 1e4, 1e5])
    ap.add_argument("--pld-steps", type=int, default=1000)
    ap.add_argument("--no-bucketing-error", action="store_true")
    ap.add_argument("--pool", type=int, default=0, metavar="W",
                    help="also time the PLD epsilon of N >= 1e5 examples on a process pool of W spawned workers "
                         "(pool start and plan rebuilds included; checked bit-identical to the serial answer)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "individual.json"))
    args = ap.parse_args()
    if args.worker:
        kind, n, steps = args.worker
        fn = pld_worker if kind == "pld" else (lambda n, steps: worker(kind, n, steps))
        print(json.dumps(fn(int(n), int(steps))))
        return

    env = dict(os.environ, MECHKIT_BENCH_POOL=str(args.pool))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    rows = []
    hdr = (f"{'filter':>6} {'N':>9} {'steps':>5} {'steps s':>8} {'ms/step':>8} {'eps s':>7} {'save s':>7} "
           f"{'load s':>7} {'+MB':>7} {'peak MB':>8} {'halted':>8} {'eps med':>8} {'eps max':>8}")
    print(hdr)
    print("-" * len(hdr))
    for n in [int(s) for s in args.sizes]:
        for kind in args.kinds:
            row = run_worker(kind, n, args.steps, env)
            if row is None:
                continue
            rows.append(row)
            print(f"{kind:>6} {n:>9} {row['steps']:>5} {row['steps_s']:>8.3f} {row['ms_per_step']:>8.3f} "
                  f"{row['eps_s']:>7.3f} {row['save_s']:>7.3f} {row['load_s']:>7.3f} {row['peak_extra_mib']:>7.1f} "
                  f"{row['peak_mib']:>8.1f} {row['halted']:>8} {row['eps_median']:>8.4f} {row['eps_max']:>8.4f}",
                  flush=True)
    pld_rows = []
    if args.pld_sizes:
        hdr = (f"\n{'PLD':>6} {'N':>9} {'steps':>5} {'steps s':>8} {'ms/step':>8} {'plan s':>7} {'eps s':>7} "
               f"{'pool s':>7} {'mu s':>7} {'delta s':>7} {'save s':>7} {'load s':>7} {'+MB':>7} {'peak MB':>8} "
               f"{'rows':>7} {'eps med':>8} {'eps max':>8} {'width':>7}")
        print(hdr)
        print("-" * len(hdr))
    for n in [int(x) for x in args.pld_sizes]:
        row = run_worker("pld", n, args.pld_steps, env)
        if row is None:
            continue
        pld_rows.append(row)
        print(f"{'pld':>6} {n:>9} {row['steps']:>5} {row['steps_s']:>8.3f} {row['ms_per_step']:>8.3f} "
              f"{row['plan_s']:>7.2f} {row['eps_s']:>7.2f} {_pool(row):>7} {row['mu_s']:>7.2f} {row['delta_s']:>7.2f} "
              f"{row['save_s']:>7.3f} {row['load_s']:>7.3f} {row['peak_extra_mib']:>7.1f} {row['peak_mib']:>8.1f} "
              f"{row['rows']:>7} {row['eps_median']:>8.4f} {row['eps_max']:>8.4f} {row['width_max']:>7.4f}", flush=True)
    for row in pld_rows:
        pv = row.get("plancherel_vs_ifft")
        if pv:
            print(f"\nper distinct row (N = {row['n']}, grid {pv['grid_points']} points, {pv['rows']} rows): "
                  f"zoom + band + Plancherel {pv['ours_ms_per_row']:.3f} ms, "
                  f"inverse FFT {pv['ifft_ms_per_row']:.1f} ms "
                  f"({pv['speedup']:.0f}x); max |eps difference| {pv['max_abs_diff']:.1e}")

    err = None
    if not args.no_bucketing_error:
        err = bucketing_error()
        names = ["r=1.02", "r=1.05", "r=1.1", "linear"]
        print(f"\nbucketing error, epsilon({DELTA:g}) after {err['steps']} steps (q={Q}, z={Z}); buckets: "
              + ", ".join(f"{k} {v}" for k, v in err["buckets"].items()))
        hdr = f"{'level':>6} {'exact':>8} " + " ".join(f"{k:>16}" for k in names)
        print(hdr)
        print("-" * len(hdr))
        for row in err["rows"]:
            cells = " ".join(f"{row[k]:>8.4f} {100 * row[k + '_rel']:>+6.2f}%" for k in names)
            print(f"{row['level']:>6.3f} {row['exact']:>8.4f} {cells}")

    import numpy as np

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"python": platform.python_version(), "numpy": np.__version__,
                               "machine": platform.platform(), "cpus": os.cpu_count(),
                               "budget": {"epsilon": EPS_BUDGET, "delta": DELTA}, "rows": rows,
                               "pld": {"sampling_rate": Q, "noise_multiplier": Z, "clip": CLIP, "rows": pld_rows},
                               "bucketing_error": err}, indent=1))
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()
