"""The core form: one primitive per statement, every variable assigned once per path.

``lower.py`` produces it, ``reverse.py`` consumes it. Atoms are the only operands a primitive
takes; anything nested has been pulled out into its own statement with a fresh name.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from types import NotImplementedType

from .astutil import LOAD, clone, substitute
from .names import NameTable
from .recipes import recipe_of
from .rules import Rule

# Tuples for isinstance, as astutil.BLOCK_STATEMENTS explains.
_FLOAT_INT = (float, int)


@dataclass(frozen=True)
class Var:
    """A local variable of the core form (already renamed: one name, one assignment)."""

    name: str


@dataclass(frozen=True)
class Const:
    """A numeric literal, ``None``, or ``NotImplemented`` (the placeholder ``UNBOUND``)."""

    value: int | float | bool | NotImplementedType | None


# What a variable holds on a path that has not bound it yet: merges copy it (a copy must read
# a bound name) and checks before a read raise UnboundLocalError where they find it. Not None,
# which the user's own variables (and parameters) may hold, nor `...` (NumPy's index of a
# whole array, which they may hold too): a builtin no numeric code passes around.
UNBOUND = Const(NotImplemented)


def is_unbound_placeholder(atom: object) -> bool:
    """Whether ``atom`` is the placeholder of a variable not bound yet on its path."""
    return atom == UNBOUND


@dataclass(frozen=True)
class RuledBody:
    """The inlined body of a function with a user rule, which computes its value: the names
    it binds, and the error to raise if generated code holding them is differentiated again
    (the body's own derivative would stand in for the rule's; a stop-gradient's gives none)."""

    names: frozenset[str]
    refusal: Exception
    # A call of a library function with a user's rule on arrays (`np.inner`): the generated
    # code keeps the call, whose reverse-mode derivative is the rule, but forward mode over
    # the gradient (hessian) would need a tangent the rule does not give.
    forward_only: bool = False


def refuse_differentiating_again(fn: object, forward: bool = False) -> None:
    """Raise the refusal a generated function carries (``RuledBody``), if it carries one;
    with ``forward``, also the one for forward mode over it."""
    if recipe_of(fn) is None:  # not generated (a wrapper functools.wraps gave its attributes)
        return
    refusal = getattr(fn, "adcompile_reread_refusal", None)
    if refusal is None and forward:
        refusal = getattr(fn, "adcompile_forward_refusal", None)
    if refusal is not None:  # a fresh error each time: the stored one is kept pristine
        raise type(refusal)(refusal.message, refusal.location)


@dataclass(frozen=True)
class Global:
    """A constant the generated module provides: ``math.pi`` or a user's ``K = 3.0``."""

    expr: ast.expr
    text: str


Atom = Var | Const | Global


@dataclass(frozen=True)
class Site:
    """A line of another file (an inlined callee): its number, its text, and where it is."""

    line: Line
    text: str
    where: str


Line = int | Site


@dataclass
class Apply:
    """``target = primitive(*args)`` for a primitive that has a derivative rule.

    ``render`` rebuilds the forward expression from operand expressions, so the forward code
    keeps the user's spelling (``a + b``, ``-a``, ``math.sin(a)``).
    """

    target: str
    rule: Rule
    args: list[Atom]
    render: ast.expr  # the expression with operands replaced by placeholders ARG0, ARG1, ...
    line: Line
    # A user function with a user rule: its inlined body computes the value (no derivative
    # flows through it; the rule gives the adjoint).
    forward: list[Stmt] = field(default_factory=list)
    # The rule's keyword-only parameters (``axis=``, ``index``): non-differentiable
    # expressions, already in ``render`` in the user's spelling.
    statics: dict[str, ast.expr] = field(default_factory=dict)
    # Raised if forward mode needs this application's tangent: a user rule on arrays gives
    # a vector-Jacobian product, from which no Jacobian-vector product follows in general.
    tangent_refusal: Exception | None = None

    def primal_expr(self) -> ast.expr:
        """The primal expression in the user's spelling, operands filled in."""
        return fill_placeholders(self.render, [atom_expr(a) for a in self.args])


@dataclass
class Copy:
    """``target = source``.

    A *leaf* of a structured parameter (``W = params["W1"]``) is a copy of a stand-in
    variable that names the leaf (its adjoint accumulates the leaf's gradient); ``render`` is
    then the expression the forward code evaluates instead (``params['W1']``).
    """

    target: str
    source: Atom
    line: Line
    render: ast.expr | None = None


@dataclass
class Opaque:
    """A value with no derivative flowing through it, e.g. a comparison used as a branch test.

    ``no_rule`` is None when the value is piecewise constant by nature (comparisons, ``not``);
    otherwise it is the error to raise should a derivative ever need to flow through it.
    An ``effect`` is a call made for what it does (a check that raises), not for its value:
    it is kept, and written as a bare call; ``target`` then names nothing that is read.
    With ``unbound`` (a user's variable), the effect is the check ``unbound.py`` asks for:
    ``expr`` tests that the variable holds the placeholder None, and the statement is written
    ``if <expr>: raise UnboundLocalError(...)``.
    """

    target: str
    expr: ast.expr
    reads: frozenset[str]
    line: Line
    no_rule: Exception | None = None
    effect: bool = False
    unbound: str | None = None
    # A test the compiler adds for its own bookkeeping (did a loop run? is this a min's
    # first item?): explanations show no row for it, nor the branch it decides, and graphs
    # draw it as this text.
    hidden: str = ""


@dataclass
class If:
    """Two blocks chosen by a recorded condition; both assign the same set of merged names."""

    cond: str
    body: list[Stmt]
    orelse: list[Stmt]
    line: Line
    # For the user's own `if` statement: whether it has an `else` (or `elif`); `explain`
    # says "skips the if branch" where it has none. None for conditional expressions.
    has_else: bool | None = None


@dataclass
class Loop:
    """A ``for i in range(...)`` or ``while test`` loop in core form.

    Each user variable the body assigns has a *header* name: set before the loop from the
    variable's current version (``entry``), read by the body, and set again at the end of
    every iteration from the body's last version (``back_edges``). Body names are assigned
    once per iteration. ``exit_when``, when set, ends the loop after an iteration at whose end
    it is true (the only ``break`` left after desugaring).
    """

    entry: list[Copy]
    body: list[Stmt]
    back_edges: list[Copy]
    headers: list[str]
    line: Line
    index: str | None = None
    bounds: list[Atom] = field(default_factory=list)
    test: ast.expr | None = None
    test_reads: frozenset[str] = frozenset()
    exit_when: ast.expr | None = None
    # Filled in by reverse.py: where the values the adjoint needs are recorded.
    stack: str | None = None
    counter: str | None = None
    saved: dict[int, list[str]] = field(default_factory=dict)


@dataclass
class Return:
    """The function's single exit."""

    value: Atom
    line: Line


Stmt = Apply | Copy | Opaque | If | Loop | Return


@dataclass
class CoreFunction:
    """A lowered function, with what the generated module must define around it."""

    name: str
    params: list[str]
    body: list[Stmt]
    output: str
    constants: dict[str, object] = field(default_factory=dict)
    math_alias: str = "math"
    uses_math: bool = False
    names: NameTable | None = None
    temporaries: set[str] = field(default_factory=set)
    # Temporaries holding an inlined call's value: the call as written, with placeholders
    # for its arguments' atoms (how explanations show ``helper(x)``).
    call_labels: dict[str, tuple[ast.Call, list[Atom]]] = field(default_factory=dict)
    # An inlined callee's early returns store its value in an internal variable: which
    # call's temporary it is the value of (explanations show it as the call).
    call_results: dict[str, str] = field(default_factory=dict)
    # A function returning a tuple of scalars: one output name per element (else None).
    outputs: list[str] | None = None
    def_line: int = 0  # the line of the function's ``def`` (or ``lambda``)
    # The variable a function with early returns stores its result in (desugar.py), if any.
    gathered: str | None = None
    # NumPy code: the rules, accumulation and returned gradients follow array semantics.
    array_mode: bool = False
    numpy_alias: str = "np"
    # Structured parameters: each parameter's leaves as (path, stand-in variable), and the
    # expression each stand-in names (``params['W1']``).
    leaves: dict[str, list[tuple[tuple[object, ...], str]]] = field(default_factory=dict)
    leaf_exprs: dict[str, ast.expr] = field(default_factory=dict)
    # Helper functions (``array_helpers.py``) the generated code calls, by their alias.
    helpers: dict[str, str] = field(default_factory=dict)
    ruled_bodies: list[RuledBody] = field(default_factory=list)
    # The functions whose bodies were inlined, in order (the same function once per call).
    inlined_functions: list[object] = field(default_factory=list)

    def shown_as(self, name: str, output_label: str) -> str:
        """How explanations show a version: the output's label (also for the variable early
        returns store the result in), or the name behind it."""
        if name == self.output:
            return output_label
        shown = self.names.shown_as(name) if self.names is not None else name
        return output_label if shown == self.gathered else shown

    def temporary_label(
        self, target: str, expr: ast.expr, label_of: Callable[[Atom], ast.expr]
    ) -> ast.expr:
        """How explanations and graphs show temporary ``target``: its expression ``expr``, or
        the call (``helper(x)``) whose inlined body's value it holds."""
        call = self.call_labels.get(target)
        if call is None:
            return expr
        shape, atoms = call
        return fill_placeholders(shape, [label_of(atom) for atom in atoms])

    def helper(self, name: str) -> str:
        """The generated module's name for a helper function (allocated on first use)."""
        return helper_alias(self.helpers, self.names, name)

    def output_names(self) -> list[str]:
        """The names holding the function's result: one, or one per returned tuple element."""
        return self.outputs if self.outputs is not None else [self.output]


def helper_alias(helpers: dict[str, str], names: NameTable | None, name: str) -> str:
    """The alias of helper ``name`` in ``helpers``, given a fresh name on first use."""
    if name not in helpers:
        helpers[name] = names.fresh(name) if names else name
    return helpers[name]


ARG_PLACEHOLDER = "ARG{}"


def atom_expr(atom: Atom) -> ast.expr:
    """The expression for an atom (negative literals as unary minus, so precedence holds)."""
    if isinstance(atom, Var):
        return ast.Name(atom.name, LOAD)
    if isinstance(atom, Global):
        return _copy_expr(atom.expr)
    value = atom.value
    if value is NotImplemented:  # a builtin name, not a literal
        return ast.Name("NotImplemented", LOAD)
    if isinstance(value, _FLOAT_INT) and not isinstance(value, bool) and value < 0:
        return ast.UnaryOp(ast.USub(), ast.Constant(-value))
    return ast.Constant(value)


def _copy_expr(expr: ast.expr) -> ast.expr:
    return clone(expr)


def fill_placeholders(template: ast.expr, operands: list[ast.expr]) -> ast.expr:
    """Replace ``ARG0``, ``ARG1``, ... in a copy of ``template`` by the given expressions."""
    cls = template.__class__
    # The three shapes lowering produces are rebuilt directly: no tree copy needed.
    if cls is ast.BinOp:
        return ast.BinOp(operands[0], template.op, operands[1])
    if cls is ast.UnaryOp:
        return ast.UnaryOp(template.op, operands[0])
    if (
        cls is ast.Call
        and not template.keywords
        and len(template.args) == len(operands)
        and all(_is_placeholder(arg, i) for i, arg in enumerate(template.args))
    ):
        return ast.Call(clone(template.func), operands, [])
    lookup = {ARG_PLACEHOLDER.format(i): op for i, op in enumerate(operands)}
    return substitute(template, lookup)


def _is_placeholder(node: ast.expr, i: int) -> bool:
    return node.__class__ is ast.Name and node.id == ARG_PLACEHOLDER.format(i)


def assignment_counts(block: list[Stmt]) -> dict[str, int]:
    """How many statements assign each name, nested blocks included (loop copies too)."""
    counts: dict[str, int] = {}

    def visit(stmts: list[Stmt]) -> None:
        for stmt in stmts:
            if isinstance(stmt, If):
                visit(stmt.body)
                visit(stmt.orelse)
            elif isinstance(stmt, Loop):
                visit(stmt.entry)
                visit(stmt.body)
                visit(stmt.back_edges)
            elif not isinstance(stmt, Return):
                counts[stmt.target] = counts.get(stmt.target, 0) + 1

    visit(block)
    return counts
