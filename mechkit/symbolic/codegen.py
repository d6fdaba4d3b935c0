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

import atexit
import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import types
import warnings
from pathlib import Path

import sympy as sp
from sympy.printing.pycode import MpmathPrinter, PythonCodePrinter

from ..errors import CacheWarning, SpecificationError
from . import algebra as sy
from .parse import parse_srepr

_SOURCES = ("symbolic/algebra.py", "symbolic/derive.py", "symbolic/codegen.py", "symbolic/parse.py", "engine/*.py")


@functools.lru_cache(maxsize=None)
def code_version():
    """Hash of the sources that shape generated code and cached structures (read once per process)."""
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent.parent
    for pattern in _SOURCES:
        for path in sorted(here.glob(pattern)):
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


#: the process's fallback cache: a temporary directory, or None for in-memory modules (set on first need)
_FALLBACK = {}
_WARNED = set()


def _usable(d):
    """Whether ``d`` is (or can be made) a directory this process can write files into."""
    try:
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=d):
            pass
        return d.is_dir()
    except (OSError, ValueError):
        return False


def _configured():
    """The configured cache directory: ``$MECHKIT_CACHE_DIR`` (empty counts as unset), else ``~/.cache/mechkit``."""
    raw = os.environ.get("MECHKIT_CACHE_DIR", "")
    try:
        return Path(raw).expanduser() if raw.strip() else Path.home() / ".cache" / "mechkit"
    except (RuntimeError, KeyError, OSError):  # no home directory
        return None


def _fallback(reason, what="mechkit caches derivations", setting="MECHKIT_CACHE_DIR"):
    """The temporary cache directory (created once per process, removed at exit), or None: build in memory.
    Warns once per reason."""
    if reason not in _WARNED:
        _WARNED.add(reason)
        warnings.warn(f"{reason}; {what} in a temporary directory for this process instead (set {setting} to a "
                      "writable directory to keep them)", CacheWarning, stacklevel=4)
    if "dir" not in _FALLBACK:
        try:
            d = Path(tempfile.mkdtemp(prefix="mechkit-cache-"))
            atexit.register(shutil.rmtree, d, True)
        except OSError:
            d = None
        _FALLBACK["dir"] = d if d is not None and _usable(d) else None
    return _FALLBACK["dir"]


def cache_dir():
    """The directory of the on-disk cache: the configured one where it is usable, else the process's temporary
    one (one ``CacheWarning``); None where no directory is writable (modules are then built in memory)."""
    d = _configured()
    if d is not None and _usable(d):
        return d
    where = "no home directory for the default cache" if d is None else f"the cache directory {str(d)!r}"
    return _fallback(f"{where} cannot be used (not a writable directory)")


def _numba_can_cache(source_file):
    """Whether Numba finds a writable cache location for functions of ``source_file`` (its own locators: beside the
    file, ``NUMBA_CACHE_DIR``, the user-wide cache); True where Numba's internals cannot be asked."""
    try:
        from numba.core import caching
        impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")
        classes = list(impl._locator_classes)
    except Exception:
        return True

    def probe():
        pass

    for cls in classes:
        try:
            if cls.from_function(probe, str(source_file)) is not None:
                return True
        except Exception:
            continue
    return False


def ensure_numba_cache(source_files=None):
    """Give Numba's ``cache=True`` somewhere to write before the compiled modules are imported.

    Numba raises ``RuntimeError: cannot cache function ...: no locator available`` at decoration time when neither
    the source's ``__pycache__``, ``NUMBA_CACHE_DIR`` nor the user-wide cache is writable, so ``import mechkit``
    would fail.  Then Numba is pointed at the process's temporary cache directory (one ``CacheWarning``).  To take
    effect it must run before the engine is imported (at the top of ``mechkit/__init__.py``).  ``source_files``:
    the files whose functions are cached (default: one per folder of the package).  Returns the directory set, or
    None where nothing had to change (or nothing could).
    """
    if source_files is None:
        root = Path(__file__).resolve().parent.parent
        source_files = [next(iter(sorted(d.glob("*.py")))) for d in [root, *sorted(root.rglob("*"))]
                        if d.is_dir() and d.name != "__pycache__" and any(d.glob("*.py"))]
    elif isinstance(source_files, (str, os.PathLike)):
        source_files = [source_files]
    blocked = [f for f in source_files if not _numba_can_cache(f)]
    if not blocked:
        return None
    d = _fallback(f"Numba finds no writable cache location for {str(blocked[0])!r}",
                  "the compiled engine is cached", "NUMBA_CACHE_DIR")
    if d is None:
        return None
    from numba.core import config
    config.CACHE_DIR = str(d / "numba")
    return config.CACHE_DIR


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


#: a kernel whose source is longer than this is recorded as failed instead of compiled (Numba takes seconds per
#: 10,000 characters, minutes for the 10^5-10^6 that repeated differentiation can produce): optional kernels fall
#: back to numerics, a required one raises (``prune``)
MAX_KERNEL_CHARS = 20_000


def render_module(kernels, symbols, high_precision=(), disk_cache=True):
    """Python source for the kernels; ``symbols`` is the ordered theta vector (params then consts).

    Each kernel ``name`` becomes a compiled ``k_<name>(X, theta)``; those named in ``high_precision`` also an
    mpmath function ``mp_<name>(X, theta)`` (plain Python, evaluated at whatever ``mpmath.mp.dps`` is), or
    ``mp_<name> = None`` where it cannot be printed.  ``disk_cache``: Numba caches the machine code beside the
    module (false for a module built in memory).
    """
    names = {sy.X: "X"}
    for i, s in enumerate(symbols):
        names[s] = f"theta[{i}]"
    pr = _NumbaPrinter(names)
    mpr = _MpmathPrinter(names)
    lines = ["# generated by mechkit.symbolic.codegen: do not edit", "import math", "import mpmath",
             "from numba import njit", "from mechkit.engine import scalars as _N", ""]
    lines.append("FAILED = []")
    for name in high_precision:
        try:
            body = mpr.doprint(kernels[name])
            if len(body) > MAX_KERNEL_CHARS:
                raise ValueError("too large")
            lines += [f"def mp_{name}(X, theta):", f"    return {body}", ""]
        except Exception:
            lines.append(f"mp_{name} = None")
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
        # each kernel compiles on its own: one that Numba rejects is recorded, not fatal
        lines += ["try:",
                  f'    @njit("float64(float64, float64[::1])", cache={bool(disk_cache)}, error_model="numpy")',
                  f"    def k_{name}(X, theta):", f"        return float({body})",
                  "except Exception:", f"    FAILED.append({name!r})", ""]
    return "\n".join(lines) + "\n"


REQUIRED = ("L", "dL", "logp", "logq")


def prune(structure, failed):
    """Drop references to kernels that failed to compile; optional ones fall back to numerics."""
    if not failed:
        return structure
    failed = set(failed)

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
    for part in (sp.srepr(spec.p), sp.srepr(spec.q), sp.srepr(spec.var), spec.kind, sp.srepr(spec.lo),
                 sp.srepr(spec.hi), repr(spec.points), repr([s.name for s in spec.params]),
                 repr([(c.name, sp.srepr(e)) for c, e in spec.consts]), code_version()):
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


def _write_entry(d, key, module_source, meta):
    """Write a cache entry into ``d``; the module's path, or None where ``d`` refused a write."""
    try:
        mod_path = d / f"fam_{key}.py"
        _atomic_write(mod_path, module_source)
        _atomic_write(d / f"fam_{key}.json", json.dumps(meta))
        return mod_path
    except OSError:
        return None


def load_or_build(spec, build):
    """Return (structure, display, module) for a spec, building with ``build(spec)`` on a cache miss."""
    key = family_key(spec)
    d = cache_dir()
    if d is not None:
        meta_path = d / f"fam_{key}.json"
        mod_path = d / f"fam_{key}.py"
        if meta_path.exists() and mod_path.exists():
            try:
                meta = json.loads(meta_path.read_text())
                display = {k: _from_srepr(v) for k, v in meta["display"].items()}
                mod = _load_module(mod_path, key)
                return prune(meta["structure"], mod.FAILED), display, mod
            except Exception:  # a corrupt cache entry is rebuilt
                pass
    der = build(spec)
    symbols = list(spec.params) + [c for c, _ in spec.consts]
    hp = high_precision_kernels(der.structure)
    meta = {"structure": der.structure, "display": {k: _to_srepr(v) for k, v in der.display.items()}}
    source = None if d is None else render_module(der.kernels, symbols, hp)
    mod_path = None if d is None else _write_entry(d, key, source, meta)
    if mod_path is None and d is not None:  # the directory refused the write (read-only, full...)
        d = _fallback(f"writing to the cache directory {str(d)!r} failed")
        mod_path = None if d is None else _write_entry(d, key, source, meta)
    if mod_path is None:
        mod = _memory_module(render_module(der.kernels, symbols, hp, disk_cache=False), key)
    else:
        mod = _load_module(mod_path, key)
    return prune(der.structure, mod.FAILED), der.display, mod


def high_precision_kernels(structure):
    """The kernels that also get an mpmath version: each variant's loss L (limits at +-inf are checked on it)."""
    return [v["L"] for v in structure.get("variants", {}).values()]


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
