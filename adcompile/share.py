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

from .astutil import BLOCK_STATEMENTS, load, names_in, store, stored_names
from .reverse import ADJOINT, TANGENT

PURE_BUILTINS = frozenset({"abs", "min", "max", "float", "pow"})
_REWRITTEN = (ADJOINT, TANGENT)
_UNKNOWN = object()

# Tuples for isinstance, as astutil.BLOCK_STATEMENTS explains.
_UNSHAREABLE = (ast.Subscript, ast.IfExp, ast.BoolOp, ast.Lambda)


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
            if isinstance(stmt, BLOCK_STATEMENTS):
                stmt.body = _Block(self.fresh, self.modules).run(stmt.body)
                stmt.orelse = _Block(self.fresh, self.modules).run(stmt.orelse)
                self._bump(stored_names(stmt))
                continue
            keys: dict[int, tuple | None] = {}  # this statement's subexpression keys, by id
            if getattr(stmt, "adcompile_sweep", None) in _REWRITTEN and hasattr(stmt, "value"):
                self._collect(i, stmt, "value", None, stmt.value, keys)
            self._record_holder(stmt, keys)
            self._bump(stored_names(stmt))
        return self._hoist(statements)

    # ----- pass 1: where each candidate is computed, keyed by what it reads ----------------
    def _collect(
        self,
        i: int,
        parent: ast.AST,
        field: str,
        index: int | None,
        node: ast.AST,
        keys: dict[int, tuple | None],
    ) -> None:
        cls = node.__class__
        if cls is ast.Name or cls is ast.Constant or not isinstance(node, ast.expr):
            return  # nothing to share, nothing inside
        key = self._key(node, keys) if self._candidate(node) else None
        if key is not None:
            holder = self.holders.get(key)
            if holder is not None and self.versions.get(holder[0], 0) == holder[1]:
                _Use(i, parent, field, index, node).replace(load(holder[0]))
                return
            self.uses.setdefault(key, []).append(_Use(i, parent, field, index, node))
        if cls is ast.BinOp:  # the common case, without the generator
            self._collect(i, node, "left", None, node.left, keys)
            self._collect(i, node, "right", None, node.right, keys)
            return
        for child_field, child_index, child in _evaluated_children(node):
            self._collect(i, node, child_field, child_index, child, keys)

    def _record_holder(self, stmt: ast.stmt, keys: dict[int, tuple | None]) -> None:
        """``name = expr`` in the forward sweep: until either changes, ``name`` holds the value
        of ``expr``. (An adjoint, say ``b_x = b_f * a``, would hold one too, but reading
        ``b_x`` for ``b_f * a`` elsewhere would puzzle a reader.)"""
        if getattr(stmt, "adcompile_sweep", None) in _REWRITTEN:
            return
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            return
        target = stmt.targets[0]
        if isinstance(target, ast.Name) and self._candidate(stmt.value):
            key = self._key(stmt.value, keys)
            if key is not None and target.id not in names_in(stmt.value):
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

    def _key(self, node: ast.AST, keys: dict[int, tuple | None]) -> tuple | None:
        """The expression's structure, each name tagged with the version it reads (None: not
        shareable). Built bottom-up once per node of a statement, so keying every
        subexpression costs one walk of the statement, not one per subexpression."""
        known = keys.get(id(node), _UNKNOWN)
        if known is not _UNKNOWN:
            return known
        key = self._structure(node, keys)
        keys[id(node)] = key
        return key

    def _structure(self, node: ast.AST, keys: dict[int, tuple | None]) -> tuple | None:
        cls = node.__class__
        if cls is ast.Name:
            return ("Name", node.id, self.versions.get(node.id, 0))
        if cls is ast.Constant:
            return ("Constant", repr(node.value))  # repr tells 1 from 1.0, 0.0 from -0.0
        if cls is ast.BinOp:  # the common case, spelled out: a generic walk costs 3x more
            left = self._key(node.left, keys)
            right = self._key(node.right, keys) if left is not None else None
            return None if right is None else ("BinOp", left, node.op.__class__, right)
        if cls is ast.Call:  # `math.sin(t)`: spelled out too (contexts need no key)
            if not self._candidate(node):
                return None
            func = self._key(node.func, keys)
            args = self._list_key(node.args, keys) if func is not None else None
            return None if args is None else ("Call", func, args)
        if cls is ast.Attribute:
            value = self._key(node.value, keys)
            return None if value is None else ("Attribute", value, node.attr)
        if cls is ast.UnaryOp:
            operand = self._key(node.operand, keys)
            return None if operand is None else ("UnaryOp", node.op.__class__, operand)
        if isinstance(node, _UNSHAREABLE):
            return None  # may read mutable lists, or not run
        parts: list[object] = [type(node).__name__]
        for _, value in ast.iter_fields(node):
            if isinstance(value, ast.expr):
                part = self._key(value, keys)
            elif isinstance(value, list):
                part = self._list_key(value, keys)
            elif isinstance(value, ast.AST):
                part = self._structure(value, keys)  # an operator, a context, a keyword
            else:
                part = repr(value)
            if part is None:
                return None
            parts.append(part)
        return tuple(parts)

    def _list_key(self, items: list, keys: dict[int, tuple | None]) -> tuple | None:
        parts = []
        for item in items:
            part = self._key(item, keys) if isinstance(item, ast.AST) else repr(item)
            if part is None:
                return None
            parts.append(part)
        return tuple(parts)

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
            assignment = ast.Assign([store(name)], first.node)
            assignment.lineno = 0
            owner = statements[first.stmt]
            assignment.adcompile_line = getattr(owner, "adcompile_line", 0)
            assignment.adcompile_sweep = getattr(owner, "adcompile_sweep", ADJOINT)
            before.setdefault(first.stmt, []).insert(0, assignment)  # inner values go first
            for use in live:
                use.replace(load(name))
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
    cls = node.__class__
    if cls is ast.Name or cls is ast.Constant:  # the common cases, without the field walk
        return
    if cls is ast.BinOp:
        yield "left", None, node.left
        yield "right", None, node.right
        return
    if cls is ast.Call and not node.keywords:
        yield "func", None, node.func
        for index, item in enumerate(node.args):
            yield "args", index, item
        return
    for field, value in ast.iter_fields(node):
        if isinstance(value, ast.expr):
            yield field, None, value
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, ast.expr):
                    yield field, index, item


def _size(node: ast.AST) -> int:
    return sum(1 for _ in ast.walk(node))
