"""Reads of local variables that may be unbound on some path (Python raises UnboundLocalError).

``if x > 0: y = ...`` followed by ``return y * 2.0`` fails in Python where ``x <= 0``, and so
does reading ``last`` after ``for i in range(n): last = ...`` when ``n == 0``. The generated
code binds a placeholder (None) on such paths, so that merges of paths can copy the name;
a gradient that never needs the value would then return a number where the function
raises. This definite-assignment pass over the user's own source finds those reads; the
lowering puts a check before each one (``if y is None: raise UnboundLocalError(...)``).

The analysis follows Python's control flow: a path that returns, breaks or continues does
not reach the statements after it, and a loop's body may run zero times (except
``while True``, which is left only by ``break``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

# A position in the user's file: (line, column, name) of a Name node that is read.
Read = tuple[int, int, str]
# The names surely bound at a point; None where the point cannot be reached.
Bound = set[str] | None


def unbound_message(name: str) -> str:
    """Python's own message for reading the unbound local ``name``."""
    return f"cannot access local variable {name!r} where it is not associated with a value"


_MESSAGE = re.compile(
    r"cannot access local variable '(\w+)' where it is not associated with a value"
)


def checked_name(stmt: ast.stmt) -> tuple[ast.expr, str] | None:
    """``(test, name)`` for a generated check ``if <test>: raise UnboundLocalError(msg)``
    (generated code read again), else None."""
    if not (isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1):
        return None
    raised = stmt.body[0]
    if not (isinstance(raised, ast.Raise) and isinstance(raised.exc, ast.Call)):
        return None
    call = raised.exc
    if not (isinstance(call.func, ast.Name) and call.func.id == "UnboundLocalError"):
        return None
    if len(call.args) != 1 or not isinstance(call.args[0], ast.Constant):
        return None
    match = _MESSAGE.fullmatch(str(call.args[0].value))
    return (stmt.test, match.group(1)) if match else None


def maybe_unbound_reads(
    body: list[ast.stmt], params: Iterable[str], local: set[str]
) -> dict[Read, bool]:
    """The reads in ``body`` of names in ``local`` that some path leaves unbound, each
    mapped to whether Python may skip it (an ``and``/``or`` operand after the first, an arm
    of ``a if c else b``, a comprehension's element: a check must then sit where the read
    is evaluated, never before the whole expression)."""
    if not any(isinstance(stmt, _BRANCHING) for stmt in body):
        return {}  # straight-line code: a read before every binding is refused outright
    analysis = _Analysis(local)
    analysis.block(body, set(params))
    return analysis.flagged


_BRANCHING = (ast.If, ast.For, ast.While)


def _meet(a: Bound, b: Bound) -> Bound:
    """Where two paths join: bound on both (an unreachable path adds no constraint)."""
    if a is None:
        return b
    if b is None:
        return a
    return a & b


class _Analysis:
    """One pass over a body; the set of bound names is updated in place along a path, and
    copied only where paths part (so straight runs of statements cost no copies)."""

    def __init__(self, local: set[str]) -> None:
        self.local = local
        self.flagged: dict[Read, bool] = {}
        # Local functions (def, or a lambda assigned to a name): the enclosing variables
        # their bodies read, each with whether that read may be skipped.
        self.functions: dict[str, list[tuple[ast.Name, bool]]] = {}
        self.breaks: list[Bound] = []  # per enclosing loop: bound where a `break` leaves it

    def block(self, body: list[ast.stmt], bound: Bound) -> Bound:
        for stmt in body:
            if bound is None:
                return None  # after return/break/continue: nothing here runs
            bound = self.statement(stmt, bound)
        return bound

    def statement(self, stmt: ast.stmt, bound: set[str]) -> Bound:
        cls = stmt.__class__
        if cls is ast.If:
            self.reads(stmt.test, bound)
            return _meet(self.block(stmt.body, set(bound)), self.block(stmt.orelse, bound))
        if cls is ast.For:
            self.reads(stmt.iter, bound)
            return self.loop(stmt, bound | _targets(stmt.target), bound)
        if cls is ast.While:
            self.reads(stmt.test, bound)
            forever = isinstance(stmt.test, ast.Constant) and bool(stmt.test.value)
            return self.loop(stmt, set(bound), None if forever else bound)
        if cls is ast.Return:
            if stmt.value is not None:
                self.reads(stmt.value, bound)
            return None
        if cls is ast.Break:
            self.breaks[-1] = _meet(self.breaks[-1], set(bound)) if self.breaks else None
            return None
        if cls is ast.Continue:
            return None
        if cls is ast.AugAssign:
            self.reads(stmt.target, bound, load_too=True)
            self.reads(stmt.value, bound)
            bound |= _targets(stmt.target)
            return bound
        if cls in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            bound.add(stmt.name)  # its body runs when called, with its own scope
            if cls is ast.FunctionDef:
                self.functions[stmt.name] = _free_reads(stmt.args, stmt.body)
            return bound
        for child in ast.iter_child_nodes(stmt):  # Assign, AnnAssign, Expr, ...
            if isinstance(child, ast.expr) and not _is_store(child):
                self.reads(child, bound)
        assigned = _assigned_by(stmt)
        for name in assigned:  # a name rebound to something else is no longer that function
            self.functions.pop(name, None)
        value = getattr(stmt, "value", None)
        if isinstance(value, ast.Lambda) and len(assigned) == 1:
            self.functions[next(iter(assigned))] = _free_reads(value.args, [value.body])
        bound |= assigned
        return bound

    def loop(self, stmt: ast.For | ast.While, entry: set[str], exit_: Bound) -> Bound:
        """A loop whose body starts with ``entry`` bound (a set of its own) and whose test
        fails with ``exit_`` bound (None: it never fails). The body's second round starts
        with at least ``entry``, so one pass over the body finds every read."""
        self.breaks.append(None)
        self.block(stmt.body, entry)
        broke = self.breaks.pop()
        after_test = self.block(stmt.orelse, exit_) if exit_ is not None else None
        return _meet(after_test, broke)

    def reads(self, expr: ast.expr, bound: set[str], load_too: bool = False) -> None:
        for node, conditional in _loads(expr, load_too):
            self._flag(node, conditional, bound)
            if node.id in bound:  # a local function called here reads, here, the enclosing
                for inner, skipped in self.functions.get(node.id, ()):  # variables its body
                    self._flag(inner, conditional or skipped, bound)  # reads (it is inlined)

    def _flag(self, node: ast.Name, conditional: bool, bound: set[str]) -> None:
        """Record a read of an unbound local; one that is unconditional anywhere stays so."""
        if node.id in self.local and node.id not in bound:
            read = (node.lineno, node.col_offset, node.id)
            self.flagged[read] = self.flagged.get(read, True) and conditional


def _loads(expr: ast.expr, load_too: bool) -> Iterable[tuple[ast.Name, bool]]:
    """The names an expression reads, each with whether Python may skip the read (operands
    after the first of ``and``/``or``, the arms of ``a if c else b``, a comprehension's
    element and conditions, which run only for the items there are); not a nested
    function's."""
    stack: list[tuple[ast.AST, bool]] = [(expr, False)]
    while stack:
        node, conditional = stack.pop()
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load) or load_too:
                yield node, conditional
        elif isinstance(node, ast.Lambda):
            continue
        elif isinstance(node, ast.BoolOp):
            stack.append((node.values[0], conditional))
            stack.extend((value, True) for value in node.values[1:])
        elif isinstance(node, ast.IfExp):
            stack += [(node.test, conditional), (node.body, True), (node.orelse, True)]
        elif isinstance(node, ast.GeneratorExp | ast.ListComp | ast.SetComp | ast.DictComp):
            first = node.generators[0].iter  # evaluated in the enclosing scope
            stack.append((first, conditional))
            stack.extend(
                (child, True) for child in ast.iter_child_nodes(node) if child is not first
            )
        else:
            stack.extend((child, conditional) for child in ast.iter_child_nodes(node))


def _free_reads(args: ast.arguments, body: list) -> list[tuple[ast.Name, bool]]:
    """The reads in a local function's body of names it does not bind itself (parameters,
    assignments): the enclosing function's variables, read when it is called."""
    own = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    for node in body:
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                own.add(inner.id)
    found = []
    for node in body:
        parts = [node] if isinstance(node, ast.expr) else _expressions(node)
        for part in parts:
            found += [(n, c) for n, c in _loads(part, False) if n.id not in own]
    return found


def _expressions(stmt: ast.stmt) -> list[ast.expr]:
    """The expressions a statement and the statements in it read (a nested def's too: they
    are read where it is called, inside this body)."""
    return [
        child
        for node in ast.walk(stmt)
        if isinstance(node, ast.stmt)
        for child in ast.iter_child_nodes(node)
        if isinstance(child, ast.expr) and not _is_store(child)
    ]


def _is_store(expr: ast.expr) -> bool:
    return isinstance(getattr(expr, "ctx", None), ast.Store)


def _targets(target: ast.expr) -> frozenset[str]:
    return frozenset(n.id for n in ast.walk(target) if isinstance(n, ast.Name))


def _assigned_by(stmt: ast.stmt) -> frozenset[str]:
    if isinstance(stmt, ast.Assign):
        return frozenset().union(*(_targets(t) for t in stmt.targets))
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        return _targets(stmt.target)
    return frozenset()
