"""The CGF quadrature's cumulants from central moments: ``laws.core`` runs the engine's ``cumulants_from_central``
as Python (``.py_func``), sparing a cold process its compilation; the compiled function (the tilted moments') must
give the same floats to the last bit, or a CGF derivative would depend on which path computed it."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mechkit.engine import scalars

MOMENT = st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.floats(-1e-6, 1e-6, allow_nan=False))


@settings(max_examples=10 * settings.default.max_examples)  # cheap arithmetic; a last-bit difference is rare
@given(st.floats(0.0, 1e6), MOMENT, st.floats(0.0, 1e9), MOMENT, st.floats(0.0, 1e12))
def test_python_function_is_the_compiled_function_to_the_last_bit(m2, m3, m4, m5, m6):
    f = scalars.cumulants_from_central
    assert f.py_func(m2, m3, m4, m5, m6) == tuple(f(m2, m3, m4, m5, m6))


def test_the_cube_is_written_as_products():
    # a power in the formula would be libm's pow when run as Python and repeated multiplication compiled: at such an
    # m2 the two differ, and the function must still agree with itself compiled
    f = scalars.cumulants_from_central
    candidates = (3.7000000000000006 + i * 1e-3 for i in range(2000))
    m2 = next(x for x in candidates if x ** 3 != x * x * x)
    assert f.py_func(m2, 0.0, 0.0, 0.0, 0.0)[4] == f(m2, 0.0, 0.0, 0.0, 0.0)[4]


def test_the_quadrature_has_no_copy_of_the_formula():
    from mechkit.laws import core
    assert not hasattr(core, "cumulants_from_central")
