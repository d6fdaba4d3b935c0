"""Transforms that map a mechanism to a new symbolic family, so that the same derivation applies: sampling schemes
(``subsampling``: Poisson and without replacement) and the replace-one relation (``replace``)."""
from .replace import replace_one, replace_one_family
from .subsampling import subsample, subsampled_family

__all__ = ["subsample", "subsampled_family", "replace_one", "replace_one_family"]
