"""Methods that check each other: random compositions of catalog mechanisms, every certified interval against every
other, and each "reliable" flag against a narrow FFT interval.

    python benchmarks/crosscheck.py                    # 300 s, seed 1
    python benchmarks/crosscheck.py --seconds 60 --seed 7
    python benchmarks/crosscheck.py --quick            # 30 s
    python benchmarks/crosscheck.py --user             # with mechanisms written as densities (``user_kinds``)

Each draw composes one to three mechanisms (``kinds``: Gaussian, Laplace, discrete Laplace and Gaussian, k-ary
randomized response, Poisson-subsampled Gaussian and Laplace, a two-component Gaussian mixture, and under replace-one
neighbours the Gaussian, the Poisson-subsampled Gaussian and the Gaussian sampled without replacement), each run 1 to
1000 times under one neighbouring relation (draws that mix relations are refused by ``compose`` and skipped), and asks:

1. **Intervals.**  ``epsilon(delta)`` (delta 1e-3, 1e-5 or 1e-8) by ``fft``, ``spa``, ``edgeworth`` and ``rdp``, and
   ``delta(eps)`` at an eps drawn around the FFT's epsilon by ``fft``, ``spa`` and ``edgeworth``.  Every certified
   interval bounds the same truth, so any two must intersect (to 1e-9 relative): a disjoint pair means one of them
   is wrong.  Also counted: an answer whose lower <= estimate <= upper fails or that is nan, and any exception other
   than a ``MechkitError`` (a refusal, counted per method).
2. **Reliable.**  Where the FFT at eps_error 1e-4 gives an interval narrower than 2e-4 of its estimate, every answer of
   ``spa``, ``edgeworth`` and ``edgeworth`` (variant "tilted") flagged ``details["reliable"]`` must lie within 1e-3
   relative of the FFT's estimate (plus that interval's relative width): the promise of docs/trust.md.

Prints a table per method and writes every offending draw, with the counts, to ``benchmarks/results/crosscheck.json``;
exits with status 1 when something was found.  A run is evidence, not a test: the test suite's soundness properties
compare each accountant with independent references (contour integrals, exact lattices, mpmath); this script looks
across methods at mixtures the references do not reach.  No peers.
"""
from __future__ import annotations

import json
import math
import platform
import random
import sys
import time
import warnings
from pathlib import Path

from _common import arg_parser, readme_logistic, render, versions

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DELTAS = (1e-3, 1e-5, 1e-8)
COUNTS = (1, 3, 10, 50, 200, 1000)
EPSILON_METHODS = ("fft", "spa", "edgeworth", "rdp")
DELTA_METHODS = ("fft", "spa", "edgeworth")
RELIABLE = (("spa", {"method": "spa"}), ("edgeworth", {"method": "edgeworth"}),
            ("edgeworth-tilted", {"method": "edgeworth", "variant": "tilted"}))
#: the promise of "reliable" (docs/trust.md): the estimate within this relative distance of the truth
RELIABLE_TOL = 1e-3
#: the reference's own width: an FFT interval narrower than this (relative) stands for the truth
REFERENCE_WIDTH = 2e-4
#: two intervals of one truth may miss each other by rounding only
TOUCH = 1e-9


def kinds(mk):
    """{name: draw(rng) -> mechanism}; the names ending in "_r1" are mechanisms for replace-one neighbours."""
    return {
        "gaussian": lambda r: mk.gaussian(sigma=r.uniform(0.5, 20)),
        "laplace": lambda r: mk.laplace(scale=r.uniform(1, 50)),
        "discrete_laplace": lambda r: mk.discrete_laplace(scale=r.uniform(1, 30)),
        "discrete_gaussian": lambda r: mk.discrete_gaussian(sigma=r.uniform(1, 15)),
        "randomized_response_r1": lambda r: mk.k_ary_randomized_response(r.uniform(0.05, 0.9), r.choice([2, 3, 5])),
        "subsampled_gaussian": lambda r: mk.subsample(mk.gaussian(sigma=r.uniform(0.6, 3)),
                                                      r.choice([0.001, 0.01, 0.05, 0.2])),
        "subsampled_laplace": lambda r: mk.subsample(mk.laplace(scale=r.uniform(0.5, 5)), r.choice([0.01, 0.05, 0.2])),
        "gaussian_mixture": lambda r: mk.gaussian_mixture(r.uniform(1, 5), [0.0, 1.0], [0.5, 0.5]),
        "gaussian_r1": lambda r: mk.with_relation(mk.gaussian(sigma=r.uniform(1, 20)), "replace_one"),
        "subsampled_gaussian_r1": lambda r: mk.subsample(mk.gaussian(sigma=r.uniform(0.8, 3)), r.choice([0.01, 0.05]),
                                                         relation="replace_one"),
        "swor_gaussian_r1": lambda r: mk.subsample(mk.gaussian(sigma=r.uniform(0.8, 3)), r.choice([0.01, 0.05]),
                                                   scheme="without_replacement", relation="replace_one"),
    }


def user_kinds(mk):
    """``--user``: mechanisms written as densities (derived on first use, cached): the README's logistic, a Laplace
    truncated to [c - A, c + A] and shifted by 1, a two-bump Laplace mixture, a triangle shifted by s, and a
    generalized Gaussian with the float exponent 1.5 (the "any density" issue's defect 2)."""
    import sympy as sp
    x = sp.Symbol("x", real=True)
    A, b, s = (sp.Symbol(n, positive=True) for n in ("A", "b", "s"))

    def tlap(c):
        return sp.Piecewise((sp.exp(-sp.Abs(x - c) / b) / (2 * b * (1 - sp.exp(-A / b))), (x >= c - A) & (x <= c + A)),
                            (0, True))
    logistic = readme_logistic(mk)
    truncated = mk.Mechanism.from_densities(tlap(1), tlap(0), x, name="truncated_laplace_shift")
    mixture = mk.Mechanism.from_densities((sp.exp(-sp.Abs(x - 1)) + sp.exp(-sp.Abs(x - 3))) / 4,
                                          (sp.exp(-sp.Abs(x)) + sp.exp(-sp.Abs(x - 2))) / 4, x, name="laplace_mixture")
    triangle = mk.Mechanism.from_densities(sp.Max(0, 1 - sp.Abs(x - s)), sp.Max(0, 1 - sp.Abs(x)), x, name="triangle")
    c = 2 * sp.gamma(sp.Rational(5, 3))
    gg = mk.Mechanism.from_densities(sp.exp(-sp.Abs(x) ** 1.5) / c, sp.exp(-sp.Abs(x - 1) ** 1.5) / c, x,
                                     name="gg_float")
    return {
        "user_logistic": lambda r: logistic(b=r.uniform(0.5, 10)),
        "user_truncated_laplace": lambda r: truncated(A=r.uniform(1.5, 6), b=r.uniform(0.5, 5)),
        "user_laplace_mixture": lambda r: mixture(),
        "user_triangle": lambda r: triangle(s=r.uniform(0.05, 0.9)),
        "user_gg_float": lambda r: gg(),
    }


def _ask(fn, method, stats, found, what):
    """fn()'s answer (an Estimate), or None for a refusal (counted) or a failure (recorded)."""
    from mechkit.errors import MechkitError
    try:
        e = fn()
    except MechkitError:
        stats[method]["refused"] += 1
        return None
    except Exception as exc:  # noqa: BLE001 -- every failure is a finding
        found.append({"kind": "exception", "method": method, **what, "error": f"{type(exc).__name__}: {exc}"[:300]})
        return None
    stats[method]["answers"] += 1
    lo, val, up = float(e.lower), float(e), float(e.upper)
    if not (lo <= val <= up) or any(math.isnan(x) for x in (lo, val, up)):
        found.append({"kind": "order", "method": method, **what, "interval": [lo, val, up]})
    return e


def _disjoint(answers, found, what, absolute):
    """Record every pair of the answers (method -> Estimate) whose certified intervals do not meet."""
    answers = {m: (float(e.lower), float(e), float(e.upper)) for m, e in answers.items() if e is not None}
    names = sorted(answers)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            (la, _, ua), (lb, _, ub) = answers[a], answers[b]
            tol = TOUCH * (absolute + max(abs(ua), abs(ub)))
            if la > ub + tol or lb > ua + tol:
                found.append({"kind": "disjoint", "methods": [a, b], **what, a: answers[a], b: answers[b]})


def draw(mk, rng, table):
    """One composition as (run, description), or None where the draw mixes neighbouring relations."""
    from mechkit.errors import MechkitError
    names = [rng.choice(sorted(table)) for _ in range(rng.choice([1, 1, 2, 3]))]
    items = [(table[n](rng), rng.choice(COUNTS)) for n in names]
    try:
        run = mk.compose(*items)
    except MechkitError:
        return None
    return run, [[n, c, repr(m)] for n, (m, c) in zip(names, items)]


def check_one(run, desc, rng, stats, found):
    """Part 1 and part 2 of the module docstring for one composition."""
    delta = rng.choice(DELTAS)
    what = {"composition": desc, "delta": delta}
    eps = {m: _ask(lambda m=m: run.epsilon(delta, method=m), m, stats, found, what) for m in EPSILON_METHODS}
    _disjoint(eps, found, what, 1.0)
    if eps["fft"] is not None and math.isfinite(float(eps["fft"])):
        at = float(eps["fft"]) * rng.uniform(0.3, 1.2)
        dwhat = {"composition": desc, "epsilon": at}
        _disjoint({m: _ask(lambda m=m: run.delta(at, method=m), m + " (delta)", stats, found, dwhat)
                   for m in DELTA_METHODS}, found, dwhat, 1e-3)
    ref = _ask(lambda: run.epsilon(delta, method="fft", eps_error=1e-4), "fft (reference)", stats, found, what)
    if ref is None:
        return
    lo, val, up = float(ref.lower), float(ref), float(ref.upper)
    if not (lo > 0 and math.isfinite(up) and up - lo < REFERENCE_WIDTH * val):
        return
    stats["fft (reference)"]["narrow"] += 1
    for name, kw in RELIABLE:
        e = eps.get(name) if name in eps else _ask(lambda kw=kw: run.epsilon(delta, **kw), name, stats, found, what)
        if e is None or not e.details.get("reliable"):
            continue
        stats[name]["reliable"] += 1
        err = abs(float(e) - val) / val
        if err > RELIABLE_TOL + (up - lo) / val:
            stats[name]["off"] += 1
            found.append({"kind": "reliable_off", "method": name, **what, "estimate": float(e),
                          "reference": [lo, val, up], "relative_error": err})


def _cells(method, s):
    """The table's last two columns: the reference's narrow count, a flag's reliable and off counts, else "-"."""
    if method == "fft (reference)":
        return [str(s["narrow"]), "-"]
    if method in dict(RELIABLE):
        return [str(s["reliable"]), str(s["off"])]
    return ["-", "-"]


def main(argv=None):
    ap = arg_parser(__doc__, "crosscheck", "30 s instead of --seconds")
    ap.add_argument("--seconds", type=float, default=300.0, help="how long to draw (default 300)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--user", action="store_true", help="also mechanisms written as densities (user_kinds)")
    args = ap.parse_args(argv)
    import mechkit as mk
    seconds = 30.0 if args.quick else args.seconds
    rng = random.Random(args.seed)
    table = kinds(mk)
    if args.user:
        table.update(user_kinds(mk))
    methods = list(EPSILON_METHODS) + [m + " (delta)" for m in DELTA_METHODS] + ["fft (reference)"] + \
        [n for n, _ in RELIABLE]
    stats = {m: {"answers": 0, "refused": 0, "reliable": 0, "off": 0, "narrow": 0} for m in methods}
    found = []
    n = 0
    t0 = time.perf_counter()
    with warnings.catch_warnings(), mk.progress.enabled(False):
        warnings.simplefilter("ignore")
        while time.perf_counter() - t0 < seconds:
            got = draw(mk, rng, table)
            if got is not None:
                check_one(*got, rng, stats, found)
                n += 1
    elapsed = time.perf_counter() - t0
    kinds_found = {}
    for f in found:
        kinds_found[f["kind"]] = kinds_found.get(f["kind"], 0) + 1
    print(f"{n} compositions in {elapsed:.0f} s (seed {args.seed}); findings: {kinds_found or 'none'}")
    rows = [[m, str(s["answers"]), str(s["refused"]), *_cells(m, s)] for m, s in stats.items()]
    print(render(rows, ["method", "answers", "refused", "reliable (the reference: narrow)", "reliable, off"]))
    for f in found[:20]:
        print(json.dumps(f, default=str))
    out = {"seed": args.seed, "user": args.user, "seconds": elapsed, "compositions": n, "stats": stats, "found": found,
           "versions": versions(), "machine": platform.platform()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1, default=str))
    print(f"\nwrote {args.out}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
