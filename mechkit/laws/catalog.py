"""The catalog: the mechanisms of the top-level ``mechanisms/`` folder, shipped as ``mechkit.mechanisms``.

Each catalog module defines ``family`` (a ``Family``) and optionally ``DOC`` and ``ARGS`` (the argument names of its
convenience function, in order; default: the family's parameters with the defaulted ones last).  The convenience
functions ``mk.gaussian(sigma, sensitivity=1.0)`` etc. are made from the folder's modules, so adding a mechanism
touches only that folder.
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import sys
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


def names() -> tuple:
    """The names of the catalog's mechanisms (its modules), sorted."""
    pkg = _package()
    return tuple(sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")))


def catalog(name: str):
    """The catalog module ``name`` (``mechanisms/<name>.py``, shipped as ``mechkit.mechanisms.<name>``).

    Raises
    ------
    ModuleNotFoundError : no such catalog module.
    """
    _package()
    return importlib.import_module(f"mechkit.mechanisms.{name}")


def convenience(name: str):
    """``mk.<name>(...)``: bind the catalog family ``name``; arguments by position or keyword, in the order of
    the family's parameters with the defaulted ones last.

    Raises
    ------
    ParameterError : an unknown, missing or repeated argument, or a value outside a parameter's range.
    """
    mod = catalog(name)
    fam = mod.family
    required = [s.name for s in fam.parameters if s.name not in fam.defaults]
    optional = [s.name for s in fam.parameters if s.name in fam.defaults]
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    sig = inspect.Signature([inspect.Parameter(n, kind) for n in required]
                            + [inspect.Parameter(n, kind, default=fam.defaults[n]) for n in optional])

    def make(*args, **kwargs):
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise ParameterError(f"{name}{sig}: {exc}") from None
        bound.apply_defaults()
        return fam(**bound.arguments)

    make.__name__ = make.__qualname__ = name
    make.__signature__ = sig
    make.__doc__ = (mod.__doc__ or f"The catalog mechanism {name}.").strip()
    make.__module__ = "mechkit"
    return make
