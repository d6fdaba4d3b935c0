"""Chernoff bounds of a composed privacy loss from its CGF on a fixed grid of tilts, computed lazily.

For the Edgeworth accountant's caps (``edgeworth_sequence.Sequence``).  With K the CGF of the sum S_Y (the loss
under the numerator measure) and l_Y, l_X the log masses of the finite parts, each bound is the minimum over its grid
of tilts (``GRID``: ``TILTS``, and for ``"X"`` tilts whose arguments of K are the other lines') of lines a_i + b_i x
(natural log of a probability bound, capped at 0):

* ``"Y"``:    log P(S_Y >= x) <= K(t) - l_Y - t x
* ``"X"``:    log P(S_X >= x) <= K(t - 1) - l_X - t x
* ``"Ylow"``: log P(S_Y <= x) <= K(-t) - l_Y + t x
* ``"hs"``:   log delta(x) <= K(t) - l_Y - t x + t log t - (1 + t) log(1 + t) (the tilted moment bound)

K is convex, so at a fixed x the line values are unimodal along the grid, and the minimising tilt moves
monotonically with x (up for slopes -t, down for +t).  The minimum over the whole grid at every point of an array
of x is therefore the minimum over the block of tilts between the minimisers at the array's two ends, found by a
search that starts at the Gaussian model's tilt; only that block's CGF values are computed (each once).  Where the
bound cannot be below 1 (x at or below the mean for ``"Y"`` and ``"X"``, at or above it for ``"Ylow"``: K(t) >=
t K'(0) by convexity, and the CGF carries an allowance on the high side), it is 0 without a search.  Where the
caller compares a bound with values of its own and keeps the smaller (``covered``), the points where the bound
cannot win are found by one test at the edge of their region (the bound only grows towards the mean) and get +inf,
their tilts not computed.  The values are those of the minimum over the whole grid, evaluated the same way.
"""
from __future__ import annotations

import math

import numpy as np

#: tilts of the Chernoff bounds (a valid bound at each; the grid ratio 1.5 keeps them near-optimal)
TILTS = np.geomspace(1e-3, 1e3, 35)
#: t log t - (1 + t) log(1 + t) at each tilt (the tilted moment bound's term)
THETA = TILTS * np.log(TILTS) - (1.0 + TILTS) * np.log1p(TILTS)
_LOG_T0, _LOG_STEP = math.log(TILTS[0]), math.log(TILTS[1] / TILTS[0])
#: the ``"X"`` lines' arguments of K (their tilt is the argument + 1): -s and s for the grid's tilts s >= 0.25 (the
#: ``"Ylow"`` and ``"Y"`` lines' arguments, the same floats: each CGF value serves both), 0 between, and t - 1 for
#: the grid's tilts t <= 0.45 below (41 tilts from 1e-3 to 1001, consecutive ratios 1.11-1.5; docs/performance.md)
_SHARED = TILTS[TILTS >= 0.25]
_ARG_X = np.unique(np.concatenate((TILTS[TILTS <= 0.45] - 1.0, -_SHARED[_SHARED < 1.0], [0.0], _SHARED)))
#: each line's tilts, and the argument of K at each of them (the slope of a line in x is -+ its tilt)
GRID = {"Y": TILTS, "X": 1.0 + _ARG_X, "Ylow": TILTS, "hs": TILTS}
ARGS = {"Y": TILTS, "X": _ARG_X, "Ylow": -TILTS, "hs": TILTS}
_SIGN = {"Y": -1.0, "X": -1.0, "Ylow": 1.0, "hs": -1.0}
#: the same as Python lists (the searches read one element at a time: a list's element is a float, an array's a
#: NumPy scalar, ~0.1 us slower to make and to compute with; the same values)
_ARGS_L = {k: v.tolist() for k, v in ARGS.items()}
_GRID_L = {k: v.tolist() for k, v in GRID.items()}
_THETA_L, _TILTS_L = THETA.tolist(), TILTS.tolist()
_FIRST = np.zeros(1, dtype=np.intp)  # the region of a single point


def _first_rising(rising, n, guess):
    """The first index i in [0, n) with rising(i) (rising(n - 1) is true; rising is false, then true): steps of
    1, 1, 2, 3, ... from ``guess`` (a good guess is a few indices off: doubling steps would overshoot into tilts
    no bound needs, each a CGF quadrature; most guesses are the answer or its neighbour, where the second unit step
    saves the value a step of 2 would ask beyond it), then bisection."""
    i = min(max(guess, 0), n - 1)
    step = 0
    if rising(i):
        hi, lo = i, i - 1
        while lo >= 0 and rising(lo):
            hi, step = lo, step + 1
            lo = hi - step
        lo = max(lo, -1)
    else:
        lo, hi = i, i + 1
        while hi < n - 1 and not rising(hi):
            lo, step = hi, step + 1
            hi = lo + step
        hi = min(hi, n - 1)
    return _bisect(rising, lo, hi)


def _bisect(pred, lo, hi):
    """The first index in (lo, hi] where pred holds, given that it holds at hi and not at lo (or lo = -1), and that
    it holds from its first index on."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _tilt_index(t, grid=TILTS):
    """The index of ``grid`` nearest the tilt t in log scale (clamped; 0 for t <= 0 or nan)."""
    if not t > 0.0:
        return 0
    if not math.isfinite(t):
        return grid.size - 1
    if grid is TILTS:
        return int(min(max(round((math.log(t) - _LOG_T0) / _LOG_STEP), 0), TILTS.size - 1))
    i = int(np.searchsorted(grid, t))
    if i == 0 or i == grid.size:
        return min(i, grid.size - 1)
    return i if math.log(grid[i] / t) < math.log(t / grid[i - 1]) else i - 1


class ChernoffLines:
    """The lines of one direction's sums.  ``K``: tau -> K_Y(tau) of the sum (inf outside its domain, with the
    allowance added); ``log_mass``: {"Y": l_Y, "X": l_X}; ``moments``: {"Y": (mean, variance), "X": (...)} of
    the normalised sums (only to start the searches and to skip points where a bound cannot be below 1)."""

    def __init__(self, K, log_mass, moments):
        self._K = K
        self._memo = {}
        self._last = {}  # name -> the last minimiser found (``_known_minimum``)
        self._shift = {"Y": log_mass["Y"], "X": log_mass["X"], "Ylow": log_mass["Y"], "hs": log_mass["Y"]}
        self._moments = moments

    def _k(self, tau):
        got = self._memo.get(tau)
        if got is None:
            got = self._memo[tau] = self._K(tau)
        return got

    def known(self):
        """(tilts, K values) of the grid's positive tilts whose CGF values are at hand and finite (ascending)."""
        pairs = sorted((t, k) for t, k in self._memo.items() if t > 0.0 and math.isfinite(k))
        return [t for t, _ in pairs], [k for _, k in pairs]

    def intercept(self, name, i):
        """a_i of the named line (inf where K is)."""
        a = self._k(_ARGS_L[name][i]) - self._shift[name]
        return a + _THETA_L[i] if name == "hs" else a

    def _argmin(self, name, x, guess):
        """The first grid index minimising the named line at the point x."""
        b, grid = _SIGN[name], _GRID_L[name]
        n = len(grid)

        def value(i):
            return self.intercept(name, i) + b * grid[i] * x

        return _first_rising(lambda i: i >= n - 1 or not value(i + 1) < value(i), n, guess)

    def _guess(self, name, x):
        """The grid index of the Gaussian model's optimal tilt at x (for ``"hs"``: where K'(t) + log(t / (1 + t))
        = x, by bisection in log t)."""
        mean, var = self._moments["X" if name == "X" else "Y"]
        if not var > 0:
            return 0
        if name != "hs":
            return _tilt_index(-_SIGN[name] * (x - mean) / var, GRID[name])
        lo, hi = 0, TILTS.size - 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            t = TILTS[mid]
            if mean + var * t + math.log(t / (1.0 + t)) < x:
                lo = mid
            else:
                hi = mid
        return hi

    def _known_minimum(self, name, x):
        """The named lines' last minimiser found, if at x its line is below both neighbours' (those inside the grid)
        and all three have CGF values at hand: then it is the minimiser at x too (the lines are unimodal along the
        grid), found without a new CGF value (the root searches ask for points close together); else None."""
        i = self._last.get(name)
        if i is None:
            return None
        args, b, grid, memo = _ARGS_L[name], _SIGN[name], _GRID_L[name], self._memo
        near = [j for j in (i - 1, i, i + 1) if 0 <= j < len(grid)]
        for j in near:
            if args[j] not in memo:
                return None
        at = self.intercept(name, i) + b * grid[i] * x
        return i if all(self.intercept(name, j) + b * grid[j] * x >= at for j in near) else None

    def _at(self, name, x, found):
        """The named bound at the point x (the minimum over the grid, capped at 0); ``found``: x -> its minimiser,
        filled in (one search per point and call, from the last minimiser where it is still one, else from the
        Gaussian model's tilt)."""
        i = found.get(x)
        if i is None:
            guess = self._known_minimum(name, x)
            i = found[x] = self._argmin(name, x, self._guess(name, x)) if guess is None else guess
            self._last[name] = i
        return min(self.intercept(name, i) + _SIGN[name] * _GRID_L[name][i] * x, 0.0)

    def _covered(self, name, xs, order, covered, found):
        """How many leading points of ``xs`` (ordered so that the bound is nonincreasing along it) the caller's
        ``covered`` test lets go: covered(c, region) says that a bound value c at a point beats none of the
        caller's values at the points ``region`` (indices into its arrays); along xs the bound only grows
        backwards, so a point that passes the test against every point before it passes for them all.  A
        search down from the last point (whose tilts the bound needs anyway), then bisection."""
        m = xs.size

        def ok(p):
            return covered(self._at(name, float(xs[p]), found), order[:p + 1])

        if ok(m - 1):
            return m
        bad, step = m - 1, 1  # the test fails at bad
        good = bad - step
        while good >= 0 and not ok(good):
            bad, step = good, 2 * step
            good = bad - step
        return _bisect(lambda p: not ok(p), max(good, -1), bad)  # the first point that fails

    def bound(self, name, x, covered=None):
        """min over the grid of the named lines at each x (an array), capped at 0.

        ``covered``: where the caller keeps only the bound's values that beat its own (a min or max against them),
        a test covered(c, region) -> bool as in ``_covered``; the points it lets go get +inf (beats nothing) and
        their tilts are not computed (the small tilts near the mean, where the bounds are close to 1)."""
        x = np.asarray(x, float)
        out = np.zeros(x.shape)
        mean = self._moments["X" if name == "X" else "Y"][0]
        live = np.ones(x.shape, bool) if name == "hs" else (x > mean if _SIGN[name] < 0 else x < mean)
        if not live.any():
            return out
        if x.shape == (1,):  # one point (the epsilon query's root searches): its own minimum, no block
            c = self._at(name, float(x[0]), {})
            out[0] = math.inf if covered is not None and covered(c, _FIRST) else c
            return out
        pos = np.nonzero(live)[0]
        order = pos[np.argsort(x[pos], kind="stable")]
        if _SIGN[name] > 0:
            order = order[::-1]  # the bound is nonincreasing along order
        ends = float(x[order[0]]), float(x[order[-1]])
        i = self._known_minimum(name, ends[0])
        if i is not None and self._known_minimum(name, ends[1]) == i:
            # one minimiser at both ends, from the CGF values at hand: at every point between (it moves monotonically
            # with x); no CGF value to spare, so no search for the points a cap cannot win
            with np.errstate(invalid="ignore"):
                out[order] = np.minimum(self.intercept(name, i) + _SIGN[name] * _GRID_L[name][i] * x[order], 0.0)
            return out
        found = {}
        if covered is not None:
            n = self._covered(name, x[order], order, covered, found)
            out[order[:n]] = np.inf
            order = order[n:]
            if not order.size:
                return out
        xs = x[order]
        ends = [float(xs[0]), float(xs[-1])]
        for e in ends:
            self._at(name, e, found)
        idx = sorted(found[e] for e in ends)
        blk = np.arange(idx[0], idx[1] + 1)
        a = np.array([self.intercept(name, i) for i in blk])
        ok = np.isfinite(a)
        if not ok.any():
            return out
        b = _SIGN[name] * GRID[name][blk]
        with np.errstate(invalid="ignore"):
            v = np.min(a[ok][None, :] + b[ok][None, :] * xs[:, None], axis=1)
        out[order] = np.minimum(v, 0.0)
        return out

    def ceiling(self, log_rest):
        """min over the grid of (a_i - log_rest) / t_i for the ``"hs"`` lines: the smallest x at which a tilted
        moment bound is <= e^log_rest (inf where K is nowhere finite on the grid).  c(t) / t with c convex is
        unimodal in t (its derivative's numerator t c' - c is nondecreasing), here c = K - l_Y + theta - log_rest.
        """
        def value(i):
            a = self.intercept("hs", i)
            return (a - log_rest) / _TILTS_L[i] if math.isfinite(a) else math.inf

        var = self._moments["Y"][1]
        guess = _tilt_index(math.sqrt(-2.0 * log_rest / var)) if var > 0 and log_rest < 0 else 0
        i = _first_rising(lambda j: j >= TILTS.size - 1 or not value(j + 1) < value(j), TILTS.size, guess)
        return value(i)
