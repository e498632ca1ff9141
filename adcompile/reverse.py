"""The reverse-mode transform: the forward sweep, then the adjoint sweep, as Python AST.

Each adjoint statement is a rule template with its parameters replaced by the primal's operands,
its result and the incoming adjoint. Every emitted statement is tagged with the primal line it
comes from (``stmt.adcompile_line``) and its sweep (``stmt.adcompile_sweep``), so the renderer
can place one comment per block.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .astutil import clone, names_in, substitute
from .ir import (
    Apply,
    Atom,
    Copy,
    CoreFunction,
    If,
    Opaque,
    Return,
    Stmt,
    Var,
    atom_expr,
    fill_placeholders,
)
from .names import ADJOINT_PREFIXES, NameTable

FORWARD = "forward"
ADJOINT = "adjoint"


# ----- activity analysis -----------------------------------------------------------------
@dataclass
class Activity:
    """Which values depend on a requested input (varied) and reach the output (useful)."""

    varied: set[str] = field(default_factory=set)
    useful: set[str] = field(default_factory=set)

    def active(self, name: str) -> bool:
        """True if ``name`` needs an adjoint."""
        return name in self.varied and name in self.useful


def analyze_activity(fn: CoreFunction, wrt: list[str]) -> Activity:
    """Find the active values; raise the stored error of an opaque value a derivative needs."""
    activity = Activity(varied=set(wrt), useful={fn.output})
    _mark_varied(fn.body, activity.varied)
    _mark_useful(fn.body, activity)
    return activity


def _mark_varied(block: list[Stmt], varied: set[str]) -> None:
    for stmt in block:
        if isinstance(stmt, Apply):
            skip = stmt.rule.nondifferentiable_args
            if any(i not in skip and _is_in(a, varied) for i, a in enumerate(stmt.args)):
                varied.add(stmt.target)
        elif isinstance(stmt, Copy):
            if _is_in(stmt.source, varied):
                varied.add(stmt.target)
        elif isinstance(stmt, Opaque):
            # Comparisons are piecewise constant; anything else taints its result.
            if stmt.no_rule is not None and stmt.reads & varied:
                varied.add(stmt.target)
        elif isinstance(stmt, If):
            _mark_varied(stmt.body, varied)
            _mark_varied(stmt.orelse, varied)


def _mark_useful(block: list[Stmt], activity: Activity) -> None:
    useful = activity.useful
    for stmt in reversed(block):
        if isinstance(stmt, Apply) and stmt.target in useful:
            useful.update(a.name for a in stmt.args if isinstance(a, Var))
        elif isinstance(stmt, Copy) and stmt.target in useful:
            if isinstance(stmt.source, Var):
                useful.add(stmt.source.name)
        elif isinstance(stmt, Opaque) and stmt.target in useful:
            if stmt.target in activity.varied:
                raise stmt.no_rule
        elif isinstance(stmt, If):
            _mark_useful(stmt.body, activity)
            _mark_useful(stmt.orelse, activity)


def _is_in(atom: Atom, names: set[str]) -> bool:
    return isinstance(atom, Var) and atom.name in names


def assigned_in(block: list[Stmt]) -> set[str]:
    """Every name a block assigns, nested blocks included."""
    found: set[str] = set()
    for stmt in block:
        if isinstance(stmt, If):
            found |= assigned_in(stmt.body) | assigned_in(stmt.orelse)
        elif not isinstance(stmt, Return):
            found.add(stmt.target)
    return found


# ----- helpers to build tagged statements ------------------------------------------------
def _name(name: str, store: bool = False) -> ast.Name:
    return ast.Name(id=name, ctx=ast.Store() if store else ast.Load())


def tag(stmt: ast.stmt, line: int, sweep: str) -> ast.stmt:
    """Record the primal line and the sweep a generated statement belongs to."""
    stmt.adcompile_line = line
    stmt.adcompile_sweep = sweep
    return stmt


def assign(target: str, value: ast.expr, line: int, sweep: str) -> ast.stmt:
    """A tagged ``target = value``."""
    return tag(ast.Assign(targets=[_name(target, True)], value=value, lineno=line), line, sweep)


# ----- forward sweep ---------------------------------------------------------------------
def forward_sweep(block: list[Stmt]) -> list[ast.stmt]:
    """The primal computation in core form, as Python statements."""
    out: list[ast.stmt] = []
    for stmt in block:
        if isinstance(stmt, Apply):
            value = fill_placeholders(stmt.render, [atom_expr(a) for a in stmt.args])
            out.append(assign(stmt.target, value, stmt.line, FORWARD))
        elif isinstance(stmt, Copy):
            out.append(assign(stmt.target, atom_expr(stmt.source), stmt.line, FORWARD))
        elif isinstance(stmt, Opaque):
            out.append(assign(stmt.target, clone(stmt.expr), stmt.line, FORWARD))
        elif isinstance(stmt, If):
            node = ast.If(
                test=_name(stmt.cond),
                body=forward_sweep(stmt.body),
                orelse=forward_sweep(stmt.orelse),
            )
            out.append(tag(node, stmt.line, FORWARD))
    return out


# ----- adjoint sweep ---------------------------------------------------------------------
class AdjointSweep:
    """Builds the reverse sweep of a core function, one rule template per primitive."""

    def __init__(self, fn: CoreFunction, activity: Activity, names: NameTable) -> None:
        self.fn = fn
        self.activity = activity
        self.names = names
        self.prefix = names.prefix_free(ADJOINT_PREFIXES)
        self.adjoints: dict[str, str] = {}

    def adjoint(self, var: str) -> str:
        """The name of the adjoint of ``var`` (``b_x`` for ``x``)."""
        if var not in self.adjoints:
            name = self.prefix + var
            self.names.reserve(name)
            self.adjoints[var] = name
        return self.adjoints[var]

    def block(self, block: list[Stmt], defined: set[str]) -> list[ast.stmt]:
        """The adjoint statements of a block, last primal statement first."""
        out: list[ast.stmt] = []
        for stmt in reversed(block):
            if isinstance(stmt, Apply):
                out += self._apply(stmt, defined)
            elif isinstance(stmt, Copy):
                out += self._copy(stmt, defined)
            elif isinstance(stmt, If):
                out += self._if(stmt, defined)
        return out

    def _accumulate(self, var: str, value: ast.expr, line: int, defined: set[str]) -> ast.stmt:
        # The first contribution assigns; later ones add. No zero-initialised accumulators.
        name = self.adjoint(var)
        if name in defined:
            node = ast.AugAssign(target=_name(name, True), op=ast.Add(), value=value)
            return tag(node, line, ADJOINT)
        defined.add(name)
        return assign(name, value, line, ADJOINT)

    def _incoming(self, target: str, defined: set[str]) -> str | None:
        if not self.activity.active(target):
            return None
        name = self.adjoint(target)
        return name if name in defined else None

    def _copy(self, stmt: Copy, defined: set[str]) -> list[ast.stmt]:
        g = self._incoming(stmt.target, defined)
        source = stmt.source
        if g is None or not isinstance(source, Var) or not self.activity.active(source.name):
            return []
        return [self._accumulate(source.name, _name(g), stmt.line, defined)]

    def _apply(self, stmt: Apply, defined: set[str]) -> list[ast.stmt]:
        g = self._incoming(stmt.target, defined)
        if g is None:
            return []
        setup, adjoints = stmt.rule.parsed
        wanted = [
            (atom.name, expr)
            for atom, expr in zip(stmt.args, adjoints, strict=True)
            if expr is not None and isinstance(atom, Var) and self.activity.active(atom.name)
        ]
        if not wanted:
            return []
        mapping = self._template_mapping(stmt, g)
        out = self._template_setup(setup, [e for _, e in wanted], mapping, stmt.line)
        for var, expr in wanted:
            value = substitute(expr, mapping)
            out.append(self._accumulate(var, value, stmt.line, defined))
        return out

    def _template_mapping(self, stmt: Apply, g: str) -> dict[str, ast.expr]:
        params = stmt.rule.params
        mapping = {p: atom_expr(a) for p, a in zip(params, stmt.args, strict=False)}
        mapping["result"] = _name(stmt.target)
        mapping["g"] = _name(g)
        mapping["math"] = _name(self.fn.math_alias)
        return mapping

    def _template_setup(
        self, setup: list[ast.stmt], used: list[ast.expr], mapping: dict[str, ast.expr], line: int
    ) -> list[ast.stmt]:
        """Emit the template's local assignments that the wanted adjoints read."""
        needed = {name for e in used for name in names_in(e)}
        kept = []
        for stmt in reversed(setup):
            local = stmt.targets[0].id
            if local in needed:
                needed |= set(names_in(stmt.value))
                kept.append(stmt)
        out = []
        for stmt in reversed(kept):
            local = stmt.targets[0].id
            value = substitute(stmt.value, mapping)
            fresh = self.names.fresh(local)
            mapping[local] = _name(fresh)
            out.append(assign(fresh, value, line, ADJOINT))
        return out

    def _if(self, stmt: If, defined: set[str]) -> list[ast.stmt]:
        in_body, in_orelse = set(defined), set(defined)
        body = self.block(stmt.body, in_body)
        orelse = self.block(stmt.orelse, in_orelse)
        # An adjoint that one branch starts and the code after the `if` reads must exist on
        # both paths: the other branch sets it to zero.
        inside = {self.adjoints.get(v) for v in assigned_in([stmt])}
        started = (in_body | in_orelse) - defined - inside
        for name in sorted(started - in_body):
            body.append(assign(name, ast.Constant(value=0.0), stmt.line, ADJOINT))
        for name in sorted(started - in_orelse):
            orelse.append(assign(name, ast.Constant(value=0.0), stmt.line, ADJOINT))
        defined |= started
        if not body and not orelse:
            return []
        test: ast.expr = _name(stmt.cond)
        if not body:
            test, body, orelse = ast.UnaryOp(op=ast.Not(), operand=test), orelse, []
        return [tag(ast.If(test=test, body=body, orelse=orelse), stmt.line, ADJOINT)]


@dataclass
class GradientBody:
    """The statements of a generated gradient function and the names it returns."""

    statements: list[ast.stmt]
    returns: ast.expr
    temporary_adjoints: set[str]


def build_gradient(
    fn: CoreFunction, wrt: list[str], *, with_value: bool = False, bare: bool = False
) -> GradientBody:
    """Forward sweep, seed, adjoint sweep and the return of the requested partials."""
    names = fn.names if fn.names is not None else NameTable(fn.params)
    activity = analyze_activity(fn, wrt)
    sweep = AdjointSweep(fn, activity, names)
    statements = forward_sweep(fn.body)
    defined: set[str] = set()
    if activity.active(fn.output):
        seed = sweep.adjoint(fn.output)
        defined.add(seed)
        statements.append(assign(seed, ast.Constant(value=1.0), _return_line(fn), ADJOINT))
    statements += sweep.block(fn.body, defined)
    partials = [
        _name(sweep.adjoint(p)) if sweep.adjoint(p) in defined else ast.Constant(value=0.0)
        for p in wrt
    ]
    grads = partials[0] if bare else ast.Tuple(elts=partials, ctx=ast.Load())
    if with_value:
        grads = ast.Tuple(elts=[_name(fn.output), grads], ctx=ast.Load())
    temp_adjoints = {sweep.adjoints[t] for t in fn.temporaries if t in sweep.adjoints}
    return GradientBody(statements, grads, temp_adjoints)


def _return_line(fn: CoreFunction) -> int:
    last = fn.body[-1]
    return last.line if isinstance(last, Return) else 0
