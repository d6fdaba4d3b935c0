"""Issue "Any density a paper writes", defect 7: bad input that escaped as a non-Mechkit exception is a
ParameterError naming the argument (queries, options, parameters, counts)."""
import re

import numpy as np
import pytest

import mechkit as mk
from mechkit import ParameterError
from mechkit.composition import ACCOUNTANTS


@pytest.fixture(scope="module")
def run():
    return mk.compose((mk.gaussian(sigma=1.0), 10))


@pytest.mark.parametrize("bad", ["abc", "0.5", ["0.5"], None, [0.5, "x"], 1 + 2j, True])
def test_delta_of_a_non_number_names_epsilon(run, bad):
    with pytest.raises(ParameterError, match="epsilon must be a real number"):
        run.delta(bad)
    with pytest.raises(ParameterError, match="epsilon must be a real number"):
        mk.gaussian(sigma=1.0).delta(bad)


@pytest.mark.parametrize("bad", ["1e-5", ["1e-5"]])
def test_epsilon_of_a_non_number_names_delta(run, bad):
    with pytest.raises(ParameterError, match="delta must be a real number"):
        run.epsilon(bad)


@pytest.mark.parametrize("method", sorted(ACCOUNTANTS))
def test_unknown_options_are_named_before_dispatch(run, method):
    for query, arg in (("epsilon", 1e-5), ("delta", 1.0)):
        with pytest.raises(ParameterError, match=r"unknown option\(s\) \['foo'\] for " + query):
            getattr(run, query)(arg, method=method, foo=1)


def test_known_options_still_reach_the_accountant(run):
    assert run.epsilon(1e-5, eps_error=0.05).details["eps_error"] == 0.05


def test_empty_arrays_are_refused_alike(run):
    for call in (lambda: run.epsilon([]), lambda: run.delta([]), lambda: mk.gaussian(sigma=1.0).epsilon([]),
                 lambda: mk.gaussian(sigma=1.0).delta(np.array([]))):
        with pytest.raises(ParameterError, match="is empty"):
            call()


def test_family_called_with_positional_values_names_its_parameters():
    with pytest.raises(ParameterError, match=r"by name, gaussian\(sensitivity=\.\.\., sigma=\.\.\.\)"):
        mk.catalog("gaussian").family(1.0)
    assert float(mk.gaussian(1.0).delta(0.0)) > 0  # the convenience function still takes positions


@pytest.mark.parametrize("call, name", [
    (lambda: mk.gaussian(sigma="1.0"), "sigma"),
    (lambda: mk.gaussian(1.0, sensitivity="2"), "sensitivity"),
    (lambda: mk.catalog("laplace").family(scale=b"1", sensitivity=1.0), "scale"),
    (lambda: mk.subsample(mk.gaussian(sigma=1.0), "0.1"), "q"),
])
def test_numeric_strings_are_refused_naming_the_parameter(call, name):
    with pytest.raises(ParameterError, match=f"{name} must be a real number"):
        call()


@pytest.mark.parametrize("sigma, word", [(1e-300, ">="), (1e300, "<=")])
def test_parameter_beyond_double_precision_is_named_with_its_range(sigma, word):
    pattern = re.escape(f"sigma = {sigma:g} is too") + f".*sigma must be {word} about"
    with pytest.raises(ParameterError, match=pattern) as info:
        mk.gaussian(sigma=sigma)
    bound = float(info.value.args[0].split(f"{word} about ")[1].split(" ")[0])
    inside, outside = (bound * 4, bound / 4) if word == ">=" else (bound / 4, bound * 4)
    assert 0 <= mk.gaussian(sigma=inside).delta(1.0) <= 1  # the range it names works ...
    with pytest.raises(mk.MechkitError):
        mk.gaussian(sigma=outside)  # ... and beyond it binding fails


def test_discrete_parameter_beyond_double_precision_is_named():
    with pytest.raises(ParameterError, match="sigma = 1e-300 is too small"):
        mk.discrete_gaussian(1e-300)


@pytest.mark.parametrize("count", [10 ** 30, 1e30, 2 ** 53 + 1, 2.5, 0, -3, True, "10"])
def test_counts_must_be_integers_up_to_2_pow_53(count):
    with pytest.raises(ParameterError, match=r"count must be an integer in \[1, 2\*\*53"):
        mk.compose((mk.gaussian(sigma=1.0), count))


def test_merged_counts_are_checked_too():
    g = mk.gaussian(sigma=1.0)
    assert mk.compose((g, 2 ** 53)).total_count == 2 ** 53
    with pytest.raises(ParameterError, match=r"total count .* 2\*\*53"):
        mk.compose((g, 2 ** 53), g)
    with pytest.raises(ParameterError, match=r"2\*\*53"):
        mk.compose((mk.compose((g, 2 ** 30)), 2 ** 30))
