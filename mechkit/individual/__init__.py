"""Individual (per-example) accounting.

``state``: argument checks, the checksummed state file and ``load``; ``conversions``: per-example mu-GDP arithmetic;
``filters``: the GDP filter, adaptive filter and odometer and the Feldman-Zrnic RDP filter; ``pld``: individual
PLDs for Poisson-subsampled DP-SGD.
"""
from .conversions import (
                          composed_mu,
                          delta_from_mu,
                          epsilon_from_mu,
                          mu_from_epsilon,
                          mu_from_norms,
                          rdp_epsilon_from_mu,
)
from .filters import AdaptiveGDPFilter, GDPFilter, GDPOdometer, RDPFilter
from .pld import IndividualPLDAccountant, effective_sigma
from .state import StateFileError, load

__all__ = ["GDPFilter", "AdaptiveGDPFilter", "GDPOdometer", "RDPFilter", "StateFileError", "mu_from_norms",
           "composed_mu", "mu_from_epsilon", "epsilon_from_mu", "delta_from_mu", "rdp_epsilon_from_mu", "load",
           "IndividualPLDAccountant", "effective_sigma"]
