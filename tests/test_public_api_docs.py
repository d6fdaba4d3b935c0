"""The public API documents itself: every public callable that ``import mechkit as mk`` exposes (``mk.__all__``, the
public functions of the modules it exposes, the public methods and properties of its classes, inherited ones included
where mechkit defines them) has a docstring, names each of its parameters under a "Parameters" section, and carries
type annotations on its parameters and return value that resolve to real types.

A class's constructor parameters are documented in the class docstring (or its ``__init__``'s); parameters whose
names start with ``_`` are private and not checked; dunders other than ``__call__`` follow Python's protocols and are
not walked."""
import inspect
import re
import typing

import pytest

import mechkit as mk
from mechkit import errors, relations

#: modules outside ``mk.__all__`` whose public helpers are held to the same rules
EXTRA_MODULES = (errors, relations)

#: qualified name -> why it is not held to the rules.  Keep it short; ``test_exemptions_are_still_needed`` fails
#: once an entry complies, so that it is removed.
EXEMPT: dict = {}

#: the catalog's convenience functions (``mk.gaussian`` ...) are made at import from each family's parameters: their
#: signatures carry no annotations (the signature is part of their error messages), only their docstrings are checked
CONVENIENCE = set(mk.CATALOG)

#: names the annotations may use without the module importing them at run time (``if TYPE_CHECKING:`` imports)
TYPES = {name: getattr(mk, name) for name in mk.__all__ if isinstance(getattr(mk, name), type)}


def _from_mechkit(obj):
    return (getattr(obj, "__module__", None) or "").startswith("mechkit")


def _module_items(module):
    names = getattr(module, "__all__", None)
    own = names is None  # without __all__: what the module itself defines
    for name in names if names is not None else sorted(vars(module)):
        obj = getattr(module, name)
        if name.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue
        if _from_mechkit(obj) and (not own or obj.__module__ == module.__name__):
            yield f"{module.__name__}.{name}", obj


def _class_items(qual, cls):
    yield qual, cls
    seen = set()
    for klass in cls.__mro__:
        if not _from_mechkit(klass):
            continue
        for name, raw in vars(klass).items():
            if (name.startswith("_") and name != "__call__") or name in seen:
                continue
            seen.add(name)
            if isinstance(raw, (staticmethod, classmethod)):
                raw = raw.__func__
            if inspect.isfunction(raw) or isinstance(raw, property):
                yield f"{qual}.{name}", raw


def _items():
    exposed = [getattr(mk, name) for name in mk.__all__]
    top = [(f"mk.{name}", obj) for name, obj in zip(mk.__all__, exposed) if not inspect.ismodule(obj)]
    for module in [obj for obj in exposed if inspect.ismodule(obj)] + list(EXTRA_MODULES):
        top.extend(_module_items(module))
    out, seen = {}, set()
    for qual, obj in top:
        if id(obj) in seen:
            continue  # the same object exposed twice (mk.GDPFilter and mk.individual.GDPFilter): named once
        seen.add(id(obj))
        out.update(_class_items(qual, obj) if inspect.isclass(obj) else [(qual, obj)])
    return out


ITEMS = _items()


def _section(doc, title):
    """The text of a NumPy-style section of ``doc`` (None where there is none)."""
    m = re.search(rf"^{title}\n-+\n(.*?)(?=^\w[\w ]*\n-+\n|\Z)", doc, re.M | re.S)
    return None if m is None else m.group(1)


def _constructor(cls):
    """The ``__init__`` or ``__new__`` that builds ``cls``, where mechkit defines it (None otherwise)."""
    for klass in cls.__mro__:
        for name in ("__init__", "__new__"):
            if name in vars(klass):
                fn = vars(klass)[name]
                fn = getattr(fn, "__func__", fn)
                return fn if _from_mechkit(klass) and inspect.isfunction(fn) else None
    return None


def _problems(fn, doc, annotated=True):
    """What ``fn`` lacks: its parameters in the Parameters section of ``doc``, and resolvable annotations."""
    out = []
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.name not in ("self", "cls") and not p.name.startswith("_")]
    if params:
        section = _section(doc, "Parameters")
        if section is None:
            out.append("no 'Parameters' section")
        else:
            out += [f"parameter {p.name!r} not documented under 'Parameters'" for p in params
                    if not re.search(rf"(?<!\w){re.escape(p.name)}(?!\w)", section)]
    if annotated:
        out += [f"parameter {p.name!r} has no type annotation" for p in params if p.annotation is p.empty]
        if inspect.signature(fn).return_annotation is inspect.Signature.empty:
            out.append("no return annotation")
        try:
            typing.get_type_hints(fn, localns=TYPES)
        except Exception as exc:  # noqa: BLE001 -- any failure to resolve is the finding
            out.append(f"annotations do not resolve: {type(exc).__name__}: {exc}")
    return out


def _check(qual, obj):
    """The list of what the public callable ``obj`` (named ``qual``) lacks."""
    if isinstance(obj, property):
        doc = inspect.getdoc(obj.fget) or obj.__doc__
        if not doc:
            return ["no docstring"]
        return _problems(obj.fget, doc)
    doc = inspect.getdoc(obj) if not inspect.isclass(obj) else obj.__doc__ and inspect.cleandoc(obj.__doc__)
    if not doc:
        return ["no docstring"]
    if inspect.isclass(obj):
        ctor = _constructor(obj)
        return [] if ctor is None else _problems(ctor, doc + "\n" + (inspect.getdoc(ctor) or ""))
    return _problems(obj, doc, annotated=qual.removeprefix("mk.") not in CONVENIENCE)


def test_the_walk_finds_the_api():
    for qual in ("mk.compose", "mk.Mechanism.epsilon", "mk.Family.__call__", "mk.PLRV.cgf", "mk.EstimateArray.reshape",
                 "mk.GDPFilter.step", "mk.GDPFilter.save", "mk.GDPFilter.load", "mk.IndividualPLDAccountant.clip",
                 "mechkit.accountants.gdp.delta", "mechkit.accountants.rdp.epsilon", "mechkit.individual.load",
                 "mechkit.individual.effective_sigma", "mechkit.errors.check_real", "mk.gaussian"):
        assert qual in ITEMS, qual


@pytest.mark.parametrize("qual", sorted(set(ITEMS) - set(EXEMPT)))
def test_public_callable_is_documented_and_annotated(qual):
    problems = _check(qual, ITEMS[qual])
    assert not problems, f"{qual}: {'; '.join(problems)}"


def test_exemptions_are_still_needed():
    for qual in EXEMPT:
        assert qual in ITEMS, f"{qual} is exempt but not part of the public API"
        assert _check(qual, ITEMS[qual]), f"{qual} complies now: remove it from EXEMPT"
