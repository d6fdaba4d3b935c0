"""Benchmark: time to first answer (issue 18).  Every phase is a fresh subprocess, timed from the outside.

Each phase's value is the wall time of its subprocess (``time.perf_counter`` around the process, interpreter start
included), the median of ``--repeats`` runs for warm phases and of ``--cold-repeats`` runs (default 1, each on
new caches) for cold ones.  "Cold" = a new, empty ``NUMBA_CACHE_DIR`` (Numba's machine code, mechkit's shared
engine included) and ``MECHKIT_CACHE_DIR`` (derivations, generated modules) in the subprocess's environment;
"warm" = the same directories after an earlier phase filled them.  Python's own bytecode caches are whatever
the installation has (not cleared).  mechkit runs under ``--python`` (the repository root is put on
``PYTHONPATH``, as in the other benchmarks), dp_accounting under ``--peer-python``.

phases, in the order they run, with their goals (issue 18)
  python            ``python -c pass``: the interpreter's own start, for reference
  dp cold           dp_accounting's PLD accountant (``PLDAccountant()``, default value_discretization_interval
                    1e-4) composing ``SelfComposedDpEvent(PoissonSampledDpEvent(0.01, GaussianDpEvent(0.8)),
                    10000)`` and asked ``get_epsilon(1e-5)`` in a fresh process: the reference for the ratio
  README cold       ``mechkit epsilon subsampled-gaussian --sigma 0.8 --q 0.01 --steps 10000 --delta 1e-5``
                    (the README's main command, the console script beside ``--python``) on empty caches:
                    <= 10 s and <= 3x dp cold.  Its stderr lines ``mechkit: ...`` (what the user sees while
                    waiting) are kept, with the second at which each appeared
  README warm       the same command on the caches the cold run filled (report only)
  import            ``import mechkit`` (warm caches): <= 0.3 s
  --help, error     ``mechkit --help`` and ``mechkit epsilon nosuch --steps 1 --delta 1e-5`` (exit code 2):
                    <= 0.3 s each
  setup             every name of ``mechkit.engine.numerics`` touched on the README command's caches, so that
                    the whole engine is compiled before the new-family phase (the engine compiles by subject
                    on first use; reported, not judged)
  new family        per family: ``import mechkit``, bind it (``mk.gaussian(sigma=1.0)`` ..., the README's
                    logistic example defined with ``Mechanism.from_densities`` and bound at b = 2) and its first
                    answer ``m.epsilon(1e-5)``, on the engine compiled by the README cold run and the setup
                    (their ``NUMBA_CACHE_DIR``) and a new, empty ``MECHKIT_CACHE_DIR``: median <= 3 s, worst
                    <= 10 s.  The catalog ships its derivations (``mechanisms/_derived``), so a catalog family's
                    first use copies its entry and only compiles.  Without ``--quick`` each catalog family runs
                    once more with the shipped entries hidden (``catalog.prederived_dir`` pointed at a missing
                    directory): SymPy derivation + compile, what a user-defined family costs; the rows "none
                    shipped" hold the median and worst of those and the logistic family against the same goals
  cached bind       per family, both caches warm (the new-family run filled them): ``import mechkit`` and
                    the bind, nothing else: <= 0.2 s (judged on the whole process; the in-process import and
                    bind times are reported beside it)

The JSON (``--out``, default ``benchmarks/results/startup.json``) has every run's times, the in-process splits,
both epsilons, the machine (cpus, load average at start and end and after each run) and the library versions
of both interpreters: timings on a loaded machine differ, so read them with the load.

    python benchmarks/startup.py --peer-python /path/to/venv-with-dp-accounting/bin/python
    python benchmarks/startup.py --quick        # new family and cached bind for gaussian and logistic only
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _common import arg_parser

ROOT = Path(__file__).resolve().parent.parent
README_ARGS = ["epsilon", "subsampled-gaussian", "--sigma", "0.8", "--q", "0.01", "--steps", "10000",
               "--delta", "1e-5"]
ERROR_ARGS = ["epsilon", "nosuch", "--steps", "1", "--delta", "1e-5"]
GOALS = {"readme_cold_s": 10.0, "readme_cold_over_dp": 3.0, "import_s": 0.3, "cli_s": 0.3,
         "new_family_median_s": 3.0, "new_family_worst_s": 10.0, "cached_bind_s": 0.2}
LOGISTIC = '''import sympy as sp
x = sp.Symbol("x", real=True); b = sp.Symbol("b", positive=True)
logistic = mk.Mechanism.from_densities(
    p=sp.exp(-x / b) / (b * (1 + sp.exp(-x / b)) ** 2),
    q=sp.exp(-(x - 1) / b) / (b * (1 + sp.exp(-(x - 1) / b)) ** 2),
    var=x, name="logistic")
'''
#: family -> (code defining it after ``import mechkit as mk``, the bind expression); derive.py's parameter values
FAMILIES = {"gaussian": ("", "mk.gaussian(sigma=1.0)"), "laplace": ("", "mk.laplace(scale=1.0)"),
            "randomized_response": ("", "mk.randomized_response(epsilon=1.0)"),
            "discrete_laplace": ("", "mk.discrete_laplace(scale=2.0)"),
            "discrete_gaussian": ("", "mk.discrete_gaussian(sigma=3.0)"),
            "logistic": (LOGISTIC, "logistic(b=2.0)")}
QUICK = ("gaussian", "logistic")
HIDE_SHIPPED = "from mechkit.laws import catalog as _cat\n_cat.prederived_dir = lambda: _cat.Path({missing!r})\n"
# the workers print one line "RESULT <import s> <define+bind s> <answer s> <epsilon or nan>"; kept to builtins so
# that the process's wall time is the work's
WORKER = '''import time
t0 = time.perf_counter()
import mechkit as mk
t1 = time.perf_counter()
{hide}{define}m = {bind}
t2 = time.perf_counter()
eps = float({answer})
t3 = time.perf_counter()
print("RESULT", t1 - t0, t2 - t1, t3 - t2, eps)
'''
IMPORT = "import time\nt0 = time.perf_counter()\nimport mechkit\nprint('RESULT', time.perf_counter() - t0)\n"
PEER = '''import time
t0 = time.perf_counter()
import dp_accounting
from dp_accounting import pld
t1 = time.perf_counter()
acc = pld.PLDAccountant()
acc.compose(dp_accounting.SelfComposedDpEvent(
    dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(0.8)), 10000))
eps = acc.get_epsilon(1e-5)
print("RESULT", t1 - t0, time.perf_counter() - t1, eps)
'''
ENGINE = "from mechkit.engine import numerics as n\nfor k in n.__all__:\n    getattr(n, k)\n"
VERSIONS = '''import json, platform, sys
from importlib import metadata
out = {"python": platform.python_version(), "executable": sys.executable}
for p in sys.argv[1:]:
    try:
        out[p] = metadata.version(p)
    except metadata.PackageNotFoundError:
        out[p] = None
print(json.dumps(out))
'''


# ---------------------------------------------------------------------------------------------- running
def log(msg):
    print(msg, file=sys.stderr, flush=True)


def load():
    """The 1-minute load average (None where the platform has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def load_text(avg):
    return "?" if not avg else f"{avg[0]:.2f}"


def settle(timeout=180.0):
    """Wait until no second process of an earlier run is still compiling (``engine/warm.py``'s ``python -c "import
    mechkit.engine.quadrature; ..."``): it outlives the command that started it (the tilted moments take it seconds
    after the README command's answer) and would share the two cores with the next timed run.  Linux's /proc only;
    elsewhere nothing is waited for."""
    proc = Path("/proc")
    deadline = time.monotonic() + timeout
    while proc.is_dir() and time.monotonic() < deadline:
        busy = False
        for d in proc.iterdir():
            if d.name.isdigit():
                try:
                    busy = b"import mechkit.engine." in (d / "cmdline").read_bytes()
                except OSError:
                    continue
                if busy:
                    break
        if not busy:
            return
        time.sleep(0.2)


def run(cmd, env, timeout, stamp=False):
    """Run ``cmd`` in ``ROOT`` and time it from the outside: {wall_s, rc, stdout, stderr}, ``error`` on a
    timeout.  ``stamp``: also {stderr_lines: [[seconds since start, line], ...]}, each line stamped as it arrives.
    Every run starts once an earlier run's second process has finished (``settle``)."""
    settle()
    if not stamp:
        t = time.perf_counter()
        try:
            r = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"wall_s": time.perf_counter() - t, "rc": None, "stdout": "", "stderr": "",
                    "error": f"timed out after {timeout:g} s"}
        return {"wall_s": time.perf_counter() - t, "rc": r.returncode, "stdout": r.stdout, "stderr": r.stderr}
    out, lines = [], []
    t = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def pump_err():
        for line in p.stderr:
            lines.append([round(time.perf_counter() - t, 3), line.rstrip("\n")])

    readers = [threading.Thread(target=pump_err, daemon=True),
               threading.Thread(target=lambda: out.append(p.stdout.read()), daemon=True)]
    for th in readers:
        th.start()
    try:
        rc = p.wait(timeout=timeout)
        wall, err = time.perf_counter() - t, None
    except subprocess.TimeoutExpired:
        p.kill()
        rc, wall, err = None, time.perf_counter() - t, f"timed out after {timeout:g} s"
        p.wait()
    for th in readers:
        th.join(5)
    res = {"wall_s": wall, "rc": rc, "stdout": "".join(out), "stderr": "\n".join(x[1] for x in lines),
           "stderr_lines": lines}
    if err:
        res["error"] = err
    return res


def result_line(r):
    """The numbers of a worker's "RESULT ..." line (floats; "nan"/"inf" allowed), or None."""
    for line in reversed(r["stdout"].splitlines()):
        if line.startswith("RESULT "):
            return [float(x) for x in line.split()[1:]]
    return None


def failure(r, want_rc=0):
    """Why a run failed (its stderr's tail), or None."""
    if "error" in r:
        return r["error"]
    if r["rc"] != want_rc:
        return f"exit code {r['rc']} (expected {want_rc}):\n{r['stderr'][-3000:]}"
    return None


def mechkit_env(caches):
    env = dict(os.environ, MECHKIT_CACHE_DIR=str(caches["mechkit"]), NUMBA_CACHE_DIR=str(caches["numba"]))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    return env


def new_caches(parent, name):
    d = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=parent))
    return {"mechkit": d / "mechkit", "numba": d / "numba"}


def cli_command(python):
    """The ``mechkit`` console script installed beside ``python`` (what a user types), else ``python -c`` calling
    ``mechkit.cli.console``."""
    exe = Path(python).parent / "mechkit"
    try:
        first = exe.read_text(errors="replace").splitlines()[0]
        if first.startswith("#!") and Path(first[2:].strip().split()[0]).parent == Path(python).parent:
            return [str(exe)]
    except (OSError, IndexError):
        pass
    return [python, "-c", "import sys; from mechkit.cli import console; sys.argv[0] = 'mechkit'; sys.exit(console())"]


def versions(python, packages):
    r = run([python, "-c", VERSIONS, *packages], dict(os.environ), 120)
    try:
        return json.loads(r["stdout"].strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"error": failure(r) or r["stdout"][-500:]}


def phase(key, label, runs, goal=None, goal_text=None, **details):
    """A phase's record: the median wall time of ``runs`` (the failed ones excluded) against ``goal`` seconds;
    ``runs`` (the run records) are kept in it."""
    good = [r["wall_s"] for r in runs if not r.get("failed")]
    value = statistics.median(good) if good else None
    met = None if goal is None or value is None else value <= goal
    return {"phase": key, "label": label, "value_s": value, "times_s": [r["wall_s"] for r in runs],
            "goal": goal_text or (f"<= {goal:g} s" if goal is not None else "(report)"), "goal_s": goal, "met": met,
            "errors": [r["failed"] for r in runs if r.get("failed")], "runs": runs, **details}


def repeated(n, fn):
    """The records of ``n`` calls of ``fn()``, one after the other."""
    return [fn() for _ in range(n)]


def checked(r, want_rc=0):
    """A run record for the JSON: wall time, exit code, the load average just after it, the RESULT numbers, and
    ``failed`` (why) where it timed out or exited with another code than ``want_rc``."""
    rec = {"wall_s": r["wall_s"], "rc": r["rc"], "load_1m_after": load()}
    nums = result_line(r)
    if nums is not None:
        rec["result"] = nums
    why = failure(r, want_rc)
    if why:
        rec["failed"] = why
    return rec


# ---------------------------------------------------------------------------------------------- phases
def dp_cold(peer, n, timeout):
    runs = []
    for _ in range(n):
        r = run([peer, "-c", PEER], dict(os.environ), timeout)
        rec = checked(r)
        if "result" in rec:
            rec["import_s"], rec["compute_s"], rec["epsilon"] = rec.pop("result")
        elif "failed" not in rec:
            rec["failed"] = "no RESULT line:\n" + r["stdout"][-1000:]
        runs.append(rec)
    return runs


def epsilon_of(stdout):
    for line in stdout.splitlines():
        if line.startswith("epsilon "):
            try:
                return float(line.split()[1])
            except (IndexError, ValueError):
                return None
    return None


def readme(cli, caches, timeout, stamp=False):
    r = run(cli + README_ARGS, mechkit_env(caches), timeout, stamp=stamp)
    rec = checked(r)
    rec["epsilon"] = epsilon_of(r["stdout"])
    if rec["epsilon"] is None and "failed" not in rec:
        rec["failed"] = "no epsilon in the output:\n" + r["stdout"][-1000:]
    if stamp:
        rec["stdout"] = r["stdout"]
        rec["progress"] = [x for x in r["stderr_lines"] if x[1].startswith("mechkit: ")]
    return rec


def worker_code(name, answer, hide_dir=None):
    define, bind = FAMILIES[name]
    hide = HIDE_SHIPPED.format(missing=str(hide_dir)) if hide_dir else ""
    return WORKER.format(hide=hide, define=define, bind=bind, answer=answer)


def family_run(python, name, caches, timeout, answer, hide_dir=None, stamp=False):
    r = run([python, "-c", worker_code(name, answer, hide_dir)], mechkit_env(caches), timeout, stamp=stamp)
    rec = checked(r)
    if "result" in rec:
        rec["import_s"], rec["bind_s"], rec["answer_s"], rec["epsilon"] = rec.pop("result")
    elif "failed" not in rec:
        rec["failed"] = "no RESULT line:\n" + r["stdout"][-1000:] + r["stderr"][-2000:]
    if stamp:
        rec["progress"] = [x for x in r["stderr_lines"] if x[1].startswith("mechkit: ")]
    return rec


def summary(key, label, runs_by_family, note=""):
    """The median and worst over families of their (median) new-family times, against the goals; a failed family
    leaves both unjudged."""
    times = {n: statistics.median([r["wall_s"] for r in runs]) for n, runs in runs_by_family.items()
             if not any(r.get("failed") for r in runs)}
    failed = sorted(set(runs_by_family) - set(times))
    note = "; ".join(x for x in [note, f"failed: {', '.join(failed)}" if failed else ""] if x)
    vals = sorted(times.values())
    out = []
    for what, value, goal, detail in (
            ("median", statistics.median(vals) if vals else None, GOALS["new_family_median_s"],
             f"{len(vals)} families"),
            ("worst", max(vals) if vals else None, GOALS["new_family_worst_s"],
             max(times, key=times.get) if vals else "")):
        out.append({"phase": f"{key}_{what}", "label": f"{label}: {what}", "value_s": value, "times": times,
                    "goal": f"<= {goal:g} s", "goal_s": goal, "met": None if value is None or failed else value <= goal,
                    "errors": [], "detail": "; ".join(x for x in [detail, note] if x)})
    return out


def median_of(runs, key):
    xs = [r[key] for r in runs if key in r and not r.get("failed")]
    return statistics.median(xs) if xs else None


# ---------------------------------------------------------------------------------------------- table
def fmt_s(v):
    return "-" if v is None else (f"{v:.3f} s" if v < 1 else f"{v:.2f} s")


def met_text(m):
    return {True: "met", False: "NOT MET", None: "-"}[m]


def table(rows):
    header = ["phase", "value", "goal", "met", "detail"]
    cells = [header] + [[r[0], r[1], r[2], r[3], r[4]] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(4)]
    lines = [" | ".join([c[i].ljust(widths[i]) for i in range(4)] + [c[4]]).rstrip() for c in cells]
    lines.insert(1, "-+-".join("-" * w for w in widths) + "-+-" + "-" * 6)
    return "\n".join(lines)


def rows_of(phases):
    rows = []
    for p in phases:
        if p.get("kind") == "ratio":
            val = "-" if p["value"] is None else f"{p['value']:.2f}x"
            rows.append([p["label"], val, p["goal"], met_text(p["met"]), p.get("detail", "")])
        else:
            rows.append([p["label"], fmt_s(p["value_s"]), p["goal"], met_text(p["met"]),
                         p.get("detail", "") + (f"; {len(p['errors'])} failed run(s)" if p["errors"] else "")])
    return rows


# ---------------------------------------------------------------------------------------------- main
def main(argv=None):
    ap = arg_parser(__doc__, "startup", "new family and cached bind for " + " and ".join(QUICK)
                    + " only, and no from-scratch derivations")
    ap.add_argument("--python", default=sys.executable, help="interpreter with mechkit (default: this one)")
    ap.add_argument("--peer-python", default=sys.executable, help="interpreter with dp_accounting (default: this "
                    "one; where dp_accounting is missing the peer is reported as not installed)")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each warm phase (median reported)")
    ap.add_argument("--cold-repeats", type=int, default=1, help="runs of each cold phase, each on new caches")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per subprocess")
    a = ap.parse_args(argv)
    names = list(QUICK if a.quick else FAMILIES)
    meta = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "platform": platform.platform(), "cpus": os.cpu_count(),
            "load_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            "repeats": a.repeats, "cold_repeats": a.cold_repeats, "quick": a.quick, "goals": GOALS,
            "env": {k: os.environ.get(k) for k in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH", "NUMBA_NUM_THREADS",
                                                   "OMP_NUM_THREADS")}}
    meta["mechkit_python"] = versions(a.python, ["mechkit", "numba", "llvmlite", "sympy", "numpy", "scipy"])
    peer_v = versions(a.peer_python, ["dp-accounting", "numpy", "scipy"])
    meta["peer_python"] = peer_v
    cli = cli_command(a.python)
    meta["cli"] = cli
    phases, families, readme_cold_runs = [], {}, []
    tmp = Path(tempfile.mkdtemp(prefix="mechkit-startup-"))
    try:
        log("python -c pass ...")
        base = [checked(run([a.python, "-c", "pass"], dict(os.environ), 60)) for _ in range(a.repeats)]
        phases.append(phase("python", "python -c pass (reference)", base, detail="interpreter start"))

        if peer_v.get("dp-accounting") is None:
            log("dp_accounting: not installed under --peer-python")
            phases.append({"phase": "dp_cold", "label": "dp_accounting cold (reference)", "value_s": None,
                           "times_s": [], "goal": "(reference)", "goal_s": None, "met": None, "errors": [],
                           "detail": f"not installed under {a.peer_python}", "peer_check": peer_v})
        else:
            log("dp_accounting cold ...")
            dp_runs = dp_cold(a.peer_python, a.cold_repeats, a.timeout)
            p = phase("dp_cold", "dp_accounting cold (reference)", dp_runs, goal_text="(reference)")
            eps = median_of(dp_runs, "epsilon")
            p["detail"] = (f"eps {eps:.6f}; import {fmt_s(median_of(dp_runs, 'import_s'))}, PLD "
                           f"{fmt_s(median_of(dp_runs, 'compute_s'))}" if eps is not None else "failed")
            phases.append(p)

        log("README command, cold caches ...")
        warm_caches = None
        for i in range(a.cold_repeats):
            caches = new_caches(tmp, f"readme{i}")
            readme_cold_runs.append(readme(cli, caches, a.timeout, stamp=True))
            if "failed" not in readme_cold_runs[-1]:
                warm_caches = caches
        p = phase("readme_cold", "README command, cold caches", readme_cold_runs, GOALS["readme_cold_s"])
        eps = median_of(readme_cold_runs, "epsilon")
        p["detail"] = f"eps {eps:.6f}" if eps is not None else "failed"
        phases.append(p)
        dp_s = next(q["value_s"] for q in phases if q["phase"] == "dp_cold")
        ratio = None if dp_s is None or p["value_s"] is None else p["value_s"] / dp_s
        phases.append({"phase": "readme_cold_over_dp", "kind": "ratio", "label": "README cold / dp_accounting cold",
                       "value": ratio, "goal": f"<= {GOALS['readme_cold_over_dp']:g}x", "met":
                       None if ratio is None else ratio <= GOALS["readme_cold_over_dp"],
                       "detail": ("dp_accounting not installed" if peer_v.get("dp-accounting") is None else
                                  f"{fmt_s(p['value_s'])} / {fmt_s(dp_s)}")})
        if warm_caches is None:  # the engine never compiled: warm phases still run, on caches of their own
            warm_caches = new_caches(tmp, "warm")

        log("README command, warm caches ...")
        runs = repeated(a.repeats, lambda: readme(cli, warm_caches, a.timeout))
        eps = median_of(runs, "epsilon")
        phases.append(phase("readme_warm", "README command, warm caches", runs,
                            detail=f"eps {eps:.6f}" if eps is not None else "failed"))

        log("import mechkit, --help, error ...")
        runs = repeated(a.repeats, lambda: checked(run([a.python, "-c", IMPORT], mechkit_env(warm_caches), 120)))
        phases.append(phase("import", "import mechkit (warm)", runs, GOALS["import_s"],
                            detail=f"in-process {fmt_s(statistics.median([r['result'][0] for r in runs]))}"
                            if all("result" in r for r in runs) else ""))
        runs = repeated(a.repeats, lambda: checked(run(cli + ["--help"], mechkit_env(warm_caches), 120)))
        phases.append(phase("cli_help", "mechkit --help", runs, GOALS["cli_s"], detail=""))
        runs = repeated(a.repeats, lambda: checked(run(cli + ERROR_ARGS, mechkit_env(warm_caches), 120), want_rc=2))
        phases.append(phase("cli_error", "mechkit epsilon nosuch (exit 2)", runs, GOALS["cli_s"],
                            detail="exit code 2" if not any(r.get("failed") for r in runs) else "wrong exit code"))

        # new family: the engine compiled (the README cold run's NUMBA_CACHE_DIR, completed here: the engine compiles
        # by subject on first use, and the first family to need a subject the README command did not would pay it)
        log("engine: the subjects the README command did not compile ...")
        runs = [checked(run([a.python, "-c", ENGINE], mechkit_env(warm_caches), a.timeout))]
        phases.append(phase("engine_rest", "setup: rest of the engine", runs,
                            detail="every name of mechkit.engine.numerics, on the README command's caches"))
        for name in names:
            log(f"new family {name} ...")
            fam = families[name] = {}
            news = []
            for i in range(a.cold_repeats):
                caches = {"mechkit": Path(tempfile.mkdtemp(prefix=f"fam-{name}{i}-", dir=tmp)),
                          "numba": warm_caches["numba"]}
                news.append(family_run(a.python, name, caches, a.timeout, "m.epsilon(1e-5)", stamp=True))
                if "failed" not in news[-1]:
                    fam["caches"] = caches
            fam["new"] = news
            if not a.quick and name != "logistic":
                log(f"new family {name}, shipped derivation hidden ...")
                caches = {"mechkit": Path(tempfile.mkdtemp(prefix=f"scratch-{name}-", dir=tmp)),
                          "numba": warm_caches["numba"]}
                fam["scratch"] = [family_run(a.python, name, caches, a.timeout, "m.epsilon(1e-5)",
                                             hide_dir=tmp / "no-shipped-derivations", stamp=True)]
        for name in names:
            fam = families[name]
            log(f"cached bind {name} ...")
            caches = fam.get("caches") or new_caches(tmp, f"bind-{name}")
            fam["cached"] = repeated(a.repeats, lambda: family_run(a.python, name, caches, a.timeout, "float('nan')"))
        for fam in families.values():
            fam.pop("caches", None)

        for n, f in families.items():
            p = phase(f"new_family:{n}", f"new family: {n}", f["new"], goal_text="(median, worst below)")
            p["detail"] = (f"in-process: import {fmt_s(median_of(f['new'], 'import_s'))}, bind "
                           f"{fmt_s(median_of(f['new'], 'bind_s'))}, first epsilon "
                           f"{fmt_s(median_of(f['new'], 'answer_s'))}")
            if "scratch" in f:
                sc = f["scratch"][0]
                p["scratch"] = f["scratch"]
                hidden = "failed" if "failed" in sc else f"{fmt_s(sc['wall_s'])} (bind {fmt_s(sc['bind_s'])})"
                p["detail"] += "; shipped derivation hidden: " + hidden
                if "failed" in sc:
                    p["errors"].append("shipped derivation hidden: " + sc["failed"])
            phases.append(p)
        phases += summary("new_family", "new family", {n: f["new"] for n, f in families.items()})
        if any("scratch" in f for f in families.values()):
            phases += summary("new_family_scratch", "new family, none shipped",
                              {n: f.get("scratch", f["new"]) for n, f in families.items()},
                              "catalog derivations hidden, logistic as above")
        for n, f in families.items():
            p = phase(f"cached_bind:{n}", f"cached bind: {n}", f["cached"], GOALS["cached_bind_s"])
            p["detail"] = (f"in-process: import {fmt_s(median_of(f['cached'], 'import_s'))}, bind "
                           f"{fmt_s(median_of(f['cached'], 'bind_s'))}")
            phases.append(p)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    meta["load_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None

    mv = meta["mechkit_python"]
    print(f"time to first answer (issue 18); every phase a fresh process, wall time; warm phases median of "
          f"{a.repeats}, cold of {a.cold_repeats}\npython {mv.get('python')}, numba {mv.get('numba')}, sympy "
          f"{mv.get('sympy')}, numpy {mv.get('numpy')}; dp_accounting {peer_v.get('dp-accounting') or 'not installed'};"
          f" {meta['cpus']} cpus, 1-minute load average {load_text(meta['load_start'])} at start, "
          f"{load_text(meta['load_end'])} at end")
    print(table(rows_of(phases)))
    prog = [x for r in readme_cold_runs for x in r.get("progress", [])]
    if prog:
        print("\nwhat the README command printed on stderr while the user waited (cold caches; seconds since start; "
              "a line appears 1 s after its preparation began):")
        for t, line in prog:
            print(f"  {t:6.2f} s  {line}")
    errs = [(p["label"], e) for p in phases for e in p.get("errors", [])]
    for label, e in errs:
        print(f"\n{label}: {e}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "phases": phases, "readme_cold_progress": prog}, indent=1) + "\n")
    print(f"\nwrote {out}")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
