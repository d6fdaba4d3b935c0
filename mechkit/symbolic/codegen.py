"""SymPy kernels -> a generated Python module of ``@njit(cache=True)`` functions, cached on disk.

Each family gets one module ``fam_<key>.py`` in the cache directory (``$MECHKIT_CACHE_DIR`` or
``~/.cache/mechkit``), next to a JSON file holding the derivation's structure and display expressions.
The key hashes the densities, domain, parameter order and the source of the derivation code, so a change
to either gives a new entry.  Numba caches its machine code beside the module, so a second process loads
both the derivation and the compiled kernels without redoing either.

A cache directory that cannot be used (not a directory, not writable, a write failing) is never fatal: one
``CacheWarning`` per process, then a temporary directory (removed at exit) holds the cache; where no temporary
directory is writable either, modules are built in memory (compiled without Numba's disk cache).  A corrupt
entry is rebuilt.
"""
from __future__ import annotations

import hashlib
import json
import sys
import types
from pathlib import Path

import sympy as sp
from sympy.printing.numpy import SciPyPrinter
from sympy.printing.pycode import MpmathPrinter, PythonCodePrinter

from ..cache import cache_dir, exclusive, fallback
from ..errors import SpecificationError
from ..progress import announce
from . import algebra as sy
from .entries import (
    atomic_write,
    code_version,
    entry_exists,
    import_entry,
    load_entry,
    load_module,
    prune,
    to_srepr,
    write_entry,
)


class _ThetaSymbols:
    """Prints the kernel variable as ``X`` and the parameters as ``theta[i]`` (``names``: Symbol -> text)."""

    def __init__(self, names, settings):
        super().__init__(settings)
        self._names = names

    def _print_Symbol(self, e):
        try:
            return self._names[e]
        except KeyError:
            raise SpecificationError(f"unexpected free symbol {e} in a kernel") from None


class _NumbaPrinter(_ThetaSymbols, PythonCodePrinter):
    def __init__(self, names):
        super().__init__(names, {"fully_qualified_modules": True, "standard": "python3"})

    def _print_LAE(self, e):
        args = [self._print(a) for a in e.args]
        out = args[0]
        for a in args[1:]:
            out = f"_N.lae({out}, {a})"
        return out

    def _print_Erfc(self, e):
        return f"math.erfc({self._print(e.args[0])})"

    def _print_LogErfc(self, e):
        return f"_N.log_erfc({self._print(e.args[0])})"

    def _print_Softplus(self, e):
        return f"_N.softplus({self._print(e.args[0])})"

    def _print_sign(self, e):
        return f"_N.sgn({self._print(e.args[0])})"

    def _print_Abs(self, e):
        return f"abs({self._print(e.args[0])})"

    def _print_Infinity(self, e):
        return "math.inf"

    def _print_NegativeInfinity(self, e):
        return "(-math.inf)"

    def _print_NaN(self, e):
        return "math.nan"

    def _print_ComplexInfinity(self, e):
        return "math.nan"

    def _print_Exp1(self, e):
        return "math.e"

    def _print_log(self, e):
        return f"_N.safe_log({self._print(e.args[0])})"

    def _print_Rational(self, e):
        return f"({e.p}/{e.q})"

    def _print_Half(self, e):
        return "0.5"

    def _print_Pow(self, e, rational=False):
        if e.exp == sp.Rational(1, 2):
            return f"math.sqrt({self._print(e.base)})"
        if e.exp == -sp.Rational(1, 2):
            return f"(1.0/math.sqrt({self._print(e.base)}))"
        if e.exp.is_Integer:
            return f"({self._print(e.base)})**{int(e.exp)}"
        return f"({self._print(e.base)})**({self._print(e.exp)})"

    def _print_Sum(self, e):
        raise SpecificationError("an unevaluated Sum cannot be compiled")


class _MpmathPrinter(_ThetaSymbols, MpmathPrinter):
    """The same kernels for mpmath at any precision: the independent numeric evidence of ``high_precision``
    (no overflow, no cancellation at the working precision; mechkit's log-space primitives printed plainly)."""

    def __init__(self, names):
        super().__init__(names, {"fully_qualified_modules": True})

    def _print_LAE(self, e):
        return "mpmath.log(" + " + ".join(f"mpmath.exp({self._print(a)})" for a in e.args) + ")"

    def _print_Erfc(self, e):
        return f"mpmath.erfc({self._print(e.args[0])})"

    def _print_LogErfc(self, e):
        return f"mpmath.log(mpmath.erfc({self._print(e.args[0])}))"

    def _print_Softplus(self, e):
        return f"mpmath.log(1 + mpmath.exp({self._print(e.args[0])}))"


class _SciPyPrinter(_ThetaSymbols, SciPyPrinter):
    """The same kernels vectorised over X with NumPy and SciPy's special functions: how a discrete family's log-pmfs
    that Numba cannot compile are tabulated (``laws.discrete``; mpmath where these over- or underflow)."""

    def __init__(self, names):
        super().__init__(names, {"fully_qualified_modules": True})

    def _print_LAE(self, e):
        out = self._print(e.args[0])
        for a in e.args[1:]:
            out = f"numpy.logaddexp({out}, {self._print(a)})"
        return out

    def _print_Erfc(self, e):
        return f"scipy.special.erfc({self._print(e.args[0])})"

    def _print_LogErfc(self, e):
        return f"numpy.log(scipy.special.erfc({self._print(e.args[0])}))"

    def _print_Softplus(self, e):
        return f"numpy.logaddexp(0.0, {self._print(e.args[0])})"


#: a kernel whose source is longer than this is recorded as failed instead of compiled (Numba takes seconds per
#: 10,000 characters, minutes for the 10^5-10^6 that repeated differentiation can produce): optional kernels fall
#: back to numerics, a required one raises (``prune``)
MAX_KERNEL_CHARS = 20_000


def render_module(kernels, symbols, high_precision=(), disk_cache=True, vectorised=False):
    """Python source for the kernels; ``symbols`` is the ordered theta vector (params then consts).

    Each kernel ``name`` becomes a Numba function ``k_<name>(X, theta)``, compiled on its first use
    (``engine.kernels.kernel_refs``); those named in ``high_precision`` also an
    mpmath function ``mp_<name>(X, theta)`` (plain Python, evaluated at whatever ``mpmath.mp.dps`` is), or
    ``mp_<name> = None`` where it cannot be printed.  ``disk_cache``: Numba caches the machine code beside the
    module (false for a module built in memory).  ``vectorised``: the ``high_precision`` kernels also as NumPy/SciPy
    functions ``sp_<name>(X, theta)`` of an array X (a discrete family's fallback where Numba fails).
    """
    names = {sy.X: "X"}
    for i, s in enumerate(symbols):
        names[s] = f"theta[{i}]"
    pr = _NumbaPrinter(names)
    mpr = _MpmathPrinter(names)
    lines = ["# generated by mechkit.symbolic.codegen: do not edit", "import math", "import mpmath", "import numpy",
             *(["import scipy.special"] if vectorised else []),  # only the NumPy/SciPy functions use it
             "from numba import njit", "from mechkit.engine import scalars as _N", ""]
    lines.append("FAILED = []")
    spr = _SciPyPrinter(names) if vectorised else None
    for name in high_precision:
        try:
            body = mpr.doprint(kernels[name])
            if len(body) > MAX_KERNEL_CHARS:
                raise ValueError("too large")
            lines += [f"def mp_{name}(X, theta):", f"    return {body}", ""]
        except Exception:
            lines.append(f"mp_{name} = None")
        if spr is not None:
            try:
                body = spr.doprint(kernels[name])
                lines += [f"def sp_{name}(X, theta):", f"    return {body}", ""]
            except Exception:
                lines.append(f"sp_{name} = None")
    for name, expr in kernels.items():
        try:
            if expr.has(sp.I):
                raise ValueError("complex")
            body = pr.doprint(expr)
            if len(body) > MAX_KERNEL_CHARS:
                raise ValueError("too large to compile")
        except Exception:
            lines.append(f"FAILED.append({name!r})")
            continue
        # compiled when first asked for (``engine.kernels.KernelRef``): a query compiles the kernels it uses
        lines += [f"@njit(cache={bool(disk_cache)}, error_model=\"numpy\", no_cpython_wrapper=True)",
                  f"def k_{name}(X, theta):", f"    return float({body})", ""]
    return "\n".join(lines) + "\n"


def family_key(spec):
    h = hashlib.sha256()
    masses = [repr([(sp.srepr(x), sp.srepr(w)) for x, w in ms]) for ms in spec.masses] if any(spec.masses) else []
    for part in (sp.srepr(spec.p), sp.srepr(spec.q), sp.srepr(spec.var), spec.kind, sp.srepr(spec.lo),
                 sp.srepr(spec.hi), repr(spec.points), repr([s.name for s in spec.params]),
                 repr([(c.name, sp.srepr(e)) for c, e in spec.consts]), *masses, code_version()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def _memory_module(source, key):
    """The generated module built in memory (no writable directory anywhere): plain ``exec`` of the generated
    source, which ``render_module`` printed from SymPy kernels (never user text)."""
    name = f"mechkit_gen_{key}"
    if name in sys.modules:
        return sys.modules[name]
    mod = types.ModuleType(name)
    mod.__file__ = f"<mechkit generated {key}>"
    exec(compile(source, mod.__file__, "exec"), mod.__dict__)
    sys.modules[name] = mod
    return mod


def export_entry(spec, out):
    """Write the cache entry of ``spec`` (derived or loaded beforehand) as one shipped file ``out/fam_<key>.json``
    holding the structure, the display expressions and the generated module's source; returns its path.

    Raises
    ------
    FileNotFoundError : the entry is not in the cache directory (derive the family first).
    """
    key = family_key(spec)
    d = cache_dir()
    if d is None:
        raise FileNotFoundError("no cache directory holds derivations in this process")
    entry = {"meta": json.loads((d / f"fam_{key}.json").read_text()), "module": (d / f"fam_{key}.py").read_text()}
    path = Path(out) / f"fam_{key}.json"
    atomic_write(path, json.dumps(entry, indent=0, sort_keys=True))
    return path


def load_or_build(spec, build, label="a family", prebuilt=None, key=None):
    """Return (structure, display, module) for a spec, building with ``build(spec)`` on a cache miss.  ``label``
    names the family in the line printed where loading or building takes long (``progress``), and in the one its
    kernels' compilation prints (``module.LABEL``; they compile as queries first ask for them); ``prebuilt``: a
    directory of shipped entries (``export_entry``) copied into the cache on a miss, so the derivation is skipped;
    ``key``: ``family_key(spec)`` where the caller has it (its SymPy printing takes ~15 ms)."""
    structure, display, mod = _load_or_build(spec, build, label, prebuilt, family_key(spec) if key is None else key)
    mod.LABEL = label
    return structure, display, mod


def _load_or_build(spec, build, label, prebuilt, key):
    d = cache_dir()
    if d is None:
        with announce(f"deriving {label}"):
            return _build_entry(spec, build, key, d)
    if prebuilt is not None and not entry_exists(d, key):
        import_entry(Path(prebuilt) / f"fam_{key}.json", d, key)
    hit = _parsed(load_entry(d, key), key)
    if hit is not None:
        return hit
    with announce(f"deriving {label}"), exclusive(d, f"fam_{key}"):
        # a process that held the lock before this one has built the entry meanwhile: load it
        hit = _parsed(load_entry(d, key), key)
        return hit if hit is not None else _build_entry(spec, build, key, d)


def _parsed(hit, key):
    """A loaded entry with its display expressions parsed now (SymPy is imported on this path anyway): an entry
    whose text does not parse is rebuilt (None), as a corrupt one is, and its module is forgotten (the rebuild
    imports the module it writes, not this one)."""
    if hit is None:
        return None
    structure, display, mod = hit
    try:
        return structure, dict(display), mod
    except Exception:  # a damaged or tampered display text: rebuilt
        sys.modules.pop(f"mechkit_gen_{key}", None)
        return None


def available(spec, prebuilt=None, key=None) -> bool:
    """Whether ``load_or_build`` would find the spec's entry without deriving: in the cache directory, or shipped in
    ``prebuilt`` (copied into it).  False where no cache directory is usable (every family is then derived).  A
    stat or two, no reading; ``key`` as for ``load_or_build``."""
    d = cache_dir()
    if d is None:
        return False
    key = family_key(spec) if key is None else key
    return entry_exists(d, key) or (prebuilt is not None and (Path(prebuilt) / f"fam_{key}.json").exists())


def _build_entry(spec, build, key, d):
    der = build(spec)
    symbols = list(spec.params) + [c for c, _ in spec.consts]
    # the steps of a floor: integer slots after the parameters, set per step by the numeric layer
    symbols += [sp.Symbol(n, integer=True) for n in der.structure.get("floor_slots", ())]
    hp = high_precision_kernels(der.structure)
    meta = {"structure": der.structure, "display": {k: to_srepr(v) for k, v in der.display.items()}}
    vec = der.structure.get("kind") in ("integers", "finite")
    source = None if d is None else render_module(der.kernels, symbols, hp, vectorised=vec)
    mod_path = None if d is None else write_entry(d, key, source, meta)
    if mod_path is None and d is not None:  # the directory refused the write (read-only, full...)
        d = fallback(f"writing to the cache directory {str(d)!r} failed")
        mod_path = None if d is None else write_entry(d, key, source, meta)
    if mod_path is None:
        mod = _memory_module(render_module(der.kernels, symbols, hp, disk_cache=False, vectorised=vec), key)
    else:
        mod = load_module(mod_path, key)
    return prune(der.structure, mod.FAILED, mod), der.display, mod


def high_precision_kernels(structure):
    """The kernels that also get an mpmath version: each variant's loss L (limits at +-inf are checked on it); a
    discrete family's log-pmfs and loss (evaluated that way where Numba cannot compile them)."""
    if structure.get("kind") in ("integers", "finite"):  # the fallback of log-pmfs Numba cannot compile
        return [n for n in (structure.get("logp"), structure.get("logq"), structure.get("L")) if n is not None]
    names = [v["L"] for v in structure.get("variants", {}).values() if not v.get("zero")]
    return list(dict.fromkeys(names))  # variants shared by several sign patterns: once
