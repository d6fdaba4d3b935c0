"""Relations as transforms: ``replace_one(m)`` turns an additive-noise mechanism's add/remove pair into its
replace-one pair; ``with_relation(m, relation)`` states that a mechanism's pair dominates under another relation.

Convention (dp_accounting's REPLACE adjacency): the add/remove pair of an additive-noise query is (P, Q) with Q
the noise, symmetric about 0, and P the noise shifted by the contribution bound (``sensitivity``).  Replacing one
record by another moves the query by up to twice that bound, and the worst pair is the noise shifted by +bound
against the noise shifted by -bound: (p(x), p(-x)).  mechkit checks that Q is symmetric (q(-x) = q(x) on a
symmetric domain); whether the mechanism really is an additive-noise query is the user's statement, as its
sensitivity is.  A pair written for replace-one directly is declared with
``Mechanism.from_densities(..., relation="replace_one")``.
"""
from __future__ import annotations

from .. import relations
from ..errors import ParameterError
from ..laws.family import Family, Mechanism
from ..symbolic import sp

_REPLACED = {}


def family_domain(family: Family) -> sp.Set:
    """The family's output domain as a SymPy set (what ``Family(domain=...)`` takes back).

    Parameters
    ----------
    family : a ``Family``.

    Returns
    -------
    A ``FiniteSet``, ``Integers`` or ``Interval``.
    """
    dom = family.spec
    return (sp.FiniteSet(*dom.points) if dom.kind == "finite" else
            sp.Integers if dom.kind == "integers" else sp.Interval(dom.lo, dom.hi))


def family_like(family: Family, p: sp.Expr, q: sp.Expr, name: str, relation: str, one_sided: bool = False,
                constraints: dict | None = None, derived: dict | None = None) -> Family:
    """A new family on ``family``'s output domain, keeping its constraints, derived constants and defaults: the
    pair (p, q) of a transform, with its name and relation.

    Parameters
    ----------
    family : the family transformed.
    p, q : the new pair (expressions in ``family.var`` and its parameters).
    name, relation, one_sided : as ``Family``'s.
    constraints, derived : added to (or replacing) the family's own.

    Returns
    -------
    The new ``Family``.
    """
    return Family(p, q, family.var, name=name, domain=family_domain(family),
                  constraints={**family.constraints, **(constraints or {})},
                  derived={**(derived or {}), **dict(family.constants)}, defaults=family.defaults,
                  relation=relation, one_sided=one_sided)


def mirrored(family: Family) -> sp.Expr:
    """p(-x): the with-the-individual density of an additive-noise family reflected about 0, after checking that
    the family is under add/remove and its q is symmetric about 0 on a symmetric domain.

    Parameters
    ----------
    family : an add/remove ``Family`` whose q is the noise (q(-x) = q(x)).

    Returns
    -------
    The expression p(-x).

    Raises
    ------
    ParameterError : the family is not under add/remove, or q is not symmetric about 0 (naming what to do instead).
    """
    if family.relation != relations.ADD_REMOVE:
        raise ParameterError(f"{family.name} is already a pair for {family.relation!r}; the replace-one pair is "
                             "made from an add/remove pair")
    x, spec = family.var, family.spec
    if spec.kind == "finite":
        symmetric_domain = {float(v) for v in spec.points} == {-float(v) for v in spec.points}
    elif spec.kind == "integers":
        symmetric_domain = True
    else:
        lo, hi = sp.sympify(spec.lo), sp.sympify(spec.hi)
        symmetric_domain = (lo == -hi) or sp.simplify(lo + hi) == 0
    if not symmetric_domain or sp.simplify(family.q.subs(x, -x) - family.q) != 0:
        raise ParameterError(
            f"the replace-one pair of {family.name} is made for additive noise: q must be symmetric about 0 "
            f"(q(-{x}) = q({x}) on a symmetric domain), and q = {family.q} is not; write the replace-one pair with "
            "Mechanism.from_densities(p, q, var, relation='replace_one')")
    return family.p.subs(x, -x)


def replace_one_family(family: Family) -> Family:
    """The replace-one family of an additive-noise add/remove family: the pair (p(x), p(-x)) (module docstring);
    made once per family object.

    Parameters
    ----------
    family : an add/remove ``Family`` whose q is symmetric about 0.

    Returns
    -------
    The family ``<name>_replace_one`` with ``relation == "replace_one"`` and the same parameters.

    Raises
    ------
    ParameterError : as ``mirrored``.
    """
    key = id(family)
    if key not in _REPLACED:
        fam = family_like(family, family.p, mirrored(family), f"{family.name}_replace_one", relations.REPLACE_ONE)
        _REPLACED[key] = (family, fam)
    return _REPLACED[key][1]


def replace_one(mechanism: Mechanism) -> Mechanism:
    """The mechanism under the replace-one relation: for an additive-noise mechanism whose add/remove pair is
    (noise shifted by the contribution bound, noise), the pair (p(x), p(-x)) of a record replaced by one at the
    opposite bound (dp_accounting's convention; module docstring).  A mechanism already under replace-one is
    returned as it is.

    Parameters
    ----------
    mechanism : a bound ``Mechanism``.

    Returns
    -------
    The ``Mechanism`` of ``replace_one_family(mechanism.family)`` at the same parameter values.

    Raises
    ------
    ParameterError : not a ``Mechanism``, or its q is not symmetric about 0 (``mirrored``).
    SpecificationError, DerivationError : as ``Family.__call__`` for the new pair.
    """
    if not isinstance(mechanism, Mechanism):
        raise ParameterError(f"replace_one expects a Mechanism, got {type(mechanism).__name__}")
    if mechanism.relation == relations.REPLACE_ONE:
        return mechanism
    return replace_one_family(mechanism.family)(**mechanism.params)


_RELABELLED = {}


def with_relation(mechanism: Mechanism, relation: str) -> Mechanism:
    """The same pair, stated to dominate under ``relation``: the user's statement, as when declaring a pair with
    ``from_densities(..., relation=...)``.  Use it where a guarantee carries over: an (epsilon, delta)-DP primitive
    or a zCDP mechanism known under that relation, or an additive-noise pair under replace-special, which
    dp_accounting accounts exactly as under add/remove (the special record contributes nothing).  To change the
    pair itself for replace-one, use ``replace_one``.

    Parameters
    ----------
    mechanism : a bound ``Mechanism``.
    relation : one of ``relations.RELATIONS``.

    Returns
    -------
    ``mechanism`` itself where its relation is already ``relation``; else the mechanism of a family with the same
    densities (the same derivation, from the cache) and ``relation``.

    Raises
    ------
    ParameterError : not a ``Mechanism``, or an unknown relation.
    """
    if not isinstance(mechanism, Mechanism):
        raise ParameterError(f"with_relation expects a Mechanism, got {type(mechanism).__name__}")
    relations.check_relation(relation)
    if mechanism.relation == relation:
        return mechanism
    family = mechanism.family
    key = (id(family), relation)
    if key not in _RELABELLED:
        fam = family_like(family, family.p, family.q, family.name, relation, family.one_sided)
        _RELABELLED[key] = (family, fam)
    return _RELABELLED[key][1](**mechanism.params)
