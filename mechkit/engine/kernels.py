"""How compiled kernels are typed, referenced and mapped: the first-class function type of a kernel
``f(x, theta) -> float``, kernel references by address, a kernel's value from Python (``call``) and vectorised
evaluation (``vmap``).
"""
from __future__ import annotations

import threading
import time

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.experimental.function_type import _get_wrapper_address
from numba.extending import intrinsic

from ..errors import SpecificationError
from ..progress import tally
from . import warm
from .collection import paused

# Kernels are passed as first-class functions of this type.  Engine functions carry explicit signatures so
# their cache key is structural: one compiled engine serves every family, in every process.
f8 = types.float64


A1 = types.float64[::1]


A2 = types.float64[:, ::1]


KT = types.FunctionType(f8(f8, A1))


KERNEL_SIGNATURE = "float64(float64, float64[::1])"


KERNEL_SIG = f8(f8, A1)


class KernelRef:
    """A compiled kernel passed to the engine by its address.

    Passing a Numba dispatcher as a first-class function makes every call look the compiled result up again
    (tens of microseconds, more than many engine calls take); a reference resolves the address once.  It is
    also callable from Python, ``ref(x, theta)`` (through the compiled ``call``: the kernels are compiled without
    a Python entry point, a third less compile time).

    A family's kernels are compiled when first asked for (``kernel_refs``), each for its one signature
    (``KERNEL_SIG``, loaded from Numba's disk cache where it was compiled before); one that Numba rejects raises
    ``SpecificationError`` naming it.
    """

    __slots__ = ("dispatcher", "_addr")
    # typeof() reads this attribute directly (the WrapperAddressProtocol base class would route every call
    # through a slower registered typeof); the call-time address comes from __wrapper_address__
    _numba_type_ = KT

    def __init__(self, dispatcher):
        self.dispatcher = dispatcher
        self._addr = None

    def __wrapper_address__(self):
        if self._addr is None:
            self._addr = _get_wrapper_address(self.dispatcher, KERNEL_SIG)
        return self._addr

    @property
    def address(self):
        """The cfunc wrapper's address as an int (what ``as_kernel`` takes)."""
        return self.__wrapper_address__()

    def signature(self):
        return KERNEL_SIG

    def __call__(self, x, theta):
        return call_at(self.address, float(x), theta)


def _compiled(dispatcher, name, mod):
    """``dispatcher`` compiled for ``KERNEL_SIG`` (or loaded from Numba's disk cache) and closed to other
    signatures; the time it took is tallied per family (``progress.tally``: one line once a family's kernels have
    taken a second)."""
    if KERNEL_SIG.args not in dispatcher.overloads:
        start = time.perf_counter()
        try:
            with paused():
                dispatcher.compile(KERNEL_SIG)
        except Exception as exc:
            raise SpecificationError(f"the derived kernel {name} cannot be compiled: {exc}") from exc
        tally(mod.__name__, f"compiling the kernels of {getattr(mod, 'LABEL', 'a family')}",
              time.perf_counter() - start)
    dispatcher.disable_compile()
    return dispatcher


#: first requests of kernels are serialised: two threads (the FFT's two directions) asking for one kernel at once
#: would otherwise both compile it, the second after the first closed it (``disable_compile``)
_FIRST_REQUEST = threading.Lock()


def kernel_refs(mod):
    """name -> KernelRef for the kernels ``k_<name>`` of a generated family module (cached on the module); a
    kernel is compiled (or loaded from the disk cache) on its first request, by one thread."""
    refs = mod.__dict__.get("_kernel_refs")
    if refs is None:
        refs = mod.__dict__.setdefault("_kernel_refs", {})
        for name in [k[2:] for k in vars(mod) if k.startswith("k_")]:  # on a cold engine, compiled while it waits
            warm.meanwhile(lambda name=name: get(name))

    def get(name):
        ref = refs.get(name)
        if ref is None:
            with _FIRST_REQUEST:
                ref = refs.get(name)
                if ref is None:
                    ref = refs[name] = KernelRef(_compiled(getattr(mod, "k_" + name), name, mod))
        return ref
    return get


@intrinsic
def as_kernel(typingctx, addr):
    """The kernel at a cfunc wrapper address (an int64 from ``KernelRef.address``) as a first-class function.

    Unboxing a first-class function argument calls back into Python twice per argument and call;
    an address crosses the boundary as a plain integer.  The value built here is what Numba's own unboxing
    builds for a ``KernelRef`` (its jit address is null there too): calls go through the C wrapper."""
    def codegen(context, builder, signature, args):
        sfunc = cgutils.create_struct_proxy(KT)(context, builder)
        sfunc.c_addr = builder.inttoptr(args[0], context.get_value_type(types.voidptr))
        return sfunc._getvalue()
    return KT(types.int64), codegen


@njit(A1(types.int64, A1, A1), cache=True, error_model="numpy")
def vmap_at(addr, xs, theta):
    """[f(x, theta) for x in xs] for the kernel f at ``addr`` (``KernelRef.address``)."""
    f = as_kernel(addr)
    out = np.empty(xs.shape[0])
    for i in range(xs.shape[0]):
        out[i] = f(xs[i], theta)
    return out


@njit(f8(types.int64, f8, A1), cache=True, error_model="numpy")
def call_at(addr, x, theta):
    """f(x, theta) for the kernel f at ``addr`` (``KernelRef.address``) from Python: a family's kernels have no
    Python entry point of their own, and an address crosses into compiled code as a plain integer (~0.3 us a call;
    a ``KernelRef`` passed as a first-class function is unboxed through Python, ~3 us)."""
    return as_kernel(addr)(x, theta)


def vmap(f: KernelRef, xs: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """[f(x, theta) for x in xs].

    Parameters
    ----------
    f : the kernel.
    xs : float64 array (contiguous).
    theta : the bound parameter vector (float64, contiguous).

    Returns
    -------
    A new float64 array.
    """
    return vmap_at(f.address, xs, theta)


def call(f: KernelRef, x: float, theta: np.ndarray) -> float:
    """f(x, theta) (a parameter-only expression at x = 0.0).

    Parameters
    ----------
    f : the kernel.
    x : a float.
    theta : the bound parameter vector (float64, contiguous).

    Returns
    -------
    The kernel's value.
    """
    return call_at(f.address, x, theta)
