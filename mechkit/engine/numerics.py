"""Numba primitives shared by every generated family module.

Everything here is ``@njit(cache=True, error_model="numpy")``.  Family-specific kernels (log-densities, the privacy
loss, ...)
are passed in as first-class jitted functions with the signature ``f(x, theta) -> float``; Numba compiles
one specialisation per kernel and caches it on disk, so a second process pays no compile time.
"""
import math

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.experimental.function_type import _get_wrapper_address

# Kernels are passed as first-class functions of this type.  Engine functions carry explicit signatures so
# their cache key is structural: one compiled engine serves every family, in every process.
f8 = types.float64
A1 = types.float64[::1]
A2 = types.float64[:, ::1]
KT = types.FunctionType(f8(f8, A1))
KERNEL_SIGNATURE = "float64(float64, float64[::1])"

KERNEL_SIG = f8(f8, A1)


class KernelRef:
    """A compiled kernel passed to the engine by its address.

    Passing a Numba dispatcher as a first-class function makes every call look the compiled result up again
    (tens of microseconds, more than many engine calls take); a reference resolves the address once.  It is
    also callable from Python (through the dispatcher).
    """

    __slots__ = ("dispatcher", "_addr")
    # typeof() reads this attribute directly (the WrapperAddressProtocol base class would route every call
    # through a slower registered typeof); the call-time address comes from __wrapper_address__
    _numba_type_ = KT

    def __init__(self, dispatcher):
        self.dispatcher = dispatcher
        self._addr = None

    def __wrapper_address__(self):
        if self._addr is None:
            self._addr = _get_wrapper_address(self.dispatcher, KERNEL_SIG)
        return self._addr

    @property
    def address(self):
        """The cfunc wrapper's address as an int (what ``_as_kernel`` takes)."""
        return self.__wrapper_address__()

    def signature(self):
        return KERNEL_SIG

    def __call__(self, *args):
        return self.dispatcher(*args)


def kernel_refs(mod):
    """name -> KernelRef for the kernels ``k_<name>`` of a generated family module (cached on the module)."""
    refs = mod.__dict__.setdefault("_kernel_refs", {})

    def get(name):
        ref = refs.get(name)
        if ref is None:
            ref = refs[name] = KernelRef(getattr(mod, "k_" + name))
        return ref
    return get


@intrinsic
def _as_kernel(typingctx, addr):
    """The kernel at a cfunc wrapper address (an int64 from ``KernelRef.address``) as a first-class function.

    Unboxing a first-class function argument calls back into Python twice per argument and call (~2 us each);
    an address crosses the boundary as a plain integer.  The value built here is what Numba's own unboxing
    builds for a ``KernelRef`` (its jit address is null there too): calls go through the C wrapper."""
    def codegen(context, builder, signature, args):
        sfunc = cgutils.create_struct_proxy(KT)(context, builder)
        sfunc.c_addr = builder.inttoptr(args[0], context.get_value_type(types.voidptr))
        return sfunc._getvalue()
    return KT(types.int64), codegen


LOG2 = math.log(2.0)
LOG_SQRT_PI = 0.5 * math.log(math.pi)
NEG_INF = -np.inf


# ----------------------------------------------------------------------------------------------------
# stable scalar helpers (used by generated code)


@njit(cache=True, error_model="numpy")
def lae(a, b):
    """log(exp(a) + exp(b)), exact for -inf arguments."""
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


@njit(cache=True, error_model="numpy")
def log1mexp(x):
    """log(1 - exp(x)) for x <= 0 (Maechler's switch); nan for x > 0."""
    if x > 0.0:
        return np.nan
    if x > -0.6931471805599453:
        return math.log(-math.expm1(x))
    return math.log1p(-math.exp(x))


@njit(cache=True, error_model="numpy")
def log_erfc(z):
    """log(erfc(z)) without underflow for large z."""
    if z < 20.0:
        return math.log(math.erfc(z))
    # asymptotic series: erfc(z) = exp(-z^2)/(z sqrt(pi)) * sum_k (-1)^k (2k-1)!! / (2 z^2)^k
    iz2 = 1.0 / (2.0 * z * z)
    term = 1.0
    s = 1.0
    for k in range(1, 12):
        term *= -(2 * k - 1) * iz2
        s += term
    return -z * z - math.log(z) - LOG_SQRT_PI + math.log(s)


@njit(cache=True, error_model="numpy")
def log_ndtr(z):
    """log Phi(z)."""
    return log_erfc(-z / math.sqrt(2.0)) - LOG2


@njit(cache=True, error_model="numpy")
def softplus(u):
    """log(1 + exp(u))."""
    if u > 35.0:
        return u + math.exp(-u)
    if u < -35.0:
        return math.exp(u)
    return math.log1p(math.exp(u))


@njit(cache=True, error_model="numpy")
def safe_log(u):
    """log(u) with log(0) = -inf and nan for u < 0 (never raises inside kernels)."""
    if u > 0.0:
        return math.log(u)
    if u == 0.0:
        return -np.inf
    return np.nan


@njit(cache=True, error_model="numpy")
def sgn(u):
    if u > 0.0:
        return 1.0
    if u < 0.0:
        return -1.0
    return 0.0


# ----------------------------------------------------------------------------------------------------
# vectorisation


@njit(A1(KT, A1, A1), cache=True, error_model="numpy")
def vmap(f, xs, theta):
    out = np.empty(xs.shape[0])
    for i in range(xs.shape[0]):
        out[i] = f(xs[i], theta)
    return out


@njit(f8(KT, A1), cache=True, error_model="numpy")
def cmap(f, theta):
    """Evaluate a parameter-only expression f(0.0, theta)."""
    return f(0.0, theta)


# ----------------------------------------------------------------------------------------------------
# inverse of a monotone function on (a, b)


@njit(types.UniTuple(f8, 2)(KT, f8, f8, f8, types.boolean, A1), cache=True, error_model="numpy")
def _bracket_end(f, s, a, b, increasing, theta):
    """Replace infinite ends of (a, b) by finite points that bracket f(x) = s (f monotone)."""
    lo = a
    hi = b
    if lo == -np.inf:
        start = -1.0 if hi == np.inf else min(hi - 1.0, -1.0)
        step = 1.0
        lo = start
        for _ in range(2100):
            v = f(lo, theta)
            if (increasing and v <= s) or ((not increasing) and v >= s):
                break
            step *= 2.0
            lo = start - step
    if hi == np.inf:
        start = 1.0 if lo == -np.inf else max(lo + 1.0, 1.0)
        step = 1.0
        hi = start
        for _ in range(2100):
            v = f(hi, theta)
            if (increasing and v >= s) or ((not increasing) and v <= s):
                break
            step *= 2.0
            hi = start + step
    return lo, hi


@njit(f8(KT, f8, f8, f8, types.boolean, A1), cache=True, error_model="numpy")
def invert_monotone(f, s, a, b, increasing, theta):
    """x in [a, b] with f(x) = s for monotone f, by bracketed bisection polished to full precision.

    ``s`` must lie in the open range of f on (a, b); the result is clipped to [a, b].
    """
    lo, hi = _bracket_end(f, s, a, b, increasing, theta)
    for _ in range(2200):
        mid = 0.5 * (lo + hi)
        if not (lo < mid < hi):
            break
        v = f(mid, theta)
        if v != v:
            break
        if (v < s) == increasing:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


#: the scaled suffix sum of p e^{-y} is rescaled by this power of 2 (exactly) whenever the scale would grow past it
_SUFFIX_RESCALE_LOG2 = 800


@njit(types.UniTuple(A1, 2)(A1, A1), cache=True, error_model="numpy")
def suffix_sums(p, y):
    """d1_i = sum_{j >= i} p_j and ld2_i = log(sum_{j >= i} p_j e^{-y_j}) (-inf where that sum is not positive; each
    with a trailing entry, 0 and -inf), by compensated (Neumaier) summation: the error of every partial sum stays
    within a few units of rounding of the sum of absolute values, whatever the length.  The second sum is kept
    scaled, sum p_j e^{ref - y_j}, the scale ref moved down by exactly 800 log 2 (the running sum and its
    compensation multiplied by 2^-800, exact) whenever the next term would outgrow it: e^{-y} alone underflows
    above y = 745 and overflows below -709, and the privacy loss of a wide domain reaches both (epsilon ~ 1000)."""
    n = p.shape[0]
    d1 = np.zeros(n + 1)
    ld2 = np.full(n + 1, -np.inf)
    s1 = 0.0
    c1 = 0.0
    s2 = 0.0
    c2 = 0.0
    step = _SUFFIX_RESCALE_LOG2 * math.log(2.0)
    scale = 2.0 ** (-_SUFFIX_RESCALE_LOG2)
    ref = y[n - 1] if n > 0 else 0.0
    for i in range(n - 1, -1, -1):
        v = p[i]
        t = s1 + v
        if abs(s1) >= abs(v):
            c1 += (s1 - t) + v
        else:
            c1 += (v - t) + s1
        s1 = t
        d1[i] = s1 + c1
        while ref - y[i] > 700.0:  # the next term's factor e^{ref - y} would overflow: lower the scale
            ref -= step
            s2 *= scale
            c2 *= scale
        w = v * math.exp(ref - y[i]) if v != 0.0 else 0.0
        t = s2 + w
        if abs(s2) >= abs(w):
            c2 += (s2 - t) + w
        else:
            c2 += (w - t) + s2
        s2 = t
        tot = s2 + c2
        ld2[i] = math.log(tot) - ref if tot > 0.0 else -np.inf
    return d1, ld2


@njit(f8(KT, types.boolean, KT, f8, f8, f8, types.boolean, f8, A1), cache=True, error_model="numpy", inline="always")
def _checked_inverse(inv, has_inv, f, s, a, b, increasing, tol, theta):
    """L^{-1}(s) on [a, b]: the closed form where it lands in [a, b] with residual |L(x) - s| <= tol (1 + |s|),
    else bracketed bisection on f = L."""
    if has_inv:
        x = inv(s, theta)
        if x >= a and x <= b and abs(f(x, theta) - s) <= tol * (1.0 + abs(s)):
            return x
    return invert_monotone(f, s, a, b, increasing, theta)


@njit(A1(KT, types.boolean, KT, A1, f8, f8, types.boolean, f8, A1), cache=True, error_model="numpy")
def checked_inverse_many(inv, has_inv, f, ss, a, b, increasing, tol, theta):
    out = np.empty(ss.shape[0])
    for i in range(ss.shape[0]):
        out[i] = _checked_inverse(inv, has_inv, f, ss[i], a, b, increasing, tol, theta)
    return out


# ----------------------------------------------------------------------------------------------------
# tail probabilities of L, each point from one side
#
# A side's mass is accumulated as a probability (``prob``) or as its log (log-add-exp): either way a sum of
# positive parts, accurate however small (a probability underflows only where its log-to-exp would).


@njit(types.boolean(f8, f8, types.boolean), cache=True, error_model="numpy", inline="always")
def _above(s, split, closed):
    """True where s is evaluated on its upper side: above the split, and at the split itself when ``closed``.

    ``closed``: the atom at s belongs to the lower side ({L <= s} below, {L > s} above); else {L < s} below
    and {L >= s} above.  A point at the split goes to the side without the atom at the split.
    """
    return s > split or (s == split and closed)


@njit(f8(f8, types.boolean), cache=True, error_model="numpy", inline="always")
def _scale(logv, prob):
    """A log-mass as accumulated: the mass (``prob``) or the log itself."""
    return math.exp(logv) if prob else logv


@njit(f8(f8, f8, types.boolean), cache=True, error_model="numpy", inline="always")
def _add(acc, v, prob):
    """acc plus v, both as accumulated (``_scale``)."""
    return acc + v if prob else lae(acc, v)


@njit(types.void(A1, A1, A1, A1, f8, types.boolean, types.boolean, A1), cache=True, error_model="numpy")
def atom_tails(values, below, above, ss, split, closed, prob, out):
    """out_i = the atoms' mass on the evaluated side of s_i (``_above``), from the log-sums over the atoms
    before index j (``below``) and from index j on (``above``), j = 0..n for the sorted values."""
    n = values.shape[0]
    for i in range(ss.shape[0]):
        s = ss[i]
        lo = 0  # bisection: lo = the number of atoms below s (at s too when closed)
        hi = n
        while lo < hi:
            mid = (lo + hi) // 2
            if values[mid] < s or (closed and values[mid] == s):
                lo = mid + 1
            else:
                hi = mid
        out[i] = _scale(above[lo] if _above(s, split, closed) else below[lo], prob)


@njit(f8(KT, types.int64, f8, f8, types.boolean, types.boolean, A1), cache=True, error_model="numpy",
      inline="always")
def _beyond(k, mode, gend, x, right, prob, theta):
    """Mass of (x, b) (right) or (a, x) on a piece: mode 0, k is its closed-form log tail (mode 3: the tail
    itself, used for probabilities); mode 1, k is the antiderivative G with value gend at that end.  nan where
    there is none, or where G's difference is not positive, not finite, or below 1e-3 of the values
    (cancellation): the caller integrates those."""
    if mode == 0:
        return _scale(k(x, theta), prob)
    if mode == 3:  # k is the tail probability itself
        v = k(x, theta)
        return v if prob else math.log(v)
    if mode == 1:
        g = k(x, theta)
        d = (gend - g) if right else (g - gend)
        if d > 0.0 and d < np.inf and d > 1e-3 * max(abs(g), abs(gend)):
            return d if prob else math.log(d)
    return np.nan


@njit(types.int64(KT, types.boolean, KT, KT, types.int64, f8, KT, types.int64, f8, A1, f8, f8, types.boolean,
                  f8, f8, f8, f8, f8, types.boolean, types.boolean, A1, A1, A1, types.int64[::1],
                  types.boolean[::1]), cache=True, error_model="numpy")
def piece_tails(inv, has_inv, f, kl, ml, gl, kr, mr, gr, ss, a, b, increasing, lo, hi, logmass, tol, split, closed,
                prob, theta, acc, xs, pending, right_of):
    """Add one monotone piece's mass on the evaluated side of each s_i to acc_i, in one pass.

    The piece runs over x in (a, b), where L takes the values in (lo, hi) and P_m has log mass ``logmass``.
    Inside (lo, hi) the side of s is the mass beyond x = L^{-1}(s) (the checked inverse): (kl, ml, gl) give
    the mass left of x, (kr, mr, gr) right of it (``_beyond``).  Where that is nan the point is left out;
    its index, x and side go to pending / xs / right_of, and the count is returned.
    """
    whole = _scale(logmass, prob)
    k = 0
    for i in range(ss.shape[0]):
        s = ss[i]
        up = _above(s, split, closed)
        if (s <= lo) if up else (s >= hi):
            acc[i] = _add(acc[i], whole, prob)
            continue
        if (s >= hi) if up else (s <= lo):
            continue
        x = _checked_inverse(inv, has_inv, f, s, a, b, increasing, tol, theta)
        right = up == increasing  # {L > s} is (x, b) on an increasing piece
        if right:
            v = _beyond(kr, mr, gr, x, True, prob, theta)
        else:
            v = _beyond(kl, ml, gl, x, False, prob, theta)
        if v == v:
            acc[i] = _add(acc[i], v, prob)
        else:
            pending[k] = i
            xs[k] = x
            right_of[k] = right
            k += 1
    return k


@njit(types.void(A1, A1, f8, types.boolean, types.boolean, types.boolean), cache=True, error_model="numpy")
def finish_tails(acc, ss, split, closed, want_above, prob):
    """In place: the mass of the evaluated side of s_i (``_above``) -> that of the wanted side, by complement
    (1 - p, or log(1 - e^x)) where the other side was evaluated."""
    for i in range(ss.shape[0]):
        if _above(ss[i], split, closed) != want_above:
            acc[i] = max(1.0 - acc[i], 0.0) if prob else log1mexp(min(acc[i], 0.0))


# ----------------------------------------------------------------------------------------------------
# adaptive Gauss-Kronrod (21 point) on a mapped axis


_XGK = np.array([
    0.995657163025808080735527280689003, 0.973906528517171720077964012084452,
    0.930157491355708226001207180059508, 0.865063366688984510732096688423493,
    0.780817726586416897063717578345042, 0.679409568299024406234327365114874,
    0.562757134668604683339000099272694, 0.433395394129247190799265943165784,
    0.294392862701460198131126603103866, 0.148874338981631210884826001129720,
    0.0])
_WGK = np.array([
    0.011694638867371874278064396062192, 0.032558162307964727478818972459390,
    0.054755896574351996031381300244580, 0.075039674810919952767043140916190,
    0.093125454583697605535065465083366, 0.109387158802297641899210590325805,
    0.123491976262065851077600501689580, 0.134709217311473325928054001771707,
    0.142775938577060080797094273138717, 0.147739104901338491374841515972068,
    0.149445554002916905664936468389821])
_WG = np.array([
    0.066671344308688137593568809893332, 0.149451349150580593145776339657697,
    0.219086362515982043995534934228163, 0.269266719309996355091226921569469,
    0.295524224714752870173892994651338])


@njit(cache=True, error_model="numpy")
def _u_of_x(x, c, w):
    """Inverse of x = c + w * u / (1 - u^2), u in (-1, 1)."""
    if x == np.inf:
        return 1.0
    if x == -np.inf:
        return -1.0
    y = (x - c) / w
    if y == 0.0:
        return 0.0
    return 2.0 * y / (1.0 + math.sqrt(1.0 + 4.0 * y * y))


@njit(types.void(types.int64, KT, KT, KT, f8, f8, f8, f8, f8, f8, types.int64, A1, A1), cache=True, error_model="numpy")
def _integrand(mode, f1, f2, f3, u, c, w, t, shift, mu, nmom, theta, out):
    """Fill out[0..nmom] with the mapped integrand at u.

    mode 0: exp((1+t) f1 - t f2 - shift) * (f3 - mu)^j       (tilted moments of the loss f3)
    mode 1: exp(f1 - shift)                                    (mass of a log-density)
    mode 2: exp(f1 - shift) * (-expm1(t - f3))_+                 (hockey-stick integrand, t = epsilon)
    mode 3: exp((1+t) f1 - t f2 - shift) * |f3 - mu|^3           (tilted absolute third central moment)
    mode 4: modes 0 and 3 in one pass: out[0..nmom-1] the moments of mode 0 about mu, out[nmom] |f3 - mu|^3
    """
    one_m = 1.0 - u * u
    x = c + w * u / one_m
    jac = w * (1.0 + u * u) / (one_m * one_m)
    for j in range(nmom + 1):
        out[j] = 0.0
    if not (math.isfinite(x) and math.isfinite(jac)):
        return
    if mode == 0 or mode == 3 or mode == 4:
        lp = f1(x, theta)
        if lp == -np.inf:
            return
        if t == 0.0:
            lg = lp
        elif t == -1.0:
            lg = f2(x, theta)
        else:
            lg = (1.0 + t) * lp - t * f2(x, theta)
        v = math.exp(lg - shift) * jac
        if v == 0.0 or v != v:
            return
        d = f3(x, theta) - mu
        if mode == 3:
            d = abs(d)
            out[0] = v * d * d * d
            return
        top = nmom if mode == 4 else nmom + 1
        p = 1.0
        for j in range(top):
            out[j] = v * p
            p *= d
        if mode == 4:
            ad = abs(d)
            out[nmom] = v * ad * ad * ad
    elif mode == 1:
        v = math.exp(f1(x, theta) - shift) * jac
        if v == v:
            out[0] = v
    else:
        loss = f3(x, theta)
        if loss > t:
            v = math.exp(f1(x, theta) - shift) * jac * (-math.expm1(t - loss))
            if v == v:
                out[0] = v


@njit(types.void(types.int64, KT, KT, KT, f8, f8, f8, f8, f8, f8, f8, types.int64, A1, A1, A1, A1, A2, A1),
      cache=True, error_model="numpy")
def _gk_interval(mode, f1, f2, f3, u0, u1, c, w, t, shift, mu, nmom, theta, res, err, absres, fv, gauss):
    """GK21 on [u0, u1]: res, err and absres (the integral of |f|) per component; fv (21, nmom + 1) and gauss are
    work arrays.  The error estimate is |K21 - G10|, except in mode 4 (the SPA's tilted moments, whose callers put
    the one kink of |L - mu|^3 on an interval end, so every interval's integrand is smooth), where it is QUADPACK's
    (``resasc min(1, (200 |K21 - G10| / resasc)^1.5)``, floored at 50 ulp of absres): |K21 - G10| is the error of
    the 10-point rule, orders of magnitude above the 21-point rule's own on smooth integrands."""
    half = 0.5 * (u1 - u0)
    ctr = 0.5 * (u1 + u0)
    m = nmom + 1
    for j in range(m):
        res[j] = 0.0
        absres[j] = 0.0
        gauss[j] = 0.0
    _integrand(mode, f1, f2, f3, ctr, c, w, t, shift, mu, nmom, theta, fv[20])
    for j in range(m):
        res[j] += _WGK[10] * fv[20, j]
        absres[j] += _WGK[10] * abs(fv[20, j])
    for k in range(10):
        dx = half * _XGK[k]
        for s in range(2):
            row = fv[2 * k + s]
            _integrand(mode, f1, f2, f3, ctr - dx if s == 0 else ctr + dx, c, w, t, shift, mu, nmom, theta, row)
            for j in range(m):
                res[j] += _WGK[k] * row[j]
                absres[j] += _WGK[k] * abs(row[j])
                if k % 2 == 1:
                    gauss[j] += _WG[k // 2] * row[j]
    for j in range(m):
        e = abs(res[j] - gauss[j]) * half
        if mode == 4:
            mean = 0.5 * res[j]
            asc = _WGK[10] * abs(fv[20, j] - mean)
            for k in range(10):
                asc += _WGK[k] * (abs(fv[2 * k, j] - mean) + abs(fv[2 * k + 1, j] - mean))
            asc *= abs(half)
            if asc != 0.0 and e != 0.0:
                e = asc * min(1.0, (200.0 * e / asc) ** 1.5)
            e = max(e, 50.0 * 2.220446049250313e-16 * absres[j] * abs(half))
        res[j] *= half
        absres[j] *= half
        err[j] = e


@njit(types.Tuple((A1, A1))(types.int64, KT, KT, KT, A1, f8, f8, f8, f8, f8, types.int64, A1, f8),
      cache=True, error_model="numpy")
def _gk_adaptive(mode, f1, f2, f3, edges, c, w, t, shift, mu, nmom, theta, rtol):
    """Adaptive GK21 in the mapped variable u, starting from the intervals between consecutive ``edges``:
    the interval with the largest relative error contribution is halved until every component's error estimate
    is within rtol of its integral of |f|.  Returns (integrals[0..nmom], estimated absolute errors)."""
    m = nmom + 1
    max_cap = 6000
    cap = 64  # grown on demand: a 6000-row allocation up front cost ~90 us per call (mmap + page faults)
    lo = np.empty(cap)
    hi = np.empty(cap)
    vals = np.empty((cap, m))
    errs = np.empty((cap, m))
    absv = np.empty((cap, m))
    fv = np.empty((21, m))
    gauss = np.empty(m)
    res = np.empty(m)
    err = np.empty(m)
    ab = np.empty(m)
    n = 0
    for i in range(edges.shape[0] - 1):
        x0 = edges[i]
        x1 = edges[i + 1]
        if not (x1 > x0):
            continue
        _gk_interval(mode, f1, f2, f3, x0, x1, c, w, t, shift, mu, nmom, theta, res, err, ab, fv, gauss)
        lo[n] = x0
        hi[n] = x1
        vals[n, :] = res
        errs[n, :] = err
        absv[n, :] = ab
        n += 1
    if n == 0:
        return np.zeros(m), np.zeros(m)
    tot = np.zeros(m)
    tot_err = np.zeros(m)
    tot_abs = np.zeros(m)
    pval = np.zeros(m)
    perr = np.zeros(m)
    iroff = 0
    for it in range(max_cap):
        if n + 1 >= cap and cap < max_cap:
            cap = min(2 * cap, max_cap)
            lo2 = np.empty(cap)
            hi2 = np.empty(cap)
            vals2 = np.empty((cap, m))
            errs2 = np.empty((cap, m))
            absv2 = np.empty((cap, m))
            lo2[:n] = lo[:n]
            hi2[:n] = hi[:n]
            vals2[:n] = vals[:n]
            errs2[:n] = errs[:n]
            absv2[:n] = absv[:n]
            lo, hi, vals, errs, absv = lo2, hi2, vals2, errs2, absv2
        if it % 64 == 0:  # running sums, refreshed now and then against drift
            for j in range(m):
                tot[j] = 0.0
                tot_err[j] = 0.0
                tot_abs[j] = 0.0
            for i in range(n):
                for j in range(m):
                    tot[j] += vals[i, j]
                    tot_err[j] += errs[i, j]
                    tot_abs[j] += absv[i, j]
        ok = True
        for j in range(m):
            if tot_err[j] > rtol * tot_abs[j] + 1e-300:
                ok = False
        if ok or n + 1 >= max_cap:
            return tot.copy(), tot_err.copy()
        # split the interval with the largest relative contribution to the error
        best = 0
        best_score = -1.0
        for i in range(n):
            sc = 0.0
            for j in range(m):
                r = errs[i, j] / (tot_abs[j] + 1e-300)
                if r > sc:
                    sc = r
            if sc > best_score:
                best_score = sc
                best = i
        a0 = lo[best]
        b0 = hi[best]
        mid = 0.5 * (a0 + b0)
        if not (a0 < mid < b0):
            return tot.copy(), tot_err.copy()
        for j in range(m):
            pval[j] = vals[best, j]
            perr[j] = errs[best, j]
            tot[j] -= vals[best, j]
            tot_err[j] -= errs[best, j]
            tot_abs[j] -= absv[best, j]
        _gk_interval(mode, f1, f2, f3, a0, mid, c, w, t, shift, mu, nmom, theta, res, err, ab, fv, gauss)
        hi[best] = mid
        vals[best, :] = res
        errs[best, :] = err
        absv[best, :] = ab
        _gk_interval(mode, f1, f2, f3, mid, b0, c, w, t, shift, mu, nmom, theta, res, err, ab, fv, gauss)
        lo[n] = mid
        hi[n] = b0
        vals[n, :] = res
        errs[n, :] = err
        absv[n, :] = ab
        n += 1
        noisy = True
        for j in range(m):
            tot[j] += vals[best, j] + vals[n - 1, j]
            tot_err[j] += max(errs[best, j] + errs[n - 1, j], 0.0)
            tot_abs[j] += absv[best, j] + absv[n - 1, j]
            # roundoff (QUADPACK's test): halving changed nothing and did not reduce the error estimate
            same = abs(vals[best, j] + vals[n - 1, j] - pval[j]) <= 1e-5 * abs(pval[j]) + 1e-300
            if not (same and errs[best, j] + errs[n - 1, j] >= 0.99 * perr[j]):
                noisy = False
        if noisy:
            iroff += 1
            if iroff >= 10:  # the error estimate is at the floor set by the integrand's own rounding
                return tot.copy(), tot_err.copy()
    return np.zeros(m), np.zeros(m)


@njit(types.Tuple((A1, A1))(types.int64, KT, KT, KT, f8, f8, f8, f8, f8, f8, f8, types.int64, A1, f8, types.int64),
      cache=True, error_model="numpy")
def gk_integrate(mode, f1, f2, f3, a, b, c, w, t, shift, mu, nmom, theta, rtol, nsplit):
    """Adaptive GK21 integral over x in [a, b] (ends may be infinite) in the mapped variable u.

    The map x = c + w u/(1-u^2) puts the bulk of the integrand (centre c, width w) at u ~ 0; the search starts
    from ``nsplit`` equal intervals in u.  Returns (integrals[0..nmom], estimated absolute errors[0..nmom]).
    """
    ua = _u_of_x(a, c, w)
    ub = _u_of_x(b, c, w)
    if not (ub > ua):
        return np.zeros(nmom + 1), np.zeros(nmom + 1)
    edges = np.empty(nsplit + 1)
    for i in range(nsplit + 1):
        edges[i] = ua + (ub - ua) * i / nsplit
    return _gk_adaptive(mode, f1, f2, f3, edges, c, w, t, shift, mu, nmom, theta, rtol)


@njit(f8(types.int64, KT, KT, f8, f8, A1), cache=True, error_model="numpy")
def _gval(mode, f1, f2, x, t, theta):
    if mode == 0 and t != 0.0:
        return (1.0 + t) * f1(x, theta) - t * f2(x, theta)
    return f1(x, theta)


@njit(f8(types.int64, KT, KT, f8, f8, f8, A1, f8, f8, f8), cache=True, error_model="numpy")
def _peak_width(mode, f1, f2, a, b, t, theta, xs, gs, d0):
    """About where g has dropped by 1 from its peak gs at xs: on each side, from the step d0 (a guess of the
    scale; at least 1e-9 (1 + |xs|)), steps growing or shrinking 4x until one has dropped by 1 and the next
    has not, then 4 bisections in log of that bracket (to ~9%); the mean of the two sides (a scale for the
    quadrature map, not a precise quantity)."""
    dmin = 1e-9 * (1.0 + abs(xs))
    total = 0.0
    for side in (-1.0, 1.0):
        d = max(d0, dmin)
        x = xs + side * d
        inside = x >= a and x <= b and _gval(mode, f1, f2, x, t, theta) > gs - 1.0
        if inside:
            prev = d
            ended = False
            for _ in range(400):
                d *= 4.0
                x = xs + side * d
                if x < a or x > b or not (_gval(mode, f1, f2, x, t, theta) > gs - 1.0):
                    ended = True
                    break
                prev = d
            if not ended:
                return np.inf  # g stays within 1 of its peak as far as doubles go: no finite width
        else:
            prev = d
            for _ in range(400):
                if d <= dmin:
                    prev = d
                    break
                prev = max(0.25 * d, dmin)
                x = xs + side * prev
                if x >= a and x <= b and _gval(mode, f1, f2, x, t, theta) > gs - 1.0:
                    break
                d = prev
        if prev < d:
            for _ in range(4):
                mid = math.sqrt(prev * d)
                x = xs + side * mid
                if x >= a and x <= b and _gval(mode, f1, f2, x, t, theta) > gs - 1.0:
                    prev = mid
                else:
                    d = mid
        total += d
    return 0.5 * total


#: how far below the scanned maximum of the tilted log-density a scanned point still counts towards the extent
#: that ``tilt_piece``'s trapezoid walk must cover
EXTENT_NATS = 60.0


@njit(types.UniTuple(f8, 2)(types.int64, KT, KT, f8, A1, f8, f8, f8, f8), cache=True, error_model="numpy")
def _brent_max(mode, f1, f2, t, theta, left, right, xb, gb):
    """(x, g(x)) at the maximum of g on [left, right] by Brent's method (parabolic steps through the three best
    points, golden sections where a parabola is not trustworthy or a value is not finite), from the scanned best
    point xb (g = gb) inside; to 1e-9 (1 + |left| + |right|), as the golden section it replaced, in ~10-15
    evaluations instead of ~50 for a smooth peak.  Minimises f = -g (nan counts as +inf)."""
    cg = 0.3819660112501051
    a = left
    b = right
    x = xb
    w = xb
    v = xb
    fx = -gb
    fw = fx
    fv = fx
    d = 0.0
    e = 0.0
    for _ in range(300):
        xm = 0.5 * (a + b)
        tol1 = 0.25e-9 * (1.0 + abs(a) + abs(b))
        tol2 = 2.0 * tol1
        if abs(x - xm) <= tol2 - 0.5 * (b - a):
            break
        golden = True
        if abs(e) > tol1:
            r = (x - w) * (fx - fv)
            q = (x - v) * (fx - fw)
            p = (x - v) * q - (x - w) * r
            q = 2.0 * (q - r)
            if q > 0.0:
                p = -p
            q = abs(q)
            etemp = e
            e = d
            if math.isfinite(p) and math.isfinite(q) and q > 0.0 and abs(p) < abs(0.5 * q * etemp) \
                    and p > q * (a - x) and p < q * (b - x):
                d = p / q
                u = x + d
                if u - a < tol2 or b - u < tol2:
                    d = tol1 if xm >= x else -tol1
                golden = False
        if golden:
            e = (a - x) if x >= xm else (b - x)
            d = cg * e
        u = x + d if abs(d) >= tol1 else x + (tol1 if d >= 0.0 else -tol1)
        gu = _gval(mode, f1, f2, u, t, theta)
        fu = -gu if gu == gu else np.inf
        if fu <= fx:
            if u >= x:
                a = x
            else:
                b = x
            v = w
            fv = fw
            w = x
            fw = fx
            x = u
            fx = fu
        else:
            if u < x:
                a = u
            else:
                b = u
            if fu <= fw or w == x:
                v = w
                fv = fw
                w = u
                fw = fu
            elif fu <= fv or v == x or v == w:
                v = u
                fv = fu
    return x, -fx


@njit(types.UniTuple(A1, 3)(types.int64, KT, KT, f8, f8, A1), cache=True, error_model="numpy")
def scan_grid(mode, f1, f2, a, b, theta):
    """The peak scan's fixed grid on [a, b] (a geometric grid around 0, or the finite end, plus 101 equal points on a
    finite interval) with f1 and f2 there: (points, f1, f2).  It does not depend on the tilt, so a piece's grid is
    computed once and every tilt's scan (``peak_from_grid``) costs no kernel call on it.  Mode 1 (f1 alone): f2 is
    not evaluated (its column repeats f1's)."""
    pts = np.empty(420)
    npts = 0
    lo = a if a > -np.inf else -1e12
    hi = b if b < np.inf else 1e12
    anchor = 0.0
    if anchor < lo or anchor > hi:
        anchor = lo if a > -np.inf else hi
    pts[npts] = anchor
    npts += 1
    for k in range(-4, 13):
        for frac in (1.0, 2.0, 5.0):
            d = frac * 10.0 ** k
            for side in (-1.0, 1.0):
                x = anchor + side * d
                if lo <= x <= hi:
                    pts[npts] = x
                    npts += 1
    if a > -np.inf and b < np.inf:
        for i in range(101):
            pts[npts] = a + (b - a) * i / 100.0
            npts += 1
    pts = pts[:npts].copy()
    v1 = np.empty(npts)
    v2 = np.empty(npts)
    for i in range(npts):
        v1[i] = f1(pts[i], theta)
        v2[i] = f2(pts[i], theta) if mode == 0 else v1[i]
    return pts, v1, v2


@njit(types.UniTuple(A1, 3)(types.int64, types.int64, types.int64, f8, f8, A1), cache=True, error_model="numpy")
def scan_grid_at(mode, f1_at, f2_at, a, b, theta):
    """``scan_grid`` with the kernels as addresses (``KernelRef.address``: no first-class function unboxing)."""
    return scan_grid(mode, _as_kernel(f1_at), _as_kernel(f2_at), a, b, theta)


@njit(types.UniTuple(f8, 5)(types.int64, KT, KT, f8, f8, f8, A1, A1, A1, A1), cache=True, error_model="numpy")
def peak_from_grid(mode, f1, f2, a, b, t, theta, pts, v1, v2):
    """``peak_scan_extent`` from the grid's kernel values (``scan_grid``): the same arithmetic as ``_gval``."""
    npts = pts.size
    lo = a if a > -np.inf else -1e12
    hi = b if b < np.inf else 1e12
    anchor = pts[0]
    best_x = anchor
    best_g = -np.inf
    gv = np.empty(npts)
    for i in range(npts):
        g = (1.0 + t) * v1[i] - t * v2[i] if mode == 0 and t != 0.0 else v1[i]
        gv[i] = g
        if g == g and g > best_g:
            best_g = g
            best_x = pts[i]
    if best_g == -np.inf:
        return anchor, -np.inf, 1.0, anchor, anchor
    xlo = best_x
    xhi = best_x
    for i in range(npts):
        if gv[i] >= best_g - EXTENT_NATS:
            xlo = min(xlo, pts[i])
            xhi = max(xhi, pts[i])
    left = lo
    right = hi
    for i in range(npts):
        x = pts[i]
        if best_x > x > left:
            left = x
        if best_x < x < right:
            right = x
    xs, gs = _brent_max(mode, f1, f2, t, theta, left, right, best_x, best_g)
    if not (gs >= best_g):
        xs = best_x
        gs = best_g
    return xs, gs, _peak_width(mode, f1, f2, a, b, t, theta, xs, gs, 0.25 * (right - left)), xlo, xhi


@njit(types.UniTuple(f8, 5)(types.int64, KT, KT, f8, f8, f8, A1), cache=True, error_model="numpy")
def peak_scan_extent(mode, f1, f2, a, b, t, theta):
    """Locate the maximum of g(x) = (1+t) f1 - t f2 (mode 0) or f1 (mode 1) on [a, b].

    Returns (x_star, g_star, width): width is about where g has dropped by 1, a scale for the
    quadrature map.  A coarse scan over a geometric grid around 0 (or the finite end, ``scan_grid``), then Brent's
    refinement between the scanned neighbours of the best point (``peak_from_grid``).  ``peak_scan_extent`` also returns
    the smallest and largest scanned points where g is within EXTENT_NATS of the best scanned value (where a
    quadrature that walks outwards from the peak must reach at least: a second bump behind a deep valley).
    """
    pts, v1, v2 = scan_grid(mode, f1, f2, a, b, theta)
    return peak_from_grid(mode, f1, f2, a, b, t, theta, pts, v1, v2)


@njit(types.UniTuple(f8, 3)(types.int64, KT, KT, f8, f8, f8, A1), cache=True, error_model="numpy")
def peak_scan(mode, f1, f2, a, b, t, theta):
    """``peak_scan_extent`` without the extent: (x_star, g_star, width)."""
    xs, gs, w, _, _ = peak_scan_extent(mode, f1, f2, a, b, t, theta)
    return xs, gs, w


@njit(types.boolean(KT, KT, f8, f8, f8, f8, A1), cache=True, error_model="numpy")
def tilt_diverges(lp, lq, a, b, t, gs, theta):
    """True when the tilted integrand (1+t) lp - t lq does not decay at an infinite end of [a, b] (M(t) = inf);
    gs is its maximum on the piece."""
    for k in range(2):
        end = a if k == 0 else b
        x = -1e8 if k == 0 else 1e8
        if end == -np.inf or end == np.inf:
            g1 = _gval(0, lp, lq, x, t, theta)
            g2 = _gval(0, lp, lq, 2.0 * x, t, theta)
            if math.isfinite(g1) and math.isfinite(g2) and g2 >= g1 - 1.0 and g2 > gs - 700.0:
                return True
    return False


# ----------------------------------------------------------------------------------------------------
# trapezoid rule on the whole line (the SPA's tilted moments on a piece with two infinite ends)

#: the trapezoid walk stops on a side once two consecutive points contribute less than this (relative to the
#: integrand's peak, every component) beyond the scanned extent
TRAP_NEGLIGIBLE = 1e-19
#: the trapezoid gives up (the caller falls back to adaptive GK21) beyond this many integrand evaluations, or
#: where its first level (step half the peak's width) needs more than TRAP_LEVEL0_POINTS to reach the negligible
#: tails: slowly decaying tails (e.g. exponential, the logistic mechanism's) cost adaptive GK21 less
TRAP_MAX_POINTS = 400
TRAP_LEVEL0_POINTS = 80
#: tilt_piece tries the trapezoid only where the peak scan's extent spans at most this many level-0 steps (a
#: performance choice, not a correctness one: subsampled Gaussians measure 13-53, the logistic mechanism's
#: exponential tails 59-115, where the walk would exceed TRAP_LEVEL0_POINTS and fall back anyway)
TRAP_EXTENT_POINTS = 56
#: the absolute third moment (a certificate's ingredient, returned with its error estimate added) is refined
#: until its levels agree to this
TRAP_ABS3_RTOL = 1e-3


@njit(f8(KT, KT, KT, f8, f8, f8, f8, types.int64, A1, A1), cache=True, error_model="numpy")
def _trap_point(lp, lq, L, x, t, shift, mu, nmom, theta, acc):
    """Add the tilted-moment integrand at x into acc: acc[j] += v (L - mu)^j (j < nmom), acc[nmom] += v |L - mu|^3,
    acc[m + j] the same in absolute value and acc[2m + j] times the conditioning of v (m = nmom + 1), with
    v = exp((1+t) lp - t lq - shift).  Returns the largest absolute term, -1 where v overflows."""
    m = nmom + 1
    if t == -1.0:
        lg = lq(x, theta)
        cond = abs(lg)
    else:
        lpv = lp(x, theta)
        if lpv == -np.inf:
            return 0.0
        if t == 0.0:
            lg = lpv
            cond = abs(lg)
        else:
            lqv = lq(x, theta)
            lg = (1.0 + t) * lpv - t * lqv
            cond = abs((1.0 + t) * lpv) + abs(t * lqv)
    e = lg - shift
    if e > 700.0:
        return -1.0
    v = math.exp(e)
    if v == 0.0 or v != v:
        return 0.0
    cond += abs(shift) + 1.0
    d = L(x, theta) - mu
    p = v
    big = v
    for j in range(nmom):
        ap = abs(p)
        acc[j] += p
        acc[m + j] += ap
        acc[2 * m + j] += ap * cond
        if ap > big:
            big = ap
        p *= d
    ad = abs(d)
    a3 = v * ad * ad * ad
    acc[nmom] += a3
    acc[m + nmom] += a3
    acc[2 * m + nmom] += a3 * cond
    if a3 > big:
        big = a3
    return big


@njit(types.Tuple((A1, types.boolean))(KT, KT, KT, f8, f8, f8, f8, f8, types.int64, A1, f8, f8, f8, f8),
      cache=True, error_model="numpy")
def trap_moments(lp, lq, L, t, x0, h, shift, mu, nmom, theta, rtol, xlo, xhi, c3):
    """Tilted moments on the whole line by the trapezoid rule on x = x0 + i h, halving h until two levels agree.

    For integrands analytic in a strip about the real axis and decaying like the tilted densities of smooth
    mechanisms, the rule converges geometrically in 1/h (a few dozen points where adaptive GK21 needs several
    hundred).  Level 0 walks outwards from x0 until every component is negligible (TRAP_NEGLIGIBLE) beyond
    [xlo, xhi]; each level adds the midpoints.  Done when every moment j < nmom changed by at most rtol of its
    integral of |f| (plus its rounding: the conditioning of the tilted log-density); the absolute third moment,
    whose integrand has a kink at x0 (where L = mu; c3 = 0 where there is none), carries the Euler-Maclaurin
    term of that kink, c3 h^4, and is returned with the last change added (an upper estimate).
    Returns (integrals[0..nmom], converged); not converged where level 0 needs more than TRAP_LEVEL0_POINTS, beyond
    TRAP_MAX_POINTS in all or where v overflows."""
    m = nmom + 1
    S = np.zeros(3 * m)
    out = np.zeros(m)
    if _trap_point(lp, lq, L, x0, t, shift, mu, nmom, theta, S) < 0.0:
        return out, False
    npts = 1
    ilo = 0
    ihi = 0
    for side in (-1, 1):
        i = 0
        quiet = 0
        while quiet < 2:
            i += 1
            x = x0 + side * i * h
            big = _trap_point(lp, lq, L, x, t, shift, mu, nmom, theta, S)
            npts += 1
            if big < 0.0 or npts > TRAP_LEVEL0_POINTS or not math.isfinite(x):
                return out, False
            past = x > xhi if side > 0 else x < xlo
            quiet = quiet + 1 if (big < TRAP_NEGLIGIBLE and past) else 0
        if side < 0:
            ilo = -i
        else:
            ihi = i
    prev = np.empty(m)
    for j in range(m):
        prev[j] = S[j] * h
    prev[nmom] += c3 * h ** 4
    while True:
        nk = ihi - ilo
        if npts + nk > TRAP_MAX_POINTS:
            return out, False
        for k in range(nk):
            if _trap_point(lp, lq, L, x0 + (ilo + k + 0.5) * h, t, shift, mu, nmom, theta, S) < 0.0:
                return out, False
        npts += nk
        h *= 0.5
        ilo *= 2
        ihi *= 2
        ok = True
        for j in range(m):
            out[j] = S[j] * h
            if j == nmom:
                out[j] += c3 * h ** 4
            tol = (rtol if j < nmom else TRAP_ABS3_RTOL) * S[m + j] * h + 1e-15 * S[2 * m + j] * h + 1e-300
            if abs(out[j] - prev[j]) > tol:
                ok = False
        if ok:
            out[nmom] += abs(out[nmom] - prev[nmom])
            return out, True
        for j in range(m):
            prev[j] = out[j]


@njit(types.Tuple((f8, A1, f8))(types.int64, types.int64, types.int64, types.int64, types.boolean, f8, f8,
                                types.boolean, f8, f8, f8, f8, types.int64, A1, f8, types.int64, A1, A1, A1),
      cache=True, error_model="numpy")
def tilt_piece(lp_at, lq_at, L_at, inv_at, has_inv, a, b, inc, La, Lb, t, mu, nmom, theta, rtol, nsplit, pts, vp,
               vq):
    """One monotone piece's share of a tilted-moment pass in one call: peak scan, divergence check and quadrature:
    on the whole line with short tails the trapezoid rule from the kink of |L - mu|^3 (``trap_moments``), else (or
    where it does not converge) adaptive GK21 (mode 4, QUADPACK's error estimate) started from ``nsplit`` intervals
    on each side of
    the kink of |L - mu|^3 (where L = mu, found with the piece's checked inverse; L runs monotonically from La at
    a to Lb at b), so that every interval's integrand is smooth.

    Returns (shift, integrals, mu): the integrals of exp((1+t) lp - t lq - shift) (L - mu)^j for j < nmom and of
    exp(...) |L - mu|^3 (index nmom); mu = nan asks for the loss at the tilted density's peak as the centre (no
    model of K'(t) at hand: usually within a few standard deviations of the tilted mean), and the mu used is
    returned.  shift = +inf: the tilted MGF diverges on the piece (the integrand does not
    decay at an infinite end); shift = -inf: the piece has no tilted mass.  The kernels (log p, log q, L and the
    closed-form inverse of L, or L where there is none) come as addresses (``KernelRef.address``); pts, vp, vq is
    the piece's peak-scan grid with log p and log q on it (``scan_grid``, mode 0: computed once per piece).
    """
    lp = _as_kernel(lp_at)
    lq = _as_kernel(lq_at)
    L = _as_kernel(L_at)
    inv = _as_kernel(inv_at)
    xs, gs, w, xlo, xhi = peak_from_grid(0, lp, lq, a, b, t, theta, pts, vp, vq)
    if not (gs > -np.inf and gs < np.inf):
        return gs, np.zeros(nmom + 1), mu
    if tilt_diverges(lp, lq, a, b, t, gs, theta):
        return np.inf, np.zeros(nmom + 1), mu
    if mu != mu:
        mu = L(xs, theta)
        if not math.isfinite(mu):  # (a peak where one density vanishes) any finite centre; the caller re-centres
            mu = 0.0
    xk = np.nan  # the kink of |L - mu|^3
    if min(La, Lb) < mu < max(La, Lb):
        xk = _checked_inverse(inv, has_inv, L, mu, a, b, inc, 1e-12, theta)
    if a == -np.inf and b == np.inf and w > 0.0 and (xhi - xlo) <= TRAP_EXTENT_POINTS * 0.5 * w:
        # the whole line, tails about as short as a Gaussian's: the trapezoid rule from the kink (GK21 below where
        # it does not converge)
        x0 = xs
        c3 = 0.0
        if math.isfinite(xk):
            x0 = xk
            dx = 1e-4 * w
            d1 = abs(L(xk + dx, theta) - L(xk - dx, theta)) / (2.0 * dx)
            # Euler-Maclaurin: F = |L - mu|^3 e^g has a third derivative jumping by 12 L'^3 e^g at the kink
            c3 = -(d1 * d1 * d1) * math.exp(_gval(0, lp, lq, xk, t, theta) - gs) / 60.0
            if not math.isfinite(c3):
                c3 = 0.0
        res, ok = trap_moments(lp, lq, L, t, x0, 0.5 * w, gs, mu, nmom, theta, rtol, xlo, xhi, c3)
        if ok:
            return gs, res, mu
    w *= 4.0  # a map 4x wider than the peak: fewer halvings towards u = +/-1 (20 -> 14 intervals, Gaussian tails)
    ua = _u_of_x(a, xs, w)
    ub = _u_of_x(b, xs, w)
    uk = _u_of_x(xk, xs, w) if math.isfinite(xk) else np.nan
    if not (ua < uk < ub):  # no kink inside the piece: equal intervals
        return gs, gk_integrate(4, lp, lq, L, a, b, xs, w, t, gs, mu, nmom, theta, rtol, nsplit)[0], mu
    edges = np.empty(2 * nsplit + 1)
    for i in range(nsplit + 1):
        edges[i] = ua + (uk - ua) * i / nsplit
        edges[nsplit + i] = uk + (ub - uk) * i / nsplit
    return gs, _gk_adaptive(4, lp, lq, L, edges, xs, w, t, gs, mu, nmom, theta, rtol)[0], mu


@njit(types.UniTuple(f8, 5)(f8, f8, f8, f8, f8), cache=True, error_model="numpy")
def cumulants_from_central(m2, m3, m4, m5, m6):
    """Cumulants 2..6 from central moments 2..6."""
    return (m2, m3, m4 - 3.0 * m2 * m2, m5 - 10.0 * m3 * m2, m6 - 15.0 * m4 * m2 - 10.0 * m3 * m3 + 30.0 * m2 ** 3)


@njit(types.Tuple((A1, f8))(A1, f8, f8, types.int64), cache=True, error_model="numpy")
def tilt_cumulants(tot, g, center, n):
    """([K, K', ..., K^(n)], A) from one tilted-moment pass: tot[j] = e^-g E~[(L - center)^j] (j = 0..n, the
    unnormalised tilted moments about ``center``) and tot[n + 1] the same for |L - center|^3.  Central moments by
    the binomial shift (the mean is close to the centre next to the spread), cumulants from them, and
    A = ((E|L - c|^3)^(1/3) + |K' - c|)^3 >= E|L - K'|^3 (Minkowski).  All inf where the mass is not positive."""
    out = np.empty(n + 1)
    if not (tot[0] > 0.0 and tot[0] < np.inf):
        out[:] = np.inf
        return out, np.inf
    raw = tot / tot[0]
    m1 = raw[1]
    cen = np.zeros(7)
    for j in range(2, n + 1):
        s = 0.0
        binom = 1.0
        for i in range(j + 1):  # sum_i C(j, i) raw_i (-m1)^(j - i)
            s += binom * raw[i] * (-m1) ** (j - i)
            binom = binom * (j - i) / (i + 1)
        cen[j] = s
    ks = cumulants_from_central(cen[2], cen[3], cen[4], cen[5], cen[6])
    out[0] = math.log(tot[0]) + g
    out[1] = center + m1
    for j in range(2, n + 1):
        out[j] = ks[j - 2]
    return out, (raw[n + 1] ** (1.0 / 3.0) + abs(m1)) ** 3


@njit(types.Tuple((A1, f8, f8, types.int64))(types.int64, types.int64, types.int64, types.int64, types.boolean, f8, f8,
                                             types.boolean, f8, f8, f8, f8, types.int64, A1, f8, types.int64, A1, A1,
                                             A1, f8), cache=True, error_model="numpy")
def tilt_stats_piece(lp_at, lq_at, L_at, inv_at, has_inv, a, b, inc, La, Lb, t, mu, n, theta, rtol, nsplit, pts, vp,
                     vq, sign):
    """``tilt_piece`` and ``tilt_cumulants`` in one call for a law with one monotone piece and no atoms: ([K(t), ...,
    K^(n)(t)] with K^(j) multiplied by sign^j, A, the centre used, status); status 0, or 1 where the tilted MGF
    diverges (vec and A inf), 2 where the piece has no tilted mass (the caller's general path decides)."""
    gs, res, mu2 = tilt_piece(lp_at, lq_at, L_at, inv_at, has_inv, a, b, inc, La, Lb, t, mu, n + 1, theta, rtol, nsplit,
                              pts, vp, vq)
    if gs == np.inf:
        out = np.empty(n + 1)
        out[:] = np.inf
        return out, np.inf, mu, 1
    if not gs > -np.inf:
        return np.zeros(n + 1), np.nan, mu, 2
    vec, A = tilt_cumulants(res, gs, mu2, n)
    if sign != 1.0:
        f = 1.0
        for j in range(n + 1):
            vec[j] *= f
            f *= sign
    return vec, A, mu2, 0


# ----------------------------------------------------------------------------------------------------
# the saddle-point accountant's SP-CLT and its certified bounds at a fixed tilt, solved in epsilon (spa._log_clt,
# spa._bound_at, spa._cross_bound)

_SQRT_HALF = math.sqrt(0.5)
_LOG_2PI = math.log(2.0 * math.pi)


@njit(f8(f8), cache=True, error_model="numpy")
def log_mills(x):
    """log(e^{x^2/2} Q(x)), the log scaled Mills ratio, stable for all x: math.erfc where Q(x) is a normal double,
    else Laplace's continued fraction Q(x) = phi(x) / (x + 1/(x + 2/(x + ...))) (backward; 8 terms reach double
    precision from x = 25).  scipy's log_ndtr costs ~1 us per scalar call and cancels at huge x."""
    if x < 25.0:
        return 0.5 * x * x + math.log(0.5 * math.erfc(x * _SQRT_HALF))
    r = x
    for k in range(12, 0, -1):
        r = x + k / r
    return -0.5 * _LOG_2PI - math.log(r)


@njit(types.UniTuple(f8, 5)(f8, f8, f8, f8, f8), cache=True, error_model="numpy")
def clt_terms(t, K, K1, s, e):
    """(log SP-CLT, g, a, b, log Psi(b) - log Psi(a)) at tilt t and epsilon e, s = sqrt(K''), Psi(x) = e^{x^2/2}
    Q(x): the value (eq. 79) and what its slope in epsilon needs (``bound_value``).  Where K'' is 0 (a tilted law
    concentrated on its largest value to double precision, e.g. a bounded loss at a large tilt), the value is its
    limit as s -> 0, the point mass at K': e^(K - t K') (1 - e^(e - K')) (0 for e >= K'), and the slope terms are
    nan."""
    if not s > 0.0:
        return (K - t * K1 + log1mexp(e - K1) if K1 > e else -np.inf), np.nan, np.nan, np.nan, np.nan
    g = (K1 - e) / s
    a = t * s - g
    b = a + s
    la = log_mills(a)
    lb = log_mills(b)
    clt = K - t * e - 0.5 * g * g + la + log1mexp(lb - la) if lb < la else -np.inf
    return clt, g, a, b, lb - la


@njit(types.UniTuple(f8, 2)(f8, f8, f8, f8, f8, types.boolean, f8, f8, f8), cache=True, error_model="numpy")
def bound_value(t, K, K1, s, err0, upper, e, log_slack, quad_slack):
    """(value, d value / d epsilon) of the log of Theorem 5's upper (``upper``) or lower bound at the fixed tilt t
    and epsilon e, from K, K', s = sqrt(K'') and err0 (the log error term at epsilon 0, with its allowance): SP-CLT
    (``clt_terms``) and the arithmetic of spa._log_upper and _log_lower, in the same order, and the slope
    d log SP-CLT / d eps = -t + g/s + (a Psi(a) - b Psi(b)) / ((Psi(a) - Psi(b)) s) (Psi' = x Psi - phi(0)),
    weighted by the two terms of the bound."""
    clt, g, a, b, dl = clt_terms(t, K, K1, s, e)
    log_err = err0 - t * e
    if upper:
        a2 = clt + log_slack
        hi = log_err if log_err > a2 else a2
        lo = log_err if log_err < a2 else a2
        v = hi if hi == -np.inf else hi + math.log1p(math.exp(lo - hi))
    else:
        m = log_err - clt
        v = clt + log1mexp(0.0 if 0.0 < m else m) - quad_slack if log_err < clt else -np.inf
    if not (clt > -np.inf and math.isfinite(v)):
        return v, np.nan
    dclt = -t + g / s + (a - b * math.exp(dl)) / (-math.expm1(dl) * s)
    x = log_err - clt - (log_slack if upper else 0.0)
    if upper:
        w = 1.0 / (1.0 + math.exp(x)) if x < 700.0 else 0.0
        return v, w * dclt - (1.0 - w) * t
    rho = math.exp(x)
    return v, (dclt + t * rho) / (1.0 - rho)


@njit(types.Tuple((f8, f8, types.int64))(f8, f8, f8, f8, f8, types.boolean, f8, f8, f8, f8, f8, f8), cache=True,
      error_model="numpy")
def bound_cross(t, K, K1, s, err0, upper, target, e0, scale, floor, log_slack, quad_slack):
    """A crossing of ``bound_value`` in epsilon (spa._cross_bound says how): (a, b, status) with f(a) >= target >
    f(b) and b - a <= 1e-12 (1 + |a|); status 0, 1 where f stays below the target down to ``floor`` (a is nan),
    2 where no bracket was found (the caller raises)."""
    has_a = False
    has_b = False
    a = np.nan
    b = np.nan
    va = np.nan
    vb = np.nan
    e = e0
    step = scale * 1e-3
    blind = 0
    for _ in range(200):
        v, d = bound_value(t, K, K1, s, err0, upper, e, log_slack, quad_slack)
        if v >= target:
            if not has_a or e > a:
                a = e
                va = v
                has_a = True
        else:
            if not has_b or e < b:
                b = e
                vb = v
                has_b = True
            if not has_a and e <= floor:
                return np.nan, b, 1
        if has_a and has_b and b - a <= 1e-12 * (1.0 + abs(a)):
            return a, b, 0
        ne = e - (v - target) / d if (math.isfinite(v) and d < 0) else np.nan
        if math.isfinite(ne):
            h = 0.5e-12 * (1.0 + abs(e))
            if abs(ne - e) < h:
                ne = e + h if v >= target else e - h
        if has_a and has_b:
            if not (a < ne < b):
                ne = 0.5 * (a + b)
        elif not math.isfinite(ne) or (has_b and ne >= b) or (has_a and ne <= a):
            ne = a + step if has_a else b - step
            step *= 2.0
            blind += 1
            if not has_a and blind > 3 and floor > -np.inf:
                ne = floor
        if ne < floor:
            if has_b and b <= floor:
                return np.nan, b, 1
            ne = floor
        e = ne
    if not (has_a and has_b):
        return a, b, 2
    # Illinois regula falsi: the kept end's value halved towards the target when it is kept again
    side = 0
    for _ in range(200):
        if b - a <= 1e-12 * (1.0 + abs(a)):
            break
        if math.isfinite(va) and math.isfinite(vb):
            m = a + (b - a) * (va - target) / (va - vb)
            if not (a < m < b):
                m = 0.5 * (a + b)
        else:
            m = 0.5 * (a + b)
        v = bound_value(t, K, K1, s, err0, upper, m, log_slack, quad_slack)[0]
        if v >= target:
            a = m
            va = v
            if side == 1:
                vb = target + 0.5 * (vb - target)
            side = 1
        else:
            b = m
            vb = v
            if side == -1:
                va = target + 0.5 * (va - target)
            side = -1
    return a, b, 0
