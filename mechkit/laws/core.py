"""The numeric core of a bound mechanism: the law of L = log p/q under P and under Q.

A core answers, for measure ``m`` (0 = P, 1 = Q) and loss values ``s`` (arrays):

* ``tails(m, s, split, closed, want_above, prob)``: P_m(L <= s) or P_m(L > s) (or with the atom at s on the
  other side), or its log, each point evaluated from the side of ``split`` it lies on;
* ``pdf(m, s)``: density of the continuous part of L under P_m;
* ``atoms``: an ``AtomSet`` (values, log-masses under P and Q), +/-inf included;
* ``cgf(tau, order)``: d^order/dtau^order of K(tau) = log E_P[exp(tau L)] (= log of int p^{1+tau} q^{-tau});
* ``support``: the smallest and largest value of L with positive mass.

Lower and upper probabilities are summed separately from positive parts, so each is accurate in its own
tail (no 1 - x cancellation); the other side is its complement.  ``ContinuousCore`` splits the domain into
pieces on which L is flat (an atom) or strictly monotone (inverted by a derived formula, checked, or by
bisection); ``DiscreteCore`` enumerates the support.  Both validate the densities before anything else uses them.
"""
from __future__ import annotations

import math

import numpy as np

from ..engine import numerics as N
from . import limits
from ..errors import DerivationError, SpecificationError

NORMALISATION_TOL = 1e-6
QUAD_RTOL = 1e-13
#: tolerance of ``tilt_stats`` (the SPA's certificates): its error estimate is conservative (the measured error at
#: 1e-11 is ~1e-13), and the SPA's bounds allow 1e-9 relative for the quadrature
TILT_RTOL = 1e-11
#: ``tilt_stats`` starts its quadrature from this many intervals on each side of the kink of |L - mu|^3
TILT_NSPLIT = 2
_NEG_INF = -np.inf


class DensityUndefined(SpecificationError):
    """A log-density kernel is NaN at ``x``: the density (``which`` = "p" or "q") is negative or not real there, or
    its compiled kernels over- or underflow at the parameter values (``Mechanism`` decides which, in mpmath)."""

    def __init__(self, which, x, word="density"):
        super().__init__(f"{word} {which} is negative or undefined at x = {x:g}")
        self.which, self.x = which, float(x)


def _lse(a, axis=None):
    a = np.asarray(a, dtype=float)
    if a.size == 0:
        return _NEG_INF
    mx = np.max(a, axis=axis, keepdims=True)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - mx), axis=axis, keepdims=True)) + mx
    return np.squeeze(out, axis=axis) if axis is not None else float(out.reshape(()))


class AtomSet:
    """Point masses of L: sorted distinct values with log-masses under P and Q."""

    def __init__(self, values, logP, logQ):
        values = np.asarray(values, dtype=float)
        order = np.argsort(values, kind="stable")
        v, lp, lq = values[order], np.asarray(logP, float)[order], np.asarray(logQ, float)[order]
        if v.size:
            starts = np.concatenate(([0], np.nonzero(np.diff(v) != 0)[0] + 1))
            v = v[starts]
            lp = np.logaddexp.reduceat(lp, starts)
            lq = np.logaddexp.reduceat(lq, starts)
        self.values, self.logP, self.logQ = np.ascontiguousarray(v), lp, lq
        # log of the mass before index j and from index j on, j = 0..n
        none = np.array([_NEG_INF])
        self._below = [np.concatenate((none, np.logaddexp.accumulate(x))) for x in (lp, lq)]
        self._above = [np.concatenate((np.logaddexp.accumulate(x[::-1])[::-1], none)) for x in (lp, lq)]

    def logmass(self, m):
        return self.logP if m == 0 else self.logQ

    def tails(self, m, s, split, closed, prob, out):
        """out = the P_m-mass of the atoms on the evaluated side of each s_i, or its log (``Law.tails``)."""
        N.atom_tails(self.values, self._below[m], self._above[m], s, split, closed, prob, out)


class Law:
    """What both cores share: tail probabilities of L from its atoms and its monotone pieces (``mono``)."""

    def tails(self, m, s, split, closed, want_above, prob):
        """P_m of the wanted side of each s_i, or its log, each point evaluated from one side.

        s_i is evaluated above, P_m(L > s_i), where s_i > split, and below, P_m(L <= s_i), where s_i < split;
        that is with ``closed``; without it, the atom at s_i is on the upper side: P_m(L >= s_i) and
        P_m(L < s_i).  A point at the split goes to the side without the atom at the split.  The evaluated
        side is summed from positive parts (as probabilities, or in log space for the log: accurate however
        small); the result is the side above (``want_above``) or below: the evaluated one, or its complement.
        """
        s = np.ascontiguousarray(np.atleast_1d(s), dtype=float)
        acc = np.empty(s.shape)
        self.atoms.tails(m, s, split, closed, prob, acc)
        for pc in self.mono:
            self._piece_tails(pc, m, s, split, closed, prob, acc)
        N.finish_tails(acc, s, split, closed, want_above, prob)
        return acc

    def _piece_kernels(self, pc):
        """(log p, log q, L, closed-form inverse of L or L, whether it is one) kernel references of a monotone
        piece (looked up once)."""
        memo = self.__dict__.setdefault("_pk", {})
        got = memo.get(id(pc))
        if got is None:
            inv, has_inv, L = self._inverse(pc)
            got = memo[id(pc)] = (self._k(pc.v["logp"]), self._k(pc.v["logq"]), L, inv, has_inv)
        return got

    def _piece_addresses(self, pc):
        """``_piece_kernels`` as the engine's ``tilt_piece`` takes them: addresses (the refs stay alive in its memo),
        and the piece's peak-scan grid with log p, log q on it (``scan_grid``: tilt-independent, computed once)."""
        memo = self.__dict__.setdefault("_pa", {})
        got = memo.get(id(pc))
        if got is None:
            lp, lq, L, inv, has_inv = self._piece_kernels(pc)
            got = memo[id(pc)] = ((lp.address, lq.address, L.address, inv.address, has_inv),
                                  N.scan_grid_at(0, lp.address, lq.address, pc.a, pc.b, self.theta))
        return got

    def _tilted_pieces(self, tau):
        """The monotone pieces with tilted mass, each with what its quadrature needs: (piece, log p, log q, L
        kernels, map centre, map width, log-shift); None when M(tau) is infinite."""
        out = []
        for pc in self.mono:
            lp, lq, L = self._piece_kernels(pc)[:3]
            xs, gs, w = N.peak_scan(0, lp, lq, pc.a, pc.b, tau, self.theta)
            if not np.isfinite(gs):
                if gs == np.inf:
                    return None
                continue
            if N.tilt_diverges(lp, lq, pc.a, pc.b, tau, gs, self.theta):
                return None
            out.append((pc, lp, lq, L, xs, w, gs))
        return out

    def tilt_mode(self, tau):
        """About where the tau-tilted law of L has its bulk: L at the highest peak of the tilted density over the
        monotone pieces (one peak scan each), or the atom of largest tilted mass where that outweighs the peak's
        mass (about e^g times twice the scan's width); nan where M(tau) is infinite or there is no tilted mass.  A
        centre for ``tilt_stats`` where no model of K'(tau) is at hand (usually within a few standard deviations of
        the tilted mean: not a moment)."""
        best, centre = -math.inf, math.nan
        pieces = self._tilted_pieces(tau)
        if pieces is None:
            return math.nan
        for pc, _, _, L, xs, w, gs in pieces:
            if (pc.b == math.inf and xs >= 1e11) or (pc.a == -math.inf and xs <= -1e11):
                return math.nan  # the tilted density grows towards an infinite end: M(tau) is infinite
            mass = gs + math.log(2.0 * w) if w > 0 else gs
            if mass > best:
                best, centre = mass, float(L(float(xs), self.theta))
        if self.atoms.values.size:
            terms = _atom_terms(self.atoms, tau)
            if terms is None:
                return math.nan
            aw, av = terms
            i = int(np.argmax(aw)) if aw.size else -1
            if i >= 0 and aw[i] > best:
                centre = float(av[i])
        return centre if math.isfinite(centre) else math.nan

    def tilt_stats(self, tau, center, n=4):
        """([K(tau), ..., K^(n)(tau)], A) in one quadrature pass per piece, where A >= E|L_tau - K'(tau)|^3.

        The pass integrates the moments 0..n of L - ``center`` under the tau-tilted law and |L - center|^3;
        with ``center`` close to K'(tau) (e.g. from a model of K) the central moments follow without
        cancellation, and Minkowski's inequality turns the absolute moment about ``center`` into a bound on the
        one about the mean: A = ((E|L - c|^3)^(1/3) + |K'(tau) - c|)^3 (equality when c = K'(tau)).
        """
        return self.tilt_stats_about(tau, center, n)[:2]

    def tilt_stats_signed(self, tau, center, n, sign):
        """``tilt_stats_about`` with K^(j) multiplied by sign^j (sign = +/-1: the PLRV of -L), as ([K, ...], A,
        centre): one compiled call for a law with one monotone piece and no atoms (the SPA's passes), else the
        general path."""
        pc = self._single_piece()
        if pc is not None:
            addresses, grid = self._piece_addresses(pc)
            vec, A, c, status = N.tilt_stats_piece(*addresses, pc.a, pc.b, pc.inc, pc.La, pc.Lb, tau, center, n,
                                                   self.theta, TILT_RTOL, TILT_NSPLIT, *grid, sign)
            if status < 2:
                return vec, A, c
        vec, A, c = self.tilt_stats_about(tau, center, n)
        if sign != 1.0:
            vec = vec * sign ** np.arange(n + 1)
        return vec, A, c

    def _single_piece(self):
        """The one monotone piece of a law without atoms (None otherwise; memoised)."""
        got = self.__dict__.get("_single")
        if got is None:
            got = self._single = (self.mono[0],) if len(self.mono) == 1 and not self.atoms.values.size else (None,)
        return got[0]

    def tilt_stats_about(self, tau, center, n=4):
        """``tilt_stats`` returning (vec, A, the centre used); ``center`` = nan: about the tilted law's mode (where
        no model of K'(tau) is at hand), found by the pass's own peak scan where there is one monotone piece
        (``tilt_mode`` first otherwise)."""
        if n not in range(2, 7):
            raise ValueError(f"n must be in 2..6, got {n!r}")
        if self.atoms.values.size:
            terms = _atom_terms(self.atoms, tau)
            if terms is None:
                return _infinite_stats(n, center)
            aw, av = terms
            if np.any(np.isinf(av)):
                return _infinite_stats(n, center)
        else:
            aw = ()
        if center != center and len(self.mono) != 1:
            center = self.tilt_mode(tau)
            if center != center:
                return _infinite_stats(n, center)
        parts = []
        for pc in self.mono:  # peak scan, divergence check and quadrature in one compiled call per piece
            addresses, grid = self._piece_addresses(pc)
            gs, res, mu = N.tilt_piece(*addresses, pc.a, pc.b, pc.inc, pc.La, pc.Lb, tau, center, n + 1, self.theta,
                                       TILT_RTOL, TILT_NSPLIT, *grid)
            if gs == np.inf:
                return _infinite_stats(n, center)
            if gs > -np.inf:
                parts.append((gs, res))
                center = mu
        if center != center:  # the one piece has no tilted mass: the heaviest atom
            center = self.tilt_mode(tau)
            if center != center:
                raise DerivationError("the tilted distribution has no mass")
        if len(parts) == 1 and not len(aw):
            return (*N.tilt_cumulants(parts[0][1], parts[0][0], center, n), center)
        shifts = [g for g, _ in parts] + list(aw)
        if not shifts:
            raise DerivationError("the tilted distribution has no mass")
        g = max(shifts)
        tot = np.zeros(n + 2)
        for gs, res in parts:
            tot += res * math.exp(gs - g)
        if len(aw):
            wa = np.exp(aw - g)
            d = av - center
            for j in range(n + 1):
                tot[j] += float(np.sum(wa * d ** j))
            tot[n + 1] += float(np.sum(wa * np.abs(d) ** 3))
        vec, A = N.tilt_cumulants(tot, g, center, n)
        return vec, A, center




class _Piece:
    __slots__ = ("a", "b", "key", "v", "flat", "inc", "La", "Lb", "inv", "logmass", "beyond")


class ContinuousCore(Law):
    """Law of L for densities on an interval of the real line."""

    def __init__(self, structure, mod, theta):
        self.st, self.mod, self.theta = structure, mod, np.ascontiguousarray(theta, dtype=float)
        self._k = N.kernel_refs(mod)
        lo = -np.inf if structure["lo"] is None else self._const(structure["lo"])
        hi = np.inf if structure["hi"] is None else self._const(structure["hi"])
        if not lo < hi:
            raise SpecificationError(f"the domain is empty: lower end {lo} is not below upper end {hi}")
        self.lo, self.hi = lo, hi
        self.pieces = self._make_pieces()
        atoms = [(p.La, p.logmass[0], p.logmass[1]) for p in self.pieces if p.flat]
        self.atoms = AtomSet([a[0] for a in atoms], [a[1] for a in atoms], [a[2] for a in atoms])
        self.mono = [p for p in self.pieces if not p.flat]
        vals = [p.La for p in self.pieces] + [p.Lb for p in self.pieces]
        self.support = (float(np.nanmin(vals)), float(np.nanmax(vals)))
        self._cgf_closed = None
        self.cgf_source = "quadrature"

    # -- small evaluation helpers ---------------------------------------------------------------
    def _const(self, name):
        return float(N.cmap(self._k(name), self.theta))

    def _f(self, name, x):
        return float(self._k(name)(float(x), self.theta))

    def _vec(self, name, xs):
        return N.vmap(self._k(name), np.ascontiguousarray(xs, dtype=float), self.theta)

    # -- structure ---------------------------------------------------------------------------------
    def _sample_point(self, a, b):
        if np.isfinite(a) and np.isfinite(b):
            return 0.5 * (a + b)
        if np.isfinite(a):
            return a + max(1.0, abs(a))
        if np.isfinite(b):
            return b - max(1.0, abs(b))
        return 0.0

    def _key_at(self, x):
        signs = []
        for name in self.st["abs_args"]:
            v = self._f(name, x)
            signs.append("+" if v >= 0 else "-")
        return "".join(signs) or "0"

    def _split_points(self):
        pts = []
        for name in self.st["breakpoints"]:
            pts.append(self._const(name))
        for v in self.st["variants"].values():
            for name in v["crit"] or []:
                pts.append(self._const(name))
        pts = [x for x in pts if np.isfinite(x) and self.lo < x < self.hi]
        edges = sorted(set([self.lo, self.hi] + pts))
        # numeric critical points where SymPy could not solve dL = 0
        out = [edges[0]]
        for a, b in zip(edges[:-1], edges[1:]):
            v = self.st["variants"][self._key_at(self._sample_point(a, b))]
            if v["crit"] is None and not v["flat"]:
                out.extend(self._scan_critical(v, a, b))
            out.append(b)
        return sorted(set(out))

    def _scan_critical(self, v, a, b):
        lo = a if np.isfinite(a) else -1e6 * (1 + abs(b if np.isfinite(b) else 0))
        hi = b if np.isfinite(b) else 1e6 * (1 + abs(a if np.isfinite(a) else 0))
        xs = np.concatenate((np.linspace(lo, hi, 4001)[1:-1],
                             np.sign(np.linspace(-1, 1, 2001)) * np.logspace(-6, 6, 2001)))
        xs = np.unique(xs[(xs > lo) & (xs < hi)])
        d = self._vec(v["dL"], xs)
        roots = []
        for i in np.nonzero(np.sign(d[:-1]) * np.sign(d[1:]) < 0)[0]:
            roots.append(float(N.invert_monotone(self._k(v["dL"]), 0.0, xs[i], xs[i + 1], d[i] < 0, self.theta)))
        return roots

    def _limit_L(self, v, x):
        """L at a piece end; at +/-inf from the symbolic limit, checked against numeric evidence (``limits``)."""
        if np.isfinite(x):
            return self._f(v["L"], x)
        walk = limits.double_walk(self._vec(v["L"], np.copysign(limits.WALK, x)))  # one compiled pass
        names = [v.get(end) for end in (("Llo", "Llo_raw") if x < 0 else ("Lhi", "Lhi_raw"))]
        sym = [self._const(n) for n in names if n is not None]

        def high_precision():
            fn = getattr(self.mod, "mp_" + v["L"], None)
            return None if fn is None else limits.high_precision_walk(fn, self.theta, 1 if x > 0 else -1)

        def symbolic_at_values():
            return limits.symbolic_limit_at(v.get("Lexpr"), self.st.get("var"), self.st.get("theta"), self.theta, x)

        return limits.decide(sym, walk, high_precision, x, symbolic_at_values)

    def _make_pieces(self):
        """The pieces between split points; each piece's densities are checked on a grid and the masses
        validated (``_validate``) before the costly parts (limits of L, the choice of inverse)."""
        edges = self._split_points()
        pieces = []
        for a, b in zip(edges[:-1], edges[1:]):
            pc = _Piece()
            pc.a, pc.b = a, b
            pc.key = self._key_at(self._sample_point(a, b))
            pc.v = self.st["variants"][pc.key]
            pc.flat = pc.v["flat"]
            self._check_defined(pc)
            pc.inv = None
            pc.beyond = {}
            pc.logmass = [self._piece_logmass(pc, m) for m in (0, 1)]
            pieces.append(pc)
        self._validate(pieces)
        for pc in pieces:
            v, a, b, xm = pc.v, pc.a, pc.b, self._sample_point(pc.a, pc.b)
            pc.La = self._limit_L(v, a)
            pc.Lb = self._limit_L(v, b)
            if pc.flat:
                pc.La = pc.Lb = self._f(v["L"], xm)
                pc.inc = True
            else:
                d = self._f(v["dL"], xm)
                if d == 0 or not math.isfinite(d):
                    d = pc.Lb - pc.La
                pc.inc = d > 0
            if not pc.flat:
                pc.inv = self._pick_inverse(pc)
        return pieces

    def _pick_inverse(self, pc):
        lo, hi = min(pc.La, pc.Lb), max(pc.La, pc.Lb)
        if np.isfinite(lo) and np.isfinite(hi):
            tests = [lo + 0.5 * (hi - lo), lo + 0.2 * (hi - lo), lo + 0.8 * (hi - lo)]
        elif np.isfinite(lo):
            tests = [lo + 1.0, lo + 0.01, lo + 10.0]
        elif np.isfinite(hi):
            tests = [hi - 1.0, hi - 0.01, hi - 10.0]
        else:
            tests = [0.0, -3.0, 3.0]
        for name in pc.v["inv"]:
            ok = True
            for s in tests:
                x = self._f(name, s)
                inside = math.isfinite(x) and pc.a <= x <= pc.b
                if not (inside and abs(self._f(pc.v["L"], x) - s) <= 1e-8 * (1 + abs(s))):
                    ok = False
                    break
            if ok:
                return name
        return None

    # -- masses --------------------------------------------------------------------------------------
    def _logdens(self, pc, m):
        return pc.v["logp"] if m == 0 else pc.v["logq"]

    def _quad_logmass(self, pc, m, u, v):
        if not v > u:
            return _NEG_INF
        f = self._k(self._logdens(pc, m))
        xs, gs, w = N.peak_scan(1, f, f, u, v, 0.0, self.theta)
        if not np.isfinite(gs):
            return _NEG_INF
        res, _ = N.gk_integrate(1, f, f, f, u, v, xs, w, 0.0, gs, 0.0, 0, self.theta, QUAD_RTOL, 8)
        return math.log(res[0]) + gs if res[0] > 0 else _NEG_INF

    def _piece_logmass(self, pc, m):
        return float(self._logmass(pc, m, np.array([pc.a]), np.array([pc.b]))[0])

    def _logmass(self, pc, m, u, v):
        """log of the P_m-mass of (u_i, v_i) inside piece pc (arrays)."""
        u = np.asarray(u, float)
        v = np.asarray(v, float)
        out = np.full(u.shape, _NEG_INF)
        ok = v > u
        if not ok.any():
            return out
        tag = "p" if m == 0 else "q"
        vv = pc.v
        left = ok & (u == -np.inf)
        right = ok & ~left & (v == np.inf)
        mid = ok & ~left & ~right
        todo = np.zeros(u.shape, bool)
        with np.errstate(all="ignore"):
            if left.any():
                if vv["logFl" + tag] is not None:
                    out[left] = self._vec(vv["logFl" + tag], v[left])
                else:
                    todo |= left
            if right.any():
                if vv["logSr" + tag] is not None:
                    out[right] = self._vec(vv["logSr" + tag], u[right])
                else:
                    todo |= right
            if mid.any():
                if vv["G" + tag] is not None:
                    gu = self._vec(vv["G" + tag], u[mid])
                    gv = self._vec(vv["G" + tag], v[mid])
                    diff = gv - gu
                    scale = np.maximum(np.abs(gu), np.abs(gv))
                    good = (diff > 0) & (diff > 1e-3 * scale) & np.isfinite(diff)
                    idx = np.nonzero(mid)[0]
                    out[idx[good]] = np.log(diff[good])
                    todo[idx[~good]] = True
                else:
                    todo |= mid
        bad = ok & ~todo & ~(out > -np.inf) & ~(out == -np.inf)
        todo |= bad  # nan from a kernel: recompute by quadrature
        for i in np.nonzero(todo)[0]:
            out[i] = self._quad_logmass(pc, m, u[i], v[i])
        return out

    # -- inverse -------------------------------------------------------------------------------------
    def _inverse(self, pc):
        """(closed-form inverse or L, whether it is one, L) as the engine's checked inverse takes them."""
        f = self._k(pc.v["L"])
        return (self._k(pc.inv), True, f) if pc.inv is not None else (f, False, f)

    def _invert(self, pc, s):
        """L^{-1}(s) on the piece: the closed form where its residual checks out, else bisection."""
        s = np.ascontiguousarray(s, dtype=float)
        if s.size == 0:
            return s
        return N.checked_inverse_many(*self._inverse(pc), s, pc.a, pc.b, pc.inc, 1e-9, self.theta)

    def _beyond_kernels(self, pc, m, prob):
        """How the engine gets the P_m-mass left of x, then right of x, on the piece (``_numerics._beyond``):
        (the closed-form log tail, 0, -) towards an infinite end, or for probabilities (``prob``) the tail
        itself (3) where it agrees with the log form (no log/exp round trip); else, on a finite piece, (the
        antiderivative, 1, its value at that end); else (-, 2, -): no closed form, the mass is integrated."""
        tag = "p" if m == 0 else "q"
        G = pc.v["G" + tag]
        out = []
        for end, name in ((pc.a, "Fl"), (pc.b, "Sr")):
            tail = pc.v["log" + name + tag]
            if np.isinf(end) and tail is not None:
                plain = pc.v.get(name + tag)
                if prob and plain is not None and self._plain_tail_agrees(pc, plain, tail):
                    out.append((self._k(plain), 3, 0.0))
                else:
                    out.append((self._k(tail), 0, 0.0))
            elif G is not None and np.isfinite(pc.a) and np.isfinite(pc.b):
                out.append((self._k(G), 1, self._f(G, end)))
            else:
                out.append((self._k(pc.v["L"]), 2, 0.0))
        return out

    def _plain_tail_agrees(self, pc, plain, tail):
        """The tail probability kernel matches exp(log-tail kernel) to 1e-13 wherever the tail is a normal
        double, on points spread over the piece (the plain form could cancel where the log form does not)."""
        lo, hi = (pc.a, pc.b)
        mid = self._sample_point(lo, hi)
        steps = np.geomspace(1e-3, 1e3, 25) * max(1.0, abs(mid))
        xs = np.concatenate((mid - steps, [mid], mid + steps))
        xs = xs[(xs > lo) & (xs < hi)]
        with np.errstate(all="ignore"):
            ref = np.exp(self._vec(tail, xs))
            val = self._vec(plain, xs)
        ok = (ref > 1e-300) & (ref <= 1.0)
        return bool(ok.sum() >= 5 and np.all(np.abs(val[ok] - ref[ok]) <= 1e-13 * ref[ok]))

    def _piece_tails(self, pc, m, s, split, closed, prob, acc):
        """Add the piece's P_m-mass on the evaluated side of each s_i (``Law.tails``) to acc: one
        compiled pass (inverse, check, closed-form mass); where the closed form fails or is missing, the mass
        from x_s to the piece end is integrated (short intervals by Gauss-Legendre, else adaptively)."""
        if (m, prob) not in pc.beyond:
            pc.beyond[(m, prob)] = self._beyond_kernels(pc, m, prob)
        (kl, ml, gl), (kr, mr, gr) = pc.beyond[(m, prob)]
        xs, pending, right = np.empty(s.size), np.empty(s.size, np.int64), np.empty(s.size, np.bool_)
        k = N.piece_tails(*self._inverse(pc), kl, ml, gl, kr, mr, gr, s, pc.a, pc.b, pc.inc, min(pc.La, pc.Lb),
                          max(pc.La, pc.Lb), pc.logmass[m], 1e-9, split, closed, prob, self.theta, acc, xs, pending,
                          right)
        for r, mode in ((False, ml), (True, mr)):
            sel = np.nonzero(right[:k] == r)[0]
            if sel.size:
                x, idx = xs[sel], pending[sel]
                u, v = (x, np.full(x.size, pc.b)) if r else (np.full(x.size, pc.a), x)
                vals = self._short_logmass(pc, m, u, v) if mode == 1 else self._logmass(pc, m, u, v)
                acc[idx] = acc[idx] + np.exp(vals) if prob else np.logaddexp(acc[idx], vals)

    def _short_logmass(self, pc, m, u, v):
        """log of the P_m-mass of short intervals (u_i, v_i): Gauss-Legendre of orders 8 and 16 on the
        log-density, vectorised; adaptive quadrature where the two disagree beyond 1e-12."""
        out = np.full(u.shape, _NEG_INF)
        ok = np.isfinite(u) & np.isfinite(v) & (v > u)
        est = []
        for xg, wg in (_GL8, _GL16):
            mid, half = 0.5 * (u + v), 0.5 * (v - u)
            nodes = (mid[:, None] + half[:, None] * xg[None, :]).ravel()
            with np.errstate(all="ignore"):
                ld = self._vec(self._logdens(pc, m), np.where(np.isfinite(nodes), nodes, 0.0)).reshape(u.size, -1)
                g = np.max(ld, axis=1, keepdims=True)
                tot = np.sum(wg[None, :] * np.exp(ld - g), axis=1) * half
                est.append(np.log(tot) + g[:, 0])
        agree = ok & np.isfinite(est[1]) & (np.abs(est[0] - est[1]) <= 1e-12 * np.maximum(1.0, np.abs(est[1])))
        out[agree] = est[1][agree]
        for i in np.nonzero(ok & ~agree)[0]:
            out[i] = self._quad_logmass(pc, m, u[i], v[i])
        return out

    def pdf(self, m, s):
        s = np.atleast_1d(np.asarray(s, float))
        out = np.zeros(s.shape)
        for pc in self.mono:
            lo, hi = min(pc.La, pc.Lb), max(pc.La, pc.Lb)
            inside = (s > lo) & (s < hi)
            if inside.any():
                xs = self._invert(pc, s[inside])
                with np.errstate(all="ignore"):
                    dens = np.exp(self._vec(self._logdens(pc, m), xs)) / np.abs(self._vec(pc.v["dL"], xs))
                out[inside] += np.where(np.isfinite(dens), dens, 0.0)
        return out

    # -- CGF -----------------------------------------------------------------------------------------
    def set_closed_cgf(self, names):
        self._cgf_closed = names
        self.cgf_source = "closed form"

    def cgf(self, tau, order=0):
        return _memo_cgf(self, float(tau), order)

    def _f_closed(self, name, tau):
        return self._f(name, tau)

    def _cgf_uncached(self, tau, order):
        if self._cgf_closed is not None and order < len(self._cgf_closed):
            val = self._f(self._cgf_closed[order], tau)
            if math.isfinite(val):
                return val
        return self.cgf_quadrature(tau, order)

    def cgf_vector(self, tau, n=4):
        """[K(tau), K'(tau), ..., K^(n)(tau)] in one pass (closed forms where attached, else quadrature)."""
        return _memo_vector(self, float(tau), n)

    def tilted_abs3(self, tau):
        """E|L_tau - K'(tau)|^3 for the tau-tilted loss (quadrature; the Berry-Esseen term of the SPA)."""
        return self.cgf_quadrature(tau, 3, abs3=True)

    def cgf_quadrature(self, tau, order=0, vector=False, abs3=False):
        """K^(order)(tau) by adaptive quadrature of tilted central moments.

        ``vector``: return [K, K', ..., K^(order)]; ``abs3``: return the tilted absolute third central moment.
        """
        cache = self._tilted_pieces(tau)
        if cache is None:
            return _infinite(order, vector)
        parts = []  # (log-shift, I0, I1) per monotone piece
        for pc, lp, lq, L, xs, w, gs in cache:
            res, _ = N.gk_integrate(0, lp, lq, L, pc.a, pc.b, xs, w, tau, gs, 0.0, 1, self.theta, QUAD_RTOL, 8)
            parts.append((gs, res[0], res[1]))
        at = self.atoms
        mode = 3 if abs3 else 0
        return _combine_cgf(parts, at, tau, order, lambda mu, nm: [
            (gs_, N.gk_integrate(mode, lp_, lq_, L_, pc_.a, pc_.b, xs_, w_, tau, gs_, mu, 0 if abs3 else nm,
                                 self.theta, QUAD_RTOL, 8)[0])
            for pc_, lp_, lq_, L_, xs_, w_, gs_ in cache], vector=vector, abs3=abs3)

    # -- validation ----------------------------------------------------------------------------------
    def _probe_points(self, pc):
        """Points inside a piece where its log-densities are checked: the sample point and geometric offsets of
        1e-3 to 1e3 times its scale on both sides (open interval)."""
        c = self._sample_point(pc.a, pc.b)
        offs = np.geomspace(1e-3, 1e3, 13) * max(1.0, abs(c))
        xs = np.concatenate(([c], c - offs, c + offs))
        if np.isfinite(pc.a) and np.isfinite(pc.b):
            xs = np.concatenate((xs, np.linspace(pc.a, pc.b, 17)[1:-1]))
        return np.unique(xs[np.isfinite(xs) & (xs > pc.a) & (xs < pc.b)])

    def _check_defined(self, pc):
        """Both log-density kernels are numbers (not NaN) at the piece's probe points; else ``DensityUndefined``
        (a negative density, or kernels that over- or underflow at the parameter values: ``Mechanism`` tells
        which)."""
        xs = self._probe_points(pc)
        for m, name in ((0, "p"), (1, "q")):
            with np.errstate(all="ignore"):
                lv = self._vec(self._logdens(pc, m), xs)
            bad = np.nonzero(np.isnan(lv))[0]
            if bad.size:
                x = float(xs[bad[np.argmin(np.abs(xs[bad] - self._sample_point(pc.a, pc.b)))]])
                raise DensityUndefined(name, x, "density")

    def _validate(self, pieces):
        """Normalisation of p and q, and supports that overlap (the masses of all pieces)."""
        for m, name in ((0, "p"), (1, "q")):
            total = math.exp(_lse([pc.logmass[m] for pc in pieces]))
            if not abs(total - 1.0) <= NORMALISATION_TOL:
                raise SpecificationError(
                    f"density {name} integrates to {total:.10g} over the domain, not 1 "
                    f"(tolerance {NORMALISATION_TOL:g}); check the normalising constant")
        if all(pc.logmass[0] == _NEG_INF or pc.logmass[1] == _NEG_INF for pc in pieces):
            raise SpecificationError("p and q have disjoint supports: the privacy loss is infinite everywhere")


CGF_MEMO_SIZE = 4096
_GL8 = np.polynomial.legendre.leggauss(8)
_GL16 = np.polynomial.legendre.leggauss(16)


def _memo_cgf(core, tau, order):
    """CGF values are pure functions of (tau, order) for a bound mechanism: remember them (bounded)."""
    memo = core.__dict__.setdefault("_cgf_memo", {})
    key = (tau, order)
    if key not in memo:
        if len(memo) >= CGF_MEMO_SIZE:
            memo.clear()
        memo[key] = core._cgf_uncached(tau, order)
    return memo[key]


def _infinite(order, vector):
    return np.full(order + 1, np.inf) if vector else np.inf


def _memo_vector(core, tau, n):
    memo = core.__dict__.setdefault("_cgf_memo", {})
    key = (tau, "vector", n)
    if key not in memo:
        if len(memo) >= CGF_MEMO_SIZE:
            memo.clear()
        closed = core._cgf_closed
        vec = None
        if closed is not None and len(closed) > n:
            vec = np.array([core._f_closed(closed[j], tau) for j in range(n + 1)])
            if not np.all(np.isfinite(vec)):
                vec = None
        memo[key] = vec if vec is not None else core.cgf_quadrature(tau, n, vector=True)
    return memo[key]


def _infinite_stats(n, center):
    """``tilt_stats_about``'s answer where the tilted MGF is infinite."""
    return np.full(n + 1, np.inf), np.inf, center


def _atom_terms(at, tau):
    """(log-weights, values) of the atoms of L under the tilted measure, or None if M(tau) = inf."""
    v, lp, lq = at.values, at.logP, at.logQ
    w = []
    vals = []
    for vi, lpi, lqi in zip(v, lp, lq):
        if vi == np.inf:
            if lpi == _NEG_INF:
                continue
            if tau > 0:
                return None
            if tau == 0:
                w.append(lpi)
                vals.append(np.inf)
            continue
        if vi == -np.inf:
            if lqi == _NEG_INF:
                continue
            if tau < -1:
                return None
            if tau == -1:
                w.append(lqi)
                vals.append(-np.inf)
            continue
        if tau == -1:
            w.append(lqi)
        else:
            w.append(lpi + tau * vi)
        vals.append(vi)
    return np.array(w, float), np.array(vals, float)


def _combine_cgf(parts, at, tau, order, central_pass, vector=False, abs3=False):
    """Combine continuous-part integrals (log-shift, I0, I1) and atoms into K^(order)(tau).

    ``vector``: [K, K', ..., K^(order)] instead; ``abs3``: the tilted E|L - K'|^3 (central_pass then
    integrates |L - mu|^3).
    """
    terms = _atom_terms(at, tau)
    if terms is None:
        return _infinite(order, vector)
    aw, av = terms
    shifts = [p[0] for p in parts] + list(aw)
    if not shifts:
        raise DerivationError("the tilted distribution has no mass")
    g = max(shifts)
    I0 = sum(p[1] * math.exp(p[0] - g) for p in parts) + float(np.sum(np.exp(aw - g)))
    if not I0 > 0 or not math.isfinite(I0):
        return _infinite(order, vector) if order == 0 or vector or not I0 > 0 else np.inf
    K0 = math.log(I0) + g
    if order == 0 and not abs3:
        return np.array([K0]) if vector else K0
    if np.any(np.isinf(av) & (aw > _NEG_INF)):
        return _infinite(order, vector)
    I1 = sum(p[2] * math.exp(p[0] - g) for p in parts) + float(np.sum(np.exp(aw - g) * av))
    mu = I1 / I0
    if abs3:
        tot = sum(float(res[0]) * math.exp(gs - g) for gs, res in central_pass(mu, 0))
        tot += float(np.sum(np.exp(aw - g) * np.abs(av - mu) ** 3))
        return tot / I0
    if order == 1:
        return np.array([K0, mu]) if vector else mu
    cen = np.zeros(order + 1)
    for gs, res in central_pass(mu, order):
        cen += res * math.exp(gs - g)
    d = av - mu
    for j in range(order + 1):
        cen[j] += float(np.sum(np.exp(aw - g) * d ** j))
    cm = cen / I0
    full = np.zeros(7)
    full[: order + 1] = cm[: order + 1]
    ks = N.cumulants_from_central(full[2], full[3], full[4], full[5], full[6])
    if vector:
        return np.concatenate(([K0, mu], ks[: order - 1]))
    return ks[order - 2]


class DiscreteCore(Law):
    """Law of L for probability mass functions on a finite set or the integers."""

    MAX_POINTS = 20_000_000

    def __init__(self, structure, mod, theta):
        self.st, self.mod, self.theta = structure, mod, np.ascontiguousarray(theta, dtype=float)
        ref = N.kernel_refs(mod)
        lp_k, lq_k = ref(structure["logp"]), ref(structure["logq"])
        self._lp, self._lq = lp_k, lq_k
        if structure["kind"] == "finite":
            xs = np.asarray(structure["points"], float)
        else:
            xs = self._integer_window()
        with np.errstate(all="ignore"):
            lp = N.vmap(lp_k, xs, self.theta)
            lq = N.vmap(lq_k, xs, self.theta)
        for name, arr in (("p", lp), ("q", lq)):
            bad = np.isnan(arr) | (arr == np.inf)
            if bad.any():
                raise DensityUndefined(name, xs[bad][0], "pmf")
            total = math.exp(_lse(arr))
            if not abs(total - 1.0) <= NORMALISATION_TOL:
                raise SpecificationError(f"pmf {name} sums to {total:.10g} over the domain, not 1 "
                                         f"(tolerance {NORMALISATION_TOL:g}); check the normalising constant")
        # the window holds all mass down to e^-800: renormalising removes the normaliser's rounding
        lp = lp - _lse(lp)
        lq = lq - _lse(lq)
        keep = (lp > _NEG_INF) | (lq > _NEG_INF)
        lp, lq, xs = lp[keep], lq[keep], xs[keep]
        if not np.any((lp > _NEG_INF) & (lq > _NEG_INF)):
            raise SpecificationError("p and q have disjoint supports: the privacy loss is infinite everywhere")
        with np.errstate(all="ignore"):
            Lk = N.vmap(ref(structure["L"]), xs, self.theta)
            # the derived loss is exact on flat stretches where lp - lq would pick up rounding
            # where one log-pmf kernel underflows to -inf (e.g. a mixture's log evaluated as log(sum of exps)) but
            # the derived loss is finite, that pmf is positive there: p = q e^L exactly (not an atom at +-inf)
            fin = np.isfinite(Lk)
            lp = np.where((lp == _NEG_INF) & (lq > _NEG_INF) & fin, lq + Lk, lp)
            lq = np.where((lq == _NEG_INF) & (lp > _NEG_INF) & fin, lp - Lk, lq)
            Lk = np.where(fin & (np.abs(Lk - (lp - lq)) <= 1e-9 * (1 + np.abs(Lk))), Lk, lp - lq)
            L = np.where(lq == _NEG_INF, np.inf, np.where(lp == _NEG_INF, -np.inf, Lk))
        self.points = xs
        self.atoms = AtomSet(L, lp, lq)
        self.mono = []
        self.support = (float(self.atoms.values[0]), float(self.atoms.values[-1]))
        self._cgf_closed = None
        self.cgf_source = "exact sum"

    def _integer_window(self):
        th = self.theta

        def g(k):
            return max(self._lp(float(k), th), self._lq(float(k), th))

        cands = [0] + [s * 2 ** j for j in range(0, 45) for s in (-1, 1)]
        vals = [g(k) for k in cands]
        best = int(np.nanargmax(vals)) if not all(v != v for v in vals) else 0
        kmax, gmax = cands[best], vals[best]
        if not math.isfinite(gmax):
            for k in cands:  # a NaN: the pmf is negative there, or its kernels overflow at the parameter values
                for name, f in (("p", self._lp), ("q", self._lq)):
                    if math.isnan(f(float(k), th)):
                        raise DensityUndefined(name, k, "pmf")
            raise SpecificationError("the pmf is zero or undefined everywhere it was probed")
        thr = gmax - 800.0
        ends = []
        for side in (-1, 1):
            step, inner = 1, kmax
            while True:
                k = kmax + side * step
                if not g(k) > thr:
                    break
                inner = k
                step *= 2
                if step > 2 ** 45:
                    raise SpecificationError("the pmf does not decay: its support is too wide to enumerate")
            outer = kmax + side * step
            while abs(outer - inner) > 1:  # last point above threshold between inner and outer
                mid = (inner + outer) // 2
                if g(mid) > thr:
                    inner = mid
                else:
                    outer = mid
            ends.append(inner)
        lo, hi = ends
        if hi - lo + 1 > self.MAX_POINTS:
            raise SpecificationError(f"the pmf's support has {hi - lo + 1} significant points, more than "
                                     f"{self.MAX_POINTS} can be enumerated")
        return np.arange(lo, hi + 1, dtype=float)

    def set_closed_cgf(self, names):
        self._cgf_closed = names
        self.cgf_source = "closed form"

    def pdf(self, m, s):
        return np.zeros(np.atleast_1d(s).shape)

    def cgf(self, tau, order=0):
        return _memo_cgf(self, float(tau), order)

    def _cgf_uncached(self, tau, order):
        if self._cgf_closed is not None and order < len(self._cgf_closed):
            val = float(getattr(self.mod, "k_" + self._cgf_closed[order])(tau, self.theta))
            if math.isfinite(val):
                return val
        return self.cgf_quadrature(tau, order)

    def cgf_quadrature(self, tau, order=0, vector=False, abs3=False):
        return _combine_cgf([], self.atoms, float(tau), order, lambda mu, nm: [], vector=vector, abs3=abs3)

    def cgf_vector(self, tau, n=4):
        return _memo_vector(self, float(tau), n)

    def tilted_abs3(self, tau):
        return self.cgf_quadrature(tau, 3, abs3=True)

    def _f_closed(self, name, tau):
        return float(getattr(self.mod, "k_" + name)(tau, self.theta))
