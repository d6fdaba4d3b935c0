"""Independent references for the tests: they share no code with mechkit (mpmath, NumPy and SciPy only).

``mpmath_laws``: the privacy-loss laws, CDFs, CGFs and curves of the catalog mechanisms and a few user-defined ones
at mpmath precision; ``contour``: delta(eps) of compositions of the subsampled Gaussian by a contour integral;
``lattice``: exact binomial sums and lattice convolutions for discrete losses, certified lattice brackets for
continuous ones and heterogeneous mixes; ``contour_mix``: delta(eps) of compositions of different mechanisms
(Gaussian, subsampled Gaussian, Laplace and two-scale Laplace pairs, subsampled Laplace, two-point laws) by a
contour integral of closed-form or quadrature mgfs, both directions.  Each is self-checked against closed forms
(tests/test_reference_selfcheck.py, tests/accountants/test_reference_contour.py,
tests/accountants/test_soundness_references.py).
"""
