"""Permute-and-flip (McKenna, Sheldon 2020), epsilon-DP: randomized response at epsilon, a valid upper bound, not
known to be tight.

Permute-and-flip (McKenna, Sheldon 2020) with privacy parameter epsilon: candidates in a random order, each kept
with probability exp(epsilon (u_r - u*) / (2 Delta)), u* the best utility; it is report-noisy-max with exponential
noise (Ding et al. 2021).  It is epsilon-DP (McKenna, Sheldon 2020, Theorem 1) but not epsilon-bounded-range, and no
tighter analysis is known, so this pair is randomized response at epsilon, which dominates every epsilon-DP pair: a
valid upper bound for one run and for compositions, not known to be tight (the worst pair found by search has
delta(0) = 1 - e^(-epsilon/2), below randomized response's tanh(epsilon/2); docs/custom-mechanisms.md)."""
from __future__ import annotations

import sympy as sp

from mechkit.laws import Family
from mechkit.laws.selection import SelectionMechanism

o = sp.Symbol("o", integer=True)
epsilon = sp.Symbol("epsilon", positive=True)

family = Family(p=sp.exp(epsilon * o) / (1 + sp.exp(epsilon)), q=sp.exp(epsilon * (1 - o)) / (1 + sp.exp(epsilon)),
                var=o, domain=[0, 1], name="permute_and_flip")


def make(epsilon: float) -> SelectionMechanism:
    """Permute-and-flip's pair (module docstring).

    Parameters
    ----------
    epsilon : the privacy parameter, > 0: candidates kept with probability exp(epsilon (u - u*) / (2 Delta)).

    Returns
    -------
    A ``SelectionMechanism`` (a ``Mechanism`` whose ``guarantee`` says the answers are a valid upper bound).

    Raises
    ------
    ParameterError : epsilon not a positive real number, or too large for double precision.
    """
    m = family(epsilon=epsilon)
    return SelectionMechanism(m.family, m.params, m.theta)
