"""Builtins the generated code calls under a name that the user's function binds.

The compiler writes calls of builtins: ``range(len(seq))`` for a loop over a tuple,
``reversed(stack1)`` in a reverse sweep, ``len(shape)`` in the array helpers. A parameter,
variable or module constant of the user's called ``len`` or ``reversed`` would hide the
builtin there (a parameter stays a parameter: the gradient keeps the primal's signature).
Such calls read a module-level alias instead, bound before the module's constants::

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
    for tree in trees:
        for node in walk(tree):
            if node.__class__ is ast.Call and node.func.__class__ is ast.Name:
                name = node.func.id
                if name in _BUILTIN_NAMES and name in bound:
                    if name not in aliases:
                        aliases[name] = fresh(name)
                    node.func = load(aliases[name])
    return [
        ast.Assign(targets=[store(alias)], value=load(name), lineno=0)
        for name, alias in sorted(aliases.items())
    ]
