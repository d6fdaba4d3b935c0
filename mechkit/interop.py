"""dp_accounting interop: ``from_dp_event(event, relation)`` turns a ``DpEvent`` into a mechkit ``Composition``;
``to_pld(run)`` turns a mechanism or composition into a pessimistic ``PrivacyLossDistribution``, and ``from_pld(pld)``
a ``PrivacyLossDistribution`` into a tabulated mechanism (``mechkit.laws.tabulated``).

Events are read by their class names and fields, so dp_accounting itself is not imported (nor needed).  The
relation is the accountant's (dp_accounting's ``NeighboringRelation`` or its name, or mechkit's): add/remove,
replace-one or replace-special.  Conventions follow dp_accounting's PLD accountant: a Gaussian's or Laplace's noise
multiplier is relative to the contribution bound, so under replace-one the pair is the noise shifted by +-1
(``mk.replace_one``); under replace-special an additive-noise event keeps its add/remove pair.  (dp_accounting's
RDP accountant reads a ``SampledWithoutReplacementDpEvent``'s Gaussian differently: its noise multiplier is relative
to the replace-one sensitivity, half as large: docs/relations.md.)

PLDs are read by their attributes (``_pmf_remove``, ``_pmf_add``, ``_symmetric``; a PMF's ``_discretization``,
``_infinity_mass``, ``_pessimistic_estimate`` and its probabilities: ``_loss_probs`` when sparse, ``_lower_loss`` and
``_probs`` when dense), so dp_accounting is not imported there either.

Supported events: Gaussian, Laplace, discrete Laplace, randomized response (replace-one or replace-special), mixture of
Gaussians, Poisson sampling and sampling without replacement of any supported event, self-composed and composed
events, no-op events.  Anything else (a non-private event, zCDP, tree aggregation, ...) is a ``ParameterError``
naming the event type.
"""
from __future__ import annotations

import math

from . import relations
from .composition import Composition, compose
from .errors import ParameterError
from .laws.catalog import catalog
from .laws.shipped import family
from .laws.tabulated import TabulatedMechanism, tabulated_losses
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
    fam = family  # the catalog's family, from its shipped record where it has one (no SymPy)
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


#: how far from 1 a PLD's probabilities plus its infinity mass may sum (dp_accounting's own PMFs are off by up to
#: ~1e-8 per composition, e.g. its connect-the-dots discretisation; further off is taken for a wrong argument)
PLD_TOTAL_TOL = 1e-2

#: Q's total (sum of probs e^-loss) above 1 by more than this is repaired (below: rounding, left as it is)
PLD_Q_TOL = 1e-12


def _pmf_law(pmf, which):
    """(losses, probabilities, infinity mass, discretisation) of one dp_accounting ``PLDPmf``, read by attribute."""
    import numpy as np

    h = getattr(pmf, "_discretization", None)
    inf = getattr(pmf, "_infinity_mass", None)
    if h is None or inf is None:
        raise ParameterError(f"the PLD's {which} PMF ({type(pmf).__name__}) has no _discretization or _infinity_mass: "
                             "from_pld reads dp_accounting's SparsePLDPmf and DensePLDPmf")
    if getattr(pmf, "_pessimistic_estimate", True) is False:
        raise ParameterError("from_pld reads pessimistic PLDs only: an optimistic one (pessimistic_estimate=False) "
                             "rounds losses down, so it is not the privacy-loss distribution of any pair")
    table = getattr(pmf, "_loss_probs", None)
    if table is not None:  # sparse: {index: probability}
        index = np.array(sorted(table), dtype=np.int64)
        probs = np.array([table[i] for i in index.tolist()], dtype=float)
    elif getattr(pmf, "_probs", None) is not None and getattr(pmf, "_lower_loss", None) is not None:
        probs = np.asarray(pmf._probs, dtype=float).ravel()
        index = np.arange(probs.size, dtype=np.int64) + int(pmf._lower_loss)
    else:
        raise ParameterError(f"the PLD's {which} PMF ({type(pmf).__name__}) has neither _loss_probs (sparse) nor "
                             "_lower_loss and _probs (dense)")
    if not np.all(np.isfinite(probs)):
        raise ParameterError(f"the PLD's {which} PMF has probabilities that are not finite")
    # the losses as dp_accounting computes them: index * discretisation, in doubles
    return index * float(h), probs, float(inf), float(h)


def _valid_law(losses, probs, inf, which):
    """The PMF of one direction made the law of a pair, without changing its delta(epsilon) at epsilon >= 0 beyond
    rounding, and pessimistically (``from_pld``): (losses, probabilities, infinity mass, what was changed)."""
    import numpy as np

    notes = {}
    if np.any(probs < 0):  # FFT rounding noise of a composed PMF (~1e-18)
        notes["negative_probabilities_zeroed"] = float(-probs[probs < 0].sum())
        probs = np.maximum(probs, 0.0)
    total = math.fsum(probs) + inf
    if not abs(total - 1.0) <= PLD_TOTAL_TOL:
        raise ParameterError(f"the PLD's {which} probabilities and infinity mass sum to {total:.12g}, not 1")
    if total > 1.0:  # the excess taken from the lowest losses, all <= 0: no delta at epsilon >= 0 changes
        excess = total - 1.0
        k = min(int(np.searchsorted(np.cumsum(probs), excess)), probs.size - 1)
        if losses[k] > 0:
            raise ParameterError(f"the PLD's {which} probabilities sum to 1 + {excess:.3g}, more than its mass at "
                                 "losses <= 0")
        probs = probs.copy()
        probs[k] = max(math.fsum(probs[:k + 1]) - excess, 0.0)
        probs[:k] = 0.0
        notes["excess_removed_at_losses_up_to"] = (excess, float(losses[k]))
    elif total < 1.0:  # the missing mass put at +inf: pessimistic
        inf += 1.0 - total
        notes["deficit_put_at_infinity"] = 1.0 - total
    return _q_within_one(losses, probs, inf, notes)


def _q_within_one(losses, probs, inf, notes):
    """Q's total, sum probs e^-loss, at most 1: where it is above (a PMF's rounding noise at very negative losses,
    amplified by e^-loss), the lowest losses are rounded up to the first loss t <= 0 at which it is not (at the latest
    to 0).  Rounding losses up is pessimistic, and below 0 it changes no delta at epsilon >= 0."""
    import numpy as np

    with np.errstate(over="ignore", divide="ignore"):
        q = np.where(probs > 0, np.exp(np.log(np.where(probs > 0, probs, 1.0)) - losses), 0.0)
        q_total = float(np.sum(q))
        if q_total <= 1.0 + PLD_Q_TOL:
            return losses, probs, inf, notes
        order = np.argsort(losses, kind="stable")
        losses, probs, q = losses[order], probs[order], q[order]
        below = np.concatenate(([0.0], np.cumsum(probs)[:-1]))   # P-mass below each loss
        above = np.cumsum(q[::-1])[::-1]                         # Q-mass at and above it
        total_if = np.where(below > 0, below * np.exp(-losses), 0.0) + above
    ok = np.nonzero((losses <= 0) & (total_if <= 1.0 + PLD_Q_TOL))[0]
    target = float(losses[ok[0]]) if ok.size else 0.0
    low = losses < target
    moved = math.fsum(probs[low])
    notes["q_total_was"] = q_total
    notes["rounded_up_to"] = (target, moved)
    return np.append(losses[~low], target), np.append(probs[~low], moved), inf, notes


def from_pld(pld: object, relation: object = relations.ADD_REMOVE, name: str = "pld") -> TabulatedMechanism:
    """The mechanism of a dp_accounting ``PrivacyLossDistribution``: its remove direction has the law of the PLD's
    remove PMF, its add direction that of the add PMF (``mechkit.laws.tabulated.tabulated_losses``).

    A PMF (probabilities w_i at losses l_i = i h, and an infinity mass) is the law under P of the pair P(i) = w_i,
    Q(i) = w_i e^(-l_i), plus an output with P = infinity mass, Q = 0 and one with P = 0, Q = 1 - sum Q.  The two PMFs
    of a PLD are in general not the two directions of one pair (pessimistic rounding, composition): the mechanism
    then has two pairs, one per direction, as the PLD has (mechkit's accountants compose each direction on its own
    and answer the maximum; a symmetric PLD gives both directions the same law).  Its one-shot ``delta(epsilon)``
    and ``epsilon(delta)`` are then the PLD's ``get_delta_for_epsilon`` and ``get_epsilon_for_delta`` up to rounding,
    and ``mk.compose((m, k))`` composes the same laws as ``pld.self_compose(k)``.

    dp_accounting's PMFs are not always exactly such laws, and are made so without changing delta at any epsilon
    >= 0 (``details`` records each change): negative probabilities (FFT noise) become 0; probabilities plus the
    infinity mass above 1 lose the excess at their lowest losses (all <= 0), below 1 put the rest at +inf; where
    sum w_i e^(-l_i) exceeds 1 (rounding noise at very negative losses, amplified by e^(-l)), the lowest losses are
    rounded up to the first loss <= 0 at which it no longer does.  Each change moves mass up or to +inf, so the
    mechanism stays pessimistic in every composition.

    Parameters
    ----------
    pld : a ``PrivacyLossDistribution`` (or an object with its attributes: module docstring); pessimistic.
    relation : the neighbouring relation the PLD is for (a PLD does not say): dp_accounting's
        ``NeighboringRelation`` or its name, or mechkit's; default add/remove.
    name : the mechanism's name (default "pld").

    Returns
    -------
    A ``TabulatedMechanism``; ``details`` holds the discretisation, whether the PLD was symmetric, and per direction
    what was changed (empty where nothing was).

    Raises
    ------
    ParameterError : not a PLD (no ``_pmf_remove``), a PMF that is optimistic or cannot be read, probabilities and
        infinity mass summing to more than 1e-2 away from 1, or an unknown relation.
    """
    rel = _relation(relation)
    remove = getattr(pld, "_pmf_remove", None)
    if remove is None:
        raise ParameterError(f"pld must be a dp_accounting PrivacyLossDistribution, got {type(pld).__name__} "
                             "(no _pmf_remove)")
    add = getattr(pld, "_pmf_add", None)
    symmetric = bool(getattr(pld, "_symmetric", add is None or add is remove)) or add is None
    laws, details = [], {"source": "dp_accounting PrivacyLossDistribution", "symmetric": symmetric}
    for which, pmf in (("remove", remove),) + ((("add", add),) if not symmetric else ()):
        losses, probs, inf, h = _pmf_law(pmf, which)
        losses, probs, inf, notes = _valid_law(losses, probs, inf, which)
        laws.append((losses, probs, inf))
        details[which] = notes
        details["discretization"] = h
    if symmetric:
        details["add"] = details["remove"]
    return tabulated_losses(*laws[0], add=laws[-1], name=name, relation=rel, details=details)
