"""Individual privacy filtering in DP-GD (Koskela, Tobaben, Honkela; mechkit.individual).

Run:  python examples/individual_dpgd.py            (a few seconds; plain NumPy)

Full-batch DP-GD on a synthetic logistic regression (N = 2000 examples, d = 10).  Each step releases the sum of the
per-example gradients clipped at C plus Gaussian noise of standard deviation sigma * C, so example i's step is
mu_i = ||g_i||_clipped / (sigma C)-GDP.  A worst-case accountant would stop after T_WORST steps (every example at
the clip bound).  The individual GDP filter gets the same budget B = sqrt(T_WORST) / sigma but charges each example
only what it spends: examples with small gradients keep training after T_WORST, the others drop out exactly when
they have spent B (their last gradient is scaled so that sum mu_i^2 = B^2).  Every example ends with an individual
epsilon <= the worst-case epsilon, which all of them are guaranteed.
"""
import math
import tempfile
from pathlib import Path

import numpy as np

from _common import logistic_data, show
from mechkit import individual as ind

N, D = 2000, 10
C = 1.0            # clipping bound
SIGMA = 10.0       # noise multiplier: the noise on the gradient sum has standard deviation SIGMA * C
T_WORST = 50       # steps a worst-case analysis allows
T_MAX = 200        # steps we are willing to run with the individual filter
LR = 2.0
DELTA = 1e-5

X, y, X_test, y_test, w_true = logistic_data(N, D)


def clipped_grads(w):
    """Per-example gradients of the logistic loss, their norms, and the gradients clipped at C."""
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    g = (p - y)[:, None] * X
    norms = np.linalg.norm(g, axis=1)
    return norms, g * np.minimum(1.0, C / np.maximum(norms, 1e-300))[:, None]


def accuracy(w):
    return float(np.mean((X_test @ w > 0) == (y_test > 0.5)))


def dpgd(steps, filt=None, seed=1, checkpoint=None):
    noise = np.random.default_rng(seed)
    w = np.zeros(D)
    for t in range(steps):
        norms, g = clipped_grads(w)
        if filt is not None:
            mu = ind.mu_from_norms(norms, C, SIGMA * C)              # this step's per-example GDP parameters
            active, scale = filt.step(mu, return_scale=True)
            if not active.any():
                break
            g = g * scale[:, None]                                   # 0 for stopped examples, < 1 on their last step
            if checkpoint is not None and t == steps // 2:           # the accountant survives a restart
                filt.save(checkpoint)
                filt = ind.load(checkpoint)
        w -= LR * (g.sum(axis=0) + noise.normal(0.0, SIGMA * C, D)) / N
    return w, filt


budget = math.sqrt(T_WORST) / SIGMA
eps_worst = ind.epsilon_from_mu(budget, DELTA)
print(f"N = {N}, d = {D}, clip C = {C}, noise multiplier sigma = {SIGMA}, delta = {DELTA}")
print(f"worst case: {T_WORST} steps, mu = sqrt({T_WORST})/sigma = {budget:.4f}, epsilon = {eps_worst:.4f}")

w_wc, _ = dpgd(T_WORST)
with tempfile.TemporaryDirectory() as tmp:
    w_f, filt = dpgd(T_MAX, ind.GDPFilter(N, budget_mu=budget), checkpoint=Path(tmp) / "filter.npz")
print(f"test accuracy: worst-case accounting ({T_WORST} steps) {accuracy(w_wc):.4f}, "
      f"individual filter ({filt.steps} steps) {accuracy(w_f):.4f}")

eps = filt.epsilon(DELTA)
assert np.all(eps <= eps_worst * (1 + 1e-12))
stopped = filt.halted_at
print(f"examples that used their whole budget: {np.count_nonzero(stopped > 0)} of {N} "
      f"(stopped between steps {stopped[stopped > 0].min() if np.any(stopped > 0) else '-'} and "
      f"{stopped.max() if np.any(stopped > 0) else '-'}); still active after {filt.steps} steps: {filt.n_active}")
print(f"individual epsilon: min {eps.min():.4f}, median {np.median(eps):.4f}, max {eps.max():.4f} "
      f"(guarantee for everyone: {filt.budget_epsilon(DELTA):.4f})")

show(eps, eps_worst, "individual_dpgd.png", r"individual $\varepsilon$ ($\delta = 10^{-5}$)", delta=DELTA)
