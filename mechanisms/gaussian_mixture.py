"""Mixture-of-Gaussians mechanism (dp_accounting's MixtureOfGaussiansDpEvent; Chua et al. 2023): with the
individual the output is sum_i probabilities[i] N(sensitivities[i], sigma^2), without it N(0, sigma^2).
``mk.gaussian_mixture(sigma, sensitivities, probabilities)`` takes any number of components (one family per
number, derived once); ``family`` is the two-component family."""
from __future__ import annotations

import math
from collections.abc import Sequence

import sympy as sp

from mechkit.errors import ParameterError
from mechkit.laws import Family

x = sp.Symbol("x", real=True)
sigma = sp.Symbol("sigma", positive=True)
_FAMILIES = {}


def normal(mean):
    return sp.exp(-(x - mean) ** 2 / (2 * sigma**2)) / (sp.sqrt(2 * sp.pi) * sigma)


def family_of(components: int) -> Family:
    """The family with ``components`` Gaussians: parameters sigma, sensitivity_1.. and probability_1.. .

    Parameters
    ----------
    components : the number of mixture components, at least 1.

    Returns
    -------
    The ``Family`` (made once per number of components).
    """
    if components not in _FAMILIES:
        cs = sp.symbols(" ".join(f"sensitivity_{i}" for i in range(1, components + 1)), real=True, seq=True)
        ws = sp.symbols(" ".join(f"probability_{i}" for i in range(1, components + 1)), nonnegative=True,
                        seq=True)
        _FAMILIES[components] = Family(p=sum(w * normal(c) for w, c in zip(ws, cs)), q=normal(0), var=x,
                                       name="gaussian_mixture", constraints={w.name: "[0, 1]" for w in ws})
    return _FAMILIES[components]


family = family_of(2)


def make(sigma: float, sensitivities: Sequence[float], probabilities: Sequence[float]) -> object:
    """The mixture-of-Gaussians mechanism (module docstring).

    Parameters
    ----------
    sigma : the noise standard deviation, > 0.
    sensitivities : the components' shifts (real numbers), one per component.
    probabilities : the components' probabilities, in [0, 1], summing to 1, as many as ``sensitivities``.

    Returns
    -------
    The bound ``Mechanism`` of ``family_of(len(sensitivities))``.

    Raises
    ------
    ParameterError : lengths that differ or are 0, probabilities outside [0, 1] or not summing to 1, or values
        outside their ranges.
    """
    try:
        cs, ws = [float(c) for c in sensitivities], [float(w) for w in probabilities]
    except (TypeError, ValueError):
        raise ParameterError("sensitivities and probabilities must be sequences of numbers") from None
    if not cs or len(cs) != len(ws):
        raise ParameterError(f"sensitivities and probabilities must have the same length >= 1, got {len(cs)} "
                             f"and {len(ws)}")
    if abs(math.fsum(ws) - 1.0) > 1e-12:
        raise ParameterError(f"probabilities must sum to 1, got sum {math.fsum(ws)!r}")
    values = {f"sensitivity_{i}": c for i, c in enumerate(cs, 1)}
    values.update({f"probability_{i}": w for i, w in enumerate(ws, 1)})
    return family_of(len(cs))(sigma=sigma, **values)
