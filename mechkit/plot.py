"""Plots of a run's privacy with matplotlib (the ``plot`` extra: ``pip install "mechkit[plot]"``).

``privacy_curve`` draws delta(epsilon) with its certified band, ``tradeoff_curve`` the f-DP trade-off function
beta(alpha) with its certified band, and ``compare`` delta(epsilon) by each accountant.  Each draws into the Axes it
is given (a new figure's where none is) and returns it, so a plot can be adjusted or saved afterwards::

    import mechkit as mk
    from mechkit import plot

    run = mk.dpsgd(noise_multiplier=1.0, sampling_rate=0.01, steps=1000)
    ax = plot.privacy_curve(run)
    ax.figure.savefig("privacy_curve.png")

matplotlib is imported by the functions, not by ``import mechkit`` or ``import mechkit.plot``; without it they raise
a ``MechkitError`` that says what to install.  The command line's ``mechkit plot`` writes these plots to files.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .errors import MechkitError, ParameterError, quiet, real_array

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from .composition import Composition
    from .curves import PrivacyCurve
    from .laws.family import Mechanism
else:
    Axes = object  # matplotlib is imported only when a plot is drawn; type checkers see its Axes

__all__ = ["privacy_curve", "tradeoff_curve", "compare"]

#: the default epsilon grid: this many points from 0 to where delta falls to about ``DELTA_FLOOR``
GRID_POINTS = 60
DELTA_FLOOR = 1e-10
#: the default grid's end where no cheap bound says where delta falls to ``DELTA_FLOOR``
FALLBACK_TOP = 10.0
#: the default alphas of ``tradeoff_curve``
ALPHA_POINTS = 201
#: how much of a skipped method's error message its legend entry shows
NOTE_CHARS = 40
INSTALL = 'matplotlib is needed for plots: pip install "mechkit[plot]"'


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise MechkitError(INSTALL) from None
    return plt


def _axes(ax):
    """``ax``, or the Axes of a new figure (``plt.subplots()``); a ``MechkitError`` without matplotlib."""
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots()
    return ax


def _kinds():
    from .composition import Composition
    from .curves import PrivacyCurve
    from .laws.family import Mechanism
    return Composition, Mechanism, PrivacyCurve


def _composition(run, what):
    """The ``Composition`` behind a Composition, a Mechanism (composed once) or a PrivacyCurve."""
    from .composition import SavedComposition, compose
    Composition, Mechanism, PrivacyCurve = _kinds()
    if isinstance(run, PrivacyCurve):
        run = run.composition
    if isinstance(run, Mechanism):
        run = compose(run)
    if isinstance(run, SavedComposition):
        raise ParameterError(f"{what} needs the composition's mechanisms; a loaded curve keeps only its curve")
    if not isinstance(run, Composition):
        raise ParameterError(f"{what}: run must be a Composition, a Mechanism or a PrivacyCurve, got "
                             f"{type(run).__name__}")
    return run


def _describe(obj):
    """A short title: the composition's mechanisms and counts (or the mechanism's name)."""
    obj = getattr(obj, "composition", obj)  # a PrivacyCurve: its composition
    text = repr(obj)
    if text.startswith("Composition(") and text.endswith(")"):
        text = text[len("Composition("):-1]
    text = text.strip("<>").removeprefix("Mechanism ")
    return text if len(text) <= 80 else text[:77] + "..."


def _top(obj):
    """The end of the default epsilon grid: about where delta falls to ``DELTA_FLOOR``, from a cheap bound (a
    composition's Renyi-DP upper bound, a curve's lookup, a mechanism's own curve), at most the largest loss."""
    Composition, _, PrivacyCurve = _kinds()
    kw = {"method": "rdp"} if isinstance(obj, Composition) else {}
    floor = max(DELTA_FLOOR, 4.0 * obj.delta_error) if isinstance(obj, PrivacyCurve) else DELTA_FLOOR
    top = math.inf
    with quiet():
        for delta in (floor, 0.0):  # the bound at the floor, then the largest loss (delta 0) caps it
            try:
                top = min(top, float(obj.epsilon(delta, **kw)))
            except (MechkitError, AttributeError, TypeError):
                pass
    return top if math.isfinite(top) and top > 0 else FALLBACK_TOP


def _epsilons(obj, epsilons):
    if epsilons is None:
        return np.linspace(0.0, _top(obj), GRID_POINTS)
    eps = np.atleast_1d(real_array("epsilons", epsilons)).astype(float)
    if eps.ndim != 1:
        raise ParameterError(f"epsilons must be a 1-D array of epsilons in [0, inf), got shape {eps.shape}")
    bad = eps[~(np.isfinite(eps) & (eps >= 0))]
    if bad.size:
        raise ParameterError(f"epsilons must lie in [0, inf), got {float(bad[0])!r}")
    return eps


def _positive(values):
    """``values`` as floats with the non-positive ones NaN (a log axis has no place for them)."""
    v = np.array(values, dtype=float)
    v[~(v > 0)] = np.nan
    return v


def _log_limits(ax, *arrays):
    """A log y axis from a decade below the smallest positive value shown up to 1."""
    pos = np.concatenate([np.asarray(a, float).ravel() for a in arrays])
    pos = pos[np.isfinite(pos) & (pos > 0)]
    ax.set_yscale("log")
    if pos.size:
        ax.set_ylim(10.0 ** math.floor(math.log10(max(pos.min(), 1e-300))), 1.5)


def privacy_curve(run_or_curve: Composition | Mechanism | PrivacyCurve, ax: Axes | None = None, *,
                  epsilons: ArrayLike | None = None, label: str | None = None) -> Axes:
    """Draw delta(epsilon) with its certified band, on a log delta axis.

    The line is the estimate (``run_or_curve.delta(epsilons)``, one vectorised query); the shaded band is its
    certified interval ``[lower, upper]`` where the answer has one (a mechanism's one-shot curve has none).  Values
    of delta that are 0 (beyond the largest privacy loss) are not drawn.

    Parameters
    ----------
    run_or_curve : a ``Composition`` (FFT composer), a ``Mechanism`` (its one-shot curve) or a ``PrivacyCurve``;
        anything whose ``delta`` takes an array of epsilons.
    ax : the matplotlib Axes to draw into (default: a new figure's, ``plt.subplots()``).
    epsilons : the epsilons (in [0, inf), a 1-D array) to draw at; default 60 points from 0 to about where delta
        falls to 1e-10 (a composition's Renyi-DP bound there, capped at its largest loss), or to 10 where no bound
        says.
    label : the line's legend label (default: the method's estimate, e.g. "fft estimate"; "delta(epsilon)" for a
        mechanism's one-shot curve).

    Returns
    -------
    The matplotlib Axes drawn into.

    Raises
    ------
    MechkitError : matplotlib is not installed (``pip install "mechkit[plot]"``).
    ParameterError : ``run_or_curve`` has no ``delta``, or an epsilon is negative or not a number.
    """
    if not callable(getattr(run_or_curve, "delta", None)):
        raise ParameterError("run_or_curve must be a Composition, a Mechanism or a PrivacyCurve (something with "
                             f".delta), got {type(run_or_curve).__name__}")
    ax = _axes(ax)
    eps = _epsilons(run_or_curve, epsilons)
    with quiet():  # far-out deltas have wide relative intervals: the band shows them
        d = run_or_curve.delta(eps)
    method = getattr(d, "method", "")
    (line,) = ax.plot(eps, _positive(d), label=label or (f"{method} estimate" if method else "delta(epsilon)"))
    lower, upper = getattr(d, "lower", None), getattr(d, "upper", None)
    shown = [d]
    if lower is not None and upper is not None:
        certified = "certified" if getattr(d, "certified", False) else "not certified"
        ax.fill_between(eps, lower, upper, color=line.get_color(), alpha=0.25, linewidth=0,
                        label=f"[lower, upper] ({certified})")
        shown.append(upper)
    _log_limits(ax, *shown)
    ax.set_xlim(float(eps.min()), float(eps.max()))
    ax.set_xlabel("epsilon")
    ax.set_ylabel("delta")
    ax.set_title(_describe(run_or_curve), fontsize="medium")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
    return ax


def _tradeoff(run, alphas):
    _, Mechanism, PrivacyCurve = _kinds()
    if isinstance(run, PrivacyCurve):
        from . import fdp
        return fdp.tradeoff(run, alphas)
    if isinstance(run, Mechanism):
        return _composition(run, "tradeoff_curve").tradeoff(alphas)
    if not callable(getattr(run, "tradeoff", None)):
        raise ParameterError("tradeoff_curve: run must be a Composition, a Mechanism or a PrivacyCurve, got "
                             f"{type(run).__name__}")
    return run.tradeoff(alphas)


def tradeoff_curve(run: Composition | Mechanism | PrivacyCurve, ax: Axes | None = None, *,
                   alphas: ArrayLike | None = None, label: str | None = None) -> Axes:
    """Draw the trade-off function beta(alpha) (``run.tradeoff``, ``mechkit.fdp``) with its certified band.

    beta(alpha) is the smallest type-II error (miss rate) of any test of "the individual is in" at type-I error
    (false-positive rate) alpha.  The dashed diagonal 1 - alpha is perfect privacy; the further below it the curve
    lies, the better the best membership attacker does.

    Parameters
    ----------
    run : a ``Composition``, a ``Mechanism`` (composed once) or a ``PrivacyCurve``.
    ax : the matplotlib Axes to draw into (default: a new figure's).
    alphas : type-I errors in [0, 1] (default 201 points from 0 to 1).
    label : the line's legend label (default "beta(alpha)").

    Returns
    -------
    The matplotlib Axes drawn into.

    Raises
    ------
    MechkitError : matplotlib is not installed (``pip install "mechkit[plot]"``).
    ParameterError : ``run`` is none of the above, or an alpha lies outside [0, 1].
    """
    ax = _axes(ax)
    a = np.linspace(0.0, 1.0, ALPHA_POINTS) if alphas is None else np.atleast_1d(real_array("alphas", alphas))
    b = _tradeoff(run, a)
    a = np.asarray(a, float)
    (line,) = ax.plot(a, np.asarray(b), label=label or "beta(alpha)")
    ax.fill_between(a, b.lower, b.upper, color=line.get_color(), alpha=0.25, linewidth=0,
                    label="[lower, upper] (certified)")
    ax.plot([0.0, 1.0], [1.0, 0.0], ls="--", color="0.5", lw=1, label="perfect privacy: 1 - alpha")
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, 1.0)
    ax.set_aspect("equal")
    ax.set_xlabel("type I error alpha")
    ax.set_ylabel("type II error beta")
    ax.set_title(_describe(run), fontsize="medium")
    ax.grid(True, alpha=0.3)
    ax.legend()
    return ax


def _rdp_line(comp, others):
    """RDP answers epsilon(delta) only: its curve through the points (epsilon(delta), delta), at 40 deltas spanning
    the other methods' deltas (from ``DELTA_FLOOR`` where none answered); the error where it cannot answer."""
    pos = np.concatenate([np.asarray(y, float) for y in others] + [np.array([DELTA_FLOOR])])
    pos = pos[np.isfinite(pos) & (pos > 0) & (pos < 1)]
    top = pos.max() if pos.max() > pos.min() else 0.5
    deltas = np.geomspace(pos.min(), top, 40)
    try:
        eps = np.asarray(comp.epsilon(deltas, method="rdp"), float)
    except MechkitError as exc:
        return exc
    if not np.any(np.isfinite(eps)):
        return MechkitError("no finite Renyi-DP bound")
    return eps, deltas, "rdp (upper bound)"


def compare(run: Composition | Mechanism | PrivacyCurve, methods: Sequence[str] = ("fft", "spa", "edgeworth", "rdp",
            "gdp"), ax: Axes | None = None, *, epsilons: ArrayLike | None = None) -> Axes:
    """Draw delta(epsilon) by each accountant, one line per method (estimates; bands in ``privacy_curve``).

    "rdp" answers epsilon(delta) only: its line (an upper bound) goes through (epsilon(delta), delta) at 40 deltas
    spanning the others' range.  A method that cannot answer for this run (it raises a ``MechkitError``) is
    skipped, and its legend entry says why.  The delta axis (log scale) spans the first drawn method's values.

    Parameters
    ----------
    run : a ``Composition``, a ``Mechanism`` (composed once) or a ``PrivacyCurve`` (its composition; not a loaded
        one, which keeps no mechanisms).
    methods : the methods' names (``Composition.delta``'s ``method``), drawn in this order.
    ax : the matplotlib Axes to draw into (default: a new figure's).
    epsilons : the epsilons (in [0, inf)); default as ``privacy_curve``'s.

    Returns
    -------
    The matplotlib Axes drawn into.

    Raises
    ------
    MechkitError : matplotlib is not installed (``pip install "mechkit[plot]"``).
    ParameterError : ``run`` is none of the above, or an epsilon is negative or not a number.
    """
    ax = _axes(ax)
    comp = _composition(run, "compare")
    eps = _epsilons(comp, epsilons)
    methods = (methods,) if isinstance(methods, str) else tuple(methods)
    lines = {}  # method -> (x, y, label) or the MechkitError that skips it
    with quiet():
        for method in [m for m in methods if m != "rdp"]:
            try:
                d = comp.delta(eps, method=method)
            except MechkitError as exc:
                lines[method] = exc
                continue
            lines[method] = (eps, _positive(d), method + ("" if d.certified else " (not certified)"))
        if "rdp" in methods:
            lines["rdp"] = _rdp_line(comp, [v[1] for v in lines.values() if isinstance(v, tuple)])
    shown = []
    for method in dict.fromkeys(methods):
        got = lines[method]
        if isinstance(got, MechkitError):
            _skipped(ax, method, got)
        else:
            ax.plot(got[0], got[1], label=got[2])
            shown.append(got[1])
    _log_limits(ax, *shown[:1])  # the first method's range: an approximation's far tail would squash the rest
    ax.set_xlim(float(eps.min()), float(eps.max()))
    ax.set_xlabel("epsilon")
    ax.set_ylabel("delta")
    ax.set_title(_describe(comp), fontsize="medium")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
    return ax


def _skipped(ax, method, exc):
    """A legend entry without a line: the method and why it was skipped."""
    why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    why = why if len(why) <= NOTE_CHARS else why[:NOTE_CHARS - 3] + "..."
    ax.plot([], [], " ", label=f"{method}: skipped ({why})")
