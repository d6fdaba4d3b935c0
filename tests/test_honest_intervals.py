"""Honest intervals (issue 21): an answer whose certified interval is wider than the estimate, or whose expansion is
flagged outside its regime, says so in its repr and warns (MechkitWarning; the CLI prints it on one line); a
narrow certified answer does neither."""
from __future__ import annotations

import io
import math
import warnings

import numpy as np
import pytest

import mechkit as mk
from mechkit.cli import main
from mechkit.estimate import weakness


@pytest.fixture(scope="module")
def run():
    return mk.dpsgd(noise_multiplier=0.8, sampling_rate=0.01, steps=1000)


def test_a_wide_or_unreliable_answer_says_so(run):
    with pytest.warns(mk.MechkitWarning, match="wider than the estimate"):
        est = run.epsilon(1e-5, method="edgeworth")
    assert est.upper - est.lower > float(est) and "note=" in repr(est) and weakness(est)
    with pytest.warns(mk.MechkitWarning):
        arr = run.epsilon([1e-5, 1e-6], method="edgeworth")
    assert weakness(arr)


def test_a_narrow_certified_answer_is_quiet(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = run.epsilon(1e-5)
        arr = run.delta([1.0, 2.0])
    assert not [w for w in caught if issubclass(w.category, mk.MechkitWarning)]
    assert weakness(est) == "" and "note=" not in repr(est) and weakness(arr) == ""
    # an exact interval of zero width at zero is not "wider than the estimate"
    assert weakness(mk.Estimate(0.0, 0.0, 0.0, "fft", True)) == ""


def test_the_cli_prints_the_warning_on_one_line(capsys):
    assert main(["epsilon", "dpsgd", "--noise-multiplier", "0.8", "--sampling-rate", "0.01", "--steps", "1000",
                 "--delta", "1e-5", "--method", "edgeworth"], out=io.StringIO()) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("mechkit: warning:")]
    assert len(lines) == 1 and "wider than the estimate" in lines[0]


@pytest.mark.parametrize("value, lower, upper", [
    (1.0, 0.5, 1.6), (1.0, 0.5, 1.5), (1.0, 0.0, 2.5), (0.0, 0.0, 0.0), (0.0, 0.0, 1e-300), (-1.0, -2.5, 0.0),
    (2.0, 0.0, math.inf), (math.inf, 3.0, math.inf), (math.nan, 0.0, 1.0), (1.0, math.nan, 2.0)])
def test_a_scalar_answer_is_weak_where_its_one_element_array_is(value, lower, upper):
    # the scalar path (plain float arithmetic) and the array path (NumPy's) say the same of the same numbers
    est = mk.Estimate(value, lower, upper, "fft", True)
    arr = mk.EstimateArray(np.array([value]), np.array([lower]), np.array([upper]), "fft", True)
    assert weakness(est) == weakness(arr)
