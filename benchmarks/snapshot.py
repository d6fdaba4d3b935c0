"""Answer snapshot: mechkit's answers on fixed settings, written to JSON and compared bit for bit.

For behaviour-preserving refactors.  Take a snapshot before the change and compare after it::

    python benchmarks/snapshot.py --out /tmp/before.json          # all 67 settings (~15 s warm, ~1 min cold)
    ... refactor ...
    python benchmarks/snapshot.py --compare /tmp/before.json      # table; exit 0 iff all within --rtol
    python benchmarks/snapshot.py --quick --compare /tmp/before.json   # 10 settings (smoke run)
    python benchmarks/snapshot.py --list                          # the setting ids

Times on the 2-core development machine: warm (family and Numba caches filled) 14.5 s; cold (empty
``MECHKIT_CACHE_DIR`` and no Numba cache beside the sources: every family derived and compiled) 58 s.  The
baseline of commit 8924d3a is ``benchmarks/results/snapshot-baseline.json`` (``benchmarks/results/*.json`` is
git-ignored: ``git add -f`` to keep it).

Without ``--compare`` the answers go to ``--out`` (default ``benchmarks/results/snapshot.json``).  With
``--compare OLD.json`` the current answers are compared with OLD key by key and written only if ``--out`` is
given.  Exit code 0 if every setting run in both is within ``--rtol`` (default 1e-12), 1 otherwise.

Settings (each has a stable string id, ``<group>/<what>/<method>/<query>``; ``settings()`` lists them):

* ``compose/...``: ``mk.compose((mech, k), ...).epsilon(delta, method=M)`` and ``.delta(eps, method=M)`` for M in
  fft, spa, edgeworth, rdp, gdp (edgeworth also ``variant="tilted"``, fft also ``variant="fa"`` for delta) on
  Poisson-subsampled Gaussians (k = 1e2 ... 1e6 for spa, up to 1e4 for fft), Gaussian, Laplace, randomized
  response, discrete Gaussian and Laplace, subsampled Laplace and randomized response, a user-defined logistic
  family (``mk.Mechanism.from_densities``, README.md's example), a heterogeneous mix, and tiny deltas (1e-12;
  1e-30 with spa, where the FFT refuses: that refusal is the recorded answer).
* ``oneshot/...``: a single mechanism's ``m.delta``, ``m.epsilon``, ``m.rdp``, ``m.remove.cdf``, ``m.add.logsf``,
  ``m.remove.cgf(t, order=...)``.
* ``gdp/...``: ``mk.gdp.delta`` and ``mk.gdp.epsilon``.
* ``individual/...``: a small ``mk.GDPFilter`` run and a small ``mk.IndividualPLDAccountant`` run (deterministic
  gradient norms, no random numbers).

Every setting builds fresh mechanism objects, so its answer does not depend on which settings ran before it
(the SPA and the Edgeworth accountant memoise per mechanism object; the FFT keeps nothing).

An answer records ``value``, ``lower``, ``upper`` (floats as ``float.hex`` strings, lists of them for vectorised
queries; ``null`` where the answer has no such field), ``certified``, ``method``, the JSON-able scalars of the
estimate's ``details`` (``details``), or the ``error`` (``{"type", "message"}``) an exception gave: an exception is
an answer too, and the script never stops on one.  ``seconds`` (wall clock) and ``text`` (decimal, for reading)
are informational and never compared.

Comparison: per setting, each of value/lower/upper is ``=`` when bit-identical (same hex strings, elementwise)
and otherwise shown as the largest relative difference ``|a - b| / max(|a|, |b|)`` (inf where one side is
missing, NaN or infinite and the other not, or array lengths differ).  A setting fails when a relative
difference exceeds ``--rtol``, when ``certified`` or the error (type or message) changed, or when one side
raised and the other answered.  ``details`` are compared too but only reported (a ``details`` column:
``=`` or the names of the keys that changed), never a failure: they include search diagnostics that a refactor
may legitimately change.  Settings only in OLD (e.g. a ``--quick`` run against a full file) are counted as not
run and settings only in the current run as new; neither fails.

Determinism: two runs on the same tree and machine give bit-identical answers (checked at 8924d3a: a cold full
run against a warm one, 67 identical, details included; and all settings run in reverse order in one process,
67 identical, so no answer depends on what ran before it).  Two settings answer with an exception by design:
``rdp/delta`` (rdp answers epsilon(delta) only) and ``fft/eps@1e-30`` (below the FFT grid's floating-point
floor; the message names the smallest certifiable delta).  Answers may differ in the last bits across machines
or library versions (NumPy's FFT, Numba's code generation, libm), which is what ``--rtol`` is for.
"""
from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
import time
import traceback
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))  # mechkit from this source tree, as the other benchmark scripts

from _common import arg_parser, readme_logistic  # noqa: E402

FIELDS = ("value", "lower", "upper")
QUICK_HELP = "about 10 settings only (smoke run)"


# --- the settings ----------------------------------------------------------------------------------------------
class Setting:
    """One answer: ``fn(mk)`` computes it (with fresh mechanism objects); ``quick`` marks the --quick subset."""

    def __init__(self, sid, fn, quick=False):
        self.id, self.fn, self.quick = sid, fn, quick

    def __repr__(self):
        return f"Setting({self.id!r})"


#: compositions by id: a function of mk giving the (mechanism, count) items, built fresh on every call
COMPOSITIONS = {
    "sg-s0.8-q0.01-k1e3": lambda mk: [(mk.subsample(mk.gaussian(0.8), 0.01), 1000)],
    "sg-s1-q0.01-k1e4": lambda mk: [(mk.subsample(mk.gaussian(1.0), 0.01), 10_000)],
    "sg-s2-q0.01-k1e2": lambda mk: [(mk.subsample(mk.gaussian(2.0), 0.01), 100)],
    "sg-s2-q0.01-k3e3": lambda mk: [(mk.subsample(mk.gaussian(2.0), 0.01), 3000)],
    "sg-s2-q0.01-k1e5": lambda mk: [(mk.subsample(mk.gaussian(2.0), 0.01), 100_000)],
    "sg-s2-q0.01-k1e6": lambda mk: [(mk.subsample(mk.gaussian(2.0), 0.01), 1_000_000)],
    "sg-s1.5-q0.1-k1e3": lambda mk: [(mk.subsample(mk.gaussian(1.5), 0.1), 1000)],
    "sg-s0.8-q0.001-k1e4": lambda mk: [(mk.subsample(mk.gaussian(0.8), 0.001), 10_000)],
    # CI's hypothesis find of the SPA's MSD1 singularity (docs/performance.md)
    "sg-s1.03-q0.0059-k166": lambda mk: [(mk.subsample(mk.gaussian(1.03), 0.0059), 166)],
    "g-s10-k50": lambda mk: [(mk.gaussian(10.0), 50)],
    "lap-b10-k50": lambda mk: [(mk.laplace(10.0), 50)],
    "rr-e0.5-k100": lambda mk: [(mk.randomized_response(0.5), 100)],
    "dg-s10-k100": lambda mk: [(mk.discrete_gaussian(10.0), 100)],
    "dl-b5-k100": lambda mk: [(mk.discrete_laplace(5.0), 100)],
    "slap-b1-q0.05-k500": lambda mk: [(mk.subsample(mk.laplace(1.0), 0.05), 500)],
    "srr-e1-q0.05-k1e3": lambda mk: [(mk.subsample(mk.randomized_response(1.0), 0.05), 1000)],
    "logistic-b5-k100": lambda mk: [(readme_logistic(mk)(b=5.0), 100)],
    # a heterogeneous mix (README.md's example plus the discrete and binary mechanisms)
    "mix": lambda mk: [(mk.subsample(mk.gaussian(0.8), 0.01), 1000), (mk.laplace(20.0), 50),
                       (readme_logistic(mk)(b=5.0), 1), (mk.randomized_response(0.2), 10),
                       (mk.discrete_gaussian(20.0), 20)],
}

#: (composition, method, query, argument, options, quick): query "eps" is .epsilon(argument), "delta" .delta(argument)
COMPOSE = [
    # the default method (auto): the FFT at moderate k, the SPA at large k, the SPA where the FFT refuses tiny delta
    ("sg-s0.8-q0.01-k1e3", "auto", "eps", 1e-5, {}, True),
    ("sg-s2-q0.01-k1e5", "auto", "eps", 1e-5, {}, False),
    ("sg-s2-q0.01-k3e3", "auto", "eps", 1e-30, {}, False),
    ("g-s10-k50", "auto", "delta", [0.5, 1.0, 2.0], {}, False),
    ("sg-s0.8-q0.01-k1e3", "fft", "eps", 1e-5, {}, True),
    ("sg-s0.8-q0.01-k1e3", "spa", "eps", 1e-5, {}, True),
    ("sg-s0.8-q0.01-k1e3", "edgeworth", "eps", 1e-5, {}, True),
    ("sg-s0.8-q0.01-k1e3", "rdp", "eps", 1e-5, {}, True),
    ("sg-s0.8-q0.01-k1e3", "gdp", "eps", 1e-5, {}, True),
    ("sg-s0.8-q0.01-k1e3", "fft", "delta", 1.0, {}, False),
    ("sg-s0.8-q0.01-k1e3", "fft", "delta", 1.0, {"variant": "fa", "L": 12.0, "n": 200_000}, False),
    ("sg-s0.8-q0.01-k1e3", "spa", "delta", 1.0, {}, False),
    ("sg-s0.8-q0.01-k1e3", "edgeworth", "delta", 1.0, {}, False),
    ("sg-s0.8-q0.01-k1e3", "rdp", "delta", 1.0, {}, False),  # a refusal: rdp answers epsilon(delta) only
    ("sg-s0.8-q0.01-k1e3", "gdp", "delta", 1.0, {}, False),
    ("sg-s1-q0.01-k1e4", "fft", "eps", 1e-5, {}, False),
    ("sg-s1-q0.01-k1e4", "spa", "eps", 1e-5, {}, False),
    ("sg-s1-q0.01-k1e4", "edgeworth", "eps", 1e-5, {}, False),
    ("sg-s1-q0.01-k1e4", "edgeworth", "eps", 1e-5, {"variant": "tilted"}, False),
    ("sg-s2-q0.01-k1e2", "fft", "eps", 1e-5, {}, False),
    ("sg-s2-q0.01-k1e2", "spa", "eps", 1e-5, {}, False),
    ("sg-s2-q0.01-k3e3", "spa", "eps", 1e-12, {}, False),
    ("sg-s2-q0.01-k3e3", "spa", "eps", 1e-30, {}, False),
    ("sg-s2-q0.01-k3e3", "fft", "eps", 1e-30, {}, False),  # a refusal: below the grid's floating-point floor
    ("sg-s2-q0.01-k1e5", "spa", "eps", 1e-5, {}, False),
    ("sg-s2-q0.01-k1e5", "edgeworth", "eps", 1e-5, {}, False),
    ("sg-s2-q0.01-k1e6", "spa", "eps", 1e-5, {}, False),
    ("sg-s2-q0.01-k1e6", "spa", "delta", [30.0, 36.0, 42.0], {}, False),
    ("sg-s1.5-q0.1-k1e3", "fft", "eps", 1e-5, {}, False),
    ("sg-s1.5-q0.1-k1e3", "spa", "eps", 1e-5, {}, False),
    ("sg-s0.8-q0.001-k1e4", "fft", "eps", 1e-5, {}, False),
    ("sg-s0.8-q0.001-k1e4", "spa", "eps", 1e-5, {}, False),
    ("sg-s1.03-q0.0059-k166", "fft", "eps", 1e-4, {}, False),
    ("sg-s1.03-q0.0059-k166", "spa", "eps", 1e-4, {}, False),
    ("g-s10-k50", "fft", "eps", 1e-5, {}, True),
    ("g-s10-k50", "spa", "eps", 1e-5, {}, False),
    ("g-s10-k50", "edgeworth", "eps", 1e-5, {}, False),
    ("g-s10-k50", "fft", "delta", [0.5, 1.0, 2.0], {}, False),
    ("lap-b10-k50", "fft", "eps", 1e-5, {}, False),
    ("lap-b10-k50", "spa", "eps", 1e-5, {}, False),
    ("rr-e0.5-k100", "fft", "eps", 1e-6, {}, False),
    ("rr-e0.5-k100", "spa", "eps", 1e-6, {}, False),
    ("dg-s10-k100", "fft", "eps", 1e-5, {}, False),
    ("dg-s10-k100", "spa", "eps", 1e-5, {}, False),
    ("dl-b5-k100", "fft", "eps", 1e-5, {}, False),
    ("dl-b5-k100", "spa", "eps", 1e-5, {}, False),
    ("slap-b1-q0.05-k500", "fft", "eps", 1e-9, {}, False),
    ("slap-b1-q0.05-k500", "spa", "eps", 1e-12, {}, False),
    ("srr-e1-q0.05-k1e3", "fft", "eps", 1e-6, {}, False),
    ("srr-e1-q0.05-k1e3", "spa", "eps", 1e-6, {}, False),
    ("logistic-b5-k100", "fft", "eps", 1e-5, {}, False),
    ("logistic-b5-k100", "spa", "eps", 1e-5, {}, False),
    ("mix", "fft", "eps", 1e-5, {}, False),
    ("mix", "spa", "eps", 1e-5, {}, False),
    ("mix", "edgeworth", "eps", 1e-5, {}, False),
    ("mix", "rdp", "eps", 1e-5, {}, False),
    ("mix", "gdp", "eps", 1e-5, {}, False),
]


def _fmt_arg(x):
    if isinstance(x, (list, tuple)):
        return "[" + ",".join(_fmt_arg(v) for v in x) + "]"
    return f"{x:g}"


def _compose_setting(comp, method, query, arg, options, quick):
    label = method + "".join(f"-{k}={_fmt_arg(v) if not isinstance(v, str) else v}" for k, v in options.items())
    sid = f"compose/{comp}/{label}/{query}@{_fmt_arg(arg)}"

    def fn(mk):
        run = mk.compose(*COMPOSITIONS[comp](mk))
        call = run.epsilon if query == "eps" else run.delta
        return call(arg, method=method, **options)
    return Setting(sid, fn, quick)


def _oneshot_settings():
    def logistic(mk):
        return readme_logistic(mk)(b=2.0)
    out = [
        # README.md's example (b = 2: the loss lies in [-1/2, 1/2], so logsf and delta are asked inside it)
        ("oneshot/logistic-b2/remove.cdf@0.1", lambda mk: logistic(mk).remove.cdf(0.1), True),
        ("oneshot/logistic-b2/add.logsf@0.3", lambda mk: logistic(mk).add.logsf(0.3), False),
        ("oneshot/logistic-b2/remove.cgf@1.5-order3", lambda mk: logistic(mk).remove.cgf(1.5, order=3), True),
        ("oneshot/logistic-b2/delta@0.2", lambda mk: logistic(mk).delta(0.2), False),
        ("oneshot/logistic-b2/epsilon@1e-6", lambda mk: logistic(mk).epsilon(1e-6), False),
        ("oneshot/logistic-b2/rdp@4", lambda mk: logistic(mk).rdp(4.0), False),
        # catalog mechanisms, vectorised where the call is
        ("oneshot/g-s1/delta@[0,0.5,1,3]", lambda mk: mk.gaussian(1.0).delta([0.0, 0.5, 1.0, 3.0]), False),
        ("oneshot/sg-s1-q0.01/add.logsf@[-0.01,0,0.01,1]",
         lambda mk: mk.subsample(mk.gaussian(1.0), 0.01).add.logsf([-0.01, 0.0, 0.01, 1.0]), False),
        ("oneshot/rr-e1/remove.cdf@[-1,0,1]", lambda mk: mk.randomized_response(1.0).remove.cdf([-1.0, 0.0, 1.0]),
         False),
    ]
    return [Setting(*s) for s in out]


def _gdp_filter(mk):
    """5 examples, 40 steps of DP-GD with fixed norms (clip 1, noise std 8): two examples halt at step 17."""
    import numpy as np
    from mechkit.individual import mu_from_norms
    n, clip, sigma = 5, 1.0, 8.0
    filt = mk.GDPFilter(n, epsilon=2.0, delta=1e-5)
    for t in range(40):
        norms = np.array([0.05, 0.3, 0.6 + 0.1 * math.sin(t), 1.0, 2.5 + math.cos(t)])
        filt.step(mu_from_norms(norms, clip=clip, sigma=sigma))
    eps = filt.epsilon(1e-5)
    return {"value": eps, "details": {"halted_at": filt.halted_at.tolist(), "budget_mu": filt.budget_mu}}


def _pld_accountant(mk, query):
    """6 examples, 20 DP-SGD steps (q 0.05, noise multiplier 1.1, clip 1), fixed norms (one always 0)."""
    import numpy as np
    acc = mk.IndividualPLDAccountant(6, sampling_rate=0.05, noise_multiplier=1.1, clip=1.0, max_steps=20)
    for t in range(20):
        acc.step(np.array([0.0, 0.02, 0.3, 0.7 + 0.2 * math.sin(t), 1.0, 4.0]))
    return acc.epsilon(1e-5) if query == "epsilon" else acc.fitted_mu()


def settings(quick=False):
    """All settings (or the --quick subset), in run order; ids are unique."""
    out = [_compose_setting(*c) for c in COMPOSE] + _oneshot_settings() + [
        Setting("gdp/delta@mu1.5-eps1", lambda mk: mk.gdp.delta(1.5, 1.0), True),
        Setting("gdp/epsilon@mu0.5-delta1e-30", lambda mk: mk.gdp.epsilon(0.5, 1e-30), False),
        Setting("individual/GDPFilter-n5-T40/epsilon@1e-5", _gdp_filter, True),
        Setting("individual/IndividualPLDAccountant-n6-T20/epsilon@1e-5", lambda mk: _pld_accountant(mk, "epsilon")),
        Setting("individual/IndividualPLDAccountant-n6-T20/fitted_mu", lambda mk: _pld_accountant(mk, "fitted_mu")),
    ]
    ids = [s.id for s in out]
    assert len(set(ids)) == len(ids), "setting ids must be unique"
    return [s for s in out if s.quick] if quick else out


# --- answers as JSON ----------------------------------------------------------------------------------------------
def _hex(x):
    """A float (or nested lists/arrays of floats) as float.hex strings; None stays None."""
    import numpy as np
    if x is None:
        return None
    if isinstance(x, np.ndarray) or isinstance(x, (list, tuple)):
        return [_hex(v) for v in (x.tolist() if isinstance(x, np.ndarray) else x)]
    return float(x).hex()


def _unhex(h):
    if h is None:
        return None
    if isinstance(h, list):
        return [_unhex(v) for v in h]
    return float.fromhex(h)


def _jsonable(v):
    """A details entry as JSON (floats as hex); None where it is not a scalar or a small list of them."""
    import numpy as np
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v).hex()
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple, np.ndarray)) and len(v) <= 64:
        items = [_jsonable(x) for x in (v.tolist() if isinstance(v, np.ndarray) else v)]
        return None if any(x is None and y is not None for x, y in zip(items, v)) else items
    return None


def _details(d):
    out = {}
    for k, v in (d or {}).items():
        j = _jsonable(v)
        if j is not None:
            out[str(k)] = j
    return out


def answer(res):
    """The JSON answer of a setting's result (Estimate, EstimateArray, float, array or a dict with "value")."""
    import numpy as np
    extra = {}
    if isinstance(res, dict):
        extra = res.get("details", {})
        res = res["value"]
    out = {"kind": type(res).__name__, "value": None, "lower": None, "upper": None, "certified": None,
           "method": None, "details": {}, "error": None}
    if hasattr(res, "lower") and hasattr(res, "certified"):  # Estimate / EstimateArray
        scalar = np.ndim(res) == 0
        out["value"] = _hex(float(res) if scalar else np.asarray(res, dtype=float))
        for f in ("lower", "upper"):
            b = getattr(res, f)
            out[f] = None if b is None else _hex(float(b) if scalar else np.asarray(b, dtype=float))
        out["certified"] = bool(res.certified)
        out["method"] = res.method
        out["details"] = _details(res.details)
    else:
        out["value"] = _hex(np.asarray(res, dtype=float) if np.ndim(res) else float(res))
    out["details"].update(_details(extra))
    return out


def _short(v):
    if v is None:
        return "-"
    if isinstance(v, list):
        return "[" + ", ".join(_short(x) for x in v[:4]) + (", ..." if len(v) > 4 else "") + "]"
    return f"{_unhex(v):.10g}"


def run_setting(mk, s):
    """The answer of one setting; an exception is recorded as the answer (type and message)."""
    t = time.perf_counter()
    try:
        out = answer(s.fn(mk))
    except Exception as exc:  # noqa: BLE001 -- every outcome is an answer
        out = {"kind": "error", "value": None, "lower": None, "upper": None, "certified": None, "method": None,
               "details": {}, "error": {"type": type(exc).__name__, "message": str(exc)},
               "where": traceback.format_exc(limit=-1).strip().splitlines()[-3:-1]}
    out["seconds"] = time.perf_counter() - t
    out["text"] = (f"{out['error']['type']}: {out['error']['message']}" if out["error"] else
                   f"{_short(out['value'])} [{_short(out['lower'])}, {_short(out['upper'])}]")
    return out


def snapshot(quick=False, verbose=True):
    """{setting id: answer} for all settings (or the --quick subset), in order."""
    import mechkit as mk
    results = {}
    for s in settings(quick):
        results[s.id] = r = run_setting(mk, s)
        if verbose:
            print(f"{r['seconds']:7.2f} s  {s.id}  {r['text'][:110]}", flush=True)
    return results


def meta(quick, seconds):
    import mechkit
    vers = {}
    for p in ("mechkit", "numpy", "scipy", "numba", "sympy", "mpmath"):
        try:
            vers[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            vers[p] = None
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10).stdout.strip() or None
        dirty = bool(subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, timeout=10).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        commit, dirty = None, None
    return {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "python": platform.python_version(), **vers,
            "platform": platform.platform(), "cpus": os.cpu_count(), "mechkit_path": str(Path(mechkit.__file__).parent),
            "git_commit": commit, "git_dirty": dirty, "quick": quick, "seconds": seconds,
            "mechkit_cache_dir": os.environ.get("MECHKIT_CACHE_DIR")}


# --- comparison -------------------------------------------------------------------------------------------------
def _flat(h):
    if h is None:
        return None
    return h if isinstance(h, list) else [h]


def field_diff(old, new):
    """(bit-identical?, largest relative difference) of one field (hex string, list of them, or None)."""
    if old == new:
        return True, 0.0
    a, b = _flat(old), _flat(new)
    if a is None or b is None or len(a) != len(b) or isinstance(old, list) != isinstance(new, list):
        return False, math.inf
    worst = 0.0
    for x, y in zip(_unhex(a), _unhex(b)):
        if x == y or (math.isnan(x) and math.isnan(y)):  # 0.0 vs -0.0; NaNs of different payloads
            continue
        if not (math.isfinite(x) and math.isfinite(y)):
            return False, math.inf
        worst = max(worst, abs(x - y) / max(abs(x), abs(y)))
    return False, worst


def compare(old, new, rtol=1e-12):
    """Rows (id, cells, status, ok) comparing two {id: answer} dicts, and the overall ok."""
    rows, all_ok = [], True
    for sid in list(old) + [k for k in new if k not in old]:
        if sid not in new:
            rows.append((sid, {}, "not run", True))
            continue
        if sid not in old:
            rows.append((sid, {}, "new", True))
            continue
        o, n = old[sid], new[sid]
        cells, problems = {}, []
        if o["error"] != n["error"]:
            def says(e):
                return "an answer" if e is None else f"{e['type']}: {e['message'][:80]}"
            problems.append(f"error changed: now {says(n['error'])} (was {says(o['error'])})")
        for f in FIELDS:
            same, rel = field_diff(o[f], n[f])
            cells[f] = "=" if same else f"{rel:.1e}"
            if not same and not rel <= rtol:
                problems.append(f"{f} beyond rtol")
        if o["certified"] != n["certified"]:
            problems.append(f"certified {o['certified']} -> {n['certified']}")
        od, nd = o.get("details", {}), n.get("details", {})
        changed = sorted(k for k in set(od) | set(nd) if od.get(k) != nd.get(k))
        cells["details"] = "=" if not changed else ",".join(changed)
        if problems:
            status = "; ".join(problems)
        elif all(cells[f] == "=" for f in FIELDS):
            status = "identical"
        else:
            status = "within rtol"
        if changed and not problems:
            status += ", details differ"
        all_ok &= not problems
        rows.append((sid, cells, status, not problems))
    return rows, all_ok


def print_table(rows, rtol):
    w = max(len(r[0]) for r in rows) if rows else 10
    print(f"{'setting':<{w}} | {'value':>8} | {'lower':>8} | {'upper':>8} | {'details':<12} | status")
    print("-" * (w + 60))
    for sid, cells, status, ok in rows:
        if status == "not run":  # only counted (a --quick run against a full file leaves most out)
            continue
        c = [cells.get(f, "") for f in FIELDS]
        print(f"{sid:<{w}} | {c[0]:>8} | {c[1]:>8} | {c[2]:>8} | {cells.get('details', ''):<12} | "
              f"{status if ok else 'FAIL: ' + status}")
    counts = {}
    for _, _, status, ok in rows:
        key = status if ok else "FAIL"
        counts[key] = counts.get(key, 0) + 1
    print("\n" + ", ".join(f"{v} {k}" for k, v in counts.items()) + f"  (rtol {rtol:g})")


def main(argv=None):
    ap = arg_parser(__doc__, "snapshot", QUICK_HELP)
    ap.add_argument("--compare", metavar="OLD.json", help="compare the current answers with this snapshot file")
    ap.add_argument("--rtol", type=float, default=1e-12, help="largest relative difference that passes (1e-12)")
    ap.add_argument("--list", action="store_true", help="print the setting ids and exit")
    default_out = ap.get_default("out")
    ap.set_defaults(out=None)
    args = ap.parse_args(argv)
    if args.list:
        for s in settings(args.quick):
            print(s.id)
        return 0
    old = json.loads(Path(args.compare).read_text())["results"] if args.compare else None
    t = time.perf_counter()
    results = snapshot(args.quick)
    seconds = time.perf_counter() - t
    errors = [(k, r["error"]) for k, r in results.items() if r["error"]]
    print(f"\n{len(results)} settings in {seconds:.1f} s; {len(errors)} answered with an exception:")
    for k, e in errors:
        print(f"  {k}: {e['type']}: {e['message']}")
    out = args.out or (None if args.compare else default_out)
    if out:
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"meta": meta(args.quick, seconds), "results": results}, indent=1) + "\n")
        print(f"wrote {out}")
    if old is None:
        return 0
    rows, ok = compare(old, results, args.rtol)
    print(f"\ncomparison with {args.compare}\n")
    print_table(rows, args.rtol)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
