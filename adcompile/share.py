"""Common subexpressions shared between adjoint statements (an optimisation pass, issue 6).

Rule templates are inlined one primitive at a time, so a gradient can compute one value
several times: ``math.cos(x)`` in the adjoint of ``math.sin(x)`` and again in that of
``math.cos(x) * y``, or ``b_f * x`` once per use of ``x``. Within each straight-line run of
statements, this pass names such a value where it is first computed (``t7 = math.cos(x)``)
and reads the name after; where a variable already holds the value (a forward value such as
``t3 = math.cos(x)``), the adjoint reads that variable.

It is exact: the shared expressions are pure (arithmetic, and calls of ``math``/NumPy
functions) and two of them are the same only if they read the same versions of the same
variables, so each computes the same float. Only adjoint and tangent statements change; the
forward sweep keeps the user's own arithmetic. Nothing under a conditional expression's
branches or after the first operand of ``and``/``or`` moves, since those may not run.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .reverse import ADJOINT, TANGENT

PURE_BUILTINS = frozenset({"abs", "min", "max", "float", "pow"})
_REWRITTEN = (ADJOINT, TANGENT)


@dataclass
class _Use:
    """One place a candidate expression is computed: statement, parent node and slot."""

    stmt: int
    parent: ast.AST
    field: str
    index: int | None
    node: ast.expr

    def replace(self, new: ast.expr) -> None:
        """Put ``new`` where the expression was."""
        if self.index is None:
            setattr(self.parent, self.field, new)
        else:
            getattr(self.parent, self.field)[self.index] = new


def share_common_subexpressions(
    statements: list[ast.stmt], fresh: Callable[[], str], modules: frozenset[str]
) -> list[ast.stmt]:
    """Name each value an adjoint statement computes twice; reuse names that hold a value.

    ``fresh()`` gives a new variable name; ``modules`` are the names (``math``, ``np``) whose
    function calls are pure.
    """
    return _Block(fresh, modules).run(statements)


class _Block:
    """The pass over one straight-line run of statements (nested blocks get their own)."""

    def __init__(self, fresh: Callable[[], str], modules: frozenset[str]) -> None:
        self.fresh = fresh
        self.modules = modules
        self.versions: dict[str, int] = {}
        self.holders: dict[tuple, tuple[str, int]] = {}
        self.uses: dict[tuple, list[_Use]] = {}

    def run(self, statements: list[ast.stmt]) -> list[ast.stmt]:
        for i, stmt in enumerate(statements):
            if isinstance(stmt, ast.If | ast.For | ast.While):
                stmt.body = _Block(self.fresh, self.modules).run(stmt.body)
                stmt.orelse = _Block(self.fresh, self.modules).run(stmt.orelse)
                self._bump(_assigned(stmt))
                continue
            if getattr(stmt, "adcompile_sweep", None) in _REWRITTEN and hasattr(stmt, "value"):
                self._collect(i, stmt, "value", None, stmt.value)
            self._record_holder(stmt)
            self._bump(_assigned(stmt))
        return self._hoist(statements)

    # ----- pass 1: where each candidate is computed, keyed by what it reads ----------------
    def _collect(
        self, i: int, parent: ast.AST, field: str, index: int | None, node: ast.AST
    ) -> None:
        if not isinstance(node, ast.expr):
            return
        key = self._key(node) if self._candidate(node) else None
        if key is not None:
            holder = self.holders.get(key)
            if holder is not None and self.versions.get(holder[0], 0) == holder[1]:
                _Use(i, parent, field, index, node).replace(ast.Name(id=holder[0], ctx=ast.Load()))
                return
            self.uses.setdefault(key, []).append(_Use(i, parent, field, index, node))
        for child_field, child_index, child in _evaluated_children(node):
            self._collect(i, node, child_field, child_index, child)

    def _record_holder(self, stmt: ast.stmt) -> None:
        """``name = expr`` in the forward sweep: until either changes, ``name`` holds the value
        of ``expr``. (An adjoint, say ``b_x = b_f * a``, would hold one too, but reading
        ``b_x`` for ``b_f * a`` elsewhere would puzzle a reader.)"""
        if getattr(stmt, "adcompile_sweep", None) in _REWRITTEN:
            return
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            return
        target = stmt.targets[0]
        if isinstance(target, ast.Name) and self._candidate(stmt.value):
            key = self._key(stmt.value)
            if key is not None and target.id not in _reads(stmt.value):
                self.holders[key] = (target.id, self.versions.get(target.id, 0) + 1)

    def _bump(self, names: set[str]) -> None:
        for name in names:
            self.versions[name] = self.versions.get(name, 0) + 1

    def _candidate(self, node: ast.expr) -> bool:
        if isinstance(node, ast.BinOp):
            return True
        if isinstance(node, ast.Call) and not node.keywords:
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                return func.value.id in self.modules
            return isinstance(func, ast.Name) and func.id in PURE_BUILTINS
        return False

    def _key(self, node: ast.expr) -> tuple | None:
        """The expression and the versions of what it reads (None: not shareable)."""
        reads = set()
        for child in ast.walk(node):
            if isinstance(child, ast.Subscript | ast.IfExp | ast.BoolOp | ast.Lambda):
                return None  # may read mutable lists, or not run
            if isinstance(child, ast.Call) and child is not node and not self._candidate(child):
                return None
            if isinstance(child, ast.Name):
                reads.add(child.id)
        versions = tuple(sorted((name, self.versions.get(name, 0)) for name in reads))
        return ast.dump(node), versions

    # ----- pass 2: name each value computed twice, largest first -----------------------
    def _hoist(self, statements: list[ast.stmt]) -> list[ast.stmt]:
        repeated = [(key, uses) for key, uses in self.uses.items() if len(uses) > 1]
        repeated.sort(key=lambda item: -_size(item[1][0].node))
        dropped: set[int] = set()
        before: dict[int, list[ast.stmt]] = {}
        for _, uses in repeated:
            live = [use for use in uses if id(use.node) not in dropped]
            if len(live) < 2:
                continue
            name = self.fresh()
            first = live[0]
            assignment = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=first.node)
            assignment.lineno = 0
            owner = statements[first.stmt]
            assignment.adcompile_line = getattr(owner, "adcompile_line", 0)
            assignment.adcompile_sweep = getattr(owner, "adcompile_sweep", ADJOINT)
            before.setdefault(first.stmt, []).insert(0, assignment)  # inner values go first
            for use in live:
                use.replace(ast.Name(id=name, ctx=ast.Load()))
            for use in live[1:]:
                dropped.update(id(n) for n in ast.walk(use.node))
        if not before:
            return statements
        out: list[ast.stmt] = []
        for i, stmt in enumerate(statements):
            out += before.get(i, [])
            out.append(stmt)
        return out


def _evaluated_children(node: ast.expr) -> Iterator[tuple[str, int | None, ast.expr]]:
    """The children of ``node`` that always run when it does (not a conditional's branches)."""
    if isinstance(node, ast.IfExp):
        yield "test", None, node.test
        return
    if isinstance(node, ast.BoolOp):
        yield "values", 0, node.values[0]
        return
    for field, value in ast.iter_fields(node):
        if isinstance(value, ast.expr):
            yield field, None, value
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, ast.expr):
                    yield field, index, item


def _assigned(stmt: ast.stmt) -> set[str]:
    """Every name a statement (and what it nests) stores to."""
    return {
        node.id
        for node in ast.walk(stmt)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }


def _reads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _size(node: ast.AST) -> int:
    return sum(1 for _ in ast.walk(node))
