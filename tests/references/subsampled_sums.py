"""Brute force over small datasets for subsampled noisy sums: the exact output distribution of every dataset as a
finite mixture of shifted noise, the hockey-stick divergence of every neighbouring pair by quadrature between the
crossing points, and two-run compositions by a nested integral.  Independent of mechkit: SciPy only.

A dataset is a tuple of record values in [-1, 1]; the query sums the batch's values and adds noise (Gaussian or
Laplace, scale 1 unless given).  The schemes: Poisson (each record in the batch with probability r) and sampling
without replacement (every batch of b records equally likely).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import integrate, optimize, special

VALUES = (-1.0, 0.0, 1.0)


def noise_pdf(kind, scale):
    if kind == "gaussian":
        return lambda x, m: np.exp(-0.5 * ((x - m) / scale) ** 2) / (scale * math.sqrt(2 * math.pi))
    return lambda x, m: np.exp(-np.abs(x - m) / scale) / (2 * scale)


def noise_cdf(kind, scale):
    if kind == "gaussian":
        return lambda x, m: special.ndtr((x - m) / scale)
    return lambda x, m: np.where(x < m, 0.5 * np.exp(np.minimum(x - m, 0.0) / scale),
                                 1.0 - 0.5 * np.exp(-np.maximum(x - m, 0.0) / scale))


def poisson_mixture(data, rate):
    """{batch sum: probability} of a Poisson batch of ``data``."""
    out = {}
    n = len(data)
    for mask in itertools.product((0, 1), repeat=n):
        k = sum(mask)
        w = rate ** k * (1 - rate) ** (n - k)
        s = round(sum(v for v, b in zip(data, mask) if b), 9)
        out[s] = out.get(s, 0.0) + w
    return out


def wor_mixture(data, b):
    """{batch sum: probability} of a uniform batch of b of the records of ``data``."""
    out = {}
    batches = list(itertools.combinations(range(len(data)), b))
    for idx in batches:
        s = round(sum(data[i] for i in idx), 9)
        out[s] = out.get(s, 0.0) + 1.0 / len(batches)
    return out


class Mixture:
    """A finite mixture of the noise shifted by the batch sums."""

    def __init__(self, weights, kind, scale):
        self.means = np.array(sorted(weights))
        self.w = np.array([weights[m] for m in sorted(weights)])
        self.kind, self.scale = kind, scale
        self._pdf = noise_pdf(kind, scale)
        self._cdf = noise_cdf(kind, scale)

    def pdf(self, x):
        x = np.asarray(x, dtype=float)
        return sum(w * self._pdf(x, m) for m, w in zip(self.means, self.w))

    def mass(self, a, b):
        """P((a, b]) exactly, from the noise's CDF."""
        return float(sum(w * (self._cdf(b, m) - self._cdf(a, m)) for m, w in zip(self.means, self.w)))

    def span(self):
        pad = 40 * self.scale
        return self.means[0] - pad, self.means[-1] + pad


def hockey(p, q, eps):
    """H_{e^eps}(P || Q) = integral of (p - e^eps q)_+ for mixtures P, Q, eps any real: the integrand's sign changes
    located on a fine grid (with the noise's kinks) and refined by brentq; on each piece where it is positive the
    integral is P(piece) - e^eps Q(piece), from the noise's CDF (no quadrature)."""
    a = math.exp(eps)
    lo = min(p.span()[0], q.span()[0])
    hi = max(p.span()[1], q.span()[1])
    f = lambda x: p.pdf(x) - a * q.pdf(x)
    kinks = np.concatenate([p.means, q.means])
    grid = np.unique(np.concatenate([np.linspace(lo, hi, 4001), kinks, kinks + 1e-9, kinks - 1e-9]))
    vals = f(grid)
    cuts = [lo, hi] + grid[vals == 0.0].tolist()
    for i in np.flatnonzero(np.sign(vals[:-1]) * np.sign(vals[1:]) < 0):
        cuts.append(optimize.brentq(f, grid[i], grid[i + 1], xtol=1e-15, rtol=1e-15))
    cuts = sorted(set(cuts))
    total = 0.0
    for a_, b_ in zip(cuts[:-1], cuts[1:]):
        inside = grid[(grid > a_) & (grid < b_)]
        probe = inside[len(inside) // 2] if len(inside) else 0.5 * (a_ + b_)
        if f(probe) > 0:
            total += p.mass(a_, b_) - a * q.mass(a_, b_)
    return max(total, 0.0)


def neighbours(scheme, relation, n, values=VALUES):
    """Ordered neighbouring pairs (D, D') of the (scheme, relation): add/remove pairs of sizes n and n-1 in both
    orders; replace-one pairs of size n that differ in the first record (the others as multisets)."""
    rests = list(itertools.combinations_with_replacement(values, n - 1))
    pairs = []
    for rest in rests:
        for x in values:
            if relation == "add_remove":
                pairs.append(((x,) + rest, rest))
                pairs.append((rest, (x,) + rest))
            else:
                for y in values:
                    if y != x:
                        pairs.append(((x,) + rest, (y,) + rest))
    return pairs


def output(data, scheme, rate_or_b, kind, scale):
    w = poisson_mixture(data, rate_or_b) if scheme == "poisson" else wor_mixture(data, rate_or_b)
    return Mixture(w, kind, scale)


def worst_delta(scheme, relation, n, rate_or_b, kind, eps_list, scale=1.0):
    """max over neighbouring pairs of H_{e^eps}(M(D) || M(D')) for each eps, and the maximising pair for each."""
    best = [(-1.0, None)] * len(eps_list)
    seen = set()
    for d, d2 in neighbours(scheme, relation, n):
        p, q = output(d, scheme, rate_or_b, kind, scale), output(d2, scheme, rate_or_b, kind, scale)
        key = (tuple(p.means), tuple(np.round(p.w, 14)), tuple(q.means), tuple(np.round(q.w, 14)))
        if key in seen:
            continue
        seen.add(key)
        for i, e in enumerate(eps_list):
            h = hockey(p, q, e)
            if h > best[i][0]:
                best[i] = (h, (p, q))
    return best


def two_run_delta(first, second, eps):
    """delta(eps) of two independent runs with pairs ``first`` = (P1, Q1) and ``second`` = (P2, Q2): the integral over
    x ~ P1 of H_{e^(eps - L1(x))}(P2 || Q2), L1 = log p1/q1 (``hockey`` at every outer point)."""
    p1, q1 = first
    p2, q2 = second
    lo, hi = p1.span()

    def inner(x):
        px, qx = p1.pdf(x), q1.pdf(x)
        if px <= 0.0:
            return 0.0
        if qx <= 0.0:
            return px
        return px * hockey(p2, q2, eps - math.log(px / qx))

    kinks = sorted(set(np.concatenate([p1.means, q1.means]).tolist()))
    val, _ = integrate.quad(inner, lo, hi, points=[k for k in kinks if lo < k < hi] or None, epsabs=1e-12,
                            epsrel=1e-9, limit=200)
    return val
