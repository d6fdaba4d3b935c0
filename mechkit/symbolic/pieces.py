"""Where a continuous density changes form: its sign arguments and the smooth densities between them.

A density may contain ``Abs``, ``Piecewise`` (conditions built from ``<, <=, >, >=`` and ``& | ~``), and
``Heaviside``, ``Max``, ``Min`` and ``sign``, which are first written as ``Piecewise``.  Each ``Abs`` argument and
each relational ``lhs < rhs`` (as ``lhs - rhs``) is a *sign argument*: on every interval of the output where none
of them changes sign, p and q are smooth expressions, one *variant* per pattern of signs (``+`` positive, ``-``
negative, in the order of ``SignArgs.args``).  The numeric layer cuts the domain at the zeros of the sign
arguments and evaluates them in each piece to pick its variant.

Only patterns that some output value can have are derived: where a sign argument is linear in the output with a
coefficient of known sign (``x - a``, ``(a - x)/b`` with ``b`` positive, ...), each sign says on which side of a
root the output lies, and a pattern whose roots are provably out of order (``x > 1`` and ``x < 1/2``) or outside
the domain is dropped.  Patterns that give the same smooth pair (p, q) share one derivation.  A condition that
compares parameters only (``Min(x, 1, a)`` asks whether ``a >= 1``) is a sign argument that is constant in the
output.  Equalities hold on sets of measure zero: ``Eq`` is false and ``Ne`` true on every piece.
"""
from __future__ import annotations

import itertools

import sympy as sp
from sympy.core.relational import Equality, Relational, Unequality

from ..errors import SpecificationError

#: at most this many distinct sign arguments (2^n patterns are screened; the feasible ones are derived)
MAX_SIGN_ARGS = 10
#: at most this many distinct smooth variants are derived (each costs symbolic solves and integrals)
MAX_VARIANTS = 40

_ABOVE = (sp.StrictGreaterThan, sp.GreaterThan)
_BELOW = (sp.StrictLessThan, sp.LessThan)


def as_piecewise(e):
    """Heaviside, Max, Min and sign written as Piecewise (their switching points become sign arguments)."""
    e = e.replace(lambda z: isinstance(z, sp.Heaviside),
                  lambda z: sp.Piecewise((0, z.args[0] < 0), (1, True)))
    e = e.replace(lambda z: isinstance(z, (sp.Max, sp.Min)), lambda z: z.rewrite(sp.Piecewise))
    return e.replace(lambda z: isinstance(z, sp.sign),
                     lambda z: sp.Piecewise((1, z.args[0] > 0), (-1, z.args[0] < 0), (0, True)))


def is_zero(e):
    return e == 0 or e.is_zero is True


class SignArgs:
    """The sign arguments of a pair of densities and their feasible patterns (module docstring)."""

    def __init__(self, p, q, var):
        self.var = var
        self.args = []  # canonical expressions, each a sign argument
        self._rep = {}  # Abs node or relational -> (index, orientation of its argument against the canonical one)
        for e in (p, q):
            for a in sorted(e.atoms(sp.Abs), key=sp.default_sort_key):
                if a.has(var):
                    self._rep[a] = self._index(a.args[0])
            for pw in sorted(e.atoms(sp.Piecewise), key=sp.default_sort_key):
                for _, cond in pw.args:
                    for r in sorted(cond.atoms(Relational), key=sp.default_sort_key):
                        if not isinstance(r, (Equality, Unequality)):
                            self._rep[r] = self._index(r.lhs - r.rhs)
        if len(self.args) > MAX_SIGN_ARGS:
            raise SpecificationError(
                f"the densities change form at {len(self.args)} places (Abs arguments and Piecewise conditions); at "
                f"most {MAX_SIGN_ARGS} are supported")
        self._lin = [self._linear(a) for a in self.args]

    def _index(self, a):
        a = sp.expand(a)
        for j, b in enumerate(self.args):
            if a == b:
                return j, 1
            if sp.expand(a + b) == 0:
                return j, -1
        self.args.append(a)
        return len(self.args) - 1, 1

    def _linear(self, a):
        """(sign of the coefficient of the output, root) where a is linear in it with a coefficient of known sign."""
        try:
            poly = sp.Poly(a, self.var)
        except sp.PolynomialError:
            return None
        if poly.degree() != 1:
            return None
        c, d = poly.all_coeffs()
        sign = 1 if c.is_positive else -1 if c.is_negative else 0
        return (sign, -d / c) if sign else None

    def patterns(self, lo, hi):
        """[(key, signs, ends)] of the feasible sign patterns; ``ends`` holds "lo"/"hi" when the pattern may hold
        next to an infinite end of the domain (its variant then needs limits and tails there)."""
        out = []
        for signs in itertools.product((1, -1), repeat=len(self.args)):
            lows = [] if lo == -sp.oo else [lo]
            highs = [] if hi == sp.oo else [hi]
            for s, lin in zip(signs, self._lin):
                if lin is not None:
                    (lows if s * lin[0] > 0 else highs).append(lin[1])
            if any((a - b).is_nonnegative is True for a in lows for b in highs):
                continue
            ends = {e for e, bounds in (("lo", lows), ("hi", highs)) if not bounds}
            key = "".join("+" if s > 0 else "-" for s in signs) or "0"
            out.append((key, signs, ends))
        return out

    def smooth(self, e, signs):
        """e on the pieces where the sign arguments have these signs (no Abs or Piecewise left in the output)."""
        rep = {}
        for node, (j, o) in self._rep.items():
            s = signs[j] * o
            if isinstance(node, sp.Abs):
                rep[node] = s * node.args[0]
            else:
                rep[node] = sp.true if (s > 0 if isinstance(node, _ABOVE) else s < 0) else sp.false
        for node in e.atoms(Equality, Unequality):
            if node.has(self.var):
                rep[node] = sp.false if isinstance(node, Equality) else sp.true
        out = e.xreplace(rep)
        if out.has(sp.Piecewise) and any(pw.has(self.var) for pw in out.atoms(sp.Piecewise)):
            raise SpecificationError(
                f"cannot resolve the Piecewise conditions of {e}: write them with <, <=, >, >= between expressions "
                "(combined with & | ~)")
        return out
