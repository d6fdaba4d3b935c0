"""Families and mechanisms that travel: how they pickle (for ``mk.sweep`` on a process pool or a cluster, or any
``pickle.dumps``).

A ``Mechanism`` holds compiled kernels, which do not pickle; it pickles as its family and parameter values (its
``theta`` too, as exact doubles), and is bound again where it is unpickled.  A ``Family`` pickles as the catalog
family of that name where it is one (``mechanisms/<name>.py``'s ``family``: a reference, a few dozen bytes), else
as its specification (densities, domain, parameters, constraints, defaults, relation; a few KB).  Its derivation is
not pickled: on first use the unpickled family looks it up by its content key (``Family.key``), in this process,
then in the disk cache (``MECHKIT_CACHE_DIR``) or the catalog's shipped derivations, and derives it only where
neither has it.  An unpickled mechanism answers exactly as the original (the same compiled kernels at the same
``theta``).
"""
from __future__ import annotations

import copyreg
import sys

from . import catalog


def catalog_family(name: str) -> object:
    """The ``family`` of the catalog module ``name``: what a pickled catalog family becomes.

    Parameters
    ----------
    name : a catalog module's name, e.g. "gaussian".

    Returns
    -------
    The module's ``Family``.

    Raises
    ------
    ModuleNotFoundError : no such catalog module.
    """
    return catalog.catalog(name).family


def rebind(kind: type, family: object, values: dict, theta: list) -> object:
    """The mechanism of ``family`` at ``values`` (already checked where it was pickled) with the kernels' parameter
    vector ``theta``: what a pickled ``Mechanism`` becomes.

    Parameters
    ----------
    kind : the mechanism's class (``Mechanism``; passed by the pickle, so this module imports nothing above it).
    family : the ``Family``.
    values : parameter name -> value.
    theta : the kernels' parameter vector (exact doubles).

    Returns
    -------
    The bound ``Mechanism``; the family's derivation is loaded (or, on a cold cache, derived) first.
    """
    getattr(family, "derive")(_screened=True)  # the values were screened where the mechanism was first bound
    return kind(family, values, theta)


class PortableFamily:
    """Pickling of a ``Family`` (module docstring): the catalog family by name, any other by its specification,
    without its loaded derivation."""

    def __reduce__(self):
        module = sys.modules.get(f"mechkit.mechanisms.{self.name}")  # a catalog family's module is loaded
        if module is not None and getattr(module, "family", None) is self:
            return catalog_family, (self.name,)
        # the key is computed again where it is unpickled: it includes the code version, which may differ there
        return copyreg.__newobj__, (type(self),), {**vars(self), "_loaded": None, "_key": None,
                                                        "_constant_fns": None}


class PortableMechanism:
    """Pickling of a ``Mechanism`` (module docstring): its family, parameter values and ``theta``, bound again
    where it is unpickled."""

    def __reduce__(self):
        return rebind, (type(self), self.family, dict(self.params), self.theta.tolist())
