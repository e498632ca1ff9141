"""``adcompile.derivative``: users' own rules, in the same template form as the built-in ones.

Rules go into the active rule table. ``rule_scope()`` opens a child table for a ``with``
block, so rules registered inside it (in a test, say) vanish when the block ends.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import inspect
import linecache
import math
import types
from collections.abc import Callable, Iterator
from typing import Any

from .. import messages
from ..errors import Location
from .registry import (
    TEMPLATE_GLOBALS,
    RuleError,
    RuleTable,
    active_rules,
    display_name,
    parse_template,
    template_arity,
    template_def,
)


def _primal_params(fn: Callable[..., Any]) -> tuple[list[str], int] | None:
    """The positional parameters a rule for ``fn`` takes, and how many of them it must take.

    Your own function is inlined with its defaults filled in, so its rule takes every
    parameter. A library function (`np.sin(x, out=None)`, `pow(base, exp, mod=None)`) is
    called with some of them, and a rule serves the calls with as many arguments as it takes.
    """
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # C functions may have no signature
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    others = [p.name for p in signature.parameters.values() if p.kind not in kinds]
    library = _is_library(fn)
    if others and not library:  # never callable in supported code
        raise RuleError(
            f"{display_name(fn)} takes {', '.join(others)} other than by position (*args, "
            "**kwargs or keyword-only), which differentiated code cannot pass; a rule needs "
            "a function of positional parameters"
        )
    positional = [p for p in signature.parameters.values() if p.kind in kinds]
    required = sum(p.default is inspect.Parameter.empty for p in positional)
    return [p.name for p in positional], required if library else len(positional)


def _is_library(fn: Callable[..., Any]) -> bool:
    """Whether calls of ``fn`` stay calls in generated code (math, builtins, NumPy, C
    functions) rather than being inlined, as your own Python functions are."""
    from ..lower_arrays import is_numpy  # (it imports the rule registry)

    if not isinstance(fn, types.FunctionType):
        return True
    return getattr(fn, "__module__", None) in ("math", "builtins") or is_numpy(fn)


def _free_names(template: Callable[..., Any]) -> tuple[set[str], set[str]]:
    """The names the template reads that are not its parameters or its own locals assigned
    before the read (a read before the assignment would be the caller's variable once the
    rule is inlined, where Python raises UnboundLocalError); and the locals it assigns."""
    node = template_def(template)
    params = {a.arg for a in node.args.args} | TEMPLATE_GLOBALS
    assigned: set[str] = set()
    free: set[str] = set()
    for stmt in node.body:
        value = stmt.value if isinstance(stmt, ast.Assign | ast.Return | ast.Expr) else stmt
        free |= {n.id for n in ast.walk(value) if isinstance(n, ast.Name)} - params - assigned
        if isinstance(stmt, ast.Assign):
            assigned |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
    return free, assigned


def check_template(fn: Callable[..., Any], template: Callable[..., Any]) -> None:
    """Reject a template whose parameters do not match ``fn`` or that reads other names."""
    name = display_name(fn)
    primal = _primal_params(fn)
    expected, required = primal if primal is not None else (None, 0)
    clash = sorted({"result", "g"} & set(expected or ()))
    if clash:
        raise RuleError(
            f"{name} has a parameter named {' and '.join(clash)}, the name a rule gives the "
            "primal result or the incoming adjoint (a rule takes the parameters of "
            f"{name}, then `result`, then `g`): rename the parameter of {name}"
        )
    parameters = inspect.signature(template).parameters.values()
    got = [p.name for p in parameters]
    by_keyword = [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]
    if {"result", "g"} & set(by_keyword):
        raise RuleError(
            f"the rule for {name} takes `result` and `g` by keyword only; write them as the "
            "last positional parameters, after the parameters of {name}".replace("{name}", name)
        )
    allowed = [
        [*expected[:count], "result", "g"] for count in range(required, len(expected or ()) + 1)
    ]
    if expected is not None and got not in allowed:
        wanted = " or ".join(f"({', '.join(form)})" for form in allowed)
        raise RuleError(
            f"the rule for {name} must take {wanted}: the parameters of {name}, then the "
            f"primal result, then the incoming adjoint; it takes ({', '.join(got)})"
        )
    parse_template(template, template_arity(template)[0])  # its form first: `a, b = ...`
    _check_standard_names(name, template)
    free, assigned = _free_names(template)
    modules = {
        n: v.__name__
        for n in free
        if isinstance(v := template.__globals__.get(n), types.ModuleType)
    }
    if modules:
        shown = ", ".join(f"`{n}` ({m})" for n, m in sorted(modules.items()))
        raise RuleError(
            f"the rule for {name} reads the module {shown} under its own name; a rule is "
            "inlined into generated code, which names them `math` and `np`: write "
            "`math.exp(x)`, `np.exp(x)`"
        )
    if free:
        raise RuleError(_reads_others(name, free, assigned))


def _check_standard_names(name: str, template: Callable[..., Any]) -> None:
    """The names a rule may read besides its parameters (``math``, ``np``, ``abs``,
    ``min``, ``max``, ``float``) mean in generated code what they mean in Python: refuse a
    rule whose module binds one to something else (its own ``max``, ``import numpy as
    math``), which the generated code would not call."""
    node = template_def(template)
    read = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in TEMPLATE_GLOBALS}
    own = {a.arg for a in node.args.args}
    for global_name in sorted(read - own):
        if global_name not in template.__globals__:
            continue  # the builtin (or, for math and np, a name the generated code defines)
        value = template.__globals__[global_name]
        if not _standard(global_name, value):
            raise RuleError(messages.rule_reads_rebound_name(name, global_name, value))


def _standard(name: str, value: object) -> bool:
    """Whether ``value`` is what generated code means by ``name``."""
    if name == "math":
        return value is math
    if name == "np":
        return isinstance(value, types.ModuleType) and value.__name__ == "numpy"
    return value is getattr(builtins, name)


def _reads_others(name: str, free: set[str], assigned: set[str]) -> str:
    """The refusal of a rule that reads names other than its own (``k``, or its local
    ``k`` before assigning it)."""
    early = sorted(free & assigned)
    when = f" ({', '.join(early)} before assigning it)" if early else ""
    if early == sorted(free):
        when = " before assigning it"
    return (
        f"the rule for {name} reads {', '.join(sorted(free))}{when}; a rule is inlined "
        "into standalone generated code, so it may use only its parameters, `math`, "
        "abs/min/max/float, literals and its own names once assigned"
    )


def derivative(
    fn: Callable[..., Any], *, rules: RuleTable | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated template as the derivative rule of ``fn``."""

    if not callable(fn):
        raise TypeError(f"derivative() takes the function the rule is for, not {fn!r}")

    def register(template: Callable[..., Any]) -> Callable[..., Any]:
        try:
            check_template(fn, template)
            (rules or active_rules()).register(fn, template)
        except RuleError as exc:
            if exc.location is not None:
                raise
            raise RuleError(exc.message, _definition(template)) from None
        return template

    return register


def _definition(template: Callable[..., Any]) -> Location | None:
    """Where a template is defined: its ``def`` line."""
    code = getattr(template, "__code__", None)
    if code is None:
        return None
    text = linecache.getline(code.co_filename, code.co_firstlineno)
    return Location(code.co_filename, code.co_firstlineno, len(text) - len(text.lstrip()) + 1, text)


@contextlib.contextmanager
def rule_scope() -> Iterator[RuleTable]:
    """Rules registered inside the ``with`` block are forgotten when it ends."""
    with active_rules().scope() as table:
        yield table
