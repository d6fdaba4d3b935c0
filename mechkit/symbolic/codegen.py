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

import ast
import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import types
from pathlib import Path

import sympy as sp
from sympy.printing.numpy import SciPyPrinter
from sympy.printing.pycode import MpmathPrinter, PythonCodePrinter

from ..cache import cache_dir, exclusive, fallback
from ..errors import SpecificationError
from ..progress import announce
from . import algebra as sy
from .parse import parse_srepr

#: what generated modules and cached structures depend on: the derivation, and the engine modules a generated module
#: uses (the scalar helpers it calls, the kernel signature it is compiled with)
_SOURCES = ("symbolic/algebra.py", "symbolic/derive.py", "symbolic/codegen.py", "symbolic/parse.py",
            "engine/scalars.py", "engine/kernels.py")


def code_text(source):
    """What of a module's source can change generated code: its syntax tree without comments, docstrings and line
    numbers (so editing a comment keeps the cache and the catalog's shipped derivations valid)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


@functools.lru_cache(maxsize=None)
def code_version():
    """Hash of the sources that shape generated code and cached structures (``code_text``; once per process).

    Parsing the sources takes ~0.1 s, so the answer is kept in the cache directory beside a hash of their bytes
    (``code-version.json``): a process whose sources are byte for byte the same reads it instead."""
    here = Path(__file__).resolve().parent.parent
    texts = [path.read_text() for pattern in _SOURCES for path in sorted(here.glob(pattern))]
    raw = hashlib.sha256("\0".join(texts).encode()).hexdigest()
    d = cache_dir()
    memo = None if d is None else Path(d) / "code-version.json"
    if memo is not None:
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):  # no memo yet, or a bad one
            got = json.loads(memo.read_text())
            if got["raw"] == raw and isinstance(got["version"], str):
                return got["version"]
    h = hashlib.sha256()
    for text in texts:
        h.update(code_text(text).encode())
    version = h.hexdigest()[:16]
    if memo is not None:
        with contextlib.suppress(OSError):
            _atomic_write(memo, json.dumps({"raw": raw, "version": version}))
    return version


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


REQUIRED = ("L", "dL", "logp", "logq")


def prune(structure, failed, mod=None):
    """Drop references to kernels that failed to compile; optional ones fall back to numerics.  A discrete
    family's log-pmfs and loss that Numba cannot compile (a special function such as besseli) are evaluated by
    their mpmath versions instead (``python_kernels`` in the structure: the pmf is tabulated at bind time)."""
    if not failed:
        return structure
    failed = set(failed)
    if structure.get("kind") in ("integers", "finite") and mod is not None:
        slow = sorted(n for n in failed if n in (structure["logp"], structure["logq"], structure["L"])
                      and getattr(mod, "mp_" + n, None) is not None)
        if slow:
            structure = dict(structure, python_kernels=slow)
            failed -= set(slow)

    def walk(node, key=None):
        if isinstance(node, dict):
            return {k: walk(v, k) for k, v in node.items()}
        if isinstance(node, list):
            if key == "cgf":
                return None if any(x in failed for x in node) else node
            if key == "crit":
                return None if any(x in failed for x in node) else node
            return [walk(x) for x in node if not (isinstance(x, str) and x in failed)]
        if isinstance(node, str) and node in failed:
            if key in REQUIRED or key in ("abs_args", "breakpoints"):
                raise SpecificationError(f"the derived kernel {node} cannot be compiled")
            return None
        return node

    return walk(structure)


def _atomic_write(path, text):
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def family_key(spec):
    h = hashlib.sha256()
    masses = [repr([(sp.srepr(x), sp.srepr(w)) for x, w in ms]) for ms in spec.masses] if any(spec.masses) else []
    for part in (sp.srepr(spec.p), sp.srepr(spec.q), sp.srepr(spec.var), spec.kind, sp.srepr(spec.lo),
                 sp.srepr(spec.hi), repr(spec.points), repr([s.name for s in spec.params]),
                 repr([(c.name, sp.srepr(e)) for c, e in spec.consts]), *masses, code_version()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def _load_module(path, key):
    name = f"mechkit_gen_{key}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
        mod.FAILED  # a truncated module may lack it: treated as corrupt
    except BaseException:
        del sys.modules[name]  # a broken module must not be found by the rebuild's import
        raise
    return mod


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
    _atomic_write(path, json.dumps(entry, indent=0, sort_keys=True))
    return path


def _import_entry(shipped, d, key):
    """Copy a shipped entry (``export_entry``) into the cache directory ``d``; nothing where there is none or it
    cannot be read or written (the family is then derived as usual)."""
    try:
        entry = json.loads(shipped.read_text())
        _write_entry(d, key, entry["module"], entry["meta"])
    except (OSError, ValueError, KeyError, TypeError):
        pass


def _write_entry(d, key, module_source, meta):
    """Write a cache entry into ``d``; the module's path, or None where ``d`` refused a write."""
    try:
        mod_path = d / f"fam_{key}.py"
        _atomic_write(mod_path, module_source)
        _atomic_write(d / f"fam_{key}.json", json.dumps(meta))
        return mod_path
    except OSError:
        return None


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
    if prebuilt is not None and not _entry_exists(d, key):
        _import_entry(Path(prebuilt) / f"fam_{key}.json", d, key)
    hit = _load_entry(d, key)
    if hit is not None:
        return hit
    with announce(f"deriving {label}"), exclusive(d, f"fam_{key}"):
        # a process that held the lock before this one has built the entry meanwhile: load it
        hit = _load_entry(d, key)
        return hit if hit is not None else _build_entry(spec, build, key, d)


def available(spec, prebuilt=None, key=None) -> bool:
    """Whether ``load_or_build`` would find the spec's entry without deriving: in the cache directory, or shipped in
    ``prebuilt`` (copied into it).  False where no cache directory is usable (every family is then derived).  A
    stat or two, no reading; ``key`` as for ``load_or_build``."""
    d = cache_dir()
    if d is None:
        return False
    key = family_key(spec) if key is None else key
    return _entry_exists(d, key) or (prebuilt is not None and (Path(prebuilt) / f"fam_{key}.json").exists())


def _entry_exists(d, key):
    return (d / f"fam_{key}.json").exists() and (d / f"fam_{key}.py").exists()


def _load_entry(d, key):
    """(structure, display, module) from the cache entry of ``key`` in ``d``; None where there is none or it is
    corrupt (then rebuilt)."""
    if not _entry_exists(d, key):
        return None
    try:
        meta = json.loads((d / f"fam_{key}.json").read_text())
        display = {k: _from_srepr(v) for k, v in meta["display"].items()}
        mod = _load_module(d / f"fam_{key}.py", key)
        return prune(meta["structure"], mod.FAILED, mod), display, mod
    except Exception:  # a corrupt cache entry is rebuilt
        return None


def _build_entry(spec, build, key, d):
    der = build(spec)
    symbols = list(spec.params) + [c for c, _ in spec.consts]
    # the steps of a floor: integer slots after the parameters, set per step by the numeric layer
    symbols += [sp.Symbol(n, integer=True) for n in der.structure.get("floor_slots", ())]
    hp = high_precision_kernels(der.structure)
    meta = {"structure": der.structure, "display": {k: _to_srepr(v) for k, v in der.display.items()}}
    vec = der.structure.get("kind") in ("integers", "finite")
    source = None if d is None else render_module(der.kernels, symbols, hp, vectorised=vec)
    mod_path = None if d is None else _write_entry(d, key, source, meta)
    if mod_path is None and d is not None:  # the directory refused the write (read-only, full...)
        d = fallback(f"writing to the cache directory {str(d)!r} failed")
        mod_path = None if d is None else _write_entry(d, key, source, meta)
    if mod_path is None:
        mod = _memory_module(render_module(der.kernels, symbols, hp, disk_cache=False, vectorised=vec), key)
    else:
        mod = _load_module(mod_path, key)
    return prune(der.structure, mod.FAILED, mod), der.display, mod


def high_precision_kernels(structure):
    """The kernels that also get an mpmath version: each variant's loss L (limits at +-inf are checked on it); a
    discrete family's log-pmfs and loss (evaluated that way where Numba cannot compile them)."""
    if structure.get("kind") in ("integers", "finite"):  # the fallback of log-pmfs Numba cannot compile
        return [n for n in (structure.get("logp"), structure.get("logq"), structure.get("L")) if n is not None]
    names = [v["L"] for v in structure.get("variants", {}).values() if not v.get("zero")]
    return list(dict.fromkeys(names))  # variants shared by several sign patterns: once


def _to_srepr(v):
    if isinstance(v, list):
        return {"list": [_to_srepr(x) for x in v]}
    if isinstance(v, tuple):
        return {"tuple": [_to_srepr(x) for x in v]}
    if isinstance(v, str):
        return {"str": v}
    return {"expr": sp.srepr(v)}


def _from_srepr(v):
    if "list" in v:
        return [_from_srepr(x) for x in v["list"]]
    if "tuple" in v:
        return tuple(_from_srepr(x) for x in v["tuple"])
    if "str" in v:
        return v["str"]
    return parse_srepr(v["expr"])
