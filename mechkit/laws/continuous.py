"""The law of L for densities on an interval of the real line: the domain cut into pieces on which L is flat (an
atom) or strictly monotone, L's values at the ends (``limits``), inverses, masses by closed form or quadrature,
and the validation of the densities (non-negative, normalised).
"""
from __future__ import annotations

import math

import numpy as np

from ..engine import numerics as N
from ..errors import SpecificationError
from . import limits
from .core import (
    GL8,
    GL16,
    NEG_INF,
    NORMALISATION_TOL,
    QUAD_RTOL,
    AtomSet,
    DensityUndefined,
    Law,
    combine_cgf,
    infinite_cgf,
    lse,
    memoised,
    memo_abs,
    memo_cgf,
    memo_vector,
)


#: a floor's steps are enumerated outward until both densities' masses on a step fall below this, at most MAX_STEPS
STEP_FLOOR, MAX_STEPS = 1e-300, 200_000


class _Piece:
    __slots__ = ("a", "b", "key", "v", "flat", "inc", "La", "Lb", "inv", "logmass", "beyond")


def _atom_piece(a, b, wp, wq, v):
    """A flat pseudo-piece [a, b] carrying P- and Q-masses wp, wq >= 0 (an output's point mass, a floor's step): one
    atom of L; ``v`` marks it ("dirac") and may give its loss ("L")."""
    pc = _Piece()
    pc.a, pc.b, pc.key, pc.v, pc.flat, pc.inv, pc.beyond = a, b, None, v, True, None, {}
    with np.errstate(divide="ignore"):
        pc.logmass = [float(np.log(wp)), float(np.log(wq))]
    return pc


#: relative offsets of the probe points around a piece's sample point (``_probe_points``), built once
_PROBE_OFFSETS = np.geomspace(1e-3, 1e3, 13)


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

    # -- small evaluation helpers ---------------------------------------------------------------
    def _const(self, name):
        return float(N.call(self._k(name), 0.0, self.theta))

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
        key = "".join(signs) or "0"
        if key not in self.st["variants"]:
            raise SpecificationError(f"at x = {x:g} the densities' Abs arguments and Piecewise conditions have signs "
                                     f"{key}, a combination the derivation ruled out; report this as a bug")
        return key

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

    def _limit_L(self, v, x, inside):
        """L at a piece end; at +/-inf from the symbolic limit, checked against numeric evidence (``limits``)."""
        if np.isfinite(x):
            return self._end_value(v, x, inside)
        walk = limits.double_walk(self._vec(v["L"], np.copysign(limits.WALK, x)))  # one compiled pass
        simp, raw = ("Llo", "Llo_raw") if x < 0 else ("Lhi", "Lhi_raw")
        sym = [self._const(v[n]) for n in (raw, simp) if v.get(n) is not None]

        def sym_more():  # the simplified form's, where the derivation left it to be asked for (derive.py)
            if v.get(simp) is not None or v.get("Lsimp") is None:
                return []
            return [limits.symbolic_limit(v["Lsimp"], self.st.get("var"), self.st.get("theta"), self.theta, x)]

        def high_precision():
            fn = getattr(self.mod, "mp_" + v["L"], None)
            return None if fn is None else limits.high_precision_walk(fn, self.theta, 1 if x > 0 else -1)

        def symbolic_at_values():
            return limits.symbolic_limit_at(v.get("Lexpr"), self.st.get("var"), self.st.get("theta"), self.theta, x)

        return limits.decide(sym, walk, high_precision, x, symbolic_at_values, sym_more)

    def _end_value(self, v, x, inside):
        """L at a finite piece end; where the kernel is not a number there (a density vanishing at the end: 0/0 or
        log of 0 against log of a negative rounding), its one-sided limit from inside the piece: evaluated at
        1e-6, 1e-9 and 1e-12 (relative) inside; growing by more than 1 per step means it diverges."""
        val = self._f(v["L"], x)
        if not math.isnan(val):
            return val
        vals = [self._f(v["L"], x + inside * d * max(1.0, abs(x))) for d in (1e-6, 1e-9, 1e-12)]
        if not all(math.isfinite(u) for u in vals):
            return math.nan
        if abs(vals[2] - vals[1]) > 1.0 and (vals[2] - vals[1]) * (vals[1] - vals[0]) > 0:
            return math.copysign(math.inf, vals[2] - vals[1])
        return vals[2]

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
            if pc.v.get("zero") == "pq":
                continue  # neither density has mass here
            if pc.v.get("floor"):
                pieces += self._floor_steps(a, b, pc.v)
                continue
            pc.flat = pc.v["flat"]
            self._check_defined(pc)
            pc.inv = None
            pc.beyond = {}
            pc.logmass = [NEG_INF if pc.v.get("zero") == "pq"[m] else self._piece_logmass(pc, m) for m in (0, 1)]
            pieces.append(pc)
        pieces += self._point_masses()
        self._validate(pieces)
        for pc in pieces:
            if pc.v.get("dirac"):  # a point mass of the output: one atom of L (+-inf where one density has none)
                lp, lq = pc.logmass
                pc.La = pc.Lb = math.inf if lq == NEG_INF else -math.inf if lp == NEG_INF else pc.v.get("L", lp - lq)
                pc.inc = True
                continue
            v, a, b, xm = pc.v, pc.a, pc.b, self._sample_point(pc.a, pc.b)
            if v.get("zero"):  # q = 0 < p: L = +inf; p = 0 < q: L = -inf (a point mass either way)
                pc.La = pc.Lb = math.inf if v["zero"] == "q" else -math.inf
                pc.inc = True
                continue
            pc.La = self._limit_L(v, a, 1.0)
            pc.Lb = self._limit_L(v, b, -1.0)
            for end, val in ((a, pc.La), (b, pc.Lb)):
                if math.isnan(val):
                    raise SpecificationError(f"the derived privacy loss is not a number at x = {end:g} (a piece of "
                                             "the output domain); report this as a bug")
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

    def _point_masses(self):
        """Flat pseudo-pieces [x, x] for the point masses of the output (DiracDelta terms), one per location:
        p's and q's masses at locations equal in value merged (they are one output)."""
        found = {}
        for e in self.st.get("atoms") or ():
            x = self._const(e["at"])
            if not self.lo <= x <= self.hi:
                raise SpecificationError(f"a point mass at x = {x:g} lies outside the domain "
                                         f"[{self.lo:g}, {self.hi:g}]")
            key = next((k for k in found if abs(k - x) <= 1e-12 * max(1.0, abs(x))), x)
            found[key] = [a + (self._const(e[k]) if e[k] else 0.0) for a, k in zip(found.get(key, [0.0, 0.0]), "pq")]
        out = []
        for x, (wp, wq) in found.items():
            if not (wp >= 0 and wq >= 0):
                raise SpecificationError(f"the weight of the point mass at x = {x:g} is negative or not a number "
                                         f"(p: {wp:.6g}, q: {wq:.6g})")
            if max(wp, wq) > 0:
                out.append(_atom_piece(x, x, wp, wq, {"dirac": True}))
        return out

    def _floor_steps(self, a, b, v):
        """The steps of a floor variant on [a, b] (``derive._floor_variant``): flat pseudo-pieces, one point mass of L
        each, between the points where a floor argument u_j (linear) crosses an integer; n_j = floor(u_j) on a step
        fills theta's slot j for its kernels.  Walked outward from a finite end (from 0 both ways on the whole line)
        until a step's masses are both below ``STEP_FLOOR`` (as a pmf's enumeration stops), at most ``MAX_STEPS``."""
        if not (math.isfinite(a) or math.isfinite(b)):
            return self._floor_steps(a, 0.0, v) + self._floor_steps(0.0, b, v)
        theta = np.concatenate((self.theta, np.zeros(len(self.st["floor_slots"]))))
        us = [(j, self._f(name, 0.0), self._f(name, 1.0) - self._f(name, 0.0)) for j, name in v["floor"]]
        d, x, end = (1.0, a, b) if math.isfinite(a) else (-1.0, b, a)
        # the cell index of each u_j just beyond x in the walking direction, and the direction u_j moves in
        cells = {j: (math.floor(beta + alpha * x) if alpha * d > 0 else math.ceil(beta + alpha * x) - 1)
                 for j, beta, alpha in us}
        kp, kq, kL = self._k(v["Gp"]), self._k(v["Gq"]), self._k(v["L"])
        out, seen = [], False
        for _ in range(MAX_STEPS):
            nxt = {j: ((cells[j] + (1 if alpha * d > 0 else 0)) - beta) / alpha for j, beta, alpha in us}
            y = min(nxt.values()) if d > 0 else max(nxt.values())
            y = min(y, end) if d > 0 else max(y, end)
            for j, _, _ in us:
                theta[len(self.theta) + j] = cells[j]
            lo, hi = (x, y) if d > 0 else (y, x)
            m = [float(k(hi, theta) - k(lo, theta)) for k in (kp, kq)]
            if min(m) < -1e-12 * max(max(m), 1e-300) or any(math.isnan(w) for w in m):
                raise SpecificationError(f"a density's mass on the step [{lo:g}, {hi:g}] is negative or undefined")
            if max(m) > 0:
                step = {"dirac": True, "L": float(kL(0.0, theta))}
                out.append(_atom_piece(lo, hi, max(m[0], 0.0), max(m[1], 0.0), step))
                seen = True
            if y == end or (seen and max(m) < STEP_FLOOR):
                return out
            for j, beta, alpha in us:  # crossings within rounding of y are the same point (p and q step together)
                if abs(nxt[j] - y) <= 1e-12 * max(1.0, abs(y)):
                    cells[j] += 1 if alpha * d > 0 else -1
            x = y
        raise SpecificationError(f"more than {MAX_STEPS} steps of a floor carry mass: the steps are too fine for "
                                 "their decay")

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
            return NEG_INF
        f = self._k(self._logdens(pc, m))
        xs, gs, w = N.peak_scan_at(1, f.address, f.address, u, v, 0.0, self.theta)
        if not np.isfinite(gs):
            return NEG_INF
        res, _ = N.gk_integrate(1, f, f, f, u, v, xs, w, 0.0, gs, 0.0, 0, self.theta, QUAD_RTOL, 8)
        return math.log(res[0]) + gs if res[0] > 0 else NEG_INF

    def _piece_logmass(self, pc, m):
        return float(self._logmass(pc, m, np.array([pc.a]), np.array([pc.b]))[0])

    def _logmass(self, pc, m, u, v):
        """log of the P_m-mass of (u_i, v_i) inside piece pc (arrays)."""
        u = np.asarray(u, float)
        v = np.asarray(v, float)
        out = np.full(u.shape, NEG_INF)
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
        inv, has_inv, f = self._inverse(pc)
        k = N.piece_tails(inv.address, has_inv, f.address, kl.address, ml, gl, kr.address, mr, gr, s, pc.a, pc.b,
                          pc.inc, min(pc.La, pc.Lb), max(pc.La, pc.Lb), pc.logmass[m], 1e-9, split, closed, prob,
                          self.theta, acc, xs, pending, right)
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
        out = np.full(u.shape, NEG_INF)
        ok = np.isfinite(u) & np.isfinite(v) & (v > u)
        est = []
        for xg, wg in (GL8, GL16):
            mid, half = 0.5 * (u + v), 0.5 * (v - u)
            nodes = (mid[:, None] + half[:, None] * xg[None, :]).ravel()
            with np.errstate(all="ignore"):
                ld = self._vec(self._logdens(pc, m), np.where(np.isfinite(nodes), nodes, 0.0)).reshape(u.size, -1)
                g = np.max(ld, axis=1, keepdims=True)
                tot = np.sum(wg[None, :] * np.exp(ld - g), axis=1) * half
                est.append(np.log(tot) + g[:, 0])
        with np.errstate(invalid="ignore"):  # -inf - -inf where a density vanishes on the whole interval
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
    def cgf(self, tau, order=0):
        return memo_cgf(self, float(tau), order)

    def closed_cgf_value(self, name, tau):
        """The closed-form CGF kernel ``name`` at ``tau``."""
        return self._f(name, tau)

    def _cgf_uncached(self, tau, order):
        closed = self.closed_cgf
        if closed is not None and order < len(closed):
            val = self._f(closed[order], tau)
            if math.isfinite(val):
                return val
        return self.cgf_quadrature(tau, order)

    def cgf_vector(self, tau, n=4):
        """[K(tau), K'(tau), ..., K^(n)(tau)] in one pass (closed forms where attached, else quadrature)."""
        return memo_vector(self, float(tau), n)

    def tilted_abs(self, tau, power=3):
        """E|L_tau - K'(tau)|^power (power 3 or 1) for the tau-tilted loss (quadrature; the Berry-Esseen term, the
        mean absolute deviation; memoised)."""
        return memo_abs(self, float(tau), power)

    def cgf_quadrature(self, tau, order=0, vector=False, abs_power=0):
        """K^(order)(tau) by adaptive quadrature of tilted central moments.

        ``vector``: return [K, K', ..., K^(order)]; ``abs_power`` 1 or 3: return the tilted absolute first or third
        central moment.
        """
        cache, parts = memoised(self, (tau, "pass0"), lambda: self._mass_and_mean_pass(tau))
        if cache is None:
            return infinite_cgf(order, vector)
        at = self.atoms
        mode = {0: 0, 3: 3, 1: 5}[abs_power]
        return combine_cgf(parts, at, tau, order, lambda mu, nm: [
            (gs_, N.gk_integrate(mode, lp_, lq_, L_, pc_.a, pc_.b, xs_, w_, tau, gs_, mu, 0 if abs_power else nm,
                                 self.theta, QUAD_RTOL, 8, self._kink(pc_, mu) if abs_power else math.nan)[0])
            for pc_, lp_, lq_, L_, xs_, w_, gs_ in cache], vector=vector, abs_power=abs_power)

    def _kink(self, pc, mu):
        """The x on the piece where L = mu (the kink of |L - mu|^p), from the closed-form inverse where its residual
        checks out; nan where there is none (the quadrature then starts from equal intervals)."""
        if pc.inv is None or not min(pc.La, pc.Lb) < mu < max(pc.La, pc.Lb):
            return math.nan
        with np.errstate(all="ignore"):
            xk = self._f(pc.inv, mu)
            ok = pc.a < xk < pc.b and abs(self._f(pc.v["L"], xk) - mu) <= 1e-9 * (1.0 + abs(mu))
        return xk if ok else math.nan

    def _mass_and_mean_pass(self, tau):
        """(the pieces with tilted mass (``_tilted_pieces``; None where M(tau) is infinite), [(log-shift, I0, I1)
        per piece]): the first quadrature pass of ``cgf_quadrature``, memoised per tau (the cumulants and both
        absolute moments at a tilt start from the same pass)."""
        cache = self._tilted_pieces(tau)
        if cache is None:
            return None, None
        parts = []
        for pc, lp, lq, L, xs, w, gs in cache:
            res, _ = N.gk_integrate(0, lp, lq, L, pc.a, pc.b, xs, w, tau, gs, 0.0, 1, self.theta, QUAD_RTOL, 8)
            parts.append((gs, res[0], res[1]))
        return cache, parts

    # -- validation ----------------------------------------------------------------------------------
    def _probe_points(self, pc):
        """Points inside a piece where its log-densities are checked: the sample point and geometric offsets of
        1e-3 to 1e3 times its scale on both sides (open interval)."""
        c = self._sample_point(pc.a, pc.b)
        offs = _PROBE_OFFSETS * max(1.0, abs(c))
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
            if pc.v.get("zero") == name:
                continue
            with np.errstate(all="ignore"):
                lv = self._vec(self._logdens(pc, m), xs)
            bad = np.nonzero(np.isnan(lv))[0]
            if bad.size:
                x = float(xs[bad[np.argmin(np.abs(xs[bad] - self._sample_point(pc.a, pc.b)))]])
                raise DensityUndefined(name, x, "density")

    def _validate(self, pieces):
        """Normalisation of p and q, and supports that overlap (the masses of all pieces)."""
        for m, name in ((0, "p"), (1, "q")):
            total = math.exp(lse([pc.logmass[m] for pc in pieces]))
            if not abs(total - 1.0) <= NORMALISATION_TOL:
                raise SpecificationError(
                    f"density {name} integrates to {total:.10g} over the domain, not 1 "
                    f"(tolerance {NORMALISATION_TOL:g}); check the normalising constant")
        if all(pc.logmass[0] == NEG_INF or pc.logmass[1] == NEG_INF for pc in pieces):
            raise SpecificationError("p and q have disjoint supports: the privacy loss is infinite everywhere")
