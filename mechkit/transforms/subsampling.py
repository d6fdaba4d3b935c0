"""Transforms that map a mechanism to a new symbolic family, so the same derivation applies.

``subsample(m, q)``: Poisson subsampling at rate q under add/remove.  With the individual, the output is
drawn from P with probability q and from Q otherwise, so the pair is ((1-q) Q + q P, Q); both of its
directions are available as ``.remove`` and ``.add`` like for any mechanism.
"""
from __future__ import annotations

import sympy as sp

from ..errors import ParameterError, check_real
from ..laws.family import Family, Mechanism

RATE = sp.Symbol("sampling_rate", positive=True)
RATE_C = sp.Symbol("sampling_rate_complement", nonnegative=True)  # 1 - RATE, known non-negative
_SUBSAMPLED = {}


def subsampled_family(family: Family) -> Family:
    """The symbolic family of Poisson-subsampled ``family``: the pair ((1 - r) q + r p, q) with the extra parameter
    ``sampling_rate`` = r in (0, 1]; made once per family object.

    Parameters
    ----------
    family : the ``Family`` to subsample (its constraints, defaults and derived constants are kept).

    Returns
    -------
    The family ``subsampled_<name>``.

    Raises
    ------
    ParameterError : ``family`` is already subsampled (it has a ``sampling_rate`` parameter).
    """
    key = id(family)
    if key not in _SUBSAMPLED:
        if RATE in family.parameters:
            raise ParameterError("the family is already subsampled; compose the rates instead")
        p2 = RATE_C * family.q + RATE * family.p
        dom = family.spec
        domain = (sp.FiniteSet(*dom.points) if dom.kind == "finite" else
                  sp.Integers if dom.kind == "integers" else sp.Interval(dom.lo, dom.hi))
        # the family's own derived constants (e.g. the discrete Gaussian's normalising Sum, extracted as _const0)
        # stay constants of the subsampled family: evaluated at bind time, never parameters
        derived = {RATE_C: 1 - RATE, **dict(family.constants)}
        _SUBSAMPLED[key] = (family, Family(p2, family.q, family.var, name=f"subsampled_{family.name}",
                                           domain=domain, constraints={**family.constraints, "sampling_rate": "(0, 1]"},
                                           derived=derived, defaults=family.defaults))
    return _SUBSAMPLED[key][1]


def subsample(mechanism: Mechanism, q: float) -> Mechanism:
    """Poisson subsampling of a bound mechanism at rate q.

    Parameters
    ----------
    mechanism : the bound ``Mechanism`` (not itself subsampled).
    q : the sampling rate, in (0, 1].

    Returns
    -------
    The mechanism of ``subsampled_family(mechanism.family)`` at the same parameter values and ``sampling_rate=q``.

    Raises
    ------
    ParameterError : ``mechanism`` is not a ``Mechanism`` or is already subsampled, or q is not a number in (0, 1].
    SpecificationError, DerivationError : as ``Family.__call__`` for the subsampled pair.
    """
    if not isinstance(mechanism, Mechanism):
        raise ParameterError(f"subsample expects a Mechanism, got {type(mechanism).__name__}")
    rate = check_real("q", q, low=0.0, high=1.0, high_open=False)
    fam = subsampled_family(mechanism.family)
    return fam(**mechanism.params, sampling_rate=rate)
