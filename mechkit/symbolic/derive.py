"""Derivation of a family: densities -> named kernels + structure (the contract with the numeric layer).

``derive(spec)`` returns a ``Derivation``:

* ``kernels``: name -> SymPy expression in ``X`` (the one free variable) and the parameter symbols.
  Codegen prints each as ``k_<name>(X, theta)``.
* ``structure``: a JSON-serialisable dict.  For continuous families::

      {"kind": "continuous", "lo": kernel|None, "hi": kernel|None,
       "abs_args": [kernel...], "breakpoints": [kernel...],
       "variants": {sign-key: {"L", "dL", "logp", "logq", "flat", "crit", "inv",
                               "Gp", "Gq", "Flp", "Srp", "Flq", "Srq",
                               "logFlp", "logSrp", "logFlq", "logSrq", "Llo", "Lhi", "Llo_raw", "Lhi_raw",
                               "Lexpr", "Lsimp"}},
       "cgf": [K0..K6 kernels] | None}

  For discrete families: ``{"kind": "integers"|"finite", "points": [...], "logp", "logq", "cgf"}``.
* ``display``: the symbolic results a user can look at (privacy loss, inverses, MGF, CGF).

A sign key names the smooth variant of p, q and L obtained by replacing each ``Abs(a_j)`` by
``+a_j`` or ``-a_j``; the numeric layer picks the variant valid on each piece between breakpoints.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import sympy as sp

from ..errors import SpecificationError
from . import algebra as sy
from . import pieces
from .spec import linear_coefficients, point_masses

MAX_ORDER = 6
#: a closed-form CGF derivative longer than this (characters of its printed form) is not used: Numba's compile
#: time grows steeply with the expression (docs/performance.md), and such expressions evaluate slowly and with
#: cancellation; the CGF then comes from quadrature or exact sums
MAX_CGF_CHARS = 6000
#: closed-form inverses of the loss longer than this (characters, any one of them) are not used: they are the
#: radical formulas of cubics and quartics (a generalized Gaussian with exponent 3/2: eight of ~3,600 characters,
#: about 2 s of Numba compile each), and they evaluate with cancellation; the loss is then inverted numerically, as
#: where SymPy finds no inverse
MAX_INVERSE_CHARS = 1500


@dataclass
class Spec:
    """A validated family specification (built by ``Family``)."""

    p: sp.Expr
    q: sp.Expr
    var: sp.Symbol
    kind: str  # "continuous" | "integers" | "finite"
    lo: sp.Expr = -sp.oo
    hi: sp.Expr = sp.oo
    points: tuple = ()
    params: tuple = ()
    consts: tuple = ()  # ((Symbol, Expr), ...): var-free sub-expressions evaluated at bind time
    # point masses of p and q ((location, weight), ...), split off p and q (written as DiracDelta terms)
    masses: tuple = field(default=((), ()), init=False)

    def __post_init__(self):
        if self.p.has(sp.DiracDelta) or self.q.has(sp.DiracDelta):
            if self.kind != "continuous":
                raise SpecificationError("DiracDelta point masses are for continuous outputs; a pmf has its point "
                                         "masses already")
            (self.p, mp), (self.q, mq) = point_masses(self.p, self.var), point_masses(self.q, self.var)
            self.masses = (mp, mq)


@dataclass
class Derivation:
    kernels: dict = field(default_factory=dict)
    structure: dict = field(default_factory=dict)
    display: dict = field(default_factory=dict)

    def add(self, name, expr, var=None):
        expr = sp.sympify(expr, strict=True)  # strict: a string is never evaluated
        if var is not None:
            expr = expr.xreplace({var: sy.X})
        self.kernels[name] = expr
        return name


#: a pmf on a finite set: K = log M in closed form (checked against the exact sum at the first CGF query), its
#: derivatives from the atoms' exact tilted central moments (``laws.core.combine_cgf``): SymPy's simplification of
#: K' .. K^(6) took ~1.7 s of randomized response's 2.8 s derivation, and a closed derivative can cancel where the
#: central moments do not
FINITE_CLOSED_ORDER = 0


def _finite_expr(e):
    return e is not None and not e.has(sp.Integral, sp.Limit, sp.nan, sp.zoo, sp.AccumBounds)


def _cgf_kernels(d, mgf, prefix="K", max_order=None):
    """K = log M and its derivatives up to ``max_order`` (default ``MAX_ORDER``) as kernels in X (= t); None when
    SymPy gives nothing usable.  The orders above come from the numeric layer (``laws.core.memo_vector``)."""
    max_order = MAX_ORDER if max_order is None else max_order
    if not _finite_expr(mgf):
        return None
    K = sp.expand_log(sp.log(mgf), force=True)
    K = sy.attempt(lambda: sp.simplify(K), sy.MGF_SECONDS, K)
    names = []
    expr = K
    for n in range(max_order + 1):
        if not _finite_expr(expr) or len(str(expr)) > MAX_CGF_CHARS:
            return None
        names.append(d.add(f"{prefix}{n}", sy.stabilize(expr, sy.T), sy.T))
        if n < max_order:
            expr = sp.diff(expr, sy.T)
            if len(str(expr)) > MAX_CGF_CHARS:  # simplify would take seconds and rarely shrinks it enough
                return None
            expr = sy.attempt(lambda expr=expr: sp.simplify(expr), sy.SOLVE_SECONDS, expr)
    d.display["mgf"] = mgf
    d.display["cgf"] = K
    return names


def derive(spec: Spec) -> Derivation:
    if spec.kind == "continuous":
        return _derive_continuous(spec)
    return _derive_discrete(spec)


def _integer_orders(e):
    """besseli(n, z) = besseli(|n|, z) for an integer order n: mpmath evaluates negative integer orders slowly or
    not at all, and a tabulated pmf may need it where SciPy over- or underflows."""
    return e.replace(lambda z: isinstance(z, sp.besseli) and z.args[0].is_integer and not z.args[0].is_nonnegative,
                     lambda z: sp.besseli(sp.Abs(z.args[0]), z.args[1]))


def _derive_discrete(spec):
    d = Derivation()
    var = spec.var
    lp = sy.log_density(_integer_orders(spec.p), var)
    lq = sy.log_density(_integer_orders(spec.q), var)
    st = {"kind": spec.kind, "points": [float(v) for v in spec.points],
          "logp": d.add("logp", sy.stabilize(lp, var), var),
          "logq": d.add("logq", sy.stabilize(lq, var), var), "cgf": None}
    L = sy.privacy_loss(_integer_orders(spec.p), _integer_orders(spec.q), var)
    st["L"] = d.add("L", sy.stabilize(L, var), var)
    d.display["privacy_loss"] = L
    d.display["inverse_loss"] = []
    if spec.kind == "finite":
        mgf = sp.Add(*[(spec.p ** (1 + sy.T) * spec.q ** (-sy.T)).subs(var, v) for v in spec.points])
        mgf = sy.attempt(lambda: sp.simplify(mgf), sy.MGF_SECONDS, mgf)
        st["cgf"] = _cgf_kernels(d, mgf, max_order=FINITE_CLOSED_ORDER)
    d.structure = st
    return d


def _derive_continuous(spec):
    d = Derivation()
    var = spec.var
    p, q = pieces.as_piecewise(spec.p), pieces.as_piecewise(spec.q)
    funcs = {type(f) for f in (p.atoms(sp.Function) | q.atoms(sp.Function))}
    other = sorted(f.__name__ for f in funcs if f not in sy.COMPILED_FUNCTIONS and f not in sy.STEP_FUNCTIONS)
    if other:
        raise SpecificationError(
            f"{', '.join(other)} cannot be evaluated by the compiled kernels of a continuous density (they take exp, "
            "log, powers, erf, erfc, gamma, loggamma, trigonometric and hyperbolic functions, Abs, Piecewise, ...); "
            "a pmf on the integers or a finite set may use it (it is tabulated at the parameter values)")
    # ceiling(u) = -floor(-u); the steps of a floor are cut at bind time (``_floor_variant``)
    p, q = (e.replace(lambda z: isinstance(z, sp.ceiling), lambda z: -sp.floor(-z.args[0])) for e in (p, q))
    piecewise = p.has(sp.Piecewise) or q.has(sp.Piecewise) or p.has(sp.floor) or q.has(sp.floor)
    d.display["privacy_loss"] = None if piecewise else sy.privacy_loss(p, q, var)
    signs = pieces.SignArgs(p, q, var)
    st = {"kind": "continuous", "abs_args": [], "breakpoints": [], "variants": {}, "cgf": None, "var": var.name,
          "theta": [s.name for s in spec.params] + [c.name for c, _ in spec.consts],
          "lo": None if spec.lo == -sp.oo else d.add("dom_lo", spec.lo),
          "hi": None if spec.hi == sp.oo else d.add("dom_hi", spec.hi)}
    for j, a in enumerate(signs.args):
        st["abs_args"].append(d.add(f"absarg{j}", a, var))
        for s in _zeros(a, var):
            st["breakpoints"].append(d.add(f"bp{len(st['breakpoints'])}", s))
    groups = {}  # (p, q) on a piece -> (sign keys, ends)
    for key, pattern, ends in signs.patterns(spec.lo, spec.hi):
        pair = (signs.smooth(p, pattern), signs.smooth(q, pattern))
        keys, all_ends = groups.setdefault(pair, ([], set()))
        keys.append(key)
        all_ends |= ends
    if len(groups) > pieces.MAX_VARIANTS:
        raise SpecificationError(f"the densities have {len(groups)} distinct smooth pieces; at most "
                                 f"{pieces.MAX_VARIANTS} are supported")
    inverse_display, slots = [], []
    for (pv, qv), (keys, ends) in groups.items():
        pre = "v" + keys[0].replace("+", "P").replace("-", "M") + "_"
        if pv.has(sp.floor) or qv.has(sp.floor):
            v = _floor_variant(d, pre, pv, qv, var, slots)
        elif pieces.is_zero(pv) or pieces.is_zero(qv):
            v = _zero_variant(d, pre, pv, qv, var, spec, ends)
        else:
            v = _derive_variant(d, pre, pv, qv, var, spec, ends)
            if v["inv"]:
                inverse_display.append((keys[0], v.pop("inv_display")))
            v.pop("inv_display", None)
        for key in keys:
            st["variants"][key] = v
    st["floor_slots"] = [f"_floor{j}" for j in range(len(slots))]
    if d.display["privacy_loss"] is None and len(groups) == 1 and not slots:
        d.display["privacy_loss"] = sy.privacy_loss(*next(iter(groups)), var)
    d.display["inverse_loss"] = inverse_display
    if any(spec.masses):
        st["atoms"] = _point_mass_kernels(d, spec.masses)
    elif not signs.args and (expo := _gaussian_exponent(p, q, var)) is not None:
        mgf = sy.gaussian_integral(expo, var) if spec.lo == -sp.oo and spec.hi == sp.oo else None
        if mgf is None:
            mgf = sy.attempt(lambda: sp.integrate(sp.exp(expo), (var, spec.lo, spec.hi), conds="none"),
                             sy.MGF_SECONDS)
        if mgf is not None:
            st["cgf"] = _cgf_kernels(d, mgf)
    d.structure = st
    return d


def _point_mass_kernels(d, masses):
    """[{"at", "p", "q"}] constant kernels of the point masses (location, weights), one entry per location (the same
    location in p and q symbolically: one entry; numerically equal ones are merged at bind time); None: no mass."""
    out = []
    for m, entries in enumerate(masses):
        for loc, w in entries:
            hit = next((e for e in out if sp.simplify(e[0] - loc) == 0), None)
            if hit is None:
                hit = [loc, [], []]
                out.append(hit)
            hit[1 + m].append(w)
    kernels = []
    for i, (loc, wp, wq) in enumerate(out):
        entry = {"at": d.add(f"atom{i}_at", loc)}
        for name, ws in (("p", wp), ("q", wq)):
            w = sp.Add(*ws)
            if w.has(sp.erf):  # 1 - Phi(z) as erfc(z/sqrt 2)/2: no cancellation in the tails
                w = sy.attempt(lambda w=w: sp.simplify(sp.expand(w.rewrite(sp.erfc))), sy.SOLVE_SECONDS, w)
            entry[name] = d.add(f"atom{i}_{name}", w) if ws else None
        kernels.append(entry)
    return kernels


def _zeros(a, var):
    """Where the sign argument a changes sign (a superset does no harm: the numeric layer only cuts there)."""
    if not a.has(var):
        return []
    sols = sy.real_solutions(a, var)
    if sols is None and a.has(sp.Abs):  # each sign variant of the Abs terms inside, solved separately
        inner = sorted({b.args[0] for b in a.atoms(sp.Abs)}, key=sp.default_sort_key)
        sols = []
        for signs in itertools.product((1, -1), repeat=len(inner)):
            part = sy.real_solutions(a.xreplace({sp.Abs(b): s * b for b, s in zip(inner, signs)}), var)
            if part is None:
                sols = None
                break
            sols += part
    if sols is None:
        raise SpecificationError(f"cannot find where {a} changes sign in {var}")
    return sols


def _gaussian_exponent(p, q, var):
    """(1+t) log p - t log q, expanded, where it is a polynomial of degree <= 2 in var (the MGF integral then has a
    closed form), else None: otherwise (mixtures, logistic, Cauchy...) trying costs seconds for nothing."""
    if p.is_Add or q.is_Add:
        return None
    expo = (1 + sy.T) * sy.log_density(p, var) - sy.T * sy.log_density(q, var)
    try:
        poly = sp.Poly(sp.expand(sp.expand_log(expo, force=True)), var)
    except sp.PolynomialError:
        return None
    return sp.expand(expo) if poly.degree() <= 2 and not any(c.has(var) for c in poly.coeffs()) else None


def _limit(e, var, point):
    if point.is_finite:
        return sy.attempt(lambda: sp.simplify(e.subs(var, point)), sy.SOLVE_SECONDS)
    return sy.attempt(lambda: sp.limit(e, var, point), sy.SOLVE_SECONDS)


def _tail(G, var, side):
    """Left CDF (side -1) or right survival function (side +1) from an antiderivative, cancellation-free."""
    try:
        g0 = _limit(G, var, side * sp.oo)
        if not _finite_expr(g0) or g0.is_finite is False:
            return None
        F = sy.tail_form(G - g0 if side < 0 else g0 - G, var, side)
        return F if _finite_expr(F) else None
    except Exception:
        return None


def _derive_variant(d, pre, pv, qv, var, spec, ends):
    Lv = sy.privacy_loss(pv, qv, var)
    raw = sp.expand_log(sp.log(pv), force=True) - sp.expand_log(sp.log(qv), force=True)
    out = {"L": d.add(pre + "L", sy.stabilize(Lv, var), var), "zero": None}
    dL = sy.attempt(lambda: sp.simplify(sp.diff(Lv, var)), sy.SOLVE_SECONDS, sp.diff(Lv, var))
    out["dL"] = d.add(pre + "dL", sy.stabilize(dL, var), var)
    out["flat"] = bool(dL == 0 or dL.is_zero)
    out["logp"] = d.add(pre + "logp", sy.stabilize(sy.log_density(pv, var), var), var)
    out["logq"] = d.add(pre + "logq", sy.stabilize(sy.log_density(qv, var), var), var)
    out["crit"] = []
    out["inv"] = []
    if not out["flat"]:
        num = sp.numer(sp.together(dL))
        crit = sy.real_solutions(num, var)
        out["crit"] = None if crit is None else [d.add(f"{pre}crit{i}", c) for i, c in enumerate(crit)]
        inv = sy.real_solutions(Lv - sy.S, var)
        if inv and max(len(str(e)) for e in inv) > MAX_INVERSE_CHARS:
            inv = None
        if inv:
            out["inv"] = [d.add(f"{pre}inv{i}", sy.stabilize(e, sy.S), sy.S) for i, e in enumerate(inv)]
            out["inv_display"] = inv
    for m, dens in (("p", pv), ("q", qv)):
        _masses(d, pre, out, m, dens, var, spec, ends)
    # SymPy's limits can be wrong with symbolic parameters, and differently so for equivalent forms (the logistic
    # loss: 2/b from the simplified form, 1/b from log p - log q), so both forms' limits go to the numeric layer:
    # at an infinite end log p - log q's here (the cheaper: 0.08 s against 0.65 s for the logistic), the simplified
    # form's (``Lsimp``) only where that one fails here, or is not confirmed there (``laws.limits.decide``)
    out["Lexpr"] = sp.srepr(raw)  # for a symbolic limit at the bound values, where the evidence disagrees
    out["Lsimp"] = sp.srepr(Lv)
    for end, point in (("Llo", spec.lo), ("Lhi", spec.hi)):
        for suffix, form in (("_raw", raw), ("", Lv)):
            out[end + suffix] = None
            if not (point.is_finite or end[1:] in ends):
                continue  # an infinite end this variant never reaches needs no limit
            if suffix == "" and not point.is_finite and out[end + "_raw"] is not None:
                continue  # asked for at the bind, where needed
            lim = _limit(form, var, point)
            out[end + suffix] = d.add(pre + end + suffix, lim) if sy.usable_limit(lim, var) else None
    return out


def _floor_variant(d, pre, pv, qv, var, slots):
    """A piece where p or q has steps, floor(u) with u linear in the output: each floor(u_j) is a slot n_j (an integer
    the numeric layer sets per step, after the parameters in theta), and on a step the loss must be constant (the
    staircase mechanism and its kin): a point mass of L whose P- and Q-masses come from the antiderivatives.
    ``slots`` (the floor arguments, family-wide) grows with the new ones."""
    if pieces.is_zero(pv) or pieces.is_zero(qv):
        raise SpecificationError("floor/ceiling on a piece where one density is zero is not supported")
    subs = {}
    for f in pv.atoms(sp.floor) | qv.atoms(sp.floor):
        u = f.args[0]
        if linear_coefficients(u, var) is None:
            raise SpecificationError(f"{f}: floor and ceiling are supported on linear functions of {var} only")
        j = next((i for i, w in enumerate(slots) if sp.simplify(w - u) == 0), None)
        if j is None:
            slots.append(u)
            j = len(slots) - 1
        subs[f] = sp.Symbol(f"_floor{j}", integer=True)
    pn, qn = pv.xreplace(subs), qv.xreplace(subs)
    L = sy.privacy_loss(pn, qn, var)
    if pn.has(sp.floor) or qn.has(sp.floor) or L.has(var):
        raise SpecificationError("floor/ceiling are supported where the privacy loss is constant on each step (the "
                                 "staircase mechanism); here it varies within a step, or floors are nested")
    out = {"zero": None, "flat": True, "crit": [], "inv": [], "Lexpr": None, "L": d.add(pre + "L", L),
           "dL": d.add(pre + "dL", 0), "floor": [[int(str(n)[6:]), d.add(f"{pre}u{n}", slots[int(str(n)[6:])], var)]
                                                  for n in sorted(subs.values(), key=str)]}
    for m, dens in (("p", pn), ("q", qn)):
        G = sy.antiderivative(dens, var)
        if not _finite_expr(G):
            raise SpecificationError(f"no antiderivative of {m} between the steps of its floor")
        out[f"G{m}"] = d.add(pre + f"G{m}", G, var)
    for k in ("logp", "logq", "Llo", "Lhi", "Llo_raw", "Lhi_raw"):
        out[k] = None
    return out


def _zero_variant(d, pre, pv, qv, var, spec, ends):
    """A piece where p or q (or both) is 0: the loss is +inf (q = 0 < p) or -inf (p = 0 < q) there, a point mass
    of the PLRV; only the other density's mass on the piece is needed."""
    zp, zq = pieces.is_zero(pv), pieces.is_zero(qv)
    out = {"zero": "pq" if zp and zq else "p" if zp else "q", "flat": True, "crit": [], "inv": [], "Lexpr": None,
           "L": d.add(pre + "L", sp.S.Zero if zp and zq else sp.oo if zq else -sp.oo), "dL": d.add(pre + "dL", 0)}
    for m, dens, zero in (("p", pv, zp), ("q", qv, zq)):
        out["log" + m] = d.add(pre + "log" + m, -sp.oo if zero else sy.stabilize(sy.log_density(dens, var), var), var)
        if zero:
            for k in (f"G{m}", f"Fl{m}", f"Sr{m}", f"logFl{m}", f"logSr{m}"):
                out[k] = None
        else:
            _masses(d, pre, out, m, dens, var, spec, ends)
    for k in ("Llo", "Lhi", "Llo_raw", "Lhi_raw"):
        out[k] = None
    return out


def _masses(d, pre, out, m, dens, var, spec, ends):
    """The antiderivative of one density and its cancellation-free tails towards the infinite ends reached."""
    for k in (f"G{m}", f"Fl{m}", f"Sr{m}", f"logFl{m}", f"logSr{m}"):
        out[k] = None
    G = sy.antiderivative(dens, var)
    if not _finite_expr(G):
        return
    out[f"G{m}"] = d.add(pre + f"G{m}", G, var)
    for side, point, key, end in ((-1, spec.lo, "Fl", "lo"), (1, spec.hi, "Sr", "hi")):
        if point.is_finite or end not in ends:
            continue  # a finite end: masses come from differences of G (or quadrature)
        tail = _tail(G, var, side)
        if tail is not None:
            out[f"{key}{m}"] = d.add(pre + f"{key}{m}", tail, var)
            out[f"log{key}{m}"] = d.add(pre + f"log{key}{m}", sy.to_log(tail, var), var)
