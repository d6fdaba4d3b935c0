"""Benchmark: where the FFT's first connect-the-dots grid lands against its budget (``fft_ctd.mesh``).

One process (``python benchmarks/fft_mesh.py``; JSON to ``benchmarks/results/fft_mesh.json``): for each setting,
epsilon(1e-5) at eps_error 1e-2 and 2e-3 on a fresh composition (warm caches, one thread), and per grid composed
its points and r = the larger side's excess over eps_error (r > 1: a finer grid follows).  For the first grid,
C = spread / (k h^2) with spread = 1.5 r eps_error (the estimate is (2 upper + lower) / 3), beside the model's
constant (``fft_ctd.spread_constant`` of the composed loss's standard deviation s).  "capped": the mesh is the
tenth of a step's standard deviation or the floor (``SCALE_SHARE``, ``SCALE_SHRINK``), where C is not the model's.

Settings: DP-SGD sigma {0.5, 0.8, 1, 2, 5} x q {0.001, 0.01, 0.1, 1} x k {1e2, 1e3, 1e4} (``--quick``: k <= 1e3;
those above the memory limit are skipped), Laplace scale {1, 5, 20} x k {10, 100, 1000}, 2 and 10 distinct
subsampled Gaussians (1e4 steps), subsampled Gaussian x 1000 with Laplace x 20, randomized response x 20 with a
Gaussian x 50.  The summary: queries composing more than one grid, grid points in all, query seconds in all.
"""
from __future__ import annotations

import itertools
import json
import math
import sys
from pathlib import Path

from _common import arg_parser, timed, versions

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DELTA = 1e-5
EPS_ERRORS = (1e-2, 2e-3)


def cases(mk, quick):
    """(name, maker of a fresh composition) per setting."""
    import numpy as np
    ks = (100, 1000) if quick else (100, 1000, 10_000)
    for s, q, k in itertools.product((0.5, 0.8, 1.0, 2.0, 5.0), (0.001, 0.01, 0.1, 1.0), ks):
        yield f"sg s{s:g} q{q:g} k{k}", lambda s=s, q=q, k=k: mk.compose((mk.subsample(mk.gaussian(sigma=s), q), k))
    for b, k in itertools.product((1.0, 5.0, 20.0), (10, 100, 1000)):
        yield f"laplace b{b:g} k{k}", lambda b=b, k=k: mk.compose((mk.laplace(scale=b), k))
    for n in (2, 10):
        yield f"het-{n}", lambda n=n: mk.compose(*[(mk.subsample(mk.gaussian(sigma=s), 0.01), 10_000 // n)
                                                  for s in np.linspace(0.8, 1.2, n)])
    yield "sg x 1000 + laplace x 20", lambda: mk.compose((mk.subsample(mk.gaussian(sigma=1.0), 0.01), 1000),
                                                         (mk.laplace(scale=20.0), 20))
    yield "rr x 20 + gaussian x 50", lambda: mk.compose((mk.randomized_response(epsilon=0.5), 20),
                                                        (mk.gaussian(sigma=10.0), 50))


def composed_sd(run):
    """The composed loss's standard deviation, the smaller direction's (as ``fft_ctd.mesh`` takes it)."""
    sds = []
    for d in ("add", "remove"):
        tot = 0.0
        for m, c in run.items:
            var = float(m.plrv(d).cgf(0.0, 2))
            tot += c * var if math.isfinite(var) and var > 0 else 0.0
        sds.append(math.sqrt(tot))
    return min(sds)


def measure(mk, make, eps_error):
    """One query's record: its grids (points, mesh, r), seconds, interval, and C and the model's constant."""
    from mechkit.accountants import fft_ctd
    grids = []
    attempt = fft_ctd._epsilon_attempt

    def spy_attempt(d, ee):
        inner = attempt(d, ee)

        def run(c):
            est, ok, r = inner(c)
            grids.append({"points": int(c.grid.N), "mesh": c.h, "r": None if r is None else float(r)})
            return est, ok, r
        return run
    fft_ctd._epsilon_attempt = spy_attempt
    try:
        run = make()
        e, t = timed(lambda: run.epsilon(DELTA, eps_error=eps_error))
    finally:
        fft_ctd._epsilon_attempt = attempt
    k = sum(c for _, c in run.items)
    sd = composed_sd(run)
    spread = getattr(fft_ctd, "spread_constant", None)  # (absent before the thirtieth session: constant 1)
    model = (spread(sd) if spread else fft_ctd.MESH_CONSTANT) if sd > 0 else None
    rec = {"eps_error": eps_error, "seconds": t, "grids": grids, "epsilon": [e.lower, float(e), e.upper], "sd": sd,
           "model": model}
    if grids and grids[0]["r"] is not None:
        g = grids[0]
        rec["C"] = 1.5 * g["r"] * eps_error / (k * g["mesh"] ** 2)
        law = math.sqrt(1.5 * getattr(fft_ctd, "SPREAD_TARGET", 1.0) * eps_error / (model * k)) if model else None
        rec["capped"] = law is None or g["mesh"] < 0.99 * law
    return rec


def main(argv=None):
    ap = arg_parser(__doc__, "fft_mesh", "k <= 1e3 only")
    args = ap.parse_args(argv)
    import warnings

    import mechkit as mk
    import mechkit.progress as progress
    progress._spare_core = lambda: False  # one thread: the grids' cost, not the machine's second core
    mk.progress.enabled(False)
    rows = []
    print(f"{'case':26s} | eps_error | grids | points          | r first | C     | model | capped | ms")
    for name, make in cases(mk, args.quick):
        for ee in EPS_ERRORS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    make().epsilon(DELTA, eps_error=ee)  # family and kernels out of the timing
                    rec = measure(mk, make, ee)
                except mk.MechkitError as exc:
                    rows.append({"case": name, "eps_error": ee, "error": str(exc)[:200]})
                    print(f"{name:26s} | {ee:9g} | {type(exc).__name__}: {str(exc)[:60]}")
                    continue
            rec["case"] = name
            rows.append(rec)
            g = rec["grids"]
            r0 = g[0]["r"] if g and g[0]["r"] is not None else float("nan")
            print(f"{name:26s} | {ee:9g} | {len(g):5d} | {str([x['points'] for x in g]):15s} | {r0:7.2f} | "
                  f"{rec.get('C', float('nan')):5.2f} | {rec['model'] or float('nan'):5.2f} | "
                  f"{'yes' if rec.get('capped') else 'no':6s} | {rec['seconds'] * 1e3:.1f}", flush=True)
    ok = [r for r in rows if "grids" in r]
    summary = {"queries": len(ok), "more_than_one_grid": sum(len(r["grids"]) > 1 for r in ok),
               "points": sum(g["points"] for r in ok for g in r["grids"]), "seconds": sum(r["seconds"] for r in ok)}
    print(f"\n{summary['queries']} queries: {summary['more_than_one_grid']} composed more than one grid; "
          f"{summary['points']:,} grid points and {summary['seconds']:.2f} s in all")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"versions": versions(), "summary": summary, "rows": rows}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
