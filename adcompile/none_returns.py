"""Whether the differentiated function can return None.

A gradient differentiates the returned number; a ``None`` returned instead would give a
silent 0.0. The literal is easy to see (``return None``, ``return x if c else None``); a
local is followed through the function: ``best = None`` may still be what ``return best``
returns if some path from the assignment to the ``return`` leaves it alone. Paths are
followed as Python runs them: both arms of an ``if``, a loop's body any number of times
(``break`` and ``continue`` included), and tests of the form ``v is None`` / ``v is not
None`` (with ``not``, ``and``, ``or``), so ``while r is None: r = ...`` ends with ``r`` set.
Copies count (``out = best``); anything else assigned makes the local a number.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

# What may hold None at a point: each such local, with the `None` that was given to it.
# None itself stands for a point no path reaches (after `return`, `break`, `raise`).
State = dict[str, ast.Constant] | None


@dataclass(frozen=True)
class NoneReturned:
    """A ``None`` that may be returned: the literal, or a returned local that may hold one."""

    where: ast.expr  # the literal, or the returned name
    given: ast.Constant | None  # for a local: the `None` it was given


def none_returned(body: list[ast.stmt]) -> NoneReturned | None:
    """The first ``None`` some path through ``body`` returns, or None."""
    flow = _Flow()
    flow.block(body, {})
    return flow.found


def returned_values(expr: ast.expr) -> Iterator[ast.expr]:
    """The expressions whose value ``return expr`` may be (a conditional's arms, the
    operands of ``and``/``or``); not the elements of a tuple, each an output of its own."""
    if isinstance(expr, ast.IfExp):
        yield from returned_values(expr.body)
        yield from returned_values(expr.orelse)
    elif isinstance(expr, ast.BoolOp):
        for item in expr.values:
            yield from returned_values(item)
    else:
        yield expr


def none_literal(expr: ast.expr) -> ast.Constant | None:
    """The literal ``None`` ``expr`` may evaluate to (itself, or as ``returned_values``)."""
    for value in returned_values(expr):
        if isinstance(value, ast.Constant) and value.value is None:
            return value
    return None


def _merge(*states: State) -> State:
    reached = [state for state in states if state is not None]
    if not reached:
        return None
    merged: dict[str, ast.Constant] = {}
    for state in reached:
        for name, given in state.items():
            merged.setdefault(name, given)
    return merged


class _Flow:
    """Follows which locals may hold a ``None`` literal, statement by statement."""

    def __init__(self) -> None:
        self.found: NoneReturned | None = None
        self.breaks: list[State] = []
        self.continues: list[State] = []

    def block(self, statements: list[ast.stmt], state: State) -> State:
        for stmt in statements:
            if state is None or self.found is not None:
                return None
            state = self.statement(stmt, state)
        return state

    def statement(self, stmt: ast.stmt, state: dict[str, ast.Constant]) -> State:
        if isinstance(stmt, ast.Return):
            self._check_return(stmt, state)
            return None
        if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            return _assigned(stmt, state)
        if isinstance(stmt, ast.If):
            then, otherwise = _refined(stmt.test, state, True), _refined(stmt.test, state, False)
            return _merge(self.block(stmt.body, then), self.block(stmt.orelse, otherwise))
        if isinstance(stmt, ast.For | ast.While):
            return self._loop(stmt, state)
        if isinstance(stmt, ast.Break | ast.Continue):
            (self.breaks if isinstance(stmt, ast.Break) else self.continues).append(state)
            return None
        if isinstance(stmt, ast.Raise):
            return None
        if isinstance(stmt, ast.FunctionDef):
            return {name: given for name, given in state.items() if name != stmt.name}
        return state

    def _loop(self, loop: ast.For | ast.While, state: dict[str, ast.Constant]) -> State:
        outer = self.breaks, self.continues
        self.breaks, self.continues = [], []
        entry: State = state
        while True:  # until the state at the loop's head stops growing
            head = entry if isinstance(loop, ast.For) else _refined(loop.test, entry, True)
            if isinstance(loop, ast.For):
                head = _unbound(head, _target_names(loop.target))
            end = self.block(loop.body, head)
            grown = _merge(entry, end, *self.continues)
            if grown == entry or self.found is not None:
                break
            entry = grown
        if _runs_at_least_once(loop):  # `for i in range(3)`: never left before the body
            leaving = _merge(end, *self.continues)
        elif isinstance(loop, ast.For):
            leaving = entry
        else:
            leaving = _refined(loop.test, entry, False)
        breaks = self.breaks
        self.breaks, self.continues = outer
        return _merge(self.block(loop.orelse, leaving), *breaks)

    def _check_return(self, stmt: ast.Return, state: dict[str, ast.Constant]) -> None:
        if stmt.value is None:
            return  # refused as `return` without a value
        literal = none_literal(stmt.value)
        if literal is not None:
            self.found = NoneReturned(literal, None)
            return
        for value in returned_values(stmt.value):
            if isinstance(value, ast.Name) and value.id in state:
                self.found = NoneReturned(value, state[value.id])
                return


def _runs_at_least_once(loop: ast.For | ast.While) -> bool:
    """A ``for`` over ``range`` of literal bounds, or a literal sequence, that is not empty."""
    if not isinstance(loop, ast.For):
        return False
    items = loop.iter
    if isinstance(items, ast.Tuple | ast.List):
        return bool(items.elts)
    if not (isinstance(items, ast.Call) and isinstance(items.func, ast.Name)):
        return False
    bounds = [arg.value if isinstance(arg, ast.Constant) else None for arg in items.args]
    if items.func.id != "range" or items.keywords or not all(type(b) is int for b in bounds):
        return False
    try:
        return len(range(*bounds)) > 0
    except (TypeError, ValueError):  # range() of no argument, or of a zero step
        return False


def _assigned(stmt: ast.Assign | ast.AnnAssign | ast.AugAssign, state: dict) -> dict:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    value = stmt.value
    after = dict(state)
    for target in targets:
        if (
            isinstance(target, ast.Name)
            and value is not None
            and not isinstance(stmt, ast.AugAssign)
        ):
            given = none_literal(value)
            if given is None and isinstance(value, ast.Name):
                given = state.get(value.id)  # a copy of a local that may hold None
            if given is not None:
                after[target.id] = given
                continue
        for name in _target_names(target):
            after.pop(name, None)
    return after


def _target_names(target: ast.expr) -> set[str]:
    return {node.id for node in ast.walk(target) if isinstance(node, ast.Name)}


def _unbound(state: State, names: set[str]) -> State:
    if state is None:
        return None
    return {name: given for name, given in state.items() if name not in names}


def _refined(test: ast.expr, state: State, holds: bool) -> State:
    """``state`` where ``test`` is true (``holds``) or false: ``v is None`` false means ``v``
    holds no None; a constant test that cannot come out so means no path goes there."""
    if state is None:
        return None
    if isinstance(test, ast.Constant):
        return state if bool(test.value) == holds else None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _refined(test.operand, state, not holds)
    if isinstance(test, ast.BoolOp):
        every = isinstance(test.op, ast.And) == holds  # each operand came out `holds`
        if not every:
            return state
        for operand in test.values:
            state = _refined(operand, state, holds)
        return state
    tested = _none_test(test)
    if tested is None:
        return state
    name, is_none = tested
    if is_none != holds:  # the local is known not to be None here
        return _unbound(state, {name})
    return state


def _none_test(test: ast.expr) -> tuple[str, bool] | None:
    """``(v, True)`` for ``v is None``, ``(v, False)`` for ``v is not None``; else None."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, right = test.left, test.comparators[0]
    if not (isinstance(left, ast.Name) and isinstance(right, ast.Constant)):
        return None
    if right.value is not None or not isinstance(test.ops[0], ast.Is | ast.IsNot):
        return None
    return left.id, isinstance(test.ops[0], ast.Is)
