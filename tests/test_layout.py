"""The house rules of docs/architecture.md that a machine can check: the linter is clean, and no module imports
from a stage folder above its own (the arrows run down)."""
import ast
import shutil
import subprocess
import sys

import pytest

from tests.helpers import ROOT

#: stage folders from the bottom up; a module may import from its own folder and the ones before it
STAGES = ["engine", "symbolic", "laws", "transforms", "accountants", "individual"]
BOTTOM = {"errors", "estimate", "relations", "cache", "progress", "persist"}


def test_ruff_is_clean():
    if shutil.which("ruff") is None and subprocess.run([sys.executable, "-m", "ruff", "--version"],
                                                       capture_output=True).returncode != 0:
        pytest.skip("ruff is not installed (it comes with the test extra)")
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "mechkit", "mechanisms", "tests", "benchmarks",
                          "examples"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:]


def _imports(path):
    """(level, module) of every import in a file, relative ones resolved against the package path."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            yield node.level, node.module or "", [a.name for a in node.names]


def _target(path, level, module, names):
    pkg = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
    base = pkg[: len(pkg) - level + 1] if level else []
    parts = base + (module.split(".") if module else [])
    if parts[:1] != ["mechkit"]:
        return []
    return [parts + [n] if not module else parts for n in names]


@pytest.mark.parametrize("path", sorted((ROOT / "mechkit").rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_arrow_runs_back_up(path):
    parts = path.relative_to(ROOT / "mechkit").parts
    own = parts[0] if len(parts) > 1 else None
    if own is None:  # top-level: the bottom modules import only each other; the rest (cli...) sit above the stages
        if path.stem in BOTTOM:
            for level, module, names in _imports(path):
                for t in _target(path, level, module, names):
                    assert len(t) >= 2 and t[1] in BOTTOM, (path, t)
        return
    for level, module, names in _imports(path):
        for t in _target(path, level, module, names):
            if len(t) < 2 or t[1] in BOTTOM or t[1] == own:
                continue
            assert t[1] in STAGES and STAGES.index(t[1]) <= STAGES.index(own), (path, t)


MODULES = sorted((ROOT / "mechkit").rglob("*.py"))
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 100


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_and_function_sizes(path):
    text = path.read_text()
    assert len(text.splitlines()) <= MAX_MODULE_LINES, f"{path} has {len(text.splitlines())} lines"
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]  # the docstring does not count
            if body:
                n = body[-1].end_lineno - body[0].lineno + 1
                assert n <= MAX_FUNCTION_LINES, f"{path}: {node.name} has {n} lines"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_uses_another_modules_private_names(path):
    tree = ast.parse(path.read_text())
    modules = set()  # local names bound to mechkit modules
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("mechkit")):
            for a in node.names:
                assert not (a.name.startswith("_") and not a.name.startswith("__")), \
                    f"{path} imports the private name {a.name} from {node.module}"
                modules.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            modules.update(a.asname or a.name for a in node.names if a.name.startswith("mechkit"))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            raise AssertionError(f"{path}:{node.lineno} uses {node.value.id}.{node.attr}")
