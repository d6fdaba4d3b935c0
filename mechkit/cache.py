"""Where mechkit keeps what it caches on disk: derivations and generated modules (``$MECHKIT_CACHE_DIR`` or
``~/.cache/mechkit``) and Numba's machine code (beside the sources, ``NUMBA_CACHE_DIR`` or the user-wide cache).

A location that cannot be used is never fatal: one ``CacheWarning`` per reason and process, then a temporary
directory (removed at exit) takes the cache; where none is writable, callers build in memory.  Imports nothing
compiled, so the engine can ask before its first ``cache=True`` function is defined.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import warnings
from pathlib import Path

from .errors import CacheWarning

#: the process's fallback cache: a temporary directory, or None for in-memory modules (set on first need)
_FALLBACK = {}
_WARNED = set()


def usable(d):
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


def fallback(reason, what="mechkit caches derivations", setting="MECHKIT_CACHE_DIR"):
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
        _FALLBACK["dir"] = d if d is not None and usable(d) else None
    return _FALLBACK["dir"]


@contextlib.contextmanager
def exclusive(d, name):
    """Hold the advisory lock ``d/name.lock`` (``fcntl.flock``) while the block runs: another process building the
    same entry waits for this one and then finds it in the cache instead of building it a second time (process
    pools and test workers bind the same new family at once).  The operating system releases the lock when its
    process ends.  Where there is no ``fcntl`` (Windows) or the lock file cannot be opened, the block runs
    unlocked: at worst both build, as before."""
    try:
        import fcntl
        f = open(Path(d) / f"{name}.lock", "a")
    except (ImportError, OSError):
        yield
        return
    with f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        except OSError:
            pass
        yield


def cache_dir():
    """The directory of the on-disk cache: the configured one where it is usable, else the process's temporary
    one (one ``CacheWarning``); None where no directory is writable (modules are then built in memory)."""
    d = _configured()
    if d is not None and usable(d):
        return d
    where = "no home directory for the default cache" if d is None else f"the cache directory {str(d)!r}"
    return fallback(f"{where} cannot be used (not a writable directory)")


def numba_cache_path(source_file):
    """The directory where Numba caches the functions of ``source_file`` (the first of its locators that applies:
    beside the file, ``NUMBA_CACHE_DIR``, the user-wide cache), or None where none applies.

    Raises
    ------
    LookupError : Numba's internals cannot be asked (another Numba version).
    """
    try:
        from numba.core import caching
        impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")
        classes = list(impl._locator_classes)
    except Exception as exc:
        raise LookupError("Numba's cache locators are not available") from exc

    def probe():
        pass

    for cls in classes:
        try:
            locator = cls.from_function(probe, str(source_file))
        except Exception:
            continue
        if locator is not None:
            return locator.get_cache_path()
    return None


def _numba_can_cache(source_file):
    """Whether Numba finds a writable cache location for functions of ``source_file``; True where Numba's internals
    cannot be asked."""
    try:
        return numba_cache_path(source_file) is not None
    except LookupError:
        return True


def source_folders(root: Path | None = None) -> list:
    """The folders of the package holding Python sources (each one's functions cached beside it by Numba's in-tree
    locator), the package's own first.

    Parameters
    ----------
    root : the package folder (default: this mechkit package).

    Returns
    -------
    A list of ``Path`` (sorted after the first; ``__pycache__`` folders left out).
    """
    root = Path(__file__).resolve().parent if root is None else Path(root)
    return [d for d in [root, *sorted(root.rglob("*"))]
            if d.is_dir() and d.name != "__pycache__" and any(d.glob("*.py"))]


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
        source_files = [next(iter(sorted(d.glob("*.py")))) for d in source_folders()]
    elif isinstance(source_files, (str, os.PathLike)):
        source_files = [source_files]
    blocked = [f for f in source_files if not _numba_can_cache(f)]
    if not blocked:
        return None
    d = fallback(f"Numba finds no writable cache location for {str(blocked[0])!r}",
                  "the compiled engine is cached", "NUMBA_CACHE_DIR")
    if d is None:
        return None
    from numba.core import config
    config.CACHE_DIR = str(d / "numba")
    return config.CACHE_DIR
