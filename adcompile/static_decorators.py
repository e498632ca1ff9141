"""What the decorators of a function read from a file (``adcompile dump PATH.py:FUNC``) mean.

The file is read, not run, so a decorator is not applied. adcompile's own transforms are
understood: ``@grad`` marks the primal (the function to differentiate), and the ``wrt`` of
``@grad(wrt=...)`` is the one to use unless ``--wrt`` is given, as with a module's function.
Any other decorator may make the name mean another function (``@twice`` doubling it): the
gradient of the undecorated body would then be silently wrong, so it is refused. So is a
name the file binds again after the ``def`` (``f = g``, ``from m import f``): the name the
module ends with is then another function, or none.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from typing import Any

from . import messages
from .astutil import parse_again
from .errors import UnsupportedSyntaxError
from .source import STATIC_MODULES, FunctionSource

# Transforms whose decorated name still stands for the primal (module form: ``__wrapped__``).
TRANSFORMS = frozenset({"grad", "value_and_grad", "jacobian", "hessian"})
# Those whose ``wrt`` the module form keeps (their result carries it as ``adcompile_recipe``).
KEEPS_WRT = frozenset({"grad", "value_and_grad"})


def decorator_wrt(fs: FunctionSource) -> Any:
    """The ``wrt`` of the function's adcompile decorator (None: every parameter); refuses a
    decorator that is not adcompile's, or more than one."""
    call = _call_keeping_wrt(fs)
    return None if call is None else _literal_wrt(fs, call)


def decorator_options(fs: FunctionSource) -> dict[str, Any]:
    """The literal ``mode=`` and ``optimize=`` of ``@grad(...)`` (those given), which the
    module's function was compiled with; ``with_value`` for ``@value_and_grad``."""
    found = _adcompile_decorator(fs)
    options: dict[str, Any] = {"with_value": True} if found and found[0] == "value_and_grad" else {}
    call = _call_keeping_wrt(fs)
    if call is None:
        return options
    for keyword in call.keywords:
        if keyword.arg in ("mode", "optimize"):
            try:
                options[keyword.arg] = ast.literal_eval(keyword.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                message = messages.static_decorator_option(keyword.arg)
                raise fs.error(UnsupportedSyntaxError, keyword.value, message) from None
    return options


def _call_keeping_wrt(fs: FunctionSource) -> ast.Call | None:
    """The call of adcompile's ``@grad(...)`` or ``@value_and_grad(...)`` decorating the
    function; None for a bare decorator, another transform, or none. Refuses a decorator
    that is not adcompile's, or more than one."""
    found = _adcompile_decorator(fs)
    if found is None:
        return None
    transform, call = found
    return call if transform in KEEPS_WRT else None


def _adcompile_decorator(fs: FunctionSource) -> tuple[str, ast.Call | None] | None:
    """The adcompile transform decorating the function and its call (None when bare:
    ``@grad``); None without a decorator. Refuses a decorator that is not adcompile's, or
    more than one."""
    decorators = fs.node.decorator_list
    if not decorators:
        return None
    aliases = _adcompile_aliases(parse_again("".join(fs.lines)), _position(fs.node))
    if len(decorators) > 1:
        raise fs.error(UnsupportedSyntaxError, decorators[1], messages.static_decorators(fs.name))
    decorator = decorators[0]
    call = decorator if isinstance(decorator, ast.Call) else None
    transform = _transform_named(call.func if call else decorator, aliases)
    if transform is None or (call is not None and call.args):  # `@grad(g)`: not a decorator
        shown = ast.unparse(decorator)
        raise fs.error(UnsupportedSyntaxError, decorator, messages.static_decorator(shown, fs.name))
    return transform, call


def refuse_rebound_target(fs: FunctionSource) -> None:
    """Refuse a target whose name the file binds again after its ``def``, or may (in an ``if``,
    a ``global`` statement, a star import): reading the def would differentiate a function the
    module's name no longer stands for."""
    tree = parse_again("".join(fs.lines))  # fs.node belongs to another parse: compare positions
    binding = _last_binding(tree, fs.name)
    if binding is None or _position(binding) == _position(fs.node):
        return
    raise fs.error(
        UnsupportedSyntaxError,
        binding,
        f"{fs.name} is bound again here, after its `def` (line {fs.node.lineno}), so the name "
        "may stand for another function, and the file is read, not run (PATH.py): "
        "differentiate the function under its own name, or name the module "
        "(`package.module:FUNC`) so that it is imported",
    )


def _position(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset


def _last_binding(tree: ast.Module, name: str) -> ast.AST | None:
    """What binds (or deletes) ``name`` in the last module-level statement that does; a
    function declaring ``global name`` and assigning it, which binds it when that function
    runs, comes last. A script's ``if __name__ == "__main__":`` block does not count: it
    does not run when the module is imported."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            binding = _declares_global(node, name) and _binding_in_body(node, name)
            if binding:
                return binding
    last = None
    for stmt in _runs_on_import(tree.body):
        last = _binding_in(stmt, name) or last
    return last


def _runs_on_import(statements: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The module-level statements, with a ``__main__`` block's body left out (its ``else``,
    which is what runs on import, kept)."""
    for stmt in statements:
        if _is_main_block(stmt):
            yield from _runs_on_import(stmt.orelse)
        else:
            yield stmt


def _declares_global(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """Whether ``function`` itself (not a function nested in it) declares ``global name``."""
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Global) and name in node.names:
            return True
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            stack.extend(ast.iter_child_nodes(node))
    return False


def _binding_in_body(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> ast.AST | None:
    """What in ``function``'s own body binds ``name`` (its nested functions are scopes of
    their own, though a nested ``def name`` binds it)."""
    for stmt in function.body:
        binding = _binding_in(stmt, name)
        if binding is not None:
            return binding
    return None


def _is_main_block(stmt: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` (either way round)."""
    if not (isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Compare)):
        return False
    test = stmt.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s.id for s in sides if isinstance(s, ast.Name)]
    texts = [s.value for s in sides if isinstance(s, ast.Constant)]
    return names == ["__name__"] and texts == ["__main__"]


def _binding_in(stmt: ast.stmt, name: str) -> ast.AST | None:
    """The node of a module-level statement that may bind ``name`` in the module."""
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == name:
                return node
            continue  # its body is another scope
        if isinstance(node, ast.Lambda):
            continue  # its parameters are its own
        if _binds_here(node, name):
            return node
        if isinstance(node, ast.comprehension):  # its loop variable stays in it (`:=` not)
            stack.extend([node.iter, *node.ifs])
        elif not (isinstance(node, ast.AnnAssign) and node.value is None):  # `f: int`: none
            stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return None


def _binds_here(node: ast.AST, name: str) -> bool:
    """Whether ``node`` itself binds ``name``: an assignment target, an import, ``except
    E as name``, a match capture, or a star import (which may bind any name)."""
    if isinstance(node, ast.Name):
        return node.id == name and not isinstance(node.ctx, ast.Load)
    if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
        return _star_may_bind(node, name)
    if isinstance(node, ast.alias):
        return node.name != "*" and (node.asname or node.name.split(".")[0]) == name
    if isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar):
        return node.name == name
    if isinstance(node, ast.MatchMapping):
        return node.rest == name
    return False


def _star_may_bind(node: ast.ImportFrom, name: str) -> bool:
    """Whether ``from M import *`` may bind ``name``: a module the reader resolves (``math``)
    binds its public names; any other one, any name."""
    if node.level or node.module is None or node.module.split(".")[0] not in STATIC_MODULES:
        return True
    try:
        module = importlib.import_module(node.module)
    except ImportError:  # Python fails there too: nothing is bound
        return False
    public = getattr(module, "__all__", None)
    return name in public if public is not None else hasattr(module, name) and name[:1] != "_"


def _adcompile_aliases(tree: ast.Module, before: tuple[int, int]) -> dict[str, str]:
    """Names bound to adcompile where position ``before`` (the decorated ``def``) stands:
    ``grad`` (or its alias) to "grad", ``adcompile`` (or its alias) to "" (the package). A
    name the file binds again in between (its own ``def grad``, an assignment, another
    import), or that a function declaring it ``global`` may rebind, is not adcompile's."""
    aliases: dict[str, str] = {}
    for stmt in _runs_on_import(tree.body):
        if _position(stmt) >= before:
            break
        for name in [name for name in aliases if _binding_in(stmt, name) is not None]:
            del aliases[name]
        aliases.update(_imported_from_adcompile(stmt))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for name in [n for n in aliases if _declares_global(node, n)]:
                if _binding_in_body(node, name) is not None:
                    del aliases[name]
    return aliases


def _imported_from_adcompile(stmt: ast.stmt) -> dict[str, str]:
    """What an import statement binds to adcompile (as ``_adcompile_aliases`` maps it)."""
    if isinstance(stmt, ast.ImportFrom) and stmt.module == "adcompile" and stmt.level == 0:
        return {alias.asname or alias.name: alias.name for alias in stmt.names}
    if isinstance(stmt, ast.Import):
        return {alias.asname or alias.name: "" for alias in stmt.names if alias.name == "adcompile"}
    return {}


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
        _check_wrt(fs, keyword.value, value)
        return value
    return None


def _check_wrt(fs: FunctionSource, node: ast.expr, wrt: Any) -> None:
    """Refuse, at the literal, a ``wrt=`` that names no parameter (``wrt=True``, an unknown
    name): the module raises there when it runs, the file's reader must say so itself."""
    from .api import resolve_wrt  # api imports most of adcompile: only when a wrt= is read

    try:
        resolve_wrt(fs.param_names(), wrt, fs.name)
    except (ValueError, TypeError) as exc:
        raise fs.error(UnsupportedSyntaxError, node, str(exc)) from None
