"""Small helpers shared by the benchmark scripts (spa.py, edgeworth.py, fft.py, calibrate.py)."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path


def timed(fn):
    """(fn(), wall-clock seconds)."""
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def arg_parser(doc, name, quick_help):
    """The scripts' command line: --quick and --out (default benchmarks/results/<name>.json)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help=quick_help)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / f"{name}.json"))
    return ap


def warm_composition(mk):
    """A composition no timed case uses, for warming up the Numba engine and the family cache."""
    return mk.compose((mk.subsample(mk.gaussian(sigma=1.7), 0.01), 50))


_README_LOGISTIC = {}


def readme_logistic(mk):
    """README.md's user-defined logistic family, spelled as the README spells it (derived once per process; its
    mechanisms are bound fresh)."""
    if "f" not in _README_LOGISTIC:
        import sympy as sp
        x = sp.Symbol("x", real=True)
        b = sp.Symbol("b", positive=True)
        _README_LOGISTIC["f"] = mk.Mechanism.from_densities(
            p=sp.exp(-x / b) / (b * (1 + sp.exp(-x / b)) ** 2),
            q=sp.exp(-(x - 1) / b) / (b * (1 + sp.exp(-(x - 1) / b)) ** 2),
            var=x, name="logistic")
    return _README_LOGISTIC["f"]


def versions(packages=("mechkit", "numpy", "scipy", "numba", "prv-accountant", "dp-accounting")):
    """{package: installed version or None}."""
    out = {}
    for p in packages:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = None
    return out


def render(rows, header):
    """A plain-text table: the header, a rule, the rows; columns padded to their widest cell."""
    rows = [header] + rows
    widths = [max(len(x[i]) for x in rows) for i in range(len(header))]
    lines = [" | ".join(x[i].ljust(widths[i]) for i in range(len(header))).rstrip() for x in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def run_worker(script, root, lib, payload, timeout, tag=None):
    """Run ``script --worker lib <payload as JSON>`` in a fresh process (``root`` first on PYTHONPATH) and return the
    last JSON line of its stdout with its wall time, or a record of the timeout or failure (``tag``'s fields beside
    ``lib``)."""
    tag = dict(tag or {})
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    cmd = [sys.executable, str(Path(script).resolve()), "--worker", lib, json.dumps(payload)]
    t = time.perf_counter()
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=str(root))
    except subprocess.TimeoutExpired:
        return {"lib": lib, **tag, "status": "timeout", "error": f"timed out after {timeout:g} s"}
    wall = time.perf_counter() - t
    for line in reversed(r.stdout.splitlines()):
        if line.startswith("{"):
            res = json.loads(line)
            res["worker_wall_s"] = wall
            return res
    return {"lib": lib, **tag, "status": "error",
            "error": f"worker exited with {r.returncode} and no result\n{r.stderr[-4000:]}"}
