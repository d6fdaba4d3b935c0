"""Benchmark: whether the FFT composer's two threads run when a second core is idle, in a sustained loop.

The FFT composes a composition's two directions in two threads where ``progress._spare_core`` says a second core
is likely idle (grids of 2^15 points or more).  A calibration search or a sweep asks such queries back to back for
minutes; the 1-minute load average then counts mechkit's own two threads, and a rule on that average alone (the rule
before the thirty-seventh session: load < cores - 0.5) turned the threads off after about 80 s on an idle
two-core machine.  This script runs one composition (10 distinct Poisson-subsampled Gaussians, sigma 0.8-1.2,
q 0.01, 1e3 steps each, epsilon(1e-5) at eps_error 5e-4: ~9e4 grid points) back to back and reports, per window of
the loop, the median time a query, the share of queries that ran threaded, the 1-minute load average and the share
the old rule would have threaded (computed, not applied).  Phases:

  alone      ``--seconds`` (default 120) on a machine with nothing else running;
  contended  ``--contended`` seconds (default 30) with a spinning process on another core: the threads should stop at
             once (two threads are slower than one after the other there: docs/performance.md).

    python benchmarks/threads.py                    # ~2.5 minutes; JSON to benchmarks/results/threads.json
    python benchmarks/threads.py --seconds 30 --contended 10
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

from _common import arg_parser, versions

WINDOW_S = 15.0


def _loop(mk, progress, seconds):
    """Rows of (window start s, queries, median s, share threaded, load average, share the old rule threads)."""
    items = [(mk.subsample(mk.gaussian(sigma=0.8 + 0.4 * i / 9), 0.01), 1000) for i in range(10)]
    seen = []
    rule = progress._spare_core

    def spy():
        now = rule()
        cores = os.cpu_count() or 1
        seen.append((now, cores >= 2 and progress._load_average_spare(cores)))   # the old rule, not applied
        return now
    progress._spare_core = spy
    rows, start = [], time.monotonic()
    try:
        while time.monotonic() - start < seconds:
            w0, times, flags = time.monotonic(), [], []
            while time.monotonic() - w0 < WINDOW_S and time.monotonic() - start < seconds:
                seen.clear()
                t = time.perf_counter()
                mk.compose(*items).epsilon(1e-5, method="fft", eps_error=5e-4)
                times.append(time.perf_counter() - t)
                flags.extend(seen[:1])
            rows.append({"t_s": round(w0 - start), "queries": len(times), "median_s": statistics.median(times),
                         "threaded": sum(f[0] for f in flags) / max(len(flags), 1),
                         "load_1min": os.getloadavg()[0],
                         "old_rule_threaded": sum(f[1] for f in flags) / max(len(flags), 1)})
    finally:
        progress._spare_core = rule
    return rows


def main():
    ap = arg_parser(__doc__, "threads", "a short run (30 s alone, 10 s contended)")
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--contended", type=float, default=30.0)
    a = ap.parse_args()
    if a.quick:
        a.seconds, a.contended = 30.0, 10.0
    import mechkit as mk
    from mechkit import progress
    progress.enabled(False)
    mk.compose((mk.subsample(mk.gaussian(sigma=1.0), 0.01), 1000)).epsilon(1e-5, method="fft", eps_error=5e-4)
    out = {"versions": versions(("mechkit", "numpy", "scipy", "numba")), "cores": os.cpu_count(),
           "alone": _loop(mk, progress, a.seconds)}
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        out["contended"] = _loop(mk, progress, a.contended)
    finally:
        spin.kill()
        spin.wait()
    print(f"{out['cores']} cores; 10 distinct subsampled Gaussians x 1e3, epsilon(1e-5), eps_error 5e-4")
    print("phase     | t s | queries | median s | threaded | load 1 min | old rule threaded")
    for phase in ("alone", "contended"):
        for r in out[phase]:
            print(f"{phase:9s} | {r['t_s']:3d} | {r['queries']:7d} | {r['median_s']:8.3f} | {r['threaded']:8.0%} | "
                  f"{r['load_1min']:10.2f} | {r['old_rule_threaded']:.0%}")
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
