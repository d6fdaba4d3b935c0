"""Certified intervals of the FFT, SPA and Edgeworth accountants against independent truths.

The truths come from tests/references/lattice.py (NumPy, SciPy and mpmath only; it imports nothing from
mechkit): exact binomial sums for two-point privacy losses (randomized response, discrete Laplace, subsampled
randomized response), exact lattice convolutions for the discrete Gaussian, and certified lattice brackets
(loss rounded up / down under a coupling) for the Laplace and subsampled Laplace mechanisms and a heterogeneous
mix.  Each reference is self-checked below against closed forms or direct summation over outputs before it is
used.  Every reference is a bracket [truth_lo, truth_hi] of the max over both directions.

Each accountant answer must contain the truth:  est.lower <= truth_hi  and  est.upper >= truth_lo.

Widths (so that an interval such as [0, inf] cannot pass):

* FFT (Theorem 5.5 of Gopi et al., as mechkit implements it): the discretised curve is within eps_error of the
  truth after moving delta by delta_error, so  upper <= eps_true(d - 2 de - s) + 2 eps_error  and
  lower >= eps_true(d + 2 de + s) - 2 eps_error  (s: the floating-point and tail allowances the estimate
  reports), and the width is at most 2 eps_error + [eps_true(d - de - s) - eps_true(d + de + s)] + 2e-3.
  For delta(epsilon) queries:  upper <= delta_true(eps - 2 eps_error) + 2 de + s, and symmetrically.
* SPA and Edgeworth have no a-priori width; ``LIMITS`` holds, per cell and delta, how far each bound may sit
  from the truth (relative: over = upper / truth - 1, under = 1 - lower / truth), set at about 1.5x what was
  measured on 2026-11-25 (the measured values are in the comments).  A limit of 1.0 on ``under`` records a lower
  bound that was 0 or nearly so when measured; the upper side is then still bounded.  Such vacuous lower bounds
  are not always flagged: SPA reported ``reliable`` true with lower = 0 for the discrete Gaussian at 1e-12 and
  1e-30 and for discrete Laplace x50 at 1e-12; Edgeworth's "two-sided" lower bounds were 64-100% below the truth.

Documented refusals: the FFT composer raises a NumericalLimitError below its floating-point floor ("cannot be
certified"; README: "Below the floating-point floor of the grid (tiny delta) the FFT composer raises an error
that names the smallest certifiable delta").  The cells ask the FFT only at deltas where it answered when this
file was written; ``test_fft_refuses_tiny_delta_and_is_sound_just_above_its_floor`` asserts the refusal at 1e-12
and then checks the FFT at three times the delta it names.  In the parametrised cells a refusal is counted as a
skip only if it is that documented refusal and the named delta exceeds the one asked; no other refusal is
expected, and any other MechkitError fails the test.

Cells (accountant x mechanism) covered here:
  FFT:       discrete Laplace x50, x500; discrete Gaussian (sigma 1, 3) x100; RR x100, x2000; subsampled RR x300,
             x1000; Laplace x20; subsampled Laplace (q 0.1) x100; discrete Gaussian x30 + RR x20 + Laplace x10
  SPA:       the same, plus delta 1e-12 and 1e-30 (tiny delta) on every exact cell and 1e-12 on subsampled Laplace
  Edgeworth: the same cells at 1e-5 and 1e-9 / 1e-12
"""
from __future__ import annotations

import functools
import math
import re

import mpmath as mp
import numpy as np
import pytest
from hypothesis import Phase, event, given, settings, strategies as st
from scipy import integrate

import mechkit as mk
from tests.helpers import Reached
from tests.references import lattice as R

EPS_ERROR = 0.01          # the FFT composer's default
#: the delta named in the FFT composer's documented refusal below its floating-point floor
_SMALLEST = re.compile(r"smallest certifiable delta with these settings is about (\d*\.?\d+(?:[eE][+-]?\d+)?)")
DIRS = ("remove", "add")


# ------------------------------------------------------------------------------------------------------------
# The cells

def _dg(sigma, tail=1e-40):
    return functools.partial(R.discrete_gaussian, sigma, tail=tail)


def _two_point_lattice(laws):
    return lambda d: laws[d].to_lattice()


CELLS = {
    "dlap10_x50": dict(
        compose=lambda: mk.compose((mk.discrete_laplace(10.0), 50)),
        ref=lambda: R.binomial_reference(R.discrete_laplace(10.0), 50),
        fft=(1e-5, 1e-9), spa=(1e-5, 1e-9, 1e-12, 1e-30), edgeworth=(1e-5, 1e-9), eps=(1.0, 2.0, 3.0)),
    "dlap20_x500": dict(
        compose=lambda: mk.compose((mk.discrete_laplace(20.0), 500)),
        ref=lambda: R.binomial_reference(R.discrete_laplace(20.0), 500),
        fft=(1e-5,), spa=(1e-5, 1e-12, 1e-30), edgeworth=(1e-5, 1e-12), eps=(2.0, 4.0, 6.0)),
    "dgauss1_x100": dict(
        compose=lambda: mk.compose((mk.discrete_gaussian(1.0), 100)),
        ref=lambda: R.lattice_reference([(_dg(1.0), 100)]),
        fft=(1e-5,), spa=(1e-5, 1e-12, 1e-30), edgeworth=(1e-5, 1e-12), eps=(60.0, 90.0)),
    "dgauss3_x100": dict(
        compose=lambda: mk.compose((mk.discrete_gaussian(3.0), 100)),
        ref=lambda: R.lattice_reference([(_dg(3.0), 100)]),
        fft=(1e-5, 1e-9), spa=(1e-5, 1e-12, 1e-30), edgeworth=(1e-5, 1e-12), eps=(10.0, 20.0, 30.0)),
    "rr05_x100": dict(
        compose=lambda: mk.compose((mk.randomized_response(0.5), 100)),
        ref=lambda: R.binomial_reference(R.randomized_response(0.5), 100),
        fft=(1e-5,), spa=(1e-5, 1e-12, 1e-30), edgeworth=(1e-5, 1e-12), eps=(20.0, 30.0)),
    "rr01_x2000": dict(
        compose=lambda: mk.compose((mk.randomized_response(0.1), 2000)),
        ref=lambda: R.binomial_reference(R.randomized_response(0.1), 2000),
        fft=(1e-5,), spa=(1e-5, 1e-12, 1e-30), edgeworth=(1e-5, 1e-12), eps=(15.0, 20.0)),
    "srr1_q01_x300": dict(
        compose=lambda: mk.compose((mk.subsample(mk.randomized_response(1.0), 0.1), 300)),
        ref=lambda: R.binomial_reference(R.subsampled_randomized_response(1.0, 0.1), 300),
        fft=(1e-5, 1e-9), spa=(1e-5, 1e-12, 1e-30), edgeworth=(1e-5, 1e-12), eps=(4.0, 8.0, 12.0)),
    "srr2_q005_x1000": dict(
        compose=lambda: mk.compose((mk.subsample(mk.randomized_response(2.0), 0.05), 1000)),
        ref=lambda: R.binomial_reference(R.subsampled_randomized_response(2.0, 0.05), 1000),
        fft=(1e-5,), spa=(1e-5, 1e-12, 1e-30), edgeworth=(1e-5,), eps=(15.0, 25.0)),
    "lap5_x20": dict(
        compose=lambda: mk.compose((mk.laplace(5.0), 20)),
        ref=lambda: R.lattice_reference([("half", functools.partial(R.laplace, 5.0, M=2000), 20)]),
        fft=(1e-5, 1e-9), spa=(1e-5, 1e-9), edgeworth=(1e-5, 1e-9), eps=(2.0, 3.0)),
    "slap2_q01_x100": dict(
        compose=lambda: mk.compose((mk.subsample(mk.laplace(2.0), 0.1), 100)),
        ref=lambda: R.lattice_reference([("half", functools.partial(R.subsampled_laplace, 2.0, 0.1, M=2000), 100)]),
        fft=(1e-5, 1e-9), spa=(1e-5, 1e-9, 1e-12), edgeworth=(1e-5, 1e-9), eps=(1.0, 2.0)),
    "mix_dg4x30_rr02x20_lap5x10": dict(
        compose=lambda: mk.compose((mk.discrete_gaussian(4.0), 30), (mk.randomized_response(0.2), 20),
                                   (mk.laplace(5.0), 10)),
        ref=lambda: R.lattice_reference([(_dg(4.0), 30), (_two_point_lattice(R.randomized_response(0.2)), 20),
                                         (functools.partial(R.laplace, 5.0, M=2000), 10)]),
        fft=(1e-5, 1e-9), spa=(1e-5, 1e-9), edgeworth=(1e-5, 1e-9), eps=(5.0, 8.0)),
}

# (cell, method, delta or "delta@eps") -> (max over, max under): over = upper/truth_hi - 1, under = 1 - lower/truth_lo.
# Limits: max(1.5 m, m + 0.005), 2 digits, for the values m measured on 2026-11-25 (comments: measured over / under;
# Edgeworth's details["interval"]; details["reliable"], T/F, per epsilon for delta queries).  An under-limit of 1.0
# records a lower bound that was 0 or nearly so; the upper side is still bounded.
LIMITS = {
    ('dlap10_x50', 'spa', 1e-05): (0.06, 0.17),  # measured 0.0401 / 0.115; reliable T
    ('dlap10_x50', 'spa', 1e-09): (0.033, 0.79),  # measured 0.0223 / 0.528; reliable T
    ('dlap10_x50', 'spa', 1e-12): (0.026, 1.0),  # measured 0.0175 / 1; reliable T
    ('dlap10_x50', 'spa', 1e-30): (0.005, 0.005),  # measured -8.88e-16 / 1.19e-13; reliable T
    ('dlap10_x50', 'edgeworth', 1e-05): (0.11, 1.0),  # measured 0.0747 / 1; upper only; reliable F
    ('dlap10_x50', 'edgeworth', 1e-09): (0.046, 1.0),  # measured 0.0308 / 1; upper only; reliable F
    ('dlap20_x500', 'spa', 1e-05): (0.016, 0.022),  # measured 0.0109 / 0.0148; reliable T
    ('dlap20_x500', 'spa', 1e-12): (0.012, 0.015),  # measured 0.00681 / 0.00951; reliable T
    ('dlap20_x500', 'spa', 1e-30): (0.0088, 0.015),  # measured 0.00376 / 0.0101; reliable T
    ('dlap20_x500', 'edgeworth', 1e-05): (0.14, 1.0),  # measured 0.0932 / 0.746; two-sided; reliable F
    ('dlap20_x500', 'edgeworth', 1e-12): (0.069, 1.0),  # measured 0.0462 / 0.844; two-sided; reliable F
    ('dgauss1_x100', 'spa', 1e-05): (0.029, 0.4),  # measured 0.0191 / 0.264; reliable T
    ('dgauss1_x100', 'spa', 1e-12): (0.017, 0.48),  # measured 0.0111 / 0.319; reliable T
    ('dgauss1_x100', 'spa', 1e-30): (0.012, 1.0),  # measured 0.00699 / 1; reliable T
    ('dgauss1_x100', 'edgeworth', 1e-05): (0.07, 0.97),  # measured 0.0468 / 0.644; two-sided; reliable T
    ('dgauss1_x100', 'edgeworth', 1e-12): (0.043, 1.0),  # measured 0.0288 / 0.727; two-sided; reliable T
    ('dgauss3_x100', 'spa', 1e-05): (0.04, 0.14),  # measured 0.0265 / 0.0914; reliable T
    ('dgauss3_x100', 'spa', 1e-12): (0.022, 1.0),  # measured 0.0145 / 1; reliable T
    ('dgauss3_x100', 'spa', 1e-30): (0.013, 1.0),  # measured 0.00777 / 1; reliable T
    ('dgauss3_x100', 'edgeworth', 1e-05): (0.1, 1.0),  # measured 0.0686 / 0.869; two-sided; reliable T
    ('dgauss3_x100', 'edgeworth', 1e-12): (0.052, 1.0),  # measured 0.0344 / 0.912; two-sided; reliable T
    ('rr05_x100', 'spa', 1e-05): (0.036, 0.11),  # measured 0.0241 / 0.0742; reliable T
    ('rr05_x100', 'spa', 1e-12): (0.028, 0.69),  # measured 0.0187 / 0.46; reliable T
    ('rr05_x100', 'spa', 1e-30): (0.005, 0.005),  # measured 7.76e-12 / 1.01e-13; reliable T
    ('rr05_x100', 'edgeworth', 1e-05): (0.081, 1.0),  # measured 0.0541 / 0.769; two-sided; reliable F
    ('rr05_x100', 'edgeworth', 1e-12): (0.039, 1.0),  # measured 0.0257 / 0.829; two-sided; reliable F
    ('rr01_x2000', 'spa', 1e-05): (0.0097, 0.011),  # measured 0.00473 / 0.00576; reliable T
    ('rr01_x2000', 'spa', 1e-12): (0.0079, 0.0089),  # measured 0.00294 / 0.00385; reliable T
    ('rr01_x2000', 'spa', 1e-30): (0.0071, 0.0075),  # measured 0.00208 / 0.0025; reliable T
    ('rr01_x2000', 'edgeworth', 1e-05): (0.092, 1.0),  # measured 0.0614 / 0.788; two-sided; reliable F
    ('rr01_x2000', 'edgeworth', 1e-12): (0.053, 1.0),  # measured 0.0355 / 0.852; two-sided; reliable F
    ('srr1_q01_x300', 'spa', 1e-05): (0.02, 0.03),  # measured 0.0132 / 0.0201; reliable T
    ('srr1_q01_x300', 'spa', 1e-12): (0.012, 0.02),  # measured 0.00683 / 0.0131; reliable T
    ('srr1_q01_x300', 'spa', 1e-30): (0.0096, 0.017),  # measured 0.00462 / 0.0114; reliable T
    ('srr1_q01_x300', 'edgeworth', 1e-05): (0.12, 1.0),  # measured 0.0786 / 0.857; two-sided; reliable F
    ('srr1_q01_x300', 'edgeworth', 1e-12): (0.064, 1.0),  # measured 0.043 / 0.911; two-sided; reliable F
    ('srr2_q005_x1000', 'spa', 1e-05): (0.018, 0.024),  # measured 0.0122 / 0.0163; reliable T
    ('srr2_q005_x1000', 'spa', 1e-12): (0.011, 0.016),  # measured 0.00612 / 0.0107; reliable T
    ('srr2_q005_x1000', 'spa', 1e-30): (0.0081, 0.012),  # measured 0.00311 / 0.00669; reliable T
    ('srr2_q005_x1000', 'edgeworth', 1e-05): (0.12, 1.0),  # measured 0.0811 / 0.854; two-sided; reliable F
    ('lap5_x20', 'spa', 1e-05): (0.078, 1.0),  # measured 0.0522 / 1; reliable F
    ('lap5_x20', 'spa', 1e-09): (0.0053, 0.005),  # measured 0.00026 / 1.11e-06; reliable T
    ('lap5_x20', 'edgeworth', 1e-05): (0.059, 1.0),  # measured 0.0393 / 1; upper only; reliable F
    ('lap5_x20', 'edgeworth', 1e-09): (0.005, 1.0),  # measured 1.16e-06 / 1; upper only; reliable F
    ('slap2_q01_x100', 'spa', 1e-05): (0.037, 0.064),  # measured 0.0247 / 0.0426; reliable T
    ('slap2_q01_x100', 'spa', 1e-09): (0.024, 0.058),  # measured 0.0161 / 0.0387; reliable T
    ('slap2_q01_x100', 'spa', 1e-12): (0.02, 0.069),  # measured 0.0136 / 0.0463; reliable T
    ('slap2_q01_x100', 'edgeworth', 1e-05): (0.15, 1.0),  # measured 0.101 / 1; upper only; reliable F
    ('slap2_q01_x100', 'edgeworth', 1e-09): (0.083, 1.0),  # measured 0.0553 / 1; upper only; reliable F
    ('mix_dg4x30_rr02x20_lap5x10', 'spa', 1e-05): (0.053, 0.23),  # measured 0.0351 / 0.152; reliable T
    ('mix_dg4x30_rr02x20_lap5x10', 'spa', 1e-09): (0.034, 0.54),  # measured 0.023 / 0.362; reliable T
    ('mix_dg4x30_rr02x20_lap5x10', 'edgeworth', 1e-05): (0.13, 1.0),  # measured 0.0853 / 0.997; two-sided; reliable F
    ('mix_dg4x30_rr02x20_lap5x10', 'edgeworth', 1e-09): (0.072, 1.0),  # measured 0.0482 / 0.998; two-sided; reliable F
    ('dlap10_x50', 'spa', 'delta@1'): (0.73, 0.63),  # measured 0.49 / 0.417; reliable T/T/T
    ('dlap10_x50', 'spa', 'delta@2'): (1.3, 1.0),  # measured 0.865 / 0.685; reliable T/T/T
    ('dlap10_x50', 'spa', 'delta@3'): (2.5, 1.0),  # measured 1.67 / 1; reliable T/T/T
    ('dlap10_x50', 'edgeworth', 'delta@1'): (1.9, 1.0),  # measured 1.25 / 1; upper only; reliable T/F/F
    ('dlap10_x50', 'edgeworth', 'delta@2'): (4.3, 1.0),  # measured 2.89 / 1; upper only; reliable T/F/F
    ('dlap10_x50', 'edgeworth', 'delta@3'): (6.3, 1.0),  # measured 4.21 / 1; upper only; reliable T/F/F
    ('dlap20_x500', 'spa', 'delta@2'): (0.21, 0.19),  # measured 0.138 / 0.13; reliable T/T/T
    ('dlap20_x500', 'spa', 'delta@4'): (0.33, 0.29),  # measured 0.218 / 0.196; reliable T/T/T
    ('dlap20_x500', 'spa', 'delta@6'): (0.48, 0.42),  # measured 0.323 / 0.278; reliable T/T/T
    ('dlap20_x500', 'edgeworth', 'delta@2'): (2.2, 1.0),  # measured 1.44 / 1; upper only; reliable T/F/F
    ('dlap20_x500', 'edgeworth', 'delta@4'): (4.9, 1.0),  # measured 3.27 / 1; upper only; reliable T/F/F
    ('dlap20_x500', 'edgeworth', 'delta@6'): (7.9, 1.0),  # measured 5.3 / 1; upper only; reliable T/F/F
    ('dgauss1_x100', 'spa', 'delta@60'): (0.96, 0.92),  # measured 0.642 / 0.613; reliable T/T
    ('dgauss1_x100', 'spa', 'delta@90'): (1.9, 1.0),  # measured 1.29 / 1; reliable T/T
    ('dgauss1_x100', 'edgeworth', 'delta@60'): (1.9, 1.0),  # measured 1.27 / 1; upper only; reliable T/T
    ('dgauss1_x100', 'edgeworth', 'delta@90'): (9.3, 1.0),  # measured 6.18 / 1; upper only; reliable T/T
    ('dgauss3_x100', 'spa', 'delta@10'): (0.84, 0.84),  # measured 0.559 / 0.557; reliable T/T/T
    ('dgauss3_x100', 'spa', 'delta@20'): (1.5, 1.0),  # measured 1.02 / 1; reliable T/T/T
    ('dgauss3_x100', 'spa', 'delta@30'): (2.3, 1.0),  # measured 1.52 / 1; reliable T/T/T
    ('dgauss3_x100', 'edgeworth', 'delta@10'): (3.0, 1.0),  # measured 1.97 / 1; upper only; reliable T/T/T
    ('dgauss3_x100', 'edgeworth', 'delta@20'): (8.1, 1.0),  # measured 5.38 / 1; upper only; reliable T/T/T
    ('dgauss3_x100', 'edgeworth', 'delta@30'): (11.0, 1.0),  # measured 7.41 / 1; upper only; reliable T/T/T
    ('rr05_x100', 'spa', 'delta@20'): (0.92, 0.74),  # measured 0.613 / 0.493; reliable T/T
    ('rr05_x100', 'spa', 'delta@30'): (2.0, 1.0),  # measured 1.34 / 1; reliable T/T
    ('rr05_x100', 'edgeworth', 'delta@20'): (3.7, 1.0),  # measured 2.48 / 1; upper only; reliable F/F
    ('rr05_x100', 'edgeworth', 'delta@30'): (7.4, 1.0),  # measured 4.92 / 1; upper only; reliable F/F
    ('rr01_x2000', 'spa', 'delta@15'): (0.12, 0.12),  # measured 0.0809 / 0.077; reliable T/T
    ('rr01_x2000', 'spa', 'delta@20'): (0.16, 0.15),  # measured 0.107 / 0.1; reliable T/T
    ('rr01_x2000', 'edgeworth', 'delta@15'): (0.76, 1.0),  # measured 0.508 / 1; upper only; reliable T/T
    ('rr01_x2000', 'edgeworth', 'delta@20'): (3.0, 1.0),  # measured 1.99 / 1; upper only; reliable T/T
    ('srr1_q01_x300', 'spa', 'delta@4'): (0.3, 0.31),  # measured 0.201 / 0.208; reliable T/T/T
    ('srr1_q01_x300', 'spa', 'delta@8'): (0.46, 0.46),  # measured 0.308 / 0.308; reliable T/T/T
    ('srr1_q01_x300', 'spa', 'delta@12'): (0.68, 0.6),  # measured 0.456 / 0.401; reliable T/T/T
    ('srr1_q01_x300', 'edgeworth', 'delta@4'): (2.6, 1.0),  # measured 1.71 / 1; upper only; reliable T/F/F
    ('srr1_q01_x300', 'edgeworth', 'delta@8'): (6.4, 1.0),  # measured 4.25 / 1; upper only; reliable T/F/F
    ('srr1_q01_x300', 'edgeworth', 'delta@12'): (11.0, 1.0),  # measured 7.51 / 1; upper only; reliable T/F/F
    ('srr2_q005_x1000', 'spa', 'delta@15'): (0.38, 0.38),  # measured 0.256 / 0.253; reliable T/T
    ('srr2_q005_x1000', 'spa', 'delta@25'): (0.55, 0.55),  # measured 0.364 / 0.37; reliable T/T
    ('srr2_q005_x1000', 'edgeworth', 'delta@15'): (4.4, 1.0),  # measured 2.94 / 1; upper only; reliable F/F
    ('srr2_q005_x1000', 'edgeworth', 'delta@25'): (14.0, 1.0),  # measured 9.4 / 1; upper only; reliable F/F
    ('lap5_x20', 'spa', 'delta@2'): (2.0, 1.0),  # measured 1.35 / 1; reliable T/T
    ('lap5_x20', 'spa', 'delta@3'): (3.5, 1.0),  # measured 2.31 / 0.994; reliable T/T
    ('lap5_x20', 'edgeworth', 'delta@2'): (2.7, 1.0),  # measured 1.8 / 1; upper only; reliable F/F
    ('lap5_x20', 'edgeworth', 'delta@3'): (2.9, 1.0),  # measured 1.91 / 1; upper only; reliable F/F
    ('slap2_q01_x100', 'spa', 'delta@1'): (0.51, 0.5),  # measured 0.337 / 0.335; reliable T/T
    ('slap2_q01_x100', 'spa', 'delta@2'): (0.81, 0.81),  # measured 0.542 / 0.542; reliable T/T
    ('slap2_q01_x100', 'edgeworth', 'delta@1'): (2.6, 1.0),  # measured 1.76 / 1; upper only; reliable F/F
    ('slap2_q01_x100', 'edgeworth', 'delta@2'): (5.9, 1.0),  # measured 3.94 / 1; upper only; reliable F/F
    ('mix_dg4x30_rr02x20_lap5x10', 'spa', 'delta@5'): (1.1, 1.0),  # measured 0.733 / 0.73; reliable T/T
    ('mix_dg4x30_rr02x20_lap5x10', 'spa', 'delta@8'): (1.7, 1.0),  # measured 1.1 / 1; reliable T/T
    ('mix_dg4x30_rr02x20_lap5x10', 'edgeworth', 'delta@5'): (3.4, 1.0),  # measured 2.24 / 1; upper only; reliable F/F
    ('mix_dg4x30_rr02x20_lap5x10', 'edgeworth', 'delta@8'): (5.3, 1.0),  # measured 3.54 / 1; upper only; reliable F/F
}


@functools.lru_cache(maxsize=None)
def reference(name):
    return CELLS[name]["ref"]()


@functools.lru_cache(maxsize=None)
def composition(name):
    return CELLS[name]["compose"]()


@functools.lru_cache(maxsize=None)
def truth_epsilon(name, delta):
    return reference(name).epsilon(delta)


def _contains(est_lo, est_hi, lo, hi):
    return est_lo <= hi and est_hi >= lo


def _fft_slack(est):
    """(delta moved by the budget, delta moved by the allowances) of an FFT answer: Theorem 5.5 charges delta_error
    in full (PRV variant); connect the dots charges only its allowances (rounding, tails, wrap-around)."""
    d = est.details
    s = float(d["fp_allowance"]) + float(d.get("tail_allowance", 0.0)) + float(d.get("wrap_allowance", 0.0))
    return (0.0 if d["variant"] == "ctd" else float(d["delta_error"])), s


# ------------------------------------------------------------------------------------------------------------
# 1. Self-checks of the references (no mechkit)


@pytest.mark.parametrize("eps0", [0.2, 1.0, 3.0])
def test_ref_randomized_response_one_shot_is_the_closed_form(eps0):
    laws = R.randomized_response(eps0)
    for d in DIRS:
        ref = laws[d].composed(1)
        for eps in (0.0, 0.1, 0.5 * eps0, 0.99 * eps0, eps0, 2 * eps0):
            lo, hi = ref.delta_bracket(eps)
            cf = float(R.rr_delta_closed_form(eps0, eps))
            assert lo <= cf <= hi and hi - lo <= 1e-14 * max(cf, 1e-300) + 1e-300


def test_ref_two_point_laws_against_direct_sums_over_outputs():
    """RR, subsampled RR and discrete Laplace: one-shot and two-fold delta by summing (p - e^eps q)_+ over outputs."""
    with mp.workdps(50):
        for eps0, qf in ((1.0, 0.1), (2.0, 0.05), (0.5, 0.7)):
            e0, q = mp.mpf(eps0), mp.mpf(qf)       # the float parameters' exact binary values, as mechkit gets them
            P = {1: mp.exp(e0) / (1 + mp.exp(e0)), 0: 1 / (1 + mp.exp(e0))}
            Q = {1: P[0], 0: P[1]}
            P2 = {x: (1 - q) * Q[x] + q * P[x] for x in (0, 1)}
            laws = R.subsampled_randomized_response(eps0, qf)
            outs2 = [(a, b) for a in (0, 1) for b in (0, 1)]
            for eps in (0.0, 0.05, 0.3, 1.0):
                one = {"remove": R.hockey_stick_sum(lambda x: P2[x], lambda x: Q[x], eps, (0, 1)),
                       "add": R.hockey_stick_sum(lambda x: Q[x], lambda x: P2[x], eps, (0, 1))}
                p22, q22 = (lambda o: P2[o[0]] * P2[o[1]]), (lambda o: Q[o[0]] * Q[o[1]])
                two = {"remove": R.hockey_stick_sum(p22, q22, eps, outs2),
                       "add": R.hockey_stick_sum(q22, p22, eps, outs2)}
                for d in DIRS:
                    for k, truth in ((1, one[d]), (2, two[d])):
                        lo, hi = laws[d].composed(k).delta_bracket(eps)
                        assert lo <= float(truth) <= hi, (eps0, q, d, k, eps)
        for scale in (0.7, 3.0):
            r = mp.exp(-1 / mp.mpf(scale))
            c = (1 - r) / (1 + r)
            N = int(100 * scale) + 10                       # r^N < 1e-43: the dropped outputs do not matter
            pw = {j: c * r ** abs(j) for j in range(-N - 2, N + 3)}
            Pk, Qk = (lambda k: pw[k - 1]), (lambda k: pw[k])
            laws = R.discrete_laplace(scale)
            ks = range(-N, N + 1)
            ks2 = [(a, b) for a in range(-40, 41) for b in range(-40, 41)] if scale < 1 else None
            for eps in (0.0, 0.2, 1.0):
                for d, (p, qq) in (("remove", (Pk, Qk)), ("add", (Qk, Pk))):
                    truth = R.hockey_stick_sum(p, qq, eps, ks)
                    lo, hi = laws[d].composed(1).delta_bracket(eps)
                    assert lo * (1 - 1e-30) <= float(truth) <= hi * (1 + 1e-30) + 1e-40, (scale, d, eps)
                    if ks2 is not None:       # two-fold, scale 0.7: r^40 ~ 1e-25 of dropped mass per axis
                        t2 = R.hockey_stick_sum(lambda o: p(o[0]) * p(o[1]), lambda o: qq(o[0]) * qq(o[1]), eps, ks2)
                        lo2, hi2 = laws[d].composed(2).delta_bracket(eps)
                        assert lo2 - 1e-20 <= float(t2) <= hi2, (scale, d, eps)


@pytest.mark.parametrize("sigma", [1.0, 3.0])
def test_ref_discrete_gaussian_against_direct_sums_over_outputs(sigma):
    with mp.workdps(50):
        s2 = mp.mpf(sigma) ** 2
        Z = mp.nsum(lambda j: mp.exp(-j ** 2 / (2 * s2)), [-mp.inf, mp.inf])
        N = int(15 * sigma) + 5
        g = {j: mp.exp(-j ** 2 / (2 * s2)) / Z for j in range(-3 * N, 3 * N + 1)}
        P, Q = (lambda k: g[k - 1]), (lambda k: g[k])
        ks = range(-2 * N, 2 * N + 1)                      # mass outside < 1e-200
        ks2 = [(a, b) for a in range(-N, N + 1) for b in range(-N, N + 1)]   # dropped mass < 1e-45
        for d, (p, q) in (("remove", (P, Q)), ("add", (Q, P))):
            lat = R.discrete_gaussian(sigma, d)
            one, two = R.LatticeReference([lat]), R.LatticeReference([lat.power(2)])
            for eps in (0.0, 0.3, 1.0, 3.0):
                t1 = float(R.hockey_stick_sum(p, q, eps, ks))
                lo, hi = one.delta_bracket(eps)
                assert lo <= t1 <= hi and hi - lo <= 1e-10 * t1 + 3e-30, (d, eps)
                t2 = float(R.hockey_stick_sum(lambda o: p(o[0]) * p(o[1]), lambda o: q(o[0]) * q(o[1]), eps, ks2))
                lo, hi = two.delta_bracket(eps)
                assert lo - 1e-44 <= t2 <= hi and hi - lo <= 1e-10 * t2 + 5e-30, (d, eps)


def _lap_pdf(x, loc, b):
    return math.exp(-abs(x - loc) / b) / (2 * b)


@pytest.mark.parametrize("scale,q", [(0.5, 1.0), (5.0, 1.0), (1.0, 0.1), (2.0, 0.1), (0.5, 0.5)])
def test_ref_laplace_brackets_one_shot(scale, q):
    """The one-shot brackets contain the closed form (q = 1) and adaptive quadrature of (p - e^eps q)_+."""
    for d in DIRS:
        br = R.subsampled_laplace(scale, q, d, 1000)
        ref = R.LatticeReference([br.lower], [br.upper])
        for eps in (0.0, 0.01, 0.05, 0.3 / scale):
            def f(x, eps=eps):
                p2 = (1 - q) * _lap_pdf(x, 0, scale) + q * _lap_pdf(x, 1, scale)
                qq = _lap_pdf(x, 0, scale)
                return max(0.0, p2 - math.exp(eps) * qq) if d == "remove" else max(0.0, qq - math.exp(eps) * p2)
            quad = sum(integrate.quad(f, a, b, epsabs=1e-15, epsrel=1e-13, limit=200)[0]
                       for a, b in ((-np.inf, 0.0), (0.0, 1.0), (1.0, np.inf)))
            lo, hi = ref.delta_bracket(eps)
            assert lo - 1e-13 <= quad <= hi + 1e-13, (d, eps, lo, quad, hi)
            if q == 1.0:
                cf = R.laplace_delta_closed_form(scale, eps)
                assert lo <= cf <= hi
            # f is 1-Lipschitz and only the continuous part (mass <= 1/2) moves, by at most one cell h
            assert hi - lo <= 0.5 * (br.upper.h) + 1e-12


def test_ref_laplace_two_fold_against_quadrature():
    """Two-fold Laplace: delta_2(eps) = E g(eps - L_1), with g(t) = E(1 - e^{t - L})_+ in closed form:
    g(t) = 1 - e^t for t < -a, 1 - e^{(t - a)/2} for -a <= t < a, 0 beyond; L_1 has atoms 1/2 at a,
    e^{-a}/2 at -a and density e^{(l - a)/2}/4 on (-a, a).  The k = 2 bracket must contain it."""
    scale = 2.0
    a = 1 / scale

    def g(t):
        return -math.expm1(t) if t < -a else (-math.expm1((t - a) / 2) if t < a else 0.0)
    for eps in (0.0, 0.2, 0.5, 0.8):
        cont = integrate.quad(lambda l: g(eps - l) * math.exp((l - a) / 2) / 4, -a, a,
                              points=[p for p in (eps - a, eps + a) if -a < p < a], epsabs=1e-15, epsrel=1e-13)[0]
        truth = 0.5 * g(eps - a) + 0.5 * math.exp(-a) * g(eps + a) + cont
        for d in DIRS:
            br = R.laplace(scale, d, 2000).power(2)
            lo, hi = R.LatticeReference([br.lower], [br.upper]).delta_bracket(eps)
            assert lo - 1e-13 <= truth <= hi + 1e-13 and hi - lo < 1e-3 * truth, (eps, d, lo, truth, hi)


def test_ref_lattice_machinery_agrees_with_exact_binomials():
    """Lattice convolution (float, error-tracked) against mpmath binomial sums, and the two-part (suffix-sum)
    evaluation of E f(X + X') against the full convolution."""
    law = R.discrete_laplace(20.0)["remove"]
    lat = R.LatticeReference([law.to_lattice().power(500)])
    halves = R.LatticeReference([law.to_lattice().power(250)] * 2)
    exact = law.composed(500)
    for eps in (0.5, 2.0, 4.0, 6.0, 10.0):
        e = float(exact.delta_mp(eps))
        for ref in (lat, halves):
            lo, hi = ref.delta_bracket(eps)
            assert lo <= e <= hi and hi - lo <= 1e-9 * e + 1e-300
    lo_e, hi_e = exact.epsilon_bracket(1e-7)
    lo_l, hi_l = lat.epsilon_bracket(1e-7)
    assert lo_l <= hi_e and lo_e <= hi_l and hi_l - lo_l < 1e-8
    # three parts with different spacings (the path of the heterogeneous mix: two parts enumerated, one by
    # suffix sums) against a direct mpmath double sum over the two binomials' outcomes, and a three-part split
    # of one binomial against the binomial itself
    rr, dl = R.randomized_response(0.3)["remove"], R.discrete_laplace(5.0)["remove"]
    mixed = R.LatticeReference([rr.to_lattice().power(40), dl.to_lattice().power(35), dl.to_lattice().power(25)])
    a, b = rr.composed(40), dl.composed(60)
    with mp.workdps(50):
        for eps in (1.0, 3.0, 6.0):
            e = mp.mpf(eps)
            truth = sum(a_w * b_w * (1 - mp.exp(e - sa - sb))
                        for sa, a_w in zip(a.S, (a.A[j] - a.A[j + 1] for j in range(41)))
                        for sb, b_w in zip(b.S, (b.A[j] - b.A[j + 1] for j in range(61))) if sa + sb > e)
            lo, hi = mixed.delta_bracket(eps)
            assert lo <= float(truth) <= hi and hi - lo <= 1e-9 * float(truth), (eps, lo, float(truth), hi)
    three = R.LatticeReference([law.to_lattice().power(100), law.to_lattice().power(150), law.to_lattice().power(250)])
    for eps in (2.0, 6.0):
        lo, hi = three.delta_bracket(eps)
        assert lo <= float(exact.delta_mp(eps)) <= hi
    dg = R.discrete_gaussian(3.0, "add")
    full, split = R.LatticeReference([dg.power(100)]), R.LatticeReference([dg.power(50)] * 2)
    for eps in (5.0, 15.0, 25.0):
        a, b = full.delta_bracket(eps), split.delta_bracket(eps)
        assert a[0] <= b[1] and b[0] <= a[1] and (a[1] - a[0]) <= 1e-9 * a[1]


def test_ref_laplace_brackets_nest_and_bracket_the_curve():
    """Rounding up to a refined grid is dominated by rounding up to the coarse one (and vice versa down):
    the M = 2000 bracket lies inside the M = 1000 one; the epsilon brackets verify against the delta brackets."""
    coarse = R.lattice_reference([("half", functools.partial(R.laplace, 5.0, M=1000), 20)])
    fine = R.lattice_reference([("half", functools.partial(R.laplace, 5.0, M=2000), 20)])
    for eps in (1.0, 2.0, 3.0, 3.9):
        c, f = coarse.delta(eps), fine.delta(eps)
        assert c[0] <= f[0] * (1 + 1e-9) and f[1] <= c[1] * (1 + 1e-9) and f[0] <= f[1]
    for delta in (1e-3, 1e-6):
        lo, hi = fine.epsilon(delta)
        assert fine.delta(hi)[1] <= delta < fine.delta(lo)[0]
        clo, chi = coarse.epsilon(delta)
        assert clo <= lo + 1e-9 and hi <= chi + 1e-9


# ------------------------------------------------------------------------------------------------------------
# 2. Containment and width: epsilon(delta)


def _epsilon_cases():
    for name, cell in CELLS.items():
        for method in ("fft", "spa", "edgeworth"):
            for delta in cell[method]:
                yield pytest.param(name, method, delta, id=f"{name}-{method}-{delta:g}")


def _check_fft_epsilon(name, est, delta, lo, hi):
    if est.details.get("within_budget") is False:  # near the floor: no grid could narrow it (said with a warning)
        return
    ref = reference(name)
    de, s = _fft_slack(est)
    # Theorem 5.5 (each side): within 2 eps_error of the truth at the delta moved by 2 de + s
    side_lo, _ = ref.epsilon(min(delta + 2 * de + s, 1.0))
    _, side_hi = ref.epsilon(max(delta - 2 * de - s, 0.0)) if delta - 2 * de - s > 0 else (None, math.inf)
    assert est.upper <= side_hi + 2 * EPS_ERROR + 1e-9, (est, side_hi)
    assert est.lower >= side_lo - 2 * EPS_ERROR - 1e-9, (est, side_lo)
    # width: 2 eps_error plus the truth's own spread over delta +- (de + s)
    spread = ref.epsilon(max(delta - de - s, 1e-300))[1] - ref.epsilon(min(delta + de + s, 1.0))[0]
    assert est.upper - est.lower <= 2 * EPS_ERROR + spread + 2e-3, (est, spread)


MEASURED = {}    # (cell, method, delta) -> (over, under, details): filled as the tests run, for re-measuring


def _check_limits(name, method, delta, est, lo, hi, kind="epsilon"):
    key = (name, method, delta if kind == "epsilon" else kind)
    lim = LIMITS.get(key)
    over = est.upper / hi - 1 if hi > 0 else (0.0 if est.upper == 0 else math.inf)
    under = 1 - est.lower / lo if lo > 0 else 0.0
    MEASURED[key] = (over, under, dict(reliable=est.details.get("reliable"), interval=est.details.get("interval")))
    assert lim is not None, f"no width limit recorded for {key}: measured over {over:.3g}, under {under:.3g}"
    assert over <= lim[0], f"{key}: upper {est.upper} is {over:.3g} above the truth {hi} (limit {lim[0]})"
    assert under <= lim[1], f"{key}: lower {est.lower} is {under:.3g} below the truth {lo} (limit {lim[1]})"


@pytest.mark.parametrize("name,method,delta", list(_epsilon_cases()))
def test_epsilon_interval_contains_the_truth(name, method, delta):
    lo, hi = truth_epsilon(name, delta)
    try:
        est = composition(name).epsilon(delta, method=method)
    except mk.NumericalLimitError as exc:
        # The only expected refusal (README): the FFT below its floating-point floor, which names the smallest
        # delta it can certify.  The cells ask the FFT only at deltas it answered on 2026-11-25; a refusal there
        # is a regression of the floor, not a failure of soundness, so it is counted as a skip, and only when
        # the message is the documented one and names a larger delta.  Any other MechkitError fails.
        m = _SMALLEST.search(str(exc))
        if method == "fft" and "cannot be certified" in str(exc) and m and delta < float(m.group(1)):
            pytest.skip(f"documented FFT refusal below its floor ({m.group(1)}): {name} at delta={delta:g}")
        raise
    assert est.certified and est.lower is not None and est.upper is not None
    assert _contains(est.lower, est.upper, lo, hi), \
        f"{name} {method} delta={delta:g}: certified [{est.lower!r}, {est.upper!r}] misses the truth [{lo!r}, {hi!r}]"
    if method == "fft":
        _check_fft_epsilon(name, est, delta, lo, hi)
    else:
        _check_limits(name, method, delta, est, lo, hi)


# ------------------------------------------------------------------------------------------------------------
# 3. Containment and width: delta(epsilon)


def _delta_cases():
    for name, cell in CELLS.items():
        for method in ("fft", "spa", "edgeworth"):
            yield pytest.param(name, method, id=f"{name}-{method}")


@pytest.mark.parametrize("name,method", list(_delta_cases()))
def test_delta_interval_contains_the_truth(name, method):
    eps = np.array(CELLS[name]["eps"])
    ref = reference(name)
    est = composition(name).delta(eps, method=method)
    assert est.certified
    for i, e in enumerate(eps):
        lo, hi = ref.delta(e)
        el, eu = float(est.lower[i]), float(est.upper[i])
        assert _contains(el, eu, lo, hi), f"{name} {method} eps={e}: [{el!r}, {eu!r}] misses [{lo!r}, {hi!r}]"
        if method == "fft":
            de, s = _fft_slack(est)
            assert eu <= ref.delta(max(e - 2 * EPS_ERROR, 0.0))[1] + 2 * de + s + 1e-15, (e, eu)
            assert el >= ref.delta(e + 2 * EPS_ERROR)[0] - 2 * de - s - 1e-15, (e, el)
        else:
            one = mk.Estimate(float(est[i]), el, eu, method, True, dict(est.details))
            _check_limits(name, method, None, one, lo, hi, kind=f"delta@{e:g}")


# ------------------------------------------------------------------------------------------------------------
# 4. The FFT's documented refusal below its floor, and its answer just above it


@pytest.mark.parametrize("name", ["dlap20_x500", "dgauss1_x100", "srr1_q01_x300", "slap2_q01_x100"])
def test_fft_refuses_tiny_delta_and_is_sound_just_above_its_floor(name):
    with pytest.raises(mk.NumericalLimitError, match="cannot be certified") as info:
        composition(name).epsilon(1e-12, method="fft")
    smallest = float(_SMALLEST.search(str(info.value)).group(1))
    assert smallest > 1e-12
    delta = 3 * smallest
    est = composition(name).epsilon(delta, method="fft")
    lo, hi = reference(name).epsilon(delta)
    assert _contains(est.lower, est.upper, lo, hi), (name, delta, est, lo, hi)
    _check_fft_epsilon(name, est, delta, lo, hi)


# ------------------------------------------------------------------------------------------------------------
# 5. One-shot curves per direction (the reference's direction conventions are mechkit's)


@pytest.mark.parametrize("which", ["srr", "slap", "dlap", "dgauss"])
def test_one_shot_directions_agree_with_the_reference(which):
    if which == "srr":
        m, laws = mk.subsample(mk.randomized_response(1.0), 0.1), R.subsampled_randomized_response(1.0, 0.1)
        refs = {d: laws[d].composed(1) for d in DIRS}
    elif which == "dlap":
        m, laws = mk.discrete_laplace(3.0), R.discrete_laplace(3.0)
        refs = {d: laws[d].composed(1) for d in DIRS}
    elif which == "dgauss":
        m = mk.discrete_gaussian(2.0)
        refs = {d: R.LatticeReference([R.discrete_gaussian(2.0, d)]) for d in DIRS}
    else:
        m = mk.subsample(mk.laplace(1.0), 0.1)
        refs = {d: R.LatticeReference.from_brackets([R.subsampled_laplace(1.0, 0.1, d, 4000)]) for d in DIRS}
    for eps in (0.0, 0.02, 0.05, 0.1, 0.3):
        for d in DIRS:
            lo, hi = refs[d].delta_bracket(eps)
            got = m.delta(eps, direction=d)
            assert lo * (1 - 1e-8) - 1e-15 <= got <= hi * (1 + 1e-8) + 1e-15, (which, d, eps, lo, got, hi)


# ------------------------------------------------------------------------------------------------------------
# 6. Random discrete Laplace compositions against the exact binomial sum


_FFT_ANSWERED = Reached(fft=0.3)     # about half the examples are below the FFT's floor (it refuses there)


# (the explain phase is left out: on a failure it re-runs the example hundreds of times, minutes here)
@_FFT_ANSWERED
@settings(deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink])
@given(scale=st.floats(2.0, 40.0), k=st.integers(1, 300), log10_delta=st.floats(-11.0, -3.0))
def test_random_discrete_laplace_fft_and_spa_contain_the_exact_epsilon(scale, k, log10_delta):
    delta = 10.0 ** log10_delta
    ref = R.binomial_reference(R.discrete_laplace(scale), k)
    lo, hi = ref.epsilon(delta)
    top = k / scale
    event("truth: eps = 0" if hi == 0 else "truth: point-mass regime (eps within 1e-6 of k/scale)"
          if top - lo < 1e-6 else "truth: interior")
    comp = mk.compose((mk.discrete_laplace(scale), k))
    try:
        est = comp.epsilon(delta, method="fft")
    except mk.NumericalLimitError as exc:          # documented: below the floating-point floor of the grid
        assert "cannot be certified" in str(exc)
        assert delta < float(_SMALLEST.search(str(exc)).group(1))
        event("fft: refused below its documented floor")
    else:
        event("fft: answered")
        assert _contains(est.lower, est.upper, lo, hi), ("fft", scale, k, delta, est, lo, hi)
        de, s = _fft_slack(est)
        if est.details.get("within_budget") is not False:  # near its floor no grid can narrow it (a warning says so)
            if delta - 2 * de - s > 0:
                assert est.upper <= ref.epsilon(delta - 2 * de - s)[1] + 2 * EPS_ERROR + 1e-9
            assert est.lower >= ref.epsilon(min(delta + 2 * de + s, 1.0))[0] - 2 * EPS_ERROR - 1e-9
        _FFT_ANSWERED.hit("fft")
    est = comp.epsilon(delta, method="spa")
    event(f"spa: reliable={bool(est.details.get('reliable'))}")
    assert est.certified
    assert _contains(est.lower, est.upper, lo, hi), ("spa", scale, k, delta, est, lo, hi)
    # width: eps = k/scale (the largest loss) already has delta = 0, so an upper bound above it is known loose
    assert est.upper <= top + 1e-9 * max(1.0, top)
