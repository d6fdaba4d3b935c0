"""A family's kernels compile when a computation first asks for one (issue "Time to first answer"): loading a
generated module compiles nothing, a request compiles that kernel alone for its one signature, a kernel Numba
rejects is a SpecificationError naming it (the progress line of their summed time: tests/test_startup.py)."""
import sys

import numba
import numpy as np
import pytest
import sympy as sp

from mechkit import SpecificationError
from mechkit.engine import numerics as N
from mechkit.symbolic import codegen
from mechkit.symbolic.derive import Derivation, Spec

x = sp.Symbol("x", real=True)
SIG = (numba.float64, numba.float64[::1])


def _spec(tag):
    return Spec(p=sp.exp(x) / tag, q=sp.exp(-x) / tag, var=x, kind="finite", lo=0, hi=1, points=(0.0, 1.0))


def _build(spec):
    d = Derivation()
    d.add("L", 2 * x, x)
    d.add("B", x ** 2 + 1, x)
    d.structure = {"kind": "finite", "points": [0.0, 1.0], "L": "L"}
    d.display = {"privacy_loss": 2 * x}
    return d


@pytest.fixture
def module(tmp_path, monkeypatch):
    monkeypatch.setenv("MECHKIT_CACHE_DIR", str(tmp_path))
    spec = _spec(17)
    name = f"mechkit_gen_{codegen.family_key(spec)}"
    sys.modules.pop(name, None)
    yield codegen.load_or_build(spec, _build, label="the family 'tiny'")[2]
    sys.modules.pop(name, None)


def test_loading_compiles_nothing_and_a_request_compiles_one_kernel(module):
    assert module.k_L.signatures == [] and module.k_B.signatures == []
    assert module.LABEL == "the family 'tiny'"
    get = N.kernel_refs(module)
    assert get("L")(0.25, np.zeros(0)) == 0.5
    assert module.k_L.signatures == [SIG] and module.k_B.signatures == []
    # one version only (an int converts); the engine takes the same kernel by address
    assert get("L")(1, np.zeros(0)) == 2.0 and module.k_L.signatures == [SIG]
    assert N.vmap(get("B"), np.array([1.0, 3.0]), np.zeros(0)).tolist() == [2.0, 10.0]
    assert module.k_B.signatures == [SIG] and get("B") is get("B")


def test_a_kernel_numba_rejects_is_an_error_naming_it(module):
    module.k_B = numba.njit(lambda X, theta: float(X.no_such_attribute))
    with pytest.raises(SpecificationError, match="derived kernel B cannot be compiled"):
        N.kernel_refs(module)("B")
    assert N.kernel_refs(module)("L")(1.0, np.zeros(0)) == 2.0  # the others are unaffected


def test_threads_asking_for_one_kernel_at_once_get_it_compiled_once(module):
    """The FFT composes its two directions in two threads: both may ask for a kernel not compiled yet.  Before the
    lock, the second thread's compile met the first's ``disable_compile`` ("compilation disabled")."""
    import threading

    get = N.kernel_refs(module)
    barrier = threading.Barrier(4)
    out, errors = [], []

    def ask():
        barrier.wait()
        try:
            out.append(get("B"))
        except Exception as exc:  # what the race raised
            errors.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(out) == 4 and all(r is out[0] for r in out)
    assert module.k_B.signatures == [SIG] and out[0](3.0, np.zeros(0)) == 10.0
