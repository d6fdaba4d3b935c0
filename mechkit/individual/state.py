"""State and persistence of the individual accountants: argument checks shared by them, the checksummed
atomic state file (``save``/``load``), and the registry of persistent accountant kinds.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import numbers
import os
import tempfile
from pathlib import Path
from typing import TypeVar

import numpy as np
from numpy.typing import ArrayLike

from ..errors import MechkitError, ParameterError, check_finite_real

FORMAT = "mechkit.individual"


FORMAT_VERSION = 1


class StateFileError(MechkitError):
    """A saved accountant state cannot be read: missing parts, truncated, corrupt or of another kind/version."""


def check_n(n_examples: int) -> int:
    """``n_examples`` as an int >= 1 (booleans refused), else a ``ParameterError``."""
    if isinstance(n_examples, bool) or not isinstance(n_examples, numbers.Integral) or int(n_examples) < 1:
        raise ParameterError(f"n_examples must be a positive integer (>= 1), got {n_examples!r}")
    return int(n_examples)


def check_delta(delta: float) -> float:
    """``delta`` as a float in (0, 1), else a ``ParameterError``."""
    return check_finite_real("delta", delta, low=0.0, high=1.0)


#: the largest per-step or total GDP parameter accepted (its square must not overflow; epsilon would be ~1e200)
MU_MAX = 1e100


def check_array(name: str, values: ArrayLike, *, length: int | None = None, allow_scalar: bool = False,
                high: float | None = MU_MAX) -> np.ndarray:
    """float64 array of finite values in [0, high], or ParameterError naming ``name`` and the allowed range."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "iuf":
        raise ParameterError(f"{name} must be an array of real numbers in [0, inf), got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if length is not None and (arr.ndim != 1 or arr.shape[0] != length):
        raise ParameterError(f"{name} must be a 1-D array of length {length} (one entry per example), "
                             f"got shape {arr.shape}")
    if arr.ndim == 0 and not allow_scalar:
        raise ParameterError(f"{name} must be an array, got a scalar")
    if arr.size:
        lo, hi = arr.min(), arr.max()  # NaN propagates into both
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo < 0 or (high is not None and hi > high):
            flat = arr.ravel()
            bad = np.flatnonzero(~np.isfinite(flat) | (flat < 0) | (flat > (np.inf if high is None else high)))[0]
            where = f" at index {np.unravel_index(bad, arr.shape)}" if arr.ndim > 1 else (
                f" at index {bad}" if arr.ndim == 1 else "")
            rng = "[0, inf) (finite)" if high is None else f"[0, {high:g}]"
            raise ParameterError(f"{name} must lie in {rng}, got {flat[bad]!r}{where}")
    return arr


def _digest(arrays, meta_bytes):
    h = hashlib.sha256()
    h.update(meta_bytes)
    for name in sorted(arrays):
        a = np.asarray(arrays[name], order="C")
        h.update(f"\0{name}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _atomic_write(path, data):
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable (best effort: not every platform can open a directory)
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def _read_state(path):
    """(meta dict, arrays dict) of a state file, verified; StateFileError naming the file otherwise."""
    data = Path(path).read_bytes()  # a missing file raises FileNotFoundError, which names it
    bad = lambda why: StateFileError(f"{os.fspath(path)!r} is not a valid mechkit individual-accounting state "
                                     f"file: {why}")
    try:
        z = np.load(io.BytesIO(data), allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise ValueError("not an npz archive")
        with z:
            arrays = {name: z[name] for name in z.files}
    except Exception as exc:  # noqa: BLE001 -- any failure to parse untrusted bytes means a bad file
        raise bad(f"truncated or corrupt ({type(exc).__name__}: {exc})") from None
    for key in ("meta", "sha256"):
        if key not in arrays:
            raise bad(f"the {key!r} record is missing")
    meta_bytes = arrays.pop("meta").tobytes()
    stored = arrays.pop("sha256").tobytes().decode("ascii", "replace")
    if _digest(arrays, meta_bytes) != stored:
        raise bad("checksum mismatch (the file is corrupt)")
    try:
        meta = json.loads(meta_bytes.decode("utf-8"))
    except ValueError as exc:
        raise bad(f"unreadable header ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise bad("not written by mechkit.individual")
    if meta.get("version") != FORMAT_VERSION:
        raise bad(f"format version {meta.get('version')!r}; this mechkit reads version {FORMAT_VERSION}")
    return meta, arrays, bad


#: kind -> class of every persistent accountant (filled by the modules that define them)
KINDS = {}


def load(path: str | os.PathLike) -> Persistent:
    """Restore any accountant saved by ``.save(path)`` (the class is read from the file).

    Parameters
    ----------
    path : the state file.

    Returns
    -------
    A new accountant of the saved class, continuing bit-identically.

    Raises
    ------
    StateFileError : the file is truncated, corrupt, of an unknown kind or format version, or inconsistent.
    FileNotFoundError : no such file.
    """
    meta, arrays, bad = _read_state(path)
    cls = KINDS.get(meta.get("kind"))
    if cls is None:
        raise bad(f"unknown accountant kind {meta.get('kind')!r}")
    return cls._build(meta, arrays, bad)


_P = TypeVar("_P", bound="Persistent")


class Persistent:
    """N examples and a step count, saved and restored atomically in a checksummed file (``save``/``load``)."""

    _kind = None

    # ----- views
    @property
    def n_examples(self) -> int:
        """The number of examples N."""
        return self._n

    @property
    def steps(self) -> int:
        """Number of ``step`` calls so far."""
        return self._steps

    # ----- persistence
    def _params(self):
        return {}

    def save(self, path: str | os.PathLike) -> None:
        """Write the state to ``path`` atomically (temp file in the same directory, fsync, os.replace).

        Parameters
        ----------
        path : the state file (replaced if it exists).
        """
        arrays = {k: np.asarray(v, order="C") for k, v in self._arrays().items()}
        meta = {"format": FORMAT, "version": FORMAT_VERSION, "kind": self._kind, "n_examples": self._n,
                "params": {k: (float(v).hex() if isinstance(v, float) else v) for k, v in self._params().items()}}
        meta_bytes = json.dumps(meta, sort_keys=True).encode("utf-8")
        sha = _digest(arrays, meta_bytes)
        buf = io.BytesIO()
        np.savez(buf, meta=np.frombuffer(meta_bytes, dtype=np.uint8),
                 sha256=np.frombuffer(sha.encode("ascii"), dtype=np.uint8), **arrays)
        _atomic_write(path, buf.getvalue())

    @classmethod
    def load(cls: type[_P], path: str | os.PathLike) -> _P:
        """A new accountant of this class restored from ``path``.

        Parameters
        ----------
        path : a file written by ``save``.

        Raises
        ------
        StateFileError : (naming the file) it is not a valid state file of this class.
        FileNotFoundError : no such file.
        """
        return cls._build(*_read_state(path))

    @classmethod
    def _build(cls, meta, arrays, bad):
        if meta.get("kind") != cls._kind:
            raise bad(f"it holds a {meta.get('kind')!r}, not a {cls._kind!r}")
        n = meta.get("n_examples")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise bad(f"n_examples = {n!r}")
        params = {}
        try:
            for k, v in dict(meta.get("params") or {}).items():
                params[k] = float.fromhex(v) if k not in cls._raw_params else v
        except (TypeError, ValueError) as exc:
            raise bad(f"unreadable parameters ({exc})") from None
        try:
            need = cls._array_specs(n, params)
        except MechkitError as exc:
            raise bad(f"inconsistent parameters ({exc})") from None
        for name, (dtypes, shape) in need.items():
            a = arrays.get(name)
            if a is None:
                raise bad(f"the {name!r} array is missing")
            dtypes = tuple(np.dtype(t) for t in (dtypes if isinstance(dtypes, tuple) else (dtypes,)))
            if a.dtype not in dtypes or a.shape != shape:
                raise bad(f"the {name!r} array has dtype {a.dtype} and shape {a.shape}, expected "
                          f"{' or '.join(str(t) for t in dtypes)} and {shape}")
        spent = arrays.get("spent_sq")
        if spent is not None and (not np.all(np.isfinite(spent)) or np.any(spent < 0)):
            raise bad("spent_sq holds negative or non-finite values")
        try:
            obj = cls._restore(n, params, arrays)
        except (MechkitError, KeyError, TypeError, ValueError) as exc:
            raise bad(f"inconsistent parameters ({exc})") from None
        return obj

    _raw_params = ()

    @classmethod
    def _array_specs(cls, n, params):
        """{name: (dtype or tuple of dtypes, shape)} of the arrays a state file of this kind must hold."""
        raise NotImplementedError
