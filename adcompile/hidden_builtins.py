"""Builtins the generated code reads under a name that the user's function binds.

The compiler writes calls of builtins: ``range(len(seq))`` for a loop over a tuple,
``reversed(stack1)`` in a reverse sweep, ``len(shape)`` in the array helpers, and the
helpers read builtin types as values too (``isinstance(g, float)``). A parameter, variable
or module constant of the user's called ``len`` or ``float`` would hide the builtin there (a
parameter stays a parameter: the gradient keeps the primal's signature). Such reads use a
module-level alias instead, bound before the module's constants::

    len_1 = len
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Iterable

from .astutil import load, statements_in, store, stored_names, walk
from .names import source_words

_BUILTIN_NAMES = frozenset(dir(builtins))


def alias_hidden_builtins(
    trees: list[ast.AST],
    user_names: Iterable[str],
    source_text: str,
    fresh: Callable[[str], str],
) -> list[ast.stmt]:
    """Point the builtin calls in ``trees`` whose names the user's code binds at aliases.

    ``user_names`` are the parameters and module constants of the generated module;
    ``source_text`` is the user's function (a cheap first test: most never name a builtin).
    Returns the alias assignments for the module's top (none in the usual case).
    """
    user_names = set(user_names)
    if not _BUILTIN_NAMES & (user_names | source_words(source_text)):
        return []
    # Names the generated functions bind (a helper's own locals hide nothing outside it).
    own = [t for t in trees if isinstance(t, ast.stmt) and not isinstance(t, ast.FunctionDef)]
    bound = user_names.union(*(stored_names(stmt) for stmt in statements_in(own)))
    aliases: dict[str, str] = {}

    def alias(name: str) -> str:
        if name not in aliases:
            aliases[name] = fresh(name)
        return aliases[name]

    for tree in trees:
        if isinstance(tree, ast.FunctionDef):  # a helper: each builtin it reads is one
            _alias_helper_reads(tree, bound, alias)
            continue
        for node in walk(tree):  # the user's code: only the calls the compiler wrote
            if node.__class__ is ast.Call and node.func.__class__ is ast.Name:
                name = node.func.id
                if name in _BUILTIN_NAMES and name in bound:
                    node.func = load(alias(name))
    return [
        ast.Assign(targets=[store(alias)], value=load(name), lineno=0)
        for name, alias in sorted(aliases.items())
    ]


def _alias_helper_reads(
    helper: ast.FunctionDef, hidden: set[str], alias: Callable[[str], str]
) -> None:
    """Read each hidden builtin in ``helper`` (not one of its own names) through its alias."""
    arguments = helper.args
    own = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
    own.update(*(stored_names(stmt) for stmt in statements_in(helper.body)))
    readable = (_BUILTIN_NAMES & hidden) - own
    for node in walk(helper):
        if node.__class__ is ast.Name and isinstance(node.ctx, ast.Load) and node.id in readable:
            node.id = alias(node.id)
