"""A family's specification read from what the user wrote: densities as exact SymPy (strings parsed safely, floats
made rational), the output domain, parameter constraints, and parameter-only sub-expressions (Sums, ...)
extracted as constants evaluated at bind time.
"""
from __future__ import annotations

import re

import sympy as sp

from ..errors import SpecificationError
from .parse import exact, parse_expression


def as_expr(value, what, local):
    """A user's expression as exact SymPy: strings are parsed without evaluating Python, floats made rational."""
    if isinstance(value, sp.Basic):
        return exact(value)
    if isinstance(value, str):
        return parse_expression(value, what, local)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return exact(sp.Float(value)) if isinstance(value, float) else sp.Integer(value)
    raise SpecificationError(f"{what} must be a SymPy expression or a string, got {type(value).__name__}")


def parse_domain(domain, var):
    """-> (kind, lo, hi, points)"""
    if domain is None:
        domain = sp.Integers if var.is_integer else sp.Reals
    if isinstance(domain, str):
        key = domain.strip().lower()
        if key in ("reals", "real", "r"):
            domain = sp.Reals
        elif key in ("integers", "integer", "z"):
            domain = sp.Integers
        else:
            raise SpecificationError(f"domain {domain!r} is not one of 'reals', 'integers', an Interval, a finite set")
    if isinstance(domain, (list, tuple, set, frozenset)):
        domain = sp.FiniteSet(*domain)
    if domain == sp.Reals:
        return "continuous", -sp.oo, sp.oo, ()
    if isinstance(domain, sp.Interval):
        return "continuous", exact(domain.inf), exact(domain.sup), ()
    if domain == sp.Integers:
        return "integers", -sp.oo, sp.oo, ()
    if isinstance(domain, sp.FiniteSet):
        pts = []
        for v in domain:
            if not v.is_number or not v.is_real:
                raise SpecificationError(f"finite domain points must be real numbers, got {v}")
            pts.append(float(v))
        if not pts:
            raise SpecificationError("the finite domain is empty")
        return "finite", min(pts), max(pts), tuple(sorted(pts))
    if isinstance(domain, sp.Range):
        if domain.size.is_finite and domain.size <= 100_000:
            return "finite", domain.inf, domain.sup, tuple(float(v) for v in domain)
        raise SpecificationError("only finite Ranges (up to 100000 points) are supported; use sp.Integers")
    raise SpecificationError(f"unsupported domain {domain!r}: use sp.Reals, sp.Interval, sp.Integers or a finite set")


_INTERVAL_RE = re.compile(r"^\s*([\(\[])\s*([^,]+?)\s*,\s*([^\]\)]+?)\s*([\)\]])\s*$")


def parse_range(text):
    m = _INTERVAL_RE.match(text)
    if not m:
        raise SpecificationError(f"constraint {text!r} must look like '(0, 1]' or '[0, inf)'")
    lo = float(m.group(2).replace("inf", "inf"))
    hi = float(m.group(3))
    return lo, hi, m.group(1) == "(", m.group(4) == ")"


def extract_constants(expr, var, consts):
    """Replace var-free Sums/Products/Integrals by symbols evaluated at bind time."""
    def rep(e):
        for c, ce in consts:
            if ce == e:
                return c
        c = sp.Symbol(f"_const{len(consts)}", real=True)
        consts.append((c, e))
        return c
    return expr.replace(lambda e: isinstance(e, (sp.Sum, sp.Product, sp.Integral)) and not e.has(var), rep)


def point_masses(expr, var):
    """(the continuous part, ((location, weight), ...)) of a density written with point masses as DiracDelta terms:
    ``f(x) + w DiracDelta(x - c)`` (censored or clipped noise), ``g(x) DiracDelta(a x + b)`` being the mass
    g(-b/a)/|a| at -b/a.  Locations and weights may depend on the parameters, not on ``var``."""
    if not expr.has(sp.DiracDelta):
        return expr, ()
    smooth, deltas = expr.as_independent(sp.DiracDelta, as_Add=True)
    if smooth.has(sp.DiracDelta):
        raise SpecificationError("a DiracDelta must be a term of the density (f(x) + w*DiracDelta(x - c)), not "
                                 "inside a function or a Piecewise")
    masses, rest = [], []
    for term in sp.Add.make_args(_distribute(deltas)):
        if not term.has(sp.DiracDelta):  # (1 - r) Q + r P of a subsampled pair: the continuous terms come back
            rest.append(term)
            continue
        coeff, delta = term.as_independent(sp.DiracDelta, as_Add=False)
        if not isinstance(delta, sp.DiracDelta) or len(delta.args) != 1:
            raise SpecificationError(f"{term} is not a point mass: write w*DiracDelta(x - c) (no products or "
                                     "derivatives of DiracDelta)")
        ab = linear_coefficients(delta.args[0], var)
        if ab is None:
            raise SpecificationError(f"the point mass {term} must sit where a linear function of {var} vanishes")
        a, b = ab
        loc = -b / a
        masses.append((loc, sp.simplify(coeff.subs(var, loc) / sp.Abs(a))))
    return sp.Add(smooth, *rest), tuple(masses)


def _distribute(e):
    """e with products distributed over the sums that hold a DiracDelta (nothing else expanded): r (A + w delta)
    -> r A + r w delta."""
    if e.is_Add:
        return sp.Add(*[_distribute(a) for a in e.args])
    if e.is_Mul:
        for i, f in enumerate(e.args):
            if f.is_Add and f.has(sp.DiracDelta):
                rest = e.args[:i] + e.args[i + 1:]
                return sp.Add(*[_distribute(sp.Mul(*rest, t)) for t in f.args])
    return e


def linear_coefficients(expr, var):
    """(a, b) with expr = a var + b, a and b free of var and a nonzero; None where expr is not so (a point mass's or a
    floor's argument must be)."""
    poly = sp.Poly(expr, var) if expr.is_polynomial(var) else None
    if poly is None or poly.degree() != 1 or any(c.has(var) for c in poly.all_coeffs()):
        return None
    return tuple(poly.all_coeffs())
