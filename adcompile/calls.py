"""Calls to the user's own Python functions: bind the arguments, then inline the callee.

Inlining keeps the generated module a single standalone function: the callee's statements
are lowered into the caller's core form under fresh names, so its forward and adjoint code
appear in place, with comments naming the callee's file and line. A call cycle (recursion)
is rejected at compile time, naming the cycle.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from . import messages
from .errors import UnsupportedSyntaxError
from .ir import Apply, Copy, If, Loop, Site, Stmt
from .source import FunctionSource


@dataclass(frozen=True)
class Binding:
    """One parameter of the callee and what the call passes for it."""

    param: str
    expr: ast.expr | None  # the argument expression, or None when the default is used
    default: object = None


def bind_arguments(call: ast.Call, callee: FunctionSource, caller: FunctionSource) -> list[Binding]:
    """Match a call's positional and keyword arguments to the callee's parameters."""
    params = callee.param_names()
    name = callee.name
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            raise caller.error(UnsupportedSyntaxError, arg, messages.CALL_STARRED)
    if len(call.args) > len(params):
        raise caller.error(UnsupportedSyntaxError, call, messages.too_many_arguments(name, params))
    given: dict[str, ast.expr] = dict(zip(params, call.args, strict=False))
    positional_only = {a.arg for a in getattr(callee.node.args, "posonlyargs", [])}
    for keyword in call.keywords:
        if keyword.arg is None:
            raise caller.error(UnsupportedSyntaxError, keyword, messages.CALL_STARRED)
        if keyword.arg not in params:
            message = messages.unknown_keyword(name, keyword.arg, params)
            raise caller.error(UnsupportedSyntaxError, keyword, message)
        if keyword.arg in positional_only:
            message = messages.positional_only_keyword(name, keyword.arg)
            raise caller.error(UnsupportedSyntaxError, keyword, message)
        if keyword.arg in given:
            message = messages.duplicate_argument(name, keyword.arg)
            raise caller.error(UnsupportedSyntaxError, keyword, message)
        given[keyword.arg] = keyword.value
    defaults = dict(zip(params[len(params) - len(callee.defaults) :], callee.defaults, strict=True))
    bindings = []
    for param in params:
        if param in given:
            bindings.append(Binding(param, given[param]))
        elif param in defaults:
            bindings.append(Binding(param, None, defaults[param]))
        else:
            message = messages.missing_argument(name, param)
            raise caller.error(UnsupportedSyntaxError, call, message)
    return bindings


def _place(fs: FunctionSource) -> tuple[str, int, int, int]:
    # The function object too: two wrappers a decorator made share their code, not a call.
    return fs.filename, fs.node.lineno, fs.node.col_offset, id(fs.origin)


def check_cycle(chain: list[FunctionSource], callee: FunctionSource, call: ast.Call) -> None:
    """Reject a call that would recurse (directly or through other functions)."""
    # By position, not by node: each load of a function may parse its lines anew.
    places = [_place(fs) for fs in chain]
    if _place(callee) in places:
        cycle = [fs.name for fs in chain[places.index(_place(callee)) :]] + [callee.name]
        caller = chain[-1]
        raise caller.error(UnsupportedSyntaxError, call, messages.recursion(cycle))


def relabel(block: list[Stmt], fs: FunctionSource) -> None:
    """Tag inlined statements with the callee's own file and line (for generated comments)."""
    for stmt in block:
        if isinstance(stmt.line, int):
            where = f"{fs.name} in {fs.short_filename()}"
            stmt.line = Site(stmt.line, fs.source_line(stmt.line), where)
        if isinstance(stmt, If):
            relabel(stmt.body, fs)
            relabel(stmt.orelse, fs)
        elif isinstance(stmt, Loop):
            relabel(stmt.entry, fs)
            relabel(stmt.body, fs)
            relabel(stmt.back_edges, fs)
        elif isinstance(stmt, Apply) and stmt.forward:
            relabel(stmt.forward, fs)


def argument_copy(name: str, source: object, line: int) -> Copy:
    """``param = argument`` at the call site (keeps the inlined code readable)."""
    return Copy(name, source, line)
