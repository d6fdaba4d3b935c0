"""mechkit: differential-privacy accounting derived from the densities of a mechanism.

The pipeline, one folder per stage (``docs/architecture.md``): ``symbolic`` (specification -> SymPy derivation ->
generated code), ``engine`` (compiled numerics), ``laws`` (families, mechanisms, PLRVs, the catalog),
``transforms`` (sampling schemes), ``accountants`` (FFT, SPA, Edgeworth, RDP, GDP), ``composition`` (the query
front end) and ``individual`` (per-example accounting).
"""
from __future__ import annotations

# before anything compiled is imported: Numba needs a writable cache location (a temporary one, with a warning)
from .symbolic import codegen as _codegen

_codegen.ensure_numba_cache()

from . import individual
from .accountants import gdp, rdp
from .composition import Composition, compose
from .errors import DerivationError, MechkitError, NumericalLimitError, ParameterError, SpecificationError
from .estimate import Estimate, EstimateArray
from .individual import (AdaptiveGDPFilter, GDPFilter, GDPOdometer, IndividualPLDAccountant, RDPFilter,
                         StateFileError)
from .individual import pld as individual_pld
from .laws import catalog as _catalog
from .laws.catalog import catalog
from .laws.family import Family, Mechanism
from .laws.plrv import PLRV
from .transforms import subsample, subsampled_family

__version__ = "0.1.0"

#: the catalog's mechanisms (the modules of the ``mechanisms/`` folder); each is also ``mk.<name>(...)``
CATALOG = _catalog.names()
for _name in CATALOG:
    globals()[_name] = _catalog.convenience(_name)
del _name

__all__ = ["compose", "Composition", "Estimate", "EstimateArray", "rdp", "Family", "Mechanism", "PLRV", "subsample",
           "subsampled_family", "gdp", "catalog", *CATALOG, "MechkitError", "SpecificationError",
           "ParameterError", "DerivationError", "NumericalLimitError", "individual", "GDPFilter",
           "AdaptiveGDPFilter", "GDPOdometer", "RDPFilter", "StateFileError", "individual_pld",
           "IndividualPLDAccountant"]
