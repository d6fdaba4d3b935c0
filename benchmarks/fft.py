"""Benchmark: mechkit's certified FFT composer beside prv_accountant and dp_accounting (PLD).

One command runs all three libraries on the same cases; each (library, case) measurement runs in a fresh
subprocess (the script re-invokes itself as ``--worker LIB CASE_JSON``; the worker prints one JSON line), so
memory is measured per call and no library's state leaks into another's.  Inside a worker:

  1. import the library;
  2. warm up once on tiny cases that no timed case uses (homogeneous sigma=0.7, k=10 and a two-mechanism
     composition sigma 0.7 and 0.75, 5 each), so import-time and one-time compile costs (Numba, mechkit's
     on-disk family cache) are excluded;
  3. ``gc.collect()``, read the current RSS (the baseline) and reset the kernel's peak-RSS mark
     (``/proc/self/clear_refs``; if that is refused, the mark keeps the import/warm-up peak, see ``hwm_reset``
     in the JSON);
  4. the timed call (``time.perf_counter``): it constructs fresh mechanism objects, composes, and asks for
     epsilon at delta; a call under 1 s is repeated (3 calls in all, each with fresh objects) and the fastest
     counts, for every library alike (memory is that of the first call);
  5. ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` (peak RSS, KiB on Linux) after the call.

Cases (q = 0.01 Poisson subsampling, add/remove adjacency, delta = 1e-5):
  hom-s{sigma}-k{k}   subsampled Gaussian, sigma in {0.8, 1.0}, k in {1e3, 1e4, 1e5} self-compositions
  het-{n}             n in {10, 100} distinct subsampled Gaussians, sigmas = linspace(0.8, 1.2, n), each used
                      10000 // n times (1e4 in total)

Libraries and what is timed:
  mechkit  ``mk.compose(*[(mk.subsample(mk.gaussian(sigma=s), q), c) ...]).epsilon(delta, method="fft",
           eps_error, delta_error, variant)``; certified interval [est.lower, est.upper].  ``--variant prv`` (Theorem
           5.5, as prv_accountant) is what docs/performance.md's equal-width table measured; the default is the
           FFT's, connect the dots (narrower at equal budgets; its own column: benchmarks/fft_upper.py).
  prv      ``PRVAccountant(prvs=[PoissonSubsampledGaussianMechanism(s, q) ...], max_self_compositions=[c ...],
           eps_error, delta_error).compute_epsilon(delta, [c ...])`` -> (lower, estimate, upper).  Same eps_error
           and delta_error as mechkit: equal budgets give the same theorem width (Gopi et al. 2021, Thm 5.5).
  dp       ``from_gaussian_mechanism(s, sampling_prob=q, value_discretization_interval=...)``, ``self_compose(c)``
           per distinct mechanism, ``compose`` across them, ``get_epsilon_for_delta(delta)``, run twice: pessimistic
           (connect-the-dots, dp_accounting's default) and optimistic (privacy buckets, rounding down; in
           dp_accounting connect-the-dots supports only pessimistic_estimate=True, otherwise it warns and falls
           back to buckets).  The certified interval is [optimistic, pessimistic]; the estimate is the
           pessimistic value (what PLDAccountant reports).  time = both runs (a certified interval needs both);
           the pessimistic-only time and value are in the JSON.  Discretisation interval 1e-4 (PLDAccountant's
           default; ``--dp-interval``).

Columns
  eps, lower, upper, width   estimate, certified interval, width = upper - lower
  s                          wall-clock seconds of the timed call (absolute; compare the ratios)
  +MB                        peak extra memory: peak RSS during the call minus the RSS just before it (MiB)
  MB                         peak RSS of the worker process during the call (MiB; includes the library import)
  prv/mk s, dp/mk s          time ratios peer / mechkit (> 1: mechkit faster)
  mk/prv +MB, mk/dp +MB      peak-extra-memory ratios mechkit / peer (< 1: mechkit leaner)
  |mk-prv|, overlap          agreement: |mechkit estimate - prv estimate| and whether the two certified
                             intervals intersect (likewise mechkit vs dp in the JSON)

mk@prv: mechkit again when its width exceeds prv_accountant's at equal budgets (mechkit's interval includes
a floating-point allowance, prv_accountant's none), with eps_error lowered until the
widths match; the comparisons with prv use this run when it exists.  "mk*" in a ratio's name: the run used.
mk@dp: mechkit again at dp_accounting's certified width (eps_error = dp width / 2.5, so that mechkit's
interval is narrower); the speed, width and memory comparisons with dp use this run.  dp_accounting's
interval is wide because its optimistic (lower) estimate rounds every loss down; its pessimistic value
alone is close to the truth (see the eps columns), but it is one-sided.

Targets (PASS/FAIL; "n/a" where no target applies, "-" where a side is missing):
  speed   homogeneous cases: prv/mk >= 5, dp/mk >= 3; het-100: prv/mk >= 10 and dp/mk >= 10 (het-10: none)
  width   mechkit width <= each peer's width (every case)
  memory  mechkit peak extra memory <= each peer's (every case)

Timings are wall-clock on whatever else the machine is doing; run on an otherwise idle machine.  mechkit is
imported from this source tree; the peers are optional (``pip install ".[bench]"``), a missing one is
reported and its columns are left empty.

    python benchmarks/fft.py                       # all 8 cases, table + benchmarks/results/fft.json
    python benchmarks/fft.py --quick               # k = 1e3 homogeneous cases only
    python benchmarks/fft.py --cases 'hom-*' het-10 --skip-peer dp
    python benchmarks/fft.py --list                # the case names
"""
from __future__ import annotations

import argparse
import fnmatch
import gc
import importlib.util
import json
import math
import os
import platform
import resource
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _memory import reset_peak, rss_kib  # noqa: E402
from _common import render, versions  # noqa: E402
from _common import run_worker as _run_worker  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LIBS = ("mechkit", "prv", "dp")
PEER_MODULE = {"prv": "prv_accountant", "dp": "dp_accounting"}
PEER_DIST = {"prv": "prv-accountant", "dp": "dp-accounting"}
LABEL = {"mechkit": "mk", "prv": "prv", "dp": "dp", "mk@dp": "mk@dp", "mk@prv": "mk@prv"}
#: width-matched re-runs of mechkit against prv_accountant (each corrects eps_error from the last run's width)
MATCH_TRIES = 3
#: mechkit is also run at dp_accounting's certified width (eps_error = dp width / DP_WIDTH_MARGIN), the
#: comparison the issue's "at an equal or narrower certified bound width" asks for
DP_WIDTH_MARGIN = 2.5
Q = 0.01
DELTA = 1e-5
SIGMAS = (0.8, 1.0)
KS = (1_000, 10_000, 100_000)
DISTINCT = (10, 100)
TOTAL_HET = 10_000
SPEED_TARGETS = {"homogeneous": {"prv": 5.0, "dp": 3.0}, "het-100": {"prv": 10.0, "dp": 10.0}}
# tiny warm-up cases: no timed case uses these sigmas (timed sigmas are all in [0.8, 1.2])
WARMUP = ([[0.7, 10]], [[0.7, 5], [0.75, 5]])


def _k_label(k):
    e = int(round(math.log10(k)))
    return f"1e{e}" if 10 ** e == k else str(k)


def all_cases():
    import numpy as np
    out = []
    for s in SIGMAS:
        for k in KS:
            out.append({"name": f"hom-s{s:g}-k{_k_label(k)}", "kind": "homogeneous", "components": [[s, k]]})
    for n in DISTINCT:
        sig = np.linspace(0.8, 1.2, n)
        out.append({"name": f"het-{n}", "kind": "heterogeneous", "distinct": n,
                    "components": [[float(s), TOTAL_HET // n] for s in sig]})
    return out


QUICK = [f"hom-s{s:g}-k1e3" for s in SIGMAS]


# ---------------------------------------------------------------------------------------------- worker
_rss_kib = rss_kib
_reset_peak = reset_peak


def _maxrss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


#: calls shorter than this are repeated (REPEATS in all) and the fastest counts: a single 50 ms call on a shared
#: machine is dominated by noise (k = 1e3 ratios varied 3x between runs)
SHORT_CALL_S, REPEATS = 1.0, 3


def measure(fn):
    """Run fn(): wall time (best of REPEATS when a call is short; every call builds fresh objects), and peak RSS
    and peak extra RSS (KiB) over the first call; returns (value, record)."""
    gc.collect()
    base = _rss_kib()
    reset = _reset_peak()
    before = _maxrss()
    t = time.perf_counter()
    value = fn()
    dt = time.perf_counter() - t
    after = _maxrss()
    times = [dt]
    while dt < SHORT_CALL_S and len(times) < REPEATS:
        gc.collect()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return value, {"time_s": min(times), "times_s": times, "rss_before_kib": base, "maxrss_before_kib": before,
                   "maxrss_after_kib": after, "peak_kib": after, "peak_extra_kib": max(after - base, 0),
                   "hwm_reset": reset}


def run_mechkit(components, cfg):
    import mechkit as mk
    items = [(mk.subsample(mk.gaussian(sigma=s), cfg["q"]), int(c)) for s, c in components]
    kw = {"memory_limit": cfg["memory_limit"]} if cfg.get("memory_limit") else {}
    est = mk.compose(*items).epsilon(cfg["delta"], method="fft", eps_error=cfg["eps_error"],
                                     delta_error=cfg["delta_error"], variant=cfg.get("variant", "ctd"), **kw)
    return {"epsilon": float(est), "lower": est.lower, "upper": est.upper, "certified": est.certified,
            "details": {k: (float(v) if isinstance(v, (int, float)) or hasattr(v, "__float__") else str(v))
                        for k, v in est.details.items()}}


def run_prv(components, cfg):
    from prv_accountant import PRVAccountant, PoissonSubsampledGaussianMechanism
    prvs = [PoissonSubsampledGaussianMechanism(noise_multiplier=s, sampling_probability=cfg["q"])
            for s, _ in components]
    ks = [int(c) for _, c in components]
    acc = PRVAccountant(prvs=prvs, max_self_compositions=ks, eps_error=cfg["eps_error"],
                        delta_error=cfg["delta_error"])
    lo, est, up = acc.compute_epsilon(delta=cfg["delta"], num_self_compositions=ks)
    return {"epsilon": float(est), "lower": float(lo), "upper": float(up)}


def run_dp(components, cfg, pessimistic):
    from dp_accounting.pld import privacy_loss_distribution as pldlib
    total = None
    for s, c in components:
        pld = pldlib.from_gaussian_mechanism(s, sampling_prob=cfg["q"],
                                             value_discretization_interval=cfg["dp_interval"],
                                             use_connect_dots=pessimistic, pessimistic_estimate=pessimistic)
        pld = pld.self_compose(int(c))
        total = pld if total is None else total.compose(pld)
    return float(total.get_epsilon_for_delta(cfg["delta"]))


def worker(lib, case_json):
    payload = json.loads(case_json)
    case, cfg = payload["case"], payload["config"]
    out = {"lib": lib, "case": case["name"], "status": "ok"}
    try:
        t0 = time.perf_counter()
        try:
            if lib == "mechkit":
                import mechkit  # noqa: F401
            elif lib == "prv":
                import prv_accountant  # noqa: F401
            else:
                import dp_accounting.pld.privacy_loss_distribution  # noqa: F401
        except ImportError as e:
            out.update(status="not installed", error=str(e))
            print(json.dumps(out), flush=True)
            return 0
        out["import_s"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        for comps in WARMUP:
            if lib == "mechkit":
                run_mechkit(comps, cfg)
            elif lib == "prv":
                run_prv(comps, cfg)
            else:
                run_dp(comps, cfg, True)
                run_dp(comps, cfg, False)
        out["warmup_s"] = time.perf_counter() - t1
        comps = case["components"]
        if lib in ("mechkit", "prv"):
            fn = run_mechkit if lib == "mechkit" else run_prv
            res, rec = measure(lambda: fn(comps, cfg))
            out.update(res)
            out.update(rec)
        else:
            pess, rp = measure(lambda: run_dp(comps, cfg, True))
            opt, ro = measure(lambda: run_dp(comps, cfg, False))
            out.update(epsilon=pess, lower=opt, upper=pess, pessimistic=rp, optimistic=ro,
                       time_s=rp["time_s"] + ro["time_s"], peak_kib=max(rp["peak_kib"], ro["peak_kib"]),
                       peak_extra_kib=max(rp["peak_extra_kib"], ro["peak_extra_kib"]),
                       hwm_reset=rp["hwm_reset"] and ro["hwm_reset"])
        out["width"] = out["upper"] - out["lower"]
    except Exception:
        out.update(status="error", error=traceback.format_exc())
    print(json.dumps(out), flush=True)
    return 1 if out["status"] == "error" else 0


# ---------------------------------------------------------------------------------------------- driver
def run_worker(lib, case, cfg, timeout):
    return _run_worker(__file__, ROOT, lib, {"case": case, "config": cfg}, timeout, {"case": case["name"]})


def _ok(r):
    return r is not None and r.get("status") == "ok"


def compare(case, res):
    """Ratios, targets and agreement for one case; res maps lib -> worker record (or None if skipped)."""
    mk = res.get("mechkit")
    c = {"ratios": {}, "targets": {}, "agreement": {}}
    if case["kind"] == "homogeneous":
        speed = SPEED_TARGETS["homogeneous"]
    else:
        speed = SPEED_TARGETS.get(case["name"], {})
    for peer in ("prv", "dp"):
        p = res.get(peer)
        mk = res.get("mechkit")
        if _ok(res.get(f"mk@{peer}")):
            mk = res[f"mk@{peer}"]  # mechkit re-run at the peer's certified width
        both = _ok(mk) and _ok(p)
        tr = p["time_s"] / mk["time_s"] if both else None
        mr = (mk["peak_extra_kib"] / p["peak_extra_kib"] if p["peak_extra_kib"] > 0 else math.inf) if both else None
        c["ratios"][f"{peer}/mk_time"] = tr
        c["ratios"][f"mk/{peer}_peak_extra"] = mr
        c["ratios"][f"mk/{peer}_peak"] = mk["peak_kib"] / p["peak_kib"] if both else None
        if peer in speed:
            c["targets"][f"speed_vs_{peer}"] = {"target": speed[peer], "value": tr,
                                                 "pass": None if tr is None else tr >= speed[peer]}
        else:
            c["targets"][f"speed_vs_{peer}"] = {"target": None, "value": tr, "pass": "n/a"}
        c["targets"][f"width_vs_{peer}"] = {"target": "mk width <= peer width",
                                            "value": [mk["width"], p["width"]] if both else None,
                                            "pass": (mk["width"] <= p["width"]) if both else None}
        c["targets"][f"memory_vs_{peer}"] = {"target": "mk peak extra <= peer peak extra",
                                             "value": [mk["peak_extra_kib"], p["peak_extra_kib"]] if both else None,
                                             "pass": (mk["peak_extra_kib"] <= p["peak_extra_kib"]) if both else None}
        if both:
            c["agreement"][peer] = {"abs_diff": abs(mk["epsilon"] - p["epsilon"]),
                                    "overlap": max(mk["lower"], p["lower"]) <= min(mk["upper"], p["upper"])}
    return c


def _f(r, key, fmt):
    if r is None:
        return ""
    if r.get("status") != "ok":
        return {"timeout": "timeout", "not installed": "n/inst", "skipped": ""}.get(r.get("status"), "ERROR") \
            if key in ("epsilon", "time_s") else ""
    v = r.get(key)
    return "-" if v is None else format(v, fmt)


def _mb(r, key):
    if not _ok(r):
        return _f(r, key, "")
    return format(r[key] / 1024.0, ".1f")


def _ratio(v):
    return "-" if v is None else ("inf" if math.isinf(v) else format(v, ".2f"))


def _pf(t):
    p = t["pass"]
    return "n/a" if p == "n/a" else ("-" if p is None else ("PASS" if p else "FAIL"))


def tables(results, libs):
    h1, h2 = ["case"], ["case"]
    for lib in libs:
        h1 += [f"{LABEL[lib]} {x}" for x in ("eps", "lower", "upper", "width")]
        h2 += [f"{LABEL[lib]} {x}" for x in ("s", "+MB", "MB")]
    if "prv" in libs:
        h1 += ["|mk-prv|", "overlap"]
    peers = [p for p in ("prv", "dp") if p in libs]
    h2 += [f"{p}/mk* s" for p in peers] + [f"mk/{p} +MB" for p in peers]
    h2 += [f"speed {p}" for p in peers] + [f"width<={p}" for p in peers] + [f"mem<={p}" for p in peers]
    r1, r2 = [], []
    for r in results:
        a, b = [r["case"]["name"]], [r["case"]["name"]]
        for lib in libs:
            w = r["runs"].get(lib)
            a += [_f(w, "epsilon", ".5f"), _f(w, "lower", ".5f"), _f(w, "upper", ".5f"), _f(w, "width", ".5g")]
            b += [_f(w, "time_s", ".3f"), _mb(w, "peak_extra_kib"), _mb(w, "peak_kib")]
        cmp_ = r["compare"]
        if "prv" in libs:
            ag = cmp_["agreement"].get("prv")
            a += ["-", "-"] if ag is None else [format(ag["abs_diff"], ".2e"), "yes" if ag["overlap"] else "NO"]
        b += [_ratio(cmp_["ratios"][f"{p}/mk_time"]) for p in peers]
        b += [_ratio(cmp_["ratios"][f"mk/{p}_peak_extra"]) for p in peers]
        for kind in ("speed", "width", "memory"):
            b += [_pf(cmp_["targets"][f"{kind}_vs_{p}"]) for p in peers]
        r1.append(a)
        r2.append(b)
    h2 = [x.replace("speed ", "speed vs ") for x in h2]
    return render(r1, h1), render(r2, h2)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="only the k=1e3 homogeneous cases: " + ", ".join(QUICK))
    ap.add_argument("--cases", nargs="+", metavar="PATTERN",
                    help="case names or shell patterns, e.g. 'hom-*' 'het-100' (see --list)")
    ap.add_argument("--list", action="store_true", help="list the case names and exit")
    ap.add_argument("--skip-peer", nargs="+", default=[], choices=("prv", "dp"), metavar="PEER",
                    help="peers not to run: prv (prv_accountant), dp (dp_accounting)")
    ap.add_argument("--eps-error", type=float, default=0.01, help="eps_error for mechkit and prv (default 0.01)")
    ap.add_argument("--delta-error", type=float, default=1e-8, help="delta_error for mechkit and prv (default 1e-8)")
    ap.add_argument("--delta", type=float, default=DELTA, help="target delta (default 1e-5)")
    ap.add_argument("--variant", default="ctd", choices=("ctd", "prv"),
                    help="mechkit's FFT variant (default ctd; docs/performance.md's equal-width table: prv)")
    ap.add_argument("--dp-interval", type=float, default=1e-4,
                    help="dp_accounting value_discretization_interval (default 1e-4, PLDAccountant's default)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per (library, case) worker (default 900)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "fft.json"))
    ap.add_argument("--worker", nargs=2, metavar=("LIB", "CASE_JSON"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        return worker(*a.worker)

    cases = all_cases()
    if a.list:
        for c in cases:
            print(c["name"])
        return 0
    pats = [p for x in (a.cases or []) for p in x.split(",") if p] or (QUICK if a.quick else ["*"])
    unmatched = [p for p in pats if not any(fnmatch.fnmatchcase(c["name"], p) for c in cases)]
    if unmatched:
        ap.error(f"no case matches {unmatched}; cases: {', '.join(c['name'] for c in cases)}")
    cases = [c for c in cases if any(fnmatch.fnmatchcase(c["name"], p) for p in pats)]

    cfg = {"q": Q, "delta": a.delta, "eps_error": a.eps_error, "delta_error": a.delta_error, "variant": a.variant,
           "dp_interval": a.dp_interval}
    libs = ["mechkit"]
    missing = {}
    for peer in ("prv", "dp"):
        if peer in a.skip_peer:
            continue
        if importlib.util.find_spec(PEER_MODULE[peer]) is None:
            missing[peer] = PEER_MODULE[peer]
            print(f"note: {PEER_MODULE[peer]} is not installed; skipping its columns "
                  f"(pip install \".[bench]\" or pip install {PEER_DIST[peer]})", file=sys.stderr)
            continue
        libs.append(peer)

    results = []
    for case in cases:
        runs = {}
        for lib in libs:
            print(f"  {case['name']}: {lib} ...", file=sys.stderr, end="", flush=True)
            runs[lib] = run_worker(lib, case, cfg, a.timeout)
            st = runs[lib]["status"]
            print(f" {runs[lib]['time_s']:.3f} s" if st == "ok" else f" {st}", file=sys.stderr, flush=True)
        mk0, prv0 = runs.get("mechkit"), runs.get("prv")
        if _ok(mk0) and _ok(prv0) and mk0["width"] > prv0["width"]:
            # mechkit's interval carries a floating-point allowance prv_accountant's does not: re-run with the
            # eps_error that brings its width to prv's (the fixed part of the width, beyond 2 eps_error, stays)
            extra = mk0["width"] - 2 * cfg["eps_error"]
            # the finer grid may need more than the default 1 GiB memory_limit (prv_accountant used 4 GiB at
            # sigma 0.8, k = 1e5): the width-matched run may use up to 8 GiB, and its peak memory is reported
            cfg3 = dict(cfg, eps_error=0.999 * (prv0["width"] - extra) / 2, memory_limit=8 << 30)
            # the allowance grows with the finer grid, so the first correction can fall short (it did by 0.1% at
            # sigma 0.8, k = 1e5): correct again from the run's own width, overshooting by 20%, up to 3 runs
            for _ in range(MATCH_TRIES):
                if not cfg3["eps_error"] > 0:
                    break
                print(f"  {case['name']}: mechkit at prv's width (eps_error {cfg3['eps_error']:.6g}) ...",
                      file=sys.stderr, end="", flush=True)
                runs["mk@prv"] = run_worker("mechkit", case, cfg3, a.timeout)
                runs["mk@prv"]["eps_error"] = cfg3["eps_error"]
                st = runs["mk@prv"]["status"]
                print(f" {runs['mk@prv']['time_s']:.3f} s" if st == "ok" else f" {st}", file=sys.stderr, flush=True)
                if not _ok(runs["mk@prv"]) or runs["mk@prv"]["width"] <= prv0["width"]:
                    break
                cfg3 = dict(cfg3, eps_error=cfg3["eps_error"] - 0.6 * (runs["mk@prv"]["width"] - prv0["width"]))
        if _ok(runs.get("dp")):
            cfg2 = dict(cfg, eps_error=runs["dp"]["width"] / DP_WIDTH_MARGIN)
            print(f"  {case['name']}: mechkit at dp's width (eps_error {cfg2['eps_error']:.3g}) ...", file=sys.stderr,
                  end="", flush=True)
            runs["mk@dp"] = run_worker("mechkit", case, cfg2, a.timeout)
            runs["mk@dp"]["eps_error"] = cfg2["eps_error"]
            st = runs["mk@dp"]["status"]
            print(f" {runs['mk@dp']['time_s']:.3f} s" if st == "ok" else f" {st}", file=sys.stderr, flush=True)
        results.append({"case": case, "runs": runs, "compare": compare(case, runs)})

    vers = versions()
    head = (f"targets: homogeneous prv/mk time >= {SPEED_TARGETS['homogeneous']['prv']:g}, dp/mk >= "
            f"{SPEED_TARGETS['homogeneous']['dp']:g}; het-100 both >= {SPEED_TARGETS['het-100']['prv']:g}; "
            f"mk width <= peer width; mk peak extra memory <= peer's\n"
            f"q={Q:g}, delta={a.delta:g}, eps_error={a.eps_error:g}, delta_error={a.delta_error:g} (mechkit and prv), "
            f"dp value_discretization_interval={a.dp_interval:g} (dp interval = [optimistic, pessimistic], "
            f"time = both runs)\npython {platform.python_version()}, "
            + ", ".join(f"{k} {v}" for k, v in vers.items() if v) + f", {os.cpu_count()} cpus")
    not_run = [f"{PEER_MODULE[p]} (skipped)" for p in sorted(a.skip_peer)] + \
              [f"{m} (not installed)" for m in missing.values()]
    if not_run:
        head += "\npeers not run: " + ", ".join(not_run)
    extra_libs = [x for x in ("mk@prv", "mk@dp") if any(x in r["runs"] for r in results)]
    t1, t2 = tables(results, libs + extra_libs)
    print(head + "\n\nestimates and certified intervals\n" + t1 + "\n\ncost (s = seconds, +MB = peak extra "
          "memory, MB = peak RSS; MiB) and targets\n" + t2)
    errors = [(r["case"]["name"], lib, w) for r in results for lib, w in r["runs"].items()
              if w.get("status") in ("error", "timeout")]
    for name, lib, w in errors:
        print(f"\n{name} ({lib}): {w['status']}\n{w.get('error', '')}")
    if any(not w.get("hwm_reset", True) for r in results for w in r["runs"].values() if _ok(w)):
        print("\nnote: the peak-RSS mark could not be reset (/proc/self/clear_refs); +MB may be understated")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "python": platform.python_version(), **vers,
            "platform": platform.platform(), "cpus": os.cpu_count(), "config": cfg, "libs": libs,
            "skipped_peers": sorted(a.skip_peer), "missing_peers": missing, "timeout_s": a.timeout,
            "speed_targets": SPEED_TARGETS, "warmup": WARMUP}
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=1, default=float) + "\n")
    print(f"\nwrote {out}")
    return 1 if any(w.get("status") == "error" for _, _, w in errors) else 0  # a timeout is a result, not a failure


if __name__ == "__main__":
    sys.exit(main())
