"""Returned array gradients that could be one array: copied, so each can be changed alone.

An adjoint can reach two parameters unchanged: in ``np.sum(np.sin(x + y))`` the adjoint of
``x + y`` is the gradient of both ``x`` and ``y``, and ``unbroadcast`` hands it back as it is
when no broadcasting happened. NumPy arrays are mutable, so a caller who scales one gradient
in place (``gx *= lr``) would change the other as well. PyTorch gives every parameter its own
gradient tensor; here, a returned gradient that may share its array with another (or with an
input, or be a view of something) gets ``np.copy``. Gradients proven to be arrays of their own
(each made by arithmetic or a NumPy function that allocates) cost nothing.
"""

from __future__ import annotations

import ast

from .aliasing import SHARING, may_share, shared_argument
from .astutil import load, names_in, store, stored_names

# Helpers that return a new array (never their argument or a view of it); NumPy functions
# that may not are aliasing.may_share's.
_ALLOCATING_HELPERS = frozenset(
    {
        "matmul_adjoint_a",
        "matmul_adjoint_b",
        "contraction_adjoint_a",
        "contraction_adjoint_b",
        "scatter",
        "prod_adjoint",
        "extreme_adjoint",
        "trace_adjoint",
        "diff_adjoint",
        "cumprod_adjoint",
    }
)
_UNKNOWN = object()  # assigned in a nested block: any of several values


def separate_returned_arrays(
    statements: list[ast.stmt],
    returns: ast.expr,
    params: list[str],
    helpers: dict[str, str],
    numpy_alias: str,
) -> list[ast.stmt]:
    """Append ``b = np.copy(b)`` for each adjoint in ``returns`` (the gradients of a reverse
    sweep) that may share its array."""
    leaves = [n for n in dict.fromkeys(names_in(returns)) if n not in params]
    leaves = [n for n in leaves if n not in helpers.values()]
    if not leaves:
        return statements
    values = _last_values(statements)
    origins = _Origins(values, params, helpers, numpy_alias)
    seen: set[str] = set()
    copies = []
    for leaf in leaves:
        origin = origins.of(leaf)
        # A view (origin None) could be of another returned array; one alone is left as is.
        if origin in params or origin in seen or (origin is None and len(leaves) > 1):
            copies.append(leaf)
        elif origin is not None:
            seen.add(origin)
    return statements + [_copy(leaf, numpy_alias, statements[-1]) for leaf in copies]


def _last_values(statements: list[ast.stmt]) -> dict[str, object]:
    """Each name's value at the end: the expression of its last assignment at the top level,
    or ``_UNKNOWN`` where a nested block assigns it last."""
    values: dict[str, object] = {}
    for stmt in statements:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                values[target.id] = stmt.value
                continue
        for name in stored_names(stmt):
            values[name] = _UNKNOWN
    return values


class _Origins:
    """The name whose new array a value is, following copies, views and ``unbroadcast``
    (which may return its argument); None where it is not known."""

    def __init__(
        self, values: dict[str, object], params: list[str], helpers: dict[str, str], np: str
    ) -> None:
        self.values, self.params, self.np = values, params, np
        self.unbroadcast = helpers.get("unbroadcast")
        self.allocating = {helpers[h] for h in _ALLOCATING_HELPERS if h in helpers}

    def of(self, name: str, depth: int = 0) -> str | None:
        """The origin of the value ``name`` holds at the end."""
        value = self.values.get(name)
        if value is None:
            return name  # a parameter, or a constant of the module
        if value is _UNKNOWN or depth > 100:
            return None
        return self._origin(name, value, depth)

    def _origin(self, name: str, value: ast.expr, depth: int) -> str | None:
        """The origin of ``value``, assigned to ``name``."""
        if isinstance(value, ast.Name):
            return self.of(value.id, depth + 1)
        if isinstance(value, ast.BinOp | ast.UnaryOp | ast.Compare | ast.Constant):
            return name  # arithmetic on arrays makes a new array; a number is never shared
        if isinstance(value, ast.Dict | ast.List | ast.Tuple):
            return name  # a user rule's adjoint of a dict or list argument: a new one
        if isinstance(value, ast.Attribute | ast.Subscript):  # x.T, x[i]: a view of x
            return self._origin(name, value.value, depth + 1)
        if not isinstance(value, ast.Call):
            return None
        func = value.func
        if isinstance(func, ast.Name):
            if func.id == self.unbroadcast and value.args:  # its argument, or a new array
                return self._origin(name, value.args[0], depth + 1)
            return name if func.id in self.allocating else None
        if not isinstance(func, ast.Attribute):
            return None
        if not (isinstance(func.value, ast.Name) and func.value.id == self.np):
            # x.reshape(3), x.transpose(): x, or a view of it; other methods are unknown
            return self._origin(name, func.value, depth + 1) if func.attr in SHARING else None
        if not value.args:
            return None
        if may_share(func.attr, value):  # np.reshape(a, ...), np.asarray(a): a, or a view
            return self._origin(name, shared_argument(value), depth + 1)
        return name  # np.full, np.where, np.cos...: a new array


def _copy(name: str, numpy_alias: str, like: ast.stmt) -> ast.stmt:
    copy_call = ast.Call(
        func=ast.Attribute(value=load(numpy_alias), attr="copy", ctx=ast.Load()),
        args=[load(name)],
        keywords=[],
    )
    stmt = ast.Assign(targets=[store(name)], value=copy_call, lineno=0)
    stmt.adcompile_line = getattr(like, "adcompile_line", None)
    stmt.adcompile_sweep = getattr(like, "adcompile_sweep", None)
    return stmt
