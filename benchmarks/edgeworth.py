"""Benchmark: the Edgeworth accountant (method="edgeworth") beside the SPA and mechkit's certified FFT.

One process (``python benchmarks/edgeworth.py``; JSON to ``benchmarks/results/edgeworth.json``):

0. **Cold queries against issue 23's goal** (<= 10 ms): the median (and min, max) over ``--repeats`` fresh
   compositions of one epsilon(1e-5) query, on issue 23's composition (subsampled Gaussian x 1000 with Laplace x
   20), a subsampled Gaussian at k = 1e4, the README's user-defined logistic x 100, and 10 distinct subsampled
   Gaussians.
1. **The FFT benchmark's cases** (Poisson-subsampled Gaussian, q = 0.01, delta = 1e-5, add/remove):
   ``hom-s{0.8,1.0}-k{1e3,1e4,1e5}`` and ``het-10``, ``het-100`` (sigmas linspace(0.8, 1.2, n), 1e4 steps in
   total).  The reference is mechkit's FFT at eps_error = 1e-3 (certified interval of width 2e-3 plus the
   floating-point allowance; 3e-3 or 1e-2 where that grid exceeds the FFT's memory limit).  For the plain Edgeworth
   estimate (AEA, orders 0 to 3), the tilted expansion
   (order 2) and the SPA (MSD1): epsilon, its error against the FFT estimate, and whether it lies inside the
   FFT interval; for the EEAI interval its width and whether it contains the FFT interval's truth (intersects
   it).  Time per query: "first" on a fresh composition (derives the cumulants and the Chernoff tables),
   "repeat" a new delta on the same one (what a calibration loop pays), in ms, and fft/edgeworth ratios.
2. **Flat in k**: the same mechanism at k = 1e3 ... 1e8; edgeworth and SPA query times.
3. **Regimes**: expected sampled steps p k from 0.1 to 1000 and delta from 1e-3 to 1e-10, the error of each
   method against the FFT (or, where the FFT cannot resolve delta, against the SPA's certified bracket).
   The docs' table "which method is accurate when" (docs/performance.md) comes from this table.

Timings are wall-clock (``time.perf_counter``) on a warm Numba/family cache; read the ratios.
"""
from __future__ import annotations

import json
import math
import platform
import sys
from pathlib import Path

from _common import arg_parser, timed, warm_composition

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

Q, DELTA = 0.01, 1e-5


def components(case):
    import numpy as np
    if case.startswith("hom"):
        s, k = case.split("-")[1:]
        return [(float(s[1:]), int(float(k[1:])))]
    n = int(case.split("-")[1])
    return [(float(s), 10_000 // n) for s in np.linspace(0.8, 1.2, n)]


def build(mk, comps, jitter=0.0):
    return mk.compose(*[(mk.subsample(mk.gaussian(sigma=s + jitter), Q), c) for s, c in comps])


def fft_cases(mk, cases):
    rows = []
    for case in cases:
        comps = components(case)
        for eps_error in (1e-3, 3e-3, 1e-2):  # the finest reference that fits the FFT's memory limit
            try:
                f, tf = timed(lambda: build(mk, comps).epsilon(DELTA, eps_error=eps_error))
                break
            except mk.ParameterError:
                continue
        row = {"case": case, "fft": [f.lower, float(f), f.upper], "fft_ms": tf * 1e3, "fft_eps_error": eps_error}
        run = build(mk, comps, jitter=1e-9)  # fresh mechanisms: nothing memoised from the FFT run
        e, first = timed(lambda: run.epsilon(DELTA, method="edgeworth", order=2))
        _, repeat = timed(lambda: run.epsilon(2 * DELTA, method="edgeworth", order=2))
        row.update({"ew_first_ms": first * 1e3, "ew_repeat_ms": repeat * 1e3, "eeai": [e.lower, e.upper],
                    "eeai_contains": bool(e.lower <= f.upper and f.lower <= e.upper),
                    "eeai_interval": e.details["interval"]})
        for o in range(4):
            v = run.epsilon(DELTA, method="edgeworth", order=o)
            row[f"aea{o}"] = float(v)
            row[f"aea{o}_reliable"] = v.details["reliable"]
        t, tt = timed(lambda: run.epsilon(DELTA, method="edgeworth", order=2, variant="tilted"))
        s, ts = timed(lambda: run.epsilon(DELTA, method="spa"))
        row.update({"tilted2": float(t), "tilted_ms": tt * 1e3, "tilted_reliable": t.details["reliable"],
                    "spa": float(s), "spa_ms": ts * 1e3, "spa_reliable": s.details.get("reliable"),
                    "fft_over_ew_first": tf / first, "fft_over_ew_repeat": tf / repeat})
        rows.append(row)
        print_case(row)
    return rows


def print_case(r):
    lo, est, up = r["fft"]

    def err(v):
        inside = "in " if lo <= v <= up else "out"
        return f"{v - est:+9.2e} {inside}"

    print(f"{r['case']:>13} | {est:8.5f} | " + " | ".join(err(r[f"aea{o}"]) for o in range(4)) +
          f" | {err(r['tilted2'])} | {err(r['spa'])} | [{r['eeai'][0]:.4f}, {r['eeai'][1]:.4f}] "
          f"{'ok' if r['eeai_contains'] else 'MISS'} | {r['ew_first_ms']:7.1f} | {r['ew_repeat_ms']:6.1f} | "
          f"{r['fft_ms']:8.0f} | {r['fft_over_ew_repeat']:8.0f}", flush=True)


def flat_in_k(mk, ks):
    rows = []
    for k in ks:
        run = build(mk, [(1.0, k)], jitter=1e-9 * math.log10(k))
        e, first = timed(lambda: run.epsilon(DELTA, method="edgeworth"))
        _, repeat = timed(lambda: run.epsilon(2 * DELTA, method="edgeworth"))
        s, ts = timed(lambda: run.epsilon(DELTA, method="spa"))
        rows.append({"k": k, "ew_eps": float(e), "ew_first_ms": first * 1e3, "ew_repeat_ms": repeat * 1e3,
                     "spa_eps": float(s), "spa_ms": ts * 1e3})
        r = rows[-1]
        print(f"{k:>10.0e} | {r['ew_eps']:9.4f} | {r['ew_first_ms']:8.1f} | {r['ew_repeat_ms']:8.2f} | "
              f"{r['spa_eps']:9.4f} | {r['spa_ms']:7.1f}", flush=True)
    return rows


#: section 0's compositions: name -> (builder of a fresh composition, what it is)
LOGISTIC = ("exp(-x / b) / (b * (1 + exp(-x / b))**2)", "exp(-(x - 1) / b) / (b * (1 + exp(-(x - 1) / b))**2)")
COLD = {
    "issue": (lambda mk: mk.compose((mk.subsample(mk.gaussian(sigma=1.0), Q), 1000), (mk.laplace(scale=20.0), 20)),
              "subsampled Gaussian sigma 1 x 1000 + Laplace scale 20 x 20 (issue 23's)"),
    "sg-s0.8-k1e4": (lambda mk: mk.compose((mk.subsample(mk.gaussian(sigma=0.8), Q), 10_000)),
                     "subsampled Gaussian sigma 0.8, k = 1e4"),
    "logistic-x100": (lambda mk: mk.compose((mk.Mechanism.from_densities(*LOGISTIC, var="x", name="logistic")(b=2.0),
                                             100)),
                      "the README's logistic (user-defined), b = 2, x 100"),
    "het-10": (lambda mk: build(mk, components("het-10")), "10 distinct subsampled Gaussians, 1e4 steps"),
}
COLD_GOAL_MS = 10.0


def cold_queries(mk, repeats):
    """Median, min and max over ``repeats`` fresh compositions (new mechanism objects: every CGF value computed
    anew; the family's kernels compiled and loaded) of one epsilon(1e-5) query, against the issue's 10 ms."""
    import statistics
    rows = []
    for name, (make, what) in COLD.items():
        make(mk).epsilon(DELTA, method="edgeworth")  # derivation and kernels out of the timing
        ts, eps = [], None
        for _ in range(repeats):
            run = make(mk)
            e, t = timed(lambda: run.epsilon(DELTA, method="edgeworth"))
            ts.append(t * 1e3)
            eps = e
        r = {"case": name, "what": what, "median_ms": statistics.median(ts), "min_ms": min(ts), "max_ms": max(ts),
             "repeats": repeats, "epsilon": [eps.lower, float(eps), eps.upper], "goal_ms": COLD_GOAL_MS,
             "met": statistics.median(ts) <= COLD_GOAL_MS}
        rows.append(r)
        print(f"{name:>14} | {r['median_ms']:9.2f} | {r['min_ms']:7.2f} | {r['max_ms']:7.2f} | "
              f"{'met' if r['met'] else 'NOT MET':>7} | [{eps.lower:.4f}, {float(eps):.4f}, {eps.upper:.4f}] | {what}",
              flush=True)
    return rows


REGIMES = [(q, k, d) for q, k in ((0.001, 100), (0.001, 1000), (0.01, 1000), (0.01, 10_000), (0.1, 1000),
                                  (0.1, 10_000)) for d in (1e-3, 1e-5, 1e-10)]


def regimes(mk, sigma=1.0):
    rows = []
    for q, k, d in REGIMES:
        run = mk.compose((mk.subsample(mk.gaussian(sigma=sigma), q), k))
        row = {"q": q, "k": k, "pk": q * k, "delta": d}
        ref = None
        for eps_error, delta_error in ((1e-3, d / 1e3), (1e-3, d / 10), (1e-2, d / 10)):
            try:
                f = run.epsilon(d, eps_error=eps_error, delta_error=delta_error)
                ref = (f.lower, f.upper, "fft")
                break
            except mk.MechkitError:  # below the FFT's floating-point floor, or over its memory limit
                continue
        if ref is None:  # the FFT cannot resolve this delta: the SPA's certified bracket
            s = run.epsilon(d, method="spa")
            ref = (s.lower, s.upper, "spa bounds")
        row["ref"] = ref
        mid, half = 0.5 * (ref[0] + ref[1]), 0.5 * (ref[1] - ref[0])
        for name, kw in (("aea2", {"method": "edgeworth", "order": 2}),
                         ("aea3", {"method": "edgeworth", "order": 3}),
                         ("tilted2", {"method": "edgeworth", "order": 2, "variant": "tilted"}),
                         ("spa", {"method": "spa"}), ("gdp", {"method": "gdp"})):
            try:
                v = run.epsilon(d, **kw)
                row[name] = float(v)
                row[name + "_rel_err"] = max(0.0, abs(float(v) - mid) - half) / mid if mid > 0 else math.nan
                row[name + "_reliable"] = v.details.get("reliable")
            except Exception as exc:
                row[name] = f"{type(exc).__name__}"
        e = run.epsilon(d, method="edgeworth")
        row["eeai"] = [e.lower, e.upper]
        rows.append(row)

        def cell(n):
            if isinstance(row.get(n), str):
                return f"{row[n]:>12}"
            flag = "" if row.get(n + "_reliable") in (True, None) else "?"
            return f"{row[n + '_rel_err']:11.1e}{flag or ' '}"

        print(f"{q:>6} | {k:>6} | {q * k:>6.1f} | {d:>7.0e} | {mid:8.4f} ({ref[2]:>10}) | " +
              " | ".join(cell(n) for n in ("aea2", "aea3", "tilted2", "spa", "gdp")) +
              f" | [{e.lower:.3f}, {e.upper:.3f}]", flush=True)
    return rows


def main(argv=None):
    ap = arg_parser(__doc__, "edgeworth", "k = 1e3 cases only and a short flat-in-k sweep")
    ap.add_argument("--sections", default="0123", help="which tables to run (e.g. 03); the others are kept from "
                                                       "an existing JSON file")
    ap.add_argument("--repeats", type=int, default=21, help="fresh compositions per case in section 0")
    args = ap.parse_args(argv)
    import mechkit as mk
    warm = warm_composition(mk)
    for kw in ({}, {"method": "edgeworth"}, {"method": "edgeworth", "variant": "tilted"}, {"method": "spa"}):
        warm.epsilon(1e-5, **kw)
    cases = (["hom-s0.8-k1e3", "hom-s1.0-k1e3"] if args.quick else
             [f"hom-s{s}-k{k}" for s in ("0.8", "1.0") for k in ("1e3", "1e4", "1e5")] + ["het-10", "het-100"])
    out = Path(args.out)
    saved = json.loads(out.read_text()) if out.exists() else {}
    if "0" in args.sections:
        print(f"0. a cold epsilon(1e-5) query (a fresh composition), ms over {args.repeats} compositions; goal "
              f"<= {COLD_GOAL_MS:g} ms (median)")
        print(f"{'case':>14} | {'median ms':>9} | {'min':>7} | {'max':>7} | {'goal':>7} | [lower, estimate, upper]")
        saved["cold"] = cold_queries(mk, args.repeats)
        print()
    if "1" in args.sections:
        print("1. epsilon(delta=1e-5), q=0.01: error of each estimate against the FFT estimate (eps_error=1e-3), "
              "'in' = inside the FFT's certified interval")
        print(f"{'case':>13} | {'fft eps':>8} | {'AEA-0':>13} | {'AEA-1':>13} | {'AEA-2':>13} | {'AEA-3':>13} | "
              f"{'tilted-2':>13} | {'SPA':>13} | EEAI interval          | ew ms 1st | repeat | fft ms | fft/ew")
        saved["cases"] = fft_cases(mk, cases)
    if "2" in args.sections:
        print("\n2. time per query, subsampled Gaussian sigma=1, q=0.01, delta=1e-5 (flat in k)")
        print(f"{'k':>10} | {'ew eps':>9} | {'first ms':>8} | {'rep ms':>8} | {'spa eps':>9} | {'spa ms':>7}")
        saved["flat_in_k"] = flat_in_k(mk, [10 ** e for e in (range(3, 6) if args.quick else range(3, 9))])
    if "3" in args.sections and not args.quick:
        print("\n3. regimes, sigma=1: epsilon error beyond the reference interval, relative ('?': flagged "
              "unreliable)")
        print(f"{'q':>6} | {'k':>6} | {'q k':>6} | {'delta':>7} | {'reference':>21} | {'AEA-2':>12} | "
              f"{'AEA-3':>12} | {'tilted-2':>12} | {'SPA':>12} | {'GDP':>12} | EEAI")
        saved["regimes"] = regimes(mk)
    out.parent.mkdir(parents=True, exist_ok=True)
    saved.update({"python": platform.python_version(), "machine": platform.machine()})
    out.write_text(json.dumps(saved, indent=2, default=str))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
