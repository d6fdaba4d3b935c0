"""Reusable privacy curves: ``Composition.curve()`` composes once (the FFT composer's composed distributions, kept:
connect the dots by default, each grid it refines to composed once; or the PRV variant's one grid);
``PrivacyCurve.epsilon``/``delta`` are lookups with the composition's own answers (exact at delta 0 and below the
mass at +inf, capped at the largest loss, one-sided lower bounds kept), because the curve is handed to the
composition as its accountant (``method=curve``).  ``save``/``load_curve`` keep a curve in a checksummed atomic file
(``persist``) with the composition's ``facts()``; a loaded curve answers through a ``SavedComposition``.
"""
from __future__ import annotations

import os

import numpy as np
from numpy.typing import ArrayLike

from . import persist
from .accountants import fft, fft_ctd
from .composition import Composition, SavedComposition
from .errors import ParameterError
from .estimate import Estimate, EstimateArray

CURVE_FORMAT = "mechkit.curve"
CURVE_VERSION = 2
#: the versions ``load_curve`` reads (1: the PRV variant's curves, before connect the dots)
READABLE_VERSIONS = (1, 2)
#: the certified FFT variants a curve can hold
VARIANTS = ("ctd", "prv")


class CurveFileError(ParameterError):
    """A saved privacy curve cannot be read: missing, truncated, corrupt, or of another format or version."""


class PrivacyCurve:
    """A composition's privacy curve, composed once (``Composition.curve``): the FFT composer's composed
    distributions of both directions (and, for one-sided pairs, of one orientation for the lower bounds).
    ``epsilon`` and ``delta`` answer as ``Composition.epsilon``/``delta`` with ``method="fft"``, this ``variant``
    and these budgets would, by lookups on the composed distributions: the same floats.  Connect the dots
    (``"ctd"``) composes its first grid at once and a finer one the first time a query needs it (as the direct
    query refines), each kept; the PRV variant (``"prv"``) composes its one grid.

    Parameters
    ----------
    composition : the ``Composition``.
    eps_error, delta_error, memory_limit : the FFT budgets (``Composition.curve``).
    variant : "ctd" (default) or "prv".

    Attributes
    ----------
    composition, eps_error, delta_error, variant, method ("fft").
    """

    method = "fft"

    def __init__(self, composition: Composition, eps_error: float, delta_error: float, memory_limit: float,
                 variant: str = "ctd") -> None:
        if variant not in VARIANTS:
            raise ParameterError(f"variant must be 'ctd' (connect the dots, default) or 'prv' (Theorem 5.5); a curve "
                                 f"holds certified bounds, so not 'fa'; got {variant!r}")
        self.composition, self.variant = composition, variant

        def composed(items):
            if variant == "prv":
                return fft.Composed(items, eps_error, delta_error, memory_limit)
            return fft_ctd.Curves(items, eps_error, delta_error, memory_limit, fft.Composed)
        self._upper = composed(composition.accounted_items)
        self._lower = composed(composition.items) if composition.one_sided else self._upper
        self.eps_error, self.delta_error = self._upper.eps_error, self._upper.delta_error

    def _pick(self, items):
        return self._lower if items is self.composition.items else self._upper

    def account_epsilon(self, items: tuple, delta: float) -> Estimate:
        """The accountant's epsilon on this curve (``Composition`` calls it for ``method=curve``).

        Parameters
        ----------
        items : the composition's items (``items``: one orientation) or its ``accounted_items``.
        delta : in (0, 1).

        Returns
        -------
        An ``Estimate`` (FFT, certified).
        """
        return self._pick(items).epsilon(delta)

    def account_delta(self, items: tuple, epsilon: ArrayLike) -> EstimateArray:
        """The accountant's delta on this curve (``Composition`` calls it for ``method=curve``).

        Parameters
        ----------
        items : as ``account_epsilon``.
        epsilon : an array of epsilons >= 0.

        Returns
        -------
        An ``EstimateArray`` (FFT, certified).
        """
        return self._pick(items).delta(np.atleast_1d(np.asarray(epsilon, float)))

    def epsilon(self, delta: float | ArrayLike) -> Estimate | EstimateArray:
        """Smallest epsilon with delta(epsilon) <= delta, as ``Composition.epsilon(delta, method="fft")``.

        Parameters
        ----------
        delta : in [0, 1), or an array of such values; certifiable above about 2 ``delta_error`` plus the mass at
            +inf (below the mass at +inf the answer is inf, exact).

        Returns
        -------
        An ``Estimate`` (an ``EstimateArray`` for an array).

        Raises
        ------
        ParameterError : delta not in [0, 1).
        NumericalLimitError : delta too close to ``delta_error`` to certify on this curve (build one with a smaller
            ``delta_error``).
        """
        return self.composition.epsilon(delta, method=self)

    def delta(self, epsilon: float | ArrayLike) -> Estimate | EstimateArray:
        """delta(epsilon), as ``Composition.delta(epsilon, method="fft")``.

        Parameters
        ----------
        epsilon : in [0, inf), or an array of such values.

        Returns
        -------
        An ``Estimate`` for a scalar epsilon, an ``EstimateArray`` for an array.

        Raises
        ------
        ParameterError : epsilon outside [0, inf).
        """
        return self.composition.delta(epsilon, method=self)

    def __repr__(self):
        return (f"PrivacyCurve({self.composition!r}, eps_error={self.eps_error:g}, delta_error={self.delta_error:g}, "
                f"variant={self.variant!r})")

    def save(self, path: str | os.PathLike) -> None:
        """Write the curve to ``path`` (checksummed, atomic; ``load_curve`` reads it back bit for bit): with connect
        the dots, every grid composed so far (the loaded curve answers the queries they answer with the same floats;
        one that needs a finer grid gets the finest certified answer the file holds, with a warning).

        Parameters
        ----------
        path : the file (replaced if it exists).
        """
        meta = {"format": CURVE_FORMAT, "version": CURVE_VERSION, "variant": self.variant, **self.composition.facts()}
        arrays = {}
        for part, composed in (("upper", self._upper), ("lower", self._lower)):
            meta[part], arr = composed.state()
            arrays.update({f"{part}_{k}": v for k, v in arr.items()})
        persist.save(path, meta, arrays)


def load_curve(path: str | os.PathLike) -> PrivacyCurve:
    """A privacy curve saved by ``PrivacyCurve.save``: its answers are those of the saved curve, bit for bit.  Its
    ``composition`` is a ``SavedComposition`` with the saved description (its mechanisms are not stored).

    Parameters
    ----------
    path : the file.

    Returns
    -------
    The ``PrivacyCurve``.

    Raises
    ------
    CurveFileError : (naming the file) truncated, corrupt, of another format or version, or inconsistent.
    FileNotFoundError : no such file.
    """
    bad = lambda why: CurveFileError(f"{os.fspath(path)!r} is not a valid mechkit privacy-curve file: {why}")  # noqa
    meta, arrays = persist.load(path, bad)
    if meta.get("format") != CURVE_FORMAT:
        raise bad("not written by PrivacyCurve.save")
    if meta.get("version") not in READABLE_VERSIONS:
        raise bad(f"format version {meta.get('version')!r}; this mechkit reads versions {READABLE_VERSIONS}")
    try:
        curve = PrivacyCurve.__new__(PrivacyCurve)
        curve.composition = SavedComposition(meta)
        curve.variant = meta.get("variant", "prv")   # version 1 held the PRV variant's curves
        if curve.variant not in VARIANTS:
            raise ValueError(f"unknown variant {curve.variant!r}")
        parts = {}
        for part in ("upper", "lower"):
            sub = {k[len(part) + 1:]: v for k, v in arrays.items() if k.startswith(part + "_")}
            parts[part] = (fft.Composed.restore(meta[part], sub) if curve.variant == "prv" else
                           fft_ctd.Curves.restore(meta[part], sub, fft.Composed))
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise bad(f"inconsistent contents ({type(exc).__name__}: {exc})") from None
    curve._upper = parts["upper"]
    curve._lower = parts["lower"] if curve.composition.one_sided else curve._upper
    curve.eps_error, curve.delta_error = curve._upper.eps_error, curve._upper.delta_error
    return curve
