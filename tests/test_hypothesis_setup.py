"""The Hypothesis set-up of the suite (tests/conftest.py, tests.helpers.Reached): the profiles, a property that
tests nothing failing, and no property pinned below the profile's number of examples."""
import ast
import os

import pytest
from hypothesis import assume, given, settings, strategies as st

from tests.helpers import ROOT, Reached

#: properties still pinned below 100 examples, with the reason (remove an entry when its property follows the profile)
PINNED = {
    "tests/test_peers_calibration.py::test_calibrated_noise_is_safe_and_tight_by_dp_accounting":
        "optional (peers installed only): a calibration and two dp_accounting PLD compositions, ~2 s an example",
}


def test_profiles():
    ci, nightly = settings.get_profile("ci"), settings.get_profile("nightly")
    assert ci.max_examples >= 100 and ci.derandomize and ci.database is None and ci.deadline is None and ci.print_blob
    assert nightly.max_examples >= 1000 and not nightly.derandomize and nightly.deadline is None
    assert settings.get_profile("dev").max_examples < ci.max_examples


def test_the_chosen_profile_is_loaded(pytestconfig):
    chosen = pytestconfig.getoption("hypothesis_profile", None) or os.environ.get("HYPOTHESIS_PROFILE") or "ci"
    assert settings.default.max_examples == settings.get_profile(chosen).max_examples


def _property(reached, share_of_inputs_checked):
    @reached
    @given(st.integers(0, 10 ** 9))
    def prop(x):
        if x % 100 >= 100 * share_of_inputs_checked:
            return                                              # skipped silently
        reached.hit("checked")
    return prop


def test_a_property_that_tests_nothing_fails():
    r = Reached(checked=0.5)
    with pytest.raises(AssertionError, match="examples reached 'checked'"):
        _property(r, 0.0)()
    assert r.runs >= settings.default.max_examples and r.counts["checked"] == 0
    with pytest.raises(AssertionError, match="examples reached 'checked'"):
        _property(r, 0.2)()                                     # mostly skipped: too little tested


def test_a_property_that_tests_enough_passes():
    r = Reached(checked=0.5)
    _property(r, 1.0)()
    assert r.runs == r.counts["checked"] >= settings.default.max_examples


def test_assume_filtering_everything_fails():
    @given(st.integers(0, 99))
    def prop(x):
        assume(x > 1000)

    with pytest.raises(Exception, match="(?i)unsatisf|filter"):
        prop()


def _pinned_below(tree, limit):
    """(function name or None, line) of every settings(max_examples=<int literal below limit>) in a module."""
    owner = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                for sub in ast.walk(d):
                    owner[id(sub)] = node.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "settings":
            for kw in node.keywords:
                if kw.arg == "max_examples" and isinstance(kw.value, ast.Constant) and kw.value.value < limit:
                    yield owner.get(id(node)), node.lineno


def test_no_property_is_pinned_below_the_profile():
    bad = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for name, line in _pinned_below(ast.parse(path.read_text()), 100):
            if f"{rel}::{name}" not in PINNED:
                bad.append(f"{rel}:{line} ({name})")
    assert not bad, ("max_examples below 100 (let the profile decide, tests/conftest.py, or scale it: "
                     f"k * settings.default.max_examples): {bad}")
