"""Safe parsing of user-written expressions and of cached SymPy text: nothing here evaluates Python.

``sympy.parse_expr`` and ``sympy.sympify`` evaluate their input as Python code, so a density string such as
``"__import__('os').system(...)"`` would run.  Both parsers below read the text with :mod:`ast` (which only
parses) and build the SymPy object node by node from a whitelist:

* :func:`parse_expression` reads what a user writes: numbers, names, ``+ - * / **``, comparisons and
  ``& | ~`` for conditions, tuples as call arguments (``Piecewise((1, x > 0), (0, True))``,
  ``Sum(f, (k, -oo, oo))``) and calls of the functions in :data:`FUNCTIONS`.  A name that is not called is
  a symbol (so ``gamma`` or ``beta`` can be parameters); attributes, subscripts, keywords, lambdas,
  comprehensions, strings and names starting with ``_`` are refused with a ``SpecificationError`` that names
  the offending token.
* :func:`parse_srepr` reads the ``srepr`` text of mechkit's own cache files: calls of SymPy classes (any
  ``sympy.Basic`` subclass, plus mechkit's log-space primitives) with numbers, nested calls, and strings
  only where a name or a number is expected (``Symbol('x')``, ``Float('1.5', precision=53)``).  Anything else
  raises ``SpecificationError`` (the cache entry is then rebuilt).

Floating-point numbers in a user's expression are made exact: a float literal or ``sympy.Float`` becomes the
rational number of its shortest decimal representation (``1.5`` -> 3/2, ``0.1`` -> 1/10), so that SymPy's
limits, solutions and integrals are exact (a float exponent made the privacy loss's limit at infinity
depend on cancellation in floating point).  :func:`exact` does this for SymPy objects passed directly.
"""
from __future__ import annotations

import ast
import re

import sympy as sp

from ..errors import SpecificationError

#: the functions a density, pmf or condition may call (name as written -> SymPy function)
FUNCTIONS = {
    "exp": sp.exp, "log": sp.log, "ln": sp.log, "sqrt": sp.sqrt, "Abs": sp.Abs, "abs": sp.Abs,
    "sign": sp.sign, "Min": sp.Min, "Max": sp.Max, "min": sp.Min, "max": sp.Max,
    "floor": sp.floor, "ceiling": sp.ceiling,
    "erf": sp.erf, "erfc": sp.erfc, "gamma": sp.gamma, "loggamma": sp.loggamma, "lgamma": sp.loggamma,
    "beta": sp.beta, "binomial": sp.binomial, "factorial": sp.factorial,
    "besseli": sp.besseli, "besselk": sp.besselk, "besselj": sp.besselj,
    "sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "atan": sp.atan, "asin": sp.asin, "acos": sp.acos,
    "sinh": sp.sinh, "cosh": sp.cosh, "tanh": sp.tanh, "asinh": sp.asinh, "acosh": sp.acosh, "atanh": sp.atanh,
    "Piecewise": sp.Piecewise, "Heaviside": sp.Heaviside, "DiracDelta": sp.DiracDelta,
    "Sum": sp.Sum, "Product": sp.Product, "Integral": sp.Integral,
    "Rational": sp.Rational,
}

#: names that stand for constants rather than symbols
CONSTANTS = {"pi": sp.pi, "E": sp.E, "oo": sp.oo, "inf": sp.oo, "Infinity": sp.oo,
             "True": sp.true, "False": sp.false}

#: longest accepted expression text (a guard against pathological input, not a limit on real densities)
MAX_CHARS = 20_000
#: largest exact integer exponent of a number literal (10**10**10 would build a 10^10-digit integer)
MAX_NUMERIC_EXPONENT = 4096

_BINOPS = {ast.Add: sp.Add, ast.Mult: sp.Mul, ast.BitAnd: sp.And, ast.BitOr: sp.Or}
_COMPARE = {ast.Lt: sp.StrictLessThan, ast.LtE: sp.LessThan, ast.Gt: sp.StrictGreaterThan,
            ast.GtE: sp.GreaterThan, ast.Eq: sp.Eq, ast.NotEq: sp.Ne}
#: a name a user may give a symbol or the output variable
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def exact_float(value) -> sp.Rational:
    """The rational number of a float's shortest decimal representation (``0.1`` -> 1/10)."""
    f = float(value)
    if isinstance(value, sp.Float) and value._prec > 53:
        return sp.Rational(value)  # more digits than a double: keep the binary value exactly
    return sp.Rational(repr(f))


def exact(expr):
    """``expr`` with every ``sympy.Float`` replaced by :func:`exact_float` of it (other objects unchanged)."""
    if not isinstance(expr, sp.Basic):
        return expr
    floats = expr.atoms(sp.Float)
    if not floats:
        return expr
    return expr.xreplace({f: exact_float(f) for f in floats})


def _segment(text, node):
    seg = ast.get_source_segment(text, node)
    return seg if seg else type(node).__name__


def _parse_tree(text, what, mode="eval"):
    if not isinstance(text, str):
        raise SpecificationError(f"{what} must be a string, got {type(text).__name__}")
    if len(text) > MAX_CHARS:
        raise SpecificationError(f"{what} is {len(text)} characters long; at most {MAX_CHARS} are accepted")
    try:
        return ast.parse(text.strip(), mode=mode)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        hint = " (use ** for powers)" if "^" in text else ""
        raise SpecificationError(
            f"{what} = {text!r} is not a SymPy expression ({exc.__class__.__name__}){hint}") from None


class _ExpressionBuilder:
    """Builds a SymPy expression from the AST of a user's expression (see the module docstring)."""

    def __init__(self, text, what, symbols):
        self.text, self.what, self.symbols = text, what, dict(symbols)

    def refuse(self, node, why):
        raise SpecificationError(f"{self.what}: {why}: {_segment(self.text, node)!r} (allowed: numbers, names, "
                                 f"+ - * / **, comparisons, & | ~, and calls of mechkit.symbolic.parse.FUNCTIONS)")

    def build(self, node):
        if isinstance(node, ast.Tuple):
            self.refuse(node, "a tuple is allowed only as a function argument")
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            self.refuse(node, f"{type(node).__name__} is not allowed")
        return method(node)

    def _Expression(self, node):
        return self.build(node.body)

    def _Constant(self, node):
        v = node.value
        if isinstance(v, bool):
            return sp.true if v else sp.false
        if isinstance(v, int):
            return sp.Integer(v)
        if isinstance(v, float):
            return exact_float(v)
        self.refuse(node, f"a {type(v).__name__} constant is not allowed")

    def _Name(self, node):
        name = node.id
        if name.startswith("_") or not NAME_RE.match(name):
            self.refuse(node, "names must start with a letter and contain only letters, digits and _")
        if name in self.symbols:
            return self.symbols[name]
        if name in CONSTANTS:
            return CONSTANTS[name]
        sym = sp.Symbol(name)
        self.symbols[name] = sym
        return sym

    def _UnaryOp(self, node):
        arg = self.build(node.operand)
        if isinstance(node.op, ast.USub):
            return -arg
        if isinstance(node.op, ast.UAdd):
            return arg
        if isinstance(node.op, (ast.Invert, ast.Not)):
            return sp.Not(arg)
        self.refuse(node, "this unary operator is not allowed")

    def _BinOp(self, node):
        op = type(node.op)
        if op is ast.BitXor:
            self.refuse(node, "^ is not a power here; write ** for powers")
        a, b = self.build(node.left), self.build(node.right)
        if op in _BINOPS:
            return _BINOPS[op](a, b)
        if op is ast.Sub:
            return a - b
        if op is ast.Div:
            return a / b
        if op is ast.Pow:
            if a.is_Number and b.is_Integer and abs(int(b)) > MAX_NUMERIC_EXPONENT:
                self.refuse(node, f"integer exponents of numbers are limited to +-{MAX_NUMERIC_EXPONENT}")
            return sp.Pow(a, b)
        self.refuse(node, f"the operator {op.__name__} is not allowed")

    def _BoolOp(self, node):
        args = [self.build(v) for v in node.values]
        return sp.And(*args) if isinstance(node.op, ast.And) else sp.Or(*args)

    def _Compare(self, node):
        parts, left = [], self.build(node.left)
        for op, comp in zip(node.ops, node.comparators):
            if type(op) not in _COMPARE:
                self.refuse(node, f"the comparison {type(op).__name__} is not allowed")
            right = self.build(comp)
            parts.append(_COMPARE[type(op)](left, right))
            left = right
        return parts[0] if len(parts) == 1 else sp.And(*parts)

    def _tuple(self, node):
        return tuple(self.build(e) for e in node.elts)

    def _Call(self, node):
        if not isinstance(node.func, ast.Name):
            self.refuse(node.func, "only the named functions can be called")
        name = node.func.id
        if name not in FUNCTIONS:
            supported = ", ".join(sorted(FUNCTIONS))
            self.refuse(node.func, f"the function {name!r} is not supported (supported: {supported})")
        if node.keywords:
            self.refuse(node, f"keyword arguments are not allowed in a call of {name}")
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                self.refuse(a, "starred arguments are not allowed")
            args.append(self._tuple(a) if isinstance(a, ast.Tuple) else self.build(a))
        try:
            return FUNCTIONS[name](*args)
        except SpecificationError:
            raise
        except Exception as exc:
            raise SpecificationError(f"{self.what}: {name}{tuple(map(str, args))} is not a valid call "
                                     f"({exc.__class__.__name__}: {exc})") from None


def parse_expression(text: str, what: str = "expression", symbols: dict | None = None) -> sp.Basic:
    """A SymPy expression from the text a user wrote, without evaluating any Python.

    Parameters
    ----------
    text : the expression, e.g. ``"exp(-Abs(x)**1.5)/2"``.
    what : how error messages name it (``"p"``, ``"q"``, ...).
    symbols : name -> Symbol for names whose SymPy symbol is given (e.g. the output variable with its
        assumptions); other names become plain symbols.

    Returns
    -------
    The SymPy expression, with float literals made exact (see :func:`exact_float`).

    Raises
    ------
    SpecificationError : a syntax error or any construct outside the whitelist, naming the token.
    """
    tree = _parse_tree(text, what)
    builder = _ExpressionBuilder(text, what, symbols or {})
    try:
        return builder.build(tree)
    except RecursionError:
        raise SpecificationError(f"{what} is nested too deeply") from None


# ----------------------------------------------------------------------------------------------------
# cached srepr text


def _srepr_classes():
    from . import algebra as sy

    out = {}
    for name in dir(sp):
        obj = getattr(sp, name)
        if isinstance(obj, type) and issubclass(obj, sp.Basic):
            out[name] = obj
    from sympy.functions.elementary.piecewise import ExprCondPair

    out["ExprCondPair"] = ExprCondPair
    for name in ("LAE", "LogErfc", "Softplus", "Erfc"):
        out[name] = getattr(sy, name)
    return out


_SREPR_NAMES = {"oo": sp.oo, "zoo": sp.zoo, "nan": sp.nan, "pi": sp.pi, "E": sp.E, "I": sp.I,
                "EulerGamma": sp.EulerGamma, "Catalan": sp.Catalan, "GoldenRatio": sp.GoldenRatio,
                "true": sp.true, "false": sp.false}
#: classes that take a string argument, and the form that string must have
_ANY = re.compile(r"")  # a symbol's name is data: Symbol never parses it
_STRING_ARGS = {"Symbol": _ANY, "Dummy": _ANY,
                "Float": re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^[-+]?(inf|nan)$"),
                "Integer": re.compile(r"^[-+]?\d+$"), "Rational": re.compile(r"^[-+]?\d+(/\d+)?$")}
_CLASSES = None


def _srepr_value(node, text):
    global _CLASSES
    if _CLASSES is None:
        _CLASSES = _srepr_classes()
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_srepr_value(node.operand, text)
    if isinstance(node, ast.Name) and node.id in _SREPR_NAMES:
        return _SREPR_NAMES[node.id]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CLASSES:
        name = node.func.id
        args = []
        for a in node.args:
            if isinstance(a, ast.Constant) and isinstance(a.value, str):
                form = _STRING_ARGS.get(name)
                if form is None or not form.match(a.value):
                    raise SpecificationError(f"cached expression: a string argument of {name} is not allowed")
                args.append(a.value)
            else:
                args.append(_srepr_value(a, text))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None or not isinstance(kw.value, ast.Constant) or isinstance(kw.value.value, str):
                raise SpecificationError(f"cached expression: keyword arguments of {name} must be constants")
            kwargs[kw.arg] = kw.value.value
        return _CLASSES[name](*args, **kwargs)
    raise SpecificationError(f"cached expression: {_segment(text, node)!r} is not allowed")


def parse_srepr(text: str) -> sp.Basic:
    """The SymPy object of mechkit's own ``srepr`` text (cache files), without evaluating any Python.

    Raises
    ------
    SpecificationError : the text contains anything but SymPy constructors of numbers, names and each other.
    """
    tree = _parse_tree(text, "cached expression")
    try:
        return _srepr_value(tree.body, text)
    except RecursionError:
        raise SpecificationError("cached expression is nested too deeply") from None
    except SpecificationError:
        raise
    except Exception as exc:
        raise SpecificationError(f"cached expression cannot be rebuilt ({exc.__class__.__name__})") from None
