"""Passes over the generated statements: algebraic simplification and dead-code elimination.

Each pass is a small function from statements to statements. Simplification touches only the
adjoint sweep: the forward sweep keeps the user's own arithmetic exactly as written. Every
adjoint expression is a product with the incoming adjoint (a float), so rewriting ``x ** 1.0``
to ``x`` inside it cannot change the type or value of the result.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable

from .reverse import ADJOINT

_FOLDABLE: dict[type[ast.operator], Callable[[object, object], object]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}


def _number(node: ast.expr) -> float | int | None:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) in (int, float)
    ):
        return -node.operand.value
    return None


def _literal(value: float | int) -> ast.expr:
    if value < 0:
        return ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=-value))
    return ast.Constant(value=value)


def _fold(node: ast.BinOp) -> ast.expr | None:
    left, right = _number(node.left), _number(node.right)
    fold = _FOLDABLE.get(type(node.op))
    if left is None or right is None or fold is None:
        return None
    try:
        value = fold(left, right)
    except (ArithmeticError, ValueError):
        return None
    if isinstance(value, complex) or not math.isfinite(value) or abs(value) > 1e15:
        return None
    return _literal(value)


def _is_one(node: ast.expr) -> bool:
    return _number(node) == 1


def _is_zero(node: ast.expr) -> bool:
    return _number(node) == 0


class Simplify(ast.NodeTransformer):
    """Constant folding and the identities ``e*1``, ``e+0``, ``e/1``, ``e**1``, ``-(-e)``."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        folded = _fold(node)
        if folded is not None:
            return folded
        op, left, right = node.op, node.left, node.right
        if isinstance(op, ast.Mult) and _is_one(left):
            return right
        if isinstance(op, ast.Mult | ast.Div | ast.Pow) and _is_one(right):
            return left
        if isinstance(op, ast.Add) and _is_zero(left):
            return right
        if isinstance(op, ast.Add | ast.Sub) and _is_zero(right):
            return left
        if isinstance(op, ast.Pow) and _number(right) == 2 and isinstance(left, ast.Name):
            return ast.BinOp(left=left, op=ast.Mult(), right=ast.Name(id=left.id, ctx=ast.Load()))
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.expr:
        self.generic_visit(node)
        inner = node.operand
        if isinstance(node.op, ast.USub) and isinstance(inner, ast.UnaryOp):
            if isinstance(inner.op, ast.USub):
                return inner.operand
        if isinstance(node.op, ast.UAdd):
            return inner
        return node


def simplify_adjoints(statements: list[ast.stmt]) -> list[ast.stmt]:
    """Simplify the expressions of adjoint-sweep statements, in place."""
    simplifier = Simplify()
    for stmt in statements:
        if isinstance(stmt, ast.If):
            simplify_adjoints(stmt.body)
            simplify_adjoints(stmt.orelse)
        elif getattr(stmt, "adcompile_sweep", None) == ADJOINT and hasattr(stmt, "value"):
            stmt.value = simplifier.visit(stmt.value)
    return statements


def _reads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def eliminate_dead_code(statements: list[ast.stmt], live: set[str]) -> list[ast.stmt]:
    """Drop assignments whose value nothing later reads; ``live`` is updated to the entry set."""
    kept: list[ast.stmt] = []
    for stmt in reversed(statements):
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
            target = stmt.targets[0].id
            if target not in live:
                continue
            live.discard(target)
            live |= _reads(stmt.value)
        elif isinstance(stmt, ast.AugAssign):
            if stmt.target.id not in live:
                continue
            live |= _reads(stmt.value)
        elif isinstance(stmt, ast.If):
            stmt = _dead_code_in_if(stmt, live)
            if stmt is None:
                continue
        else:
            live |= _reads(stmt)
        kept.append(stmt)
    kept.reverse()
    return kept


def _dead_code_in_if(stmt: ast.If, live: set[str]) -> ast.If | None:
    live_body, live_orelse = set(live), set(live)
    body = eliminate_dead_code(stmt.body, live_body)
    orelse = eliminate_dead_code(stmt.orelse, live_orelse)
    if not body and not orelse:
        return None
    live.clear()
    live |= live_body | live_orelse | _reads(stmt.test)
    if not body:
        stmt.test = ast.UnaryOp(op=ast.Not(), operand=stmt.test)
        body, orelse = orelse, []
    stmt.body, stmt.orelse = body, orelse
    return stmt


def optimize(statements: list[ast.stmt], returns: ast.expr) -> list[ast.stmt]:
    """Run the passes in order: simplify the adjoints, then remove dead code."""
    simplify_adjoints(statements)
    return eliminate_dead_code(statements, _reads(returns))
