"""The CGF quadrature's cumulants from central moments (``laws.core.cumulants_from_central``, Python) are the engine's
compiled ones (``engine.scalars.cumulants_from_central``, used by the tilted moments) to the last bit: the Python
twin spares a cold process that function's compilation, and must not move a CGF derivative."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mechkit.engine import scalars
from mechkit.laws import core

MOMENT = st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.floats(-1e-6, 1e-6, allow_nan=False))


@settings(max_examples=10 * settings.default.max_examples)  # cheap arithmetic; a last-bit difference is rare
@given(st.floats(0.0, 1e6), MOMENT, st.floats(0.0, 1e9), MOMENT, st.floats(0.0, 1e12))
def test_python_twin_is_the_compiled_function_to_the_last_bit(m2, m3, m4, m5, m6):
    assert core.cumulants_from_central(m2, m3, m4, m5, m6) == tuple(scalars.cumulants_from_central(m2, m3, m4, m5, m6))


def test_a_pow_would_differ():
    # the twin writes m2^3 as products, as the compiled code computes it; Python's m2 ** 3 (libm's pow) is not
    # always the same float, which this test shows can be told apart
    x = 1.0000000000000002 * 3.7
    found = False
    for i in range(2000):
        m2 = x + i * 1e-3
        if m2 ** 3 != m2 * m2 * m2:
            found = True
            assert core.cumulants_from_central(m2, 0.0, 0.0, 0.0, 0.0)[4] == scalars.cumulants_from_central(
                m2, 0.0, 0.0, 0.0, 0.0)[4]
            break
    assert found
