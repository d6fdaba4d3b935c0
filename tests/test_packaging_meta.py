"""What the package says about itself: its licence, its one version, its type hints (py.typed), and answers that
describe themselves (the Estimate's docstring, an EstimateArray's repr, mk.rdp.epsilon's Estimate)."""
import importlib.metadata
import re
import sys

import numpy as np
import pytest

import mechkit as mk
from tests.helpers import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover -- Python 3.10
    tomllib = pytest.importorskip("tomli")


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_license_file_matches_the_declared_licence():
    project = _pyproject()["project"]
    assert project["license"] == {"text": "MIT"}
    assert "License :: OSI Approved :: MIT License" in project["classifiers"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 the mechkit authors" in text
    assert "Permission is hereby granted, free of charge" in text and 'THE SOFTWARE IS PROVIDED "AS IS"' in text


def test_the_version_lives_in_one_place():
    meta = _pyproject()
    assert "version" not in meta["project"] and meta["project"]["dynamic"] == ["version"]
    assert meta["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "mechkit.__version__"}
    # setuptools reads the attribute statically: a plain string assignment in mechkit/__init__.py
    source = (ROOT / "mechkit" / "__init__.py").read_text()
    assert re.findall(r'^__version__ = "([^"]+)"$', source, re.M) == [mk.__version__]
    assert re.fullmatch(r"\d+\.\d+\.\d+", mk.__version__)
    try:
        installed = importlib.metadata.version("mechkit")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("mechkit is not installed (run from a source tree)")
    assert installed == mk.__version__


def test_type_hints_ship_with_the_package():
    assert (ROOT / "mechkit" / "py.typed").is_file()
    meta = _pyproject()
    assert "py.typed" in meta["tool"]["setuptools"]["package-data"]["mechkit"]
    assert "Typing :: Typed" in meta["project"]["classifiers"]


def test_estimate_documents_itself():
    doc = mk.Estimate.__doc__
    assert doc and doc != float.__doc__
    for word in ("lower", "upper", "method", "certified", "details", "Which number to trust"):
        assert word in doc, word
    import pydoc
    assert "Which number to trust" in pydoc.render_doc(mk.Estimate)


def test_estimate_array_repr_shows_its_bounds():
    a = mk.EstimateArray([1e-5, 2e-6, 3e-7], [0.9e-5, 1.9e-6, 2.9e-7], [1.1e-5, 2.1e-6, 3.1e-7], "fft", True)
    r = repr(a)
    assert "lower=[9.0e-06, 1.9e-06, 2.9e-07]" in r and "upper=[1.1e-05, 2.1e-06, 3.1e-07]" in r
    big = repr(mk.EstimateArray(np.linspace(0.0, 1.0, 3000), np.linspace(-1.0, 0.0, 3000), 2.0, "fft", True))
    assert "lower=[-1." in big and "upper=[2., 2., 2., ..." in big and len(big) < 1000
    # the Estimate's repr shows the interval too
    assert repr(mk.Estimate(0.5, 0.25, 0.75, "fft", True)) == "Estimate(0.5, lower=0.25, upper=0.75, method='fft')"


def test_rdp_epsilon_returns_an_estimate_like_the_other_methods():
    run = mk.compose((mk.gaussian(sigma=2.0), 10))
    est = mk.rdp.epsilon(run.items, 1e-6)
    assert isinstance(est, mk.Estimate)
    assert (est.lower, est.upper, est.method, est.certified) == (0.0, float(est), "rdp", True)
    assert est.details["alpha"] > 1
    same = run.epsilon(1e-6, method="rdp")  # the composition's RDP answer is this Estimate
    assert (float(same), same.lower, same.upper, same.details) == (float(est), est.lower, est.upper, est.details)
    # an upper bound of the exact mu-GDP epsilon (mu = sqrt(10) / 2)
    assert float(est) >= mk.gdp.epsilon(10 ** 0.5 / 2.0, 1e-6)
