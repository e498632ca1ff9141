"""The forward-mode (tangent) transform: each primal statement followed by its tangent.

A tangent rule is not written separately: a reverse rule's adjoint of argument ``i`` is
``g * df/dx_i`` (linear in ``g``), so replacing ``g`` by the argument's tangent gives that
argument's term of the tangent, and the terms add up. One table of templates serves both modes.

Several *directions* can be carried at once (``grad(f, mode="forward")`` differentiates with
respect to every requested parameter in one pass); each has its own activity analysis and its
own tangent names. Control flow keeps its shape: no records are needed in forward mode.
"""

from __future__ import annotations

import ast
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from .array_adjoints import helpers_in
from .astutil import clone, map_children, names_in, substitute
from .ir import (
    Apply,
    Const,
    Copy,
    CoreFunction,
    If,
    Loop,
    Opaque,
    Return,
    Stmt,
    Var,
    atom_expr,
)
from .names import NameTable
from .reverse import (
    FORWARD,
    TANGENT,
    Activity,
    analyze_activity,
    assign,
    loop_statement,
    opaque_statement,
    output_value,
    tag,
)
from .rules import Rule
from .shapes import shape_facts
from .statics import drop_default_keywords, fold_static_tests

TANGENT_PREFIXES = ("d_", "dot_", "tangent_", "tan_")


@dataclass
class Direction:
    """One direction of differentiation: which values vary along it, and their tangent names."""

    activity: Activity
    tangent_name: Callable[[str], str]
    names: dict[str, str] = field(default_factory=dict)

    def tangent(self, var: str) -> str:
        """The name of the tangent of ``var`` along this direction."""
        if var not in self.names:
            self.names[var] = self.tangent_name(var)
        return self.names[var]


class TangentSweep:
    """Builds the primal statements interleaved with the tangents of every direction."""

    def __init__(self, fn: CoreFunction, directions: list[Direction], names: NameTable) -> None:
        self.fn = fn
        self.directions = directions
        self.names = names
        self.shapes = shape_facts(fn) if fn.array_mode else None

    def block(self, block: list[Stmt]) -> list[ast.stmt]:
        """The statements of a block, each primal one followed by its tangents."""
        out: list[ast.stmt] = []
        for stmt in block:
            if isinstance(stmt, Apply):
                out += self._apply(stmt)
            elif isinstance(stmt, Copy):
                out += self._copy(stmt)
            elif isinstance(stmt, Opaque):
                out.append(opaque_statement(stmt, FORWARD))
            elif isinstance(stmt, If):
                body = self.block(stmt.body) or [ast.Pass()]
                node = ast.If(test=ast.Name(id=stmt.cond, ctx=ast.Load()), body=body, orelse=[])
                node.orelse = self.block(stmt.orelse)
                out.append(tag(node, stmt.line, FORWARD))
            elif isinstance(stmt, Loop):
                body = self.block(stmt.body) + self.block(stmt.back_edges)
                out += loop_statement(stmt, body)
            elif not isinstance(stmt, Return):
                raise TypeError(f"unexpected core statement {stmt!r}")
        return out

    def _copy(self, stmt: Copy) -> list[ast.stmt]:
        primal = clone(stmt.render) if stmt.render is not None else atom_expr(stmt.source)
        out = [assign(stmt.target, primal, stmt.line, FORWARD)]
        for direction in self.directions:
            if not direction.activity.active(stmt.target):
                continue
            source = stmt.source
            if stmt.render is not None:  # a leaf: that item of the parameter's tangent
                value: ast.expr = self._leaf_tangent(source.name, direction)
            elif isinstance(source, Var) and direction.activity.active(source.name):
                value = ast.Name(id=direction.tangent(source.name), ctx=ast.Load())
            elif isinstance(source, Var) and self.fn.array_mode and not self._scalar(source):
                # A constant array entering a loop that varies it: zeros of its shape
                # (a scalar zero would not do for ``W @ d_h``). A number's zero stays a
                # Python float: np.zeros_like(0.0) is a float64 array that turns float32
                # tangents into float64 ones.
                value = _zeros_like(self.fn, atom_expr(source))
            else:  # a constant on this path (or a variable this path never bound)
                value = ast.Constant(value=0.0)
            out.append(assign(direction.tangent(stmt.target), value, stmt.line, TANGENT))
        return out

    def _scalar(self, atom: Var) -> bool:
        """Whether ``atom`` surely holds a number (``shapes.py``), not an array."""
        return self.shapes is not None and self.shapes.is_scalar(atom)

    def _apply(self, stmt: Apply) -> list[ast.stmt]:
        if stmt.forward:  # a user rule: the callee's inlined body computes the value
            out = self.block(stmt.forward)
        else:
            out = [assign(stmt.target, stmt.primal_expr(), stmt.line, FORWARD)]
        for direction in self.directions:
            if direction.activity.active(stmt.target):
                out += self._tangent(stmt, direction)
        return out

    def _leaf_tangent(self, stand_in: str, direction: Direction) -> ast.expr:
        """``d_params['W1']``: the leaf's own expression, read from the parameter's tangent."""
        expr = self.fn.leaf_exprs[stand_in]
        root = expr
        while isinstance(root, ast.Subscript):
            root = root.value
        tangent = ast.Name(id=direction.tangent(root.id), ctx=ast.Load())
        return substitute(expr, {root.id: tangent})

    def _tangent(self, stmt: Apply, direction: Direction) -> list[ast.stmt]:
        """``d_target = sum of (reverse template of argument i, with g = d_arg_i)``."""
        if stmt.tangent_refusal is not None:
            raise stmt.tangent_refusal
        mapping = {p: atom_expr(a) for p, a in zip(stmt.rule.params, stmt.args, strict=False)}
        mapping["result"] = ast.Name(id=stmt.target, ctx=ast.Load())
        mapping["math"] = ast.Name(id=self.fn.math_alias, ctx=ast.Load())
        tangents: list[ast.expr | None] = [
            ast.Name(id=direction.tangent(a.name), ctx=ast.Load())
            if isinstance(a, Var) and direction.activity.active(a.name)
            else None
            for a in stmt.args
        ]
        template: Rule | TangentTemplate = stmt.rule
        if self.fn.array_mode:
            template = array_tangent_template(stmt.rule)
            mapping.update(self._array_mapping(stmt, template))
            if stmt.rule.variadic:
                return self._variadic_tangent(stmt, direction, template, mapping, tangents)
        setup, total = tangent_of(template, mapping, tangents, self.names.fresh)
        if stmt.statics:
            total = fold_static_tests(total)
            total = drop_default_keywords(total, dict(stmt.rule.statics))
            setup = [(name, fold_static_tests(value)) for name, value in setup]
        if self.fn.array_mode and self._may_be_smaller(stmt, template, tangents):
            total = ast.Call(
                func=ast.Name(id=self.fn.helper("broadcast_like"), ctx=ast.Load()),
                args=[total, ast.Name(id=stmt.target, ctx=ast.Load())],
                keywords=[],
            )
        out = [assign(name, value, stmt.line, TANGENT) for name, value in setup]
        out.append(assign(direction.tangent(stmt.target), total, stmt.line, TANGENT))
        return out

    def _may_be_smaller(
        self, stmt: Apply, template: Rule | TangentTemplate, tangents: list[ast.expr | None]
    ) -> bool:
        """True if an elementwise tangent may lack the result's shape.

        An elementwise term has its argument's shape, which broadcasting may have stretched
        (``a + b`` with ``a`` of shape (3, 1) and ``b`` (1, 4)); the sum of all terms has the
        result's shape, but with a constant argument left out it may not. Shape facts spare
        the spreading where the varying arguments surely have the result's shape.
        """
        if stmt.rule.primal not in _elementwise_primitives():
            return False
        terms = list(zip(stmt.args, tangents, template.parsed[1], strict=True))
        varying = [a for a, tangent, term in terms if tangent is not None and term is not None]
        missing = [a for a, tangent, term in terms if tangent is None and term is not None]
        if all(self.shapes.is_scalar(a) for a in missing):  # a scalar stretches nothing
            return False
        return not all(self.shapes.same_shape(a, stmt.target) for a in varying)

    def _array_mapping(self, stmt: Apply, template: Rule | TangentTemplate) -> dict:
        """NumPy's alias, the static arguments and the helpers an array template reads."""
        mapping: dict[str, ast.expr] = {"np": ast.Name(id=self.fn.numpy_alias, ctx=ast.Load())}
        mapping.update(stmt.statics)
        for helper in helpers_in(template.parsed):
            mapping[helper] = ast.Name(id=self.fn.helper(helper), ctx=ast.Load())
        return mapping

    def _variadic_tangent(
        self,
        stmt: Apply,
        direction: Direction,
        template: Rule | TangentTemplate,
        mapping: dict[str, ast.expr],
        tangents: list[ast.expr | None],
    ) -> list[ast.stmt]:
        """``np.concatenate([a, b])``: the same call on the elements' tangents."""
        elements = [
            tangent
            if tangent is not None
            else (
                _zeros_like(self.fn, atom_expr(atom))
                if not isinstance(atom, Const)  # a variable, or the module's data array
                else ast.Constant(value=0.0)
            )
            for tangent, atom in zip(tangents, stmt.args, strict=True)
        ]
        mapping["g"] = ast.List(elts=elements, ctx=ast.Load())
        total = fold_static_tests(substitute(template.parsed[1][0], mapping))
        return [assign(direction.tangent(stmt.target), total, stmt.line, TANGENT)]


@dataclass(frozen=True)
class TangentTemplate:
    """A tangent template made from a reverse one (its ``unbroadcast`` calls left out)."""

    parsed: tuple[list[ast.stmt], list[ast.expr | None]]
    variadic: bool = False


@functools.lru_cache(maxsize=256)
def array_tangent_template(rule: Rule) -> Rule | TangentTemplate:
    """The tangent template of an array-mode rule.

    Non-elementwise primitives have their own (``rules/arrays.py``); an elementwise one's
    tangent is its reverse template with ``unbroadcast(e, x)`` read as ``e``: broadcasting
    applies to tangents as it does to values, so nothing is summed back.
    """
    from .rules.arrays import ELEMENTWISE
    from .rules.registry import ARRAY_RULES, TANGENT_RULES

    explicit = TANGENT_RULES.lookup(rule.primal, rule.arity)
    if explicit is not None:
        return explicit
    if ARRAY_RULES.lookup(rule.primal, rule.arity) is rule and rule.primal not in ELEMENTWISE:
        raise NotImplementedError(f"the array rule {rule.name} has no tangent template")
    setup, adjoints = rule.parsed
    stripped = [None if e is None else _without_unbroadcast(e) for e in adjoints]
    return TangentTemplate((setup, stripped), rule.variadic)


def _elementwise_primitives() -> frozenset[object]:
    from .rules.arrays import ELEMENTWISE

    return ELEMENTWISE


def _without_unbroadcast(expr: ast.expr) -> ast.expr:
    """``expr`` with every ``unbroadcast(e, x)`` replaced by ``e``."""
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id == "unbroadcast"
    ):
        return _without_unbroadcast(expr.args[0])
    expr = clone(expr)
    map_children(expr, _without_unbroadcast)
    return expr


def tangent_of(
    rule: Rule | TangentTemplate,
    mapping: dict[str, ast.expr],
    tangents: list[ast.expr | None],
    fresh: Callable[[str], str],
) -> tuple[list[tuple[str, ast.expr]], ast.expr]:
    """A rule's tangent: the setup assignments it needs and the tangent expression.

    ``mapping`` gives the template's parameters, ``result`` and ``math``; ``tangents`` the
    tangent of each argument (None for a constant one); ``fresh`` names setup locals.
    """
    setup, adjoints = rule.parsed
    assignments: list[tuple[str, ast.expr]] = []
    terms: list[ast.expr] = []
    for tangent, template in zip(tangents, adjoints, strict=True):
        if tangent is None or template is None:
            continue
        local = {**mapping, "g": tangent}
        assignments += _setup(setup, template, local, fresh)
        terms.append(substitute(template, local))
    total = terms[0] if terms else ast.Constant(value=0.0)
    for term in terms[1:]:
        total = ast.BinOp(left=total, op=ast.Add(), right=term)
    return assignments, total


def _setup(
    setup: list[ast.stmt], used: ast.expr, mapping: dict[str, ast.expr], fresh: Callable[[str], str]
) -> list[tuple[str, ast.expr]]:
    """The template's local assignments that ``used`` reads, under fresh names."""
    needed = set(names_in(used))
    kept = []
    for stmt in reversed(setup):
        if stmt.targets[0].id in needed:
            needed |= set(names_in(stmt.value))
            kept.append(stmt)
    out = []
    for stmt in reversed(kept):
        name = fresh(stmt.targets[0].id)
        out.append((name, substitute(stmt.value, mapping)))
        mapping[stmt.targets[0].id] = ast.Name(id=name, ctx=ast.Load())
    return out


def rule_tangent_function(rule: Rule) -> Callable[..., float]:
    """The rule's tangent as a plain function ``(*args, result, *tangents) -> tangent``.

    Built by ``tangent_of``, exactly as generated code inlines it (for testing the rules).
    """
    params = list(rule.params[: rule.arity])
    tangent_params = [f"tangent_{p}" for p in params]
    mapping: dict[str, ast.expr] = {p: ast.Name(id=p, ctx=ast.Load()) for p in params}
    mapping["result"] = ast.Name(id="result", ctx=ast.Load())
    mapping["math"] = ast.Name(id="math", ctx=ast.Load())
    tangents: list[ast.expr | None] = [ast.Name(id=t, ctx=ast.Load()) for t in tangent_params]
    counter = iter(range(10**6))
    setup, total = tangent_of(rule, mapping, tangents, lambda base: f"{base}_{next(counter)}")
    lines = [f"{name} = {ast.unparse(value)}" for name, value in setup]
    lines.append(f"return {ast.unparse(total)}")
    body = "\n    ".join(lines)
    text = f"def tangent({', '.join([*params, 'result', *tangent_params])}):\n    {body}\n"
    namespace: dict[str, object] = {"math": math}
    exec(compile(text, f"<tangent of {rule.name}>", "exec"), namespace)
    return namespace["tangent"]  # type: ignore[return-value]


@dataclass
class TangentBody:
    """The statements of a generated tangent function, what it returns, and its parameters."""

    statements: list[ast.stmt]
    returns: ast.expr
    tangent_params: list[str]
    tangent_temporaries: set[str]


def build_jvp(fn: CoreFunction, wrt: list[str]) -> TangentBody:
    """A Jacobian-vector product: tangents of ``wrt`` come in as parameters.

    The function returns ``(value, tangent of the value)``.
    """
    names = _names(fn)
    prefix = names.prefix_free(TANGENT_PREFIXES)
    direction = Direction(analyze_activity(fn, wrt), lambda var: _reserved(names, prefix + var))
    sweep = TangentSweep(fn, [direction], names)
    statements = sweep.block(fn.body)
    params = [direction.tangent(p) for p in wrt]
    tangents = [_tangent_or_zero(fn, direction, out) for out in fn.output_names()]
    out_tangent = tangents[0] if fn.outputs is None else ast.Tuple(elts=tangents, ctx=ast.Load())
    returns = ast.Tuple(elts=[output_value(fn), out_tangent], ctx=ast.Load())
    return TangentBody(statements, returns, params, _temporary_tangents(fn, [direction]))


def build_forward_gradient(
    fn: CoreFunction, wrt: list[str], *, with_value: bool = False, bare: bool = False
) -> TangentBody:
    """All partials of a scalar function in one forward pass, one direction per parameter.

    The tangent of ``v`` along parameter ``x`` is named ``dv_dx``; each direction starts
    from ``dx_dx = 1.0``.
    """
    names = _names(fn)
    directions = []
    seeds: list[ast.stmt] = []
    for param in wrt:
        direction = Direction(
            analyze_activity(fn, [param]),
            lambda var, param=param: names.fresh(f"d{var}_d{param}"),
        )
        directions.append(direction)
        if direction.activity.active(param):
            one = ast.Constant(value=1.0)
            seeds.append(assign(direction.tangent(param), one, fn.def_line, TANGENT))
    statements = seeds + TangentSweep(fn, directions, names).block(fn.body)
    partials = [_tangent_or_zero(fn, d, fn.output) for d in directions]
    grads = partials[0] if bare else ast.Tuple(elts=partials, ctx=ast.Load())
    if with_value:
        grads = ast.Tuple(elts=[ast.Name(id=fn.output, ctx=ast.Load()), grads], ctx=ast.Load())
    return TangentBody(statements, grads, [], _temporary_tangents(fn, directions))


def _names(fn: CoreFunction) -> NameTable:
    return fn.names if fn.names is not None else NameTable(fn.params)


def _reserved(names: NameTable, name: str) -> str:
    names.reserve(name)
    return name


def _tangent_or_zero(fn: CoreFunction, direction: Direction, var: str) -> ast.expr:
    if direction.activity.active(var):
        return ast.Name(id=direction.tangent(var), ctx=ast.Load())
    if fn.array_mode:  # a constant output: zeros of its shape (a dict: of each leaf), as JAX
        empty = ast.Dict(keys=[], values=[])
        return ast.Call(
            func=ast.Name(id=fn.helper("gradient_like"), ctx=ast.Load()),
            args=[ast.Name(id=var, ctx=ast.Load()), empty],
            keywords=[],
        )
    return ast.Constant(value=0.0)


def _zeros_like(fn: CoreFunction, value: ast.expr) -> ast.expr:
    """``np.zeros_like(value)`` under the module's NumPy alias."""
    zeros = ast.Attribute(value=ast.Name(id=fn.numpy_alias, ctx=ast.Load()), attr="zeros_like")
    return ast.Call(func=zeros, args=[value], keywords=[])


def _temporary_tangents(fn: CoreFunction, directions: list[Direction]) -> set[str]:
    return {d.names[t] for d in directions for t in fn.temporaries if t in d.names}
