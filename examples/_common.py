"""Shared by the individual-accounting examples: the synthetic logistic regression and the epsilon histogram."""
from pathlib import Path

import numpy as np


def logistic_data(n, d, seed=0):
    """(X, y, X_test, y_test, w_true): n examples in d dimensions, heterogeneous norms, logistic-model labels."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.lognormal(0.0, 0.5, size=(n, 1))
    w_true = rng.normal(size=d)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-X @ w_true))).astype(float)
    X_test = rng.normal(size=(n, d)) * rng.lognormal(0.0, 0.5, size=(n, 1))
    y_test = (rng.random(n) < 1.0 / (1.0 + np.exp(-X_test @ w_true))).astype(float)
    return X, y, X_test, y_test, w_true


def show(eps, worst, png, xlabel, extra=None, delta=1e-5):
    """Print a 12-bin text histogram of ``eps`` and save a 40-bin PNG in the current working directory
    (``png``: file name), so running an example never writes into the checkout unless run from there.

    ``worst``: the worst-case epsilon (a dashed line); ``extra``: (values, label) drawn as an outline.
    """
    print(f"\nhistogram of individual epsilons (delta = {delta:g}):")
    top = max(float(np.max(eps)), float(worst)) * (1 + 1e-9)
    counts, edges = np.histogram(eps, bins=12, range=(0.0, top))
    width = 50 / max(counts.max(), 1)
    for c, lo, hi in zip(counts, edges[:-1], edges[1:]):
        print(f"  [{lo:5.3f}, {hi:5.3f})  {c:5d}  {'#' * int(round(c * width))}")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\n(matplotlib not installed: no PNG written)")
        return
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.hist(eps, bins=40, label="individual")
    if extra is not None:
        ax.hist(extra[0], bins=40, histtype="step", color="k", label=extra[1])
    ax.axvline(worst, color="k", ls="--", label="worst case")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("examples")
    ax.legend()
    fig.tight_layout()
    out = Path.cwd() / png
    fig.savefig(out, dpi=120)
    print(f"\nhistogram written to {out}")
