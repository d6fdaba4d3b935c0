"""Benchmark: DP-SGD calibration (issue 21) -- mechkit's ``mk.calibrate`` beside dp_accounting's
``calibrate_dp_mechanism`` and, where installed, prv_accountant's ``find_noise_multiplier``, in one run.

Each (library, row) runs in a fresh subprocess (the script re-invokes itself as ``--worker LIB ROW_JSON``; the
worker prints one JSON line), so no library keeps anything from another row.  Phases inside a worker:

  1. import       import the library (seconds in the JSON);
  2. warm-up      one calibration of the same kind on a problem no row uses (noise: q 0.01, 50 steps, epsilon 2;
                  steps: sigma 1.7, q 0.01, epsilon 1), so that one-off costs (Numba's compiled code loaded or
                  compiled, mechkit's family cache, SciPy's imports) are paid before the timed call; reported as
                  ``warm s`` (that whole calibration, its own problem's cost included), never counted in ``s``;
  3. timed        the row's calibration, ``time.perf_counter`` around one call that builds every mechanism or
                  event afresh (``--repeats`` runs, each in its own fresh worker: the median is reported).

Regimes (delta 1e-5, Poisson sampling, add/remove neighbours):
  noise   the smallest noise multiplier sigma with epsilon(delta) <= target: q 0.01 with T 1000 and 10000 steps
          and target epsilon 1, 3, 8; q 0.001 with T 100000 at epsilon 1
  steps   the largest number of steps with epsilon(delta) <= 3 at sigma 1, q 0.01

Libraries, as a user calls them:
  mk    ``mk.calibrate(lambda s: mk.dpsgd(noise_multiplier=s, sampling_rate=q, steps=T), epsilon, delta,
        bounds=(0.3, 30))`` (steps: ``lambda t: ...``, ``bounds=(1, 10**6)``, ``integer=True``): Newton steps from
        the saddle point estimate's crossing, then regula falsi (log scale), on method "auto"'s certified upper
        bound (the FFT's at eps_error 0.01 unless the SPA's is as narrow), to a relative tolerance 1e-3 (1 step);
        the value returned is feasible by the certified bound, its neighbour one tolerance away is not.
  dp    ``mechanism_calibration.calibrate_dp_mechanism(PLDAccountant, event, epsilon, delta, bracket)``, the event
        ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(s)), T)``; bracket
        ``LowerEndpointAndGuess(0.3, 1.0)`` for sigma, ``LowerEndpointAndGuess(1, 1000)`` and ``discrete=True``
        for steps (a guess within a factor 3 of the answer, as 1.0 is for sigma); tolerance its default (``tol``
        1e-6 absolute in sigma, 1 step; ``--dp-tol``): Brent's method on PLDAccountant's pessimistic epsilon
        (connect-the-dots, value_discretization_interval 1e-4), then a check that the root's epsilon is <= target.
  prv   ``prv_accountant.dpsgd.find_noise_multiplier(q, T, epsilon, delta, eps_error)`` (noise rows only:
        prv_accountant has no steps calibration), eps_error its default 0.1 (``--prv-eps-error 0.01`` for
        mechkit's budget: about 100 s, 17x mechkit, on the noise T 1e4 epsilon 8 row of a 2-core machine).  It
        guarantees only that its upper bound at the answer is < target + eps_error.
  evals is the number of epsilon evaluations (compositions accounted) of each search.

Independent check (untimed, one more worker after all rows): at every library's answer, dp_accounting's
PLDAccountant epsilon (default discretisation; ``PLD@mk``, ``PLD@dp``, ``PLD@prv``) and mechkit's certified
FFT interval (``mk[lo,up]@dp`` in the table, all in the JSON).  A value over the target is marked ``!``: on
a PLD epsilon, over the target by that accountant's estimate; on mechkit's certified upper bound, not certified
within it (a violation is certain only where the certified lower bound is over the target).  PLD@dp is
dp_accounting checking itself (<= target by construction); for mk and prv it is a second library.

Columns of the time table: ``s`` the timed calibration (median over repeats), ``warm s`` the import-free warm-up
of the same worker, ``dp/mk``, ``prv/mk`` the time ratios (> 1: mechkit faster).  Timings are wall-clock on
whatever else the machine does (the load average is in the JSON): read the ratios.

The JSON (``--out``, default ``benchmarks/results/calibrate.json``) keeps every worker's record, the checks, the
machine (cpus, load), the library versions and ``MECHKIT_CACHE_DIR`` (taken from the environment when set; the
workers inherit it).

    python benchmarks/calibrate.py                    # 8 rows, a few minutes
    python benchmarks/calibrate.py --quick            # 2 rows: noise q 0.01 T 1e4 epsilon 8, and steps
    python benchmarks/calibrate.py --rows 'noise-*' --skip-peer prv
    python benchmarks/calibrate.py --list             # the row names
"""
from __future__ import annotations

import fnmatch
import importlib.util
import json
import os
import platform
import statistics
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))  # mechkit from this source tree, as the other benchmark scripts

from _common import arg_parser, render, versions  # noqa: E402
from _common import run_worker as _run_worker  # noqa: E402

DELTA = 1e-5
MK_SIGMA_BOUNDS = (0.3, 30.0)
MK_STEPS_BOUNDS = (1, 10**6)
DP_SIGMA_BRACKET = (0.3, 1.0)
DP_STEPS_BRACKET = (1, 1000)
LIBS = ("mk", "dp", "prv")
MODULE = {"mk": "mechkit", "dp": "dp_accounting", "prv": "prv_accountant"}
DIST = {"mk": "mechkit", "dp": "dp-accounting", "prv": "prv-accountant"}


def _row(kind, q, epsilon, steps=None, sigma=None, delta=DELTA):
    if kind == "noise":
        name = f"noise-q{q:g}-T{steps:.0e}-eps{epsilon:g}".replace("e+0", "e")
    else:
        name = f"steps-s{sigma:g}-q{q:g}-eps{epsilon:g}"
    return {"name": name, "kind": kind, "q": q, "steps": steps, "sigma": sigma, "epsilon": epsilon, "delta": delta}


ROWS = ([_row("noise", 0.01, e, steps=t) for t in (1000, 10000) for e in (1.0, 3.0, 8.0)]
        + [_row("noise", 0.001, 1.0, steps=100000), _row("steps", 0.01, 3.0, sigma=1.0)])
QUICK = ("noise-q0.01-T1e4-eps8", "steps-s1-q0.01-eps3")
#: warm-up problems, one per kind; no row uses them
WARMUP = {"noise": _row("noise", 0.01, 2.0, steps=50), "steps": _row("steps", 0.01, 1.0, sigma=1.7)}


def regime(row):
    if row["kind"] == "noise":
        return f"noise: q={row['q']:g} T={row['steps']}"
    return f"steps: q={row['q']:g} sigma={row['sigma']:g}"


# ---------------------------------------------------------------------------------------------- calibrations
def calibrate_mk(row, cfg):
    import mechkit as mk
    q, eps, delta = row["q"], row["epsilon"], row["delta"]
    if row["kind"] == "noise":
        T = row["steps"]
        cal = mk.calibrate(lambda s: mk.dpsgd(noise_multiplier=s, sampling_rate=q, steps=T), epsilon=eps,
                           delta=delta, bounds=MK_SIGMA_BOUNDS)
    else:
        sigma = row["sigma"]
        cal = mk.calibrate(lambda t: mk.dpsgd(noise_multiplier=sigma, sampling_rate=q, steps=t), epsilon=eps,
                           delta=delta, bounds=MK_STEPS_BOUNDS, integer=True)
    est = cal.estimate
    return {"value": cal.value, "upper": float(est.upper), "lower": float(est.lower), "estimate": float(est),
            "method": est.method, "evaluations": cal.evaluations, "neighbour": cal.neighbour,
            "neighbour_upper": float(cal.neighbour_upper),
            "fallback": est.details.get("calibration_fallback")}


def _dp_event(row, x):
    import dp_accounting as dpa
    if row["kind"] == "noise":
        s, t = x, row["steps"]
    else:
        s, t = row["sigma"], int(x)
    return dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(row["q"], dpa.GaussianDpEvent(s)), t)


def calibrate_dp(row, cfg):
    from dp_accounting import mechanism_calibration as mc
    from dp_accounting.pld import pld_privacy_accountant
    count = [0]

    def fresh():
        count[0] += 1
        return pld_privacy_accountant.PLDAccountant()

    noise = row["kind"] == "noise"
    bracket = mc.LowerEndpointAndGuess(*(DP_SIGMA_BRACKET if noise else DP_STEPS_BRACKET))
    value = mc.calibrate_dp_mechanism(make_fresh_accountant=fresh, make_event_from_param=lambda x: _dp_event(row, x),
                                      target_epsilon=row["epsilon"], target_delta=row["delta"],
                                      bracket_interval=bracket, discrete=not noise, tol=cfg.get("dp_tol"))
    return {"value": float(value) if noise else int(value), "evaluations": count[0]}


def calibrate_prv(row, cfg):
    if row["kind"] != "noise":
        return {"value": None, "evaluations": 0, "note": "prv_accountant has no steps calibration"}
    from prv_accountant import dpsgd
    count = [0]
    base = dpsgd.DPSGDAccountant

    class Counting(base):  # find_noise_multiplier builds one accountant per epsilon evaluation
        def __init__(self, *args, **kwargs):
            count[0] += 1
            super().__init__(*args, **kwargs)

    dpsgd.DPSGDAccountant = Counting
    try:
        value = dpsgd.find_noise_multiplier(row["q"], row["steps"], row["epsilon"], row["delta"],
                                            eps_error=cfg["prv_eps_error"])
    finally:
        dpsgd.DPSGDAccountant = base
    return {"value": float(value), "evaluations": count[0]}


CALIBRATE = {"mk": calibrate_mk, "dp": calibrate_dp, "prv": calibrate_prv}


# ---------------------------------------------------------------------------------------------- checks
def pld_epsilon(row, x):
    from dp_accounting.pld import pld_privacy_accountant
    acc = pld_privacy_accountant.PLDAccountant()
    acc.compose(_dp_event(row, x))
    return float(acc.get_epsilon(row["delta"]))


def mk_interval(row, x):
    import mechkit as mk
    if row["kind"] == "noise":
        run = mk.dpsgd(noise_multiplier=float(x), sampling_rate=row["q"], steps=row["steps"])
    else:
        run = mk.dpsgd(noise_multiplier=row["sigma"], sampling_rate=row["q"], steps=int(x))
    est = run.epsilon(row["delta"])
    return [float(est.lower), float(est.upper)]


def check_worker(payload):
    """For every row and every library's answer: dp_accounting's PLD epsilon and mechkit's certified interval."""
    out = {}
    have_dp = importlib.util.find_spec("dp_accounting") is not None
    for item in payload["items"]:
        row, values = item["row"], item["values"]
        res = {}
        for lib, x in values.items():
            if x is None:
                continue
            rec = {"value": x}
            for key, fn, ok in (("pld_epsilon", pld_epsilon, have_dp), ("mk_interval", mk_interval, True)):
                if not ok:
                    continue
                t = time.perf_counter()
                try:
                    rec[key] = fn(row, x)
                except Exception as exc:  # noqa: BLE001 -- a failed check is recorded, not fatal
                    rec[key] = None
                    rec[key + "_error"] = f"{type(exc).__name__}: {exc}"
                rec[key + "_s"] = time.perf_counter() - t
            res[lib] = rec
        out[row["name"]] = res
    return out


# ---------------------------------------------------------------------------------------------- worker
def worker(lib, payload_json):
    payload = json.loads(payload_json)
    if lib == "check":
        print(json.dumps({"status": "ok", "checks": check_worker(payload)}), flush=True)
        return 0
    row, cfg = payload["row"], payload["config"]
    out = {"lib": lib, "row": row["name"], "status": "ok"}
    try:
        t0 = time.perf_counter()
        try:
            __import__(MODULE[lib])
        except ImportError as exc:
            out.update(status="not installed", error=str(exc))
            print(json.dumps(out), flush=True)
            return 0
        out["import_s"] = time.perf_counter() - t0
        fn = CALIBRATE[lib]
        t1 = time.perf_counter()
        out["warmup"] = fn(WARMUP[row["kind"]], cfg)
        out["warmup_s"] = time.perf_counter() - t1
        t2 = time.perf_counter()
        res = fn(row, cfg)
        out["time_s"] = time.perf_counter() - t2
        out.update(res)
        if res.get("value") is None:
            out["status"] = "n/a"
    except Exception:  # noqa: BLE001 -- every outcome is a record
        out.update(status="error", error=traceback.format_exc()[-4000:])
    print(json.dumps(out), flush=True)
    return 0


def run_worker(lib, payload, timeout):
    return _run_worker(__file__, ROOT, lib, payload, timeout)


def repeated(lib, row, cfg, repeats, timeout):
    """``repeats`` fresh workers; the first record, with ``time_s`` the median of the successful runs' times."""
    runs = [run_worker(lib, {"row": row, "config": cfg}, timeout) for _ in range(repeats)]
    good = [r for r in runs if r.get("status") == "ok"]
    rec = dict(good[0] if good else runs[0])
    if good:
        rec["time_s"] = statistics.median(r["time_s"] for r in good)
        rec["warmup_s"] = statistics.median(r["warmup_s"] for r in good)
        rec["times_s"] = [r["time_s"] for r in good]
        values = {r["value"] for r in good}
        if len(values) > 1:
            rec["values_differ"] = sorted(values)
    rec["runs"] = len(runs)
    return rec


# ---------------------------------------------------------------------------------------------- tables
def load():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def _ok(r):
    return r is not None and r.get("status") == "ok"


def _val(row, r):
    if r is None:
        return ""
    if r.get("status") != "ok":
        return {"not installed": "n/inst", "n/a": "n/a", "timeout": "timeout"}.get(r.get("status"), "ERROR")
    return f"{r['value']:.5f}" if row["kind"] == "noise" else str(r["value"])


def _num(x, fmt):
    return "-" if x is None else format(x, fmt)


def _eps(x, target):
    if x is None:
        return "-"
    return f"{x:.5f}" + ("!" if x > target else "")


def _ratio(a, b):
    if not (_ok(a) and _ok(b)) or not b["time_s"] > 0:
        return None
    return a["time_s"] / b["time_s"]


def tables(results, libs):
    h1 = ["row", "regime", "target eps", "mk value", "mk upper"]
    h1 += [f"{lib} value" for lib in libs if lib != "mk"]
    h1 += [f"PLD@{lib}" for lib in libs] + ["mk[lo,up]@dp"]
    h2 = ["row"] + [f"{lib} {x}" for lib in libs for x in ("evals", "s", "warm s")]
    h2 += [f"{lib}/mk" for lib in libs if lib != "mk"]
    t1, t2 = [], []
    for res in results:
        row, runs, chk = res["row"], res["runs"], res.get("check", {})
        target = row["epsilon"]
        mk = runs.get("mk")
        a = [row["name"], regime(row), f"{target:g} @ {row['delta']:g}", _val(row, mk),
             _eps(mk.get("upper"), target) if _ok(mk) else "-"]
        a += [_val(row, runs.get(lib)) for lib in libs if lib != "mk"]
        a += [_eps(chk.get(lib, {}).get("pld_epsilon"), target) for lib in libs]
        iv = chk.get("dp", {}).get("mk_interval")
        a.append("-" if iv is None else f"[{iv[0]:.5f}, {_eps(iv[1], target)}]")
        b = [row["name"]]
        for lib in libs:
            r = runs.get(lib)
            b += [str(r["evaluations"]), f"{r['time_s']:.2f}", f"{r['warmup_s']:.2f}"] if _ok(r) else \
                [_val(row, r), "-", "-"]
        b += [_num(_ratio(runs.get(lib), mk), ".2f") for lib in libs if lib != "mk"]
        t1.append(a)
        t2.append(b)
    return render(t1, h1), render(t2, h2)


# ---------------------------------------------------------------------------------------------- meta
def git_head():
    """The commit checked out in ROOT, read from .git's files (None where it cannot be read)."""
    try:
        git = ROOT / ".git"
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head
        ref = head[5:]
        if (git / ref).exists():
            return (git / ref).read_text().strip()
        for line in (git / "packed-refs").read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split()[0]
    except OSError:
        pass
    return None


# ---------------------------------------------------------------------------------------------- main
def main(argv=None):
    ap = arg_parser(__doc__, "calibrate", "two rows only: " + ", ".join(QUICK))
    ap.add_argument("--rows", nargs="+", metavar="PATTERN", help="row names or shell patterns (see --list)")
    ap.add_argument("--list", action="store_true", help="print the row names and exit")
    ap.add_argument("--skip-peer", nargs="+", default=[], choices=("dp", "prv"), metavar="PEER",
                    help="peers not to run: dp (dp_accounting), prv (prv_accountant)")
    ap.add_argument("--repeats", type=int, default=1, help="fresh workers per (library, row); median time (1)")
    ap.add_argument("--dp-tol", type=float, default=None,
                    help="dp_accounting's tol (default: its own, 1e-6 absolute for sigma, 1 step)")
    ap.add_argument("--prv-eps-error", type=float, default=0.1,
                    help="find_noise_multiplier's eps_error (default 0.1, its own; mechkit's FFT uses 0.01)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per worker (default 900)")
    ap.add_argument("--worker", nargs=2, metavar=("LIB", "PAYLOAD"), help="(internal)")
    a = ap.parse_args(argv)
    if a.worker:
        return worker(*a.worker)
    if a.list:
        for r in ROWS:
            print(f"{r['name']:<24} {regime(r)}, epsilon {r['epsilon']:g}")
        return 0
    pats = a.rows or (list(QUICK) if a.quick else ["*"])
    unmatched = [p for p in pats if not any(fnmatch.fnmatchcase(r["name"], p) for r in ROWS)]
    if unmatched:
        ap.error(f"no row matches {unmatched}; rows: {', '.join(r['name'] for r in ROWS)}")
    rows = [r for r in ROWS if any(fnmatch.fnmatchcase(r["name"], p) for p in pats)]

    libs, missing = ["mk"], {}
    for peer in ("dp", "prv"):
        if peer in a.skip_peer:
            continue
        if importlib.util.find_spec(MODULE[peer]) is None:
            missing[peer] = f"{MODULE[peer]} not installed"
            print(f"note: {MODULE[peer]} is not installed; skipping its column (pip install {DIST[peer]})",
                  file=sys.stderr)
            continue
        libs.append(peer)
    cfg = {"dp_tol": a.dp_tol, "prv_eps_error": a.prv_eps_error}
    meta = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "python": platform.python_version(),
            "executable": sys.executable, "platform": platform.platform(), "cpus": os.cpu_count(),
            "load_start": load(), **versions(), "git_commit": git_head(),
            "mechkit_cache_dir": os.environ.get("MECHKIT_CACHE_DIR"),
            "numba_cache_dir": os.environ.get("NUMBA_CACHE_DIR"), "quick": a.quick, "repeats": a.repeats,
            "libs": libs, "missing": missing, "config": cfg,
            "search": {"mk": {"sigma_bounds": MK_SIGMA_BOUNDS, "steps_bounds": MK_STEPS_BOUNDS,
                              "tolerance": "1e-3 relative (sigma), 1 step", "method": "fft", "eps_error": 0.01},
                       "dp": {"sigma_bracket": ["LowerEndpointAndGuess", *DP_SIGMA_BRACKET],
                              "steps_bracket": ["LowerEndpointAndGuess", *DP_STEPS_BRACKET],
                              "tol": a.dp_tol if a.dp_tol is not None else "default (1e-6 sigma, 1 step)",
                              "accountant": "PLDAccountant() (value_discretization_interval 1e-4)"},
                       "prv": {"function": "prv_accountant.dpsgd.find_noise_multiplier",
                               "eps_error": a.prv_eps_error}},
            "warmup": WARMUP}

    t_all = time.perf_counter()
    results = []
    for row in rows:
        runs = {}
        for lib in libs:
            print(f"  {row['name']}: {lib} ...", file=sys.stderr, end="", flush=True)
            runs[lib] = r = repeated(lib, row, cfg, a.repeats, a.timeout)
            r["load_after"] = load()
            print(f" {r['value']} in {r['time_s']:.2f} s ({r['evaluations']} evaluations; warm-up "
                  f"{r['warmup_s']:.2f} s)" if _ok(r) else f" {r['status']}", file=sys.stderr, flush=True)
        results.append({"row": row, "regime": regime(row), "runs": runs})

    print("  checks (PLD epsilon and mechkit's interval at every answer) ...", file=sys.stderr, flush=True)
    items = [{"row": res["row"], "values": {lib: r.get("value") for lib, r in res["runs"].items() if _ok(r)}}
             for res in results]
    chk = run_worker("check", {"items": items}, a.timeout * max(1, len(items)))
    if chk.get("status") == "ok":
        for res in results:
            res["check"] = chk["checks"].get(res["row"]["name"], {})
    else:
        print(f"  checks failed: {chk.get('error', '')[-2000:]}", file=sys.stderr)
        meta["check_error"] = chk.get("error")
    for res in results:
        mk, target = res["runs"].get("mk"), res["row"]["epsilon"]
        res["ratios"] = {f"{lib}/mk_time": _ratio(res["runs"].get(lib), mk) for lib in libs if lib != "mk"}
        res["within_target"] = {lib: (c["pld_epsilon"] <= target if c.get("pld_epsilon") is not None else None)
                                for lib, c in res.get("check", {}).items()}
    meta["seconds"] = time.perf_counter() - t_all
    meta["load_end"] = load()

    answers, times = tables(results, libs)
    print("\nAnswers (value: the noise multiplier sigma on noise rows, the number of steps on steps rows; "
          "'!' = over the target)\n")
    print(answers)
    print("\nTimes (seconds of the timed calibration, after a warm-up in the same fresh process)\n")
    print(times)
    print(f"\n{len(results)} rows in {meta['seconds']:.0f} s; load average {meta['load_start']} -> {meta['load_end']}"
          f" on {meta['cpus']} cpus")
    for res in results:
        for lib, r in res["runs"].items():
            if r.get("status") not in ("ok", "n/a"):
                print(f"  {res['row']['name']} {lib}: {r.get('status')}: {str(r.get('error', ''))[-600:]}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=1, default=str) + "\n")
    print(f"wrote {out}")
    return 0 if all(r.get("status") in ("ok", "n/a") for res in results for r in res["runs"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
