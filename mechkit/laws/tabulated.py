"""Tabulated mechanisms: a dominating pair given as numbers on a finite output set instead of densities.

``tabulated(p, q)`` takes the two probability vectors of a pair (P with the individual, Q without) over the same
outputs; ``tabulated_losses(losses, probs, infinity_mass)`` takes a privacy-loss distribution instead, the law of
L = log p/q under P, which determines a pair on a finite output set: an output i with P(i) = probs_i and
Q(i) = probs_i e^(-losses_i), an output with P = infinity_mass and Q = 0 (a loss of +inf), and where sum Q < 1 an output
with P = 0 and Q = 1 - sum Q (a loss of -inf).  Its add direction is that pair's (log q/p under Q) unless ``add=``
gives the add direction's own loss distribution, as a dp_accounting PLD does (``mechkit.interop.from_pld``): the two
directions are then two pairs, each direction composed with its own (accountants compose the directions separately,
and a query's answer is the maximum over them).

Both return a ``TabulatedMechanism``: a ``Mechanism`` whose law of L is atoms only (``DiscreteCore``'s exact sums:
CDFs, the CGF and its derivatives, tilted statistics), so every accountant, ``compose``, ``epsilon``/``delta`` and
pickling take it as they take a catalog mechanism.  It has no densities, so the symbolic transforms
(``subsample``, ``replace_one``, ``with_relation``) refuse it by name: tabulate the transformed pair instead (Poisson
subsampling at rate r under add/remove is ``tabulated((1 - r) q + r p, q)``), and state the relation with
``relation=``.
"""
from __future__ import annotations

import hashlib
import math

import numpy as np
from numpy.typing import ArrayLike

from .. import relations
from ..errors import ParameterError, check_finite_real, real_array
from .core import NEG_INF, AtomSet, lse
from .discrete import DiscreteCore
from .family import Mechanism
from .plrv import PLRV

#: how far from 1 a table's probabilities may sum (they are then divided by their sum)
TOTAL_TOL = 1e-9


class TableCore(DiscreteCore):
    """The law of L of a tabulated pair: atoms only (values of L with their log-masses under P and Q), answered by
    ``DiscreteCore``'s exact sums.

    Parameters
    ----------
    values : the losses L = log P(i)/Q(i) of the outputs (+inf where Q(i) = 0, -inf where P(i) = 0).
    logp, logq : log P(i) and log Q(i) (-inf for a zero).
    """

    def __init__(self, values: ArrayLike, logp: ArrayLike, logq: ArrayLike) -> None:
        values, logp, logq = (np.asarray(a, float) for a in (values, logp, logq))
        self.st, self.mod, self.theta = None, None, np.zeros(0)
        keep = (logp > NEG_INF) | (logq > NEG_INF)
        self.atoms = AtomSet(values[keep], logp[keep], logq[keep])
        self.points = self.atoms.values
        self.mono = []
        self.support = (float(self.atoms.values[0]), float(self.atoms.values[-1]))


class TableFamily:
    """What a ``Composition`` reads from a mechanism's family (name, relation, content key, ``one_sided``), for a
    tabulated mechanism, which has no symbolic densities: ``p`` and ``q`` raise a ``ParameterError`` saying so (the
    transforms that rewrite densities read them first).

    Parameters
    ----------
    name : the mechanism's name.
    relation : its neighbouring relation.
    key : a content key of its tables (equal tables are one mechanism in a composition).
    """

    one_sided = False
    parameters = ()

    def __init__(self, name: str, relation: str, key: str) -> None:
        self.name, self.relation, self.key = name, relation, key

    @property
    def p(self) -> None:
        """Not available: a tabulated mechanism has no densities (raises ``ParameterError``)."""
        raise ParameterError(f"{self.name} is a tabulated mechanism: it has no densities for subsample, replace_one "
                             "or with_relation to rewrite; tabulate the transformed pair instead (Poisson subsampling "
                             "at rate r under add/remove: mk.tabulated((1 - r) * q + r * p, q)) and state its "
                             "relation with relation=")

    q = p

    def __repr__(self):
        return f"TableFamily({self.name!r}, relation={self.relation!r})"


class _Side:
    """The owner of a direction's PLRV where the two directions are two pairs: the add direction's law (``core``)
    under the mechanism's name (accountants read ``plrv.mechanism.core`` and ``.name``)."""

    __slots__ = ("core", "owner")

    def __init__(self, core, owner):
        self.core, self.owner = core, owner

    @property
    def name(self):
        return self.owner.name


def _key(tables):
    h = hashlib.sha256(b"tabulated")
    for table in tables:
        h.update(b"|" if table is None else b"".join(np.ascontiguousarray(a, float).tobytes() for a in table))
    return "tabulated-" + h.hexdigest()


class TabulatedMechanism(Mechanism):
    """A mechanism given by tables (module docstring): made by ``tabulated`` or ``tabulated_losses``, which check the
    numbers; the constructor takes the tables as they made them.

    Parameters
    ----------
    remove : (values, log P, log Q) of the pair whose remove direction is L = log P/Q under P (``TableCore``).
    add : None where the add direction is the same pair's (log Q/P under Q), else the (values, log P, log Q) of the
        pair whose add direction it is.
    name : shown in reprs and compositions.
    relation : the neighbouring relation the pair is for (``relations.RELATIONS``).
    details : what the maker recorded about the table (e.g. ``from_pld``'s adjustments); kept and pickled.

    Attributes
    ----------
    family (a ``TableFamily``), params (empty), theta (empty), tables, details, remove and add (the ``PLRV``s).
    """

    def __init__(self, remove: tuple, add: tuple | None = None, name: str = "tabulated",
                 relation: str = relations.ADD_REMOVE, details: dict | None = None) -> None:
        cores = [TableCore(*remove)] + ([] if add is None else [TableCore(*add)])
        # the tables as the cores keep them (sorted, equal losses merged, empty outputs dropped): what the content
        # key hashes and what pickles
        self.tables = tuple((c.atoms.values, c.atoms.logP, c.atoms.logQ) for c in cores) + (None,) * (2 - len(cores))
        self.family = TableFamily(name, relations.check_relation(relation), _key(self.tables))
        self.params, self.theta, self.details = {}, np.zeros(0), dict(details or {})
        self.core = cores[0]
        self.remove = PLRV(self, relations.REMOVE)
        self.add = PLRV(self if add is None else _Side(cores[1], self), relations.ADD)

    @property
    def name(self) -> str:
        """The name given at construction."""
        return self.family.name

    @property
    def two_pairs(self) -> bool:
        """True where the add direction is a pair of its own (``add=``), not the remove pair read the other way."""
        return self.tables[1] is not None

    def __repr__(self):
        rel = "" if self.relation == relations.ADD_REMOVE else f", {self.relation}"
        sizes = [str(t[0].size) for t in self.tables if t is not None]
        return f"<TabulatedMechanism {self.name} ({'/'.join(sizes)} outputs{rel})>"

    def __reduce__(self):
        # the tables themselves (exact doubles); the laws are rebuilt from them where it is unpickled
        return type(self), (self.tables[0], self.tables[1], self.name, self.relation, self.details)


def _vector(name, value):
    arr = real_array(name, value)
    if arr.ndim != 1:
        raise ParameterError(f"{name} must be a 1-D array of numbers, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ParameterError(f"{name} must be finite, got {arr[~np.isfinite(arr)][0]!r}")
    return arr


def _probabilities(name, value):
    arr = _vector(name, value)
    if np.any(arr < 0):
        raise ParameterError(f"{name} must be non-negative, got {arr[arr < 0][0]!r} at index "
                             f"{int(np.argmax(arr < 0))}")
    return arr


def _normalised(name, total):
    if not abs(total - 1.0) <= TOTAL_TOL:
        raise ParameterError(f"{name} must sum to 1 (within {TOTAL_TOL:g}), got {total:.12g}")


def _check_some_finite(values, logp, logq, what):
    if not np.any(np.isfinite(values) & (logp > NEG_INF) & (logq > NEG_INF)):
        raise ParameterError(f"{what}: no output has both P and Q positive, so the privacy loss is infinite "
                             "everywhere (delta = 1 at every epsilon)")


def tabulated(p: ArrayLike, q: ArrayLike, name: str = "tabulated",
              relation: str = relations.ADD_REMOVE) -> TabulatedMechanism:
    """The mechanism of the pair (P, Q) given as probabilities on a finite set of outputs.

    The remove direction is L = log p_i/q_i under P, the add direction log q_i/p_i under Q; an output with q_i = 0
    < p_i is a loss of +inf (``inf_mass``), one with p_i = 0 < q_i a loss of -inf; outputs with p_i = q_i = 0 are
    dropped.  The vectors are divided by their sums (each must be 1 within ``TOTAL_TOL`` = 1e-9: no mass is left
    for the table to place elsewhere).

    Parameters
    ----------
    p : P(i), the output distribution with the individual: a 1-D array of non-negative finite numbers.
    q : Q(i), without the individual, over the same outputs (the same length).
    name : shown in reprs and compositions (default "tabulated").
    relation : the neighbouring relation the pair dominates under: "add_remove" (default), "replace_one" or
        "replace_special".

    Returns
    -------
    A ``TabulatedMechanism`` (a ``Mechanism``: ``epsilon``, ``delta``, ``remove``/``add``, ``mk.compose``).

    Raises
    ------
    ParameterError : p or q not a 1-D array of finite non-negative numbers, of different lengths, not summing to 1
        within 1e-9, without an output where both are positive, or an unknown relation.
    """
    p, q = _probabilities("p", p), _probabilities("q", q)
    if p.size != q.size:
        raise ParameterError(f"p and q must have the same length (one entry per output), got {p.size} and {q.size}")
    _normalised("p", math.fsum(p))
    _normalised("q", math.fsum(q))
    relations.check_relation(relation)
    with np.errstate(divide="ignore"):
        lp, lq = np.log(p / math.fsum(p)), np.log(q / math.fsum(q))
    both = (lp > NEG_INF) & (lq > NEG_INF)
    values = np.where(both, lp - lq, np.where(lq == NEG_INF, np.inf, -np.inf))
    _check_some_finite(values, lp, lq, "p and q have disjoint supports")
    return TabulatedMechanism((values, lp, lq), None, str(name), relation)


def _loss_table(losses, probs, infinity_mass, what):
    """(values, log P, log Q) of the pair a loss distribution under P determines (module docstring)."""
    sfx = "" if what == "remove" else "_add"
    loss = _vector(f"losses{sfx}", losses)
    w = _probabilities(f"probs{sfx}", probs)
    if loss.size != w.size:
        raise ParameterError(f"losses{sfx} and probs{sfx} must have the same length, got {loss.size} and {w.size}")
    inf = check_finite_real(f"infinity_mass{sfx}", infinity_mass, low=0.0, high=1.0, low_open=False,
                            high_open=False)
    total = math.fsum(w) + inf
    _normalised(f"probs{sfx} plus infinity_mass{sfx}", total)
    with np.errstate(divide="ignore"):
        lw = np.log(w / total)
        lq = lw - loss
    log_q_total = lse(lq)
    if log_q_total > math.log1p(TOTAL_TOL):
        raise ParameterError(
            f"sum(probs{sfx} * exp(-losses{sfx})) = {math.exp(log_q_total):.12g} exceeds 1: it is Q's total, so this "
            "is not the privacy-loss distribution of any pair (losses rounded down, as an optimistic PLD's are?)")
    rest = -math.expm1(log_q_total) if log_q_total < 0 else 0.0
    with np.errstate(divide="ignore"):
        values = np.concatenate((loss, [np.inf, -np.inf]))
        logp = np.concatenate((lw, [math.log(inf / total) if inf > 0 else NEG_INF, NEG_INF]))
        logq = np.concatenate((lq, [NEG_INF, math.log(rest) if rest > 0 else NEG_INF]))
    _check_some_finite(values, logp, logq, f"the loss distribution ({what})")
    return values, logp, logq


def tabulated_losses(losses: ArrayLike, probs: ArrayLike, infinity_mass: float = 0.0, add: tuple | None = None,
                     name: str = "tabulated", relation: str = relations.ADD_REMOVE,
                     details: dict | None = None) -> TabulatedMechanism:
    """The mechanism of a privacy-loss distribution: the law of L = log p/q under P, with point masses ``probs`` at
    the finite ``losses`` and ``infinity_mass`` at +inf.

    It is the pair P(i) = probs_i, Q(i) = probs_i e^(-losses_i), plus an output with P = infinity_mass, Q = 0, and
    (where sum Q < 1) one with P = 0, Q = 1 - sum Q: the remove direction has exactly this law, and the pair's
    delta(epsilon) is sum_i probs_i (1 - e^(epsilon - losses_i))_+ + infinity_mass.  Equal losses are merged.
    Probabilities plus ``infinity_mass`` must sum to 1 within 1e-9 (they are divided by their sum), and sum Q may not
    exceed 1 by more than that (a law under P of a loss log p/q has E[e^(-L)] = Q(L finite) <= 1).

    Parameters
    ----------
    losses : the finite loss values (a 1-D array; any order).
    probs : their probabilities under P (non-negative, the same length).
    infinity_mass : P(L = +inf), in [0, 1] (default 0).
    add : None (default): the add direction is this pair's (log q/p under Q); or a tuple (losses, probs,
        infinity_mass) giving the add direction's own law (log q/p under Q, the loss of another pair): the
        mechanism's two directions are then two pairs, as a dp_accounting PLD's remove and add PMFs are.
    name : shown in reprs and compositions (default "tabulated").
    relation : the neighbouring relation: "add_remove" (default), "replace_one" or "replace_special".
    details : anything to keep with the mechanism (its ``details``), e.g. where the table came from.

    Returns
    -------
    A ``TabulatedMechanism``.

    Raises
    ------
    ParameterError : arrays that are not 1-D finite numbers of one length, negative probabilities, totals off 1,
        sum Q above 1, no finite loss with positive probability, an ``add`` that is not a 2- or 3-tuple of such
        arguments, or an unknown relation (messages name the argument, ``_add`` for the add direction's).
    """
    relations.check_relation(relation)
    remove = _loss_table(losses, probs, infinity_mass, "remove")
    other = None
    if add is not None:
        if not (isinstance(add, (tuple, list)) and len(add) in (2, 3)):
            raise ParameterError(f"add must be None or a tuple (losses, probs[, infinity_mass]), got {add!r}")
        values, logp, logq = _loss_table(*add, "add") if len(add) == 3 else _loss_table(*add, 0.0, "add")
        other = (-values, logq, logp)  # the add PLRV reads -L under Q: the pair (Q', P') of that law's pair (P', Q')
    return TabulatedMechanism(remove, other, str(name), relation, details)
