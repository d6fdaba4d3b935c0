"""Estimate and EstimateArray against NumPy's protocol: indexing keeps the bounds element by element, arithmetic,
reductions and NumPy functions give plain results, pickling and repr keep/show the bounds."""
import copy
import pickle

import numpy as np
import pytest

from mechkit import Estimate, EstimateArray


def vec():
    return EstimateArray([1.0, 2.0, 3.0, 4.0], [0.5, 1.5, 2.5, 3.5], [1.25, 2.25, 3.25, 4.25], "fft", True,
                         {"n": 7})


def mat():
    v = np.arange(6.0).reshape(2, 3)
    return EstimateArray(v, v - 0.5, v + 0.25, "spa", True, {"n": 1})


def same(a, values, lower, upper):
    """``a`` is an EstimateArray with these values and bounds (same shapes)."""
    assert type(a) is EstimateArray
    for got, want in ((np.asarray(a), values), (a.lower, lower), (a.upper, upper)):
        assert isinstance(got, np.ndarray) and type(got) is np.ndarray
        assert got.shape == np.shape(want)
        assert np.array_equal(got, want)


# ---- Estimate -------------------------------------------------------------------------------------------------

def test_estimate_is_its_value_and_arithmetic_is_plain():
    e = Estimate(2.0, 1.5, 2.5, "fft", True, {"k": 1})
    assert e == 2.0 and e.value == 2.0 and (e.lower, e.upper, e.method, e.certified) == (1.5, 2.5, "fft", True)
    for r in (e + 1, e * 2, -e, e - e):
        assert type(r) is float


@pytest.mark.parametrize("e", [Estimate(2.0, 1.5, 2.5, "fft", True, {"k": [1, 2]}),
                               Estimate(2.0, 1.5, 2.5, "fft-fa", False, {"n": 3}),
                               Estimate(2.0, method="rdp")])
def test_estimate_pickle_and_copy_round_trip(e):
    for r in (pickle.loads(pickle.dumps(e)), pickle.loads(pickle.dumps(e, protocol=2)), copy.copy(e), copy.deepcopy(e)):
        assert type(r) is Estimate and float(r) == float(e)
        assert (r.lower, r.upper, r.method, r.certified, r.details) == (e.lower, e.upper, e.method, e.certified,
                                                                         e.details)


def test_estimate_repr_shows_bounds_and_whether_certified():
    assert repr(Estimate(2.0, 1.5, 2.5, "fft", True)) == "Estimate(2, lower=1.5, upper=2.5, method='fft')"
    # uncertified bounds (e.g. variant='fa' error estimates) are shown, and flagged
    assert repr(Estimate(2.0, 1.5, 2.5, "fft-fa", False)) == \
        "Estimate(2, lower=1.5, upper=2.5, method='fft-fa', certified=False)"
    assert repr(Estimate(2.0, method="x")) == "Estimate(2, method='x', certified=False)"


# ---- EstimateArray: construction and indexing ----------------------------------------------------------------

def test_construction_gives_bounds_of_the_values_shape_and_owns_its_values():
    src = np.array([1.0, 2.0])
    a = EstimateArray(src, 0.0, [3.0, 4.0], "gdp", False)
    same(a, [1.0, 2.0], [0.0, 0.0], [3.0, 4.0])
    src[0] = 9.0
    assert a[0] == 1.0


@pytest.mark.parametrize("i", [0, 2, -1, -4, np.int64(1)])
def test_integer_index_gives_an_estimate_with_its_own_bounds(i):
    a = vec()
    e = a[i]
    assert type(e) is Estimate
    assert (float(e), e.lower, e.upper) == (np.asarray(a)[i], a.lower[i], a.upper[i])
    assert (e.method, e.certified, e.details) == ("fft", True, {"n": 7})


def test_tuple_of_integers_gives_an_estimate_and_a_row_gives_an_array():
    m = mat()
    e = m[1, -1]
    assert type(e) is Estimate and (float(e), e.lower, e.upper) == (5.0, 4.5, 5.25)
    same(m[-1], [3.0, 4.0, 5.0], [2.5, 3.5, 4.5], [3.25, 4.25, 5.25])
    z = EstimateArray(2.0, 1.0, 3.0, "fft", True)
    assert type(z[()]) is Estimate and z[()].upper == 3.0


@pytest.mark.parametrize("key", [(-1, ...), (..., 0), (0, None), Ellipsis])
def test_an_index_with_ellipsis_or_newaxis_gives_an_array(key):
    # NumPy requires y[-1, ...] to be an array (np.linspace, matplotlib's hist rely on it)
    a = vec()
    r = a[key]
    want = np.asarray(a)[key]
    assert isinstance(r, np.ndarray)
    same(r, want, a.lower[key], a.upper[key])
    assert r.certified and r.method == "fft"


@pytest.mark.parametrize("key", [slice(1, None), slice(None, None, -1), slice(1, 3), slice(5, 9)])
def test_slices_slice_the_bounds(key):
    a = vec()
    same(a[key], np.asarray(a)[key], a.lower[key], a.upper[key])


def test_two_dimensional_slices_and_reversals():
    m = mat()
    for key in [(slice(None), slice(None, None, -1)), (slice(None), 1), (slice(0, 1), slice(1, None))]:
        same(m[key], np.asarray(m)[key], m.lower[key], m.upper[key])


def test_boolean_masks_and_integer_arrays_select_the_bounds_too():
    a = vec()
    mask = a > 1.5
    assert type(mask) is np.ndarray
    same(a[mask], [2.0, 3.0, 4.0], [1.5, 2.5, 3.5], [2.25, 3.25, 4.25])
    same(a[[3, 0]], [4.0, 1.0], [3.5, 0.5], [4.25, 1.25])
    m = mat()
    same(m[m > 2.5], [3.0, 4.0, 5.0], [2.5, 3.5, 4.5], [3.25, 4.25, 5.25])


def test_iteration_gives_estimates():
    a = vec()
    items = list(a)
    assert all(type(e) is Estimate for e in items)
    assert [(float(e), e.lower, e.upper) for e in items] == list(zip(np.asarray(a), a.lower, a.upper))


def test_methods_that_rearrange_elements_rearrange_the_bounds():
    m = mat()
    v, lo, up = np.asarray(m), m.lower, m.upper
    same(m.T, v.T, lo.T, up.T)
    same(m.transpose(), v.T, lo.T, up.T)
    same(m.reshape(3, 2), v.reshape(3, 2), lo.reshape(3, 2), up.reshape(3, 2))
    same(m.ravel(), v.ravel(), lo.ravel(), up.ravel())
    same(m.flatten(), v.flatten(), lo.flatten(), up.flatten())
    same(m[:1].squeeze(), v[0], lo[0], up[0])
    same(m.take([2, 0], axis=1), v[:, [2, 0]], lo[:, [2, 0]], up[:, [2, 0]])
    same(m.copy(), v, lo, up)
    assert not np.shares_memory(m.copy(), m)


def test_other_new_arrays_drop_the_bounds_instead_of_keeping_stale_ones():
    a = vec().astype(np.float32)
    assert a.lower is None and a.upper is None and not a.certified


# ---- computing on an EstimateArray gives plain results ----------------------------------------------------------

def test_ufuncs_give_plain_arrays():
    a, b = vec(), vec()
    for r in (a + 1, 1 + a, a * b, a - a, -a, np.exp(a), np.maximum(a, 2.5), a > 2, a / a[0]):
        assert type(r) is np.ndarray and not hasattr(r, "lower")
    assert np.array_equal(a + 1, np.asarray(a) + 1)
    assert type(a[0] + 1) is float
    assert type(a[0] + a) is np.ndarray


def test_in_place_writes_are_refused():
    a = vec()
    with pytest.raises(TypeError, match="not written in place"):
        a += 1
    with pytest.raises(TypeError, match="not written in place"):
        a[0] = 5.0
    with pytest.raises(TypeError, match="not written in place"):
        np.add(a, 1, out=a)
    with pytest.raises(TypeError, match="not written in place"):
        a.sort()
    same(a, [1.0, 2.0, 3.0, 4.0], [0.5, 1.5, 2.5, 3.5], [1.25, 2.25, 3.25, 4.25])
    b = np.array(a)  # a plain writable copy
    b += 1
    assert type(b) is np.ndarray and a[0] == 1.0


def test_reductions_give_plain_numbers():
    a, m = vec(), mat()
    for r in (np.max(a), a.max(), np.min(a), a.sum(), a.mean(), np.median(a), np.std(a)):
        assert not isinstance(r, (np.ndarray, Estimate))
    assert float(np.max(a)) == 4.0 and float(a.mean()) == 2.5
    for r in (m.max(axis=0), np.sum(m, axis=1), m.cumsum()):
        assert type(r) is np.ndarray
    assert np.array_equal(m.max(axis=0), [3.0, 4.0, 5.0])


def test_histogram_matches_that_of_the_plain_values():
    a = vec()
    for kw in ({}, {"bins": 3}, {"bins": "auto"}, {"bins": 2, "range": (0.0, 5.0)}):
        counts, edges = np.histogram(a, **kw)
        ref_counts, ref_edges = np.histogram(np.asarray(a), **kw)
        assert type(counts) is np.ndarray and type(edges) is np.ndarray
        assert np.array_equal(counts, ref_counts) and np.array_equal(edges, ref_edges)


def test_numpy_functions_give_plain_arrays():
    a = vec()
    v = np.asarray(a)
    assert type(v) is np.ndarray and np.shares_memory(v, a) and np.array_equal(v, [1.0, 2.0, 3.0, 4.0])
    assert type(a.value) is np.ndarray
    for r in (np.sort(a[::-1]), np.concatenate([a, a]), np.where(a > 2, a, 0.0), np.linspace(a[0, ...], a[-1, ...], 3),
              np.array(a), np.clip(a, 2, 3), np.round(a)):
        assert type(r) is np.ndarray
    assert np.array_equal(np.sort(a[::-1]), v)


# ---- pickling and repr -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [vec, mat, lambda: mat().T, lambda: vec()[::2],
                                  lambda: EstimateArray([0.1], [0.0], [1.0], "gdp", False, {"mu": 1.0})])
def test_pickle_and_copies_keep_values_bounds_and_metadata(make):
    a = make()
    outs = [pickle.loads(pickle.dumps(a, protocol=p)) for p in (2, pickle.HIGHEST_PROTOCOL)]
    for r in outs + [copy.copy(a), copy.deepcopy(a)]:
        same(r, np.asarray(a), a.lower, a.upper)
        assert (r.method, r.certified, r.details) == (a.method, a.certified, a.details)
        assert type(r[0]) in (Estimate, EstimateArray)


def test_deepcopy_copies_the_details():
    a = vec()
    b = copy.deepcopy(a)
    b.details["n"] = 8
    assert a.details["n"] == 7


def test_repr_shows_values_bounds_and_method():
    r = repr(vec())
    assert r.startswith("EstimateArray([1., 2., 3., 4.],")
    assert "lower=[0.5, 1.5, 2.5, 3.5]" in r and "upper=[1.25, 2.25, 3.25, 4.25]" in r
    assert r.endswith("method='fft')")
    r = repr(EstimateArray([0.1], [0.0], [1.0], "gdp", False))
    assert "lower=[0.]" in r and "upper=[1.]" in r and r.endswith("method='gdp', certified=False)")
    big = repr(EstimateArray(np.linspace(0.0, 1.0, 5000), 0.0, 1.0, "fft", True))
    assert big.count("...") == 3 and len(big) < 1000  # summarised like NumPy's own repr


# ---- third-party consumers ---------------------------------------------------------------------------------------

def test_matplotlib_hist_accepts_an_estimate_array():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    try:
        counts, edges, _ = ax.hist(vec(), bins=3)
    finally:
        plt.close(fig)
    assert np.array_equal(counts, [1, 1, 2]) and np.allclose(edges, [1.0, 2.0, 3.0, 4.0])


def test_a_vectorised_query_indexes_like_its_scalar_answers(mk):
    r = mk.compose((mk.gaussian(sigma=1.0), 4)).delta(np.array([0.5, 1.0, 2.0]), method="gdp")
    assert type(r) is EstimateArray and r.method == "gdp"
    last = r[-1]
    assert type(last) is Estimate and float(last) == pytest.approx(mk.gdp.delta(2.0, 2.0), rel=1e-12)
    same(r[1:], np.asarray(r)[1:], r.lower[1:], r.upper[1:])
    assert isinstance(r[-1, ...], np.ndarray) and r[-1, ...].shape == ()
