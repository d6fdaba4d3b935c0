"""On a cold cache, a second process compiles the engine's largest subjects while this one works.

A first query compiles the engine once per machine; its largest subjects (``SUBJECTS``: adaptive quadrature, the
peak scans built on it and the tilted moments built on both) are most of that time and are needed late (by the
first CGF, the saddle point's first tilt), after the family's own kernels.  Where their Numba cache is missing, the
engine's first import starts ``python -c "import mechkit.engine.quadrature; ..."`` with the same cache location;
the second process compiles the subjects in that order and reports each one on its standard output when it is in
the cache.  When this process needs a subject it compiles what needs none of them (``MEANWHILE``), then waits for
that subject's report (not for the later ones) and loads it from the cache.  Both cores work instead of one.  While
it would still wait, it runs the small compilations the query registered as likely needed later (``meanwhile``:
the family's kernels not asked for yet, the FFT's low-frequency sums of a long composition), one at a time, as
long as the subject is not reported (``work_while_pending``).
Where the cache is plainly cold (a fresh install; a new or empty ``NUMBA_CACHE_DIR``), the second process starts
before this one imports Numba (``start_early``); elsewhere after (``start``).  Nothing is started where the cache is
warm, where ``MECHKIT_ENGINE_WARMER=0`` (set for the second process itself), or where starting fails; a second
process that dies early leaves the rest to this one.
"""
from __future__ import annotations

import collections
import os
import select
import subprocess
import sys
import threading
from pathlib import Path

from .. import cache

#: the subjects the second process compiles
SUBJECTS = ("quadrature", "peaks", "tilted")
#: engine modules this process compiles while it waits (they import no subject)
MEANWHILE = ("roots", "tails")
#: the environment variable that switches the second process off ("0")
ENV = "MECHKIT_ENGINE_WARMER"

_STATE = {}
_IDLE = collections.deque()  # compilations to run while waiting (``meanwhile``)
_READING = threading.Lock()  # one thread reads the second process's reports (the FFT composes in two)


def _cold():
    """Whether the first subject has no Numba cache index at all (a fresh install or an emptied cache)."""
    try:
        d = cache.numba_cache_path(Path(__file__).with_name(SUBJECTS[0] + ".py"))
    except LookupError:
        return False
    return d is not None and not any(Path(d).glob(SUBJECTS[0] + ".*.nbi"))


def _plainly_cold():
    """Without importing Numba: whether its cache is plainly cold -- ``NUMBA_CACHE_DIR`` names a new or empty
    writable directory, or, without it, the cache is plainly each package folder's own ``__pycache__`` (a writable
    directory, or absent from a writable folder, as Numba's in-tree locator wants; else
    ``cache.ensure_numba_cache`` points Numba elsewhere) and the engine's holds no index of the first subject.
    False where that cannot be told so (``start`` then asks Numba)."""
    given = os.environ.get("NUMBA_CACHE_DIR")
    if given:  # Numba's cache is there: plainly cold where that directory is new, or empty, and can be written
        d = Path(given)
        try:
            if d.is_dir():
                return not any(d.iterdir()) and os.access(d, os.W_OK)
            while not d.exists() and d.parent != d:
                d = d.parent
            return d.is_dir() and os.access(d, os.W_OK)
        except OSError:
            return False
    here = Path(__file__).resolve().parent
    try:
        if any((here / "__pycache__").glob(SUBJECTS[0] + ".*.nbi")):  # first: the common, warm case stops here
            return False
        for d in cache.source_folders(here.parent):  # the folders ``cache.ensure_numba_cache`` checks
            pyc = d / "__pycache__"
            if (pyc.exists() and not pyc.is_dir()) or not os.access(pyc if pyc.exists() else d, os.W_OK):
                return False
        return True
    except OSError:
        return False


def start_early() -> None:
    """``start`` before Numba is imported here, where the cache is plainly cold (``_plainly_cold``: a fresh install
    in a writable environment, as the README's commands make): the second process's start overlaps this one's
    import of Numba (~0.2 s).  Elsewhere nothing happens, and ``start`` decides after the import."""
    if "proc" not in _STATE and _enabled() and _plainly_cold():
        _launch({})


def start() -> None:
    """Start the second process if the engine's cache is cold (once per process; never fatal)."""
    if "proc" in _STATE:
        return
    _STATE["proc"] = None
    if not _enabled():
        return
    try:
        if not _cold():
            return
        from numba.core import config
        # a fallback location set here (``cache.ensure_numba_cache``): the second process must write there too
        _launch({"NUMBA_CACHE_DIR": str(config.CACHE_DIR)} if config.CACHE_DIR else {})
    except Exception:  # never fatal: this process compiles what it needs
        _STATE["proc"] = None


def _enabled():
    """Whether a second process may be started here (not switched off, an interpreter to start)."""
    return os.environ.get(ENV, "1") != "0" and bool(sys.executable)


def _launch(extra_env):
    """Start the second process (``_STATE["proc"]``; None where it cannot be started: never fatal)."""
    _STATE["proc"] = None
    try:
        env = dict(os.environ, **{ENV: "0"}, **extra_env)
        root = str(Path(__file__).resolve().parents[2])  # the directory holding this mechkit package
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        # it only compiles: its cyclic garbage collector stays off (``collection``)
        code = "; ".join(["import gc", "gc.disable()"]
                         + [f"import mechkit.engine.{s}; print({s!r}, flush=True)" for s in SUBJECTS])
        # run from that directory: ``python -c`` puts its working directory first on the path, and a user working in
        # a source checkout (the README's commands run in one) would otherwise warm the checkout's copy
        # unbuffered bytes: a report read is never held in a buffer ``select`` cannot see (``_reported``)
        _STATE["proc"] = subprocess.Popen([sys.executable, "-c", code], env=env, cwd=root, stdin=subprocess.DEVNULL,
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
        _STATE["done"] = set()
        _STATE["started"] = True
    except Exception:
        _STATE["proc"] = None


def started() -> bool:
    """Whether this process started a second one."""
    return _STATE.get("started", False)


def pending(subject: str) -> bool:
    """Whether the second process is to compile ``subject`` and has not reported it yet."""
    return _STATE.get("proc") is not None and subject in SUBJECTS and subject not in _STATE["done"]


def meanwhile(task) -> None:
    """Register ``task`` (no arguments; a compilation a later step of the query will likely ask for) to run while
    this process waits for the second one (nothing where there is none: the cache is warm; nothing where it is
    registered already: auto and the FFT both register the FFT's).  A task that raises is
    dropped; the step that needs it then compiles it, and reports its error, itself."""
    if _STATE.get("proc") is not None and task not in _IDLE:  # the same function registered twice runs once
        _IDLE.append(task)


def _reported(subject):
    """Whether the second process has reported ``subject`` or ended, without blocking (None: cannot tell here, e.g.
    no ``select`` on pipes)."""
    with _READING:
        proc = _STATE.get("proc")
        while proc is not None and subject not in _STATE["done"]:
            try:
                readable, _, _ = select.select([proc.stdout], [], [], 0)
            except (OSError, ValueError):
                return None
            if not readable:
                return False
            if not _take_report(proc):
                return True  # ended: ``wait`` collects it
        return True


def _take_report(proc):
    """Read one report of the second process into ``_STATE["done"]``; False where it has ended (nothing to read)."""
    line = proc.stdout.readline()
    if not line:
        return False
    _STATE["done"].add((line.decode("ascii", "replace") if isinstance(line, bytes) else line).strip())
    return True


def work_while_pending(subject: str) -> None:
    """Run the registered tasks, one at a time, while ``subject`` is not yet reported."""
    while _IDLE and _reported(subject) is False:
        task = _IDLE.popleft()
        try:
            task()
        except Exception:  # noqa: BLE001 (never fatal here: the step that needs it raises its own error)
            pass


def ready_before(subject: str) -> list[str]:
    """The subjects compiled before ``subject`` (``SUBJECTS``' order) that the second process has reported (its
    reports read without blocking): their cache is complete, so this process can load them while it waits."""
    if _STATE.get("proc") is None or subject not in SUBJECTS:
        return []
    _reported(subject)
    return [s for s in SUBJECTS[:SUBJECTS.index(subject)] if s in _STATE.get("done", ())]


def wait(subject: str) -> None:
    """Wait until the second process (if any) reports ``subject`` compiled, or ends; the subject is then in Numba's
    cache, or this process compiles it."""
    with _READING:
        proc = _STATE.get("proc")
        while proc is not None and subject not in _STATE["done"]:
            if not _take_report(proc):  # ended (done, or failed: this process compiles what is missing)
                proc.wait()
                proc.stdout.close()
                _STATE["proc"] = proc = None
