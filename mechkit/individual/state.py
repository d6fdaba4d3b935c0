"""State and persistence of the individual accountants: argument checks shared by them, the checksummed
atomic state file (``save``/``load``), and the registry of persistent accountant kinds.
"""
from __future__ import annotations

import math
import numbers
import os
from typing import TypeVar

import numpy as np
from numpy.typing import ArrayLike

from .. import persist
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


def _read_state(path):
    """(meta dict, arrays dict) of a state file, verified; StateFileError naming the file otherwise."""
    bad = lambda why: StateFileError(f"{os.fspath(path)!r} is not a valid mechkit individual-accounting state "
                                     f"file: {why}")
    meta, arrays = persist.load(path, bad)
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
        meta = {"format": FORMAT, "version": FORMAT_VERSION, "kind": self._kind, "n_examples": self._n,
                "params": {k: (float(v).hex() if isinstance(v, float) else v) for k, v in self._params().items()}}
        persist.save(path, meta, self._arrays())

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
