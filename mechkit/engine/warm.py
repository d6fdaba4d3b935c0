"""On a cold cache, a second process compiles the engine's largest subjects while this one works.

A first query compiles the engine once per machine; its largest subjects (``SUBJECTS``: adaptive quadrature and
the peak scans built on it) are most of that time and are needed late (by the first CGF), after the family's own
kernels.  Where their Numba cache is missing, the engine's first import starts ``python -c "import
mechkit.engine.quadrature; ..."`` with the same cache location; when this process needs a subject (or a module
built on one, ``DEPENDENT``) it compiles what needs none of them (``MEANWHILE``), then waits for the second
process and loads the subjects from the cache.  Both cores work instead of one.  Nothing is started where the
cache is warm, where ``MECHKIT_ENGINE_WARMER=0`` (set for the second process itself), or where starting fails.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .. import cache

#: the subjects the second process compiles
SUBJECTS = ("quadrature", "peaks")
#: engine modules that import a subject: this process waits for the second one before importing them
DEPENDENT = frozenset({"quadrature", "peaks", "tilted"})
#: engine modules this process compiles while it waits (they import no subject)
MEANWHILE = ("roots", "tails")
#: the environment variable that switches the second process off ("0")
ENV = "MECHKIT_ENGINE_WARMER"

_STATE = {}


def _cold():
    """Whether the first subject has no Numba cache index at all (a fresh install or an emptied cache)."""
    try:
        d = cache.numba_cache_path(Path(__file__).with_name(SUBJECTS[0] + ".py"))
    except LookupError:
        return False
    return d is not None and not any(Path(d).glob(SUBJECTS[0] + ".*.nbi"))


def start() -> None:
    """Start the second process if the engine's cache is cold (once per process; never fatal)."""
    if "proc" in _STATE:
        return
    _STATE["proc"] = None
    if os.environ.get(ENV, "1") == "0" or not sys.executable:
        return
    try:
        if not _cold():
            return
        from numba.core import config
        env = dict(os.environ, **{ENV: "0"})
        if config.CACHE_DIR:  # set here (a fallback location): the second process must write there too
            env["NUMBA_CACHE_DIR"] = str(config.CACHE_DIR)
        root = str(Path(__file__).resolve().parents[2])  # the directory holding this mechkit package
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        code = "; ".join(f"import mechkit.engine.{s}" for s in SUBJECTS)
        _STATE["proc"] = subprocess.Popen([sys.executable, "-c", code], env=env, stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _STATE["started"] = True
    except Exception:
        _STATE["proc"] = None


def started() -> bool:
    """Whether this process started a second one."""
    return _STATE.get("started", False)


def running() -> bool:
    """Whether the second process is still compiling."""
    proc = _STATE.get("proc")
    return proc is not None and proc.poll() is None


def wait() -> None:
    """Wait for the second process (if any) to finish; its result is in Numba's cache, or this process compiles."""
    proc = _STATE.get("proc")
    if proc is not None:
        proc.wait()
        _STATE["proc"] = None
