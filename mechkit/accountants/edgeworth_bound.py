r"""Explicit uniform bounds on the error of the normal and first-order Edgeworth approximations.

Setting and notation
--------------------
Independent (not necessarily identically distributed) real variables ``X_1..X_n`` with means ``mu_i``,
variances ``gamma_{2,i}`` and finite fourth moments.  With

* ``Bbar_n^2 = (1/n) sum_i Var X_i``,
* ``K_{p,n} = (1/n) sum_i E|X_i - mu_i|^p / Bbar_n^p``  (``p = 3, 4``),
* ``Ktilde_{3,n} = K_{3,n} + (1/n) sum_i E|X_i - mu_i| Var(X_i) / Bbar_n^3``,
* ``lambda_{3,n} = (1/n) sum_i E(X_i - mu_i)^3 / Bbar_n^3``,

and ``S_n = sum_i (X_i - mu_i) / (sqrt(n) Bbar_n)``, this module returns numbers ``delta`` with

* :func:`edgeworth_bound`:  ``sup_x |P(S_n <= x) - Phi(x) - lambda_{3,n}/(6 sqrt n) (1 - x^2) phi(x)| <= delta``;
* :func:`berry_esseen_bound`: ``sup_x |P(S_n <= x) - Phi(x)| <= delta``.

Only moment conditions are assumed (no continuity / Cramer condition), so the bounds hold for lattice and
other discrete summands, which is what a privacy-loss variable of a discrete mechanism is.

Source
------
A. Derumigny, L. Girard, Y. Guyonvarch, "Explicit non-asymptotic bounds for the distance to the first-order
Edgeworth expansion", arXiv:2101.05780, Sankhya A 86 (2024) 261-336 ("DGG" below), and the authors' R package
``BoundEdgeworth`` (function ``Bound_EE1`` with ``continuity = FALSE``; ``Bound_BE``).  As I read the paper's
numbering (through the package's comments), the no-continuity result is Theorem 2.1, stated in full as
Theorem A.2 (independent, non identically distributed: "inid", Eq. (11), remainder ``r_{1,n}`` of Eq. (15))
and Theorem A.3 (i.i.d., Eq. (17), remainder of Eq. (21)); the integrated remainders ``Rbar_n`` are defined in
Appendix C.3.1 (inid) and C.3.2 (iid).  The Berry-Esseen corollary adds ``|lambda_{3,n}| phi(0) / (6 sqrt n)``
(``sup_x |(1 - x^2) phi(x)| = phi(0)``).  The mathematics is re-implemented here; no code was copied.

What is computed (``eps`` is the paper's free parameter in ``(0, 1/3)``)
-----------------------------------------------------------------------
Write ``K~ = Ktilde_{3,n}``, ``lam = |lambda_{3,n}|``, ``C = 1.0253/pi`` (from ``|Psi(t)| <= 1.0253/(2 pi |t|)``
for the Prawitz smoothing kernel), ``l* = sqrt(2 eps) (n/K4)^(1/4)``, ``b = 2 sqrt(n)/K~`` (``= T/pi`` with the
smoothing parameter ``T = 2 pi sqrt(n)/K~``) and ``l = min(l*, b)``.  Both theorems give

    delta = 0.1995 K~/sqrt(n)
          + [0.031 K~^2 + 0.327 K4 (1/12 + 1/(4 (1-3eps)^2)) + 0.054 lam K~ + 0.037 e lam^2] / n
          + (14.1961 + 67.0415) K~^4 / (16 pi^4 n^2) + 4.3394 lam K~^3 / (8 pi^3 n^2)
          + Rbar_n(eps) + J_lambda + J_K

* inid (Theorem A.2): ``e = e_{1,n}(eps)``; ``J_K = C K3/(6 sqrt n) int_l^b u^2 exp(-Delta u^2) du`` with
  ``Delta = (1 - 4 chi_1 - sqrt(K4/n))/2``, ``chi_1 = 0.09916191``;  ``Rbar_n = Rbar_n^{inid}(eps)``.
* iid (Theorem A.3): ``e = e_3(eps)`` plus the correction ``1.306 (e_{2,n}(eps) - e_3(eps)) lam^2/(36 n)``;
  ``J_K = C K3/(6 sqrt n) int_l^b u^2 exp(-u^2/8) du``; ``Rbar_n = Rbar_n^{iid}(eps)``.  When
  ``lambda_3 == 0`` with ``iid=True`` (every summand unskewed) the no-skewness version (Eq. (18)/(22)) is also
  evaluated: ``J_K = C K4/(6 n) int_l^b u^3 exp(-u^2/8) du`` and the skewness terms vanish.
* ``J_lambda`` (both) is the contribution of ``lam t^3/(6 sqrt n) e^{-t^2/2}`` on ``[l, b]``; see below.

``e_{1,n}``, ``P_{1,n}``, ``e_{2,n}``, ``P_{2,n}`` and ``e_3`` are as in the package (``P_{1,n} = (1/2 + eps/12 +
sqrt(2 eps)/6)^2``, etc.).  Each ``Rbar_n`` is a sum of terms ``C * coef_k * int_0^inf t^(k-1) e^{-t^2/2} dt``
coming from a bound ``e^{-t^2/2} sum_k coef_k t^k`` on ``|f_{S_n}(t) - (1 - i lambda t^3/(6 sqrt n)) e^{-t^2/2}|``
for ``t <= l*``.

Free parameter and post-processing
----------------------------------
* ``eps``: every ``eps in (0, 1/3)`` gives a valid bound, so by default the minimum over the fixed grid
  ``_EPS_GRID`` (13 values from 0.005 to 0.31) is returned; the package default is ``eps = 0.1``.  This
  matters: at ``n = 1000``, ``K4 = 9`` the ``J_K`` term dominates at ``eps = 0.1`` because ``l*`` is small.
* ``iid=True`` returns the minimum of the iid and the inid bounds (the inid theorem also covers iid sums; at
  moderate ``n`` its ``exp(-Delta u^2)``, ``Delta ~ 1/4``, beats the iid ``exp(-u^2/8)``).
* The result is capped at the trivially valid value (``1 + lam phi(0)/(6 sqrt n)`` for the Edgeworth error,
  ``1`` for the Berry-Esseen error), which also keeps it finite when ``n`` is tiny compared with ``K4``.

Deliberate deviations from the package (all make the bound larger or equal; none makes it smaller)
---------------------------------------------------------------------------------------------------
1. ``Rbar_n`` Gamma factors.  The stored package history contains two versions of the closed forms of
   ``Rbar_n``: the newer ``Rn_inid_integrated.R`` / ``Rn_iid_integrated.R`` use, for a ``t^k`` term,
   ``2^(k/2) Gamma((k+3)/2)`` (iid ``t^5`` term: ``2^0.5 Gamma(2.5)``), the older ``R1n.R`` / ``R2n.R`` exactly
   twice that.  Integrating the integrand that produces the theorem's own main constants (the kernel
   ``(C/t) e^{-t^2/2}``: ``0.327 K4 (...)`` from the ``t^4`` term, ``0.037 = C * 8/72`` from the
   ``lambda^2 t^6/72`` term) gives ``2^(k/2-1) Gamma(k/2)``, which is smaller than both for every term except
   the iid ``t^5`` term, where the newer package value is half of it.  Also, the iid ``|r|^2/2`` term
   (``tildeA6n``) is linear in the bracket ``K4/12 + 1/(4(1-3eps)^2) + P_{2,n}/(576(1-3eps)^2)`` in the package
   but quadratic in the reconstruction, so the package value is the smaller one once ``K4`` exceeds a few
   hundred.  Here every term is ``max(2 * newer package value, reconstructed value)``, i.e. at least the
   larger of the two package versions and at least the reconstruction.
2. ``J_lambda``: the package uses ``lam/sqrt(n) (Gamma(3/2, l) - Gamma(3/2, b))`` (i.e. ``int_l^b v^(1/2) e^-v
   dv`` with *unsquared* limits); the reconstructed integral ``C lam/(6 sqrt n) int_l^b u^2 e^{-u^2/2} du`` (the
   EA authors' ``I33``) is never larger (the ratio of the integrands is at most 2.9 < 6 pi/1.0253 = 18.4) and
   typically 10-100x smaller.  The maximum of the two is taken anyway (so the package form is what is used).
3. ``Delta <= 0`` (``n <= 2.75 K4``): the package evaluates the ``J_K`` integral through a "generalised lower
   incomplete gamma" whose integrand has the wrong sign of the exponent (it integrates ``e^{-v}`` instead of
   ``e^{+v}``), which underestimates it.  Here ``int_l^b u^2 exp(|Delta| u^2) du`` is computed directly.
4. The README value ``Bound_EE1(iid, no continuity, skewed, n = 1000, K4 = 9) = 0.1626857`` (package defaults
   ``K3 = K4^(3/4)``, ``lambda3 = 0.621 K3``, ``K3tilde = K3 + 1``, ``eps = 0.1``) is not reproduced exactly by
   the stored source: a literal transcription gives 0.16451 (``_package_iid_skew_literal``, 1.1% higher);
   the README was presumably rendered with a different revision.

Comparison with ``/work/shared/papers/notes.md`` (section 3.5 and Appendix E, the Edgeworth-accountant code's
``Omega1 + Omega2 + Omega3``)
------------------------------------------------------------------------------------------------------------
* Same main constants: ``0.1995``, ``0.031 (=1.2187/(4 pi^2))``, ``0.054 (>= 0.3334/(2 pi))``, ``0.327 K4(1/12 +
  1/(4(1-3e)^2))`` (``= 0.194 K4`` at ``e = 0.1``, printed ``0.195`` in section 3.5) and ``0.037 e_1`` (printed
  ``0.038``), ``14.1961``, ``67.0415``, ``P_1``, ``e_1``, ``U11``, ``U12`` all agree.
* Omega1 closed form: Appendix E gives ``|lambda| exp(-T^2/(4 pi^2))/(3 pi sqrt n)`` where the package has
  ``4.3394 |lambda| /(T^3 sqrt n)``.  Both dominate the numerically integrated Omega1 of Appendix E for
  ``T`` in ``[0.5, 1000]`` (checked while writing this module); the package form is used.
* I31's integrand is written ``u e^{-u^2/2} R1(u)``: that is kernel ``u`` where the main constants imply
  kernel ``1/u`` (and the package uses yet larger factors).  It overestimates, so it is valid but
  inconsistent with the ``0.327`` and ``0.036278`` terms next to it.
* I32 integrates ``exp(-(u^2/2)(1 - 2 chi_1 u K~/sqrt n - sqrt(K4/n)))`` exactly; the package bounds the
  exponent by ``-Delta u^2`` using ``u <= 2 sqrt(n)/K~``; the package form is the larger (used here).
* I33 (``J_lambda``): see deviation 2; Appendix E also notes that the EA code multiplies by the signed
  ``lambda_3`` (which can make the term negative): ``|lambda_3|`` is used here.
* Appendix E describes only the inid-type remainder applied to iid sums (valid but not the iid theorem).
"""
from __future__ import annotations

import functools
import math

import numpy as np
from scipy import integrate, special

from ..errors import ParameterError, check_finite_real

__all__ = ["edgeworth_bound", "edgeworth_bounds", "berry_esseen_bound"]

# Numerical constants of DGG (as used by the package).
_PSI = 1.0253                      # |Psi(t)| <= _PSI / (2 pi |t|)
_C = _PSI / math.pi                # the recurring factor 1.0253/pi = 0.32636
_CHI1 = 0.09916191                 # chi_1 of DGG, Section 1
_PHI0 = 1.0 / math.sqrt(2.0 * math.pi)

# Grid of the free parameter eps in (0, 1/3); the bound is minimised over it.
_EPS_GRID = np.array([0.005, 0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.13, 0.16, 0.2, 0.24, 0.28, 0.31])

# Relative slack allowed in the consistency checks of the moment inputs (they are often computed in floating point).
_REL_TOL = 1e-9


# ----------------------------------------------------------------------------------------------------------------
# Special-function helpers (array-valued in their last arguments)
# ----------------------------------------------------------------------------------------------------------------

def _gamma_between(a, x_lo, x_hi):
    """``int_{x_lo}^{x_hi} v^(a-1) e^(-v) dv`` for ``0 <= x_lo <= x_hi`` (arrays), without cancellation."""
    x_lo, x_hi = np.broadcast_arrays(np.asarray(x_lo, dtype=float), np.asarray(x_hi, dtype=float))
    tail, val = x_lo > a, np.empty(x_lo.shape)
    head = ~tail  # upper tails where both points are in the tail, lower ones near the origin (no cancellation)
    val[tail] = special.gammaincc(a, x_lo[tail]) - special.gammaincc(a, x_hi[tail])
    val[head] = special.gammainc(a, x_hi[head]) - special.gammainc(a, x_lo[head])
    return special.gamma(a) * np.maximum(val, 0.0)


def _gauss_moment(m, c, lo, hi):
    """``int_lo^hi u^m exp(-c u^2) du`` for arrays ``0 <= lo``, scalar ``c`` of any sign (0 where ``hi <= lo``).

    ``c > 0`` and ``c = 0`` in closed form; ``c < 0`` (growing integrand) by quadrature, ``inf`` on overflow.
    """
    lo = np.asarray(lo, dtype=float)
    hi = np.maximum(np.asarray(hi, dtype=float), lo)
    if np.ndim(c):  # one c a row of (lo, hi) (``edgeworth_bounds``): the closed form where all are > 0
        if np.all(c > 0.0):
            return 0.5 * c ** (-0.5 * (m + 1)) * _gamma_between(0.5 * (m + 1), c * lo * lo, c * hi * hi)
        lo, hi = np.broadcast_arrays(lo, hi)
        return np.array([_gauss_moment(m, float(cr), l_, h_) for cr, l_, h_ in zip(np.ravel(c), lo, hi)])
    if c > 0.0:
        a = 0.5 * (m + 1)
        return 0.5 * c ** (-a) * _gamma_between(a, c * lo * lo, c * hi * hi)
    if c == 0.0:
        return (hi ** (m + 1) - lo ** (m + 1)) / (m + 1)
    k = -c
    out = np.empty(np.broadcast(lo, hi).shape)
    for idx, (l_, h_) in enumerate(np.broadcast(lo, hi)):
        if h_ <= l_:
            out.flat[idx] = 0.0
        elif k * h_ * h_ > 700.0:
            out.flat[idx] = math.inf
        else:
            out.flat[idx] = integrate.quad(lambda u: u ** m * math.exp(k * u * u), l_, h_,
                                           epsabs=0.0, epsrel=1e-10, limit=200)[0] * (1.0 + 1e-8)
    return out


def _half_gauss_moment(k):
    """``int_0^inf t^(k-1) e^(-t^2/2) dt = 2^(k/2-1) Gamma(k/2)`` (the exact kernel integral of a ``t^k`` term)."""
    return 2.0 ** (0.5 * k - 1.0) * math.gamma(0.5 * k)


def _pkg_gamma_factor(two_a, power_of_two):
    """The package's closed-form factor ``2^power_of_two * Gamma(two_a / 2)`` (newer revision)."""
    return 2.0 ** power_of_two * math.gamma(0.5 * two_a)


def _rbar_term(coef, k, pkg_factor):
    """One ``Rbar_n`` term: ``C * coef * max(2 * package factor, exact kernel integral)``; see module notes.
    ``coef`` may be an array (one per eps); the factor does not depend on it."""
    return _C * coef * max(2.0 * pkg_factor, _half_gauss_moment(k))


# ----------------------------------------------------------------------------------------------------------------
# eps-dependent auxiliary functions of DGG (vectorised over eps)
# ----------------------------------------------------------------------------------------------------------------

def _P1(eps):
    """``P_{1,n}(eps)`` (skewed case) ``= (1/2 + eps/12 + sqrt(2 eps)/6)^2``."""
    return (144 + 48 * eps + 4 * eps ** 2 + 96 * np.sqrt(2 * eps) + 32 * eps + 16 * math.sqrt(2) * eps ** 1.5) / 576


def _e1(eps):
    """``e_{1,n}(eps) = exp(eps^2 (1/6 + 2 P_{1,n}/(1-3 eps)^2))``: bound on ``exp(sup |r|)`` for ``t <= l*``."""
    return np.exp(eps ** 2 * (1.0 / 6 + 2 * _P1(eps) / (1 - 3 * eps) ** 2))


def _P2(eps, n, K4, lam, skewed):
    """``P_{2,n}(eps)`` of the iid theorem (``lam = |lambda_3|``)."""
    val = 48 * eps * np.sqrt(K4 / n) + 4 * eps ** 2 * K4 / n
    if skewed:
        val = val + (96 * np.sqrt(2 * eps) * lam / (K4 ** 0.25 * n ** 0.25)
                     + 32 * eps * lam ** 2 / np.sqrt(K4 * n)
                     + 16 * math.sqrt(2) * K4 ** 0.25 * lam * eps ** 1.5 / n ** 0.75)
    return val


def _e2(eps, P2):
    """``e_{2,n}(eps) = exp(eps^2 (1/6 + 1/(2(1-3eps)^2) + 2 P_{2,n}/(576 (1-3eps)^2)))``."""
    d = (1 - 3 * eps) ** 2
    return np.exp(eps ** 2 * (1.0 / 6 + 1 / (2 * d) + 2 * P2 / (576 * d)))


def _e3(eps):
    """``e_3(eps)`` exactly as coded in the package: ``exp(eps^2/6 + eps^2/(2(1-3eps))^2)``.

    (Possibly a typo for ``eps^2/(2(1-3eps)^2)``; harmless: the iid remainder adds ``1.306 (e_2 - e_3)/36`` so the
    total ``lambda^2/n`` coefficient is at least ``0.036278 e_2``, whichever ``e_3`` is used.)
    """
    return np.exp(eps ** 2 / 6 + eps ** 2 / (2 * (1 - 3 * eps)) ** 2)


# ----------------------------------------------------------------------------------------------------------------
# The bounds for an array of eps values
# ----------------------------------------------------------------------------------------------------------------

def _common(n, K4, Kt, lam, eps):
    """Terms shared by Theorems A.2 and A.3: main terms without skewness plus the Omega1/Omega2 remainders."""
    main = 0.1995 * Kt / np.sqrt(n) + (0.031 * Kt ** 2 + 0.327 * K4 * (1 / 12 + 1 / (4 * (1 - 3 * eps) ** 2))) / n
    omega = (14.1961 + 67.0415) * Kt ** 4 / (16 * math.pi ** 4 * n ** 2) \
        + 4.3394 * lam * Kt ** 3 / (8 * math.pi ** 3 * n ** 2)
    return main + omega


def _limits(n, K4, Kt, eps):
    """``(l, b)``: ``l = min(sqrt(2 eps)(n/K4)^(1/4), b)`` and ``b = 2 sqrt(n)/K~``."""
    b = 2 * np.sqrt(n) / Kt
    l_star = np.sqrt(2 * eps) * (n / K4) ** 0.25
    return np.minimum(l_star, b), b


def _j_lambda(n, lam, lo, b):
    """Contribution of ``lam t^3/(6 sqrt n) e^{-t^2/2}`` on ``[lo, b]``: max(package form, exact integral)."""
    if np.all(lam == 0.0):
        return np.zeros_like(lo)
    pkg = lam / np.sqrt(n) * _gamma_between(1.5, lo, np.full_like(lo, b))
    exact = _C * lam / (6 * np.sqrt(n)) * _gauss_moment(2, 0.5, lo, b)
    return np.maximum(pkg, exact)


def _inid_skew(n, K3, Kt, K4, lam, eps):
    """Theorem A.2 (Theorem 2.1, inid, no continuity, skewed case) for each ``eps`` of the array ``eps``."""
    x = K4 / n
    c = 1 / (2 * (1 - 3 * eps) ** 2)
    e1 = _e1(eps)
    q1 = 1 / 24 + _P1(eps) * c
    lo, b = _limits(n, K4, Kt, eps)

    # (elementwise over eps, the same operations in the same order as one eps at a time)
    rbar = (_rbar_term(c * x ** 1.5 / 24, 6, _pkg_gamma_factor(10, 3))        # U11, t^6
            + _rbar_term(c * x ** 2 / 576, 8, _pkg_gamma_factor(12, 4))      # U11, t^8
            + _rbar_term(c * x ** 1.25 / 6, 5, _pkg_gamma_factor(9, 2.5))    # U12, t^5
            + _rbar_term(c * x ** 1.5 / 36, 6, _pkg_gamma_factor(10, 3))     # U12, t^6
            + _rbar_term(c * x ** 1.75 / 72, 7, _pkg_gamma_factor(11, 3.5))  # U12, t^7
            + _rbar_term(e1 * x ** 2 * q1 ** 2 / 2, 8, _pkg_gamma_factor(12, 4))       # |r|^2/2
            + _rbar_term(e1 * lam * K4 / (6 * n ** 1.5) * q1, 7, _pkg_gamma_factor(12, 4)))  # |z||r|

    delta = (1 - 4 * _CHI1 - np.sqrt(K4 / n)) / 2
    j_k = _C * K3 / (6 * np.sqrt(n)) * _gauss_moment(2, delta, lo, b)
    skew = (0.054 * lam * Kt + 0.037 * e1 * lam ** 2) / n
    return _common(n, K4, Kt, lam, eps) + skew + rbar + _j_lambda(n, lam, lo, b) + j_k


def _iid(n, K3, Kt, K4, lam, eps, skewed=True):
    """Theorem A.3 (Theorem 2.1, iid, no continuity); ``skewed=False`` is the unskewed version (needs lambda3 = 0)."""
    lam = lam if skewed else 0.0
    c = 1 / (2 * (1 - 3 * eps) ** 2)
    P2 = _P2(eps, n, K4, lam, skewed)
    e2 = _e2(eps, P2)
    br = K4 / 12 + 1 / (4 * (1 - 3 * eps) ** 2) + P2 / (576 * (1 - 3 * eps) ** 2)
    lo, b = _limits(n, K4, Kt, eps)

    # (elementwise over eps, the same operations in the same order as one eps at a time)
    rbar = (_rbar_term(c * K4 / (24 * n ** 2), 6, _pkg_gamma_factor(10, 3))             # tildeA2n
            + _rbar_term(c * K4 ** 2 / (576 * n ** 3), 8, _pkg_gamma_factor(12, 4))    # tildeA5n
            # tildeA6n: package is linear in the bracket, the reconstruction (|r|^2/2) quadratic
            + _C * e2 / (8 * n ** 2) * np.maximum(2 * br * _pkg_gamma_factor(12, 4), br ** 2 * _half_gauss_moment(8)))
    if skewed:
        rbar += (_rbar_term(c * lam / (6 * n ** 1.5), 5, _pkg_gamma_factor(5, 0.5))            # tildeA1n
                 + _rbar_term(c * lam ** 2 / (36 * n ** 2), 6, _pkg_gamma_factor(10, 3))      # tildeA3n
                 + _rbar_term(c * K4 * lam / (72 * n ** 2.5), 7, _pkg_gamma_factor(11, 3.5))  # tildeA4n
                 + _rbar_term(e2 * lam / (12 * n ** 1.5) * br, 7, _pkg_gamma_factor(11, 3.5)))  # tildeA7n

    total = _common(n, K4, Kt, lam, eps) + rbar
    if skewed:
        e3 = _e3(eps)
        total = total + (0.054 * lam * Kt + 0.037 * e3 * lam ** 2) / n \
            + 1.306 * (e2 - e3) * lam ** 2 / (36 * n) + _j_lambda(n, lam, lo, b) \
            + _C * K3 / (6 * np.sqrt(n)) * _gauss_moment(2, 0.125, lo, b)
    else:
        total = total + _C * K4 / (6 * n) * _gauss_moment(3, 0.125, lo, b)
    return total


def _package_iid_skew_literal(n, K3, Kt, K4, lambda3, eps=0.1):
    """Literal transcription of the stored package's ``Bound_EE1_nocont_iid_skew`` (no safety changes).

    Only for comparison with the package's README (see module notes, item 4); not a certified bound.
    """
    lam = abs(lambda3)
    eps_a = np.array([float(eps)])
    d = 2 * (1 - 3 * eps) ** 2 * math.pi
    P2 = _P2(eps_a, n, K4, lam, True)
    e2 = _e2(eps_a, P2)
    e3 = _e3(eps_a)
    br = K4 / 12 + 1 / (4 * (1 - 3 * eps) ** 2) + P2 / (576 * (1 - 3 * eps) ** 2)
    g = math.gamma
    rbar = (_PSI / d * K4 / (24 * n ** 2) * 2 ** 3 * g(5) + _PSI / d * K4 ** 2 / (576 * n ** 3) * 2 ** 4 * g(6)
            + _PSI / math.pi * e2 / (8 * n ** 2) * br * 2 ** 4 * g(6)
            + _PSI / d * lam / (6 * n ** 1.5) * 2 ** 0.5 * g(2.5) + _PSI / d * lam ** 2 / (36 * n ** 2) * 2 ** 3 * g(5)
            + _PSI / d * K4 * lam / (72 * n ** 2.5) * 2 ** 3.5 * g(5.5)
            + _PSI / math.pi * e2 * lam / (12 * n ** 1.5) * br * 2 ** 3.5 * g(5.5))
    lo, b = _limits(n, K4, Kt, eps_a)
    total = (_common(n, K4, Kt, lam, eps_a) + (0.054 * lam * Kt + 0.037 * e3 * lam ** 2) / n + rbar
             + 1.306 * (e2 - e3) * lam ** 2 / (36 * n)
             + lam / math.sqrt(n) * _gamma_between(1.5, lo, np.full_like(lo, b))
             + _PSI * 2 ** 2.5 * K3 / (3 * math.pi * math.sqrt(n))
             * _gamma_between(1.5, lo ** 2 / 8, np.full_like(lo, b * b / 8)))
    return float(total[0])


# ----------------------------------------------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------------------------------------------

def _validate(n, K3, K3_tilde, K4, lambda3, iid, eps):
    n = check_finite_real("n", n, low=1.0, low_open=False)
    K3 = check_finite_real("K3", K3, low=0.0)
    K3_tilde = check_finite_real("K3_tilde", K3_tilde, low=0.0)
    K4 = check_finite_real("K4", K4, low=0.0)
    lambda3 = check_finite_real("lambda3", lambda3)
    if not isinstance(iid, (bool, np.bool_)):
        raise ParameterError(f"iid must be a bool, got {iid!r}")
    if K4 < 1.0 - _REL_TOL:
        raise ParameterError(f"K4 must be >= 1 (K4 >= K2^2 = 1 by Jensen), got K4={K4!r}")
    if K3 < 1.0 - _REL_TOL:
        raise ParameterError(f"K3 must be >= 1 (K3 >= K2^(3/2) = 1 by Jensen), got K3={K3!r}")
    if K3_tilde < K3 * (1.0 - _REL_TOL):
        raise ParameterError(f"K3_tilde must be >= K3 (it is K3 plus a positive term), got K3_tilde={K3_tilde!r} "
                             f"< K3={K3!r}")
    if abs(lambda3) > K3 * (1.0 + _REL_TOL):
        raise ParameterError(f"lambda3 must satisfy |lambda3| <= K3, got lambda3={lambda3!r} with K3={K3!r}")
    if eps is not None:
        eps = check_finite_real("eps", eps, low=0.0, high=1.0 / 3.0)
    return n, K3, K3_tilde, K4, lambda3, bool(iid), eps


@functools.lru_cache(maxsize=256)
def _edgeworth_bound_raw(n, K3, Kt, K4, lambda3, iid, eps):
    """Uncapped DGG bound (minimised over the eps grid unless ``eps`` is given)."""
    lam = abs(lambda3)
    grid = _EPS_GRID if eps is None else np.array([eps])
    with np.errstate(over="ignore", invalid="ignore"):
        best = np.min(_inid_skew(n, K3, Kt, K4, lam, grid))
        if iid:
            best = min(best, np.min(_iid(n, K3, Kt, K4, lam, grid, skewed=True)))
            if lambda3 == 0.0:
                best = min(best, np.min(_iid(n, K3, Kt, K4, lam, grid, skewed=False)))
    best = float(best)
    return best if math.isfinite(best) else math.inf


def edgeworth_bounds(rows, iid=False) -> np.ndarray:
    """``edgeworth_bound`` of several sums at once: ``rows`` is a sequence of (n, K3, K3_tilde, K4, lambda3) tuples,
    each checked as there; the same theorems, grid and cap, evaluated in one array pass (each of the Edgeworth
    accountant's four sides cost ~0.1-0.2 ms alone, mostly NumPy's per-call overhead on 13-point arrays).  The
    values agree with ``edgeworth_bound``'s to a few ulps (powers of arrays round differently from scalar ones)."""
    n, K3, Kt, K4, lambda3 = (np.array(c, float)[:, None] for c in
                              zip(*(_validate(*r, iid, None)[:5] for r in rows)))
    lam = np.abs(lambda3)
    with np.errstate(over="ignore", invalid="ignore"):
        best = np.min(_inid_skew(n, K3, Kt, K4, lam, _EPS_GRID), axis=1)
        if iid:  # (Python's min(best, x) where x is nan is best: the same here)
            x = np.min(_iid(n, K3, Kt, K4, lam, _EPS_GRID, skewed=True), axis=1)
            best = np.where(np.isnan(x), best, np.minimum(best, x))
            zero = lambda3[:, 0] == 0.0
            if zero.any():
                x = np.min(_iid(*(v[zero] for v in (n, K3, Kt, K4, lam)), _EPS_GRID, skewed=False), axis=1)
                best[zero] = np.where(np.isnan(x), best[zero], np.minimum(best[zero], x))
    best = np.where(np.isfinite(best), best, np.inf)
    return np.minimum(best, 1.0 + lam[:, 0] * _PHI0 / (6.0 * np.sqrt(n[:, 0])))


def edgeworth_bound(n, K3, K3_tilde, K4, lambda3, iid=False, *, eps=None) -> float:
    r"""Uniform bound on ``|P(S_n <= x) - Phi(x) - lambda3/(6 sqrt n) (1 - x^2) phi(x)|`` (DGG Theorem 2.1).

    Valid without any continuity assumption (lattice summands allowed).  ``iid=False`` uses the inid theorem
    (A.2); ``iid=True`` returns the smaller of the iid theorem (A.3, plus its unskewed version when
    ``lambda3 == 0``) and A.2.  The free parameter ``eps in (0, 1/3)`` is optimised over a fixed grid unless
    given.  The result is capped at the trivial bound ``1 + |lambda3| phi(0)/(6 sqrt n)``, so it is finite.

    Parameters are the standardised moments of the module docstring: ``K3 = K_{3,n}``,
    ``K3_tilde = Ktilde_{3,n}``, ``K4 = K_{4,n}`` (upper bounds on them are also accepted) and
    ``lambda3 = lambda_{3,n}``; ``n`` is the number of summands (a float is fine, e.g. ``1e9``).

    Raises ``ParameterError`` (naming the parameter) unless ``n >= 1``, all inputs are finite,
    ``K4 >= 1``, ``K3 >= 1``, ``K3_tilde >= K3``, ``|lambda3| <= K3`` and ``eps`` (if given) is in ``(0, 1/3)``.
    """
    n, K3, Kt, K4, lambda3, iid, eps = _validate(n, K3, K3_tilde, K4, lambda3, iid, eps)
    trivial = 1.0 + abs(lambda3) * _PHI0 / (6.0 * math.sqrt(n))
    return min(_edgeworth_bound_raw(n, K3, Kt, K4, lambda3, iid, eps), trivial)


def berry_esseen_bound(n, K3, K3_tilde, K4, lambda3, iid=False, *, eps=None) -> float:
    r"""Uniform bound on ``|P(S_n <= x) - Phi(x)|``: the package's ``Bound_BE`` analogue.

    ``edgeworth_bound`` (uncapped) plus ``|lambda3| phi(0) / (6 sqrt n)`` (the largest value of the first-order
    Edgeworth correction), capped at the trivial bound 1.  Same arguments and checks as :func:`edgeworth_bound`.
    """
    n, K3, Kt, K4, lambda3, iid, eps = _validate(n, K3, K3_tilde, K4, lambda3, iid, eps)
    raw = _edgeworth_bound_raw(n, K3, Kt, K4, lambda3, iid, eps)
    return min(raw + abs(lambda3) * _PHI0 / (6.0 * math.sqrt(n)), 1.0)
