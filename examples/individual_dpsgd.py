"""Individual PLD accounting and the approximative filter in DP-SGD with Poisson sampling (mechkit.individual_pld).

Run:  python examples/individual_dpsgd.py            (about ten seconds; plain NumPy)

DP-SGD on the synthetic logistic regression of examples/individual_dpgd.py (N = 2000 examples, d = 10): every step
samples each example with probability Q, clips the sampled per-example gradients at C and adds Gaussian noise of
standard deviation SIGMA * C to their sum.  Example i's step is dominated by ``subsample(gaussian(SIGMA C / c_i), Q)``
with c_i its clipped gradient norm at the current model (sampled or not: that is what Poisson subsampling's
guarantee is about), so the accountant takes every example's gradient norm at every step.

A worst-case accountant stops after T_WORST steps.  The filter gets the budget mu of T_WORST worst-case steps (the
mu-GDP fit of Section 5) and stops each example when its own fitted mu would exceed it; examples with small gradients
keep training until T_MAX.  At the end every example has its individual epsilon from its own PLD (certified upper
bound); all of their privacy curves lie below the budget's mu-GDP curve (for delta >= fit_delta_min), whose epsilon is
somewhat above the worst case's own PLD epsilon: the GDP fit is the price of the approximative filter.
"""
import tempfile
from pathlib import Path

import numpy as np

import mechkit as mk
from _common import logistic_data, show

N, D = 2000, 10
C = 1.0            # clipping bound
SIGMA = 1.0        # noise multiplier
Q = 0.05           # Poisson sampling rate (expected batch 100)
T_WORST = 60       # steps a worst-case analysis allows
T_MAX = 150        # steps we are willing to run with the individual filter
LR = 0.5
DELTA = 1e-5
ACCOUNTING = dict(sigma_ratio=1.1, eps_error=0.02)  # a coarser grid than the defaults keeps the example quick

X, y, X_test, y_test, w_true = logistic_data(N, D)


def grads(w):
    """Per-example gradients of the logistic loss and their norms (every example: the accountant needs them)."""
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    g = (p - y)[:, None] * X
    return g, np.linalg.norm(g, axis=1)


def accuracy(w):
    return float(np.mean((X_test @ w > 0) == (y_test > 0.5)))


def dpsgd(steps, acc, seed=1, checkpoint=None):
    noise = np.random.default_rng(seed)
    w = np.zeros(D)
    for t in range(steps):
        g, norms = grads(w)
        active = acc.step(norms)                                  # accounts this step; with a budget, filters
        if not active.any():
            break
        sampled = active & (noise.random(N) < Q)                  # Poisson sampling among the active examples
        clipped = g[sampled] * np.minimum(1.0, C / np.maximum(norms[sampled], 1e-300))[:, None]
        w -= LR * (clipped.sum(axis=0) + noise.normal(0.0, SIGMA * C, D)) / (Q * N)
        if checkpoint is not None and t == steps // 2:            # the accountant survives a restart
            acc.save(checkpoint)
            acc = mk.individual.load(checkpoint)
    return w, acc


worst = mk.compose((mk.subsample(mk.gaussian(SIGMA), Q), T_WORST)).epsilon(DELTA, eps_error=0.02, delta_error=1e-10)
probe = mk.IndividualPLDAccountant(1, Q, SIGMA, C, max_steps=T_WORST, **ACCOUNTING)
for _ in range(T_WORST):
    probe.step([C])
budget = float(probe.fitted_mu()[0])
print(f"N = {N}, d = {D}, clip C = {C}, noise multiplier {SIGMA}, sampling rate q = {Q}, delta = {DELTA}")
print(f"worst case: {T_WORST} steps, epsilon = {float(worst):.4f} (certified <= {worst.upper:.4f}); "
      f"fitted mu-GDP of the worst case {budget:.4f}")

w_wc, plain = dpsgd(T_WORST, mk.IndividualPLDAccountant(N, Q, SIGMA, C, max_steps=T_WORST, **ACCOUNTING))
eps_plain = plain.epsilon(DELTA)
print(f"without filter, after {T_WORST} steps: individual epsilon min {eps_plain.min():.4f}, median "
      f"{np.median(eps_plain):.4f}, max {eps_plain.max():.4f}; test accuracy {accuracy(w_wc):.4f}")

with tempfile.TemporaryDirectory() as tmp:
    filt = mk.IndividualPLDAccountant(N, Q, SIGMA, C, max_steps=T_MAX, budget_mu=budget, **ACCOUNTING)
    w_f, filt = dpsgd(T_MAX, filt, checkpoint=Path(tmp) / "accountant.npz")
eps = filt.epsilon(DELTA)
stopped = filt.deactivated_at
left = stopped[stopped > 0]
print(f"with filter, {filt.steps} steps: test accuracy {accuracy(w_f):.4f}; examples left out: {left.size} of {N}"
      f" (between steps {left.min() if left.size else '-'} and {left.max() if left.size else '-'}), still active: "
      f"{filt.n_active}")
print(f"individual epsilon: min {eps.min():.4f}, median {np.median(eps):.4f}, max {eps.max():.4f} "
      f"(certified upper bounds up to {eps.upper.max():.4f}); largest fitted mu {filt.fitted_mu().max():.4f} "
      f"<= {budget:.4f}")
eps_gdp = mk.gdp.epsilon(budget, DELTA)
print(f"every example's curve lies below {budget:.4f}-GDP's (epsilon {eps_gdp:.4f}; the GDP fit is looser than the "
      f"worst case's own PLD at this delta); the filter's guarantee (Section 5: {budget:.4f}-GDP's RDP, converted) "
      f"is epsilon = {filt.budget_epsilon(DELTA):.4f}")
assert np.all(eps.upper <= eps_gdp + 1e-9) and filt.fitted_mu().max() <= budget

show(eps, float(worst), "individual_dpsgd.png", r"individual $\varepsilon$ ($\delta = 10^{-5}$), PLD accountant",
     extra=(eps_plain, f"{T_WORST} steps, no filter"), delta=DELTA)
