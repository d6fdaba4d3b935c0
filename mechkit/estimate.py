"""``Estimate``: a number that carries its bounds.

An ``Estimate`` is a ``float`` (so it behaves as its value in arithmetic and comparisons) with
``lower``, ``upper``, ``method``, ``certified`` and a ``details`` dict.  When ``certified`` is true,
``lower <= truth <= upper`` is guaranteed by the method's theorem.  When it is false the bounds are either
``None`` or carry no guarantee (e.g. the error estimate of ``variant="fa"``).
Arithmetic on an ``Estimate`` gives a plain ``float``: ``e + 1`` has no bounds.

Vectorised queries return an ``EstimateArray``: a float NumPy array of the values, with ``lower`` and
``upper`` arrays of the same shape, and ``method``, ``certified`` and ``details`` shared by the elements.
What keeps the bounds, and what does not:

* Indexing keeps them, element by element: an index of integers only that selects one element (``a[3]``,
  ``a[-1]``, ``a[1, 2]``) gives an ``Estimate``; every other index (slices, ``...``, ``None``, boolean masks,
  integer arrays; so ``a[-1, ...]`` too, which NumPy requires to be an array) gives an ``EstimateArray``
  whose ``lower``/``upper`` are indexed the same way.  So do iteration, ``copy`` (also ``copy.copy``,
  ``copy.deepcopy``), pickling, and the methods that only rearrange elements: ``reshape``, ``ravel``,
  ``flatten``, ``transpose``/``T``, ``squeeze``, ``swapaxes``, ``take``, ``repeat``, ``compress``, ``diagonal``.
* Arithmetic, comparisons and reductions (every ufunc: ``a + 1``, ``a * b``, ``a > 0``, ``a.max()``,
  ``a.sum()``) and every NumPy function (``np.max``, ``np.sort``, ``np.histogram``, ``np.concatenate``, ...)
  act on the values and return plain ``ndarray``s or NumPy scalars.  Their results are not certified
  intervals (bounds of ``a + b`` would need the joint law, bounds of a sort or a maximum a separate argument),
  so they carry none rather than stale ones.  ``np.asarray(a)`` is the plain values (a view).
* Writing into an ``EstimateArray`` (item assignment, in-place arithmetic such as ``a += 1``, ``a.sort()``)
  raises ``TypeError``, since the bounds would no longer describe the values: write into ``np.array(a)``,
  a plain copy.  Writes that bypass the array (through ``np.asarray(a)`` or NumPy functions such as
  ``np.copyto``) are not tracked.
* Anything else that makes a new ``EstimateArray`` without saying how its elements map onto the old one
  (e.g. ``a.astype(np.float32)``) keeps ``method`` and ``details`` but drops the bounds (``lower = upper =
  None``, ``certified = False``).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike


def clamp_into(value: float | ArrayLike, lower: float | ArrayLike,
               upper: float | ArrayLike) -> tuple[float, bool] | tuple[np.ndarray, np.ndarray]:
    """An approximation moved into its certified interval, and whether it had to be (elementwise).

    An estimate outside ``[lower, upper]`` is known to be wrong; the nearest bound is closer to the truth.
    The composers flag such answers as not reliable.

    Parameters
    ----------
    value : the approximation(s).
    lower, upper : the certified bounds (broadcast against ``value``).

    Returns
    -------
    (clamped value, moved): a float and a bool for scalars, else two arrays.
    """
    v = np.asarray(value, dtype=float)
    out = np.minimum(np.maximum(v, lower), upper)
    moved = out != v
    if np.ndim(out) == 0:
        return float(out), bool(moved)
    return out, moved


def reason_flags(why: list, names: tuple) -> dict:
    """A vectorised answer's reasons as ``details`` entries: {reason: [whether it is the point's reason, per
    point]} for the reasons among ``names`` that some point has.

    Parameters
    ----------
    why : a reason (one of ``names``) or None per point.
    names : the accountant's reasons, in the order its details list them.

    Returns
    -------
    A dict of lists of booleans (empty where no point has a reason).
    """
    return {k: [w == k for w in why] for k in names if k in why}


class Estimate(float):
    """A privacy answer (an epsilon or a delta): a ``float`` that carries its bounds and where it came from.

    It is the estimate itself in arithmetic, comparisons and number formats (``float(est)``, ``est < 3``,
    ``f"{est:.3f}"``; arithmetic gives a plain ``float``; ``print(est)`` shows its repr, with the interval), and
    carries

    * ``lower``, ``upper``: the interval around it (None where the method gives none);
    * ``method``: the accountant that answered ("fft", "spa", "edgeworth", "rdp", "gdp", ...);
    * ``certified``: whether ``lower <= truth <= upper`` is guaranteed by the method's theorem;
    * ``details``: method-specific information (e.g. the Renyi order of "rdp", ``details["reliable"]`` of an
      expansion).

    Which number to trust: when ``certified`` is true, ``upper`` is a guaranteed upper bound on the true epsilon
    (or delta); report it where a guarantee is needed, and the estimate where the closest value is wanted.  When
    ``certified`` is false ("gdp", ``variant="fa"``) the bounds, if any, guarantee nothing.  The repr shows the
    interval and says so where the answer says little (``note=...``).  It pickles and copies with its bounds
    (see the module docstring).

    Parameters
    ----------
    value : the answer.
    lower, upper : its bounds (None where the method gives none).
    method : the accountant that answered, e.g. "fft".
    certified : whether ``lower <= truth <= upper`` is guaranteed.
    details : method-specific information (copied into a new dict).
    """

    def __new__(cls, value: float, lower: float | None = None, upper: float | None = None, method: str = "",
                certified: bool = False, details: dict | None = None) -> Estimate:
        obj = super().__new__(cls, value)
        obj.lower = None if lower is None else float(lower)
        obj.upper = None if upper is None else float(upper)
        obj.method = method
        obj.certified = bool(certified)
        obj.details = dict(details or {})
        return obj

    @property
    def value(self) -> float:
        """The answer as a plain float."""
        return float(self)

    def __repr__(self):
        parts = [f"{float(self):.10g}"]
        if self.lower is not None:
            parts.append(f"lower={self.lower:.10g}")
        if self.upper is not None:
            parts.append(f"upper={self.upper:.10g}")
        parts.append(f"method={self.method!r}")
        if not self.certified:
            parts.append("certified=False")
        weak = weakness(self)
        if weak:
            parts.append(f"note={weak!r}")
        return f"Estimate({', '.join(parts)})"

    def __reduce__(self):
        return (type(self), (float(self), self.lower, self.upper, self.method, self.certified, self.details))


def weakness(est: Estimate | EstimateArray) -> str:
    """Why an answer says little, or '' where it does not: a certified interval wider than the estimate itself (at
    any element of an array), or an expansion flagged outside its regime (``details["reliable"] is False``).

    Parameters
    ----------
    est : an ``Estimate`` or ``EstimateArray``.

    Returns
    -------
    The reason in a few words, or ''.
    """
    why = []
    if est.details.get("reliable") is False:
        why.append("the expansion is outside its regime (details['reliable'] is False)")
    if est.certified and est.lower is not None and est.upper is not None:
        if isinstance(est, Estimate):  # a scalar: the same arithmetic without NumPy's ~5 us
            wide = est.upper - est.lower > abs(float(est))
        else:
            with np.errstate(invalid="ignore"):
                width = np.asarray(est.upper, float) - np.asarray(est.lower, float)
                wide = np.any(width > np.abs(np.asarray(est, float)))
        if wide:
            why.append("the certified interval is wider than the estimate")
    return "; ".join(why)


_NO_WRITE = ("an EstimateArray is not written in place (its lower/upper would no longer describe its values); "
             "np.array(a) is a plain writable copy, and a + 1 etc. give plain arrays")


def _plain(x):
    """``x`` with every ``EstimateArray`` inside (also in lists, tuples and dicts) replaced by its plain values."""
    if isinstance(x, EstimateArray):
        return x.view(np.ndarray)
    if type(x) in (list, tuple):
        return type(x)(_plain(y) for y in x)
    if type(x) is dict:
        return {k: _plain(v) for k, v in x.items()}
    return x


def _bound(b, shape):
    if b is None:
        return None
    return np.array(np.broadcast_to(np.asarray(b, dtype=float), shape))


class EstimateArray(np.ndarray):
    """Values of a vectorised query, with ``lower`` and ``upper`` arrays of the same shape (see the module
    docstring for which operations keep the bounds), and ``method``, ``certified`` and ``details`` shared by the
    elements, as an ``Estimate``'s.  Its repr shows the values, then their ``lower`` and ``upper`` arrays (long
    arrays summarised as NumPy summarises them).

    Parameters
    ----------
    values : the answers (array-like, copied as float64).
    lower, upper : their bounds, broadcast to the shape of ``values`` (None where the method gives none).
    method : the accountant that answered.
    certified : whether every element's ``lower <= truth <= upper`` is guaranteed.
    details : method-specific information shared by the elements (copied into a new dict).
    """

    def __new__(cls, values: ArrayLike, lower: ArrayLike | None, upper: ArrayLike | None, method: str = "",
                certified: bool = False, details: dict | None = None) -> EstimateArray:
        v = np.array(values, dtype=float)
        return cls._wrap(v, _bound(lower, v.shape), _bound(upper, v.shape), method, bool(certified),
                         dict(details or {}))

    @classmethod
    def _wrap(cls, values, lower, upper, method, certified, details):
        """A view of the plain array ``values`` with the given bounds (same shape, or None) and metadata."""
        obj = values.view(cls)
        obj.lower, obj.upper = lower, upper
        obj.method, obj.certified, obj.details = method, certified, details
        return obj

    def _like(self, values, lower, upper):
        return self._wrap(values, lower, upper, self.method, self.certified, self.details)

    def __array_finalize__(self, obj):
        # reached by views and copies NumPy makes itself; the paths that know how elements map (indexing and the
        # methods below) set lower/upper afterwards
        self.method = getattr(obj, "method", "")
        self.details = getattr(obj, "details", None)
        if self.details is None:
            self.details = {}
        lo, up = getattr(obj, "lower", None), getattr(obj, "upper", None)
        if lo is not None and self._same_elements(obj):
            self.lower, self.upper, self.certified = lo, up, getattr(obj, "certified", False)
        else:
            self.lower = self.upper = None
            self.certified = False

    def _same_elements(self, obj):
        a, b = self.__array_interface__, obj.__array_interface__
        return a["data"][0] == b["data"][0] and self.shape == obj.shape and self.strides == obj.strides \
            and self.dtype == obj.dtype

    @property
    def value(self) -> np.ndarray:
        """The answers as a plain ndarray (a view)."""
        return self.view(np.ndarray)

    # ----- indexing: bounds indexed like the values
    def __getitem__(self, key):
        key = _plain(key)
        v = self.view(np.ndarray)[key]
        lo = None if self.lower is None else self.lower[key]
        up = None if self.upper is None else self.upper[key]
        if not isinstance(v, np.ndarray):  # NumPy gives a scalar exactly for an all-integer index of one element
            return Estimate(v, lo, up, self.method, self.certified, self.details)
        return self._like(v, lo, up)

    def _rearranged(self, name, *args, **kwargs):
        def f(a):
            return None if a is None else getattr(np.ndarray, name)(a, *_plain(args), **_plain(kwargs))
        return self._like(f(self.view(np.ndarray)), f(self.lower), f(self.upper))

    def copy(self, order: str = "C") -> EstimateArray:
        """A copy, with copies of the bounds.

        Parameters
        ----------
        order : the memory layout, as for ``ndarray.copy``.
        """
        return self._rearranged("copy", order)

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        import copy
        out = self.copy()
        out.details = copy.deepcopy(self.details, memo)
        return out

    def reshape(self, *args: Any, **kwargs: Any) -> EstimateArray:
        """``ndarray.reshape``, applied alike to the bounds.

        Parameters
        ----------
        *args, **kwargs : as for ``ndarray.reshape``.
        """
        return self._rearranged("reshape", *args, **kwargs)

    def ravel(self, *args: Any, **kwargs: Any) -> EstimateArray:
        """``ndarray.ravel``, applied alike to the bounds.

        Parameters
        ----------
        *args, **kwargs : as for ``ndarray.ravel``.
        """
        return self._rearranged("ravel", *args, **kwargs)

    def flatten(self, *args: Any, **kwargs: Any) -> EstimateArray:
        """``ndarray.flatten``, applied alike to the bounds.

        Parameters
        ----------
        *args, **kwargs : as for ``ndarray.flatten``.
        """
        return self._rearranged("flatten", *args, **kwargs)

    def transpose(self, *args: Any) -> EstimateArray:
        """``ndarray.transpose``, applied alike to the bounds.

        Parameters
        ----------
        *args : as for ``ndarray.transpose``.
        """
        return self._rearranged("transpose", *args)

    @property
    def T(self) -> EstimateArray:
        """The transpose, with the bounds transposed."""
        return self.transpose()

    def squeeze(self, *args: Any, **kwargs: Any) -> EstimateArray:
        """``ndarray.squeeze``, applied alike to the bounds.

        Parameters
        ----------
        *args, **kwargs : as for ``ndarray.squeeze``.
        """
        return self._rearranged("squeeze", *args, **kwargs)

    def swapaxes(self, *args: Any) -> EstimateArray:
        """``ndarray.swapaxes``, applied alike to the bounds.

        Parameters
        ----------
        *args : as for ``ndarray.swapaxes``.
        """
        return self._rearranged("swapaxes", *args)

    def take(self, *args: Any, **kwargs: Any) -> EstimateArray:
        """``ndarray.take``, applied alike to the bounds.

        Parameters
        ----------
        *args, **kwargs : as for ``ndarray.take``.
        """
        return self._rearranged("take", *args, **kwargs)

    def repeat(self, *args: Any, **kwargs: Any) -> EstimateArray:
        """``ndarray.repeat``, applied alike to the bounds.

        Parameters
        ----------
        *args, **kwargs : as for ``ndarray.repeat``.
        """
        return self._rearranged("repeat", *args, **kwargs)

    def compress(self, *args: Any, **kwargs: Any) -> EstimateArray:
        """``ndarray.compress``, applied alike to the bounds.

        Parameters
        ----------
        *args, **kwargs : as for ``ndarray.compress``.
        """
        return self._rearranged("compress", *args, **kwargs)

    def diagonal(self, *args: Any, **kwargs: Any) -> EstimateArray:
        """``ndarray.diagonal``, applied alike to the bounds.

        Parameters
        ----------
        *args, **kwargs : as for ``ndarray.diagonal``.
        """
        return self._rearranged("diagonal", *args, **kwargs)

    # ----- computing: plain results (not certified intervals)
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if any(isinstance(o, EstimateArray) for o in kwargs.get("out", None) or ()):
            raise TypeError(_NO_WRITE)
        return getattr(ufunc, method)(*_plain(inputs), **_plain(kwargs))

    def __array_function__(self, func, types, args, kwargs):
        return func(*_plain(args), **_plain(kwargs))

    def __setitem__(self, key, value):
        raise TypeError(_NO_WRITE)

    def sort(self, *args: Any, **kwargs: Any) -> None:
        """Refused: an ``EstimateArray`` is not written in place (sort ``np.array(a)``, a plain copy).

        Parameters
        ----------
        *args, **kwargs : ignored.

        Raises
        ------
        TypeError : always.
        """
        raise TypeError(_NO_WRITE)

    # ----- pickling: NumPy's own state plus the bounds and metadata
    def __reduce__(self):
        fn, args, state = super().__reduce__()
        return fn, args, (state, (self.lower, self.upper, self.method, self.certified, self.details))

    def __setstate__(self, state):
        nd_state, (self.lower, self.upper, self.method, self.certified, self.details) = state
        super().__setstate__(nd_state)

    def __repr__(self):
        name = type(self).__name__
        pad = " " * (len(name) + 1)

        def show(a, prefix):
            return np.array2string(np.asarray(a), separator=", ", prefix=pad + prefix)

        lines = [show(self.view(np.ndarray), "")]
        if self.lower is not None:
            lines.append("lower=" + show(self.lower, "lower="))
        if self.upper is not None:
            lines.append("upper=" + show(self.upper, "upper="))
        lines.append(f"method={self.method!r}" + ("" if self.certified else ", certified=False"))
        return f"{name}(" + (",\n" + pad).join(lines) + ")"
