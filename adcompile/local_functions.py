"""Where a nested ``def`` or ``lambda`` may be bound so that inlining its calls is right.

The lowering inlines a call to a local function with the definition bound to its name, and it
does not follow which of several definitions ran: ``g = lambda t: t * t`` in one branch and
``g = lambda t: t ** 3`` in the other would both be read as the last one. So a name bound to
a local function is bound once, to nothing else; and a definition inside an ``if`` or a loop
is called only by the statements after it in the same block, which run only after it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from . import messages
from .astutil import walk

_NEW_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def function_bound(stmt: ast.stmt) -> str | None:
    """The name ``stmt`` binds to a local function (``def g``, ``g = lambda ...``), if any."""
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
        return stmt.name
    targets = [stmt.target] if isinstance(stmt, ast.AnnAssign) else getattr(stmt, "targets", [])
    if (
        isinstance(stmt, ast.Assign | ast.AnnAssign)
        and isinstance(stmt.value, ast.Lambda)
        and len(targets) == 1
        and isinstance(targets[0], ast.Name)
    ):
        return targets[0].id  # `g = lambda ...`, `g: Callable = lambda ...`
    return None


def local_functions(body: list[ast.stmt]) -> dict[str, ast.FunctionDef | ast.Lambda]:
    """The nested ``def``s and lambdas a function's body binds (in its blocks too), by name."""
    if not _defines_functions(body):  # the usual case, told by one cheap pass
        return {}
    return {
        b.function: b.stmt.value if isinstance(b.stmt, ast.Assign | ast.AnnAssign) else b.stmt
        for b in _bindings(body)
        if b.function is not None
    }


@dataclass
class _Binding:
    """A statement binding names: its block, the names, and the local function it defines."""

    stmt: ast.stmt
    block: list[ast.stmt]
    names: set[str]
    function: str | None


def misplaced_local_function(body: list[ast.stmt]) -> tuple[ast.AST, str] | None:
    """The first node that breaks the rules above, with the message; None if none does."""
    if not _defines_functions(body):  # the usual case, told by one cheap pass
        return None
    bindings = list(_bindings(body))
    functions = sorted({b.function for b in bindings if b.function is not None})
    for name in functions:
        found = _check_one(name, body, [b for b in bindings if name in b.names])
        if found is not None:
            return found
    return None


def _check_one(
    name: str, body: list[ast.stmt], bindings: list[_Binding]
) -> tuple[ast.AST, str] | None:
    if len(bindings) > 1:
        second = sorted(bindings, key=lambda b: (b.stmt.lineno, b.stmt.col_offset))[1]
        return second.stmt, messages.local_function_rebound(name)
    (binding,) = bindings
    if binding.block is body:
        return None
    # Its own body too: a call there is recursion, which the inlining reports itself.
    after = binding.block[binding.block.index(binding.stmt) :]
    allowed = {id(node) for s in after for node in walk(s)}
    for node in _uses(body, name):
        if id(node) not in allowed:
            return node, messages.local_function_used_outside(name)
    return None


def _defines_functions(body: list[ast.stmt]) -> bool:
    stack = list(body)
    while stack:
        stmt = stack.pop()
        cls = stmt.__class__
        if cls is ast.FunctionDef or cls is ast.AsyncFunctionDef:
            return True
        if cls is ast.Assign or cls is ast.AnnAssign:
            if stmt.value.__class__ is ast.Lambda:
                return True
        elif cls in _BLOCKS:
            stack.extend(stmt.body)
            stack.extend(getattr(stmt, "orelse", ()))
            stack.extend(getattr(stmt, "finalbody", ()))
    return False


_BLOCKS = frozenset({ast.If, ast.For, ast.While, ast.With, ast.Try, ast.AsyncFor, ast.AsyncWith})


def _bindings(block: list[ast.stmt]) -> Iterator[_Binding]:
    """Every statement of the block, and of the blocks nested in it, that binds a name."""
    for stmt in block:
        names = _names_bound(stmt)
        if names:
            yield _Binding(stmt, block, names, function_bound(stmt))
        if isinstance(stmt, _NEW_SCOPES):
            continue
        for field in ("body", "orelse", "finalbody"):
            nested = getattr(stmt, field, None)
            if isinstance(nested, list) and nested and isinstance(nested[0], ast.stmt):
                yield from _bindings(nested)


def _names_bound(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, _NEW_SCOPES):
        return {stmt.name}
    if isinstance(stmt, ast.Assign):
        if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            return {stmt.targets[0].id}  # the usual statement: no walk
        targets = stmt.targets
    elif isinstance(stmt, ast.AugAssign | ast.AnnAssign | ast.For):
        targets = [stmt.target]
    else:
        return set()
    return {n.id for t in targets for n in walk(t) if isinstance(n, ast.Name)}


def _uses(body: list[ast.stmt], name: str) -> Iterator[ast.Name]:
    """Every read of ``name`` in the body, nested functions included (they may call it)."""
    for stmt in body:
        for node in walk(stmt):
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
                yield node
