"""The half of the cache of derivations that needs no SymPy: the code version, and reading, writing and loading
entries (``fam_<key>.json``: the structure and the display expressions as SymPy text; ``fam_<key>.py``: the
generated module), so that a family whose entry exists (``laws.shipped``'s records) binds without importing
SymPy.  ``codegen`` derives and writes entries with these.
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
from collections.abc import Mapping
from pathlib import Path

from ..cache import cache_dir
from ..errors import SpecificationError
from . import sp

#: what generated modules and cached structures depend on: the derivation, and the engine modules a generated module
#: uses (the scalar helpers it calls, the kernel signature it is compiled with)
SOURCES = ("symbolic/algebra.py", "symbolic/derive.py", "symbolic/codegen.py", "symbolic/parse.py",
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
    texts = [path.read_text() for pattern in SOURCES for path in sorted(here.glob(pattern))]
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
            atomic_write(memo, json.dumps({"raw": raw, "version": version}))
    return version


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


def atomic_write(path, text):
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def load_module(path, key):
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


def import_entry(shipped, d, key):
    """Copy a shipped entry (``export_entry``) into the cache directory ``d``; nothing where there is none or it
    cannot be read or written (the family is then derived as usual)."""
    try:
        entry = json.loads(shipped.read_text())
        write_entry(d, key, entry["module"], entry["meta"])
    except (OSError, ValueError, KeyError, TypeError):
        pass


def write_entry(d, key, module_source, meta):
    """Write a cache entry into ``d``; the module's path, or None where ``d`` refused a write."""
    try:
        mod_path = d / f"fam_{key}.py"
        atomic_write(mod_path, module_source)
        atomic_write(d / f"fam_{key}.json", json.dumps(meta))
        return mod_path
    except OSError:
        return None


def entry_exists(d, key):
    return (d / f"fam_{key}.json").exists() and (d / f"fam_{key}.py").exists()


def load_entry(d, key):
    """(structure, display, module) from the cache entry of ``key`` in ``d``; None where there is none or it is
    corrupt (then rebuilt)."""
    if not entry_exists(d, key):
        return None
    try:
        meta = json.loads((d / f"fam_{key}.json").read_text())
        display = Display(meta["display"])
        mod = load_module(d / f"fam_{key}.py", key)
        return prune(meta["structure"], mod.FAILED, mod), display, mod
    except Exception:  # a corrupt cache entry is rebuilt
        return None


def to_srepr(v):
    """A display value (an expression, None, text, or lists and tuples of them) as JSON (``from_srepr``)."""
    if v is None:  # a piecewise loss has no single expression to show
        return {"none": True}
    if isinstance(v, list):
        return {"list": [to_srepr(x) for x in v]}
    if isinstance(v, tuple):
        return {"tuple": [to_srepr(x) for x in v]}
    if isinstance(v, str):
        return {"str": v}
    return {"expr": sp.srepr(v)}


def from_srepr(v):
    """The display value that ``to_srepr`` wrote: SymPy text is parsed without evaluating Python (SymPy imported
    here, where an expression is shown)."""
    if "none" in v:
        return None
    if "list" in v:
        return [from_srepr(x) for x in v["list"]]
    if "tuple" in v:
        return tuple(from_srepr(x) for x in v["tuple"])
    if "str" in v:
        return v["str"]
    from .parse import parse_srepr

    return parse_srepr(v["expr"])


class Display(Mapping):
    """The display expressions of a loaded entry (name -> SymPy text, ``codegen.to_srepr``), parsed into SymPy on
    first access (SymPy is imported then, not when the entry is loaded)."""

    def __init__(self, raw):
        self._raw, self._parsed = dict(raw), {}

    def __getitem__(self, key):
        if key not in self._parsed:
            self._parsed[key] = from_srepr(self._raw[key])
        return self._parsed[key]

    def __iter__(self):
        return iter(self._raw)

    def __len__(self):
        return len(self._raw)


def load_shipped(key: str, shipped: Path) -> tuple | None:
    """(structure, display, module) of the family ``key`` from the cache directory, where its shipped entry in
    ``shipped`` is first copied (``codegen.load_or_build`` without a derivation: no SymPy).

    Parameters
    ----------
    key : the family's content key.
    shipped : the directory of shipped entries (``laws.catalog.prederived_dir``).

    Returns
    -------
    The loaded triple (the display parsed on first access), or None where no cache directory is usable or neither
    the cache nor ``shipped`` holds a readable entry (the family is then derived as usual).
    """
    d = cache_dir()
    if d is None:
        return None
    if not entry_exists(d, key):
        import_entry(Path(shipped) / f"fam_{key}.json", d, key)
    return load_entry(d, key)
