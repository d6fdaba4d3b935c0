"""Catalog families bound from their shipped records, without SymPy.

``mechanisms/_prederive.py`` writes ``_derived/records.json`` beside the shipped derivations: for each catalog
family (and its subsampled families) what binding needs -- the parameters with their assumptions, ranges and
defaults, the derived constants (only 1 - sampling_rate is recorded; a family with another constant, such as the
discrete Gaussian's normalising sum, has no record), the key of its shipped derivation, and for ``mk.<name>`` the
signature and docstring.  A ``ShippedFamily`` binds from that record and the cached derivation (``symbolic.entries``):
no SymPy import, no catalog module (~0.3 s of a process that asks a catalog question).  Everything else (the
densities, the spec, the transforms that are not recorded) is the catalog family's, built by SymPy on first use.

The records hold a hash of the sources that shape them (the catalog modules, the ``Family`` constructor, the
transforms, the derivation's code version): where the sources differ (an edited checkout whose records were not
written again), no record is used and every family takes the SymPy path.  Records are read from the package only,
never from the cache directory.
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
from pathlib import Path

from ..errors import ParameterError
from ..symbolic import entries
from . import catalog
from .family import Family, keep_derivation, loaded_derivation

#: the file of records in the catalog's ``_derived`` folder
RECORDS = "records.json"
#: mechkit's sources (relative to the package) that shape a record, besides the catalog modules
SOURCES = ("laws/family.py", "laws/constants.py", "laws/shipped.py", "symbolic/spec.py", "symbolic/parse.py",
           "transforms/subsampling.py", "transforms/replace.py", "relations.py")
#: the constant a record may carry: the complement 1 - r of a sampling rate r
COMPLEMENT = "complement"
#: the assumptions of a parameter a record keeps (what binding reads of a SymPy Symbol)
FLAGS = ("is_integer", "is_positive", "is_nonnegative", "is_negative")


def sources_hash() -> str:
    """Hash of the sources that shape the records (module docstring) and of the derivation's code version.

    Returns
    -------
    A hex digest; ``_prederive`` writes it into the records, and a process uses them only where it matches.
    """
    root = Path(__file__).resolve().parent.parent
    paths = [root / s for s in SOURCES] + sorted(Path(catalog.prederived_dir()).parent.glob("*.py"))
    h = hashlib.sha256(entries.code_version().encode())
    for p in paths:
        h.update(b"\0" + p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def records() -> dict:
    """The shipped records by reference ("gaussian", "gaussian/poisson/add_remove"...), or {} where there are none
    or they were written for other sources (module docstring).

    Returns
    -------
    A dict of records (read once per process).
    """
    try:
        data = json.loads((Path(catalog.prederived_dir()) / RECORDS).read_text())
        if data.get("sources") != sources_hash():
            return {}
        return dict(data["families"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def reference(name: str, scheme: str | None = None, relation: str | None = None) -> str:
    """A record's reference: the catalog name, then the scheme and relation of a subsampled family.

    Parameters
    ----------
    name : the catalog module's name.
    scheme, relation : a subsampled family's sampling scheme and relation (both, or neither).

    Returns
    -------
    E.g. "gaussian" or "gaussian/poisson/add_remove".
    """
    return name if scheme is None else f"{name}/{scheme}/{relation}"


_SHIPPED = {}


def shipped(ref: str, via: tuple | None = None) -> Family | None:
    """The ``ShippedFamily`` of the record ``ref`` (one object per record and process), or None where there is no
    current record.

    Parameters
    ----------
    ref : a record's reference (``reference``).
    via : for a subsampled family, (subsampled_family, base family, scheme, relation): how its SymPy form is made
        (``ShippedFamily.real``) and how it pickles.

    Returns
    -------
    The family, or None.
    """
    if ref not in _SHIPPED:
        rec = records().get(ref)
        try:
            _SHIPPED[ref] = None if rec is None else ShippedFamily(ref, rec, via)
        except (KeyError, TypeError, ValueError):  # a malformed record: the SymPy path serves
            _SHIPPED[ref] = None
    return _SHIPPED[ref]


def convenience(name: str) -> object:
    """``mk.<name>``: the catalog's convenience function, binding the family from its record where it has a current
    one (no SymPy), else the catalog module's (``catalog.convenience``).

    Parameters
    ----------
    name : one of ``catalog.names()``.

    Returns
    -------
    The function ``name(...)`` returning the bound ``Mechanism``; the same signature and docstring either way.

    Raises
    ------
    ModuleNotFoundError : no such catalog module.
    """
    rec = records().get(name)
    fam = shipped(name) if rec is not None and "signature" in rec else None
    if fam is None:
        return catalog.convenience(name)
    sig = rec["signature"]
    return catalog.make_function(name, sig["required"], sig["optional"], rec["defaults"], sig["doc"], fam)


def family(name: str) -> Family:
    """The family of the catalog mechanism ``name`` as binding takes it: its ``ShippedFamily`` where its record is
    current, else the catalog module's ``family``.

    Parameters
    ----------
    name : one of ``catalog.names()``.

    Returns
    -------
    A ``Family`` (the same parameters, key and answers either way); also what a pickled catalog ``ShippedFamily``
    becomes.

    Raises
    ------
    ModuleNotFoundError : no such catalog module.
    """
    return shipped(name) or catalog.catalog(name).family


class Parameter:
    """A parameter's name and assumptions, as a record gives them (what binding reads of a SymPy Symbol)."""

    __slots__ = ("name", *FLAGS)

    def __init__(self, name, flags):
        self.name = name
        for k in FLAGS:
            setattr(self, k, bool(flags.get(k)))

    def __repr__(self):
        return self.name


class ShippedFamily(Family):
    """A catalog family bound from its record (module docstring): its name, relation, parameters, ranges, defaults,
    constants and derivation key come from the record; any other attribute (``p``, ``q``, ``var``, ``spec``,
    ``constants``...) is the catalog family's (``real``), built by SymPy on first use."""

    def __init__(self, ref: str, record: dict, via: tuple | None = None) -> None:  # no Family.__init__: no SymPy
        self._ref, self._real, self._via = ref, None, via
        self.name, self.relation, self.one_sided = record["name"], record["relation"], bool(record["one_sided"])
        self.parameters = tuple(Parameter(n, f) for n, f in record["parameters"])
        self.constraints = {k: tuple(v) for k, v in record["constraints"].items()}
        self.defaults = dict(record["defaults"])
        self._complements = [of for _, (kind, of) in record["constants"] if kind == COMPLEMENT]
        if len(self._complements) != len(record["constants"]):
            raise ValueError(f"record {ref}: a constant that is not a complement")
        self._loaded, self._key, self._constant_fns = None, record["key"], []

    def __getattr__(self, name):
        if name.startswith("__") or name in ("_ref", "_real", "_via", "_loaded", "_key"):
            raise AttributeError(name)
        return getattr(self.real, name)

    def __reduce__(self):
        if self._via is None:
            return family, (self._ref,)
        make, base, scheme, relation = self._via
        return make, (base, scheme, relation)

    @property
    def real(self) -> Family:
        """The catalog family this record describes, built by SymPy (once)."""
        if self._real is None:
            if self._via is None:
                self._real = catalog.catalog(self._ref).family
            else:
                make, base, scheme, relation = self._via
                self._real = make(base.real, scheme, relation)
        return self._real

    def subsampled(self, scheme: str, relation: str, make: object) -> Family | None:
        """The shipped family of this family subsampled by ``scheme`` under ``relation``, or None without a record.

        Parameters
        ----------
        scheme, relation : as ``subsampled_family``'s (checked by it).
        make : ``subsampled_family`` itself (this layer does not import the transforms): what makes the family's
            SymPy form, and what it pickles as.

        Returns
        -------
        The ``ShippedFamily``, or None.
        """
        if self._via is not None:
            return None
        return shipped(reference(self._ref, scheme, relation), (make, self, scheme, relation))

    def _theta(self, values):
        import mpmath
        import numpy as np

        theta = [values[s.name] for s in self.parameters]
        for of in self._complements:  # as laws.constants.constant_fn evaluates 1 - r: mpmath at 50 digits
            with mpmath.workdps(50):
                theta.append(float(1 - mpmath.mpf(values[of])))
            if not math.isfinite(theta[-1]):
                raise ParameterError(f"the constant 1 - {of} is not finite at {values}")
        return np.array(theta, dtype=float)

    def _load(self) -> bool:
        """Load the derivation from the cache or the shipped entry without SymPy; False where neither serves."""
        if self._loaded is None:
            hit = loaded_derivation(self._key)
            if hit is None:
                hit = entries.load_shipped(self._key, catalog.prederived_dir())
                if hit is None:
                    return False
                hit[2].LABEL = f"the family {self.name!r}"
                hit = keep_derivation(self._key, hit)
            self._loaded = hit
        return True

    def _derivation_pending(self):
        return not self._load()

    def derive(self, _screened: bool = False) -> Family:
        """Load the derivation (``Family.derive``): from the cache or the shipped entry, else the catalog family's."""
        if not self._load():
            self._loaded = self.real.derive(_screened)._loaded
        return self

    def __call__(self, *args: object, **params: float):
        """Bind as ``Family.__call__``; where the derivation cannot be loaded without SymPy, the catalog family binds
        (its screen and derivation)."""
        if not self._load():
            return self.real(*args, **params)
        return super().__call__(*args, **params)
