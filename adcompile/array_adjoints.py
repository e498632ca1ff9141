"""The array-mode parts of the adjoint sweep (``reverse.py``).

- ``KnownShapes`` refines adjoint expressions with the shape facts of ``shapes.py``: it drops
  ``unbroadcast`` where no broadcasting happened, reads shapes from values the forward sweep
  keeps anyway, and lets a reduction's filled adjoint stay a scalar when an elementwise rule
  multiplies it by a value of the full shape right away.
- ``array_partial`` returns a parameter's gradient in its own shape, dtype and structure.
- ``helpers_in`` names the helper functions (``rules/array_helpers.py``) a template calls.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from .astutil import call, map_children, names_in
from .ir import Apply, CoreFunction, Var
from .shapes import ShapeFacts


def helpers_in(parsed: tuple[list[ast.stmt], list[ast.expr | None]]) -> frozenset[str]:
    """The helper functions a template's (setup, adjoints) call."""
    from .rules.array_helpers import HELPERS

    setup, exprs = parsed
    found = [e for e in exprs if e is not None] + [s.value for s in setup]
    return frozenset(name for e in found for name in names_in(e) if name in HELPERS)


@dataclass
class KnownShapes:
    """Adjoint expressions simplified by what is known about shapes (see the docstring)."""

    fn: CoreFunction
    facts: ShapeFacts

    def refine(self, expr: ast.expr, stmt: Apply) -> ast.expr:
        """Drop ``unbroadcast`` where no broadcasting happened; read shapes early."""
        facts, fn = self.facts, self.fn
        unbroadcast = fn.helpers.get("unbroadcast")
        operands = {a.name: a for a in stmt.args if isinstance(a, Var)}

        def visit(node: ast.AST) -> ast.AST:
            if isinstance(node, ast.Call) and len(node.args) == 2:
                func, (first, second) = node.func, node.args
                if (
                    isinstance(func, ast.Name)
                    and func.id == unbroadcast
                    and isinstance(second, ast.Name)
                    and second.id in operands
                    and facts.same_shape(operands[second.id], stmt.target)
                ):
                    return visit(first)
            if _is_shape_of(node, fn.numpy_alias, "size") and node.args[0].id in facts.scalars:
                return ast.Constant(value=1)
            if _is_shape_of(node, fn.numpy_alias, "shape", "size"):
                node.args[0] = _name(facts.origin(node.args[0].id))
                return node
            map_children(node, visit)
            if isinstance(node, ast.BinOp):
                self._unfill(node)
            return node

        return visit(expr)

    def _unfill(self, product: ast.BinOp) -> None:
        """``np.full(np.shape(v), s) * e`` is ``s * e`` when ``e`` has the shape of ``v``.

        A reduction's adjoint fills an array with the incoming adjoint; when an elementwise
        rule multiplies it by a value of that shape right away, the scalar suffices.
        """
        spine = [product]
        while isinstance(spine[-1].left, ast.BinOp) and _is_product(spine[-1].left):
            spine.append(spine[-1].left)
        if not _is_product(product):
            return
        first = spine[-1]
        negated = isinstance(first.left, ast.UnaryOp) and isinstance(first.left.op, ast.USub)
        filled = first.left.operand if negated else first.left
        shape_of = _filled_shape(filled, self.fn.numpy_alias)
        if shape_of is None:
            return
        wanted = self.facts.origin(shape_of)
        if any(self._origin_of(step.right) == wanted for step in spine):
            if negated:
                first.left.operand = filled.args[1]
            else:
                first.left = filled.args[1]

    def _origin_of(self, expr: ast.expr) -> str | None:
        """The name whose shape ``expr`` surely has (elementwise arithmetic of names), or None."""
        facts = self.facts
        if isinstance(expr, ast.Name):
            return facts.origin(expr.id)
        if isinstance(expr, ast.UnaryOp):
            return self._origin_of(expr.operand)
        if isinstance(expr, ast.Compare) and len(expr.comparators) == 1:
            # A comparison broadcasts its operands as arithmetic does (`x == 0`: x's shape).
            expr = ast.BinOp(left=expr.left, op=ast.Add(), right=expr.comparators[0])
        if isinstance(expr, ast.BinOp):
            left, right = self._origin_of(expr.left), self._origin_of(expr.right)
            if _is_literal(expr.left) or (left is not None and left in facts.scalars):
                return right
            if _is_literal(expr.right) or (right is not None and right in facts.scalars):
                return left
            return left if left == right else None
        return None


def scalar_output_check(fn: CoreFunction, output: ast.expr) -> ast.stmt:
    """``check_scalar(f)``: a gradient needs a scalar output (an array would seed a sum)."""
    return ast.Expr(value=call(fn.helper("check_scalar"), output))


def array_partial(
    fn: CoreFunction, adjoint_of: Callable[[str], str | None], param: str
) -> ast.expr:
    """A parameter's gradient in its own shape, dtype and structure.

    ``adjoint_of(var)`` is the name of ``var``'s adjoint, or None if it has none.
    """
    whole = adjoint_of(param)
    parts: dict = {} if whole is None else {(): _name(whole)}
    for path, stand_in in fn.leaves.get(param, []):
        adjoint = adjoint_of(stand_in)
        if adjoint is not None:
            _insert_part(parts, path, _name(adjoint))
    if list(parts) != [()]:
        return call(fn.helper("gradient_like"), _name(param), _parts_literal(parts))
    if fn.leaves.get(param):  # a dict or list, whose whole adjoint a user's rule gave
        whole = ast.Dict(keys=[ast.Tuple(elts=[], ctx=ast.Load())], values=[parts[()]])
        return call(fn.helper("gradient_like"), _name(param), whole)
    return call(fn.helper("unbroadcast"), parts[()], _name(param))


def _insert_part(parts: dict, path: tuple[object, ...], adjoint: ast.expr) -> None:
    """Put ``adjoint`` at ``path`` in a nested dict of parts (key ``()``: the value itself)."""
    for key in path:
        below = parts.setdefault(key, {})
        if not isinstance(below, dict):  # the value itself is a part too: keep it under ()
            below = parts[key] = {(): below}
        parts = below
    parts[()] = adjoint


def _parts_literal(parts: dict) -> ast.expr:
    """The dict literal of a nested dict of parts; ``{(): b}`` collapses to ``b``."""
    if list(parts) == [()]:
        return parts[()]
    keys = [ast.Tuple(elts=[], ctx=ast.Load()) if k == () else ast.Constant(value=k) for k in parts]
    values = [_parts_literal(v) if isinstance(v, dict) else v for v in parts.values()]
    return ast.Dict(keys=keys, values=values)


def _is_product(node: ast.BinOp) -> bool:
    return isinstance(node.op, ast.Mult | ast.Div)


def _is_literal(node: ast.expr) -> bool:
    """A number, or arithmetic and comparisons of numbers only (``2 - (2 != 0)`` before
    simplification)."""
    if isinstance(node, ast.BinOp):
        return _is_literal(node.left) and _is_literal(node.right)
    if isinstance(node, ast.UnaryOp):
        return _is_literal(node.operand)
    if isinstance(node, ast.Compare):
        return _is_literal(node.left) and all(_is_literal(c) for c in node.comparators)
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _filled_shape(node: ast.expr, numpy_alias: str) -> str | None:
    """``v`` for ``np.full(np.shape(v), s)``, else None."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "full"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == numpy_alias
        and len(node.args) == 2
        and _is_shape_of(node.args[0], numpy_alias)
    ):
        return None
    return node.args[0].args[0].id


def _is_shape_of(node: ast.AST, numpy_alias: str, *functions: str) -> bool:
    """True for ``np.shape(name)`` (or another of ``functions``: ``np.size(name)``)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in (functions or ("shape",))
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == numpy_alias
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Name)
    )


def _name(name: str) -> ast.Name:
    return ast.Name(id=name, ctx=ast.Load())
