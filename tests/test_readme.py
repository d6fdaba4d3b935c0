"""The README's Python examples run, in order, in one namespace (a test that fails when the README drifts from
the API).  The training-loop placeholders the README leaves to the user (``n_examples``, the gradient norms, the
noise multiplier...) are given small values here."""
import re

import numpy as np
import pytest

from tests.helpers import ROOT

PRELUDE = {
    "n_examples": 6, "n": 6, "steps": 3, "T": 3, "C": 1.0, "z": 1.2, "q": 0.2, "B": 2.0,
}


@pytest.mark.slow  # the README's composition is a real DP-SGD run (10,000 steps and a logistic): ~10-20 s
def test_readme_python_examples_run(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert len(blocks) >= 4
    monkeypatch.chdir(tmp_path)  # the examples save state files
    rng = np.random.default_rng(7)
    ns = dict(PRELUDE, per_example_gradient_norms=lambda: rng.uniform(0.0, 2.0, PRELUDE["n_examples"]))
    ns["norms"] = ns["per_example_gradient_norms"]()
    for i, block in enumerate(blocks):
        try:
            exec(compile(block, f"README.md python block {i + 1}", "exec"), ns)
        except Exception as exc:
            raise AssertionError(f"README python block {i + 1} fails: {exc!r}\n{block}") from exc


def test_mechanism_contract_examples_run():
    """docs/mechanism-contract.md's Python examples run in order in one namespace, and say what they claim."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "mechanism-contract.md").read_text(), re.S)
    blocks = blocks[1:]  # the first shows the objects' names (``family(**params)``), not a runnable example
    assert len(blocks) >= 3
    ns = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/mechanism-contract.md python block {i + 1}", "exec"), ns)
    assert ns["m"].delta(1.0) == pytest.approx(0.3, rel=1e-12)
    # P-mass of (3, 4], where q = 0 < p: the integral of e^-(x - 1) / (2 (1 - e^-3)) from 3 to 4
    assert ns["truncated"].remove.inf_mass == pytest.approx((np.exp(-2.0) - np.exp(-3.0)) / (2 * (1 - np.exp(-3.0))),
                                                            rel=1e-9)
