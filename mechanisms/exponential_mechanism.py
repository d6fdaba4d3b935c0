"""Exponential mechanism (McSherry, Talwar 2007), epsilon-bounded-range: the pair that dominates every
epsilon-bounded-range pair, tight for one run, a valid upper bound composed (``mk.BoundedRange()`` is closer).

Exponential mechanism (McSherry, Talwar 2007) with privacy parameter epsilon: candidate r with probability
proportional to exp(epsilon u(x, r) / (2 Delta)), Delta the sensitivity of the utility u.  It is epsilon-bounded-range
(Dong, Durfee, Rogers 2020), and this pair, the privacy loss L with density e^((epsilon + L)/2) / (2 (e^epsilon - 1))
on [-epsilon, epsilon] under P, dominates every epsilon-bounded-range pair with the supremum of their curves
(``mechkit.laws.selection``): one run is tight (any number of candidates; two attain it),
delta(eps) = (e^(epsilon/2) - e^(eps/2))^2 / (e^epsilon - 1) for |eps| <= epsilon; a composition with any mechanisms
is a valid upper bound, not tight (the accountants' lower bound is then the pair's, not the mechanism's;
``mk.BoundedRange()`` brackets compositions of exponential mechanisms; docs/custom-mechanisms.md).  Symmetric, so it
holds under any relation the sensitivity is stated for (``mk.with_relation``); for utilities that move in one
direction (counts under add/remove) the range is epsilon / 2: pass half the parameter."""
from __future__ import annotations

import sympy as sp

from mechkit.laws import Family
from mechkit.laws.selection import SelectionMechanism

x = sp.Symbol("x", real=True)
epsilon = sp.Symbol("epsilon", positive=True)
norm = 2 * (sp.exp(epsilon) - 1)

family = Family(p=sp.exp((epsilon + x) / 2) / norm, q=sp.exp((epsilon - x) / 2) / norm, var=x,
                domain=sp.Interval(-epsilon, epsilon), name="exponential_mechanism")


def make(epsilon: float) -> SelectionMechanism:
    """The exponential mechanism's pair (module docstring).

    Parameters
    ----------
    epsilon : the privacy parameter, > 0: candidates drawn with probability proportional to
        exp(epsilon u / (2 Delta)).

    Returns
    -------
    A ``SelectionMechanism`` (a ``Mechanism`` whose ``guarantee`` says which answers are tight).

    Raises
    ------
    ParameterError : epsilon not a positive real number, or too large for double precision.
    """
    m = family(epsilon=epsilon)
    return SelectionMechanism(m.family, m.params, m.theta)
