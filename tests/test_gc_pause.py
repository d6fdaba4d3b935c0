"""The cyclic garbage collector is off while mechkit's own functions compile, and as it was afterwards
(``engine.collection``)."""
from __future__ import annotations

import gc
import subprocess
import threading
from types import ModuleType, SimpleNamespace

import numpy as np
import pytest
from numba import njit, types
from numba.core import event

from mechkit.engine import collection
from tests.helpers import second_process_launch


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


class _Seen(event.Listener):
    """Whether the collector was on each time Numba's compiler lock was taken (to compile, or to load a compiled
    function from the disk cache)."""

    def __init__(self):
        self.states = []

    def on_start(self, ev):
        self.states.append(gc.isenabled())

    def on_end(self, ev):
        pass


@pytest.fixture
def compilations():
    seen = _Seen()
    event.register("numba:compiler_lock", seen)
    yield seen.states
    event.unregister("numba:compiler_lock", seen)


def test_paused_turns_the_collector_off_and_back_on(collector_on):
    with collection.paused():
        assert not gc.isenabled()
        with collection.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer body still runs
    assert gc.isenabled()
    with pytest.raises(ZeroDivisionError), collection.paused():
        1 / 0
    assert gc.isenabled()


def test_paused_leaves_an_off_collector_off(collector_on):
    gc.disable()
    with collection.paused():
        pass
    assert not gc.isenabled()


def test_paused_bodies_of_two_threads_overlap(collector_on):
    """The collector comes back on when the last body ends, whichever thread began first."""
    inside, release = threading.Event(), threading.Event()

    def other():
        with collection.paused():
            inside.set()
            release.wait(10)

    t = threading.Thread(target=other)
    with collection.paused():
        t.start()
        inside.wait(10)
    assert not gc.isenabled()  # the other thread's body still runs
    release.set()
    t.join(10)
    assert gc.isenabled()


def test_a_lazy_entry_and_a_family_kernel_compile_with_the_collector_off(collector_on, compilations):
    from mechkit.engine import kernels, lazy

    @lazy.entry(types.float64(types.float64), error_model="numpy")
    def double(x):
        return 2.0 * x

    family = ModuleType("test_gc_pause_family")  # a generated family module's shape: kernels k_<name>(x, theta)
    family.k_shift = njit(error_model="numpy")(lambda x, theta: x + theta[0])
    compilations.clear()  # defining a dispatcher takes the lock too
    assert double(1.5) == 3.0
    assert compilations and not any(compilations)  # compiled, or loaded from the cache, with the collector off
    compilations.clear()
    assert kernels.kernel_refs(family)("shift")(1.0, np.array([2.0])) == 3.0
    assert compilations and not any(compilations)
    assert gc.isenabled()


def test_the_second_process_compiles_with_its_collector_off(monkeypatch):
    args, _ = second_process_launch(monkeypatch)
    code = args[-1]
    assert code.index("gc.disable()") < code.index("import mechkit.engine.")
    check = code.split("; import mechkit.engine.")[0] + "; import sys; sys.exit(gc.isenabled())"
    assert subprocess.run([args[0], "-c", check], timeout=60).returncode == 0


def test_an_engine_subject_and_an_accountant_are_imported_with_the_collector_off(collector_on, monkeypatch):
    """Importing an engine subject or an accountant's module compiles its functions (or loads them)."""
    import importlib

    from mechkit.accountants import registry
    from mechkit.engine import numerics
    states, real = [], importlib.import_module

    def recording(name, *args):
        states.append(gc.isenabled())
        return real(name, *args)

    for mod in (numerics, registry):
        monkeypatch.setattr(mod, "importlib", SimpleNamespace(import_module=recording))
    monkeypatch.delitem(numerics.__dict__, "peak_scan_at", raising=False)  # asked again: imported again
    assert numerics.peak_scan_at is real("mechkit.engine.peaks").peak_scan_at
    assert registry._Accountants()["fft"][0] is real("mechkit.accountants.fft").epsilon
    assert states == [False, False] and gc.isenabled()
