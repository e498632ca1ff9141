"""Which names of scalar generated code always hold floats, and which always hold ``1.0``.

The partials of a gradient are floats even for int inputs: the seed ``b_f = 1.0`` carries
float-ness into every adjoint as a factor. ``b_f * e`` may drop that factor only where ``e``
is a float already, for then ``1.0 * e`` is ``e``, bit for bit. These facts say where.

Both are flow-insensitive: a name holds ``1.0`` (a *unit*) only if it is assigned exactly
once, from ``1.0`` or from another unit; it is a float only if every assignment to it,
anywhere in the function, stores a float. Parameters and names read from outside are unknown.
The float question is answered on demand, for the few names next to a unit factor, and
conservatively: a name on a cycle (a loop-carried value) or deeper than ``MAX_DEPTH``
assignments is not claimed to be a float, which only keeps a factor of 1.0.
"""

from __future__ import annotations

import ast

from .astutil import statements_in

# `math` functions that return a float for every real argument (floor, ceil, trunc, isqrt,
# factorial, comb and perm return ints).
FLOAT_FUNCTIONS = frozenset(
    {
        "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
        "asinh", "acosh", "atanh", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt",
        "pow", "hypot", "fabs", "erf", "erfc", "gamma", "lgamma", "copysign", "fmod",
        "radians", "degrees",
    }
)  # fmt: skip
# NumPy functions whose result is a float (array) for int and bool arguments too.
NUMPY_FLOAT_FUNCTIONS = frozenset(
    {"sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "hypot", "sinh", "cosh"}
    | {"tanh", "arcsinh", "arccosh", "arctanh", "exp", "expm1", "exp2", "log", "log1p"}
    | {"log2", "log10", "logaddexp", "sqrt", "cbrt", "mean", "var", "std"}
)
_SAME_TYPE_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Mod, ast.FloorDiv, ast.Pow)
MAX_DEPTH = 12
_UNKNOWN = None  # a store that is not a plain `name = value` (a loop target, unpacking)
# What a name is given: the value of `name = e`, the statement `name op= e`, or _UNKNOWN.
Store = ast.expr | ast.AugAssign | None

# Tuples for isinstance, as astutil.BLOCK_STATEMENTS explains.
_SIGNS = (ast.USub, ast.UAdd)


class FloatFacts:
    """The unit names of one generated function, and its float names on demand."""

    def __init__(
        self,
        stores: dict[str, list[Store]],
        params: set[str],
        math_alias: str,
        keeps_shapes: bool = False,
        keeps_types: bool = False,
    ) -> None:
        self._stores = stores
        # Array code: a product with a literal zero stays, as an array of zeros in its shape
        # (the number 0.0 in its place made `np.reshape(0.0, ...)` and `0.0[::-1]` fail).
        self.keeps_shapes = keeps_shapes
        # Scalar gradients: `1.0 * e` stays unless `e` is surely a float (partials of int
        # inputs are floats). Arrays take their input's dtype back in `unbroadcast`.
        self.keeps_types = keeps_types
        # Whether `constant` may know a name (ArrayFacts): asked first, as simplify meets
        # every name of the generated code.
        self.has_constants = False
        self._params = params
        self.math_alias = math_alias
        self.units = frozenset(_units(stores, params))
        self._known: dict[str, bool] = {}  # settled answers: not cut short by depth or a cycle
        self._open: set[str] = set()  # names being decided (a cycle reaching one says no)

    @classmethod
    def of(cls, statements: list[ast.stmt], params: list[str], math_alias: str) -> FloatFacts:
        """The facts of a function's statements; ``params`` are its parameters."""
        return cls(_stores(statements), set(params), math_alias, keeps_types=True)

    def constant(self, name: str) -> float | None:
        """The float ``name`` always holds, where known (here: never)."""
        return None

    def is_unit(self, node: ast.expr) -> bool:
        """Whether ``node`` is a name that always holds ``1.0``."""
        return node.__class__ is ast.Name and node.id in self.units

    def is_float(self, node: ast.expr) -> bool:
        """Whether ``node`` surely evaluates to a float (False: unknown)."""
        return self._expr(node, 0)[0]

    # Each check returns (is a float, settled): unsettled answers (cut by depth or by a
    # cycle) are False and not remembered, so the order of questions cannot change answers.
    def _expr(self, node: ast.expr, depth: int) -> tuple[bool, bool]:
        cls = node.__class__
        if cls is ast.Name:
            return self._name(node.id, depth)
        if cls is ast.Constant:
            return type(node.value) is float, True
        if cls is ast.BinOp:
            return self._arithmetic(node.op, node.left, node.right, depth)
        if cls is ast.AugAssign:  # `n op= e` stores `n op e`
            return self._arithmetic(node.op, node.target, node.value, depth)
        if cls is ast.UnaryOp:
            if not isinstance(node.op, _SIGNS):
                return False, True
            return self._expr(node.operand, depth)
        if cls is ast.IfExp:
            return self._all([node.body, node.orelse], depth)
        if cls is ast.Call:
            return _is_float_call(node.func, self.math_alias), True
        return False, True

    def _arithmetic(
        self, op: ast.operator, left: ast.expr, right: ast.expr, depth: int
    ) -> tuple[bool, bool]:
        if isinstance(op, ast.Div):
            return True, True  # true division of numbers gives a float
        if not isinstance(op, _SAME_TYPE_OPS):
            return False, True
        return self._any(left, right, depth)

    def _any(self, left: ast.expr, right: ast.expr, depth: int) -> tuple[bool, bool]:
        first = self._expr(left, depth)
        if first[0]:
            return first
        second = self._expr(right, depth)
        return second[0], second[0] or (first[1] and second[1])

    def _all(self, nodes: list[Store], depth: int) -> tuple[bool, bool]:
        for node in nodes:
            if node is _UNKNOWN:
                return False, True
            answer = self._expr(node, depth)
            if not answer[0]:
                return answer
        return True, True

    def _name(self, name: str, depth: int) -> tuple[bool, bool]:
        if name in self._known:
            return self._known[name], True
        if name in self.units:
            return True, True
        if name in self._params or name not in self._stores:
            return False, True
        if name in self._open or depth >= MAX_DEPTH:
            return False, False
        self._open.add(name)
        answer = self._all(self._stores[name], depth + 1)
        self._open.discard(name)
        if answer[1]:
            self._known[name] = answer[0]
        return answer


def _stores(statements: list[ast.stmt]) -> dict[str, list[Store]]:
    """Every name stored to, with the value of each store: an expression for ``name = e``,
    the statement for ``name op= e``, None for any other store (a loop target, unpacking)."""
    found: dict[str, list[Store]] = {}
    for stmt in statements_in(statements):
        cls = stmt.__class__
        if cls is ast.Assign and len(stmt.targets) == 1 and stmt.targets[0].__class__ is ast.Name:
            found.setdefault(stmt.targets[0].id, []).append(stmt.value)
        elif cls is ast.AugAssign and stmt.target.__class__ is ast.Name:
            found.setdefault(stmt.target.id, []).append(stmt)
        elif cls is ast.Assign or cls is ast.AugAssign or cls is ast.For:
            targets = stmt.targets if cls is ast.Assign else [stmt.target]
            for node in (n for target in targets for n in ast.walk(target)):
                if isinstance(node, ast.Name):
                    found.setdefault(node.id, []).append(_UNKNOWN)
    return found


def _units(stores: dict[str, list[Store]], params: set[str]) -> set[str]:
    candidates = {
        name: values[0]
        for name, values in stores.items()
        if len(values) == 1 and name not in params and _may_be_unit(values[0])
    }
    units: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, value in candidates.items():
            if name not in units and (value.__class__ is ast.Constant or value.id in units):
                units.add(name)
                changed = True
    return units


def _may_be_unit(value: ast.expr | None) -> bool:
    if value.__class__ is ast.Constant:
        return type(value.value) is float and value.value == 1.0
    return value.__class__ is ast.Name


def _is_float_call(func: ast.expr, math_alias: str) -> bool:
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == math_alias
        and func.attr in FLOAT_FUNCTIONS
    )


class ArrayFacts(FloatFacts):
    """The facts of array code: names holding a float literal, and names surely holding
    float arrays the function made (a NumPy float function's result, or arithmetic on one).

    ``u * 0.5`` is ``0.5`` (the seed times a rule's constant), and ``1.0 * t`` is ``t`` for
    such a ``t``; ``1.0 * x`` stays for a parameter ``x`` (or a view of one): it may hold ints,
    and an adjoint must not be the caller's array."""

    def __init__(
        self,
        stores: dict[str, list[Store]],
        params: set[str],
        math_alias: str,
        defining: dict[str, ast.Assign],
        numpy_alias: str,
    ) -> None:
        # Types kept as in scalar code: `1.0 * a` stays (a new float array), where `a` would
        # keep an int array's dtype and be an array an adjoint then aliases (an input).
        super().__init__(stores, params, math_alias, keeps_shapes=True, keeps_types=True)
        self.has_constants = True
        self._defining = defining
        self.numpy_alias = numpy_alias

    @classmethod
    def of(  # type: ignore[override]  # array code also names its NumPy alias
        cls, statements: list[ast.stmt], params: list[str], math_alias: str, numpy_alias: str
    ) -> ArrayFacts:
        """The facts of a function's statements; ``params`` are its parameters."""
        stores = _stores(statements)
        once = {name for name, values in stores.items() if len(values) == 1} - set(params)
        defining = {
            stmt.targets[0].id: stmt
            for stmt in statements_in(statements)
            if stmt.__class__ is ast.Assign
            and stmt.targets[0].__class__ is ast.Name
            and stmt.targets[0].id in once
        }
        return cls(stores, set(params), math_alias, defining, numpy_alias)

    def constant(self, name: str) -> float | None:
        """The float ``name`` holds, if its one store is a float literal as simplified so
        far (``b_t8 = 0.5`` once the seed is folded: ``b_t8 * 2 * t`` then folds to ``t``)."""
        stmt = self._defining.get(name)
        if stmt is None or stmt.value.__class__ is not ast.Constant:
            return None
        value = stmt.value.value
        return value if type(value) is float else None

    def _expr(self, node: ast.expr, depth: int) -> tuple[bool, bool]:
        # Arrays: a NumPy function that always gives floats (np.tanh of ints too), and
        # `a @ b` as other arithmetic (a float if either side is). A parameter is unknown.
        if node.__class__ is ast.Call:
            func = node.func
            numpy_call = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            return numpy_call and func.value.id == self.numpy_alias and (
                func.attr in NUMPY_FLOAT_FUNCTIONS
            ), True
        if node.__class__ is ast.BinOp and isinstance(node.op, ast.MatMult):
            return self._any(node.left, node.right, depth)
        return super()._expr(node, depth)


NO_FACTS = FloatFacts({}, set(), "math")  # no units: the simplifier drops no factor
ARRAY_FACTS = FloatFacts({}, set(), "math", keeps_shapes=True)
