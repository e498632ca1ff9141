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
from collections.abc import Callable, Iterator
from dataclasses import dataclass

# What may hold None at a point: each such local, with the `None` that was given to it.
# None itself stands for a point no path reaches (after `return`, `break`, `raise`).
State = dict[str, ast.AST] | None


@dataclass(frozen=True)
class NoneReturned:
    """A ``None`` that may be returned: the literal, a returned local that may hold one, or
    a call of the user's function that may return one."""

    where: ast.expr  # the literal, the returned name, or the call
    given: ast.AST | None = None  # for a local: the `None` (or call) that gave it, or the
    # parameter whose default it is


# Whether a call (of the user's own function) may return None; the compiler knows callees.
MayReturnNone = Callable[[ast.Call], bool]


def none_returned(
    function: ast.FunctionDef | ast.Lambda, body: list[ast.stmt], may_return_none: MayReturnNone
) -> NoneReturned | None:
    """The first ``None`` some path through ``function``'s ``body`` returns, or None."""
    flow = _Flow(may_return_none)
    flow.block(body, _none_defaults(function))
    return flow.found


def _none_defaults(function: ast.FunctionDef | ast.Lambda) -> dict[str, ast.AST]:
    """The parameters whose default is ``None``: each holds it where the call leaves it."""
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    pairs = zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)
    return {
        param.arg: param
        for param, default in pairs
        if isinstance(default, ast.Constant) and default.value is None
    }


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
    merged: dict[str, ast.AST] = {}
    for state in reached:
        for name, given in state.items():
            merged.setdefault(name, given)
    return merged


class _Flow:
    """Follows which locals may hold a ``None`` literal, statement by statement."""

    def __init__(self, may_return_none: MayReturnNone) -> None:
        self.may_return_none = may_return_none
        self.found: NoneReturned | None = None
        self.breaks: list[State] = []
        self.continues: list[State] = []

    def block(self, statements: list[ast.stmt], state: State) -> State:
        for stmt in statements:
            if state is None or self.found is not None:
                return None
            state = self.statement(stmt, state)
        return state

    def statement(self, stmt: ast.stmt, state: dict[str, ast.AST]) -> State:
        if isinstance(stmt, ast.Return):
            self._check_return(stmt, state)
            return None
        if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            return self._assigned(stmt, state)
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

    def _loop(self, loop: ast.For | ast.While, state: dict[str, ast.AST]) -> State:
        outer = self.breaks, self.continues
        self.breaks, self.continues = [], []
        entry: State = state
        while True:  # until the state at the loop's head stops growing
            head = entry if isinstance(loop, ast.For) else _refined(loop.test, entry, True)
            if isinstance(loop, ast.For):
                head = self._loop_target(loop, head)
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

    def _check_return(self, stmt: ast.Return, state: dict[str, ast.AST]) -> None:
        if stmt.value is None:
            return  # refused as `return` without a value
        literal = none_literal(stmt.value)
        if literal is not None:
            self.found = NoneReturned(literal)
            return
        for value in returned_values(stmt.value):
            if isinstance(value, ast.Name) and value.id in state:
                self.found = NoneReturned(value, state[value.id])
                return
            if isinstance(value, ast.Call) and self.may_return_none(value):
                self.found = NoneReturned(value)
                return

    def _given(self, value: ast.expr, state: dict[str, ast.AST]) -> ast.AST | None:
        """What makes ``value`` possibly None: a literal, a local that may hold one (a
        copy), or a call of a function that may return one; else None."""
        for part in returned_values(value):
            if isinstance(part, ast.Constant) and part.value is None:
                return part
            if isinstance(part, ast.Name) and part.id in state:
                return state[part.id]
            if isinstance(part, ast.Call) and self.may_return_none(part):
                return part
        return None

    def _assigned(self, stmt: ast.Assign | ast.AnnAssign | ast.AugAssign, state: dict) -> dict:
        if not state and (stmt.__class__ is ast.AugAssign or stmt.value.__class__ in _NUMBERS):
            return state  # the usual `t = a * b`, `s += t`: nothing holds None, nor will
        after = dict(state)
        if isinstance(stmt, ast.AugAssign):  # `r += e`: a number, or a TypeError
            return _unbound(after, _target_names(stmt.target))
        if stmt.value is None:  # `r: float` binds nothing
            return after
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for target in targets:
            for name, part in _pairs(target, stmt.value):
                given = None if part is None else self._given(part, state)
                if given is None:
                    after.pop(name, None)
                else:
                    after[name] = given
        return after

    def _loop_target(self, loop: ast.For, state: State) -> State:
        """The state in the body: the loop variable holds an item (a literal tuple's items
        may be None, or locals that may hold it)."""
        state = _unbound(state, _target_names(loop.target))
        if state is None or not isinstance(loop.target, ast.Name):
            return state
        items = loop.iter.elts if isinstance(loop.iter, ast.Tuple | ast.List) else []
        for item in items:
            given = self._given(item, state)
            if given is not None:
                return {**state, loop.target.id: given}
        return state


# Expressions that are never None (or fail): nothing to follow when nothing holds None.
_NUMBERS = frozenset({ast.BinOp, ast.UnaryOp, ast.Compare})


def _pairs(target: ast.expr, value: ast.expr) -> Iterator[tuple[str, ast.expr | None]]:
    """Each name ``target`` binds with the part of ``value`` it takes (None: not known):
    ``a, b = None, x`` pairs ``a`` with ``None``."""
    if isinstance(target, ast.Name):
        yield target.id, value
    elif (
        isinstance(target, ast.Tuple | ast.List)
        and isinstance(value, ast.Tuple | ast.List)
        and len(target.elts) == len(value.elts)
    ):
        for item, part in zip(target.elts, value.elts, strict=True):
            yield from _pairs(item, part)
    else:
        for name in _target_names(target):
            yield name, None


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
    """``(v, True)`` for ``v is None`` (or ``v == None``, either way round), ``(v, False)``
    for ``v is not None`` (``v != None``); else None."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    sides = [test.left, test.comparators[0]]
    names = [side.id for side in sides if isinstance(side, ast.Name)]
    nones = [side for side in sides if isinstance(side, ast.Constant) and side.value is None]
    if len(names) != 1 or len(nones) != 1:
        return None
    if isinstance(test.ops[0], ast.Is | ast.Eq):
        return names[0], True
    if isinstance(test.ops[0], ast.IsNot | ast.NotEq):
        return names[0], False
    return None
