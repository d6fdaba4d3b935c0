"""Neighbouring relations and the directions of a privacy loss, named once.

A mechanism in mechkit is a dominating pair (P, Q) under the add/remove relation: P is the output distribution on
the dataset *with* the individual, Q *without* it.  Its two privacy-loss random variables are the two directions:

* ``REMOVE``: L = log p/q with the output drawn from P;
* ``ADD``: log q/p with the output drawn from Q.

A privacy curve under add/remove is the maximum over both directions (``BOTH``).  Substitution (replace one
individual's record) and sampling schemes other than Poisson will be added here as relations and transforms.
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
