"""Individual / fully adaptive GDP accounting (mechkit.individual; notes.md section 4, validation 8.1 V4, V5, V9)."""
import math
import os
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mechkit as mk
from mechkit import gdp
from mechkit import individual as ind
from mechkit import persist
from mechkit.individual import filters
from mechkit.errors import MechkitError, ParameterError

DELTA = 1e-5
HYP = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])   # the profile's examples (conftest.py)


def run_steps(acc, mus):
    """Feed a sequence of per-step mu arrays; return per step the filter's output (active, scale), or for an
    odometer (whose step returns None) its state after the step: (spent_sq, reported_mu), copies."""
    out = []
    for mu in mus:
        if isinstance(acc, filters._SquaredBudgetFilter):
            out.append(acc.step(mu, return_scale=True))
        else:
            assert acc.step(mu) is None
            out.append((acc.spent_sq.copy(), np.array(acc.reported_mu(), copy=True)))
    return out


def count_active_steps(filt, mu, max_steps=10_000):
    """Steps a single-example filter takes part in with a constant mu, and the scale of its last step."""
    k, last = 0, None
    for _ in range(max_steps):
        active, scale = filt.step([mu], return_scale=True)
        if not active[0]:
            break
        k, last = k + 1, float(scale[0])
    return k, last


# ------------------------------------------------------------------------------------------ V4 (P3 C.4)

def test_v4_rdp_and_gdp_epsilons_at_420_and_495_steps():
    sigma = 100.0
    mu420, mu495 = math.sqrt(420) / sigma, math.sqrt(495) / sigma
    rdp420 = ind.rdp_epsilon_from_mu(mu420, DELTA)
    assert rdp420 == pytest.approx(0.81562, abs=1e-5)                        # notes 8.3 (iii)
    assert ind.epsilon_from_mu(mu420, DELTA) == pytest.approx(0.74514, abs=1e-5)
    assert ind.epsilon_from_mu(mu495, DELTA) == pytest.approx(0.81523, abs=1e-5)
    # the RDP conversion is the one mechkit.rdp uses, on the derived Gaussian CGF
    ref = mk.rdp.epsilon([(mk.gaussian(sigma=sigma), 420)], DELTA)
    assert rdp420 == pytest.approx(ref, rel=1e-9)
    # "roughly 10 percent smaller epsilon" with GDP
    assert 0.88 < ind.epsilon_from_mu(mu420, DELTA) / rdp420 < 0.93


def test_v4_filters_at_the_rdp_epsilon_of_420_steps():
    """Budget = the RDP epsilon of 420 worst-case steps: the RDP filter allows 420 steps, the GDP filter 495."""
    sigma = 100.0
    eps = ind.rdp_epsilon_from_mu(math.sqrt(420) / sigma, DELTA)
    rdp_filter = ind.RDPFilter(1, epsilon=eps, delta=DELTA)
    k, last = count_active_steps(rdp_filter, 1.0 / sigma)
    assert k == 420 and last > 1 - 1e-6
    assert rdp_filter.epsilon(DELTA)[0] == pytest.approx(eps, abs=1e-12)
    gdp_filter = ind.GDPFilter(1, epsilon=eps, delta=DELTA)
    k, last = count_active_steps(gdp_filter, 1.0 / sigma)
    assert k == 496 and 0 < last < 1            # 495 full steps, the 496th scaled to use the rest (Remark 3)
    assert gdp_filter.halted_at[0] == 496
    assert gdp_filter.spent_sq[0] == gdp_filter.budget_mu ** 2
    assert gdp_filter.epsilon(DELTA)[0] == pytest.approx(eps, abs=1e-12)


def test_v4_filters_at_epsilon_08():
    # budget epsilon = 0.8 at delta = 1e-5, steps of mu = 0.01: each filter takes floor(cap / mu^2) full steps and one
    # scaled step for the rest.  The caps, independently in mpmath: GDP, B^2 with B the mu of mu-GDP whose
    # epsilon(1e-5) is 0.8 (tests/references/mpmath_laws.gdp_delta); RDP, the largest s = sum mu^2 with
    # min_{alpha > 1} alpha s/2 + log(1 - 1/alpha) - (log delta + log alpha)/(alpha - 1) <= 0.8 (the improved
    # conversion, minimised where its derivative s/2 + (log delta + log alpha)/(alpha - 1)^2 vanishes).
    # (B^2 / mu^2 = 478.24 and s / mu^2 = 405.29: 479 and 406 active steps.)
    import mpmath as mp

    from tests.references import mpmath_laws as R
    with mp.workdps(30):
        d, e, mu2 = mp.mpf(DELTA), mp.mpf("0.8"), mp.mpf("0.01") ** 2
        B = mp.findroot(lambda b: mp.log(R.gdp_delta(b, e, dps=30)) - mp.log(d), (mp.mpf("0.1"), mp.mpf("0.5")),
                        solver="bisect")

        def rdp_eps(s):
            a = mp.findroot(lambda a: s / 2 + (mp.log(d) + mp.log(a)) / (a - 1) ** 2, (mp.mpf("1.5"), mp.mpf("1e4")),
                            solver="bisect")
            return a * s / 2 + mp.log(1 - 1 / a) - (mp.log(d) + mp.log(a)) / (a - 1)
        cap_rdp = mp.findroot(lambda s: rdp_eps(s) - e, (mp.mpf("0.01"), mp.mpf("0.1")), solver="bisect")
        want = []
        for full in (B * B / mu2, cap_rdp / mu2):
            frac = full - mp.floor(full)
            assert 1e-6 < frac < 1 - 1e-6                       # not on a knife's edge: no rounding question
            want.append(int(mp.floor(full)) + 1)
    assert want == [479, 406]
    g, r = ind.GDPFilter(1, epsilon=0.8, delta=DELTA), ind.RDPFilter(1, epsilon=0.8, delta=DELTA)
    kg, _ = count_active_steps(g, 0.01)
    kr, _ = count_active_steps(r, 0.01)
    assert [kg, kr] == want
    assert kg / kr > 1.15


def test_rdp_filter_alpha_rho_budget():
    f = ind.RDPFilter(2, alpha=8.0, rho=0.5)
    assert f.budget_sq == pytest.approx(2 * 0.5 / 8.0)
    for _ in range(20):
        f.step([0.1, 0.05])
    np.testing.assert_allclose(f.rdp(8.0), 8.0 * f.spent_sq / 2)
    assert f.rdp(8.0)[0] == pytest.approx(0.5)  # the first example used its budget exactly
    assert f.rdp([2.0, 8.0]).shape == (2, 2)


# ------------------------------------------------------------------------------------------ V5 (P3 App. E)

def test_v5_mimic_epsilon():
    sigma = 10.61
    mu = math.sqrt(50) / sigma
    assert mu == pytest.approx(0.66645, abs=1e-5)
    assert ind.epsilon_from_mu(mu, DELTA) == pytest.approx(2.75238, abs=1e-5)
    for eps, b in ((0.5, 0.1422), (2.75, 0.6659), (10.0, 2.0004)):        # notes 4.9 [CHECK]
        assert ind.mu_from_epsilon(eps, DELTA) == pytest.approx(b, abs=1e-4)


def test_v5_filter_switches_on_after_50_full_batch_steps():
    sigma, clip = 10.61, 0.79
    filt = ind.GDPFilter(3, budget_mu=math.sqrt(50) / sigma)
    norms = np.array([5.0, 0.3, 0.79])             # clipped at the bound, below it, exactly at it
    participation = np.zeros(3, dtype=int)
    for _ in range(100):
        participation += filt.step(ind.mu_from_norms(norms, clip, sigma * clip))
    assert participation.tolist()[0] == 50 and participation.tolist()[2] == 50
    assert participation[1] == 100
    eps = filt.epsilon(DELTA)
    assert eps[0] == pytest.approx(2.75238, abs=1e-5) and eps[2] == eps[0]
    assert eps[1] < eps[0]
    assert eps[0] == pytest.approx(filt.budget_epsilon(DELTA), rel=1e-12)


# ------------------------------------------------------------------------------ worst case = composition (V9)

@pytest.mark.parametrize("sigma,k", [(3.0, 37), (100.0, 420)])
def test_example_at_the_clip_bound_gets_the_worst_case_epsilon(sigma, k):
    odo = ind.GDPOdometer(4)
    norms = np.array([1.0, 2.5, 0.4, 0.0])          # clip = 1: two at (or above) the bound, one below, one zero
    for _ in range(k):
        odo.step(ind.mu_from_norms(norms, 1.0, sigma))
    eps = odo.epsilon(DELTA)
    worst = gdp.epsilon(math.sqrt(k) / sigma, DELTA)
    assert eps[0] == pytest.approx(worst, rel=1e-12) and eps[1] == eps[0]
    comp = mk.compose((mk.gaussian(sigma=sigma), k)).epsilon(DELTA, method="gdp")
    assert eps[0] == pytest.approx(float(comp), rel=1e-9)
    assert 0 < eps[2] < eps[0] and eps[3] == 0.0
    assert eps[2] == pytest.approx(gdp.epsilon(0.4 * math.sqrt(k) / sigma, DELTA), rel=1e-12)
    # delta(epsilon) per example is the exact curve
    dl = odo.delta(0.5)
    assert dl[0] == pytest.approx(gdp.delta(math.sqrt(k) / sigma, 0.5), rel=1e-12)
    assert dl[3] == 0.0 and dl[2] < dl[0]


def test_adaptive_filter_theorem2():
    """Algorithm 2: adaptively chosen mu_j, stop when sum mu_j^2 would exceed B^2; the run is B-GDP."""
    filt = ind.AdaptiveGDPFilter(epsilon=1.0, delta=DELTA)
    b = filt.budget_mu
    assert gdp.delta(b, 1.0) <= DELTA * (1 + 1e-12)
    rng = np.random.default_rng(3)
    used = []
    while True:
        mu = float(rng.uniform(0.0, 0.1))
        s = filt.step(mu)
        if s == 0.0:
            break
        used.append(s * mu)
    assert filt.halted
    assert ind.composed_mu(np.array(used)) == pytest.approx(b, rel=1e-12)
    assert filt.epsilon(DELTA) == pytest.approx(1.0, abs=1e-9)
    assert filt.budget_epsilon(DELTA) == pytest.approx(1.0, abs=1e-9)
    with pytest.raises(ParameterError, match="mu must be a scalar"):
        filt.step([0.1])


# ---------------------------------------------------------------------------------- exact budget (Remark 3)

@pytest.mark.parametrize("scale_last_step", [True, False])
def test_filter_stops_examples_exactly_at_the_budget(scale_last_step):
    rng = np.random.default_rng(7)
    n, b = 500, 0.5
    filt = ind.GDPFilter(n, budget_mu=b, scale_last_step=scale_last_step)
    spent = np.zeros(n)                             # what the training loop actually spent, from the scales
    for _ in range(400):
        mu = rng.uniform(0.0, 0.08, n)
        active, scale = filt.step(mu, return_scale=True)
        assert np.array_equal(active, scale > 0)
        assert np.all((scale == 0) | (scale == 1) | ((scale > 0) & (scale < 1)))
        spent += (scale * mu) ** 2
    assert np.all(spent <= b * b * (1 + 1e-12))
    assert np.all(filt.spent_sq <= b * b)
    assert np.all(spent <= filt.spent_sq * (1 + 1e-12))          # the record never under-counts
    if scale_last_step:
        assert filt.n_active == 0
        np.testing.assert_allclose(spent, b * b, rtol=1e-12)      # every example used exactly its budget
        assert np.all(filt.spent_sq == b * b)
        np.testing.assert_allclose(filt.epsilon(DELTA), filt.budget_epsilon(DELTA), rtol=1e-12)
    else:
        # Algorithm 1 as printed: left-out examples are not charged and stop below the budget
        assert np.all(spent == filt.spent_sq)
        assert np.all(filt.epsilon(DELTA) <= filt.budget_epsilon(DELTA) + 1e-12)


def test_without_scaling_an_example_may_come_back():
    filt = ind.GDPFilter(1, budget_mu=1.0, scale_last_step=False)
    assert filt.step([0.8])[0]
    assert not filt.step([0.7])[0]                  # 0.64 + 0.49 > 1: left out, not charged
    assert filt.spent_sq[0] == pytest.approx(0.64)
    assert filt.step([0.5])[0]                      # 0.64 + 0.25 <= 1
    assert filt.spent_sq[0] == pytest.approx(0.89)


def test_halted_examples_stay_out():
    filt = ind.GDPFilter(2, budget_mu=1.0)
    filt.step([2.0, 0.1])
    assert filt.halted_at.tolist() == [1, -1]
    active, scale = filt.step([0.0, 0.1], return_scale=True)
    assert active.tolist() == [False, True] and scale[0] == 0.0
    assert filt.spent_sq[0] == 1.0


def test_odometer_levels():
    odo = ind.GDPOdometer(3, increment=0.1)
    for _ in range(10):
        odo.step([0.05, 0.031, 0.0])
    lv = odo.levels()
    assert lv.tolist() == [3, 1, 0]                 # 0.025 / 0.01 -> 3, 0.00961 / 0.01 -> 1
    np.testing.assert_allclose(odo.reported_mu(), [math.sqrt(3) * 0.1, 0.1, 0.0])
    raw = ind.GDPOdometer(3)
    for _ in range(10):
        raw.step([0.05, 0.031, 0.0])
    assert np.all(odo.epsilon(DELTA) >= raw.epsilon(DELTA))


# ------------------------------------------------------------------------------------------- hypothesis

@st.composite
def runs(draw):
    n = draw(st.integers(1, 12))
    k = draw(st.integers(1, 25))
    sigma = draw(st.floats(0.5, 50.0))
    norms = draw(st.lists(st.lists(st.floats(0.0, 3.0), min_size=n, max_size=n), min_size=k, max_size=k))
    return sigma, np.array(norms)


@HYP
@given(runs(), st.sampled_from([1e-10, 1e-5, 1e-2]))
def test_individual_epsilons_monotone_and_below_worst_case(run, delta):
    sigma, norms = run
    k, n = norms.shape
    odo = ind.GDPOdometer(n)
    filt = ind.GDPFilter(n, budget_mu=0.6 * math.sqrt(k) / sigma)
    for row in norms:
        mu = ind.mu_from_norms(row, 1.0, sigma)
        odo.step(mu)
        filt.step(mu)
    worst = gdp.epsilon(math.sqrt(k) / sigma, delta)
    for acc, bound in ((odo, worst), (filt, filt.budget_epsilon(delta))):
        eps = acc.epsilon(delta)
        order = np.argsort(acc.spent_sq, kind="stable")
        assert np.all(np.diff(eps[order]) >= 0)                    # monotone in the spent budget
        assert np.all(eps <= bound * (1 + 1e-12) + 1e-15)          # never above the worst case / the guarantee
        assert np.all(eps >= 0)
    rdp_eps = ind.rdp_epsilon_from_mu(odo.spent_mu, delta)
    assert np.all(rdp_eps >= odo.epsilon(delta) - 1e-12)          # RDP is never tighter than the exact GDP curve


def test_epsilons_exactly_monotone_for_nearly_equal_budgets():
    """Found by hypothesis: spent values a few ulps apart must not give epsilons in the wrong order."""
    odo = ind.GDPOdometer(3)
    for row in ([0.0, 1.0, 0.0], [0.0, 1.0, 1.0], [0.0, 1.1920929e-07, 1.0]):
        odo.step(ind.mu_from_norms(np.array(row), 1.0, 34.0))
    assert odo.spent_sq[1] > odo.spent_sq[2]
    eps = odo.epsilon(1e-10)
    assert eps[1] >= eps[2] > eps[0] == 0.0
    mus = 0.03 + np.arange(200) * 1e-17
    for f in (ind.epsilon_from_mu, ind.rdp_epsilon_from_mu):
        assert np.all(np.diff(f(mus, 1e-10)) >= 0)


@HYP
@given(st.lists(st.floats(1e-4, 20.0), min_size=1, max_size=20), st.floats(1e-12, 0.9))
def test_vectorised_epsilon_matches_gdp(mus, delta):
    got = ind.epsilon_from_mu(np.array(mus), delta)
    ref = np.array([gdp.epsilon(m, delta) for m in mus])
    np.testing.assert_allclose(got, ref, rtol=1e-8, atol=1e-13)
    # the smallest epsilon with delta(eps) <= delta: delta at the answer is (numerically) at most delta
    for m, e in zip(mus, got):
        if e > 0:
            assert gdp.delta(m, e) <= delta * (1 + 1e-9)


@HYP
@given(st.floats(0.05, 20.0), st.floats(1e-12, 0.5))
def test_budget_conversion_roundtrip(eps, delta):
    b = ind.mu_from_epsilon(eps, delta)
    assert float(gdp.log_delta(b, eps)[0]) <= math.log(delta)
    assert gdp.epsilon(b, delta) == pytest.approx(eps, rel=1e-9, abs=1e-12)


# -------------------------------------------------------------------------------------------- save / load

def _mus(seed, n, k):
    """Per-step mu arrays whose examples exhaust a budget of order 0.25 between about step 15 and never."""
    rng = np.random.default_rng(seed)
    level = rng.uniform(0.2, 2.0, n)
    return [level * rng.uniform(0.0, 0.05, n) * (rng.random(n) < 0.9) for _ in range(k)]


@pytest.mark.parametrize("make", [
    lambda n: ind.GDPFilter(n, budget_mu=0.25),
    lambda n: ind.GDPFilter(n, epsilon=1.0, delta=DELTA, scale_last_step=False),
    lambda n: ind.RDPFilter(n, epsilon=1.0, delta=DELTA),
    lambda n: ind.GDPOdometer(n),
    lambda n: ind.GDPOdometer(n, increment=0.05),
])
def test_save_load_is_bit_identical(tmp_path, make):
    n = 300
    mus = _mus(11, n, 100)
    ref = make(n)
    ref_out = run_steps(ref, mus)
    acc = make(n)
    out = run_steps(acc, mus[:50])
    path = tmp_path / "state.npz"
    acc.save(path)
    del acc
    restored = ind.load(path)
    assert type(restored) is type(ref) and restored.steps == 50
    out += run_steps(restored, mus[50:])
    assert len(out) == len(ref_out) == 100
    for a, b in zip(ref_out, out):          # every step, the odometers' included
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert restored.steps == ref.steps == 100
    assert np.array_equal(restored.spent_sq, ref.spent_sq)
    assert np.array_equal(restored.epsilon(DELTA), ref.epsilon(DELTA))
    if isinstance(ref, filters._SquaredBudgetFilter):
        assert np.array_equal(restored.halted_at, ref.halted_at)
        # the filter really acted in the second half: examples were left out or scaled after the restore
        assert any((b[1] < 1).any() for b in out[50:])
        if ref.scale_last_step:                      # some examples stopped before the save, some after, some never
            assert np.any((ref.halted_at > 0) & (ref.halted_at <= 50)) and np.any(ref.halted_at > 50)
            assert np.any(ref.halted_at == -1)
    assert [p.name for p in tmp_path.iterdir()] == ["state.npz"]   # no temp file left behind


def test_save_load_adaptive_filter(tmp_path):
    a, b = ind.AdaptiveGDPFilter(budget_mu=0.3), ind.AdaptiveGDPFilter(budget_mu=0.3)
    seq = [0.05, 0.1, 0.02, 0.2, 0.1, 0.3]
    ra = [a.step(m) for m in seq]
    rb = [b.step(m) for m in seq[:3]]
    b.save(tmp_path / "f")
    b = ind.AdaptiveGDPFilter.load(tmp_path / "f")
    rb += [b.step(m) for m in seq[3:]]
    assert ra == rb and a.halted and b.halted
    assert a.epsilon(DELTA) == b.epsilon(DELTA)


def test_save_overwrites_atomically(tmp_path, monkeypatch):
    path = tmp_path / "state.npz"
    f = ind.GDPFilter(10, budget_mu=1.0)
    f.save(path)
    before = path.read_bytes()
    f.step(np.full(10, 0.1))

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        f.save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before              # the old state is intact
    assert [p.name for p in tmp_path.iterdir()] == ["state.npz"]
    f.save(path)
    assert ind.load(path).steps == 1


def _saved(tmp_path):
    f = ind.GDPFilter(50, budget_mu=0.3)
    for mu in _mus(5, 50, 30):
        f.step(mu)
    path = tmp_path / "good.npz"
    f.save(path)
    return f, path


@pytest.mark.parametrize("cut", [0, 1, 10, 100, 0.5, -1, -20])
def test_truncated_file_is_rejected(tmp_path, cut):
    _, path = _saved(tmp_path)
    data = path.read_bytes()
    n = int(len(data) * cut) if isinstance(cut, float) else cut
    bad = tmp_path / "truncated.npz"
    bad.write_bytes(data[:n])
    with pytest.raises(ind.StateFileError, match="truncated.npz"):
        ind.GDPFilter.load(bad)


def test_corrupt_files_are_rejected(tmp_path):
    f, path = _saved(tmp_path)
    data = bytearray(path.read_bytes())
    # flip a byte inside the spent_sq array data (the zip CRC or the SHA-256 must catch it)
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("spent_sq.npy")
    pos = info.header_offset + 30 + len(info.filename) + len(info.extra) + 200
    for i, at in enumerate([pos, len(data) // 3, len(data) - 30]):
        bad = bytearray(data)
        bad[at] ^= 0x5A
        p = tmp_path / f"corrupt{i}.npz"
        p.write_bytes(bytes(bad))
        with pytest.raises(ind.StateFileError, match=f"corrupt{i}.npz"):
            ind.load(p)
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not a state file at all" * 10)
    with pytest.raises(ind.StateFileError, match="garbage.npz"):
        ind.load(garbage)
    plain = tmp_path / "plain.npy"
    np.save(plain, np.zeros(3))
    with pytest.raises(ind.StateFileError, match="plain.npy"):
        ind.load(plain)
    # a well-formed npz that is not ours
    other = tmp_path / "other.npz"
    np.savez(other, spent_sq=np.zeros(3))
    with pytest.raises(ind.StateFileError, match="missing"):
        ind.load(other)
    # a valid file of another kind
    with pytest.raises(ind.StateFileError, match="not a 'RDPFilter'"):
        ind.RDPFilter.load(path)
    with pytest.raises(FileNotFoundError):
        ind.load(tmp_path / "absent.npz")
    assert issubclass(ind.StateFileError, MechkitError)


def test_tampered_content_with_valid_zip_is_rejected(tmp_path):
    """Rewrite one array inside a well-formed archive: only the SHA-256 can notice."""
    _, path = _saved(tmp_path)
    with np.load(path) as z:
        members = {k: z[k] for k in z.files}
    members["spent_sq"] = members["spent_sq"].copy()
    members["spent_sq"][3] = 0.0
    p = tmp_path / "tampered.npz"
    np.savez(p, **members)
    with pytest.raises(ind.StateFileError, match="checksum"):
        ind.load(p)


def test_future_version_is_rejected(tmp_path):
    import json
    _, path = _saved(tmp_path)
    with np.load(path) as z:
        members = {k: z[k] for k in z.files}
    meta = json.loads(members["meta"].tobytes())
    meta["version"] = 99
    mb = json.dumps(meta, sort_keys=True).encode()
    arrays = {k: v for k, v in members.items() if k not in ("meta", "sha256")}
    sha = persist.digest(arrays, mb)
    p = tmp_path / "future.npz"
    np.savez(p, meta=np.frombuffer(mb, np.uint8), sha256=np.frombuffer(sha.encode(), np.uint8), **arrays)
    with pytest.raises(ind.StateFileError, match="version 99"):
        ind.load(p)


# --------------------------------------------------------------------------------------------- bad input

def _snapshot(acc):
    snap = {"steps": acc.steps, "spent": np.array(acc.spent_sq, copy=True)}
    if isinstance(acc, filters._SquaredBudgetFilter):
        snap.update(halted=np.array(acc.halted_at, copy=True), scale=acc.last_scale)
    return snap


def _same(a, b):
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


BAD_STEPS = [
    (np.array([0.1, -0.2, 0.1, 0.1]), r"mu must lie in \[0, 1e\+100\]"),
    (np.array([0.1, np.nan, 0.1, 0.1]), r"mu must lie in \[0, 1e\+100\]"),
    (np.array([0.1, 0.1, np.inf, 0.1]), r"mu must lie in \[0, 1e\+100\]"),
    (np.array([0.1, 0.1, 1e200, 0.1]), r"mu must lie in \[0, 1e\+100\].*index 2"),
    (np.array([0.1, 0.1, 0.1]), r"mu must be a 1-D array of length 4"),
    (np.array([0.1, 0.1, 0.1, 0.1, 0.1]), r"mu must be a 1-D array of length 4"),
    (np.full((2, 2), 0.1), r"mu must be a 1-D array of length 4"),
    (0.1, r"mu must be a 1-D array of length 4"),
    (["a", "b", "c", "d"], r"mu must be an array of real numbers"),
    (np.array([1 + 1j] * 4), r"mu must be an array of real numbers"),
    ([None] * 4, r"mu must be an array of real numbers"),
]


@pytest.mark.parametrize("make", [lambda: ind.GDPFilter(4, budget_mu=0.3), lambda: ind.RDPFilter(4, alpha=4, rho=0.1),
                                  lambda: ind.GDPOdometer(4)])
@pytest.mark.parametrize("bad,msg", BAD_STEPS)
def test_bad_step_leaves_state_unchanged(make, bad, msg):
    acc = make()
    for _ in range(7):
        acc.step(np.array([0.05, 0.1, 0.2, 0.0]))
    before = _snapshot(acc)
    with pytest.raises(ParameterError, match=msg):
        acc.step(bad)
    assert _same(before, _snapshot(acc))
    with pytest.raises(ParameterError, match=r"delta must lie in \(0.0, 1.0\)"):
        acc.epsilon(1.5)
    assert _same(before, _snapshot(acc))
    acc.step(np.array([0.05, 0.1, 0.2, 0.0]))        # still usable
    assert acc.steps == 8


@pytest.mark.parametrize("kwargs,msg", [
    ({"budget_mu": 0.0}, r"budget_mu must lie in \(0.0, inf\)"),
    ({"budget_mu": -1.0}, r"budget_mu must lie in \(0.0, inf\)"),
    ({"budget_mu": float("nan")}, r"budget_mu must be finite"),
    ({"epsilon": 1.0, "delta": 0.0}, r"delta must lie in \(0.0, 1.0\)"),
    ({"epsilon": 1.0, "delta": 1.0}, r"delta must lie in \(0.0, 1.0\)"),
    ({"epsilon": 1.0, "delta": -1e-5}, r"delta must lie in \(0.0, 1.0\)"),
    ({"epsilon": 0.0, "delta": 1e-5}, r"epsilon must lie in \(0.0, inf\)"),
    ({"epsilon": -1.0, "delta": 1e-5}, r"epsilon must lie in \(0.0, inf\)"),
    ({"epsilon": 1.0}, "budget"),
    ({}, "budget"),
    ({"budget_mu": 1.0, "epsilon": 1.0, "delta": 1e-5}, "not both"),
])
def test_bad_budget(kwargs, msg):
    with pytest.raises(ParameterError, match=msg):
        ind.GDPFilter(10, **kwargs)


@pytest.mark.parametrize("kwargs,msg", [
    ({"alpha": 1.0, "rho": 1.0}, r"alpha must lie in \(1.0, inf\)"),
    ({"alpha": 2.0, "rho": 0.0}, r"rho must lie in \(0.0, inf\)"),
    ({"alpha": 2.0}, "both alpha"),
    ({"epsilon": 1.0, "delta": 2.0}, r"delta must lie in \(0.0, 1.0\)"),
    ({"alpha": 2.0, "rho": 1.0, "epsilon": 1.0, "delta": 1e-5}, "not both"),
])
def test_bad_rdp_budget(kwargs, msg):
    with pytest.raises(ParameterError, match=msg):
        ind.RDPFilter(10, **kwargs)


@pytest.mark.parametrize("n", [0, -3, 2.5, "10", True])
def test_bad_n_examples(n):
    with pytest.raises(ParameterError, match="n_examples must be a positive integer"):
        ind.GDPFilter(n, budget_mu=1.0)


def test_bad_norms_clip_sigma():
    with pytest.raises(ParameterError, match=r"norms must lie in \[0, inf\).*index 1"):
        ind.mu_from_norms([1.0, -0.5], 1.0, 2.0)
    with pytest.raises(ParameterError, match=r"norms must lie in \[0, inf\)"):
        ind.mu_from_norms([1.0, float("nan")], 1.0, 2.0)
    with pytest.raises(ParameterError, match=r"clip must lie in \(0.0, inf\)"):
        ind.mu_from_norms([1.0], 0.0, 2.0)
    with pytest.raises(ParameterError, match=r"sigma must lie in \(0.0, inf\)"):
        ind.mu_from_norms([1.0], 1.0, -2.0)
    np.testing.assert_array_equal(ind.mu_from_norms([0.5, 3.0], 1.0, 2.0), [0.25, 0.5])
    assert ind.mu_from_norms(3.0, 1.0, 2.0) == 0.5


def test_bad_queries():
    with pytest.raises(ParameterError, match=r"mu must lie in \[0, 1e\+100\]"):
        ind.epsilon_from_mu([0.1, -1.0], DELTA)
    with pytest.raises(ParameterError, match=r"delta must lie in \(0.0, 1.0\)"):
        ind.epsilon_from_mu([0.1], 0.0)
    with pytest.raises(ParameterError, match=r"epsilon must lie in \[0.0, inf\)"):
        ind.delta_from_mu([0.1], -1.0)
    with pytest.raises(ParameterError, match="increment"):
        ind.GDPOdometer(3).levels()
    with pytest.raises(ParameterError, match=r"increment must lie in \(0.0, inf\)"):
        ind.GDPOdometer(3, increment=0.0)
