"""Which names of scalar generated code always hold floats, and which always hold ``1.0``.

The partials of a gradient are floats even for int inputs: the seed ``b_f = 1.0`` carries
float-ness into every adjoint as a factor. ``b_f * e`` may drop that factor only where ``e``
is a float already, for then ``1.0 * e`` is ``e``, bit for bit. These facts say where.

Both analyses are flow-insensitive: a name is a float only if every assignment to it, anywhere
in the function, stores a float; it holds one only if it is assigned exactly once, from
``1.0`` or from another such name. Parameters and names read from outside are unknown.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

# `math` functions that return a float for every real argument (floor, ceil, trunc, isqrt,
# factorial, comb and perm return ints).
FLOAT_FUNCTIONS = frozenset(
    {
        "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
        "asinh", "acosh", "atanh", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt",
        "pow", "hypot", "fabs", "erf", "erfc", "gamma", "lgamma", "copysign", "fmod",
    }
)  # fmt: skip
_SAME_TYPE_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Mod, ast.FloorDiv, ast.Pow)


@dataclass(frozen=True)
class FloatFacts:
    """The float names and the unit (always ``1.0``) names of one generated function."""

    floats: frozenset[str]
    units: frozenset[str]
    math_alias: str

    @classmethod
    def of(cls, statements: list[ast.stmt], params: list[str], math_alias: str) -> FloatFacts:
        """Analyse a function's statements; ``params`` are its parameters (unknown types)."""
        stores = _stores(statements)
        units = _units(stores, set(params))
        floats = _floats(stores, set(params), units, math_alias)
        return cls(frozenset(floats), frozenset(units), math_alias)

    def is_float(self, node: ast.expr) -> bool:
        """Whether ``node`` always evaluates to a float (given these facts)."""
        return _is_float(node, self.floats, self.math_alias)

    def is_unit(self, node: ast.expr) -> bool:
        """Whether ``node`` is a name that always holds ``1.0``."""
        return node.__class__ is ast.Name and node.id in self.units


NO_FACTS = FloatFacts(frozenset(), frozenset(), "math")


def _stores(statements: list[ast.stmt]) -> dict[str, list[ast.expr | None]]:
    """Every name stored to, with the value of each store (None: not a plain assignment)."""
    found: dict[str, list[ast.expr | None]] = {}
    for node in _walk_statements(statements):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                found.setdefault(target.id, []).append(node.value)
                continue
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            update = ast.BinOp(left=ast.Name(id=node.target.id), op=node.op, right=node.value)
            found.setdefault(node.target.id, []).append(update)
            continue
        for target in _targets(node):
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    found.setdefault(name.id, []).append(None)
    return found


def _walk_statements(statements: list[ast.stmt]) -> list[ast.stmt]:
    out, stack = [], list(statements)
    while stack:
        stmt = stack.pop()
        out.append(stmt)
        for field in ("body", "orelse", "finalbody"):
            stack.extend(getattr(stmt, field, ()))
    return out


def _targets(stmt: ast.stmt) -> list[ast.expr]:
    if isinstance(stmt, ast.Assign):
        return stmt.targets
    if isinstance(stmt, ast.AugAssign | ast.AnnAssign | ast.For):
        return [stmt.target]
    return []


def _units(stores: dict[str, list[ast.expr | None]], params: set[str]) -> set[str]:
    units: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, values in stores.items():
            if name in units or name in params or len(values) != 1:
                continue
            value = values[0]
            is_one = isinstance(value, ast.Constant) and type(value.value) is float
            if (is_one and value.value == 1.0) or (
                isinstance(value, ast.Name) and value.id in units
            ):
                units.add(name)
                changed = True
    return units


def _floats(
    stores: dict[str, list[ast.expr | None]], params: set[str], units: set[str], math_alias: str
) -> set[str]:
    # The greatest fixpoint: assume every stored name is a float, then drop each name with a
    # store that is not a float under the current assumption, until nothing changes.
    floats = {name for name in stores if name not in params}
    changed = True
    while changed:
        changed = False
        for name in list(floats):
            values = stores[name]
            if name in units:
                continue
            if not all(v is not None and _is_float(v, floats, math_alias) for v in values):
                floats.discard(name)
                changed = True
    return floats


def _is_float(node: ast.expr, floats: set[str] | frozenset[str], math_alias: str) -> bool:
    cls = node.__class__
    if cls is ast.Name:
        return node.id in floats
    if cls is ast.Constant:
        return type(node.value) is float
    if cls is ast.BinOp:
        if isinstance(node.op, ast.Div):
            return True  # true division of numbers gives a float
        return isinstance(node.op, _SAME_TYPE_OPS) and (
            _is_float(node.left, floats, math_alias) or _is_float(node.right, floats, math_alias)
        )
    if cls is ast.UnaryOp:
        return isinstance(node.op, ast.USub | ast.UAdd) and _is_float(
            node.operand, floats, math_alias
        )
    if cls is ast.IfExp:
        return _is_float(node.body, floats, math_alias) and _is_float(
            node.orelse, floats, math_alias
        )
    if cls is ast.Call:
        return _is_float_call(node.func, math_alias)
    return False


def _is_float_call(func: ast.expr, math_alias: str) -> bool:
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == math_alias
        and func.attr in FLOAT_FUNCTIONS
    )
