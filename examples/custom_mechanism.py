"""Define a mechanism nobody ships, by its densities, and account for it.

Run:  python examples/custom_mechanism.py

The logistic mechanism adds Logistic(0, b) noise to a query of sensitivity 1.  Writing its two densities
is all mechkit needs: the privacy loss, its inverse, the PLRV distribution and the CGF are derived.
"""
import numpy as np
import sympy as sp

import mechkit as mk

x = sp.Symbol("x", real=True)
b = sp.Symbol("b", positive=True)

logistic = mk.Mechanism.from_densities(
    p=sp.exp(-x / b) / (b * (1 + sp.exp(-x / b)) ** 2),              # with the individual
    q=sp.exp(-(x - 1) / b) / (b * (1 + sp.exp(-(x - 1) / b)) ** 2),  # without
    var=x, name="logistic")

print("privacy loss    L(x) =", logistic.privacy_loss)
for key, inverses in logistic.inverse_loss:
    print("inverse         x(s) =", inverses[0])
print("CGF             ", logistic.cgf if logistic.cgf is not None else "compiled quadrature (no closed form)")

m = logistic(b=2.0)
lo, hi = m.remove.support
print(f"loss support    ({lo:.6f}, {hi:.6f})   (pure DP: epsilon = {hi:.6f})")
s = np.linspace(lo, hi, 5)[1:-1]
print("PLRV CDF        ", dict(zip(np.round(s, 4), np.round(m.remove.cdf(s), 6))))
print("log-survival    ", m.remove.logsf(hi - 1e-9))
print("cumulants at 0  ", np.round(m.remove.cumulants(0.0), 8))
print("RDP(alpha = 4)  ", m.rdp(4.0))
print("delta(0.2)      ", m.delta(0.2))
print("epsilon(1e-6)   ", m.epsilon(1e-6))

# the same mechanism, Poisson-subsampled: a new symbolic family, same derivation
sub = mk.subsample(m, q=0.05)
print("subsampled, q = 0.05:  epsilon(1e-6) =", sub.epsilon(1e-6))
print("RDP bound for 1000 subsampled steps at delta = 1e-6:", float(mk.rdp.epsilon([(sub, 1000)], 1e-6)))
