"""The catalog: the mechanisms of the top-level ``mechanisms/`` folder, shipped as ``mechkit.mechanisms``.

Each catalog module defines ``family`` (a ``Family``); its docstring heads the convenience function's.  The
convenience functions ``mk.gaussian(sigma, sensitivity=1)`` etc. are made from the folder's modules (arguments: the
family's parameters, the defaulted ones last), so adding a mechanism touches only that folder.
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import sys
import types
from collections.abc import Callable
from pathlib import Path

from ..errors import ParameterError


def _package():
    """The catalog package: installed as ``mechkit.mechanisms``, or the source tree's ``mechanisms/`` folder."""
    try:
        return importlib.import_module("mechkit.mechanisms")
    except ModuleNotFoundError as exc:
        if exc.name != "mechkit.mechanisms":
            raise
    src = Path(__file__).resolve().parent.parent.parent / "mechanisms"
    spec = importlib.util.spec_from_file_location("mechkit.mechanisms", src / "__init__.py",
                                                  submodule_search_locations=[str(src)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["mechkit.mechanisms"] = mod
    spec.loader.exec_module(mod)
    return mod


def prederived_dir() -> Path:
    """The catalog's shipped derivations (``mechanisms/_derived``, written by ``python -m
    mechkit.mechanisms._prederive``): a first use of a catalog family, or of its subsampled family, copies its
    entry into the cache and skips the SymPy derivation (the kernels are still compiled once).

    Returns
    -------
    The directory (it may be missing or hold no current entry: families are then derived as usual).
    """
    return Path(_package().__path__[0]) / "_derived"


def names() -> tuple[str, ...]:
    """The names of the catalog's mechanisms (its modules), sorted.

    Returns
    -------
    A tuple of module names, e.g. ``("discrete_gaussian", ..., "randomized_response")``.
    """
    pkg = _package()
    return tuple(sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")))


def catalog(name: str) -> types.ModuleType:
    """The catalog module ``name`` (``mechanisms/<name>.py``, shipped as ``mechkit.mechanisms.<name>``).

    Parameters
    ----------
    name : one of ``names()``, e.g. "gaussian".

    Returns
    -------
    The module; its ``family`` attribute is the mechanism's ``Family``.

    Raises
    ------
    ModuleNotFoundError : no such catalog module.
    """
    _package()
    module = f"mechkit.mechanisms.{name}"
    if module not in sys.modules:
        # the engine before the module's SymPy work: on a cold cache its import starts the second process that
        # compiles the engine's largest subjects (engine/warm.py), ~0.25 s sooner than the family would import it
        importlib.import_module("mechkit.engine")
    return importlib.import_module(module)


def _describe(symbol, family) -> str:
    """What values the parameter ``symbol`` takes, from its SymPy assumptions and the family's constraints."""
    words = ["integer" if symbol.is_integer else "real"]
    words += [t for f, t in (("is_positive", "> 0"), ("is_nonnegative", ">= 0"), ("is_negative", "< 0"))
              if getattr(symbol, f)][:1]
    if symbol.name in family.constraints:
        lo, hi, lo_open, hi_open = family.constraints[symbol.name]
        words.append(f"in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}")
    default = f" (default {family.defaults[symbol.name]!r})" if symbol.name in family.defaults else ""
    return ", ".join(words) + default


def convenience(name: str) -> Callable[..., object]:
    """``mk.<name>(...)``: bind the catalog family ``name``; arguments by position or keyword, in the order of
    the family's parameters (or of the module's ``ARGUMENTS``, where it names them) with the defaulted ones last.

    Parameters
    ----------
    name : one of ``names()``.

    Returns
    -------
    The function ``name(...)`` returning the bound ``Mechanism``; its docstring is the catalog module's, followed
    by its parameters, return value and errors.  A module that defines its own ``make`` function (e.g. one family
    per number of components) is served by it.

    Raises
    ------
    ModuleNotFoundError : no such catalog module.
    """
    mod = catalog(name)
    if callable(getattr(mod, "make", None)):
        return mod.make
    required, optional, doc = signature(name)
    return make_function(name, required, optional, mod.family.defaults, doc, mod.family)


def signature(name: str) -> tuple[list, list, str] | None:
    """What ``mk.<name>`` takes, from the catalog module: its family's parameters in the order of the module's
    ``ARGUMENTS`` (where it names them), the defaulted ones last, and its docstring.

    Parameters
    ----------
    name : one of ``names()``.

    Returns
    -------
    (required names, optional names, docstring); None for a module that defines its own ``make``.
    """
    mod = catalog(name)
    if callable(getattr(mod, "make", None)):
        return None
    fam = mod.family
    order = {n: i for i, n in enumerate(getattr(mod, "ARGUMENTS", ()))}
    required = sorted((s.name for s in fam.parameters if s.name not in fam.defaults),
                      key=lambda n: order.get(n, len(order)))
    optional = [s.name for s in fam.parameters if s.name in fam.defaults]
    symbols = {s.name: s for s in fam.parameters}
    params = "\n".join(f"{n} : {_describe(symbols[n], fam)}." for n in (*required, *optional))
    doc = ((mod.__doc__ or f"The catalog mechanism {name}.").strip()
           + f"\n\nParameters\n----------\n{params}\n\nReturns\n-------\nThe bound ``Mechanism`` of "
           f"``catalog({name!r}).family``.\n\nRaises\n------\nParameterError : an unknown, missing or "
           "repeated argument, or a value outside a parameter's range.")
    return required, optional, doc


def make_function(name: str, required: list, optional: list, defaults: dict, doc: str,
                  fam: Callable[..., object]) -> Callable[..., object]:
    """``mk.<name>``: a function binding ``fam`` with its arguments by position or keyword.

    Parameters
    ----------
    name : the catalog name.
    required, optional : the parameters' names, in the order they are taken (the optional ones have defaults).
    defaults : parameter name -> default value (of the optional ones).
    doc : the function's docstring.
    fam : the family to bind (called with the arguments by name).

    Returns
    -------
    The function; a ``ParameterError`` shows its signature where the arguments do not fit it.
    """
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    sig = inspect.Signature([inspect.Parameter(n, kind) for n in required]
                            + [inspect.Parameter(n, kind, default=defaults[n]) for n in optional])

    def make(*args, **kwargs):
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise ParameterError(f"{name}{sig}: {exc}") from None
        bound.apply_defaults()
        return fam(**bound.arguments)

    make.__name__ = make.__qualname__ = name
    make.__signature__ = sig
    make.__doc__ = doc
    make.__module__ = "mechkit"
    return make


def index() -> dict:
    """What the command line's help lists without importing SymPy: each catalog mechanism's one-line summary and its
    parameters with what values they take (``mechanisms/_prederive.py`` writes it to ``_derived/index.json``).

    Returns
    -------
    ``{name: {"summary": str, "parameters": [[parameter, description], ...]}}`` for every name of ``names()``.
    """
    out = {}
    for name in names():
        mod = catalog(name)
        summary = (mod.__doc__ or name).strip().split("\n\n")[0].replace("\n", " ")
        fn = convenience(name)
        fam = mod.family
        symbols = {s.name: s for s in fam.parameters}
        params = []
        for p in inspect.signature(fn).parameters.values():
            if p.name in symbols and not callable(getattr(mod, "make", None)):
                params.append([p.name, _describe(symbols[p.name], fam)])
            else:
                params.append([p.name, "" if p.default is inspect.Parameter.empty else f"default {p.default!r}"])
        out[name] = {"summary": summary, "parameters": params}
    return out
