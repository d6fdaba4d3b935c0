"""The catalog's shipped derivations (mechanisms/_derived): one current entry per catalog family and per its
subsampled family, nothing stale, and a first use in an empty cache takes the shipped entry instead of deriving."""
import importlib.util
import math

import pytest

import mechkit as mk
from mechkit.laws import catalog
from mechkit.laws import family as F
from mechkit.symbolic import codegen, entries
from tests.helpers import ROOT

REGENERATE = "regenerate with `python mechanisms/_prederive.py` (the derivation code or the catalog changed)"


def _families():
    spec = importlib.util.spec_from_file_location("prederive_script", ROOT / "mechanisms" / "_prederive.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.families()


def test_every_catalog_family_has_a_current_shipped_entry_and_nothing_stale():
    shipped = {p.name for p in catalog.prederived_dir().glob("fam_*.json")}
    wanted = {f"fam_{codegen.family_key(fam.spec)}.json": fam.name for fam in _families()}
    missing = sorted(name for key, name in wanted.items() if key not in shipped)
    assert not missing, f"no current shipped derivation for {missing}: {REGENERATE}"
    assert shipped == set(wanted), f"stale shipped entries {sorted(shipped - set(wanted))}: {REGENERATE}"


def test_first_use_in_an_empty_cache_takes_the_shipped_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("MECHKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(F, "_FAMILIES", {})

    def no_derivation(spec):
        raise AssertionError("derived although a shipped entry exists")
    monkeypatch.setattr(F, "derive", no_derivation)
    base = mk.catalog("laplace").family
    fam = F.Family(p=base.p, q=base.q, var=base.var, name="laplace_again", defaults=base.defaults)
    m = fam(scale=2.0)
    assert (tmp_path / f"fam_{fam.key}.py").exists()
    assert m.delta(0.25) == pytest.approx(1 - math.exp((0.25 - 0.5) / 2), rel=1e-9)


def test_an_unreadable_shipped_entry_is_derived_as_usual(tmp_path, monkeypatch):
    monkeypatch.setenv("MECHKIT_CACHE_DIR", str(tmp_path / "cache"))
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    base = mk.catalog("laplace").family
    (shipped / f"fam_{base.key}.json").write_text("{not json")
    calls = []

    def build(spec):
        calls.append(1)
        return F.derive(spec)
    structure, _, mod = codegen.load_or_build(base.spec, build, prebuilt=shipped)
    assert calls == [1] and "variants" in structure and mod.FAILED == []


def test_cache_key_ignores_comments_and_docstrings_but_not_code():
    base = 'def f(x):\n    """doc"""\n    # why\n    return x + 1\n'
    same = 'def f(x):\n    """another doc"""\n\n    return x + 1  # another why\n'
    changed = 'def f(x):\n    """doc"""\n    return x + 2\n'
    assert entries.code_text(base) == entries.code_text(same)
    assert entries.code_text(base) != entries.code_text(changed)
