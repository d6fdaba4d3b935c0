"""Density strings and cache files are parsed without evaluating Python (issue "any density", defect 1)."""
import json
import sys

import numpy as np
import pytest
import sympy as sp

import mechkit as mk
from mechkit import SpecificationError
from mechkit.engine import numerics as N
from mechkit.symbolic import codegen
from mechkit.symbolic.derive import Derivation, Spec
from mechkit.symbolic.parse import exact, parse_expression, parse_srepr

x = sp.Symbol("x", real=True)


def payloads(marker):
    m = str(marker)
    return [
        f"__import__('os').system('touch {m}')",
        f"exp(x).__class__.__init__.__globals__['os'].system('touch {m}')",
        f"(lambda: __import__('os').system('touch {m}'))()",
        "[c for c in ().__class__.__base__.__subclasses__()]",
        f"open('{m}', 'w').write('x')",
        f"exp(__import__('os').system('touch {m}'))",
        "getattr(x, '__class__')",
        "exp(x)[0]",
        "exp(x, evaluate=False)",
        "exp(*[x])",
        "x.subs(x, 1)",
        "_ + x",
        "'touch'",
        "eval('1')",
    ]


@pytest.mark.parametrize("i", range(14))
def test_density_strings_never_run_code(tmp_path, i):
    marker = tmp_path / "pwned"
    text = payloads(marker)[i]
    with pytest.raises(SpecificationError) as info:
        mk.Mechanism.from_densities(p=text, q="exp(-x**2/2)", var="x")
    assert not marker.exists()
    assert "p" in str(info.value)


def test_the_issue_example_is_a_specification_error_naming_the_token(tmp_path):
    marker = tmp_path / "pwned"
    with pytest.raises(SpecificationError, match=r"__import__\('os'\)\.system"):
        mk.Mechanism.from_densities(p=f"__import__('os').system('touch {marker}')", q="exp(-x**2/2)", var="x")
    assert not marker.exists()


@pytest.mark.parametrize("text, why", [
    ("x^2", r"write \*\* for powers"),
    ("f(x)", "the function 'f' is not supported"),
    ("10**10**10", "integer exponents"),
    ("2x", "not a SymPy expression"),
    ("exp(x, evaluate=False)", "keyword"),
    ("x.real", "Attribute"),
])
def test_refusals_say_why(text, why):
    with pytest.raises(SpecificationError, match=why):
        parse_expression(text, "p", {"x": x})


def test_strings_build_the_same_expressions_as_sympy():
    s, k, j = sp.symbols("sigma k j")
    cases = {
        "exp(-x**2/(2*sigma**2))/sqrt(2*pi*sigma**2)": sp.exp(-x**2 / (2 * s**2)) / sp.sqrt(2 * sp.pi * s**2),
        "exp(-Abs(x - 1))/2": sp.exp(-sp.Abs(x - 1)) / 2,
        "Piecewise((1, (x > 0) & (x < 1)), (0, True))": sp.Piecewise((1, (x > 0) & (x < 1)), (0, True)),
        "Sum(exp(-j**2/(2*sigma**2)), (j, -oo, oo))": sp.Sum(sp.exp(-j**2 / (2 * s**2)), (j, -sp.oo, sp.oo)),
        "binomial(k, x)*erfc(x)*gamma(x + 1)*besseli(1, x)":
            sp.binomial(k, x) * sp.erfc(x) * sp.gamma(x + 1) * sp.besseli(1, x),
        "log(1 + exp(-x))": sp.log(1 + sp.exp(-x)),
    }
    for text, expected in cases.items():
        assert parse_expression(text, "p", {"x": x}) == expected, text


def test_function_names_are_symbols_where_not_called():
    e = parse_expression("gamma*beta*exp(-x)", "p", {"x": x})
    assert {str(v) for v in e.free_symbols} == {"gamma", "beta", "x"}


def test_floats_become_exact_rationals():
    assert parse_expression("exp(-Abs(x)**1.5)", "p", {"x": x}) == sp.exp(-sp.Abs(x) ** sp.Rational(3, 2))
    assert parse_expression("0.1*x", "p", {"x": x}) == x / 10
    assert exact(sp.Float(0.1) * x + sp.Float(2.5)) == x / 10 + sp.Rational(5, 2)
    assert exact(sp.Float("0.1", 60)) == sp.Rational(sp.Float("0.1", 60))  # more than double precision: exact binary


def test_float_rational_and_string_spellings_are_the_same_family():
    keys = {mk.Mechanism.from_densities(p, q, x).key for p, q in [
        (sp.exp(-sp.Abs(x) ** 1.5) / 3, sp.exp(-sp.Abs(x - 1) ** 1.5) / 3),
        (sp.exp(-sp.Abs(x) ** sp.Rational(3, 2)) / 3, sp.exp(-sp.Abs(x - 1) ** sp.Rational(3, 2)) / 3),
        ("exp(-Abs(x)**1.5)/3", "exp(-Abs(x - 1)**(3/2))/3"),
    ]}
    assert len(keys) == 1


def test_srepr_round_trip_of_what_the_cache_holds():
    y = sp.Symbol("_const0", real=True)
    for e in [sp.oo, -sp.oo, sp.Rational(-1, 2), sp.Float(1e-5), sp.zoo, sp.nan, sp.I * x,
              sp.Piecewise((x, x > 0), (0, True)), sp.Sum(x**2, (x, 1, sp.oo)), sp.exp(-x) * sp.erfc(x) + y,
              sp.LambertW(x), sp.Interval(0, 1), sp.uppergamma(x, 2), sp.Tuple(x, 1)]:
        assert parse_srepr(sp.srepr(e)) == e


@pytest.mark.parametrize("text", [
    "__import__('os').system('true')",
    "exp('__import__(\"os\")')",
    "Symbol('x', real=__import__('os'))",
    "Function('f')(Symbol('x'))",
    "Float('1e5; import os')",
    "Symbol('x').subs(1, 2)",
])
def test_srepr_refuses_everything_else(text):
    with pytest.raises(SpecificationError):
        parse_srepr(text)


def _tiny_spec(tag):
    """A spec whose build is one trivial kernel (the cache's code path without a real derivation)."""
    return Spec(p=sp.exp(x) / tag, q=sp.exp(-x) / tag, var=x, kind="finite", lo=0, hi=1, points=(0.0, 1.0))


def _tiny_build(calls, loss=2 * x):
    def build(spec):
        calls.append(spec)
        d = Derivation()
        d.add("L", 2 * x, x)
        d.structure = {"kind": "finite", "points": [0.0, 1.0], "L": "L"}
        d.display = {"privacy_loss": loss, "inverse_loss": [("+", [loss])] if loss is not None else None}
        return d
    return build


def test_an_entry_whose_loss_has_no_single_expression_is_read_back_not_rebuilt(tmp_path, monkeypatch):
    """A piecewise loss is shown as None: its entry was written as the text "None", which the safe parser refuses,
    so every new process derived the family again (a staircase: seconds each time)."""
    monkeypatch.setenv("MECHKIT_CACHE_DIR", str(tmp_path))
    spec, calls = _tiny_spec(13), []
    _forget(spec)
    first = codegen.load_or_build(spec, _tiny_build(calls, loss=None))
    _forget(spec)  # as a new process: the module is imported again from the cache
    structure, display, mod = codegen.load_or_build(spec, _tiny_build(calls, loss=None))
    assert len(calls) == 1 and display == {"privacy_loss": None, "inverse_loss": None}
    assert structure == first[0] and mod is not first[2]


def _forget(spec):
    sys.modules.pop(f"mechkit_gen_{codegen.family_key(spec)}", None)


def test_a_tampered_cache_file_is_rebuilt_not_executed(tmp_path, monkeypatch):
    monkeypatch.setenv("MECHKIT_CACHE_DIR", str(tmp_path))
    spec, calls = _tiny_spec(7), []
    _forget(spec)
    codegen.load_or_build(spec, _tiny_build(calls))
    _forget(spec)
    marker = tmp_path / "pwned"
    meta_path = tmp_path / f"fam_{codegen.family_key(spec)}.json"
    meta = json.loads(meta_path.read_text())
    meta["display"]["privacy_loss"] = {"expr": f"__import__('os').system('touch {marker}')"}
    meta_path.write_text(json.dumps(meta))
    structure, display, mod = codegen.load_or_build(spec, _tiny_build(calls))
    assert len(calls) == 2                          # rebuilt, not read
    assert not marker.exists()
    assert display["privacy_loss"] == 2 * x
    assert "__import__" not in meta_path.read_text()  # rewritten by the rebuild
    _forget(spec)
    assert codegen.load_or_build(spec, _tiny_build(calls))[1]["privacy_loss"] == 2 * x
    assert len(calls) == 2                          # the rebuilt entry is read back


def test_a_rebuilt_entry_runs_the_module_it_wrote_not_the_damaged_one(tmp_path, monkeypatch):
    """The damaged entry's module is imported before its display is found unreadable: the rebuild must not reuse it
    (its kernels may differ from the rebuilt structure's)."""
    monkeypatch.setenv("MECHKIT_CACHE_DIR", str(tmp_path))
    spec, calls = _tiny_spec(17), []
    _forget(spec)
    codegen.load_or_build(spec, _tiny_build(calls))
    _forget(spec)
    meta_path = tmp_path / f"fam_{codegen.family_key(spec)}.json"
    meta = json.loads(meta_path.read_text())
    meta["display"]["privacy_loss"] = {"expr": "not srepr"}
    meta_path.write_text(json.dumps(meta))

    def build_other(spec):
        calls.append(spec)
        d = Derivation()
        d.add("L", 3 * x, x)
        d.structure = {"kind": "finite", "points": [0.0, 1.0], "L": "L"}
        d.display = {"privacy_loss": 3 * x}
        return d
    structure, display, mod = codegen.load_or_build(spec, build_other)
    assert len(calls) == 2 and display["privacy_loss"] == 3 * x
    assert N.kernel_refs(mod)("L")(0.25, np.zeros(0)) == 0.75


def test_a_truncated_generated_module_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("MECHKIT_CACHE_DIR", str(tmp_path))
    spec, calls = _tiny_spec(11), []
    _forget(spec)
    key = codegen.family_key(spec)
    codegen.load_or_build(spec, _tiny_build(calls))
    _forget(spec)
    mod_path = tmp_path / f"fam_{key}.py"
    mod_path.write_text(mod_path.read_text()[:60])
    structure, display, mod = codegen.load_or_build(spec, _tiny_build(calls))
    assert len(calls) == 2
    assert mod.FAILED == [] and N.kernel_refs(mod)("L")(0.25, np.zeros(0)) == 0.5
    assert sys.modules[f"mechkit_gen_{key}"] is mod
