"""Sampling schemes as transforms that map a mechanism to a new symbolic family, so the same derivation applies.

``subsample(m, q, scheme, relation)``, with r = q the sampling rate (docs/relations.md has the theorems and what
may be composed):

* Poisson, add/remove (the default): each record is in the batch with probability r.  With the individual the
  output is drawn from P with probability r and from Q otherwise: the pair ((1-r) Q + r P, Q) (Zhu, Dong, Wang
  2022, Theorem 9 for the remove direction; the add direction is the same pair read the other way).
* Poisson, replace-one: the pair ((1-r) Q + r P, (1-r) Q + r P~) with P~(x) = P(-x), the record replaced by one at
  the opposite bound (dp_accounting's REPLACE adjacency; Koskela, Jalko, Honkela 2020, section 6.2); made from an
  additive-noise add/remove pair (``transforms.replace``).  The pair is symmetric, so it dominates in both orders.
* Sampling without replacement (a batch of fixed size b drawn uniformly from n records, r = b/n), replace-one:
  the pair ((1-r) Q' + r P', Q') from the replace-one pair (P', Q') of the mechanism (Zhu, Dong, Wang 2022,
  Theorem 10).  It dominates every ordered pair of neighbours for hockey-stick orders e^epsilon >= 1 only, so the
  family is ``one_sided``: the one-step curve is exact, and compositions compose both orientations in every run
  (Lebeda, Regehr, Kamath, Steinke 2024: the worst-case datasets of one run need not stay worst under composition).
"""
from __future__ import annotations

import functools

from .. import relations
from ..errors import ParameterError, check_real
from ..laws.family import Family, Mechanism
from ..laws.shipped import ShippedFamily
from .replace import family_like, mirrored

RATE_NAME = "sampling_rate"
_SUBSAMPLED = {}


@functools.lru_cache(maxsize=None)
def _rate_symbols():
    """The symbols of the sampling rate r and of 1 - r (known non-negative): SymPy, imported where a subsampled pair
    is made."""
    import sympy as sp

    return sp.Symbol(RATE_NAME, positive=True), sp.Symbol("sampling_rate_complement", nonnegative=True)


def _names(family, scheme, relation):
    suffix = "" if (scheme, relation) == (relations.POISSON, relations.ADD_REMOVE) else f"_{scheme}_{relation}"
    return f"subsampled_{family.name}{suffix}"


def _refuse_subsampled(family):
    if any(s.name == RATE_NAME for s in family.parameters):
        raise ParameterError("the family is already subsampled; compose the rates instead")


def _pair(family, scheme, relation):
    """(p, q, one_sided) of the subsampled pair (module docstring), or a ``ParameterError`` for a combination that
    does not exist."""
    RATE, RATE_C = _rate_symbols()
    if family.one_sided:
        raise ParameterError(f"{family.name} is one-sided (sampling without replacement); it cannot be subsampled")
    if relation == relations.REPLACE_SPECIAL:
        raise ParameterError("subsampling under replace_special is not provided; for a query to which the special "
                             "record contributes nothing it is Poisson subsampling under add/remove: "
                             "mk.with_relation(mk.subsample(m, q), 'replace_special')")
    if scheme == relations.POISSON:
        if relation == relations.ADD_REMOVE:
            if family.relation != relations.ADD_REMOVE:
                raise ParameterError(f"{family.name} is a pair for {family.relation!r}: Poisson subsampling under "
                                     "add/remove needs the mechanism's add/remove pair")
            return RATE_C * family.q + RATE * family.p, family.q, False
        try:
            p_mirror = mirrored(family)
        except ParameterError as exc:
            raise ParameterError(f"Poisson subsampling under replace-one needs the add/remove pair of an "
                                 f"additive-noise mechanism (the record sampled on one side only): {exc}") from None
        return RATE_C * family.q + RATE * family.p, RATE_C * family.q + RATE * p_mirror, False
    if relation == relations.ADD_REMOVE:
        raise ParameterError("sampling without replacement draws a batch of fixed size b from n records, so its "
                             "neighbours have the same size: it is defined under relation='replace_one' (with "
                             "sampling rate b/n); for add/remove use scheme='poisson'")
    q1 = family.q if family.relation == relations.REPLACE_ONE else mirrored(family)
    return RATE_C * q1 + RATE * family.p, q1, True


def subsampled_family(family: Family, scheme: str = relations.POISSON,
                      relation: str = relations.ADD_REMOVE) -> Family:
    """The symbolic family of ``family`` subsampled by ``scheme`` under ``relation`` (module docstring), with the
    extra parameter ``sampling_rate`` = r in (0, 1]; made once per family, scheme and relation.

    Parameters
    ----------
    family : the ``Family`` to subsample (its constraints, defaults and derived constants are kept).
    scheme : "poisson" (default) or "without_replacement".
    relation : "add_remove" (default) or "replace_one": the relation of the subsampled mechanism
        ("replace_special" is refused: see ``with_relation``).

    Returns
    -------
    The family ``subsampled_<name>`` (Poisson, add/remove) or ``subsampled_<name>_<scheme>_<relation>``.

    Raises
    ------
    ParameterError : an unknown scheme or relation, a combination that does not exist (without replacement under
        add/remove), a family already subsampled, or a pair of the wrong relation for the combination.
    """
    relations.check_scheme(scheme)
    relations.check_relation(relation)
    if isinstance(family, ShippedFamily):  # a catalog family bound from its record: its subsampled family's record
        _refuse_subsampled(family)
        got = family.subsampled(scheme, relation, subsampled_family)
        if got is not None:
            return got
        family = family.real  # no record for this combination: SymPy makes it (or says why it does not exist)
    key = (id(family), scheme, relation)
    if key not in _SUBSAMPLED:
        _refuse_subsampled(family)
        p2, q2, one_sided = _pair(family, scheme, relation)
        RATE, RATE_C = _rate_symbols()
        # the family's own derived constants (e.g. the discrete Gaussian's normalising Sum, extracted as _const0)
        # stay constants of the subsampled family: evaluated at bind time, never parameters
        _SUBSAMPLED[key] = (family, family_like(family, p2, q2, _names(family, scheme, relation), relation, one_sided,
                                                constraints={"sampling_rate": "(0, 1]"}, derived={RATE_C: 1 - RATE}))
    return _SUBSAMPLED[key][1]


def subsample(mechanism: Mechanism, q: float, scheme: str = relations.POISSON,
              relation: str = relations.ADD_REMOVE) -> Mechanism:
    """A bound mechanism subsampled at rate q by ``scheme``, accounted under ``relation``.

    Parameters
    ----------
    mechanism : the bound ``Mechanism`` (not itself subsampled).
    q : the sampling rate, in (0, 1]: the probability that a record is in the batch (Poisson), or b/n for a
        batch of b records drawn without replacement from n.
    scheme : "poisson" (default) or "without_replacement".
    relation : "add_remove" (default; Poisson only) or "replace_one".

    Returns
    -------
    The mechanism of ``subsampled_family(mechanism.family, scheme, relation)`` at the same parameter values and
    ``sampling_rate=q``; its ``relation`` is ``relation``.

    Raises
    ------
    ParameterError : ``mechanism`` is not a ``Mechanism`` or is already subsampled, q is not a number in (0, 1],
        an unknown scheme or relation, or a combination that does not exist for this mechanism (the message says
        which exist).
    SpecificationError, DerivationError : as ``Family.__call__`` for the subsampled pair.
    """
    if not isinstance(mechanism, Mechanism):
        raise ParameterError(f"subsample expects a Mechanism, got {type(mechanism).__name__}")
    return subsampled(mechanism.family, q, scheme, relation, **mechanism.params)


def subsampled(family: Family, q: float, scheme: str = relations.POISSON, relation: str = relations.ADD_REMOVE,
               **params: float) -> Mechanism:
    """``subsample(family(**params), q, scheme, relation)`` without binding ``family`` itself: the same mechanism,
    but the unsampled pair is never bound (its kernels are not compiled, its densities not checked: the subsampled
    pair is, when bound), which saves their first-use compile (the command line's ``subsampled-NAME``, ``mk.dpsgd``).

    Parameters
    ----------
    family : the ``Family`` to subsample.
    q : the sampling rate, in (0, 1].
    scheme, relation : as ``subsample``'s.
    **params : ``family``'s parameter values (its defaults apply).

    Returns
    -------
    The mechanism of ``subsampled_family(family, scheme, relation)`` at ``params`` and ``sampling_rate=q``.

    Raises
    ------
    ParameterError : q not a number in (0, 1], an unknown scheme or relation or a combination that does not exist,
        a parameter missing or outside its range.
    SpecificationError, DerivationError : as ``Family.__call__`` for the subsampled pair.
    """
    relations.check_scheme(scheme)
    relations.check_relation(relation)
    rate = check_real("q", q, low=0.0, high=1.0, high_open=False)
    return subsampled_family(family, scheme, relation)(**params, sampling_rate=rate)
