"""Sweeps: one privacy query over a grid of parameters, in this process or fanned out on any
``concurrent.futures.Executor`` (a process pool, a thread pool, dask.distributed's ``Client.get_executor()``).

``mk.sweep(build, grid, delta=1e-5)`` calls ``build(**point)`` at every point of the grid (a ``Composition`` or a
``Mechanism``) and asks it ``epsilon(delta)`` (or ``delta(epsilon)``).  With an executor each point is one task:
``build``, the point and the options are pickled to the worker, which builds the composition there (its families'
derivations come from the worker's cache directory, ``MECHKIT_CACHE_DIR``, or are derived once per worker), and
only the ``Estimate`` comes back.  The worker runs the same code on the same inputs, so the answers are the same
doubles as a serial sweep's, given the same library versions and BLAS threading: the FFT accountant's dot products
go through BLAS, whose rounding depends on its thread count (dask's workers set ``OPENBLAS_NUM_THREADS=1`` by
default, which moves the FFT's answers by an ulp or so against a process that runs BLAS on several threads).
Threads share this process's caches; the compiled kernels hold the GIL, so CPU-bound sweeps gain from processes,
not threads.
"""
from __future__ import annotations

import itertools
import math
import pickle
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor

import numpy as np

from .errors import MechkitError, MechkitWarning, ParameterError, check_real, quiet
from .estimate import Estimate, weakness
from .progress import check_executor, run_in_order, setting, working

#: what ``SweepResult.to_rows`` adds to a point's keys
COLUMNS = ("value", "lower", "upper", "method", "certified")

#: how ``errors=`` treats a ``MechkitError`` at a point
ERRORS = ("raise", "keep")

#: points named in a message before "and n more"
SHOWN = 5


def _describe(point):
    return ", ".join(f"{k}={v!r}" for k, v in point.items())


def _at_point(point, exc):
    """``exc`` again, of the same class where it can be made from a message, naming the point it was raised at."""
    text = f"at the point {{{_describe(point)}}} of the sweep: {exc}"
    try:
        new = type(exc)(text)
    except Exception:  # noqa: BLE001 -- a subclass with another constructor: the base class carries the message
        new = MechkitError(text)
    return new


def _values(key, values):
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise ParameterError(f"grid[{key!r}] must be a 1-D list of values, got an array of shape {values.shape}")
        values = values.tolist()
    if not isinstance(values, (list, tuple, range)):
        raise ParameterError(f"grid[{key!r}] must be a list of values (a list, tuple, range or 1-D array), got "
                             f"{type(values).__name__} {values!r}")
    if len(values) == 0:
        raise ParameterError(f"grid[{key!r}] is empty: give it at least one value")
    return list(values)


def _check_keys(where, keys):
    for k in keys:
        if not isinstance(k, str):
            raise ParameterError(f"{where} must have parameter names (strings) as keys, got {k!r}")


def grid_points(grid: Mapping[str, Sequence] | Sequence[Mapping[str, object]]) -> list[dict]:
    """The points of a grid, in sweep order.

    Parameters
    ----------
    grid : a dict of lists, name -> values (the cartesian product in the order of the dict's keys, the last key
        varying fastest, as ``itertools.product``), or a list of dicts (the points themselves, in order).  Values
        may be lists, tuples, ranges or 1-D NumPy arrays.

    Returns
    -------
    A list of dicts, one per point (name -> value).

    Raises
    ------
    ParameterError : a grid that is neither, empty (no keys, a key without values, no points), a key that is not a
        string, or values that are not a list.
    """
    if isinstance(grid, Mapping):
        if not grid:
            raise ParameterError("grid is empty: give a dict of lists, e.g. {'sigma': [0.8, 1.0]}, or a list of dicts")
        _check_keys("grid", grid)
        columns = [_values(k, v) for k, v in grid.items()]
        return [dict(zip(grid, combo)) for combo in itertools.product(*columns)]
    if isinstance(grid, (list, tuple)):
        if not grid:
            raise ParameterError("grid is an empty list of points: give at least one dict of parameter values")
        for i, point in enumerate(grid):
            if not isinstance(point, Mapping):
                raise ParameterError(f"grid[{i}] must be a dict of parameter values, got {type(point).__name__} "
                                     f"{point!r}")
            _check_keys(f"grid[{i}]", point)
        return [dict(point) for point in grid]
    raise ParameterError(f"grid must be a dict of lists (name -> values) or a list of dicts (the points), got "
                         f"{type(grid).__name__} {grid!r}")


def _query(delta, epsilon):
    """(query, the given level): ("epsilon", delta) or ("delta", epsilon), checked."""
    if (delta is None) == (epsilon is None):
        raise ParameterError("give exactly one of delta (each point answers epsilon(delta)) and epsilon (each point "
                             "answers delta(epsilon)), not both, not neither")
    if delta is not None:
        return "epsilon", check_real("delta", delta, low=0.0, high=1.0, low_open=False)
    return "delta", check_real("epsilon", epsilon, low=0.0, low_open=False)


def _check_method(method, query, options):
    """The method's name and options checked as a query checks them, before any point is built."""
    from .accountants.registry import ACCOUNTANTS, check_options

    if not isinstance(method, str) or method not in ACCOUNTANTS:
        raise ParameterError(f"method must be one of {sorted(ACCOUNTANTS)} (a sweep takes a method by name), got "
                             f"{method!r}")
    epsilon_fn, delta_fn = ACCOUNTANTS[method]
    check_options(method, query, epsilon_fn if query == "epsilon" else delta_fn, options)


def _check_portable(executor, build, points):
    """Where the executor is a process pool: ``build`` and the points pickle (a lambda or a local function does
    not), said before any task is submitted."""
    if not isinstance(executor, ProcessPoolExecutor):
        return
    for what, obj in (("build", build), ("the grid's values", points)):
        try:
            pickle.dumps(obj)
        except Exception as exc:  # noqa: BLE001 -- whatever pickle refuses
            raise ParameterError(f"{what} must pickle to run on a process pool ({type(exc).__name__}: {exc}); use "
                                 "a module-level function or a functools.partial of one, not a lambda or a local "
                                 "function") from None


def evaluate(build: Callable[..., object], point: dict, query: str, level: float, method: str, options: dict,
             keep: bool = False) -> Estimate | MechkitError:
    """One point of a sweep (what each task runs, in this process or on a worker): ``build(**point)`` asked
    ``query`` at ``level``.

    Parameters
    ----------
    build : the sweep's ``build``.
    point : its keyword arguments.
    query : "epsilon" (then ``level`` is delta) or "delta" (``level`` is epsilon).
    level : the delta or epsilon given.
    method, options : as the query takes them.
    keep : return a ``MechkitError`` raised at the point instead of raising it.

    Returns
    -------
    The ``Estimate`` (or, with ``keep``, the ``MechkitError``).

    Raises
    ------
    ParameterError : ``build`` returned neither a ``Composition`` nor a ``Mechanism``.
    MechkitError : whatever the build or the query raises (unless ``keep``).
    """
    from .composition import Composition, compose
    from .laws.family import Mechanism

    try:
        obj = build(**point)
        if isinstance(obj, Mechanism):
            obj = compose(obj)
        if not isinstance(obj, Composition):
            raise ParameterError(f"build must return a Composition or a Mechanism, got {type(obj).__name__}")
        if threading.current_thread() is threading.main_thread():
            with quiet():  # the sweep warns once, naming the points (a warnings filter is not thread-safe)
                return getattr(obj, query)(level, method=method, **options)
        return getattr(obj, query)(level, method=method, **options)
    except MechkitError as exc:
        if keep:
            return exc
        raise


def _run(executor, args, points, keep):
    """The answers of every point, in grid order: serially, or one task per point on ``executor``."""
    calls = [((args[0], point, *args[1:]), {"keep": keep}) for point in points]
    return run_in_order(executor, evaluate, calls, lambda i, exc: _at_point(points[i], exc))


def sweep(build: Callable[..., object], grid: Mapping[str, Sequence] | Sequence[Mapping[str, object]], *,
          delta: float | None = None, epsilon: float | None = None, method: str = "auto",
          executor: Executor | None = None, errors: str = "raise", progress: bool = True,
          **options: object) -> SweepResult:
    """One privacy query at every point of a grid of parameters, serially or on an executor (module docstring).

    Parameters
    ----------
    build : a callable taking one point's values by keyword and returning a ``Composition`` or a ``Mechanism``
        (asked as ``mk.compose(m)``), e.g. ``lambda noise_multiplier, steps: mk.dpsgd(noise_multiplier=
        noise_multiplier, sampling_rate=0.01, steps=steps)``.  On a process pool (or a cluster whose workers are
        processes) it must pickle: a module-level function, or a ``functools.partial`` of one, not a lambda or a
        local function (dask pickles lambdas too; Python's process pools do not).
    grid : a dict of lists, name -> values: the cartesian product, in the order of the dict's keys with the last
        key varying fastest (as ``itertools.product``); or a list of dicts, the points themselves.
    delta : give it for epsilon(delta) at every point, in [0, 1).
    epsilon : give it (instead of delta) for delta(epsilon) at every point, in [0, inf).
    method : the query's method by name (default "auto"; ``Composition.epsilon``).
    executor : a ``concurrent.futures.Executor`` (``ProcessPoolExecutor``, ``ThreadPoolExecutor``,
        ``dask.distributed.Client(...).get_executor()``...): one task per point, the answers bit-identical to a
        serial sweep's (on workers with the same library versions and BLAS threading: module docstring).  None
        (default): serially, in this process.
    errors : "raise" (default): a ``MechkitError`` at a point is raised again here, of the same class, its message
        naming the point (the points not yet started are cancelled); "keep": the error is kept in place of that
        point's estimate (``SweepResult.failed``; its value NaN) and the sweep goes on.  Other exceptions (a bug in
        ``build``, a broken worker) are raised as they are either way.
    progress : False: no progress line (``mechkit.progress``: one line on stderr if the sweep still runs after
        ``progress.DELAY`` seconds; the points' own long operations print none, the sweep's line covers them).
    **options : the method's own options (e.g. ``eps_error``), passed to every query.

    Returns
    -------
    A ``SweepResult``, in grid order.  Where answers say little (``mechkit.estimate.weakness``), one
    ``MechkitWarning`` names those points.

    Raises
    ------
    ParameterError : before any point is built: ``build`` not callable, a grid that is empty or not a dict of lists
        nor a list of dicts, both or neither of delta and epsilon or one outside its range, an unknown method or
        option, an executor without ``submit``, ``errors`` not "raise" or "keep", ``progress`` not a bool, or (on a
        process pool) a ``build`` or grid value that does not pickle.
    MechkitError : at a point, with ``errors="raise"`` (the message names the point).
    """
    if not callable(build):
        raise ParameterError(f"build must be a callable taking the grid's parameters by keyword and returning a "
                             f"Composition or Mechanism, got {type(build).__name__} {build!r}")
    points = grid_points(grid)
    query, level = _query(delta, epsilon)
    _check_method(method, query, options)
    check_executor(executor)
    if errors not in ERRORS:
        raise ParameterError(f"errors must be one of {ERRORS}, got {errors!r}")
    _check_portable(executor, build, points)
    where = "" if executor is None else f" on {type(executor).__name__}"
    with setting(progress), working(f"sweep of {len(points)} points ({query} by method {method!r}{where})"):
        estimates = _run(executor, (build, query, level, method, dict(options)), points, errors == "keep")
    result = SweepResult(points, estimates, query, level, method)
    weak = [(p, weakness(e)) for p, e in result if isinstance(e, Estimate) and weakness(e)]
    if weak:
        shown = "; ".join(f"{{{_describe(p)}}}: {why}" for p, why in weak[:SHOWN])
        more = f" and {len(weak) - SHOWN} more" if len(weak) > SHOWN else ""
        warnings.warn(MechkitWarning(f"{len(weak)} of {len(result)} answers say little ({shown}{more}); the bounds "
                                     "hold, but for narrow certified answers use method='fft' (or a smaller "
                                     "eps_error)"), stacklevel=2)
    return result


class SweepResult:
    """The answers of a sweep (``mk.sweep``), in grid order.

    ``len(r)`` points; ``for point, estimate in r``; ``r.values``, ``r.lower``, ``r.upper`` as NumPy arrays (NaN
    where a method gives no bound or a point failed); ``r.to_rows()`` as a list of dicts for ``pandas.DataFrame``
    or ``csv.DictWriter``.

    Parameters
    ----------
    points : the points (dicts of parameter values).
    estimates : one ``Estimate`` per point (or the ``MechkitError`` kept in its place, ``errors="keep"``).
    query : "epsilon" (each estimate is epsilon at delta ``at``) or "delta" (delta at epsilon ``at``).
    at : the delta or epsilon given.
    method : the method asked for.

    Raises
    ------
    ParameterError : as many points as estimates are needed.
    """

    def __init__(self, points: Sequence[dict], estimates: Sequence[Estimate | MechkitError], query: str,
                 at: float, method: str) -> None:
        if len(points) != len(estimates):
            raise ParameterError(f"a sweep result needs one estimate per point, got {len(points)} points and "
                                 f"{len(estimates)} estimates")
        self.points = [dict(p) for p in points]
        self.estimates = list(estimates)
        self.query, self.at, self.method = query, float(at), method

    def __len__(self):
        return len(self.points)

    def __iter__(self) -> Iterator[tuple[dict, Estimate | MechkitError]]:
        return iter(zip(self.points, self.estimates))

    def _column(self, get):
        return np.array([math.nan if not isinstance(e, Estimate) or get(e) is None else get(e)
                         for e in self.estimates], dtype=float)

    @property
    def values(self) -> np.ndarray:
        """The estimates as floats, in grid order (NaN where a point failed)."""
        return self._column(float)

    @property
    def lower(self) -> np.ndarray:
        """The lower bounds, in grid order (NaN where the method gives none or a point failed)."""
        return self._column(lambda e: e.lower)

    @property
    def upper(self) -> np.ndarray:
        """The upper bounds, in grid order (NaN where the method gives none or a point failed)."""
        return self._column(lambda e: e.upper)

    @property
    def failed(self) -> list[tuple[dict, MechkitError]]:
        """(point, error) of each point whose error was kept (``errors="keep"``), in grid order."""
        return [(p, e) for p, e in self if not isinstance(e, Estimate)]

    def to_rows(self) -> list[dict]:
        """One dict per point: its parameter values, then ``value``, ``lower``, ``upper`` (None where absent),
        ``method`` (the accountant that answered), ``certified``, and where the sweep kept errors, ``error`` (the
        error's class and message; None where the point answered).

        Returns
        -------
        A list of dicts, in grid order (``pandas.DataFrame(r.to_rows())``).

        Raises
        ------
        ParameterError : a parameter named like one of the columns (``COLUMNS``, "error").
        """
        failed = bool(self.failed)
        rows = []
        for point, est in self:
            clash = sorted(set(point) & set(COLUMNS + ("error",)))
            if clash:
                raise ParameterError(f"the parameter(s) {clash} have the names of result columns; rename them in the "
                                     "grid (and build) to make rows, or read .points and .values")
            if isinstance(est, Estimate):
                row = dict(point, value=float(est), lower=est.lower, upper=est.upper, method=est.method,
                           certified=est.certified)
            else:
                row = dict(point, value=None, lower=None, upper=None, method=None, certified=False)
            if failed:
                row["error"] = None if isinstance(est, Estimate) else f"{type(est).__name__}: {est}"
            rows.append(row)
        return rows

    def __repr__(self):
        head = f"SweepResult({self.query} at {'delta' if self.query == 'epsilon' else 'epsilon'}={self.at:g}, " \
               f"method={self.method!r}, {len(self)} point{'s' if len(self) != 1 else ''}"
        lines = []
        for i, (point, est) in enumerate(self):
            if i == 2 * SHOWN and len(self) > 2 * SHOWN + 1:
                lines.append(f"  ... {len(self) - 2 * SHOWN - 1} more")
                continue
            if 2 * SHOWN < i < len(self) - 1:
                continue
            if isinstance(est, Estimate):
                bounds = "" if est.lower is None else f" [{est.lower:.6g}, {est.upper:.6g}]"
                answer = f"{float(est):.6g}{bounds} ({est.method}{'' if est.certified else ', not certified'})"
            else:
                answer = f"{type(est).__name__}: {est}"
            lines.append(f"  {_describe(point)}: {answer}")
        return head + ":\n" + "\n".join(lines) + ")"
