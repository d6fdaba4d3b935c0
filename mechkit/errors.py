"""One exception hierarchy.  Every error mechkit raises on bad input is a ``MechkitError``.

``MechkitError`` subclasses ``ValueError`` so that callers who already catch ``ValueError`` keep working.
Messages name the parameter, the value received and the allowed range.
"""


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


def check_finite_real(name, value, *, low=None, high=None, low_open=True, high_open=True):
    """Return ``float(value)`` or raise ``ParameterError`` naming ``name``, the value and the range."""
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
