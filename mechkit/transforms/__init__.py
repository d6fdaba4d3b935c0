"""Transforms that map a mechanism to a new symbolic family, so that the same derivation applies: sampling schemes
(``subsampling``: Poisson and without replacement) and relations (``replace``: replace_one, with_relation)."""
from .replace import replace_one, replace_one_family, with_relation
from .subsampling import subsample, subsampled, subsampled_family

__all__ = ["subsample", "subsampled", "subsampled_family", "replace_one", "replace_one_family", "with_relation"]
