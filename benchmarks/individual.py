"""Benchmark: the individual GDP filter (mechkit.individual) and the individual RDP filter baseline.

``python benchmarks/individual.py`` (about half a minute; JSON to ``benchmarks/results/individual.json``).

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
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.npz"
        t0 = time.perf_counter()
        filt.save(path)
        t_save = time.perf_counter() - t0
        t0 = time.perf_counter()
        back = ind.load(path)
        t_load = time.perf_counter() - t0
    assert np.array_equal(back.spent_sq, filt.spent_sq)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"kind": kind, "n": n, "steps": steps, "steps_s": t_steps, "ms_per_step": 1e3 * t_steps / steps,
            "eps_s": t_eps, "save_s": t_save, "load_s": t_load, "peak_mib": peak / 1024,
            "peak_extra_mib": max(peak - base, 0) / 1024, "hwm_reset": reset,
            "halted": int(np.count_nonzero(filt.halted_at > 0)), "eps_max": float(eps.max()),
            "eps_median": float(np.median(eps)), "budget_epsilon": float(filt.budget_epsilon(DELTA))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", nargs=3, metavar=("KIND", "N", "STEPS"))
    ap.add_argument("--sizes", type=float, nargs="+", default=[1e4, 1e5, 1e6])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--kinds", nargs="+", default=["gdp", "rdp"], choices=["gdp", "rdp"])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "individual.json"))
    args = ap.parse_args()
    if args.worker:
        kind, n, steps = args.worker
        print(json.dumps(worker(kind, int(n), int(steps))))
        return

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    rows = []
    hdr = (f"{'filter':>6} {'N':>9} {'steps':>5} {'steps s':>8} {'ms/step':>8} {'eps s':>7} {'save s':>7} "
           f"{'load s':>7} {'+MB':>7} {'peak MB':>8} {'halted':>8} {'eps med':>8} {'eps max':>8}")
    print(hdr)
    print("-" * len(hdr))
    for n in [int(s) for s in args.sizes]:
        for kind in args.kinds:
            cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, str(n), str(args.steps)]
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=str(ROOT))
            if r.returncode != 0:
                print(f"{kind:>6} {n:>9}  worker failed:\n{r.stderr}")
                continue
            row = json.loads(r.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(f"{kind:>6} {n:>9} {row['steps']:>5} {row['steps_s']:>8.3f} {row['ms_per_step']:>8.3f} "
                  f"{row['eps_s']:>7.3f} {row['save_s']:>7.3f} {row['load_s']:>7.3f} {row['peak_extra_mib']:>7.1f} "
                  f"{row['peak_mib']:>8.1f} {row['halted']:>8} {row['eps_median']:>8.4f} {row['eps_max']:>8.4f}",
                  flush=True)
    import numpy as np

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"python": platform.python_version(), "numpy": np.__version__,
                               "machine": platform.platform(), "cpus": os.cpu_count(),
                               "budget": {"epsilon": EPS_BUDGET, "delta": DELTA}, "rows": rows}, indent=1))
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()
