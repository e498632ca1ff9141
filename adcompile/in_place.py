"""Adjoints of ``x[i]`` added into a reverse loop's own accumulator in place.

The adjoint of ``x[i]`` is ``scatter(g, x, i)``: zeros shaped like ``x`` with ``g`` at ``i``.
In a loop over the items of ``x``, ``b_x = b_x + scatter(g, x, i)`` makes two arrays the size
of ``x`` per iteration, so the gradient's cost grew with the square of the loop's length
(36x the function at 1,000 items, 162x at 32,000). Where ``b_x`` is the loop's own
accumulator, made by ``np.zeros_like`` just before the loop and read nowhere in the loop but
by its own accumulations, no other name can hold its array: adding into it in place changes
nothing else, and ``b_x = scatter_into(b_x, g, x, i)`` does (``array_helpers.py``). Read
again (``hessian``, ``grad`` of ``grad``), ``scatter_into`` is ``b_x + scatter(...)``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from .astutil import BLOCK_STATEMENTS, LOOP_STATEMENTS, block_fields, statements_in


def scatter_in_place(statements: list[ast.stmt], scatter: str, into: Callable[[], str]) -> None:
    """Rewrite, in place, the accumulations of ``scatter`` (the module's alias) that may add
    into their accumulator; ``into()`` gives the alias of ``scatter_into``."""
    for stmt in statements:
        if isinstance(stmt, BLOCK_STATEMENTS):
            for field in block_fields(stmt.__class__):
                scatter_in_place(getattr(stmt, field), scatter, into)
    for k, stmt in enumerate(statements):
        if isinstance(stmt, LOOP_STATEMENTS):
            for name in _zeroed_before(statements, k):
                _accumulate_in_place(stmt, name, scatter, into)


def _zeroed_before(block: list[ast.stmt], k: int) -> list[str]:
    """The names the statements just before ``block[k]`` set to ``np.zeros_like(...)``."""
    names = []
    while k > 0 and (name := _zeros_like_target(block[k - 1])) is not None:
        names.append(name)
        k -= 1
    return names


def _zeros_like_target(stmt: ast.stmt) -> str | None:
    if not (isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)):
        return None
    value = stmt.value
    is_zeros = (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "zeros_like"
    )
    return stmt.targets[0].id if is_zeros else None


def _accumulate_in_place(
    loop: ast.For | ast.While, name: str, scatter: str, into: Callable[[], str]
) -> None:
    """``name = name + scatter(g, x, i)`` -> ``name = scatter_into(name, g, x, i)`` in the
    loop, if those are the loop's only reads and stores of ``name``."""
    inner = statements_in([loop])
    found = [s for s in inner if _is_accumulation(s, name, scatter)]
    if not found:
        return
    uses = [n for n in ast.walk(loop) if isinstance(n, ast.Name) and n.id == name]
    reads = sum(1 for n in uses if isinstance(n.ctx, ast.Load))
    if reads != len(found) or len(uses) != 2 * len(found):  # and a store in each of them
        return
    alias = into()
    for stmt in found:
        g, x, index = stmt.value.right.args
        func = ast.Name(id=alias, ctx=ast.Load())
        stmt.value = ast.Call(func=func, args=[stmt.value.left, g, x, index], keywords=[])


def _is_accumulation(stmt: ast.stmt, name: str, scatter: str) -> bool:
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return False
    target, value = stmt.targets[0], stmt.value
    return (
        isinstance(target, ast.Name)
        and target.id == name
        and isinstance(value, ast.BinOp)
        and isinstance(value.op, ast.Add)
        and isinstance(value.left, ast.Name)
        and value.left.id == name
        and isinstance(value.right, ast.Call)
        and isinstance(value.right.func, ast.Name)
        and value.right.func.id == scatter
        and len(value.right.args) == 3
        and not value.right.keywords
    )
