"""Neighbouring relations, sampling schemes and the directions of a privacy loss, named once.

A mechanism in mechkit is a dominating pair (P, Q) under a neighbouring relation (``RELATIONS``):

* ``ADD_REMOVE`` (the default): P is the output distribution on the dataset *with* the individual, Q *without* it;
* ``REPLACE_ONE``: P and Q are the outputs on two datasets of the same size that differ in one individual's record;
* ``REPLACE_SPECIAL``: one record replaced by a special one (dp_accounting's REPLACE_SPECIAL: for a query to which
  the special record contributes nothing, the add/remove pair).

Its two privacy-loss random variables are the two directions:

* ``REMOVE``: L = log p/q with the output drawn from P;
* ``ADD``: log q/p with the output drawn from Q.

A privacy curve is the maximum over both directions (``BOTH``).  The sampling schemes (``SCHEMES``) are transforms
of a mechanism (``mechkit.transforms``); docs/relations.md says which (scheme, relation) pairs exist, from which
theorem, and when their per-step pairs may be composed.
"""
from __future__ import annotations

from .errors import ParameterError

REMOVE = "remove"
ADD = "add"
BOTH = "both"
#: the two directions of a dominating pair under add/remove, in the order the accountants report them
DIRECTIONS = (REMOVE, ADD)
#: what a query's ``direction`` argument accepts
CHOICES = (BOTH, REMOVE, ADD)

ADD_REMOVE = "add_remove"
REPLACE_ONE = "replace_one"
REPLACE_SPECIAL = "replace_special"
#: the neighbouring relations a mechanism's pair can be for
RELATIONS = (ADD_REMOVE, REPLACE_ONE, REPLACE_SPECIAL)

POISSON = "poisson"
WITHOUT_REPLACEMENT = "without_replacement"
#: the sampling schemes of ``mechkit.subsample``
SCHEMES = (POISSON, WITHOUT_REPLACEMENT)


def check_relation(relation: str) -> str:
    """``relation`` itself when it is one of ``RELATIONS``.

    Parameters
    ----------
    relation : 'add_remove', 'replace_one' or 'replace_special'.

    Returns
    -------
    ``relation``.

    Raises
    ------
    ParameterError : ``relation`` is not one of ``RELATIONS``.
    """
    if not isinstance(relation, str) or relation not in RELATIONS:
        raise ParameterError(f"relation must be one of {RELATIONS}, got {relation!r}")
    return relation


def check_scheme(scheme: str) -> str:
    """``scheme`` itself when it is one of ``SCHEMES``.

    Parameters
    ----------
    scheme : 'poisson' or 'without_replacement'.

    Returns
    -------
    ``scheme``.

    Raises
    ------
    ParameterError : ``scheme`` is not one of ``SCHEMES``.
    """
    if not isinstance(scheme, str) or scheme not in SCHEMES:
        raise ParameterError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    return scheme


def directions(direction: str = BOTH) -> tuple[str, ...]:
    """The directions a query over ``direction`` covers: both for ``"both"``, else the one named.

    Parameters
    ----------
    direction : one of ``CHOICES``: 'both', 'remove' or 'add'.

    Returns
    -------
    ``DIRECTIONS`` for 'both', else ``(direction,)``.

    Raises
    ------
    ParameterError : ``direction`` is not one of ``CHOICES``.
    """
    if direction not in CHOICES:
        raise ParameterError(f"direction must be one of {CHOICES}, got {direction!r}")
    return DIRECTIONS if direction == BOTH else (direction,)


def check_direction(direction: str) -> str:
    """``direction`` itself when it names one direction (not ``"both"``).

    Parameters
    ----------
    direction : 'remove' or 'add'.

    Returns
    -------
    ``direction``.

    Raises
    ------
    ParameterError : ``direction`` is not one of ``DIRECTIONS``.
    """
    if direction not in DIRECTIONS:
        raise ParameterError(f"direction must be 'remove' or 'add', got {direction!r}")
    return direction
