"""Small helpers shared by the single-process benchmark scripts (spa.py, edgeworth.py)."""
from __future__ import annotations

import argparse
import time
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
