"""The reverse-mode transform: the forward sweep, then the adjoint sweep, as Python AST.

Each adjoint statement is a rule template with its parameters replaced by the primal's operands,
its result and the incoming adjoint. Every emitted statement is tagged with the primal line it
comes from (``stmt.adcompile_line``) and its sweep (``stmt.adcompile_sweep``), so the renderer
can place one comment per block.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from .array_adjoints import KnownShapes, array_partial, helpers_in, scalar_output_check
from .astutil import LOAD, STORE, call, clone, loads_in, names_in, substitute
from .ir import (
    ARG_PLACEHOLDER,
    Apply,
    Atom,
    Copy,
    CoreFunction,
    If,
    Loop,
    Opaque,
    Return,
    Stmt,
    Var,
    assignment_counts,
    atom_expr,
    fill_placeholders,
)
from .names import ADJOINT_PREFIXES, NameTable
from .overlay import SetOverlay
from .rules import Rule
from .rules.registry import is_users_rule
from .shapes import shape_facts
from .statics import drop_default_keywords, fold_static_tests
from .unbound import unbound_message

FORWARD = "forward"
ADJOINT = "adjoint"
TANGENT = "tangent"  # forward mode: a tangent statement, shown with its primal line

# Tuples for isinstance, as astutil.BLOCK_STATEMENTS explains.
_NAME_CONST = (ast.Name, ast.Constant)


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
    leaves = {stand_in for p in wrt for _, stand_in in fn.leaves.get(p, [])}
    activity = Activity(varied=set(wrt) | leaves, useful=set(fn.output_names()))
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
        elif isinstance(stmt, Loop):
            body = [*stmt.body, *stmt.back_edges]
            _to_fixpoint(varied, lambda body=body: _mark_varied(body, varied))


def _to_fixpoint(grown: set[str], step: Callable[[], None]) -> None:
    """Repeat ``step`` until it adds nothing to ``grown`` (values flow around loops)."""
    while True:
        size = len(grown)
        step()
        if len(grown) == size:
            return


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
        elif isinstance(stmt, Loop):
            body = [*stmt.body, *stmt.back_edges]
            _to_fixpoint(useful, lambda body=body: _mark_useful(body, activity))


def _is_in(atom: Atom, names: set[str]) -> bool:
    return isinstance(atom, Var) and atom.name in names


def assigned_in(block: list[Stmt]) -> set[str]:
    """Every name a block assigns, nested blocks included."""
    found: set[str] = set()
    for stmt in block:
        if isinstance(stmt, If):
            found |= assigned_in(stmt.body) | assigned_in(stmt.orelse)
        elif isinstance(stmt, Loop):
            found |= assigned_in(stmt.body) | set(stmt.headers) | _loop_scalars(stmt)
        elif not isinstance(stmt, Return):
            found.add(stmt.target)
    return found


def _cheap(expr: ast.expr) -> bool:
    """A name, a literal or a negated name: free to repeat instead of storing it."""
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        expr = expr.operand
    return isinstance(expr, _NAME_CONST)


def _sole_applications(block: list[Stmt]) -> dict[str, Apply]:
    """Applications whose target nothing else assigns (not the two arms of an ``if``)."""
    counts = assignment_counts(block)
    return {name: stmt for name, stmt in _applications(block).items() if counts[name] == 1}


def _applications(block: list[Stmt]) -> dict[str, Apply]:
    found: dict[str, Apply] = {}
    for stmt in block:
        if isinstance(stmt, If):
            found.update(_applications(stmt.body))
            found.update(_applications(stmt.orelse))
        elif isinstance(stmt, Loop):
            found.update(_applications(stmt.body))
        elif isinstance(stmt, Apply):
            found[stmt.target] = stmt
    return found


def _operand_names(stmt: Apply) -> list[str]:
    """The variables a primitive reads: its operands, and the names in its static arguments
    (the ``k`` of ``X[k]`` when ``X`` is not differentiated, an ``axis=`` computed in a loop),
    which a recomputation reads just the same."""
    names = [a.name for a in stmt.args if isinstance(a, Var)]
    placeholders = {ARG_PLACEHOLDER.format(i) for i in range(len(stmt.args))}
    return names + [n for n in names_in(stmt.render) if n not in placeholders]


def _loop_scalars(loop: Loop) -> set[str]:
    return {n for n in (loop.index, loop.counter) if n}


_ASSIGNING = (Apply, Copy, Opaque)


def assigned_directly(block: list[Stmt]) -> set[str]:
    """Names a block assigns itself, or through a loop it contains (not through an ``if``)."""
    found: set[str] = set()
    for stmt in block:
        if isinstance(stmt, Loop):
            found |= set(stmt.headers) | _loop_scalars(stmt)
        elif isinstance(stmt, _ASSIGNING):
            found.add(stmt.target)
    return found


def operands_in(block: list[Stmt]) -> set[str]:
    """Variables read as operands of differentiable statements in a block (nested included)."""
    found: set[str] = set()
    for stmt in block:
        if isinstance(stmt, Apply):
            found.update(a.name for a in stmt.args if isinstance(a, Var))
        elif isinstance(stmt, Copy) and isinstance(stmt.source, Var):
            found.add(stmt.source.name)
        elif isinstance(stmt, If):
            found |= operands_in(stmt.body) | operands_in(stmt.orelse)
        elif isinstance(stmt, Loop):
            found |= operands_in(stmt.body) | operands_in(stmt.back_edges)
    return found


# ----- helpers to build tagged statements ------------------------------------------------
def _name(name: str, store: bool = False) -> ast.Name:
    return ast.Name(name, STORE if store else LOAD)


def tag(stmt: ast.stmt, line: int, sweep: str) -> ast.stmt:
    """Record the primal line and the sweep a generated statement belongs to."""
    stmt.adcompile_line = line
    stmt.adcompile_sweep = sweep
    return stmt


def assign(target: str, value: ast.expr, line: int, sweep: str) -> ast.stmt:
    """A tagged ``target = value``."""
    node = ast.Assign([_name(target, True)], value)  # positional: see astutil.LOAD
    node.lineno = line
    return tag(node, line, sweep)


def opaque_statement(stmt: Opaque, sweep: str) -> ast.stmt:
    """``target = expr`` for a value without derivative; a bare call for an effect."""
    if stmt.unbound is not None:
        error = ast.Call(
            func=ast.Name(id="UnboundLocalError", ctx=ast.Load()),
            args=[ast.Constant(value=unbound_message(stmt.unbound))],
            keywords=[],
        )
        check = ast.If(test=clone(stmt.expr), body=[ast.Raise(exc=error, cause=None)], orelse=[])
        return tag(check, stmt.line, sweep)
    if stmt.effect:
        return tag(ast.Expr(value=clone(stmt.expr)), stmt.line, sweep)
    return assign(stmt.target, clone(stmt.expr), stmt.line, sweep)


# ----- forward sweep ---------------------------------------------------------------------
def forward_sweep(block: list[Stmt], records: Records | None = None) -> list[ast.stmt]:
    """The primal computation in core form, as Python statements.

    ``records`` says which blocks push which values on which stack (loops only).
    """
    records = records if records is not None else Records()
    out: list[ast.stmt] = []
    for stmt in block:
        if isinstance(stmt, Apply) and stmt.forward:
            out += forward_sweep(stmt.forward, records)
        elif isinstance(stmt, Apply):
            out.append(assign(stmt.target, stmt.primal_expr(), stmt.line, FORWARD))
        elif isinstance(stmt, Copy):
            value = clone(stmt.render) if stmt.render is not None else atom_expr(stmt.source)
            out.append(assign(stmt.target, value, stmt.line, FORWARD))
        elif isinstance(stmt, Opaque):
            out.append(opaque_statement(stmt, FORWARD))
        elif isinstance(stmt, If):
            body = forward_sweep(stmt.body, records) + records.push(stmt.body, stmt.line)
            orelse = forward_sweep(stmt.orelse, records) + records.push(stmt.orelse, stmt.line)
            node = ast.If(test=_name(stmt.cond), body=body or [ast.Pass()], orelse=orelse)
            out.append(tag(node, stmt.line, FORWARD))
        elif isinstance(stmt, Loop):
            out += forward_loop(stmt, records)
    return out


def forward_loop(loop: Loop, records: Records) -> list[ast.stmt]:
    """A loop of the forward sweep: body, recorded values, back edges, count, exit test."""
    line = loop.line
    body = forward_sweep(loop.body, records) + records.push(loop.body, line)
    body += [assign(c.target, atom_expr(c.source), line, FORWARD) for c in loop.back_edges]
    return loop_statement(loop, body)


def loop_statement(loop: Loop, body: list[ast.stmt]) -> list[ast.stmt]:
    """The ``for``/``while`` statement around a forward body: count and exit test added."""
    line = loop.line
    out = []
    if loop.counter:
        out.append(assign(loop.counter, ast.Constant(value=0), line, FORWARD))
        one = ast.Constant(value=1)
        increment = ast.AugAssign(target=_name(loop.counter, True), op=ast.Add(), value=one)
        body.append(tag(increment, line, FORWARD))
    if loop.exit_when is not None:
        exit_test = ast.If(test=clone(loop.exit_when), body=[ast.Break()], orelse=[])
        body.append(tag(exit_test, line, FORWARD))
    body = body or [ast.Pass()]
    if loop.test is not None:
        node = ast.While(test=clone(loop.test), body=body, orelse=[])
    else:
        target = _name(loop.index, True)
        node = ast.For(target=target, iter=_range(loop.bounds), body=body, orelse=[])
    out.append(tag(node, line, FORWARD))
    return out


def _range(bounds: list[Atom]) -> ast.expr:
    return ast.Call(func=_name("range"), args=[atom_expr(b) for b in bounds], keywords=[])


def _method_call(obj: str, method: str, args: list[ast.expr]) -> ast.expr:
    func = ast.Attribute(value=_name(obj), attr=method, ctx=ast.Load())
    return ast.Call(func=func, args=args, keywords=[])


@dataclass
class Records:
    """The values each block inside a loop records for the reverse sweep, and on which stack."""

    saved: dict[int, tuple[str, list[str]]] = field(default_factory=dict)
    stacks: list[tuple[str, int]] = field(default_factory=list)

    def push(self, block: list[Stmt], line: int) -> list[ast.stmt]:
        """``stack.append(values)`` at the end of a block that records something."""
        if id(block) not in self.saved:
            return []
        stack, names = self.saved[id(block)]
        call = _method_call(stack, "append", [_pack(names)])
        return [tag(ast.Expr(value=call), line, FORWARD)]

    def pop(self, block: list[Stmt], line: int) -> list[ast.stmt]:
        """``values = stack.pop()``, restoring what ``push`` recorded for this block."""
        if id(block) not in self.saved:
            return []
        stack, names = self.saved[id(block)]
        target = _pack(names, store=True)
        value = _method_call(stack, "pop", [])
        return [tag(ast.Assign(targets=[target], value=value, lineno=line), line, ADJOINT)]


def _pack(names: list[str], store: bool = False) -> ast.expr:
    if len(names) == 1:
        return _name(names[0], store)
    elts = [_name(n, store) for n in names]
    return ast.Tuple(elts=elts, ctx=ast.Store() if store else ast.Load())


# ----- adjoint sweep ---------------------------------------------------------------------
class AdjointSweep:
    """Builds the reverse sweep of a core function, one rule template per primitive."""

    def __init__(self, fn: CoreFunction, activity: Activity, names: NameTable) -> None:
        self.fn = fn
        self.activity = activity
        self.names = names
        self.prefix = names.prefix_free(ADJOINT_PREFIXES)
        self.adjoints: dict[str, str] = {}
        self.records = Records()
        self.depth = 0  # how many loops enclose the statement being reversed
        self.definitions = _sole_applications(fn.body)
        self.pending: dict[str, ast.expr] = {}  # adjoints of temporaries, not yet stored
        self.shapes = KnownShapes(fn, shape_facts(fn)) if fn.array_mode else None

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
            elif isinstance(stmt, Loop):
                out += self._loop(stmt, defined)
        return out

    def _contribute(
        self, var: str, value: ast.expr, line: int, defined: set[str]
    ) -> list[ast.stmt]:
        """Add ``value`` to the adjoint of ``var``, or hand it on to ``var``'s own rule.

        A temporary has exactly one use, so its adjoint is this one value; when its defining
        rule reads ``g`` once, the value is substituted there instead of being stored.
        """
        definition = self.definitions.get(var)
        if (
            var in self.fn.temporaries
            and definition is not None
            and (_cheap(value) or self._g_uses(definition) == 1)
        ):
            self.pending[var] = value
            defined.add(self.adjoint(var))
            return []
        return [self._accumulate(var, value, line, defined)]

    def _wanted(self, stmt: Apply) -> list[tuple[str, ast.expr]]:
        """The (operand, adjoint template) pairs of an application that need an adjoint."""
        return [
            (atom.name, expr)
            for atom, expr in zip(stmt.args, stmt.rule.parsed[1], strict=True)
            if expr is not None and isinstance(atom, Var) and self.activity.active(atom.name)
        ]

    def _g_uses(self, stmt: Apply) -> int:
        if stmt.rule.variadic:  # its adjoints are stored once, then indexed
            return _g_count(stmt.rule, (0,))
        wanted = tuple(
            i
            for i, (atom, expr) in enumerate(zip(stmt.args, stmt.rule.parsed[1], strict=True))
            if expr is not None and isinstance(atom, Var) and self.activity.active(atom.name)
        )
        return _g_count(stmt.rule, wanted)

    def _accumulate(self, var: str, value: ast.expr, line: int, defined: set[str]) -> ast.stmt:
        # The first contribution assigns; later ones add. No zero-initialised accumulators.
        name = self.adjoint(var)
        if name in defined:
            node = ast.AugAssign(_name(name, True), ast.Add(), value)
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
        setup = stmt.rule.parsed[0]
        incoming = self.pending.pop(stmt.target, None)
        if stmt.rule.variadic:
            return self._variadic(stmt, g, incoming, defined)
        wanted = self._wanted(stmt)
        if not wanted:
            return []
        mapping = self._template_mapping(stmt, g)
        if incoming is not None:
            mapping["g"] = incoming
        out = self._template_setup(setup, [e for _, e in wanted], mapping, stmt.line)
        defaults = dict(stmt.rule.statics)
        if stmt.statics:  # `spread = result if axis is None else ...` with axis given
            for assignment in out:
                assignment.value = drop_default_keywords(
                    fold_static_tests(assignment.value), defaults
                )
        for var, expr in wanted:
            value = substitute(expr, mapping)
            if stmt.statics:  # as in forward mode: `optimize=False` passed on is left out
                value = drop_default_keywords(fold_static_tests(value), defaults)
            if self.shapes is not None:
                value = self.shapes.refine(value, stmt)
            if self.fn.array_mode and is_users_rule(stmt.rule):
                value = self._checked_rule_adjoint(value, var, stmt, out)
            out += self._contribute(var, value, stmt.line, defined)
        return out

    def _checked_rule_adjoint(
        self, value: ast.expr, var: str, stmt: Apply, out: list[ast.stmt]
    ) -> ast.expr:
        """A user rule's adjoint for ``var``, named, after a check that it has ``var``'s
        shape: the final ``unbroadcast`` would stretch a scalar over ``var`` silently."""
        part = self.names.fresh(f"{self.prefix}{var}_part")
        out.append(assign(part, value, stmt.line, ADJOINT))
        rule = ast.Constant(value=stmt.rule.name)
        check = call(self.fn.helper("check_rule_adjoint"), _name(part), _name(var), rule)
        out.append(tag(ast.Expr(value=check), stmt.line, ADJOINT))
        return _name(part)

    def _variadic(
        self, stmt: Apply, g: str, incoming: ast.expr | None, defined: set[str]
    ) -> list[ast.stmt]:
        """``np.concatenate([a, b])``: store the list of adjoints once, then hand out items."""
        wanted = [
            (i, atom.name)
            for i, atom in enumerate(stmt.args)
            if isinstance(atom, Var) and self.activity.active(atom.name)
        ]
        if not wanted:
            return []
        mapping = self._template_mapping(stmt, g)
        if incoming is not None:
            mapping["g"] = incoming
        listed = ast.Tuple(elts=[atom_expr(a) for a in stmt.args], ctx=ast.Load())
        mapping[stmt.rule.params[0]] = listed  # the template's list parameter (``arrays``)
        parts = self.names.fresh(f"{self.prefix}parts")
        value = fold_static_tests(substitute(stmt.rule.parsed[1][0], mapping))
        out = [assign(parts, value, stmt.line, ADJOINT)]
        for i, var in wanted:
            item = ast.Subscript(value=_name(parts), slice=ast.Constant(value=i), ctx=ast.Load())
            out += self._contribute(var, item, stmt.line, defined)
        return out

    def _template_mapping(self, stmt: Apply, g: str) -> dict[str, ast.expr]:
        read = _template_names(stmt.rule)  # only what the template reads is worth building
        mapping = {
            p: atom_expr(a) for p, a in zip(stmt.rule.params, stmt.args, strict=False) if p in read
        }
        mapping["g"] = _name(g)
        if "result" in read:
            mapping["result"] = _name(stmt.target)
        if "math" in read:
            mapping["math"] = _name(self.fn.math_alias)
        if self.fn.array_mode:
            mapping["np"] = _name(self.fn.numpy_alias)
            mapping.update(stmt.statics)
            for helper in _rule_helpers(stmt.rule):
                mapping[helper] = _name(self.fn.helper(helper))
        return mapping

    def _template_setup(
        self, setup: list[ast.stmt], used: list[ast.expr], mapping: dict[str, ast.expr], line: int
    ) -> list[ast.stmt]:
        """Emit the template's local assignments that the wanted adjoints read."""
        if not setup:  # most rules are one expression per argument
            return []
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
        in_body, in_orelse = SetOverlay(defined), SetOverlay(defined)
        body = self.block(stmt.body, in_body)
        orelse = self.block(stmt.orelse, in_orelse)
        # An adjoint that one branch starts and the code after the `if` reads must exist on
        # both paths: the other branch sets it to zero.
        inside = {self.adjoints.get(v) for v in assigned_in([stmt])}
        started = (in_body.started() | in_orelse.started()) - inside
        for name in sorted(n for n in started if n not in in_body):
            body.append(assign(name, ast.Constant(value=0.0), stmt.line, ADJOINT))
        for name in sorted(n for n in started if n not in in_orelse):
            orelse.append(assign(name, ast.Constant(value=0.0), stmt.line, ADJOINT))
        for name in started:
            defined.add(name)
        if not body and not orelse:
            return []
        test: ast.expr = _name(stmt.cond)
        if not body:
            test, body, orelse = ast.UnaryOp(op=ast.Not(), operand=test), orelse, []
        return [tag(ast.If(test=test, body=body, orelse=orelse), stmt.line, ADJOINT)]

    # ----- loops -----------------------------------------------------------------------
    def _loop(self, loop: Loop, defined: set[str]) -> list[ast.stmt]:
        """Replay the iterations in reverse, restoring the values each one recorded."""
        out = self._loop_accumulators(loop, defined)
        inner = SetOverlay(defined)
        body: list[ast.stmt] = []
        restarted = []
        for edge in reversed(loop.back_edges):
            if not self.activity.active(edge.target):
                continue
            g = self.adjoint(edge.target)
            if isinstance(edge.source, Var) and self.activity.active(edge.source.name):
                body.append(self._accumulate(edge.source.name, _name(g), loop.line, inner))
            # The header now holds an earlier iteration's value, whose adjoint starts afresh:
            # the body's first contribution assigns it (or it is reset to zero below).
            inner.discard(g)
            restarted.append((g, edge.target))
        self.depth += 1
        body += self.block(loop.body, inner)
        self.depth -= 1
        body += [
            assign(g, self._restarted_zero(header), loop.line, ADJOINT)
            for g, header in restarted
            if g not in inner
        ]
        if not body:
            return out
        restore, reads, recomputed = self._plan_records(loop, body)
        body = recomputed + body
        if self._can_iterate_records(loop, reads):
            # Every iteration recorded one tuple: walking the list backwards is the replay.
            stack, names = self.records.saved[id(loop.body)]
            iterations = ast.Call(func=_name("reversed"), args=[_name(stack)], keywords=[])
            node = ast.For(target=_pack(names, store=True), iter=iterations, body=body, orelse=[])
        else:
            if loop.test is not None or loop.exit_when is not None:
                loop.counter = self.names.fresh("n_iterations")
            node = ast.For(
                target=_name(self._reverse_index(loop), True),
                iter=self._reverse_iterations(loop),
                body=restore + body,
                orelse=[],
            )
        out.append(tag(node, loop.line, ADJOINT))
        return out

    def _restarted_zero(self, header: str) -> ast.expr:
        """The zero adjoint of a header at the start of an iteration the body does not read it.

        An array's zero takes the header's shape *in that iteration* (``h = x[:i + 1]``
        changes it every time): written here, the read makes the loop record the header,
        where a zero made later from its last value had the last iteration's shape.
        """
        facts = self.shapes.facts if self.shapes is not None else None
        if facts is None or facts.is_scalar(Var(header)):
            return ast.Constant(value=0.0)
        zeros = ast.Attribute(value=_name(self.fn.numpy_alias), attr="zeros_like", ctx=LOAD)
        return ast.Call(func=zeros, args=[_name(header)], keywords=[])

    def _can_iterate_records(self, loop: Loop, reads: set[str]) -> bool:
        """True if the reverse loop can iterate over the recorded tuples instead of popping.

        Needs: records only at the end of the body (no branch-dependent ones), the index not
        read in reverse, and no enclosing loop (whose iterations would share the list).
        """
        if loop.stack is None or self.depth > 0 or loop.index in reads:
            return False
        blocks = [key for key, (stack, _) in self.records.saved.items() if stack == loop.stack]
        return blocks == [id(loop.body)]

    def _loop_accumulators(self, loop: Loop, defined: set[str]) -> list[ast.stmt]:
        """Adjoints that every reverse iteration adds to must exist before the loop."""
        outside = operands_in(loop.body) - assigned_in(loop.body) - set(loop.headers)
        carried = [h for h in loop.headers if self.activity.active(h)]
        out = []
        for var in carried + sorted(v for v in outside if self.activity.active(v)):
            name = self.adjoint(var)
            if name not in defined:
                out.append(assign(name, ast.Constant(value=0.0), loop.line, ADJOINT))
                defined.add(name)
        return out

    def _reverse_index(self, loop: Loop) -> str:
        return loop.index if loop.index is not None else self.names.fresh("_")

    def _reverse_iterations(self, loop: Loop) -> ast.expr:
        if loop.index is None:  # a while loop: as many iterations as it ran
            return ast.Call(func=_name("range"), args=[_name(loop.counter)], keywords=[])
        forward = _range(loop.bounds)
        if loop.counter is not None:  # it may have stopped early: only the ones it ran
            forward = ast.Subscript(
                value=forward,
                slice=ast.Slice(lower=None, upper=_name(loop.counter), step=None),
                ctx=ast.Load(),
            )
        return ast.Call(func=_name("reversed"), args=[forward], keywords=[])

    def _plan_records(
        self, loop: Loop, reverse_body: list[ast.stmt]
    ) -> tuple[list[ast.stmt], set[str], list[ast.stmt]]:
        """Decide what each block of the loop records; return the restoring statements.

        Also returns the names the reverse body reads and the statements that recompute,
        instead of recording, the values whose operands are recorded anyway.
        """
        reads = _loads(reverse_body)
        needed = (assigned_in(loop.body) | set(loop.headers)) & reads
        needed.discard(loop.index)
        recompute = self._recomputable(loop, needed)
        needed -= {stmt.target for stmt in recompute}
        recomputed = self._recompute(recompute, reads)
        reads |= _loads(recomputed)
        if not needed:
            return [], reads, recomputed
        loop.stack = self.names.numbered("stack")
        self.records.stacks.append((loop.stack, loop.line))
        self._assign_records(loop.body, needed, loop.stack, extra=set(loop.headers))
        return self._restore(loop.body, loop.line), reads, recomputed

    def _recomputable(self, loop: Loop, needed: set[str]) -> list[Apply]:
        """Values the reverse sweep can recompute from recorded or unchanging operands.

        Only primitives computed on every iteration (the body's top level), from operands
        that are recorded anyway, never assigned by the loop, or themselves recomputed:
        the records shrink and each recomputed value costs one operation.
        """
        top_level = [s for s in loop.body if isinstance(s, Apply) and not s.forward]
        defined_here = {s.target for s in top_level}
        changing = assigned_in(loop.body) | set(loop.headers) | _loop_scalars(loop)
        recorded_anyway = needed - defined_here
        available: dict[str, Apply] = {}
        for stmt in top_level:
            operands = _operand_names(stmt)
            if all(n in available or n in recorded_anyway or n not in changing for n in operands):
                available[stmt.target] = stmt
        wanted = {name for name in needed if name in available}
        for stmt in reversed(top_level):  # the operands the wanted ones are computed from
            if stmt.target in wanted:
                wanted |= set(_operand_names(stmt)) & set(available)
        return [stmt for stmt in top_level if stmt.target in wanted]

    def _recompute(self, recompute: list[Apply], reads: set[str]) -> list[ast.stmt]:
        """Statements recomputing values, a temporary read once folded into its reader.

        They are tagged forward: the primal's own arithmetic, kept exactly (never simplified),
        so each recomputed value is bit-for-bit the one the forward sweep had.
        """
        uses: dict[str, int] = {}
        for stmt in recompute:
            for atom in stmt.args:
                if isinstance(atom, Var):
                    uses[atom.name] = uses.get(atom.name, 0) + 1
        folded: dict[str, ast.expr] = {}
        out = []
        for stmt in recompute:
            operands = [
                folded.pop(a.name) if isinstance(a, Var) and a.name in folded else atom_expr(a)
                for a in stmt.args
            ]
            value = fill_placeholders(stmt.render, operands)
            target = stmt.target
            if target in self.fn.temporaries and target not in reads and uses.get(target) == 1:
                folded[target] = value
            else:
                out.append(assign(target, value, stmt.line, FORWARD))
        return out

    def _assign_records(
        self, block: list[Stmt], needed: set[str], stack: str, extra: set[str] = frozenset()
    ) -> bool:
        """Record, at the end of each block, the needed names it assigns; True if any."""
        wanted = set(needed)
        for stmt in block:
            if isinstance(stmt, If):
                in_body = self._assign_records(stmt.body, needed, stack)
                in_orelse = self._assign_records(stmt.orelse, needed, stack)
                if in_body or in_orelse:
                    wanted.add(stmt.cond)  # the restore has to know which branch ran
        names = sorted((assigned_directly(block) | extra) & wanted)
        if names:
            self.records.saved[id(block)] = (stack, names)
        return bool(names) or any(
            id(s.body) in self.records.saved or id(s.orelse) in self.records.saved
            for s in block
            if isinstance(s, If)
        )

    def _restore(self, block: list[Stmt], line: int) -> list[ast.stmt]:
        out = self.records.pop(block, line)
        for stmt in reversed(block):
            if isinstance(stmt, If):
                body, orelse = self._restore(stmt.body, line), self._restore(stmt.orelse, line)
                if body or orelse:
                    node = ast.If(test=_name(stmt.cond), body=body or [ast.Pass()], orelse=orelse)
                    out.append(tag(node, line, ADJOINT))
        return out


@functools.lru_cache(maxsize=1024)
def _rule_helpers(rule: Rule) -> frozenset[str]:
    return helpers_in(rule.parsed)


@functools.lru_cache(maxsize=1024)
def _template_names(rule: Rule) -> frozenset[str]:
    """Every name a rule's template reads, setup included (rules are fixed: cached)."""
    setup, adjoints = rule.parsed
    return frozenset(name for node in [*setup, *adjoints] if node for name in names_in(node))


@functools.lru_cache(maxsize=1024)
def _g_count(rule: Rule, wanted: tuple[int, ...]) -> int:
    """How often a rule's setup and wanted adjoints read ``g`` (rules are fixed: cached)."""
    setup, adjoints = rule.parsed
    exprs = [adjoints[i] for i in wanted] + [s.value for s in setup]
    return sum(1 for e in exprs for name in names_in(e) if name == "g")


def _loads(statements: list[ast.stmt]) -> set[str]:
    """The names the statements read from outside them.

    A ``for`` binds its own targets for its body: an inner loop's reverse sweep,
    ``for j_3 in reversed(range(n))``, reads ``j_3`` from itself, so an outer loop need not
    record it (recording it read an unbound name where the inner loop never ran).
    """
    names: set[str] = set()
    for stmt in statements:
        if isinstance(stmt, ast.For):
            names.update(loads_in(stmt.iter))
            names |= _loads(stmt.body) - set(names_in(stmt.target))
            names |= _loads(stmt.orelse)
        elif isinstance(stmt, ast.If | ast.While):
            names.update(loads_in(stmt.test))
            names |= _loads(stmt.body) | _loads(stmt.orelse)
        else:
            names.update(loads_in(stmt))
    return names


@dataclass
class GradientBody:
    """The statements of a generated gradient function and the names it returns."""

    statements: list[ast.stmt]
    returns: ast.expr
    temporary_adjoints: set[str]
    # For a vector-Jacobian product: the parameters that carry the outputs' cotangents.
    cotangent_params: list[str] = field(default_factory=list)
    # Array mode: each adjoint's primal value, for zeros of the right shape (``zeros_like``).
    primal_of: dict[str, ast.expr] = field(default_factory=dict)


def build_gradient(
    fn: CoreFunction,
    wrt: list[str],
    *,
    with_value: bool = False,
    bare: bool = False,
    cotangents: bool = False,
) -> GradientBody:
    """Forward sweep, seed, adjoint sweep and the return of the requested partials.

    With ``cotangents``, the outputs' adjoints are parameters (a vector-Jacobian product)
    instead of the seed ``1.0``.
    """
    names = fn.names if fn.names is not None else NameTable(fn.params)
    activity = analyze_activity(fn, wrt)
    sweep = AdjointSweep(fn, activity, names)
    defined: set[str] = set()
    seed: list[ast.stmt] = []
    outputs = fn.output_names()
    cotangent_params = [sweep.adjoint(out) for out in outputs] if cotangents else []
    for out in outputs:
        if not activity.active(out):
            continue
        defined.add(sweep.adjoint(out))
        if not cotangents:
            seed.append(
                assign(sweep.adjoint(out), ast.Constant(value=1.0), _return_line(fn), ADJOINT)
            )
    adjoint = sweep.block(fn.body, defined)
    # The forward sweep comes second: the adjoint decided what loops must record.
    forward = forward_sweep(fn.body, sweep.records)
    stacks = [
        assign(stack, ast.List(elts=[], ctx=ast.Load()), line, FORWARD)
        for stack, line in sweep.records.stacks
    ]
    if fn.array_mode and seed and fn.output not in sweep.shapes.facts.scalars:
        check = scalar_output_check(fn, output_value(fn))
        seed.insert(0, tag(check, _return_line(fn), ADJOINT))
    statements = stacks + forward + seed + adjoint
    if fn.array_mode:

        def adjoint_of(var: str) -> str | None:
            return sweep.adjoints[var] if sweep.adjoints.get(var) in defined else None

        partials = [array_partial(fn, adjoint_of, p) for p in wrt]
    else:
        partials = [
            _name(sweep.adjoint(p)) if sweep.adjoint(p) in defined else ast.Constant(value=0.0)
            for p in wrt
        ]
    grads = partials[0] if bare else ast.Tuple(elts=partials, ctx=ast.Load())
    if with_value:
        grads = ast.Tuple(elts=[output_value(fn), grads], ctx=ast.Load())
    temp_adjoints = {sweep.adjoints[t] for t in fn.temporaries if t in sweep.adjoints}
    # Array code only: what a zero adjoint takes its shape from. Not a part of a parameter
    # (`x[0]`, `p["b"]`): its zero start may be on a path that never reads the part, which
    # may not exist there (an empty `x`); it stays 0.0, and `gradient_like` adds no zero.
    primal_of = {
        adjoint: _name(var)
        for var, adjoint in (sweep.adjoints.items() if fn.array_mode else ())
        if var not in fn.leaf_exprs
    }
    return GradientBody(statements, grads, temp_adjoints, cotangent_params, primal_of)


def output_value(fn: CoreFunction) -> ast.expr:
    """The function's value: its output name, or a tuple of them."""
    if fn.outputs is None:
        return _name(fn.output)
    return ast.Tuple(elts=[_name(o) for o in fn.outputs], ctx=ast.Load())


def _return_line(fn: CoreFunction) -> int:
    last = fn.body[-1]
    return last.line if isinstance(last, Return) else 0
