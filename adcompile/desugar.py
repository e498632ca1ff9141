"""Structured control flow: ``return``, ``break`` and ``continue`` turned into flags.

After this pass (on the Python AST, before lowering) a function body has exactly one
``return``, as its last statement, and a loop body has no ``continue`` and at most one
``break``, in the form ``if FLAG: break`` as its last statement. The statements that an exit
would have skipped are guarded by ``if not FLAG:``. Loop ``else:`` clauses become an ``if``
after the loop. Lowering then only has to handle blocks that run to their end.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field

from .astutil import BLOCK_STATEMENTS, LOOP_STATEMENTS, block_fields
from .names import NameTable

# Tuples for isinstance, as astutil.BLOCK_STATEMENTS explains.
_JUMPS = (ast.Return, ast.Break, ast.Continue)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


@dataclass
class _LoopFlags:
    brk: str | None = None
    cont: str | None = None


@dataclass
class _Context:
    """Flag names of the function's early return and of the enclosing loop."""

    returned: str | None = None
    result: str | None = None
    loop: _LoopFlags | None = None
    exits: set[str] = field(default_factory=set)


def _name(name: str, store: bool = False) -> ast.Name:
    return ast.Name(id=name, ctx=ast.Store() if store else ast.Load())


def _located(node: ast.AST, like: ast.AST) -> ast.AST:
    """Give ``node`` and its new sub-nodes the position of ``like`` (for error messages)."""
    for child in ast.walk(node):
        if getattr(child, "lineno", None) is None and "lineno" in child._attributes:
            ast.copy_location(child, like)
    return node


def _set(name: str, value: ast.expr, like: ast.AST) -> ast.stmt:
    return _located(ast.Assign(targets=[_name(name, True)], value=value), like)


def _flag(name: str, value: bool, like: ast.AST) -> ast.stmt:
    return _set(name, ast.Constant(value=value), like)


def _any_flag(flags: list[str], like: ast.AST) -> ast.expr:
    names = [ast.copy_location(_name(f), like) for f in sorted(flags)]
    test = names[0] if len(names) == 1 else ast.BoolOp(op=ast.Or(), values=names)
    return ast.copy_location(test, like)


# An if/elif chain with this many elifs or more is written as side-by-side ifs on flags
# (``Desugar._flat_chain``); a shorter one keeps its nested form, which runs only the tests
# up to the case taken, as Python does. The flat form sets and tests flags for every case
# (a 30-case chain's gradient took 10-17x the function's time, against 1.5-2.7x nested),
# but the nested form indents the generated code one level per elif, and Python stops at
# 100 levels: long chains must be flat.
FLAT_ELIF_CHAIN = 32


def _is_elif(node: ast.If) -> bool:
    return len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If)


def _elif_count(node: ast.If) -> int:
    count = 0
    while _is_elif(node):
        node, count = node.orelse[0], count + 1
    return count


def _has_long_chain(stmts: list[ast.stmt]) -> bool:
    stack = list(stmts)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ast.If) and _elif_count(stmt) >= FLAT_ELIF_CHAIN:
            return True
        if not isinstance(stmt, _SCOPES):
            for nested in block_fields(stmt.__class__):
                stack.extend(getattr(stmt, nested))
    return False


def _guarded(test: ast.expr, body: list[ast.stmt], like: ast.AST) -> ast.stmt:
    return _located(ast.If(test=_located(test, like), body=body, orelse=[]), like)


def _contains(stmts: list[ast.stmt], kinds: tuple[type, ...], into_loops: bool) -> bool:
    stack: list[ast.AST] = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, kinds):
            return True
        if isinstance(node, _SCOPES):
            continue
        if not into_loops and isinstance(node, LOOP_STATEMENTS):
            stack.extend(node.orelse)
            continue
        for nested in block_fields(node.__class__):  # expressions hold no statements
            stack.extend(getattr(node, nested))
    return False


class Desugar:
    """Rewrites one function body; flag names come from the function's name table."""

    def __init__(self, names: NameTable) -> None:
        self.names = names

    def function_body(self, body: list[ast.stmt]) -> list[ast.stmt]:
        """The body with early returns, breaks and continues replaced by flags."""
        last = body[-1] if body else None
        early = _contains(body[:-1], (ast.Return,), into_loops=True) or (
            isinstance(last, BLOCK_STATEMENTS)
        )
        needs_loops = _contains(body, (ast.Break, ast.Continue, ast.For, ast.While), True)
        if not early and not needs_loops and not _has_long_chain(body):
            return body
        if not early:
            return self._block(body, _Context())
        context = _Context(
            returned=self.names.fresh_jump_flag("returned", "return"),
            result=self.names.fresh_internal("result"),
        )
        anchor = body[0]
        rewritten = [_flag(context.returned, False, anchor), *self._block(body, context)]
        ret = ast.Return(value=_name(context.result))
        ret.adcompile_gathered = True  # returns what the early returns stored: no line's own
        return [*rewritten, _located(ret, last)]

    def _block(self, stmts: list[ast.stmt], context: _Context) -> list[ast.stmt]:
        """The statements, those after an exit guarded by ``if not FLAG:``.

        The guards stand side by side, not one inside the other: after each statement that
        may exit, the statements up to the next such one form a segment guarded by every
        flag set so far (a flag once set stays set, so this is the nested form's meaning).
        Nested guards would indent the generated code one level per exit: quadratic text,
        and past Python's 100 levels no module at all."""
        out: list[ast.stmt] = []
        segment: list[ast.stmt] = []  # what runs only if none of ``seen`` is set
        seen: set[str] = set()
        first = stmts[0] if stmts else None
        for stmt in stmts:
            outer, context.exits = context.exits, set()
            rewritten = self._statement(stmt, context)
            exits, context.exits = context.exits, outer | context.exits
            (segment if seen else out).extend(rewritten)
            if isinstance(stmt, _JUMPS):
                break  # the rest of the block is unreachable
            if exits:
                self._close(out, segment, seen, first)
                segment, seen, first = [], seen | exits, stmt
        self._close(out, segment, seen, first)
        return out

    @staticmethod
    def _close(
        out: list[ast.stmt], segment: list[ast.stmt], flags: set[str], like: ast.stmt | None
    ) -> None:
        """Append ``if not (any of flags): segment`` to ``out`` (nothing if it is empty)."""
        if not segment or not flags:
            return
        test = ast.UnaryOp(op=ast.Not(), operand=_any_flag(list(flags), like))
        guard = ast.If(test=ast.copy_location(test, like), body=segment, orelse=[])
        out.append(ast.copy_location(guard, segment[0]))

    def _statement(self, stmt: ast.stmt, context: _Context) -> list[ast.stmt]:
        if isinstance(stmt, ast.Return) and context.returned is not None:
            return self._return(stmt, context)
        if isinstance(stmt, ast.Break) and context.loop is not None:
            context.loop.brk = context.loop.brk or self.names.fresh_jump_flag("broke", "break")
            context.exits.add(context.loop.brk)
            return [_flag(context.loop.brk, True, stmt)]
        if isinstance(stmt, ast.Continue) and context.loop is not None:
            context.loop.cont = context.loop.cont or self.names.fresh_jump_flag("skip", "continue")
            context.exits.add(context.loop.cont)
            return [_flag(context.loop.cont, True, stmt)]
        if isinstance(stmt, ast.If) and _elif_count(stmt) >= FLAT_ELIF_CHAIN:
            return self._block(self._flat_chain(stmt), context)
        if isinstance(stmt, ast.If):
            stmt = copy.copy(stmt)  # the parsed tree is cached and shared: never mutate it
            stmt.body = self._block(stmt.body, context) or [ast.copy_location(ast.Pass(), stmt)]
            stmt.orelse = self._block(stmt.orelse, context)
            return [stmt]
        if isinstance(stmt, LOOP_STATEMENTS):
            return self._loop(stmt, context)
        return [stmt]

    def _flat_chain(self, stmt: ast.If) -> list[ast.stmt]:
        """A long ``if``/``elif`` chain as side-by-side ``if``s on flags, each test computed
        only if no case before it was taken (as ``elif`` does)::

            done = c1                      hit = c2 if not done else False
            if done: ...                   if hit: ...
                                           done = done if done else hit    ...
            if not done: <else>

        Nested, each ``elif`` would indent the generated code one level more."""
        done, hit = self.names.fresh_internal("done"), self.names.fresh_internal("case")
        out = [_set(done, stmt.test, stmt), _guarded(_name(done), stmt.body, stmt)]
        node = stmt
        while _is_elif(node):
            node = node.orelse[0]
            not_done = _located(ast.UnaryOp(op=ast.Not(), operand=_name(done)), node)
            test = ast.IfExp(test=not_done, body=node.test, orelse=ast.Constant(value=False))
            out.append(_set(hit, _located(test, node), node))
            out.append(_guarded(_name(hit), node.body, node))
            either = ast.IfExp(test=_name(done), body=_name(done), orelse=_name(hit))
            out.append(_set(done, _located(either, node), node))
        if node.orelse:
            not_done = _located(ast.UnaryOp(op=ast.Not(), operand=_name(done)), node)
            out.append(_guarded(not_done, node.orelse, node.orelse[0]))
        return out

    def _return(self, stmt: ast.Return, context: _Context) -> list[ast.stmt]:
        out = []
        if stmt.value is not None:
            out.append(_set(context.result, stmt.value, stmt))
        out.append(_flag(context.returned, True, stmt))
        context.exits.add(context.returned)
        return out

    def _loop(self, stmt: ast.For | ast.While, context: _Context) -> list[ast.stmt]:
        stmt = copy.copy(stmt)
        flags = _LoopFlags()
        inner = _Context(context.returned, context.result, flags, set())
        body = self._block(stmt.body, inner)
        returns_inside = context.returned in inner.exits
        loop_exits = [f for f in (flags.brk,) if f] + ([context.returned] if returns_inside else [])
        if flags.cont:
            body.insert(0, _flag(flags.cont, False, stmt.body[0]))
        if loop_exits:
            brk = ast.copy_location(ast.Break(), stmt)
            exit_test = ast.If(test=_any_flag(loop_exits, stmt), body=[brk], orelse=[])
            body.append(ast.copy_location(exit_test, stmt))
        stmt.body = body or [ast.copy_location(ast.Pass(), stmt)]
        out: list[ast.stmt] = []
        if flags.brk:
            out.append(_flag(flags.brk, False, stmt))
        orelse, stmt.orelse = stmt.orelse, []
        out.append(stmt)
        orelse = self._block(orelse, context) if orelse else []
        if orelse and loop_exits:
            # The else clause runs only when the loop ran out: not after a break or a return.
            test = ast.UnaryOp(op=ast.Not(), operand=_any_flag(loop_exits, stmt))
            test = ast.copy_location(test, stmt)
            out.append(ast.copy_location(ast.If(test=test, body=orelse, orelse=[]), orelse[0]))
        else:
            out.extend(orelse)
        if returns_inside:
            context.exits.add(context.returned)
        return out
