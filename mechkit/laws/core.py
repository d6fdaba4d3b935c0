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

import copy
import math

import numpy as np

from ..engine import numerics as N
from ..errors import DerivationError, SpecificationError

NORMALISATION_TOL = 1e-6


QUAD_RTOL = 1e-13


#: tolerance of ``tilt_stats`` (the SPA's certificates): its error estimate is conservative (the measured error at
#: 1e-11 is ~1e-13), and the SPA's bounds allow 1e-9 relative for the quadrature
TILT_RTOL = 1e-11


#: ``tilt_stats`` starts its quadrature from this many intervals on each side of the kink of |L - mu|^3
TILT_NSPLIT = 2


NEG_INF = -np.inf


class DensityUndefined(SpecificationError):
    """A log-density kernel is NaN at ``x``: the density (``which`` = "p" or "q") is negative or not real there, or
    its compiled kernels over- or underflow at the parameter values (``Mechanism`` decides which, in mpmath)."""

    def __init__(self, which, x, word="density"):
        super().__init__(f"{word} {which} is negative or undefined at x = {x:g}")
        self.which, self.x = which, float(x)


def lse(a, axis=None):
    a = np.asarray(a, dtype=float)
    if a.size == 0:
        return NEG_INF
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
            starts = np.concatenate(([0], np.nonzero(v[1:] != v[:-1])[0] + 1))  # inf == inf: merged (no inf - inf)
            v = v[starts]
            lp = np.logaddexp.reduceat(lp, starts)
            lq = np.logaddexp.reduceat(lq, starts)
        self.values, self.logP, self.logQ = np.ascontiguousarray(v), lp, lq
        # log of the mass before index j and from index j on, j = 0..n
        none = np.array([NEG_INF])
        self._below = [np.concatenate((none, np.logaddexp.accumulate(x))) for x in (lp, lq)]
        self._above = [np.concatenate((np.logaddexp.accumulate(x[::-1])[::-1], none)) for x in (lp, lq)]

    def logmass(self, m):
        return self.logP if m == 0 else self.logQ

    def tails(self, m, s, split, closed, prob, out):
        """out = the P_m-mass of the atoms on the evaluated side of each s_i, or its log (``Law.tails``)."""
        if not self.values.size:  # no atoms (most continuous laws): mass 0 everywhere, atom_tails left uncompiled
            out.fill(0.0 if prob else NEG_INF)
            return
        N.atom_tails(self.values, self._below[m], self._above[m], s, split, closed, prob, out)


class Law:
    """What both cores share: tail probabilities of L from its atoms and its monotone pieces (``mono``), and the
    closed-form CGF where one is offered and checked."""

    #: where the CGF comes from when no closed form is used (``cgf_source``)
    NUMERIC_CGF = "quadrature"
    _cgf_closed = None
    _cgf_offer = None

    def offer_closed_cgf(self, names, check):
        """Offer the closed-form CGF kernels ``names`` (K, K', ...); they are used once ``check()`` returns True.
        The check runs on the first CGF query, not here: a query that never asks for the CGF (the FFT's) pays
        for neither the check's quadrature nor its compilation."""
        self._cgf_offer = (names, check)

    @property
    def closed_cgf(self):
        """The closed-form CGF's kernel names (K, K', ...), or None where none was offered or its check failed."""
        offer = self._cgf_offer
        if offer is not None:
            self._cgf_offer = None
            if offer[1]():
                self._cgf_closed = offer[0]
        return self._cgf_closed

    @property
    def cgf_source(self):
        """'closed form', or the numeric method (``NUMERIC_CGF``) where no checked closed form is used."""
        return "closed form" if self.closed_cgf is not None else self.NUMERIC_CGF

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
            xs, gs, w = N.peak_scan_at(0, lp.address, lq.address, pc.a, pc.b, tau, self.theta)
            if not np.isfinite(gs):
                if gs == np.inf:
                    return None
                continue
            if N.tilt_diverges_at(lp.address, lq.address, pc.a, pc.b, tau, gs, self.theta):
                return None
            out.append((pc, lp, lq, L, xs, w, gs))
        return out

    def finite_part(self):
        """This law without its point masses at +-inf: a view sharing the pieces, kernels and finite atoms, whose
        measures are the restrictions of P and Q to the outputs where both densities are positive (total masses
        below 1): its CGF is log E_P[e^(tau L); L finite] (``PLRV.cgf_finite``).  For the generating-function queries
        (``cgf_finite``, the SPA, Edgeworth); the law itself where it has no such masses.  Made once."""
        got = self.__dict__.get("_finite")
        if got is None:
            at = self.atoms
            fin = np.isfinite(at.values)
            got = self
            if not fin.all():
                got = copy.copy(self)
                for name in ("_cgf_memo", "_single", "_finite"):  # memos of the whole law
                    got.__dict__.pop(name, None)
                got._cgf_offer = got._cgf_closed = None  # a closed form is the whole law's
                got.atoms = AtomSet(at.values[fin], at.logP[fin], at.logQ[fin])
                ends = [v for pc in self.mono for v in (pc.La, pc.Lb)] + got.atoms.values.tolist()
                got.support = (float(np.nanmin(ends)), float(np.nanmax(ends)))
            self._finite = got
        return got

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
        got = self._single_piece_pass(tau, center, n, TILT_RTOL, sign)
        if got is not None:
            return got
        vec, A, c = self.tilt_stats_about(tau, center, n)
        if sign != 1.0:
            vec = vec * sign ** np.arange(n + 1)
        return vec, A, c

    def single_piece_cgf(self, tau):
        """K(tau) of a law with one monotone piece and no atoms from the tilted-moment pass (``tilt_stats_piece``: the
        trapezoid rule where the piece is the whole line with short tails, else adaptive GK21; to ``QUAD_RTOL``, as
        the CGF's own quadrature, and 2-5x faster: 30-55 us against ~100 us a subsampled Gaussian's); +inf where
        the tilted MGF diverges; None for any other law, or where the piece has no tilted mass (the general path
        decides)."""
        got = self._single_piece_pass(tau, math.nan, 1, QUAD_RTOL, 1.0)  # K and K' converged: K''s would add a level
        return None if got is None else float(got[0][0])

    def _single_piece_pass(self, tau, center, n, rtol, sign):
        """``tilt_stats_piece``'s (vec, A, centre) in one compiled call for a law with one monotone piece and no
        atoms (vec inf where the tilted MGF diverges); None for any other law, or where the piece has no tilted
        mass."""
        pc = self._single_piece()
        if pc is None:
            return None
        addresses, grid = self._piece_addresses(pc)
        vec, A, c, status = N.tilt_stats_piece(*addresses, pc.a, pc.b, pc.inc, pc.La, pc.Lb, tau, center, n,
                                               self.theta, rtol, TILT_NSPLIT, *grid, sign)
        return (vec, A, c) if status < 2 else None

    def cgf_tilted(self, tau):
        """K(tau) for accountants that use the engine's tilted moments anyway (Edgeworth's Chernoff lines): from
        ``single_piece_cgf`` where the law is one monotone piece without atoms and no closed form is attached, else
        ``cgf(tau)``.  Memoised apart from ``cgf``: the two agree to the quadrature's tolerance, not bit for bit,
        and the FFT's and RDP's answers keep theirs (an FFT query does not import the tilted moments: ~2-3 s of
        compilation on a fresh machine)."""
        if self._single_piece() is None or self.closed_cgf is not None:
            return self.cgf(tau, 0)

        def compute():
            got = self.single_piece_cgf(tau)
            return self.cgf(tau, 0) if got is None else got
        return memoised(self, (tau, "single"), compute)

    def cumulants_abs3(self, tau, n):
        """([K(tau), ..., K^(n)(tau)], A) with A >= E|L_tau - K'(tau)|^3, for accountants that need both at one
        tilt (the Edgeworth accountant's cumulants and uniform bound), memoised.  A law with one monotone piece and
        no atoms: two tilted-moment passes (``tilt_stats_piece``), the first about the tilted law's mode (or the
        closed-form mean) to locate the mean, the second about it to ``QUAD_RTOL`` (the cumulants' own tolerance;
        A is the pass's absolute third moment, as in the SPA's certificates); the cumulants from closed forms where
        attached.  Any other law: ``cgf_vector`` and ``tilted_abs`` (adaptive quadrature)."""
        def compute():
            if self._single_piece() is not None:
                closed = memo_vector(self, tau, n) if self.closed_cgf is not None else None
                if closed is not None:
                    mean = float(closed[1])
                else:
                    first = self._single_piece_pass(tau, math.nan, 1, TILT_RTOL, 1.0)
                    mean = float(first[0][1]) if first is not None else math.nan
                got = self._single_piece_pass(tau, mean, n, QUAD_RTOL, 1.0) if math.isfinite(mean) else None
                if got is not None and np.all(np.isfinite(got[0])) and math.isfinite(got[1]):
                    return (got[0] if closed is None else closed), float(got[1])
            return self.cgf_vector(tau, n), float(self.tilted_abs(tau, 3))
        return memoised(self, (tau, "cumulants_abs3", n), compute)

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


CGF_MEMO_SIZE = 4096


#: Gauss-Legendre 8 and 16 (nodes, weights): short intervals' masses (continuous) and the screen's quadrature
GL8 = np.polynomial.legendre.leggauss(8)
GL16 = np.polynomial.legendre.leggauss(16)


def memoised(core, key, compute):
    """The law's CGF-type values are pure functions of their arguments for a bound mechanism: remembered under
    ``key`` (bounded; ``compute()`` on a miss)."""
    memo = core.__dict__.setdefault("_cgf_memo", {})
    got = memo.get(key)   # read once: another thread may clear the memo meanwhile (the FFT's two directions)
    if got is None:
        if len(memo) >= CGF_MEMO_SIZE:
            memo.clear()
        got = memo[key] = compute()
    return got


def memo_cgf(core, tau, order):
    """K^(order)(tau), memoised."""
    return memoised(core, (tau, order), lambda: core._cgf_uncached(tau, order))


def memo_abs(core, tau, power):
    """``tilted_abs`` (E|L_tau - K'(tau)|^power), memoised: the remove direction under Q and the add direction under
    P ask for the same values."""
    return memoised(core, (tau, "abs", power), lambda: core.cgf_quadrature(tau, power, abs_power=power))


def infinite_cgf(order, vector):
    return np.full(order + 1, np.inf) if vector else np.inf


def memo_vector(core, tau, n):
    """[K, K', ..., K^(n)](tau), memoised: closed forms where attached and finite, else one quadrature pass."""
    def compute():
        closed = core.closed_cgf
        if closed is not None and len(closed) > n:
            vec = np.array([core.closed_cgf_value(closed[j], tau) for j in range(n + 1)])
            if np.all(np.isfinite(vec)):
                return vec
        return core.cgf_quadrature(tau, n, vector=True)
    return memoised(core, (tau, "vector", n), compute)


def _infinite_stats(n, center):
    """``tilt_stats_about``'s answer where the tilted MGF is infinite."""
    return np.full(n + 1, np.inf), np.inf, center


def _atom_terms(at, tau):
    """(log-weights, values) of the atoms of L under the tilted measure, or None if M(tau) = inf (vectorised: a
    tabulated law has 1e5-1e6 atoms).  The atom at +inf (P-mass) counts at tau = 0 and makes M infinite above it;
    the one at -inf (Q-mass) counts at tau = -1 and makes M infinite below it; finite atoms weigh log P + tau L."""
    v, lp, lq = at.values, at.logP, at.logQ
    if not v.size:
        return v, v  # no point masses (most continuous laws): nothing to weigh
    pinf, ninf = (v == np.inf) & (lp > NEG_INF), (v == -np.inf) & (lq > NEG_INF)
    if (tau > 0 and pinf.any()) or (tau < -1 and ninf.any()):
        return None
    fin = np.isfinite(v)
    with np.errstate(invalid="ignore"):
        w = np.where(fin, lq if tau == -1 else lp + tau * v, NEG_INF)
    if tau == 0:
        keep, w = fin | pinf, np.where(pinf, lp, w)
    elif tau == -1:
        keep, w = fin | ninf, np.where(ninf, lq, w)
    else:
        keep = fin
    return w[keep], v[keep]


def combine_cgf(parts, at, tau, order, central_pass, vector=False, abs_power=0):
    """Combine continuous-part integrals (log-shift, I0, I1) and atoms into K^(order)(tau).

    ``vector``: [K, K', ..., K^(order)] instead; ``abs_power`` 1 or 3: the tilted E|L - K'|^abs_power (central_pass
    then integrates |L - mu|^abs_power).
    """
    terms = _atom_terms(at, tau)
    if terms is None:
        return infinite_cgf(order, vector)
    aw, av = terms
    atoms = aw.size > 0  # (without atoms their terms are skipped: each would add an exact 0)
    shifts = [p[0] for p in parts] + list(aw)
    if not shifts:
        raise DerivationError("the tilted distribution has no mass")
    g = max(shifts)
    I0 = sum(p[1] * math.exp(p[0] - g) for p in parts) + (float(np.sum(np.exp(aw - g))) if atoms else 0.0)
    if not I0 > 0 or not math.isfinite(I0):
        return infinite_cgf(order, vector) if order == 0 or vector or not I0 > 0 else np.inf
    K0 = math.log(I0) + g
    if order == 0 and not abs_power:
        return np.array([K0]) if vector else K0
    if atoms and np.any(np.isinf(av) & (aw > NEG_INF)):
        return infinite_cgf(order, vector)
    I1 = sum(p[2] * math.exp(p[0] - g) for p in parts) + (float(np.sum(np.exp(aw - g) * av)) if atoms else 0.0)
    mu = I1 / I0
    if abs_power:
        tot = sum(float(res[0]) * math.exp(gs - g) for gs, res in central_pass(mu, 0))
        if atoms:
            tot += float(np.sum(np.exp(aw - g) * np.abs(av - mu) ** abs_power))
        return tot / I0
    if order == 1:
        return np.array([K0, mu]) if vector else mu
    cen = np.zeros(order + 1)
    for gs, res in central_pass(mu, order):
        cen += res * math.exp(gs - g)
    if atoms:
        d = av - mu
        for j in range(order + 1):
            cen[j] += float(np.sum(np.exp(aw - g) * d ** j))
    cm = cen / I0
    full = np.zeros(7)
    full[: order + 1] = cm[: order + 1]
    # the engine's function run as Python (the same floats as compiled): no compilation for these few calls
    ks = N.cumulants_from_central.py_func(full[2], full[3], full[4], full[5], full[6])
    if vector:
        return np.concatenate(([K0, mu], ks[: order - 1]))
    return ks[order - 2]
