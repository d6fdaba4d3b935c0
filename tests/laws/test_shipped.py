"""Catalog families bound from their shipped records (``laws.shipped``): the records describe the catalog families
exactly (a record that drifted from its family fails here), binding from a record gives the same mechanism as the
SymPy path (bit for bit), and where a record cannot serve (other sources, no entry) the SymPy path answers."""
import importlib.util
import math
import pickle

import hypothesis
import numpy as np
import pytest
from hypothesis import strategies as st

import mechkit as mk
from mechkit.laws import catalog, shipped
from mechkit.laws import family as F
from mechkit.symbolic import entries
from mechkit.transforms import subsampled_family
from tests.helpers import ROOT

REGENERATE = "regenerate with `python mechanisms/_prederive.py` (the catalog, the Family constructor, the " \
             "transforms or the derivation code changed)"


def _prederive():
    spec = importlib.util.spec_from_file_location("_prederive_for_test", ROOT / "mechanisms" / "_prederive.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _real(ref):
    name, *variant = ref.split("/")
    fam = catalog.catalog(name).family
    return subsampled_family(fam, *variant) if variant else fam


def test_the_records_are_current_and_describe_their_catalog_families():
    recs = shipped.records()
    assert recs, f"no current records: {REGENERATE}"
    want = {k: v for k, v in _prederive().records().items()
            if (catalog.prederived_dir() / f"fam_{v['key']}.json").exists()}
    assert recs == want, REGENERATE
    # every recorded family: its subsampled families where the catalog ships them, Sum constants the only gap
    assert {"gaussian", "gaussian/poisson/add_remove", "laplace/without_replacement/replace_one"} <= set(recs)
    assert "discrete_gaussian" not in recs  # its normalising sum is evaluated by SymPy at every bind
    for ref, rec in recs.items():
        real, fam = _real(ref), shipped.shipped(ref) if "/" not in ref else None
        assert rec["key"] == real.key and rec["name"] == real.name and rec["relation"] == real.relation
        if fam is not None:
            assert [s.name for s in fam.parameters] == [s.name for s in real.parameters]
            for a, b in zip(fam.parameters, real.parameters):
                assert all(getattr(a, f) == bool(getattr(b, f)) for f in
                           ("is_integer", "is_positive", "is_nonnegative", "is_negative")), (ref, a)
            assert fam.constraints == real.constraints and fam.defaults == real.defaults


def test_mk_name_is_the_same_function_either_way(monkeypatch):
    for name in ("gaussian", "laplace", "randomized_response", "zcdp"):
        fast = shipped.convenience(name)
        monkeypatch.setattr(shipped, "records", lambda: {})
        slow = shipped.convenience(name)
        monkeypatch.undo()
        assert str(fast.__signature__) == str(slow.__signature__) and fast.__doc__ == slow.__doc__
        args = [1.0] * len(fast.__signature__.parameters)
        assert isinstance(fast(*args).family, shipped.ShippedFamily)
        assert not isinstance(slow(*args).family, shipped.ShippedFamily)
        assert fast(*args).delta(0.5) == slow(*args).delta(0.5)


_CASES = (("gaussian", None, None, ("sigma", "sensitivity")),
          ("laplace", "poisson", "add_remove", ("scale", "sensitivity")),
          ("gaussian", "without_replacement", "replace_one", ("sigma", "sensitivity")))


@hypothesis.settings(max_examples=100, deadline=None)
@hypothesis.given(case=st.sampled_from(_CASES), noise=st.floats(0.05, 50.0), sens=st.floats(0.1, 10.0),
                  q=st.floats(1e-6, 1.0), eps=st.floats(-2.0, 5.0))
def test_a_record_binds_the_mechanism_that_sympy_binds(case, noise, sens, q, eps):
    name, scheme, relation, names = case
    params = dict(zip(names, (noise, sens)))
    real, fast = catalog.catalog(name).family, shipped.family(name)
    if scheme is not None:
        real, fast = subsampled_family(real, scheme, relation), subsampled_family(fast, scheme, relation)
        params["sampling_rate"] = q
    assert isinstance(fast, shipped.ShippedFamily) and not isinstance(real, shipped.ShippedFamily)
    got, want = fast(**params), real(**params)
    assert got.theta.tobytes() == want.theta.tobytes() and got.family.key == want.family.key
    assert got.delta(eps) == want.delta(eps) and got.epsilon(1e-6) == want.epsilon(1e-6)


@pytest.mark.parametrize("call", [
    lambda f: f(sigma=-1.0), lambda f: f(sigma=1.0, nosuch=2.0), lambda f: f(), lambda f: f(1.0),
    lambda f: f(sigma="1.0"), lambda f: subsampled_family(f, "without_replacement", "add_remove"),
    lambda f: subsampled_family(subsampled_family(f), "poisson", "add_remove"),
    lambda f: subsampled_family(f)(sigma=1.0, sampling_rate=1.5),
])
def test_bad_values_get_the_same_error_either_way(call):
    errors = []
    for fam in (shipped.family("gaussian"), catalog.catalog("gaussian").family):
        with pytest.raises(mk.ParameterError) as info:
            call(fam)
        errors.append(str(info.value))
    assert errors[0] == errors[1]


def test_records_written_for_other_sources_are_not_used(monkeypatch):
    monkeypatch.setattr(shipped, "sources_hash", lambda: "another checkout")
    shipped.records.cache_clear()
    monkeypatch.setattr(shipped, "_SHIPPED", {})
    try:
        assert shipped.records() == {} and shipped.family("gaussian") is catalog.catalog("gaussian").family
        assert not isinstance(mk.dpsgd(noise_multiplier=1.0, sampling_rate=0.01, steps=10).items[0][0].family,
                              shipped.ShippedFamily)
    finally:
        shipped.records.cache_clear()


def test_a_malformed_record_is_not_used(monkeypatch):
    bad = dict(shipped.records()["laplace"], constants=[["c", ["sum", "scale"]]])
    monkeypatch.setattr(shipped, "records", lambda: {"laplace": bad})
    monkeypatch.setattr(shipped, "_SHIPPED", {})
    assert shipped.shipped("laplace") is None and shipped.family("laplace") is catalog.catalog("laplace").family


def test_without_a_loadable_entry_the_catalog_family_binds(monkeypatch):
    """No cache directory, or neither the cache nor the package holds the entry: the SymPy path (its screen and
    derivation) binds, and answers the same."""
    fam = shipped.ShippedFamily("gaussian", shipped.records()["gaussian"])  # not loaded yet
    monkeypatch.setattr(entries, "load_shipped", lambda key, where: None)
    monkeypatch.setattr(F, "_FAMILIES", {})
    m = fam(sigma=2.0)
    assert m.family is fam.real and m.delta(0.5) == mk.gaussian(sigma=2.0).delta(0.5)


def test_shipped_families_and_mechanisms_pickle_and_come_back_the_same():
    m = mk.subsample(mk.laplace(scale=2.0), 0.05)
    assert isinstance(m.family, shipped.ShippedFamily)
    assert pickle.loads(pickle.dumps(m.family)) is m.family
    back = pickle.loads(pickle.dumps(m))
    assert back.family is m.family and back.delta(0.3) == m.delta(0.3)


def test_what_is_not_recorded_comes_from_the_catalog_family():
    fam = shipped.family("gaussian")
    real = catalog.catalog("gaussian").family
    assert fam.var == real.var and fam.p == real.p and fam.privacy_loss == real.privacy_loss
    rep = mk.replace_one(mk.gaussian(sigma=1.0))  # a transform without a record: SymPy makes it
    assert math.isclose(rep.delta(1.0), mk.replace_one(real(sigma=1.0)).delta(1.0), rel_tol=0, abs_tol=0)
    assert np.isfinite(rep.epsilon(1e-5))


def _values(fam):
    """Parameter values inside every recorded family's ranges: mid-range where a range is given, else 2 (3 for an
    integer; a sampling rate 0.1)."""
    out = {}
    for s in fam.parameters:
        if s.name in fam.defaults:
            continue
        lo, hi, _, _ = fam.constraints.get(s.name, (0.0, math.inf, True, True))
        v = 3.0 if s.is_integer else 2.0
        if math.isfinite(hi):
            v = 0.1 if s.name == "sampling_rate" else (min(lo + 1.0, hi) if s.is_integer else 0.5 * (lo + hi))
        out[s.name] = max(v, lo + 0.25) if not s.is_integer else max(v, lo)
    return out


@pytest.mark.parametrize("ref", sorted(shipped.records()))
def test_every_record_binds_what_its_catalog_family_binds(ref):
    name, *variant = ref.split("/")
    fast = shipped.family(name)
    if variant:
        fast = subsampled_family(fast, *variant)
    real = _real(ref)
    assert isinstance(fast, shipped.ShippedFamily) and fast.key == real.key
    params = _values(fast)
    values = fast._check_params(params)
    assert values == real._check_params(params)
    assert fast._theta(values).tobytes() == real._theta(values).tobytes(), (ref, params)
    if ref.startswith("gaussian_mixture/") and ref.endswith("replace_one"):
        return  # binding compiles their kernels, 4-8 s each, for nothing more than the others check
    got, want = fast(**params), real(**params)
    assert got.theta.tobytes() == want.theta.tobytes() and got.family.key == want.family.key
    assert got.delta(0.5) == want.delta(0.5) and got.relation == want.relation
