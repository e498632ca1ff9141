"""A SymPy reference for gradients, built by symbolically executing the primal's AST.

The reference deliberately shares nothing with the compiler (no lowering, no reverse pass):
it walks the raw Python AST, turns parameters into real SymPy symbols, and lets SymPy
differentiate the resulting expression. Agreement between the two is then real evidence.

SymPy is imported inside functions only, so importing this module (or ``adcompile``) stays
cheap; the first symbolic operation pays for the import.
"""

from __future__ import annotations

import ast
import builtins
import functools
import math
import operator
import random
import types
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import UnsupportedSyntaxError
from .source import FunctionSource, StaticFunction, load_function

if TYPE_CHECKING:
    import sympy

# Working precision of the reference, in decimal digits: far beyond double precision, so the
# reference's own rounding never matters at the tolerances the checks use.
DIGITS = 30

# A Float that evalf returns with fewer accurate bits than this, and smaller than _TINY, is
# evalf saying "zero, as far as I can tell" (see _to_float).
_MIN_ACCURATE_BITS = 53
_TINY = 1e-100

Interval = tuple[float, float]
DEFAULT_INTERVAL: Interval = (-2.0, 2.0)

# Where sample_points looks for points, in order: the default box first, then boxes that
# dodge the usual singularities (logs and square roots of negatives, |x| > 1 for asin...).
SAMPLING_STAGES: tuple[Interval, ...] = ((-2.0, 2.0), (0.1, 3.0), (0.1, 0.9), (1.1, 3.0))

# Sampled coordinates are rounded so a failing point is short to read and exact to retype;
# six decimals keep ties (min, max) and jumps (//, %) as unlikely as with raw floats.
SAMPLE_DECIMALS = 6

# Nested calls of user functions are inlined; this bounds runaway recursion.
MAX_INLINE_DEPTH = 20

_BINARY_OPERATORS: dict[type[ast.operator], Callable[..., object]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}

_UNARY_OPERATORS: dict[type[ast.unaryop], Callable[..., object]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}

_COMPARISON_NAMES: dict[type[ast.cmpop], str] = {
    ast.Lt: "Lt",
    ast.LtE: "Le",
    ast.Gt: "Gt",
    ast.GtE: "Ge",
    ast.Eq: "Eq",
    ast.NotEq: "Ne",
}

_STATEMENT_NAMES: dict[type[ast.stmt], str] = {
    ast.For: "for loops",
    ast.While: "while loops",
    ast.With: "with blocks",
    ast.Try: "try statements",
    ast.FunctionDef: "nested function definitions",
    ast.Global: "global statements",
    ast.Nonlocal: "nonlocal statements",
    ast.Delete: "del statements",
    ast.Raise: "raise statements",
    ast.Assert: "assert statements",
    ast.Import: "imports",
    ast.ImportFrom: "imports",
}


# --- SymPy counterparts of the primal callables that have derivative rules -------------------


def _floor_without_jumps() -> type:
    import sympy as sp

    class floor(sp.floor):  # lower case: prints like SymPy's own floor
        """``floor`` with derivative 0: exact away from its jumps, which is where we sample."""

        def fdiff(self, argindex: int = 1) -> sympy.Expr:
            return sp.S.Zero

    return floor


@functools.cache
def _counterparts() -> dict[tuple[object, int], Callable[..., Any]]:
    import sympy as sp

    # SymPy's own floor differentiates to an unevaluated Subs(Derivative(...)).
    floor = _floor_without_jumps()

    def floordiv(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
        return floor(a / b)

    def mod(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
        # Python's float % has the sign of b, which is exactly a - b * floor(a / b).
        return a - b * floor(a / b)

    def identity(a: sympy.Expr) -> sympy.Expr:
        return a

    table: dict[tuple[object, int], Callable[..., Any]] = {
        # SymPy overloads the operators, so the operator functions are their own counterparts.
        (operator.add, 2): operator.add,
        (operator.sub, 2): operator.sub,
        (operator.mul, 2): operator.mul,
        (operator.truediv, 2): operator.truediv,
        (operator.floordiv, 2): floordiv,
        (operator.mod, 2): mod,
        (operator.neg, 1): operator.neg,
        (operator.pos, 1): operator.pos,
        (operator.pow, 2): operator.pow,
        (builtins.pow, 2): operator.pow,
        (math.pow, 2): operator.pow,
        (builtins.abs, 1): sp.Abs,
        (math.fabs, 1): sp.Abs,
        (builtins.float, 1): identity,
        (math.sin, 1): sp.sin,
        (math.cos, 1): sp.cos,
        (math.tan, 1): sp.tan,
        (math.asin, 1): sp.asin,
        (math.acos, 1): sp.acos,
        (math.atan, 1): sp.atan,
        (math.atan2, 2): sp.atan2,
        (math.sinh, 1): sp.sinh,
        (math.cosh, 1): sp.cosh,
        (math.tanh, 1): sp.tanh,
        (math.asinh, 1): sp.asinh,
        (math.acosh, 1): sp.acosh,
        (math.atanh, 1): sp.atanh,
        (math.exp, 1): sp.exp,
        (math.expm1, 1): lambda x: sp.exp(x) - 1,
        (math.log, 1): sp.log,
        (math.log, 2): sp.log,
        (math.log1p, 1): lambda x: sp.log(1 + x),
        (math.log2, 1): lambda x: sp.log(x, 2),
        (math.log10, 1): lambda x: sp.log(x, 10),
        (math.sqrt, 1): sp.sqrt,
        (math.erf, 1): sp.erf,
        (math.erfc, 1): sp.erfc,
        (math.radians, 1): lambda x: x * sp.pi / 180,
        (math.degrees, 1): lambda x: x * 180 / sp.pi,
    }
    return table


@functools.cache
def _variadic_counterparts() -> dict[object, tuple[int, Callable[..., Any]]]:
    """Callables taking any number of arguments from a minimum on: primal -> (minimum, fn)."""
    import sympy as sp

    def hypot(*args: sympy.Expr) -> sympy.Expr:
        return sp.sqrt(sum((a**2 for a in args), sp.S.Zero))

    return {builtins.max: (2, sp.Max), builtins.min: (2, sp.Min), math.hypot: (1, hypot)}


def sympy_counterpart(primal: object, arity: int) -> Callable[..., Any] | None:
    """Return a callable building the SymPy expression of ``primal`` applied to ``arity`` args."""
    try:
        found = _counterparts().get((primal, arity))
        variadic = _variadic_counterparts().get(primal)
    except TypeError:  # an unhashable object cannot be a known primal
        return None
    if found is not None:
        return found
    if variadic is not None and arity >= variadic[0]:
        return variadic[1]
    return None


def __getattr__(name: str) -> object:
    # SYMPY_COUNTERPARTS is built on first access, so importing the module never imports SymPy.
    if name == "SYMPY_COUNTERPARTS":
        return _counterparts()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- where to sample each rule ------------------------------------------------------------------

_POSITIVE: Interval = (0.1, 5.0)
_UNIT: Interval = (-0.9, 0.9)

_RULE_DOMAINS: dict[tuple[object, int], tuple[Interval, ...]] = {
    (math.log, 1): (_POSITIVE,),
    (math.log, 2): (_POSITIVE, (1.5, 5.0)),  # a base near 1 makes log(base) vanish
    (math.log2, 1): (_POSITIVE,),
    (math.log10, 1): (_POSITIVE,),
    (math.log1p, 1): ((-0.5, 5.0),),
    (math.sqrt, 1): (_POSITIVE,),
    (math.asin, 1): (_UNIT,),
    (math.acos, 1): (_UNIT,),
    (math.atanh, 1): (_UNIT,),
    (math.acosh, 1): ((1.1, 5.0),),
    (math.tan, 1): ((-1.2, 1.2),),  # stay clear of the pole at pi/2
    (operator.truediv, 2): (DEFAULT_INTERVAL, (0.5, 3.0)),
    (operator.floordiv, 2): ((0.1, 10.0), (0.7, 3.0)),
    (operator.mod, 2): ((0.1, 10.0), (0.7, 3.0)),
    # A negative base has no real derivative in the exponent.
    (operator.pow, 2): ((0.2, 3.0), (-2.0, 2.0)),
    (builtins.pow, 2): ((0.2, 3.0), (-2.0, 2.0)),
    (math.pow, 2): ((0.2, 3.0), (-2.0, 2.0)),
}

# Primals that jump where a / b is an integer; samples keep this far from the jumps.
_JUMPS_AT_INTEGER_QUOTIENT = frozenset({operator.floordiv, operator.mod})
_JUMP_MARGIN = 1e-3


def rule_domain(primal: object, arity: int) -> list[Interval] | None:
    """Return one sampling interval per argument of ``primal``, or None if it has no counterpart."""
    if sympy_counterpart(primal, arity) is None:
        return None
    try:
        intervals = _RULE_DOMAINS.get((primal, arity))
    except TypeError:
        intervals = None
    return list(intervals) if intervals is not None else [DEFAULT_INTERVAL] * arity


def _near_jump(primal: object, args: Sequence[float]) -> bool:
    if primal not in _JUMPS_AT_INTEGER_QUOTIENT:
        return False
    quotient = args[0] / args[1]
    return abs(quotient - round(quotient)) < _JUMP_MARGIN


def sample_rule_arguments(primal: object, arity: int, rng: random.Random) -> tuple[float, ...]:
    """Draw arguments for ``primal`` from its ``rule_domain``, away from any jumps."""
    domain = rule_domain(primal, arity)
    if domain is None:
        raise LookupError(f"no SymPy counterpart for {primal!r} with {arity} argument(s)")
    while True:
        args = tuple(rng.uniform(low, high) for low, high in domain)
        if not _near_jump(primal, args):
            return args


# --- symbolic execution --------------------------------------------------------------------------


def _sympy_constant(value: object) -> sympy.Basic | None:
    """Convert a Python number to SymPy exactly (a float keeps its binary value); else None."""
    import sympy as sp

    # math's constants by identity, so `from math import pi` is recognized too.
    if value is math.pi:
        return sp.pi
    if value is math.e:
        return sp.E
    if value is math.tau:
        return 2 * sp.pi
    if isinstance(value, bool):
        return sp.true if value else sp.false
    if isinstance(value, int):
        return sp.Integer(value)
    if isinstance(value, float):
        return sp.Float(value, DIGITS)
    return None


def _assigned_names(node: ast.AST) -> set[str]:
    """Names bound anywhere in the function: Python treats every one of them as local."""
    names = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            names.add(child.id)
    return names


class _OnePathOnly(Exception):
    """An `if` binds a variable on one of its paths only: its paths cannot be merged."""


class _Executor:
    """Evaluates one function's AST to a SymPy expression of its parameters."""

    def __init__(self, fs: FunctionSource, depth: int = 0) -> None:
        import sympy as sp

        self.fs = fs
        self.sp = sp
        self.depth = depth
        self.local_names = _assigned_names(fs.node) | set(fs.param_names())

    def run(self, args: Sequence[sympy.Basic]) -> sympy.Expr:
        """Bind ``args`` to the parameters and return the function's output expression."""
        env = dict(zip(self.fs.param_names(), args, strict=True))
        node = self.fs.node
        if isinstance(node, ast.Lambda):
            return self._scalar(self.expr(node.body, env), node.body)
        return self._block(node.body, env)

    # statements

    def _block(self, stmts: list[ast.stmt], env: dict[str, Any]) -> sympy.Expr:
        # Continuation style: at an `if`, each branch runs together with the statements after
        # the `if`, so early returns and branch-local assignments both come out right.
        for index, stmt in enumerate(stmts):
            if isinstance(stmt, ast.Return):
                return self._returned(stmt, env)
            if isinstance(stmt, ast.If) and not self._merged(stmt, env):
                return self._branch(stmt, stmts[index + 1 :], env)
            if not isinstance(stmt, ast.If):
                self._statement(stmt, env)
        last = stmts[-1] if stmts else self.fs.node
        raise self.fs.error(
            UnsupportedSyntaxError, last, "the function can end without returning a value"
        )

    def _returned(self, stmt: ast.Return, env: dict[str, Any]) -> Any:
        if stmt.value is None:
            raise self.fs.error(UnsupportedSyntaxError, stmt, "return without a value")
        value = self.expr(stmt.value, env)
        if self.depth > 0 and isinstance(value, tuple):  # a helper's `return r, theta`
            return tuple(self._scalar(part, stmt.value) for part in value)
        return self._scalar(value, stmt.value)

    def _branch(self, stmt: ast.If, rest: list[ast.stmt], env: dict[str, Any]) -> sympy.Expr:
        sp = self.sp
        condition = self._condition(stmt.test, env)
        if condition is sp.true:
            return self._block(stmt.body + rest, env)
        if condition is sp.false:
            return self._block(stmt.orelse + rest, env)
        taken = self._block(stmt.body + rest, dict(env))
        skipped = self._block(stmt.orelse + rest, dict(env))
        return sp.Piecewise((taken, condition), (skipped, True))

    def _merged(self, stmt: ast.If, env: dict[str, Any]) -> bool:
        """Run an `if` with no `return` in it and bind each variable it assigns to a
        Piecewise of its two values: the statements after it then run once, not once per
        path (a function of n such `if`s had 2**n paths). False, and ``env`` unchanged,
        where a return or a variable bound on one path only needs the continuations."""
        if any(isinstance(node, ast.Return) for node in ast.walk(stmt)):
            return False
        sp = self.sp
        condition = self._condition(stmt.test, env)
        known = condition is sp.true or condition is sp.false
        taken, skipped = dict(env), dict(env)
        try:
            if not known or condition is sp.true:
                self._run_all(stmt.body, taken)
            if not known or condition is sp.false:
                self._run_all(stmt.orelse, skipped)
        except _OnePathOnly:
            return False
        if known:
            env.update(taken if condition is sp.true else skipped)
            return True
        if taken.keys() != skipped.keys():
            return False
        merged = {}
        for name, value in taken.items():
            other = skipped[name]
            if value is other:
                continue
            if not (isinstance(value, sp.Basic) and isinstance(other, sp.Basic)):
                return False  # a sequence bound anew: the continuations handle it
            merged[name] = self._choice(condition, value, other, env.get(name))
        env.update(merged)
        return True

    def _choice(
        self, condition: sympy.Basic, value: sympy.Expr, other: sympy.Expr, before: object
    ) -> sympy.Expr:
        """``value`` where ``condition`` holds, else ``other``.

        Where one path left the variable as it was (``before``) and the other added terms
        to it, those terms are written on their own (``s = s + c * x`` in a branch:
        ``s + (c * x if condition else 0)``): a Piecewise of both would hold ``s`` twice, and
        n such `if`s in a row ``s`` 2**n times. A value computed on one path only (``log(x)``
        where ``x > 0``) stays inside its Piecewise: outside, every path would evaluate it.
        """
        sp = self.sp
        plain = sp.Piecewise((value, condition), (other, True))
        if (before is not other and before is not value) or before.is_Atom:
            return plain
        # The terms added to `before` (SymPy flattens sums: compare terms, not the sum), so
        # that nothing is added and subtracted again: with large values that cancels badly.
        terms = Counter(sp.Add.make_args(value if before is other else other))
        terms.subtract(Counter(sp.Add.make_args(before)))
        if any(count < 0 for count in terms.values()):  # not `before + ...`
            return plain
        change = sp.Add(*terms.elements())
        if change.has(before):
            return plain
        if before is other:
            return before + sp.Piecewise((change, condition), (0, True))
        return before + sp.Piecewise((0, condition), (change, True))

    def _run_all(self, stmts: list[ast.stmt], env: dict[str, Any]) -> None:
        """Run statements with no `return` among them (an `if` merges its paths)."""
        for stmt in stmts:
            if not isinstance(stmt, ast.If):
                self._statement(stmt, env)
            elif not self._merged(stmt, env):  # a variable bound on one path only
                raise _OnePathOnly

    def _statement(self, stmt: ast.stmt, env: dict[str, Any]) -> None:
        if isinstance(stmt, ast.Pass):
            return
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            return  # a docstring, or any other bare constant: no effect
        if isinstance(stmt, ast.Assign):
            value = self.expr(stmt.value, env)
            for target in stmt.targets:
                self._bind(target, value, env)
            return
        if isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self._bind(stmt.target, self.expr(stmt.value, env), env)
            return
        if isinstance(stmt, ast.AugAssign):
            self._augmented(stmt, env)
            return
        what = _STATEMENT_NAMES.get(type(stmt), f"{type(stmt).__name__} statements")
        raise self.fs.error(
            UnsupportedSyntaxError, stmt, f"{what} are not supported by the SymPy reference"
        )

    def _augmented(self, stmt: ast.AugAssign, env: dict[str, Any]) -> None:
        if not isinstance(stmt.target, ast.Name):
            raise self.fs.error(
                UnsupportedSyntaxError,
                stmt.target,
                "the SymPy reference only supports augmented assignment to a plain name",
            )
        current = self._name(stmt.target, env)
        env[stmt.target.id] = self._binary(stmt.op, current, self.expr(stmt.value, env), stmt)

    def _bind(self, target: ast.expr, value: object, env: dict[str, Any]) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
            return
        if isinstance(target, ast.Tuple | ast.List):
            if not isinstance(value, tuple) or len(value) != len(target.elts):
                raise self.fs.error(
                    UnsupportedSyntaxError,
                    target,
                    f"cannot unpack this value into {len(target.elts)} names "
                    "(the SymPy reference unpacks tuples of matching length only)",
                )
            for element, part in zip(target.elts, value, strict=True):
                self._bind(element, part, env)
            return
        raise self.fs.error(
            UnsupportedSyntaxError,
            target,
            f"assignment to {type(target).__name__} targets is not supported by the SymPy "
            "reference",
        )

    # expressions

    def expr(self, node: ast.expr, env: dict[str, Any]) -> Any:
        """Evaluate an expression node to a SymPy expression, boolean or tuple of them."""
        if isinstance(node, ast.Constant):
            return self._constant(node.value, node)
        if isinstance(node, ast.Name):
            return self._name(node, env)
        if isinstance(node, ast.Attribute):
            return self._constant(self._python_object(node, env), node)
        if isinstance(node, ast.Tuple):
            return tuple(self.expr(element, env) for element in node.elts)
        if isinstance(node, ast.BinOp):
            left, right = self.expr(node.left, env), self.expr(node.right, env)
            return self._binary(node.op, left, right, node)
        if isinstance(node, ast.UnaryOp):
            return self._unary(node, env)
        if isinstance(node, ast.IfExp):
            return self._conditional(node, env)
        if isinstance(node, ast.Compare):
            return self._compare(node, env)
        if isinstance(node, ast.BoolOp):
            parts = [self._condition(value, env) for value in node.values]
            return self.sp.And(*parts) if isinstance(node.op, ast.And) else self.sp.Or(*parts)
        if isinstance(node, ast.Call):
            return self._call(node, env)
        if isinstance(node, ast.Subscript):
            return self._item(node, env)
        raise self.fs.error(
            UnsupportedSyntaxError,
            node,
            f"{type(node).__name__} expressions are not supported by the SymPy reference",
        )

    def _item(self, node: ast.Subscript, env: dict[str, Any]) -> Any:
        """``polar(x, y)[1]``: one value of a tuple, at a literal index."""
        value = self.expr(node.value, env)
        index = self.expr(node.slice, env)
        if not isinstance(value, tuple) or not (
            index.is_Integer and -len(value) <= index < len(value)
        ):
            raise self.fs.error(
                UnsupportedSyntaxError,
                node,
                "the SymPy reference indexes only tuples, at a literal index in range",
            )
        return value[int(index)]

    def _constant(self, value: object, node: ast.AST) -> sympy.Basic:
        converted = _sympy_constant(value)
        if converted is None:
            raise self.fs.error(
                UnsupportedSyntaxError,
                node,
                f"the SymPy reference cannot use a {type(value).__name__} value here",
            )
        return converted

    def _name(self, node: ast.Name, env: dict[str, Any]) -> Any:
        if node.id in env:
            return env[node.id]
        if node.id in self.local_names:
            raise self.fs.error(
                UnsupportedSyntaxError, node, f"local variable {node.id!r} is used before it is set"
            )
        return self._constant(self._python_object(node, env), node)

    def _python_object(self, node: ast.expr, env: dict[str, Any]) -> object:
        """Resolve a name or dotted attribute chain to the Python object it names."""
        if isinstance(node, ast.Name):
            if node.id in self.local_names:
                raise self.fs.error(
                    UnsupportedSyntaxError,
                    node,
                    f"the SymPy reference cannot call or look into local variable {node.id!r}",
                )
            if node.id not in self.fs.namespace:
                raise self.fs.error(
                    UnsupportedSyntaxError, node, f"name {node.id!r} is not defined"
                )
            return self.fs.namespace[node.id]
        if isinstance(node, ast.Attribute):
            owner = self._python_object(node.value, env)
            if not hasattr(owner, node.attr):
                raise self.fs.error(
                    UnsupportedSyntaxError,
                    node,
                    f"{type(owner).__name__} object has no attribute {node.attr!r}",
                )
            return getattr(owner, node.attr)
        raise self.fs.error(
            UnsupportedSyntaxError,
            node,
            "the SymPy reference only calls names and dotted names (like math.sin)",
        )

    def _scalar(self, value: object, node: ast.AST) -> sympy.Expr:
        if not isinstance(value, self.sp.Expr):
            kind = "a tuple" if isinstance(value, tuple) else "a truth value"
            raise self.fs.error(
                UnsupportedSyntaxError,
                node,
                f"the SymPy reference needs a number here, and this is {kind}",
            )
        return value

    def _apply(self, primal: object, args: list[Any], node: ast.AST) -> sympy.Expr:
        counterpart = sympy_counterpart(primal, len(args))
        if counterpart is None:
            raise self.fs.error(
                UnsupportedSyntaxError, node, f"the SymPy reference does not know {primal!r}"
            )
        scalars = [self._scalar(arg, node) for arg in args]
        return counterpart(*scalars)

    def _binary(self, op: ast.operator, left: Any, right: Any, node: ast.AST) -> sympy.Expr:
        primal = _BINARY_OPERATORS.get(type(op))
        if primal is None:
            raise self.fs.error(
                UnsupportedSyntaxError,
                node,
                f"the {type(op).__name__} operator is not supported by the SymPy reference",
            )
        return self._apply(primal, [left, right], node)

    def _unary(self, node: ast.UnaryOp, env: dict[str, Any]) -> sympy.Basic:
        if isinstance(node.op, ast.Not):
            return self.sp.Not(self._condition(node.operand, env))
        primal = _UNARY_OPERATORS.get(type(node.op))
        if primal is None:
            raise self.fs.error(
                UnsupportedSyntaxError,
                node,
                f"the {type(node.op).__name__} operator is not supported by the SymPy reference",
            )
        return self._apply(primal, [self.expr(node.operand, env)], node)

    def _condition(self, node: ast.expr, env: dict[str, Any]) -> sympy.Basic:
        """Evaluate a test: a SymPy boolean, or a number compared with 0 as Python does."""
        value = self.expr(node, env)
        # A SymPy Symbol is a Boolean too (a proposition), so ``x`` itself must be tested.
        if isinstance(value, self.sp.logic.boolalg.Boolean) and not isinstance(value, self.sp.Expr):
            return value
        return self.sp.Ne(self._scalar(value, node), 0)

    def _conditional(self, node: ast.IfExp, env: dict[str, Any]) -> sympy.Expr:
        sp = self.sp
        condition = self._condition(node.test, env)
        taken = self._scalar(self.expr(node.body, env), node.body)
        skipped = self._scalar(self.expr(node.orelse, env), node.orelse)
        if condition is sp.true:
            return taken
        if condition is sp.false:
            return skipped
        return sp.Piecewise((taken, condition), (skipped, True))

    def _compare(self, node: ast.Compare, env: dict[str, Any]) -> sympy.Basic:
        # a < b < c means (a < b) and (b < c).
        operands = [self.expr(node.left, env)] + [self.expr(c, env) for c in node.comparators]
        parts = []
        for index, op in enumerate(node.ops):
            name = _COMPARISON_NAMES.get(type(op))
            if name is None:
                raise self.fs.error(
                    UnsupportedSyntaxError,
                    node,
                    f"the {type(op).__name__} comparison is not supported by the SymPy reference",
                )
            left = self._scalar(operands[index], node)
            right = self._scalar(operands[index + 1], node)
            parts.append(getattr(self.sp, name)(left, right))
        return self.sp.And(*parts)

    def _call(self, node: ast.Call, env: dict[str, Any]) -> sympy.Expr:
        if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
            raise self.fs.error(
                UnsupportedSyntaxError,
                node,
                "the SymPy reference supports calls with plain positional arguments only",
            )
        primal = self._python_object(node.func, env)
        args = [self.expr(arg, env) for arg in node.args]
        user_function = isinstance(primal, types.FunctionType | StaticFunction)
        if sympy_counterpart(primal, len(args)) is None and user_function:
            return self._inline(primal, args, node)
        return self._apply(primal, args, node)

    def _inline(
        self, fn: types.FunctionType | StaticFunction, args: list[Any], node: ast.Call
    ) -> sympy.Expr:
        """Execute a call of another user function on the symbolic arguments."""
        if self.depth >= MAX_INLINE_DEPTH:
            raise self.fs.error(
                UnsupportedSyntaxError, node, "calls nest too deeply (recursion?) for the reference"
            )
        callee = fn.source() if isinstance(fn, StaticFunction) else load_function(fn)
        params = _check_signature(callee)
        missing = params[len(args) :]
        defaults = _defaults(params, callee.defaults)
        if len(args) > len(params) or any(name not in defaults for name in missing):
            raise self.fs.error(
                UnsupportedSyntaxError,
                node,
                f"{callee.name}() takes {len(params)} positional arguments, given {len(args)}",
            )
        filled = [self._constant(defaults[name], node) for name in missing]
        scalars = [self._scalar(arg, node) for arg in args]
        return _Executor(callee, self.depth + 1).run(scalars + filled)


def _defaults(params: list[str], defaults: tuple[object, ...]) -> dict[str, object]:
    """Default values by parameter name (defaults belong to the last parameters)."""
    first = len(params) - len(defaults)
    return dict(zip(params[first:], defaults, strict=True))


def _check_signature(fs: FunctionSource) -> list[str]:
    """Return the positional parameter names, rejecting *args, **kwargs and keyword-only ones."""
    args = fs.node.args
    if args.vararg or args.kwarg or args.kwonlyargs:
        raise fs.error(
            UnsupportedSyntaxError,
            fs.node,
            "the SymPy reference supports positional parameters only (no *args, **kwargs or "
            "keyword-only parameters)",
        )
    return fs.param_names()


# --- the symbolic function and its numeric evaluation -------------------------------------------


def _to_sympy_number(value: float) -> sympy.Expr:
    import sympy as sp

    if isinstance(value, int) and not isinstance(value, bool):
        return sp.Integer(value)
    return sp.Float(float(value), DIGITS)


def _to_float(value: sympy.Basic) -> float:
    """A SymPy number as a float; nan when it is complex, undefined or not a number at all."""
    try:
        cancelled = getattr(value, "_prec", math.inf) < _MIN_ACCURATE_BITS and abs(value) < _TINY
    except TypeError:  # "Invalid NaN comparison": a nan point, or a nan value at it
        return math.nan
    if cancelled:
        # evalf's mark of exact cancellation (sign(x) + Heaviside(y - x) == 0, say): a Float
        # with no accurate bits and a magnitude bound such as 1e-165. The value is zero.
        return 0.0
    try:
        real, imag = value.as_real_imag()
        if imag != 0:
            return math.nan
        return float(real)
    except (TypeError, AttributeError):  # zoo, nan, unresolved symbols or conditions
        return math.nan


def evaluate(expr: sympy.Basic, subs: Mapping[sympy.Symbol, sympy.Expr]) -> float:
    """Evaluate ``expr`` at ``subs`` with DIGITS of precision and return the nearest float."""
    import sympy as sp

    # evalf(subs=...) raises the working precision where cancellation needs it (exp(x) - 1
    # near 0), which substituting first and evaluating afterwards would not.
    try:
        value = expr.evalf(DIGITS, subs=dict(subs))
        if not isinstance(value, sp.Number) and value.free_symbols:
            # Some conditions (Piecewise, Heaviside) only resolve once the values are in place.
            value = expr.xreplace(dict(subs)).evalf(DIGITS)
    except ZeroDivisionError:  # evalf of 0/0 at a Float zero (y*x**y/x at x = 0.0)
        return math.nan
    return _to_float(value)


@dataclass
class SymbolicFunction:
    """A primal function as a SymPy expression of its positional parameters."""

    name: str
    params: list[str]
    symbols: list[sympy.Symbol]
    expr: sympy.Expr
    defaults: dict[str, object] = field(default_factory=dict)
    origin: object = field(default=None, repr=False)
    _partials: dict[str, sympy.Expr] = field(default_factory=dict, repr=False)

    def symbol(self, name: str) -> sympy.Symbol:
        """Return the symbol standing for parameter ``name``."""
        if name not in self.params:
            raise KeyError(f"{self.name} has no parameter {name!r} (it has {self.params})")
        return self.symbols[self.params.index(name)]

    def partial(self, name: str) -> sympy.Expr:
        """Return the partial derivative of the output with respect to parameter ``name``."""
        if name not in self._partials:
            import sympy as sp

            self._partials[name] = sp.diff(self.expr, self.symbol(name))
        return self._partials[name]

    def bind(self, point: Mapping[str, float]) -> dict[sympy.Symbol, sympy.Expr]:
        """Map each symbol to its value at ``point`` (missing parameters take their defaults)."""
        subs = {}
        for name, symbol in zip(self.params, self.symbols, strict=True):
            if name in point:
                value = point[name]
            elif name in self.defaults:
                value = self.defaults[name]
            else:
                raise KeyError(f"the point {dict(point)} gives no value for {name!r}")
            subs[symbol] = _to_sympy_number(value)
        return subs

    def value(self, point: Mapping[str, float]) -> float:
        """Evaluate the function itself at ``point``."""
        return evaluate(self.expr, self.bind(point))

    def gradient(self, point: Mapping[str, float], wrt: Sequence[str]) -> dict[str, float]:
        """Evaluate the partials named in ``wrt`` at ``point``."""
        subs = self.bind(point)
        return {name: evaluate(self.partial(name), subs) for name in wrt}


def _function_source(fn: object) -> FunctionSource:
    return fn if isinstance(fn, FunctionSource) else load_function(fn)


def symbolic_function(fn: object) -> SymbolicFunction:
    """Symbolically execute a function (or a FunctionSource) into a SymbolicFunction."""
    if isinstance(fn, SymbolicFunction):
        return fn
    import sympy as sp

    fs = _function_source(fn)
    params = _check_signature(fs)
    symbols = [sp.Symbol(name, real=True) for name in params]
    expr = _Executor(fs).run(symbols)
    defaults = _defaults(params, fs.defaults)
    return SymbolicFunction(fs.name, params, symbols, expr, defaults, origin=fs.origin)


def reference_gradient(
    fn: object, point: Mapping[str, float], wrt: Sequence[str]
) -> dict[str, float]:
    """The partials of ``fn`` named in ``wrt`` at ``point``, by SymPy at DIGITS digits."""
    return symbolic_function(fn).gradient(point, wrt)


# --- sampling points ---------------------------------------------------------------------------


def _primal_evaluator(
    fn: object, symbolic: SymbolicFunction
) -> Callable[[Mapping[str, float]], object]:
    """Run the real function when there is one; else (static source) the symbolic one."""
    live = fn if isinstance(fn, types.FunctionType) else symbolic.origin
    if not callable(live):
        return symbolic.value
    return lambda point: live(*(point[name] for name in symbolic.params))


def _finite_real(value: object) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def _usable(
    point: Mapping[str, float],
    primal: Callable[[Mapping[str, float]], object],
    symbolic: SymbolicFunction,
    wrt: Sequence[str],
) -> bool:
    try:
        value = primal(point)
    except (ArithmeticError, ValueError, TypeError):  # outside the function's domain
        return False
    if not _finite_real(value):
        return False
    return all(math.isfinite(g) for g in symbolic.gradient(point, wrt).values())


def sample_points(
    fn: object,
    n: int,
    wrt: Sequence[str] | None = None,
    seed: int = 0,
    stages: Sequence[Interval] = SAMPLING_STAGES,
) -> list[dict[str, float]]:
    """Draw ``n`` seeded points where ``fn`` and its SymPy partials are finite, from each
    box of ``stages`` in turn until there are enough."""
    symbolic = symbolic_function(fn)
    names = list(wrt) if wrt is not None else symbolic.params
    primal = _primal_evaluator(fn, symbolic)
    rng = random.Random(seed)
    points: list[dict[str, float]] = []
    attempts_per_stage = 40 * max(n, 1)
    for low, high in stages:
        for _ in range(attempts_per_stage):
            if len(points) >= n:
                return points
            point = {
                name: round(rng.uniform(low, high), SAMPLE_DECIMALS) for name in symbolic.params
            }
            if _usable(point, primal, symbolic, names):
                points.append(point)
    if len(points) >= n:
        return points
    raise NoSamplePoints(
        f"found only {len(points)} of {n} points where {symbolic.name} and its partials are "
        f"finite (tried boxes {list(stages)})"
    )


class NoSamplePoints(ValueError):
    """Random sampling found too few points in the function's domain."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"{reason}; pass the points explicitly (points=[...])")
