"""One exception hierarchy.  Every error mechkit raises on bad input is a ``MechkitError``.

``MechkitError`` subclasses ``ValueError`` so that callers who already catch ``ValueError`` keep working.
Messages name the parameter, the value received and the allowed range.
"""
from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

import numpy as np
from numpy.typing import ArrayLike


class MechkitError(ValueError):
    """Base class of every error raised by mechkit on bad input or an impossible request."""


class SpecificationError(MechkitError):
    """The densities, variable or domain of a mechanism family are not usable."""


class ParameterError(MechkitError):
    """A parameter is unknown, missing, non-finite or outside its allowed range."""


class DerivationError(MechkitError):
    """The symbolic or numeric derivation could not produce a required object."""


class NumericalLimitError(MechkitError):
    """The requested answer cannot be certified in double precision with the given settings."""


class MechkitWarning(UserWarning):
    """An answer that stands but says little: a certified interval wider than the estimate itself, or an expansion
    flagged outside its regime (``details["reliable"] is False``).  The command line prints it on one line."""


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Inside: no ``MechkitWarning``, for a search's own intermediate queries (calibration, a trade-off grid), whose
    final answer still speaks for itself."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MechkitWarning)
        yield


class CacheWarning(UserWarning):
    """The on-disk cache cannot be used (e.g. an unwritable ``MECHKIT_CACHE_DIR``); a temporary one is used instead."""


def check_finite_real(name: str, value: object, *, low: float | None = None, high: float | None = None,
                      low_open: bool = True, high_open: bool = True) -> float:
    """``float(value)`` if it is a finite real number in the range, else a ``ParameterError``.

    Parameters
    ----------
    name : the parameter's name, for the message.
    value : anything ``float()`` accepts (numeric strings included; see ``check_real``).
    low, high : the ends of the range (None: unbounded).
    low_open, high_open : whether each end is excluded (default: both excluded).

    Returns
    -------
    The value as a float.

    Raises
    ------
    ParameterError : naming ``name``, the value and the range.
    """
    import math

    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a real number, got {value!r}") from None
    if not math.isfinite(v):
        raise ParameterError(f"{name} must be finite, got {value!r}")
    lo_ok = True if low is None else (v > low if low_open else v >= low)
    hi_ok = True if high is None else (v < high if high_open else v <= high)
    if not (lo_ok and hi_ok):
        lb = "(" if low_open else "["
        rb = ")" if high_open else "]"
        lo_s = "-inf" if low is None else repr(low)
        hi_s = "inf" if high is None else repr(high)
        raise ParameterError(f"{name} must lie in {lb}{lo_s}, {hi_s}{rb}, got {value!r}")
    return v


def _not_a_number(name, value):
    return ParameterError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")


def check_real(name: str, value: object, **bounds: float | bool | None) -> float:
    """``check_finite_real`` for a value that must *be* a number.

    Parameters
    ----------
    name : the parameter's name, for the message.
    value : a real number; strings (even numeric ones such as ``'1.0'``), bytes and booleans are refused.
    **bounds : ``low``, ``high``, ``low_open``, ``high_open`` as for ``check_finite_real``.

    Returns
    -------
    The value as a float.

    Raises
    ------
    ParameterError : naming ``name``, the value and the range.
    """
    if isinstance(value, (str, bytes, bool, np.bool_)):
        raise _not_a_number(name, value)
    return check_finite_real(name, value, **bounds)


def real_array(name: str, value: object) -> np.ndarray:
    """``value`` (a real number or an array-like of them) as a float64 NumPy array.

    Ranges (and NaN) are the caller's to check.

    Parameters
    ----------
    name : the parameter's name, for the message.
    value : a real number or an array-like of them.

    Returns
    -------
    A float64 array of the same shape (0-d for a scalar).

    Raises
    ------
    ParameterError : strings, bytes, booleans, complex numbers, ``None``, ragged nesting or an empty array.
    """
    if isinstance(value, (str, bytes)):
        raise _not_a_number(name, value)
    try:
        arr = np.asarray(value)
    except Exception:  # ragged nesting and the like
        raise ParameterError(f"{name} must be a real number or an array of real numbers, got {value!r}") from None
    if arr.dtype.kind == "O":
        if any(v is None or isinstance(v, (str, bytes, bool, np.bool_)) for v in arr.ravel()):
            raise ParameterError(f"{name} must be a real number or an array of real numbers, got {value!r}")
        try:
            arr = arr.astype(float)
        except (TypeError, ValueError):
            raise ParameterError(f"{name} must be a real number or an array of real numbers, got {value!r}") from None
    if arr.dtype.kind not in "iuf":
        raise ParameterError(f"{name} must be a real number or an array of real numbers, got {value!r}")
    if arr.size == 0:
        raise ParameterError(f"{name} is empty: pass a number or a non-empty array of numbers")
    return arr.astype(float)


def check_eps_array(epsilon: float | ArrayLike) -> np.ndarray:
    """``epsilon`` as a 1-D float array of values in (-inf, inf]: the hockey-stick divergence is defined at every
    real epsilon (at a negative one it is at least 1 - e^epsilon).

    Parameters
    ----------
    epsilon : a real number or an array-like of them.

    Returns
    -------
    The values as a float64 array of at least one dimension.

    Raises
    ------
    ParameterError : a value that is not real, nan or -inf, or an empty array.
    """
    eps = np.atleast_1d(real_array("epsilon", epsilon))
    bad = np.isnan(eps) | (eps == -np.inf)
    if np.any(bad):
        raise ParameterError(f"epsilon must lie in (-inf, inf], got {eps[bad][0]!r}")
    return eps
