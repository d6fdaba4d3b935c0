"""The documentation site builds, and its examples run.

* ``mkdocs build --strict`` (mkdocs.yml: MkDocs and mkdocstrings, the ``docs`` extra, also in ``test``) succeeds:
  no broken link or anchor, no griffe warning about a docstring, every page of the nav present.
* The Python examples of the tutorial pages run, in order, in one namespace per page (as tests/test_readme.py runs
  the README's), so the pages cannot drift from the API.  The pages keep their examples cheap (short runs); the
  individual-accounting page is not run here (its accountants plan an FFT grid: several seconds).
"""
import re
import subprocess
import sys

import pytest

from tests.helpers import ROOT

#: the pages whose ```python blocks run, and how many blocks each has at least (a guard against a regex that
#: silently matches nothing)
PAGES = {"index.md": 1, "dpsgd.md": 8, "custom-mechanisms.md": 6, "trust.md": 4}


def test_site_builds_in_strict_mode(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    site = tmp_path / "site"
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    api = (site / "api" / "index.html").read_text()
    for name in ("Composition", "epsilon", "mechkit.training.dpsgd", "Calibration", "PrivacyCurve",
                 "MechkitAccountant", "ParameterError"):
        assert name in api, name
    for page in ("dpsgd", "custom-mechanisms", "trust", "individual", "cli", "architecture", "performance"):
        assert (site / page / "index.html").is_file(), page
    assert (site / "img" / "privacy_curve.png").is_file()


@pytest.mark.parametrize("page", sorted(PAGES))
def test_page_python_examples_run(page, tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / page).read_text(), re.S)
    assert len(blocks) >= PAGES[page]
    monkeypatch.chdir(tmp_path)  # the examples save files (a privacy curve)
    ns = {}
    for i, block in enumerate(blocks):
        try:
            exec(compile(block, f"docs/{page} python block {i + 1}", "exec"), ns)
        except Exception as exc:
            raise AssertionError(f"docs/{page} python block {i + 1} fails: {exc!r}\n{block}") from exc
