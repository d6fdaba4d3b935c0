"""mechkit: differential-privacy accounting derived from the densities of a mechanism."""
from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

from . import gdp, individual, individual_pld, rdp
from .composition import Composition, compose
from .estimate import Estimate, EstimateArray
from .errors import (DerivationError, MechkitError, NumericalLimitError, ParameterError,
                     SpecificationError)
from .family import PLRV, Family, Mechanism
from .individual import AdaptiveGDPFilter, GDPFilter, GDPOdometer, RDPFilter, StateFileError
from .individual_pld import IndividualPLDAccountant
from .transforms import subsample, subsampled_family

__version__ = "0.1.0"


def catalog(name):
    """The catalog module ``name`` (``mechanisms/<name>.py``, shipped as ``mechkit.mechanisms.<name>``)."""
    try:
        return importlib.import_module(f"mechkit.mechanisms.{name}")
    except ModuleNotFoundError as exc:
        if exc.name not in ("mechkit.mechanisms", f"mechkit.mechanisms.{name}"):
            raise
    # running from a source tree without installation: the catalog is the top-level folder `mechanisms/`
    src = Path(__file__).resolve().parent.parent / "mechanisms"
    if "mechkit.mechanisms" not in sys.modules:
        spec = importlib.util.spec_from_file_location("mechkit.mechanisms", src / "__init__.py",
                                                      submodule_search_locations=[str(src)])
        mod = importlib.util.module_from_spec(spec)
        sys.modules["mechkit.mechanisms"] = mod
        spec.loader.exec_module(mod)
    return importlib.import_module(f"mechkit.mechanisms.{name}")


CATALOG = ("gaussian", "laplace", "randomized_response", "discrete_laplace", "discrete_gaussian")


def gaussian(sigma, sensitivity=1.0):
    """Gaussian mechanism N(sensitivity, sigma^2) vs N(0, sigma^2)."""
    return catalog("gaussian").family(sigma=sigma, sensitivity=sensitivity)


def laplace(scale, sensitivity=1.0):
    """Laplace mechanism Lap(sensitivity, scale) vs Lap(0, scale)."""
    return catalog("laplace").family(scale=scale, sensitivity=sensitivity)


def randomized_response(epsilon):
    """Binary randomized response with parameter epsilon."""
    return catalog("randomized_response").family(epsilon=epsilon)


def discrete_laplace(scale, sensitivity=1):
    """Discrete Laplace on the integers, pmf proportional to exp(-|k - loc| / scale)."""
    return catalog("discrete_laplace").family(scale=scale, sensitivity=sensitivity)


def discrete_gaussian(sigma, sensitivity=1):
    """Discrete Gaussian on the integers, pmf proportional to exp(-(k - loc)^2 / (2 sigma^2))."""
    return catalog("discrete_gaussian").family(sigma=sigma, sensitivity=sensitivity)


__all__ = ["compose", "Composition", "Estimate", "EstimateArray", "rdp", "Family", "Mechanism", "PLRV", "subsample", "subsampled_family", "gdp", "catalog", "gaussian",
           "laplace", "randomized_response", "discrete_laplace", "discrete_gaussian", "MechkitError",
           "SpecificationError", "ParameterError", "DerivationError", "NumericalLimitError", "individual",
           "GDPFilter", "AdaptiveGDPFilter", "GDPOdometer", "RDPFilter", "StateFileError", "individual_pld",
           "IndividualPLDAccountant"]
