"""What the decorators of a function read from a file (``adcompile dump PATH.py:FUNC``) mean.

The file is read, not run, so a decorator is not applied. adcompile's own transforms are
understood: ``@grad`` marks the primal (the function to differentiate), and the ``wrt`` of
``@grad(wrt=...)`` is the one to use unless ``--wrt`` is given, as with a module's function.
Any other decorator may make the name mean another function (``@twice`` doubling it): the
gradient of the undecorated body would then be silently wrong, so it is refused.
"""

from __future__ import annotations

import ast
from typing import Any

from . import messages
from .errors import UnsupportedSyntaxError
from .source import FunctionSource

# Transforms whose decorated name still stands for the primal (module form: ``__wrapped__``).
TRANSFORMS = frozenset({"grad", "value_and_grad", "jacobian", "hessian"})
# Those whose ``wrt`` the module form keeps (their result carries it as ``adcompile_recipe``).
KEEPS_WRT = frozenset({"grad", "value_and_grad"})


def decorator_wrt(fs: FunctionSource) -> Any:
    """The ``wrt`` of the function's adcompile decorator (None: every parameter); refuses a
    decorator that is not adcompile's, or more than one."""
    decorators = fs.node.decorator_list
    if not decorators:
        return None
    aliases = _adcompile_aliases(ast.parse("".join(fs.lines)))
    if len(decorators) > 1:
        raise fs.error(UnsupportedSyntaxError, decorators[1], messages.static_decorators(fs.name))
    decorator = decorators[0]
    call = decorator if isinstance(decorator, ast.Call) else None
    transform = _transform_named(call.func if call else decorator, aliases)
    if transform is None or (call is not None and call.args):  # `@grad(g)`: not a decorator
        shown = ast.unparse(decorator)
        raise fs.error(UnsupportedSyntaxError, decorator, messages.static_decorator(shown, fs.name))
    if call is None or transform not in KEEPS_WRT:
        return None
    return _literal_wrt(fs, call)


def _adcompile_aliases(tree: ast.Module) -> dict[str, str]:
    """Names the file's module-level imports bind to adcompile: ``grad`` (or its alias) to
    "grad", ``adcompile`` (or its alias) to "" (the package)."""
    aliases: dict[str, str] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "adcompile" and stmt.level == 0:
            for alias in stmt.names:
                aliases[alias.asname or alias.name] = alias.name
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.name == "adcompile":
                    aliases[alias.asname or alias.name] = ""
    return aliases


def _transform_named(func: ast.expr, aliases: dict[str, str]) -> str | None:
    """The adcompile transform ``func`` names (``grad``, ``adcompile.grad``, ``ad.grad``)."""
    if isinstance(func, ast.Name):
        name = aliases.get(func.id)
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        name = func.attr if aliases.get(func.value.id) == "" else None
    else:
        name = None
    return name if name in TRANSFORMS else None


def _literal_wrt(fs: FunctionSource, call: ast.Call) -> Any:
    """The literal ``wrt=`` of ``@grad(wrt=...)``; None without one."""
    for keyword in call.keywords:
        if keyword.arg != "wrt":
            continue
        try:
            value = ast.literal_eval(keyword.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise fs.error(
                UnsupportedSyntaxError, keyword.value, messages.STATIC_DECORATOR_WRT
            ) from None
        return value
    return None
