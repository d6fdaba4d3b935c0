"""Individual (per-example) accounting: GDP filters, the odometer and the Feldman-Zrnic RDP filter with their
persistent state (``filters``), and individual PLDs for Poisson-subsampled DP-SGD (``pld``)."""
from .filters import (AdaptiveGDPFilter, GDPFilter, GDPOdometer, RDPFilter, StateFileError, composed_mu,
                      delta_from_mu, epsilon_from_mu, load, mu_from_epsilon, mu_from_norms, rdp_epsilon_from_mu)
from .filters import __all__ as _filters_all
from .pld import IndividualPLDAccountant, effective_sigma

__all__ = list(_filters_all) + ["IndividualPLDAccountant", "effective_sigma"]
