"""Calls that change an argument in place: ``np.fill_diagonal(a, 0.0)``, ``a.sort()``,
``np.add.at(a, i, 1.0)``.

Generated code computes new values; it never replays a change made in place. As a statement
of its own such a call is refused (``messages.call_statement``); this finds one whose result
is kept (``_ = np.fill_diagonal(a, 0.0)``) or tested (``np.copyto(a, w) is None``), where
dead-code elimination would drop it, or the forward sweep run it at the wrong time: either
way a silently wrong gradient.
"""

from __future__ import annotations

import ast
import random
import sys
from collections.abc import Callable

# Methods that change their receiver (arrays, lists, dicts), by name: the receiver is a
# local value, so only the name tells. NumPy's functions of the same name (np.sort) are
# resolved to the function, and are not methods.
MUTATING_METHODS = frozenset(
    {"fill", "sort", "partition", "put", "itemset", "resize", "setfield", "setflags"}
    | {"append", "extend", "insert", "pop", "remove", "clear", "reverse"}
    | {"update", "setdefault", "popitem", "__setitem__", "__delitem__"}
    | {"shuffle"}  # a NumPy Generator's or RandomState's: `rng.shuffle(a)`
)
_NUMPY_MUTATORS = ("fill_diagonal", "copyto", "put", "putmask", "place", "put_along_axis")


def first_mutating_call(node: ast.AST, resolve: Callable[[ast.expr], object]) -> ast.Call | None:
    """The first call under ``node`` that changes an argument in place, or None.

    ``resolve(func)`` is the object a callee names, or None if it names no global.
    """
    for call in ast.walk(node):
        if isinstance(call, ast.Call) and (_writes_out(call) or _mutates(call.func, resolve)):
            return call
    return None


def _writes_out(call: ast.Call) -> bool:
    """``np.take(x, i, out=a)``, ``rng.random(out=a)``: a result written into an array."""
    return any(
        keyword.arg == "out"
        and not (isinstance(keyword.value, ast.Constant) and keyword.value.value is None)
        for keyword in call.keywords
    )


def _mutates(func: ast.expr, resolve: Callable[[ast.expr], object]) -> bool:
    if isinstance(func, ast.Attribute):
        method = func.attr in MUTATING_METHODS or _is_in_place_operator(func.attr)
        if not (method or func.attr in _NUMPY_MUTATORS or func.attr == "at"):
            return False  # most calls: resolved only where the name could mutate
        target = resolve(func)
        return method if target is None else _is_mutating_function(target)
    if isinstance(func, ast.Name):
        target = resolve(func)
        return target is not None and _is_mutating_function(target)
    return False


def _is_in_place_operator(name: str) -> bool:
    return name.startswith("__i") and name.endswith("__")  # __iadd__, __imul__, ...


def _is_mutating_function(target: object) -> bool:
    if target is random.shuffle:
        return True
    numpy = sys.modules.get("numpy")
    if numpy is None:
        return False
    if any(target is getattr(numpy, name, None) for name in _NUMPY_MUTATORS):
        return True
    if target is numpy.random.shuffle:
        return True
    owner = getattr(target, "__self__", None)  # np.add.at: a ufunc's method
    return isinstance(owner, numpy.ufunc) and getattr(target, "__name__", "") == "at"
