"""Transforms that map a mechanism to a new symbolic family, so that the same derivation applies:
Poisson subsampling today (``subsampling``), other sampling schemes next."""
from .subsampling import subsample, subsampled_family

__all__ = ["subsample", "subsampled_family"]
