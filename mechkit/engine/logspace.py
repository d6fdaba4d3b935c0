"""NumPy log-space helpers shared by the laws and the accountants."""
from __future__ import annotations

import math

import numpy as np


def log1mexp(x):
    """log(1 - e^x) for arrays x <= 0, accurate on both sides of -log 2 (Maechler)."""
    return np.where(x > -math.log(2), np.log(-np.expm1(x)), np.log1p(-np.exp(x)))
