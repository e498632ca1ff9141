"""Derivative rules as Python templates, and the tables that hold them.

A rule is an ordinary Python function whose parameters are the primal's arguments, then
``result`` (the primal's value) and ``g`` (the incoming adjoint); it returns one adjoint per
argument (a tuple when there are several), or ``None`` for an argument with no derivative.
The transform inlines the rule's body, so the rule's text is what appears in generated code.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import contextvars
import functools
import inspect
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..errors import AdcompileError
from ..source import function_node

# Names a template may use besides its own parameters (``np`` only in array rules).
TEMPLATE_GLOBALS = frozenset({"math", "np", "abs", "min", "max", "float"})
REQUIRED = inspect.Parameter.empty  # a static parameter without a default


class RuleError(AdcompileError, ValueError):
    """A rule template that does not fit the rule form (located at the template's ``def``
    when the user registers it with ``adcompile.derivative``)."""


@dataclass(frozen=True)
class Rule:
    """One derivative rule: the primal callable, its arity and the template function."""

    primal: object
    name: str
    template: Callable[..., object]
    arity: int
    params: tuple[str, ...] = field(compare=False)
    # Keyword-only template parameters: non-differentiable arguments such as ``axis=``,
    # with their defaults (``REQUIRED`` if none). Calls may pass them by keyword, or by
    # position after the differentiable arguments, in this order.
    statics: tuple[tuple[str, object], ...] = field(default=(), compare=False)
    # A rule whose one argument is a list of arrays (``np.concatenate([a, b])``): its
    # template returns a sequence holding one adjoint per element.
    variadic: bool = field(default=False, compare=False)

    @functools.cached_property
    def parsed(self) -> tuple[list[ast.stmt], list[ast.expr | None]]:
        """The template's setup statements and one adjoint expression per argument."""
        return parse_template(self.template, self.arity)

    @functools.cached_property
    def nondifferentiable_args(self) -> frozenset[int]:
        """Indices of the arguments whose adjoint is ``None``."""
        return frozenset(i for i, expr in enumerate(self.parsed[1]) if expr is None)


def is_users_rule(rule: Rule) -> bool:
    """Whether ``rule`` is one a user registered (``adcompile.derivative``), not built in."""
    module = getattr(rule.template, "__module__", None) or ""
    return module.partition(".")[0] != "adcompile"


def template_def(template: Callable[..., object]) -> ast.FunctionDef:
    """The template's ``def``, parsed from its file."""
    node, _ = function_node(template)
    if not isinstance(node, ast.FunctionDef):
        raise RuleError(f"rule {template.__name__} must be a def")
    return node


def parse_template(
    template: Callable[..., object], arity: int
) -> tuple[list[ast.stmt], list[ast.expr | None]]:
    """Split a template into assignments and the returned adjoints, checking its shape."""
    body = template_def(template).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # docstring
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        raise RuleError(f"rule {template.__name__} must end with a return of the adjoints")
    for stmt in body[:-1]:
        if not (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            raise RuleError(
                f"rule {template.__name__}: only `name = expression` lines may precede the return"
            )
    value = body[-1].value
    # `return [g * b, g * a]` too; with one argument a list is that argument's adjoint
    several = ast.Tuple | ast.List if arity > 1 else ast.Tuple
    exprs = value.elts if isinstance(value, several) else [value]
    if len(exprs) != arity:
        raise RuleError(
            f"rule {template.__name__} returns {len(exprs)} adjoint(s) for {arity} argument(s); "
            "return one per argument, in order (None for one with no derivative)"
        )
    adjoints = [None if _is_none(e) else _float_literal(e) for e in exprs]
    return body[:-1], adjoints


def _float_literal(expr: ast.expr) -> ast.expr:
    """An int literal adjoint (a rule's ``return 0``) as a float: partials are floats."""
    if isinstance(expr, ast.Constant) and type(expr.value) is int:
        return ast.copy_location(ast.Constant(value=float(expr.value)), expr)
    return expr


def _is_none(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is None


def template_statics(template: Callable[..., object]) -> tuple[tuple[str, object], ...]:
    """The keyword-only parameters of a template and their defaults."""
    kw_only = inspect.Parameter.KEYWORD_ONLY
    parameters = inspect.signature(template).parameters.values()
    return tuple((p.name, p.default) for p in parameters if p.kind is kw_only)


def template_arity(template: Callable[..., object]) -> tuple[int, tuple[str, ...]]:
    """Return the number of primal arguments a template takes, and its positional names."""
    kw_only = inspect.Parameter.KEYWORD_ONLY
    parameters = inspect.signature(template).parameters.values()
    params = tuple(p.name for p in parameters if p.kind is not kw_only)
    if len(params) < 3 or params[-2:] != ("result", "g"):
        raise RuleError(
            f"rule {getattr(template, '__name__', template)} must take the primal's arguments, "
            f"then `result`, then `g`; it takes ({', '.join(params)})"
        )
    return len(params) - 2, params


def display_name(primal: object) -> str:
    """A readable dotted name for a callable: ``math.sin``, ``abs``, ``operator.add``."""
    module = getattr(primal, "__module__", None) or ""
    module = {"_operator": "operator"}.get(module, module)
    name = getattr(primal, "__qualname__", None) or getattr(primal, "__name__", repr(primal))
    if module in ("builtins", ""):
        return name
    return f"{module}.{name}"


class RuleTable:
    """Rules keyed by (callable, arity); a child table overrides and falls back to its parent."""

    def __init__(self, parent: RuleTable | None = None) -> None:
        self.parent = parent
        self._rules: dict[tuple[int, int], Rule] = {}

    def register(
        self, primal: object, template: Callable[..., object], *, variadic: bool = False
    ) -> Rule:
        """Add (or replace) the rule for ``primal`` with the arity of ``template``."""
        arity, params = template_arity(template)
        statics = template_statics(template)
        rule = Rule(primal, display_name(primal), template, arity, params, statics, variadic)
        rule.parsed  # noqa: B018 -- parse now so a malformed template fails at registration
        self._rules[(id(primal), arity)] = rule
        global REGISTRATIONS
        REGISTRATIONS += 1
        return rule

    def lookup(self, primal: object, arity: int) -> Rule | None:
        """Return the rule for ``primal`` called with ``arity`` arguments, if any."""
        found = self._rules.get((id(primal), arity))
        if found is None and self.parent is not None:
            return self.parent.lookup(primal, arity)
        return found

    def arities(self, primal: object) -> list[int]:
        """All arities that have a rule for ``primal``."""
        mine = {a for (key, a) in self._rules if key == id(primal)}
        inherited = set(self.parent.arities(primal)) if self.parent else set()
        return sorted(mine | inherited)

    def __iter__(self) -> Iterator[Rule]:
        seen = set()
        table: RuleTable | None = self
        while table is not None:
            for key, rule in table._rules.items():
                if key not in seen:
                    seen.add(key)
                    yield rule
            table = table.parent

    @contextlib.contextmanager
    def scope(self) -> Iterator[RuleTable]:
        """Use a child table while the ``with`` block runs (rules added there do not leak).

        Per thread (and asyncio task): the table in force is a context variable, so one
        thread's scope neither shows its rules to another nor outlives its ``with``."""
        child = RuleTable(parent=self)
        token = _ACTIVE.set(child)
        try:
            yield child
        finally:
            _ACTIVE.reset(token)


BUILTIN_RULES = RuleTable()
# Users' rules registered outside any scope: a table of their own above the built-in one, so
# that in array code they come before the array rules as scoped ones do (``lookup_rule``).
USER_RULES = RuleTable(parent=BUILTIN_RULES)
_ACTIVE: contextvars.ContextVar[RuleTable] = contextvars.ContextVar(
    "adcompile_rules", default=USER_RULES
)
# Rules registered so far, in any table: part of the key of code compiled once and reused
# (``compose.py``), so that a rule registered later is used.
REGISTRATIONS = 0
# Rules for NumPy code (``rules/arrays.py``, imported on first use so that scalar code never
# imports NumPy). In a function that uses NumPy they take precedence over the built-in ones.
ARRAY_RULES = RuleTable()


Decorator = Callable[[Callable[..., object]], Callable[..., object]]


def _registrar(table: RuleTable, primal: object, variadic: bool = False) -> Decorator:
    """A decorator registering its template in ``table`` for ``primal``."""

    def register(template: Callable[..., object]) -> Callable[..., object]:
        table.register(primal, template, variadic=variadic)
        return template

    return register


def rule(primal: object) -> Decorator:
    """Register the decorated template as the built-in derivative rule of ``primal``."""
    return _registrar(BUILTIN_RULES, primal)


def array_rule(primal: object, *, variadic: bool = False) -> Decorator:
    """Register the decorated template as the array-mode derivative rule of ``primal``."""
    return _registrar(ARRAY_RULES, primal, variadic)


# Tangent (forward-mode) templates for array rules that are not elementwise. They have the
# reverse templates' form, with ``g`` standing for the tangent of the argument whose term it
# is; an elementwise rule needs none (its tangent comes from its reverse template).
TANGENT_RULES = RuleTable()


def array_tangent(primal: object, *, variadic: bool = False) -> Decorator:
    """Register the decorated template as the tangent rule of an array primitive."""
    return _registrar(TANGENT_RULES, primal, variadic)


def array_rules() -> RuleTable:
    """The array-mode rule table, its rules registered (this imports NumPy)."""
    from . import arrays, helper_rules  # noqa: F401 -- importing registers the rules

    return ARRAY_RULES


def lookup_rule(table: RuleTable, primal: object, arity: int, *, arrays: bool) -> Rule | None:
    """The rule for a call: users' rules first, then (in array mode) array rules, then built-in."""
    if not arrays:
        return table.lookup(primal, arity)
    user: RuleTable | None = table
    while user is not None and user is not BUILTIN_RULES:
        found = user._rules.get((id(primal), arity))
        if found is not None:
            return found
        user = user.parent
    return array_rules().lookup(primal, arity) or BUILTIN_RULES.lookup(primal, arity)


def active_rules() -> RuleTable:
    """The rule table in force (users' module-level rules over the built-in ones, unless a
    scope is open)."""
    return _ACTIVE.get()


# Modules whose attributes a template or generated code may name.
KNOWN_MODULES = {"math": math, "builtins": builtins}
