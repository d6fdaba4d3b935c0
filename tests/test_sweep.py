"""mk.sweep (issue 22): a query over a grid of parameters, serially or on an executor, bit-identical either way; bad
input refused before any point is built; mechanisms and compositions that pickle small and answer identically
after the trip (also in a fresh worker process, from the disk cache).  The individual accountants' per-example
queries on the same executors (their rows in blocks, the FFT plan rebuilt from its spec on the worker): bit-identical
to serial too."""
import multiprocessing
import pickle
import warnings
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest
import sympy as sp

import mechkit as mk
from mechkit import ParameterError
from mechkit.composition import SavedComposition
from mechkit.laws.catalog import catalog

GRID = {"sigma": [0.8, 2.0], "k": [3, 30]}
POINTS = [{"sigma": 0.8, "k": 3}, {"sigma": 0.8, "k": 30}, {"sigma": 2.0, "k": 3}, {"sigma": 2.0, "k": 30}]

x = sp.Symbol("x", real=True)
b = sp.Symbol("b", positive=True)


def build(sigma, k):
    """A module-level build (it pickles by reference to worker processes)."""
    return mk.compose((mk.gaussian(sigma=sigma), k))


def gaussian_of(sigma):
    return mk.gaussian(sigma=sigma)


def delta_at_one(m):
    return m.delta(1.0)


def lap(loc):
    return sp.exp(-sp.Abs(x - loc) / b) / (2 * b)


def mechanisms():
    g = mk.gaussian(sigma=1.0)
    return {"catalog": g, "poisson_subsampled": mk.subsample(g, 0.01),
            "replace_one": mk.replace_one(mk.laplace(scale=1.0)),
            "user_family": mk.Mechanism.from_densities(lap(0), lap(1), x, name="lap")(b=1.0)}


def answers(result):
    return [(float(e), e.lower, e.upper, e.method, e.certified, repr(sorted(e.details.items())))
            for e in result.estimates]


@pytest.fixture(scope="module")
def pool():
    """One process pool for the module (workers start fresh: spawn, as dask's do, so they re-bind from the cache)."""
    with ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn")) as ex:
        yield ex


@pytest.fixture(scope="module")
def serial():
    return {method: mk.sweep(build, GRID, delta=1e-5, method=method) for method in ("fft", "auto")}


def test_serial_sweep_is_in_grid_order_and_equals_direct_queries(serial):
    r = serial["fft"]
    assert r.points == POINTS and len(r) == 4
    direct = [build(**p).epsilon(1e-5, method="fft") for p in POINTS]
    assert [(float(e), e.lower, e.upper) for e in r.estimates] == [(float(e), e.lower, e.upper) for e in direct]
    assert np.array_equal(r.values, [float(e) for e in direct])
    assert np.array_equal(r.lower, [e.lower for e in direct]) and np.array_equal(r.upper, [e.upper for e in direct])
    assert [p for p, _ in r] == POINTS and all(isinstance(e, mk.Estimate) for _, e in r)
    assert r.values[1] > r.values[0] > r.values[2]  # more runs, less noise: larger epsilon
    rows = r.to_rows()
    assert list(rows[0]) == ["sigma", "k", "value", "lower", "upper", "method", "certified"]
    assert rows[3]["k"] == 30 and rows[3]["value"] == r.values[3] and rows[3]["certified"] is True
    text = repr(r)
    assert text.startswith("SweepResult(epsilon at delta=1e-05, method='fft', 4 points:") and "sigma=2.0, k=30" in text


def test_delta_queries_list_of_points_and_mechanisms():
    pts = [{"sigma": 1.0}, {"sigma": 0.5}]
    r = mk.sweep(gaussian_of, pts, epsilon=1.0, method="fft")
    assert r.points == pts and r.query == "delta" and r.at == 1.0
    direct = [mk.compose(gaussian_of(**p)).delta(1.0, method="fft") for p in pts]
    assert [(float(e), e.lower, e.upper) for e in r.estimates] == [(float(e), e.lower, e.upper) for e in direct]
    exact = mk.gaussian(sigma=1.0).delta(1.0)
    assert r.estimates[0].lower <= exact <= r.estimates[0].upper and abs(r.values[0] - exact) < 1e-3


@pytest.mark.parametrize("method", ["fft", "auto"])
def test_thread_pool_is_bit_identical_to_serial(serial, method):
    with ThreadPoolExecutor(max_workers=2) as ex:
        r = mk.sweep(build, GRID, delta=1e-5, method=method, executor=ex)
    assert r.points == POINTS and answers(r) == answers(serial[method])


@pytest.mark.parametrize("method", ["fft", "auto"])
def test_process_pool_is_bit_identical_to_serial(serial, pool, method):
    r = mk.sweep(build, GRID, delta=1e-5, method=method, executor=pool)
    assert r.points == POINTS and answers(r) == answers(serial[method])


def test_an_error_at_a_point_is_raised_naming_the_point_or_kept(pool):
    grid = {"sigma": [1.0, -1.0], "k": [2]}
    for executor in (None, pool):
        with pytest.raises(ParameterError, match=r"at the point \{sigma=-1.0, k=2\} of the sweep: sigma must be"):
            mk.sweep(build, grid, delta=1e-5, method="fft", executor=executor)
    serial_kept = mk.sweep(build, grid, delta=1e-5, method="fft", errors="keep")
    kept = mk.sweep(build, grid, delta=1e-5, method="fft", executor=pool, errors="keep")
    assert str(kept.estimates[1]) == str(serial_kept.estimates[1]) and kept.values[0] == serial_kept.values[0]
    assert isinstance(kept.estimates[0], mk.Estimate) and isinstance(kept.estimates[1], ParameterError)
    assert kept.values[0] > 0 and np.isnan(kept.values[1]) and np.isnan(kept.upper[1])
    assert [p for p, _ in kept.failed] == [{"sigma": -1.0, "k": 2}]
    rows = kept.to_rows()
    assert rows[0]["error"] is None and rows[1]["error"].startswith("ParameterError: sigma must be")
    assert rows[1]["value"] is None and "ParameterError" in repr(kept)
    with pytest.raises(ParameterError, match="build must return a Composition or a Mechanism"):
        mk.sweep(lambda k: k, {"k": [1]}, delta=1e-5)


def dpsgd_run(noise_multiplier):
    return mk.dpsgd(noise_multiplier=noise_multiplier, sampling_rate=0.01, steps=1000)


def test_weak_answers_warn_once_naming_the_points():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = mk.sweep(dpsgd_run, {"noise_multiplier": [0.8, 0.9]}, delta=1e-5, method="edgeworth")
    weak = [str(w.message) for w in caught if issubclass(w.category, mk.MechkitWarning)]
    assert len(weak) == 1 and weak[0].startswith("2 of 2 answers say little ({noise_multiplier=0.8}: ")
    assert "{noise_multiplier=0.9}: " in weak[0] and len(r) == 2


def _never(**point):
    raise AssertionError("build was called")


@pytest.mark.parametrize("kwargs, match", [
    (dict(build=_never, grid=GRID), "give exactly one of delta .* and epsilon"),
    (dict(build=_never, grid=GRID, delta=1e-5, epsilon=1.0), "give exactly one of delta .* and epsilon"),
    (dict(build=_never, grid=GRID, delta=1.5), r"delta must lie in \[0.0, 1.0\)"),
    (dict(build=_never, grid=GRID, epsilon=-1.0), r"epsilon must lie in \[0.0, inf\)"),
    (dict(build=_never, grid={}, delta=1e-5), "grid is empty"),
    (dict(build=_never, grid=[], delta=1e-5), "grid is an empty list"),
    (dict(build=_never, grid={"sigma": []}, delta=1e-5), r"grid\['sigma'\] is empty"),
    (dict(build=_never, grid={"sigma": 1.0}, delta=1e-5), r"grid\['sigma'\] must be a list"),
    (dict(build=_never, grid={"sigma": "0.5"}, delta=1e-5), r"grid\['sigma'\] must be a list"),
    (dict(build=_never, grid={"sigma": {0.5, 1.0}}, delta=1e-5), r"grid\['sigma'\] must be a list"),
    (dict(build=_never, grid={1: [0.5]}, delta=1e-5), "grid must have parameter names"),
    (dict(build=_never, grid=[{"sigma": 1.0}, 2.0], delta=1e-5), r"grid\[1\] must be a dict"),
    (dict(build=_never, grid=(0.5, 1.0), delta=1e-5), r"grid\[0\] must be a dict"),
    (dict(build=_never, grid="sigma", delta=1e-5), "grid must be a dict of lists"),
    (dict(build="build", grid=GRID, delta=1e-5), "build must be a callable"),
    (dict(build=_never, grid=GRID, delta=1e-5, method="magic"), "method must be one of"),
    (dict(build=_never, grid=GRID, delta=1e-5, method="fft", order=2), r"unknown option\(s\) \['order'\]"),
    (dict(build=_never, grid=GRID, delta=1e-5, executor="pool"), "executor must be a concurrent.futures.Executor"),
    (dict(build=_never, grid=GRID, delta=1e-5, errors="ignore"), "errors must be one of"),
])
def test_bad_input_is_refused_before_any_point_is_built(kwargs, match):
    with pytest.raises(ParameterError, match=match):
        mk.sweep(**kwargs)


def test_a_lambda_is_refused_for_a_process_pool_before_any_task(pool):
    with pytest.raises(ParameterError, match="build must pickle to run on a process pool.*module-level function"):
        mk.sweep(lambda sigma, k: build(sigma, k), GRID, delta=1e-5, executor=pool)


def test_rows_refuse_parameters_named_like_columns():
    r = mk.sweep(lambda value: mk.gaussian(sigma=value), {"value": [1.0]}, delta=1e-5, method="fft")
    assert r.values[0] > 0
    with pytest.raises(ParameterError, match=r"\['value'\] have the names of result columns"):
        r.to_rows()


@pytest.mark.parametrize("name", ["catalog", "poisson_subsampled", "replace_one", "user_family"])
def test_mechanisms_pickle_small_and_answer_identically(name):
    m = mechanisms()[name]
    blob = pickle.dumps(m)
    assert len(blob) < 4000, len(blob)  # a specification and values, not compiled code
    back = pickle.loads(blob)
    assert isinstance(back, mk.Mechanism) and back.delta(1.0) == m.delta(1.0)
    assert pickle.loads(pickle.dumps(m, protocol=2)).delta(1.0) == m.delta(1.0)  # SymPy's lowest protocol
    assert (back.family.key, back.relation, back.params, back.theta.tolist()) == \
        (m.family.key, m.relation, m.params, m.theta.tolist())


def test_a_catalog_family_pickles_by_name():
    fam = mk.gaussian(sigma=1.0).family  # bound from its shipped record (laws.shipped)
    blob = pickle.dumps(fam)
    assert len(blob) < 200 and pickle.loads(blob) is fam
    real = catalog("gaussian").family  # the catalog module's, built by SymPy
    blob = pickle.dumps(real)
    assert len(blob) < 200 and pickle.loads(blob) is real and real.key == fam.key


def test_compositions_pickle_and_answer_identically():
    run = mk.dpsgd(noise_multiplier=1.0, sampling_rate=0.01, steps=100)
    back = pickle.loads(pickle.dumps(run))
    assert repr(back) == repr(run) and back.items[0][1] == 100
    a, b_ = run.epsilon(1e-5, method="fft"), back.epsilon(1e-5, method="fft")
    assert (float(a), a.lower, a.upper) == (float(b_), b_.lower, b_.upper)
    saved = SavedComposition(run.facts())
    again = pickle.loads(pickle.dumps(saved))
    assert repr(again) == repr(run) and again.facts() == run.facts()


def test_pickled_mechanisms_rebind_in_a_fresh_worker(pool):
    ms = mechanisms()
    got = {name: pool.submit(delta_at_one, m) for name, m in ms.items()}
    assert {name: f.result() for name, f in got.items()} == {name: m.delta(1.0) for name, m in ms.items()}


def individual_answers(executor=None):
    """Per-example answers of an individual PLD accountant (30 examples, 8 steps, 5 buckets) and the GDP, RDP
    filters and odometer (300 examples), with executor=; the callers make the blocks small (ROW_BLOCK, BLOCK)."""
    rng = np.random.default_rng(1)
    acc = mk.IndividualPLDAccountant(30, 0.05, 0.9, 1.0, max_steps=8, sigma_ratio=1.5, max_sigma_factor=4.0,
                                     eps_error=0.05)
    filters = [mk.GDPFilter(300, budget_mu=1.0), mk.RDPFilter(300, epsilon=4.0, delta=1e-5), mk.GDPOdometer(300)]
    for _ in range(8):
        acc.step(rng.uniform(0.0, 1.5, 30))
        for f in filters:
            f.step(rng.uniform(0.0, 0.3, 300))
    out = []
    for est in (acc.epsilon(1e-5, executor=executor), acc.delta(1.0, executor=executor)):
        out += [np.asarray(est), est.lower, est.upper]
    out.append(acc.fitted_mu(executor=executor))
    for f in filters:
        out.append(f.epsilon(1e-5, executor=executor))
        if not isinstance(f, mk.RDPFilter):
            out.append(f.delta(0.5, executor=executor))
    return out


@pytest.fixture
def small_blocks(monkeypatch):
    """Rows and values in blocks of 8 and 64 (tasks on an executor; serial evaluation works in the same blocks)."""
    from mechkit.individual import buckets, conversions

    monkeypatch.setattr(buckets, "ROW_BLOCK", 8)
    monkeypatch.setattr(conversions, "BLOCK", 64)
    return individual_answers()


def same(a, b):
    return len(a) == len(b) and all(x.shape == y.shape and x.tobytes() == y.tobytes() for x, y in zip(a, b))


def test_individual_accountants_on_a_process_pool_are_bit_identical_to_serial(pool, small_blocks):
    assert same(individual_answers(pool), small_blocks)
    with ThreadPoolExecutor(max_workers=2) as ex:
        assert same(individual_answers(ex), small_blocks)
    assert np.all(small_blocks[2] > small_blocks[0]) and np.any(small_blocks[0] > 0)  # upper > value, some spent


def test_dask_distributed_executor_is_bit_identical(serial):
    distributed = pytest.importorskip("dask.distributed")
    import dask

    # dask's workers pin OMP/MKL/OPENBLAS_NUM_THREADS=1 by default; the FFT accountant's BLAS dot products round
    # differently with another thread count (last digit), so here the workers keep this process's BLAS threading
    environ = {"MALLOC_TRIM_THRESHOLD_": 65536}
    with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl, \
            distributed.Client(cl) as client:
        r = mk.sweep(build, GRID, delta=1e-5, method="auto", executor=client.get_executor())
        with pytest.MonkeyPatch.context() as mp:
            from mechkit.individual import buckets, conversions

            mp.setattr(buckets, "ROW_BLOCK", 8)
            mp.setattr(conversions, "BLOCK", 64)
            assert same(individual_answers(client.get_executor()), individual_answers())
    assert r.points == POINTS and answers(r) == answers(serial["auto"])
