"""The individual PLD accountant's compiled epsilon search and its hashed row deduplication, against their
definitions: the smallest epsilon whose delta (NumPy's direct Plancherel sums) is at most the target, and NumPy's
exact ``unique`` of the rows."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mechkit as mk
from mechkit.individual import buckets


def _tables(acc):
    """The accountant's distinct rows' tables: (side, T) per (direction, zoom, band) group (as buckets.evaluate)."""
    rows, _ = buckets.distinct_rows(acc.counts)
    rows = rows[rows.sum(axis=1) > 0].astype(np.float64)
    plan = acc._plan_for(int(rows.sum(axis=1).max()))
    out = []
    for side in plan.sides.values():
        lay = side.layout(rows, plan.tau)
        keys = lay["s"] * (1 << 32) + lay["J"]
        for key in np.unique(keys):
            sel = np.flatnonzero(keys == key)
            s, J = int(key >> 32), int(key & ((1 << 32) - 1))
            out.append((side, side.tables(rows, lay, sel, s, J)))
    return out


@pytest.mark.parametrize("q, z, steps", [(0.05, 0.9, 30), (0.2, 1.5, 12)])
def test_compiled_epsilon_search_finds_the_smallest_crossing(q, z, steps):
    rng = np.random.default_rng(11)
    acc = mk.IndividualPLDAccountant(40, q, z, 1.0, sigma_ratio=1.25, max_sigma_factor=20.0, eps_error=0.02,
                                     delta_error=1e-10)
    level = rng.uniform(0.1, 2.0, 40)
    for _ in range(steps):
        acc.step(level * rng.uniform(0.0, 1.0, 40))
    checked = 0
    for side, T in _tables(acc):
        R = T["A"].shape[0]
        for target in (np.full(R, 1e-5), 10.0 ** rng.uniform(-9, -1, R)):
            eps = side.epsilon_at(T, target)
            assert np.all(np.isfinite(eps)) and np.all(eps >= 0)
            d = side.delta_at(T, eps)
            assert np.all(d <= target * (1 + 1e-9) + 1e-15)  # delta at the answer is at most the target
            pos = eps > 1e-6
            below = side.delta_at(T, np.maximum(eps - 1e-6, 0.0))
            assert np.all(below[pos] > target[pos] * (1 - 1e-9))  # and just below it, above: the smallest
            checked += int(pos.sum())
    assert checked > 20


def test_distinct_rows_are_numpys_unique_rows():
    rng = np.random.default_rng(5)
    base = rng.integers(0, 50, (300, 13)).astype(np.uint16)
    a = base[rng.integers(0, 300, 5000)]
    rows, inv = buckets.distinct_rows(a)
    ref = np.unique(a, axis=0)
    assert rows.shape == ref.shape and np.array_equal(np.unique(rows, axis=0), ref)
    assert np.array_equal(rows[inv], a)


@given(hnp.arrays(np.uint16, st.tuples(st.integers(1, 60), st.integers(1, 7)), elements=st.integers(0, 3)))
def test_distinct_rows_of_random_count_tables(a):
    # small entries: many repeated rows; the rows found are NumPy's unique rows and rebuild the table
    rows, inv = buckets.distinct_rows(a)
    assert np.array_equal(np.unique(rows, axis=0), np.unique(a, axis=0)) and rows.shape[0] == len(np.unique(a, axis=0))
    assert np.array_equal(rows[inv], a)


def test_distinct_rows_fall_back_where_hashes_collide(monkeypatch):
    # every row hashes to 0: the comparison with each hash's first row finds the collision, NumPy's unique answers
    monkeypatch.setattr(buckets, "row_hash_multipliers", lambda m: np.zeros(m, dtype=np.uint64))
    rng = np.random.default_rng(6)
    a = rng.integers(0, 4, (2000, 5)).astype(np.uint16)
    rows, inv = buckets.distinct_rows(a)
    ref, ref_inv = np.unique(a, axis=0, return_inverse=True)
    assert np.array_equal(rows, ref) and np.array_equal(inv, ref_inv.reshape(-1))
