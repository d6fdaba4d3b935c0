"""mechkit: differential-privacy accounting derived from the densities of a mechanism.

The pipeline, one folder per stage (``docs/architecture.md``): ``symbolic`` (specification -> SymPy derivation ->
generated code), ``engine`` (compiled numerics), ``laws`` (families, mechanisms, PLRVs, the catalog),
``transforms`` (sampling schemes), ``accountants`` (FFT, SPA, Edgeworth, RDP, GDP), ``composition`` (the query
front end) and ``individual`` (per-example accounting); ``plot`` draws a run's curves (matplotlib, the ``plot``
extra); ``sweeps`` answers a grid of parameters (``mk.sweep``), serially or on any ``concurrent.futures`` executor.
"""
from __future__ import annotations

import importlib

from .errors import (DerivationError, MechkitError, MechkitWarning, NumericalLimitError, ParameterError,
                     SpecificationError)
from .laws import catalog as _catalog

#: the package's version, in this one place (pyproject.toml reads it: ``[tool.setuptools.dynamic]``)
__version__ = "0.1.0"

#: public name -> (module, attribute; None for the module itself).  ``import mechkit`` loads none of them: each is
#: imported on first use, so the command line, the catalog's names and the errors come without NumPy's heavier
#: companions (SymPy, SciPy, Numba) or a compiled engine.
_LAZY = {
    "compose": ("composition", "compose"), "Composition": ("composition", "Composition"),
    "PrivacyCurve": ("curves", "PrivacyCurve"), "load_curve": ("curves", "load_curve"),
    "CurveFileError": ("curves", "CurveFileError"),
    "Estimate": ("estimate", "Estimate"), "EstimateArray": ("estimate", "EstimateArray"),
    "Family": ("laws.family", "Family"), "Mechanism": ("laws.family", "Mechanism"), "PLRV": ("laws.plrv", "PLRV"),
    "catalog": ("laws.catalog", "catalog"),
    "subsample": ("transforms", "subsample"), "subsampled_family": ("transforms", "subsampled_family"),
    "dpsgd": ("training", "dpsgd"), "calibrate": ("calibration", "calibrate"),
    "Calibration": ("calibration", "Calibration"),
    "replace_one": ("transforms", "replace_one"), "with_relation": ("transforms", "with_relation"),
    "gdp": ("accountants.gdp", None), "rdp": ("accountants.rdp", None), "fdp": ("fdp", None),
    "plot": ("plot", None), "progress": ("progress", None),
    "individual": ("individual", None), "individual_pld": ("individual.pld", None),
    "GDPFilter": ("individual", "GDPFilter"), "AdaptiveGDPFilter": ("individual", "AdaptiveGDPFilter"),
    "GDPOdometer": ("individual", "GDPOdometer"), "RDPFilter": ("individual", "RDPFilter"),
    "StateFileError": ("individual", "StateFileError"),
    "IndividualPLDAccountant": ("individual", "IndividualPLDAccountant"),
    "composition": ("composition", None), "laws": ("laws", None), "accountants": ("accountants", None),
    "sweep": ("sweeps", "sweep"), "SweepResult": ("sweeps", "SweepResult"),
    "tabulated": ("laws.tabulated", "tabulated"), "tabulated_losses": ("laws.tabulated", "tabulated_losses"),
    "TabulatedMechanism": ("laws.tabulated", "TabulatedMechanism"),
    "BoundedRange": ("selection", "BoundedRange"), "selection": ("selection", None),
}

#: the catalog's mechanisms (the modules of the ``mechanisms/`` folder); each is also ``mk.<name>(...)``
CATALOG = _catalog.names()


def __getattr__(name):
    if name in _LAZY:
        module, attr = _LAZY[name]
        mod = importlib.import_module(f"{__name__}.{module}")
        value = mod if attr is None else getattr(mod, attr)
    elif name in CATALOG:
        value = importlib.import_module(f"{__name__}.laws.shipped").convenience(name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(CATALOG))


__all__ = ["compose", "Composition", "Estimate", "EstimateArray", "rdp", "Family", "Mechanism", "PLRV", "subsample",
           "subsampled_family", "replace_one", "with_relation", "gdp", "catalog", *CATALOG, "MechkitError",
           "SpecificationError",
           "ParameterError", "DerivationError", "NumericalLimitError", "individual", "GDPFilter",
           "AdaptiveGDPFilter", "GDPOdometer", "RDPFilter", "StateFileError", "individual_pld",
           "IndividualPLDAccountant", "dpsgd", "calibrate", "Calibration", "PrivacyCurve", "MechkitWarning", "fdp",
           "load_curve", "CurveFileError", "plot", "sweep", "SweepResult", "tabulated", "tabulated_losses",
           "TabulatedMechanism", "progress"]
