"""dp_accounting interop: ``from_dp_event(event, relation)`` turns a ``DpEvent`` into a mechkit ``Composition``.

Events are read by their class names and fields, so dp_accounting itself is not imported (nor needed).  The
relation is the accountant's (dp_accounting's ``NeighboringRelation`` or its name, or mechkit's): add/remove,
replace-one or replace-special.  Conventions follow dp_accounting's PLD accountant: a Gaussian's or Laplace's noise
multiplier is relative to the contribution bound, so under replace-one the pair is the noise shifted by +-1
(``mk.replace_one``); under replace-special an additive-noise event keeps its add/remove pair.  (dp_accounting's
RDP accountant reads a ``SampledWithoutReplacementDpEvent``'s Gaussian differently: its noise multiplier is relative
to the replace-one sensitivity, half as large: docs/relations.md.)

Supported: Gaussian, Laplace, discrete Laplace, randomized response (replace-one or replace-special), mixture of
Gaussians, Poisson sampling and sampling without replacement of any supported event, self-composed and composed
events, no-op events.  Anything else (a non-private event, zCDP, tree aggregation, ...) is a ``ParameterError``
naming the event type.
"""
from __future__ import annotations

from . import relations
from .composition import Composition, compose
from .errors import ParameterError
from .laws.catalog import catalog
from .transforms import replace_one, subsample, with_relation

_RELATIONS = {"ADD_OR_REMOVE_ONE": relations.ADD_REMOVE, "REPLACE_ONE": relations.REPLACE_ONE,
              "REPLACE_SPECIAL": relations.REPLACE_SPECIAL}


def _relation(relation):
    name = getattr(relation, "name", relation)
    if name in _RELATIONS:
        return _RELATIONS[name]
    if name in relations.RELATIONS:
        return name
    raise ParameterError(f"relation must be one of {sorted(_RELATIONS)} (dp_accounting's) or {relations.RELATIONS}, "
                         f"got {relation!r}")


def _additive(m, relation):
    """An add/remove additive-noise mechanism under ``relation`` (dp_accounting's PLD conventions)."""
    if relation == relations.REPLACE_ONE:
        return replace_one(m)
    return with_relation(m, relation)


def _base(event, relation):
    """The mechanism of one non-composite event (None for a no-op)."""
    kind = type(event).__name__
    fam = lambda name: catalog(name).family  # noqa: E731
    if kind == "NoOpDpEvent":
        return None
    if kind == "GaussianDpEvent":
        return _additive(fam("gaussian")(sigma=event.noise_multiplier, sensitivity=1.0), relation)
    if kind == "LaplaceDpEvent":
        return _additive(fam("laplace")(scale=event.noise_multiplier, sensitivity=1.0), relation)
    if kind == "DiscreteLaplaceDpEvent":
        m = fam("discrete_laplace")(scale=1.0 / event.noise_parameter, sensitivity=event.sensitivity)
        return _additive(m, relation)
    if kind == "MixtureOfGaussiansDpEvent":
        mod = catalog("gaussian_mixture")
        m = mod.make(event.standard_deviation, event.sensitivities, event.sampling_probs)
        if relation == relations.REPLACE_ONE:
            raise ParameterError("a MixtureOfGaussiansDpEvent is accounted under add/remove or replace-special")
        return with_relation(m, relation)
    if kind == "RandomizedResponseDpEvent":
        if relation == relations.ADD_REMOVE:
            raise ParameterError("a RandomizedResponseDpEvent is accounted under replace-one or replace-special "
                                 "(as dp_accounting's accountants do)")
        name = "k_ary_randomized_response" + ("" if relation == relations.REPLACE_ONE else "_special")
        return fam(name)(noise_parameter=event.noise_parameter, num_buckets=event.num_buckets)
    # a sampling event subsamples the inner mechanism's add/remove pair; the transform makes the relation's pair
    if kind == "PoissonSampledDpEvent":
        inner = _single(event.event, relations.ADD_REMOVE, "PoissonSampledDpEvent")
        if inner is None:
            return None
        if relation == relations.REPLACE_SPECIAL:
            return with_relation(subsample(inner, event.sampling_probability), relation)
        return subsample(inner, event.sampling_probability, scheme=relations.POISSON, relation=relation)
    if kind == "SampledWithoutReplacementDpEvent":
        if relation != relations.REPLACE_ONE:
            raise ParameterError("a SampledWithoutReplacementDpEvent is accounted under replace-one")
        inner = _single(event.event, relations.ADD_REMOVE, "SampledWithoutReplacementDpEvent")
        if inner is None:
            return None
        rate = event.sample_size / event.source_dataset_size
        return subsample(inner, rate, scheme=relations.WITHOUT_REPLACEMENT, relation=relations.REPLACE_ONE)
    raise ParameterError(f"{kind} cannot be expressed in mechkit (supported: Gaussian, Laplace, discrete Laplace, "
                         "randomized response, mixture of Gaussians, Poisson and without-replacement sampling, "
                         "self-composed and composed events)")


def _single(event, relation, outer):
    """The one mechanism of the event inside a sampling event."""
    items = _items(event, relation)
    if not items:
        return None
    if len(items) != 1 or items[0][1] != 1:
        raise ParameterError(f"the event inside a {outer} must be a single mechanism, got {type(event).__name__}")
    return items[0][0]


def _items(event, relation):
    kind = type(event).__name__
    if kind == "SelfComposedDpEvent":
        return [(m, c * event.count) for m, c in _items(event.event, relation)]
    if kind == "ComposedDpEvent":
        return [it for e in event.events for it in _items(e, relation)]
    m = _base(event, relation)
    return [] if m is None else [(m, 1)]


def from_dp_event(event: object, relation: object = relations.ADD_REMOVE) -> Composition:
    """The ``Composition`` of a dp_accounting ``DpEvent`` (module docstring).

    Parameters
    ----------
    event : a ``DpEvent`` (or an object with the same class name and fields).
    relation : the accountant's neighbouring relation: dp_accounting's ``NeighboringRelation`` (or its name) or
        mechkit's ("add_remove", "replace_one", "replace_special").

    Returns
    -------
    The composition (its mechanisms under ``relation``).

    Raises
    ------
    ParameterError : an event mechkit cannot express (naming its type), one that the relation does not admit, or an
        event with no privacy cost at all (only no-ops).
    """
    rel = _relation(relation)
    items = _items(event, rel)
    if not items:
        raise ParameterError("the event has no private part (only no-ops): there is nothing to account")
    return compose(*items)


def _pessimistic_pmf(plrv, h, tail_mass, pld_pmf):
    """dp_accounting's pessimistic PMF of one direction's loss on the grid i*h: the mass of ((i-1)h, ih] at ih (losses
    rounded up), the lower tail below the first point at that point, the upper tail beyond the last point and the
    mass at +inf as infinity mass (all rounding towards larger losses: pessimistic)."""
    import numpy as np

    inf = float(plrv.inf_mass)
    fin = max(1.0 - inf, 0.0)
    lo, hi = plrv.support
    # the grid spans the losses between the tail quantiles (tail_mass / 2 each side of the finite part)
    a = lo if np.isfinite(lo) else _quantile(plrv, tail_mass / 2, lower=True)
    b = hi if np.isfinite(hi) else _quantile(plrv, tail_mass / 2, lower=False)
    i_lo, i_hi = int(np.floor(a / h)), int(np.ceil(b / h))
    if i_hi - i_lo > 50_000_000:
        raise ParameterError(f"value_discretization_interval={h:g} needs {i_hi - i_lo} points for this loss (from "
                             f"{a:.4g} to {b:.4g}); use a larger interval")
    edges = np.arange(i_lo, i_hi + 1) * h
    cdf = np.minimum(np.asarray(plrv.cdf(edges), float), fin)
    probs = np.diff(cdf)
    probs[0] += cdf[0]  # losses at or below the first point: rounded up to it
    infinity = inf + max(fin - float(cdf[-1]), 0.0)  # beyond the last point: pessimistically infinite
    loss_probs = {int(i): float(p) for i, p in zip(range(i_lo + 1, i_hi + 1), probs) if p > 0}
    return pld_pmf.create_pmf(loss_probs, h, infinity, True)


def _quantile(plrv, mass, lower):
    """A loss beyond which (below, or above) the finite part has at most ``mass`` (doubling search on the CDF)."""

    s = 1.0
    while s < 1e6:
        if (plrv.cdf(-s) <= mass) if lower else (1.0 - plrv.inf_mass - plrv.cdf(s) <= mass):
            return -s if lower else s
        s *= 2.0
    raise ParameterError(f"the privacy loss has more than {mass:g} of its mass beyond {1e6:g}: no PLD grid fits")


def to_pld(obj: object, value_discretization_interval: float = 1e-4, tail_mass: float = 1e-15) -> object:
    """A dp_accounting ``PrivacyLossDistribution`` with pessimistic semantics for a mechanism or a composition.

    Each mechanism's two privacy losses (remove: log p/q under P, dp_accounting's ``pmf_remove``; add: log q/p under
    Q, ``pmf_add``) are rounded up to the grid ``i * value_discretization_interval`` from mechkit's exact CDFs (masses
    beyond the tails and at +inf become the infinity mass), so the PLD's delta(epsilon) is an upper bound of the
    mechanism's (up to ``tail_mass``, which is put at +inf, so still an upper bound); a composition's PLDs are
    composed by dp_accounting (``self_compose``, ``compose``), which keeps pessimistic PLDs pessimistic.

    Parameters
    ----------
    obj : a ``Mechanism`` or a ``Composition``.
    value_discretization_interval : the loss grid's spacing, > 0 (dp_accounting's default 1e-4).
    tail_mass : the mass of the finite loss left off the grid (put at +inf), in (0, 1e-3].

    Returns
    -------
    ``dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution``.

    Raises
    ------
    ParameterError : dp_accounting is not installed (``pip install "mechkit[interop]"``), an argument out of range,
        or a grid too large for the loss.
    """
    from .errors import check_real

    h = check_real("value_discretization_interval", value_discretization_interval, low=0.0, high=10.0)
    t = check_real("tail_mass", tail_mass, low=0.0, high=1e-3, high_open=False)
    try:
        from dp_accounting.pld import pld_pmf
        from dp_accounting.pld import privacy_loss_distribution as pld_lib
    except ImportError:
        raise ParameterError('to_pld needs dp_accounting: pip install "mechkit[interop]"') from None
    items = obj.items if isinstance(obj, Composition) else compose(obj).items
    out = None
    for m, count in items:
        one = pld_lib.PrivacyLossDistribution(_pessimistic_pmf(m.plrv("remove"), h, t, pld_pmf),
                                              _pessimistic_pmf(m.plrv("add"), h, t, pld_pmf))
        one = one.self_compose(count) if count > 1 else one
        out = one if out is None else out.compose(one)
    return out
