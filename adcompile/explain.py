"""Explain backprop step by step: the forward and the reverse sweep of a function at a point.

``explain(fn, *args)`` walks the core form (``lower.py``) with an interpreter: the forward
sweep evaluates every primitive on the user's values; the reverse sweep walks the executed
statements backwards, accumulating one adjoint per variable. Each local derivative is the
compiler's own rule template (``adcompile/rules/``), shown with the user's variable names and
then with numbers, so the explanation and the generated code share one source of truth.

The steps are data (``Explanation.steps``); ``str()`` gives the text form, ``to_markdown()``
a table and ``to_json()`` the JSON form, whose shape is ``JSON_SCHEMA`` below (a JSON
Schema): an object with the function, point, value, gradient and a list of steps, each step
with ``sweep`` (``forward``/``backward``), ``kind`` (``assign``, ``test``, ``branch``, ``jump``,
``iteration``, ``seed``, ``adjoint``, ``sum``), ``line``, ``where`` (the function and file of
an inlined line, else null), ``source`` (the line's text), ``target``, ``formula``,
``numbers``, ``value`` and ``loops`` (the enclosing loop iterations); adjoint steps add
``of``, ``local``, ``local_value``, ``rule`` and ``accumulates``; sum steps add ``terms`` and
``uses``.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from . import messages
from .api import resolve_wrt
from .astutil import BUILTIN_MARK, clone, clone_located, names_in, source_lines, substitute
from .depth import room_for_deep_expressions
from .errors import UnsupportedSyntaxError
from .ir import (
    UNBOUND,
    Apply,
    Atom,
    Const,
    Copy,
    CoreFunction,
    Global,
    If,
    Line,
    Loop,
    Opaque,
    Return,
    Site,
    Stmt,
    Var,
    atom_expr,
    fill_placeholders,
    is_unbound_placeholder,
)
from .lower import lower_function
from .names import output_label
from .notes import line_origins, sweep_note
from .optimize import simplify
from .recipes import recipe_of
from .reverse import Activity, analyze_activity, assigned_in
from .rules import Rule
from .source import FunctionSource, load_function
from .unbound import unbound_message

FORWARD = "forward"
BACKWARD = "backward"
KINDS = ("assign", "test", "branch", "jump", "iteration", "seed", "adjoint", "sum")
# How a `return`, `break` or `continue` is shown (the flag the compiler sets for it is not).
_JUMP_TEXT = {
    "return": "return: leaves the function",
    "break": "break: leaves the loop",
    "continue": "continue: on to the next iteration",
}
# Iterations shown in full at each end of a loop unless every iteration is asked for.
SHOWN_AT_EACH_END = 2

_SCALAR = {"type": ["number", "boolean", "null", "string"]}  # (a string: a flag parameter)
# A value: a number (null for nan and infinities), or a tuple of them (a sequence parameter),
# whose items may be tuples too (`for a, b in pairs`).
_NUMBER = {"anyOf": [_SCALAR, {"type": "array", "items": {"anyOf": [_SCALAR, {"type": "array"}]}}]}
_FLOAT = {"type": ["number", "null"]}  # null: nan or an infinity
_TEXT = {"type": "string"}
_MAYBE_TEXT = {"type": ["string", "null"]}
JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["function", "file", "point", "wrt", "value", "gradient", "steps"],
    "properties": {
        "function": _TEXT,
        "file": _TEXT,
        "point": {"type": "object", "additionalProperties": _NUMBER},
        "wrt": {"type": "array", "items": _TEXT},
        "value": _NUMBER,
        "gradient": {"type": "object", "additionalProperties": _FLOAT},
        "steps": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "sweep",
                    "kind",
                    "line",
                    "where",
                    "source",
                    "target",
                    "formula",
                    "numbers",
                    "value",
                    "loops",
                ],
                "properties": {
                    "sweep": {"enum": [FORWARD, BACKWARD]},
                    "kind": {"enum": list(KINDS)},
                    "line": {"type": ["integer", "null"]},
                    "where": _MAYBE_TEXT,
                    "source": _TEXT,
                    "target": _TEXT,
                    "formula": _TEXT,
                    "numbers": _TEXT,
                    "value": _NUMBER,
                    "loops": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["line", "iteration", "count"],
                            "properties": {
                                "line": {"type": "integer"},
                                "iteration": {"type": "integer"},
                                "count": {"type": "integer"},
                            },
                        },
                    },
                    "of": _MAYBE_TEXT,
                    "local": _MAYBE_TEXT,
                    "local_value": _NUMBER,
                    "rule": _MAYBE_TEXT,
                    "accumulates": {"type": "boolean"},
                    "terms": {"type": "array", "items": _FLOAT},
                    "uses": {"type": "array", "items": {"type": "integer"}},
                },
            },
        },
    },
}


@dataclass
class LoopPosition:
    """One iteration of one run of a loop: ``iteration`` counts from 1 up to ``count``."""

    line: int
    iteration: int
    count: int = 0  # set when the loop has finished
    run: int = 0  # which run of the loop (a loop nested in another runs many times)


@dataclass
class Step:
    """One step of an explanation: a forward value, a branch, an adjoint contribution..."""

    sweep: str
    kind: str
    line: int | None
    where: str | None
    source: str
    target: str
    formula: str
    numbers: str
    value: float | int | bool | None
    loops: list[LoopPosition] = field(default_factory=list)
    of: str | None = None
    local: str | None = None
    local_value: float | int | None = None
    rule: str | None = None
    accumulates: bool = False
    terms: list[float] | None = None
    uses: list[int] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The step as JSON-ready data (see ``JSON_SCHEMA``)."""
        data: dict[str, Any] = {
            "sweep": self.sweep,
            "kind": self.kind,
            "line": self.line,
            "where": self.where,
            "source": self.source,
            "target": self.target,
            "formula": self.formula,
            "numbers": self.numbers,
            "value": _json_number(self.value),
            "loops": [
                {"line": p.line, "iteration": p.iteration, "count": p.count} for p in self.loops
            ],
        }
        if self.kind == "adjoint":
            data.update(
                of=self.of,
                local=self.local,
                local_value=_json_number(self.local_value),
                rule=self.rule,
                accumulates=self.accumulates,
            )
        if self.kind == "sum":
            data.update(terms=[_json_number(t) for t in self.terms or []], uses=self.uses)
        return data


@dataclass
class Operand:
    """An input of an operation in the executed graph: another node or a constant."""

    node: int | None  # the producing Operation's index, or None for a constant
    text: str
    adjoint: float | None = None  # what the reverse sweep sent back along this edge


@dataclass
class Operation:
    """A node of the executed computation graph (an input or one primitive application)."""

    index: int
    kind: str  # "input" or "apply"
    label: str  # `q = x + y`, `x`, `log(q)`
    name: str  # the variable's display name (a temporary's expression for a temporary)
    value: float | int | bool | None
    line: int | None
    operands: list[Operand] = field(default_factory=list)
    adjoint: float | None = None
    output: bool = False


@dataclass
class Explanation:
    """The result of ``explain``: ``str()`` is the text form, ``steps`` the same as data."""

    function: str
    filename: str
    point: dict[str, Any]
    wrt: tuple[str, ...]
    value: Any
    gradient: dict[str, float]
    steps: list[Step]
    operations: list[Operation]
    output: str = ""  # the output's name in labels (df/dx): see names.output_label

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        # Short: a REPL or notebook shows the repr, and the steps of a long loop run to MBs.
        at = ", ".join(f"{k}={format_number(v)}" for k, v in self.point.items())
        return (
            f"<Explanation of {self.function}({at}): value {format_number(self.value)}, "
            f"gradient {self.gradient}, {len(self.steps)} steps; print() shows them>"
        )

    def to_text(self, all_iterations: bool = False) -> str:
        """The explanation as aligned text; loops summarised unless ``all_iterations``."""
        return _format_text(self, all_iterations)

    def to_markdown(self, all_iterations: bool = False) -> str:
        """The explanation as a GitHub-flavoured Markdown table."""
        return _format_markdown(self, all_iterations)

    def as_dict(self) -> dict[str, Any]:
        """The explanation as JSON-ready data (see ``JSON_SCHEMA``)."""
        return {
            "function": self.function,
            "file": self.filename,
            "point": {k: _json_number(v) for k, v in self.point.items()},
            "wrt": list(self.wrt),
            "value": _json_number(self.value),
            "gradient": {k: _json_number(v) for k, v in self.gradient.items()},
            "steps": [step.as_dict() for step in self.steps],
        }

    def to_json(self, indent: int | None = 2) -> str:
        """The explanation as JSON text (every step, loops not summarised)."""
        import json  # here, not at the top: few callers want JSON, and every import pays for it

        return json.dumps(self.as_dict(), indent=indent, allow_nan=False)


def _json_number(value: Any) -> Any:
    # JSON has no nan or inf: they become null, as JSON.stringify does.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, tuple | list | range):  # a sequence parameter, or one being looped
        return [_json_number(item) for item in value]
    return value


# ----- number and expression display -----------------------------------------------------
def format_number(value: object) -> str:
    """A short form of a value: ``4`` for 4.0, six significant digits otherwise."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.6g}"
    return repr(value)


def _number_node(value: object) -> ast.expr:
    # A Name whose id is the number's text: unparse prints it verbatim, negatives in brackets.
    text = format_number(value)
    return ast.Name(id=f"({text})" if text.startswith("-") else text, ctx=ast.Load())


_ARITHMETIC = (ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop)


def _is_number(expr: ast.expr) -> bool:
    """Is ``expr`` arithmetic on number literals only (``2``, ``-1``, ``0.5 ** 2``)?"""
    return all(
        isinstance(node, _ARITHMETIC)
        or (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int | float)
            and not isinstance(node.value, bool)
        )
        for node in ast.walk(expr)
    )


def _is_plain_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_simple(text: str) -> bool:
    """A name, primed or not: ``df/dx''``, where an expression is ``df/d(log(q))``."""
    return re.sub(r"(?:'+|'\d+)$", "", text).isidentifier()


def _compiler_builtins(expr: ast.expr) -> set[str]:
    """Names that ``expr`` reads only as builtins the compiler wrote (``BUILTIN_MARK``)."""
    marked, plain = set(), set()
    for node in ast.walk(expr):
        if isinstance(node, ast.Name):
            (marked if getattr(node, BUILTIN_MARK, False) else plain).add(node.id)
    return marked - plain


def adjoint_label(function: str, name: str) -> str:
    """``df/dx``; ``df/d(log(q))`` for a sub-expression."""
    return f"d{function}/d{name}" if _is_simple(name) else f"d{function}/d({name})"


# ----- the interpreter -------------------------------------------------------------------
@dataclass
class _Event:
    """An executed statement, for the reverse sweep."""

    kind: str  # "apply", "copy", "iteration", "branch"
    stmt: Stmt | None
    loops: list[LoopPosition]
    values: list[Any] = field(default_factory=list)
    labels: list[ast.expr] = field(default_factory=list)
    result: Any = None
    target_label: str = ""
    visible: bool = True
    operation: Operation | None = None
    taken: bool = False
    roots: list[str] = field(default_factory=list)  # by argument (copy: the source)


class _Interpreter:
    """Runs a core function forwards, then backwards, recording explanation steps."""

    def __init__(self, core: CoreFunction, fs: FunctionSource, wrt: tuple[str, ...]) -> None:
        self.core = core
        self.fs = fs
        self.wrt = wrt
        self.fname = output_label(fs.name, fs.node)
        self.activity: Activity = analyze_activity(core, list(wrt))
        self.namespace: dict[str, Any] = {core.math_alias: math, "math": math}
        self.namespace.update(core.constants)
        self.namespace[_BUILTINS] = builtins
        self.env: dict[str, Any] = {}
        self.labels: dict[str, ast.expr] = {}
        self.producers: dict[str, Operand] = {}
        self.events: list[_Event] = []
        self.steps: list[Step] = []
        self.operations: list[Operation] = []
        self.loops: list[LoopPosition] = []
        # The primes of each variable's latest value, by its shown name (bound names only).
        self.versions: dict[str, int] = {}
        self.assigned: dict[int, set[str]] = {}  # by loop: the names its body assigns
        self.call_versions: dict[str, int] = {}  # as `versions`, for calls (by their text)
        # Each variable's latest value: its primes, and which assignment (counted) made it.
        self.latest: dict[str, tuple[int, int]] = {}
        self.assignments = 0
        self.carried: dict[int, set[str]] = {}  # by loop: the names an iteration reads first
        self.runs: dict[int, int] = {}
        self.quiet = 0  # inside a user rule's forward body: values only, no steps
        self.flag_tests: set[str] = set()  # tests that read only jump flags: not shown
        # Which value each name holds, counted by definition; an unshown copy (a conditional
        # expression's arm, a join, a loop's header) holds its source's, and contributions
        # to either add up to one adjoint. (Names are reused by each iteration: values not.)
        self.roots: dict[str, str] = {}
        self.definitions = 0
        self.strip = re.compile(rf"\b(?:{re.escape(core.math_alias)}|math)\.")

    # ----- names -----------------------------------------------------------------------
    def display(self, name: str) -> str:
        """The user's name for a version of a variable (``x_2`` -> ``x``)."""
        return self.core.shown_as(name, self.fname)

    def text(self, expr: ast.expr) -> str:
        """Source text of a display expression, without the ``math.`` prefix."""
        return self.strip.sub("", ast.unparse(expr))

    def is_temporary(self, name: str) -> bool:
        """Whether ``name`` is shown as the value it holds (``w * x``), not by a name."""
        names = self.core.names
        shown_as_value = names is not None and names.is_shown_as_value(name)
        return name in self.core.temporaries or shown_as_value

    def _new_version(self, name: str) -> str:
        """The label of a new value of a variable: ``x``, and ``x'``, ``x''``... for each
        value assigned while an earlier one is bound, so that no two values share a label.
        A loop counts from the start of each iteration (``x' = x - step``)."""
        shown = self.display(name)
        if name == self.core.output or shown == self.fname:
            return shown
        call = self.core.call_results.get(shown)
        if call is not None:  # an inlined call's early returns: the call's own label
            placeholder = ast.Name(id=shown, ctx=ast.Load())
            return self.text(self._temporary_label(call, placeholder, commit=False))
        if self.quiet:  # a user rule's body: never shown, and no value of the caller's
            return shown
        count = self.versions[shown] + 1 if shown in self.versions else 0
        self.versions[shown] = count
        self.assignments += 1
        self.latest[shown] = (count, self.assignments)
        return shown + _primes(count)

    def _same_variable(self, stmt: Copy) -> bool:
        """A copy the lowering adds between versions of one variable (a loop's header, the
        join of two branches): the same value, not a new one."""
        source = stmt.source
        if not isinstance(source, Var) or self.is_temporary(source.name):
            return False
        return self.display(source.name) == self.display(stmt.target)

    # ----- forward ---------------------------------------------------------------------
    def run(self, args: dict[str, Any]) -> Any:
        for name in self.core.params:
            self.env[name] = args[name]
            self.labels[name] = ast.Name(id=self.display(name), ctx=ast.Load())
            self.versions[self.display(name)] = 0
            operation = self._operation("input", name, name, args[name], self.fs.node.lineno)
            self.producers[name] = Operand(operation.index, name)
        return self.block(self.core.body)

    def _operation(
        self, kind: str, label: str, name: str, value: Any, line: Line | None
    ) -> Operation:
        number = line.line if isinstance(line, Site) else line
        operation = Operation(len(self.operations), kind, label, name, value, number)
        self.operations.append(operation)
        return operation

    def block(self, block: list[Stmt]) -> Any:
        for stmt in block:
            try:
                result = self.statement(stmt)
            except Exception as exc:
                self._note(exc, stmt.line, FORWARD)
                raise
            if isinstance(stmt, Return):
                return result
        return None

    def statement(self, stmt: Stmt) -> Any:
        if isinstance(stmt, Apply):
            self.apply(stmt)
        elif isinstance(stmt, Copy):
            self.copy(stmt)
        elif isinstance(stmt, Opaque):
            self.opaque(stmt)
        elif isinstance(stmt, If):
            self.branch(stmt)
        elif isinstance(stmt, Loop):
            self.loop(stmt)
        elif isinstance(stmt, Return):
            return self.value(stmt.value)
        return None

    def value(self, atom: Atom) -> Any:
        if isinstance(atom, Var):
            return self.env[atom.name]
        if isinstance(atom, Const):
            return atom.value
        return eval(_compiled(atom.expr), self.namespace)

    def label(self, atom: Atom) -> ast.expr:
        if isinstance(atom, Var):
            return clone(self.labels[atom.name])
        if isinstance(atom, Global):
            return ast.Name(id=self.strip.sub("", atom.text), ctx=ast.Load())
        return atom_expr(atom)

    def operand(self, atom: Atom, value: Any) -> Operand:
        if isinstance(atom, Var) and atom.name in self.producers:
            found = self.producers[atom.name]
            return Operand(found.node, found.text)
        return Operand(None, format_number(value))

    def _temporary_label(self, target: str, expr: ast.expr, commit: bool = True) -> ast.expr:
        """A temporary's label: its expression, or the call whose value it holds, primed as
        a variable is if that call (same text) already gave a value (``sq(x) * sq(x)``:
        ``sq(x)``, then ``sq(x)'``). Without ``commit``, the label the next value gets."""
        label = self.core.temporary_label(target, expr, self.label)
        if target not in self.core.call_labels or self.quiet:
            return label
        text = self.text(label)
        count = self.call_versions[text] + 1 if text in self.call_versions else 0
        if commit:
            self.call_versions[text] = count
        return ast.Name(id=text + _primes(count), ctx=ast.Load()) if count else label

    def _record(
        self, step_kind: str, stmt: Stmt, target: str, formula: str, numbers: str, value: Any
    ) -> None:
        if self.quiet:
            return
        line, where = _line_parts(stmt.line)
        self.steps.append(
            Step(
                FORWARD,
                step_kind,
                line,
                where,
                self._source(stmt.line),
                target,
                formula,
                numbers,
                value,
                list(self.loops),
            )
        )

    def _source(self, line: Line) -> str:
        return line.text if isinstance(line, Site) else self.fs.source_line(line)

    def apply(self, stmt: Apply) -> None:
        values = [self.value(a) for a in stmt.args]
        if stmt.forward:  # a user rule: the function's own body computes the value
            self.quiet += 1
            try:
                self.block(stmt.forward)
            finally:
                self.quiet -= 1
            result = self.env[stmt.target]
        else:
            result = stmt.rule.primal(*values)
        labels = [self.label(a) for a in stmt.args]
        expr = fill_placeholders(stmt.render, [clone(lb) for lb in labels])
        numbers = self.text(fill_placeholders(stmt.render, [_number_node(v) for v in values]))
        self.env[stmt.target] = result
        self._define(stmt.target)
        shown = self.text(expr)
        if self.is_temporary(stmt.target):
            label = self._temporary_label(stmt.target, expr)
            self.labels[stmt.target] = label
            target = self.text(label)
            formula = shown if target == shown else f"{target} = {shown}"
        else:
            target = self._new_version(stmt.target)
            self.labels[stmt.target] = ast.Name(id=target, ctx=ast.Load())
            formula = f"{target} = {shown}"
        self._record("assign", stmt, target, formula, numbers, result)
        if self.quiet:
            return
        operation = self._operation("apply", formula, target, result, stmt.line)
        operation.operands = [self.operand(a, v) for a, v in zip(stmt.args, values, strict=True)]
        self.producers[stmt.target] = Operand(operation.index, target)
        event = _Event(
            "apply", stmt, list(self.loops), values, labels, result, target, operation=operation
        )
        event.roots = [self.root(a) for a in stmt.args]
        self.events.append(event)

    def jump_of(self, name: str) -> str | None:
        """The jump whose flag ``name`` is (``"break"``...), else None."""
        names = self.core.names
        return names.jump_of(name) if names is not None else None

    def copy(self, stmt: Copy) -> None:
        value = self.value(stmt.source)
        jump = self.jump_of(stmt.target)
        if jump is not None:  # a flag: shown as the jump that sets it, never as a value
            self.env[stmt.target] = value
            self.labels[stmt.target] = ast.Name(id=self.display(stmt.target), ctx=ast.Load())
            if isinstance(stmt.source, Const) and stmt.source.value is True:
                self._record("jump", stmt, jump, _JUMP_TEXT[jump], "", True)
            return
        label = self.label(stmt.source)
        self.env[stmt.target] = value
        source_text = self.text(label)
        if self.is_temporary(stmt.target):
            self.labels[stmt.target] = self._temporary_label(stmt.target, label)
            target = self.text(self.labels[stmt.target])
        elif self._same_variable(stmt):
            self.labels[stmt.target] = label  # the value keeps its label (`x'`)
            target = source_text
        else:
            placeholder = self._placeholder(stmt)  # never read as a number: no version of its own
            target = self.display(stmt.target) if placeholder else self._new_version(stmt.target)
            self.labels[stmt.target] = ast.Name(id=target, ctx=ast.Load())
        # Copies the lowering adds (loop headers, merges of branches) read `x = x`: not shown.
        visible = target != source_text and not self._placeholder(stmt)
        if not visible and isinstance(stmt.source, Var):
            self.roots[stmt.target] = self.root(stmt.source)
        else:
            self._define(stmt.target)
        if visible:
            numbers = format_number(value)
            self._record("assign", stmt, target, f"{target} = {source_text}", numbers, value)
        if self.quiet:
            return
        self.producers[stmt.target] = self.operand(stmt.source, value)
        if isinstance(stmt.source, Var) and stmt.source.name in self.producers:
            self.producers[stmt.target].text = target
        event = _Event("copy", stmt, list(self.loops), [value], [label], value, target, visible)
        event.roots = [self.root(stmt.source)]
        self.events.append(event)

    def _placeholder(self, stmt: Copy) -> bool:
        """Whether a copy binds a value no row shows as a number: UNBOUND, or the None that a
        generator's ``min``/``max`` starts its running value from (``acc = None``)."""
        if is_unbound_placeholder(stmt.source):
            return True
        none = isinstance(stmt.source, Const) and stmt.source.value is None
        return none and self.core.names is not None and self.core.names.is_internal(stmt.target)

    def _define(self, name: str) -> None:
        self.definitions += 1
        self.roots[name] = f"{name}#{self.definitions}"

    def root(self, atom: Atom) -> str:
        """Which value ``atom`` holds, through unshown copies ('' for a constant)."""
        if not isinstance(atom, Var):
            return ""
        return self.roots.get(atom.name, atom.name)  # a parameter has one value

    def _evaluate(self, expr: ast.expr) -> Any:
        return eval(_compiled(expr), {**self.namespace, "__builtins__": __builtins__}, self.env)

    def _relabel(self, expr: ast.expr, numbers: bool) -> str:
        mapping: dict[str, ast.expr] = {}
        builtins_only = _compiler_builtins(expr)  # `len` of len(seq), not a user's `len`
        for name in names_in(expr):
            if name in self.env and name not in builtins_only:
                mapping[name] = _number_node(self.env[name]) if numbers else self.labels[name]
            elif numbers and _is_plain_number(self.core.constants.get(name)):
                mapping[name] = _number_node(self.core.constants[name])  # `limit`, `K`
        return self.text(substitute(expr, mapping))

    def opaque(self, stmt: Opaque) -> None:
        value = self._evaluate(stmt.expr)
        self._define(stmt.target)
        if stmt.unbound is not None:  # a read Python would refuse on this path: no row
            if value:
                raise UnboundLocalError(unbound_message(stmt.unbound))
            return
        if stmt.hidden or (stmt.reads and all(self.jump_of(name) for name in stmt.reads)):
            # `not returned`: the jump was shown where it was; `len(range(n)) > 0`: the
            # compiler's own question, not the user's
            self.env[stmt.target] = value
            self.flag_tests.add(stmt.target)
            return
        shown = self._relabel(stmt.expr, numbers=False)
        numbers = self._relabel(stmt.expr, numbers=True)
        self.env[stmt.target] = value
        if stmt.no_rule is None and not self.is_temporary(stmt.target):
            # A branch test: later shown by the branch it decides.
            self.labels[stmt.target] = _parse(shown)
            self._record("test", stmt, shown, shown, numbers, value)
            return
        if self.is_temporary(stmt.target):
            target = self.text(self._temporary_label(stmt.target, _parse(shown)))
        else:
            target = self._new_version(stmt.target)
        self.labels[stmt.target] = ast.Name(id=target, ctx=ast.Load())
        if target == shown == numbers == format_number(value):  # a constant as it is: no row
            return
        formula = shown if target == shown else f"{target} = {shown}"
        self._record("assign", stmt, target, formula, numbers, value)

    def branch(self, stmt: If) -> None:
        taken = bool(self.env[stmt.cond])
        if stmt.cond in self.flag_tests:  # what a jump skips: the jump said so
            self.block(stmt.body if taken else stmt.orelse)
            return
        test = self.text(self.labels[stmt.cond])
        which = "if" if taken else "else"
        formula = f"runs the {which} branch ({test} is {taken})"
        if not taken and stmt.has_else is False:
            formula = f"skips the if branch ({test} is False)"
        self._record("branch", stmt, which, formula, "", taken)
        self.block(stmt.body if taken else stmt.orelse)
        if not self.quiet:
            event = _Event("branch", stmt, list(self.loops), taken=taken)
            event.target_label = formula
            self.events.append(event)

    def loop(self, stmt: Loop) -> None:
        run = self.runs[id(stmt)] = self.runs.get(id(stmt), 0) + 1
        line = stmt.line.line if isinstance(stmt.line, Site) else stmt.line
        positions: list[LoopPosition] = []
        indices = iter(range(*[self.value(b) for b in stmt.bounds])) if stmt.test is None else None
        assigned = self._assigned_in(stmt)
        at_entry = {shown: self.versions[shown] for shown in assigned & self.versions.keys()}
        latest = {shown: self.latest.get(shown) for shown in assigned}
        calls_at_entry = dict(self.call_versions)
        while True:
            if indices is not None:
                index = next(indices, _DONE)
                if index is _DONE:
                    break
                self.env[stmt.index] = index
                self._define(stmt.index)
                # In the executed graph, the index is a constant of each iteration: `i = 2`.
                if self._counter_of_items(stmt):  # `for v in xs`: `v = xs[2]`, no `k` of ours
                    self.labels[stmt.index] = _number_node(index)
                    self.producers[stmt.index] = Operand(None, str(index))
                else:
                    shown = self.display(stmt.index)
                    self.labels[stmt.index] = ast.Name(id=shown, ctx=ast.Load())
                    self.producers[stmt.index] = Operand(None, f"{shown} = {index}")
            elif not self._evaluate(stmt.test):
                break
            position = LoopPosition(line, len(positions) + 1, run=run)
            positions.append(position)
            self.loops.append(position)
            self._start_iteration(stmt, assigned, at_entry, len(positions))
            self.call_versions = dict(calls_at_entry)  # calls too: labelled as iteration 1
            try:
                self._iteration(stmt, position, indices is not None)
            finally:
                self.loops.pop()
            if stmt.exit_when is not None and self._evaluate(stmt.exit_when):
                break
        for position in positions:
            position.count = len(positions)
        self._end_loop(stmt, latest)

    def _assigned_in(self, stmt: Loop) -> set[str]:
        """The shown names of the variables ``stmt``'s body assigns."""
        if id(stmt) not in self.assigned:
            targets = assigned_in(stmt.body)
            shown = {self.display(t) for t in targets if not self.is_temporary(t)}
            self.assigned[id(stmt)] = shown
        return self.assigned[id(stmt)]

    def _start_iteration(
        self, stmt: Loop, assigned: set[str], at_entry: dict[str, int], iteration: int
    ) -> None:
        """Every iteration is labelled as the first: a variable starts with the label it had
        before the loop (``x``) and what the iteration assigns counts on from there (``x'``).
        One first bound in the loop starts unprimed, unless the iteration reads what the
        last one left in it before assigning it (``x = x + t``, then ``t' = ...``)."""
        carried = self._carried_in(stmt) - self._placeholders_carried(stmt)
        for shown in assigned:
            if shown in at_entry:
                self.versions[shown] = at_entry[shown]
            elif shown in carried and iteration > 1:
                self.versions[shown] = 0
            else:
                self.versions.pop(shown, None)
        for header in stmt.headers:
            shown = self.display(header)
            label = shown + _primes(at_entry.get(shown, 0))
            self.labels[header] = ast.Name(id=label, ctx=ast.Load())

    def _end_loop(self, stmt: Loop, before: dict[str, tuple[int, int] | None]) -> None:
        """After the loop a variable holds its latest value, under that value's label (an
        iteration that assigned nothing left the one an earlier iteration labelled)."""
        for header in stmt.headers:
            shown = self.display(header)
            latest = self.latest.get(shown)
            if latest is not None and latest != before.get(shown):  # assigned in the loop
                self.versions[shown] = latest[0]
                self.labels[header] = ast.Name(id=shown + _primes(latest[0]), ctx=ast.Load())

    def _placeholders_carried(self, stmt: Loop) -> set[str]:
        """The carried variables that hold no value an explanation showed (a generator's
        ``min`` whose filter took no item yet): the next value is their first."""
        names = self.core.names
        return {
            self.display(h)
            for h in stmt.headers
            if self.env.get(h) is UNBOUND.value
            or (self.env.get(h) is None and names is not None and names.is_internal(h))
        }

    def _carried_in(self, stmt: Loop) -> set[str]:
        """The shown names of the variables whose value an iteration may read before it
        assigns them: in core form, the body reads their loop headers."""
        if id(stmt) not in self.carried:
            reads = _reads(stmt.body) | set(stmt.test_reads)
            self.carried[id(stmt)] = {self.display(h) for h in stmt.headers if h in reads}
        return self.carried[id(stmt)]

    def _counter_of_items(self, stmt: Loop) -> bool:
        """Whether ``stmt`` counts the items of ``for v in xs`` with an index of the
        compiler's own, which explanations show by its value."""
        names = self.core.names
        return stmt.index is not None and names is not None and names.is_internal(stmt.index)

    def _iteration(self, stmt: Loop, position: LoopPosition, counted: bool) -> None:
        counted = counted and not self._counter_of_items(stmt)
        index = f" ({self.display(stmt.index)} = {self.env[stmt.index]})" if counted else ""
        formula = f"iteration {position.iteration}{index}"
        self._record("iteration", stmt, "", formula, "", position.iteration)
        self.block(stmt.body)
        for edge in stmt.back_edges:
            self.copy(edge)
        if not self.quiet:
            self.events.append(_Event("iteration", stmt, list(self.loops)))

    def _note(self, exc: BaseException, line: Line, sweep: str) -> None:
        if getattr(exc, "_adcompile_noted", False):
            return
        exc._adcompile_noted = True
        number, where = _line_parts(line)
        where = where or os.path.basename(self.fs.filename)
        exc.add_note(sweep_note(sweep, number, where, self._source(line)))

    # ----- backward --------------------------------------------------------------------
    def backward(self) -> dict[str, float]:
        self.adjoints: dict[str, float] = {}
        self.uses: dict[str, list[tuple[float, int | None]]] = {}
        self.contributions: dict[str, int] = {}  # by root: to the value and its copies
        output = self.core.output
        if self.activity.active(output):
            self.adjoints[output] = 1.0
            self.uses[output] = [(1.0, None)]
            start = adjoint_label(self.fname, self.fname)
            self.steps.append(
                Step(BACKWARD, "seed", None, None, "", self.fname, f"{start} = 1", "1", 1.0)
            )
        for event in reversed(self.events):
            try:
                self._backward_event(event)
            except Exception as exc:
                if event.stmt is not None:
                    self._note(exc, event.stmt.line, BACKWARD)
                raise
        gradient = {}
        for param in self.wrt:
            self._sum(param, None, [])
            gradient[param] = float(self.adjoints.get(param, 0.0))
        return gradient

    def _backward_event(self, event: _Event) -> None:
        stmt = event.stmt
        if event.kind == "iteration":
            position = event.loops[-1]
            formula = f"iteration {position.iteration}, backwards"
            line, where = _line_parts(stmt.line)
            self.steps.append(
                Step(
                    BACKWARD,
                    "iteration",
                    line,
                    where,
                    self._source(stmt.line),
                    "",
                    formula,
                    "",
                    position.iteration,
                    event.loops,
                )
            )
        elif event.kind == "branch":
            if not event.taken and stmt.has_else is False:
                return  # an `if` skipped, with no `else`: nothing to go back through
            line, where = _line_parts(stmt.line)
            which = "if" if event.taken else "else"
            formula = f"back through the {which} branch"
            self.steps.append(
                Step(
                    BACKWARD,
                    "branch",
                    line,
                    where,
                    self._source(stmt.line),
                    which,
                    formula,
                    "",
                    event.taken,
                    event.loops,
                )
            )
        elif event.kind == "copy":
            self._backward_copy(event)
        else:
            self._backward_apply(event)

    def _take(self, name: str, event: _Event) -> float | None:
        """The finished adjoint of ``name`` at its definition (None if nothing reached it)."""
        if not self.activity.active(name) or name not in self.uses:
            return None
        self._sum(name, event.stmt, event.loops, event.target_label)
        del self.uses[name]
        # Earlier (in a loop: an earlier iteration's) values of the name start afresh.
        return self.adjoints.pop(name, 0.0)

    def _sum(
        self, name: str, stmt: Stmt | None, loops: list[LoopPosition], shown: str = ""
    ) -> None:
        """Add up ``name``'s uses, shown as ``shown`` (the label of its value), if two or more."""
        uses = self.uses.get(name, [])
        if len(uses) < 2:
            return
        terms = [value for value, _ in uses]
        lines = [line for _, line in uses if line is not None]
        shown = shown or self._shown_name(name)
        label = adjoint_label(self.fname, shown)
        numbers = _plus(format_number(t) for t in terms)
        line, where = _line_parts(stmt.line) if stmt is not None else (None, None)
        source = self._source(stmt.line) if stmt is not None else ""
        self.steps.append(
            Step(
                BACKWARD,
                "sum",
                line,
                where,
                source,
                shown,
                label,
                numbers,
                self.adjoints.get(name, 0.0),
                list(loops),
                terms=terms,
                uses=lines,
            )
        )

    def _shown_name(self, name: str) -> str:
        label = self.labels.get(name)
        if self.is_temporary(name) and label is not None:
            return self.text(label)
        return self.display(name)

    def _give(self, name: str, value: float, line: int | None, root: str = "") -> bool:
        """Add a contribution to ``name``'s adjoint; True if it adds to an earlier one, to
        the name or to another copy of its value (``root``; a copy's uses pass on to it)."""
        accumulates = name in self.uses
        self.adjoints[name] = self.adjoints.get(name, 0.0) + value if accumulates else value
        self.uses.setdefault(name, []).append((value, line))
        if not root:
            return accumulates
        earlier = self.contributions.get(root, 0)
        self.contributions[root] = earlier + 1
        return accumulates or earlier > 0

    def _backward_copy(self, event: _Event) -> None:
        stmt = event.stmt
        source = stmt.source
        if not event.visible and self._pass_uses_on(stmt.target, source):
            return
        g = self._take(stmt.target, event)
        if g is None or not isinstance(source, Var) or not self.activity.active(source.name):
            return
        line, where = _line_parts(stmt.line)
        accumulates = self._give(source.name, g, line, event.roots[0])
        if not event.visible:
            return
        target = self.text(event.labels[0])
        of = adjoint_label(self.fname, event.target_label)
        mark = "+=" if accumulates else "="
        self.steps.append(
            Step(
                BACKWARD,
                "adjoint",
                line,
                where,
                self._source(stmt.line),
                target,
                f"{adjoint_label(self.fname, target)} {mark} {of}",
                format_number(g),
                g,
                event.loops,
                of=event.target_label,
                local="1",
                local_value=1,
                rule="copy",
                accumulates=accumulates,
            )
        )

    def _pass_uses_on(self, target: str, source: Atom) -> bool:
        """A copy the explanation does not show (a join of branches, a loop's header, a
        helper's returned name) is the same variable: its uses become the source's, one by
        one, so that the source's sum names the lines that used it. True if passed on."""
        if not isinstance(source, Var) or not self.activity.active(source.name):
            return False
        if not self.activity.active(target) or target not in self.uses:
            return False
        self.adjoints.pop(target, None)
        for value, line in self.uses.pop(target):
            self._give(source.name, value, line)
        return True

    def _backward_apply(self, event: _Event) -> None:
        stmt: Apply = event.stmt
        g = self._take(stmt.target, event)
        if event.operation is not None:
            event.operation.adjoint = g
        if g is None:
            return
        rule = stmt.rule
        setup, adjoints = rule.parsed
        line, where = _line_parts(stmt.line)
        of = adjoint_label(self.fname, event.target_label)
        for i, (atom, template) in enumerate(zip(stmt.args, adjoints, strict=True)):
            if template is None or not isinstance(atom, Var) or not self.activity.active(atom.name):
                continue
            local = _LocalDerivative(rule, setup, template, event)
            contribution = local.evaluate(g)
            if event.operation is not None:
                event.operation.operands[i].adjoint = contribution
            accumulates = self._give(atom.name, contribution, line, event.roots[i])
            target = self.text(event.labels[i])
            mark = "+=" if accumulates else "="
            of_name = ast.Name(id=of, ctx=ast.Load())
            product = ast.BinOp(left=of_name, op=ast.Mult(), right=local.symbolic)
            numbers = ast.BinOp(left=_number_node(g), op=ast.Mult(), right=local.numeric)
            self.steps.append(
                Step(
                    BACKWARD,
                    "adjoint",
                    line,
                    where,
                    self._source(stmt.line),
                    target,
                    f"{adjoint_label(self.fname, target)} {mark} {self.text(product)}",
                    self.text(numbers),
                    contribution,
                    event.loops,
                    of=event.target_label,
                    local=self.text(local.symbolic),
                    local_value=local.value,
                    rule=rule.name,
                    accumulates=accumulates,
                )
            )


_DONE = object()


def _primes(count: int) -> str:
    """One prime per count up to three, then the count (``'4``): long runs are hard to read."""
    return "'" * count if count <= 3 else f"'{count}"


def _reads(block: list[Stmt]) -> set[str]:
    """The names the statements of ``block`` read, nested blocks included: operands (as
    ``reverse.operands_in`` finds them), and also tests and loop bounds, which rows show."""
    found: set[str] = set()
    for stmt in block:
        if isinstance(stmt, Apply):
            found |= {a.name for a in stmt.args if isinstance(a, Var)}
        elif isinstance(stmt, Copy) and isinstance(stmt.source, Var):
            found.add(stmt.source.name)
        elif isinstance(stmt, Opaque):
            found |= set(stmt.reads)
        elif isinstance(stmt, If):
            found |= {stmt.cond} | _reads(stmt.body) | _reads(stmt.orelse)
        elif isinstance(stmt, Loop):
            found |= {b.name for b in stmt.bounds if isinstance(b, Var)} | set(stmt.test_reads)
            found |= _reads(stmt.entry) | _reads(stmt.body) | _reads(stmt.back_edges)
    return found


class _LocalDerivative:
    """A rule template's adjoint for one argument, with ``g = 1`` (the local derivative)."""

    def __init__(
        self, rule: Rule, setup: list[ast.stmt], template: ast.expr, event: _Event
    ) -> None:
        self.rule = rule
        self.setup = setup
        self.template = template
        params = rule.params[: rule.arity]
        self.values = dict(zip(params, event.values, strict=True))
        self.values["result"] = event.result
        symbols = {p: clone(lb) for p, lb in zip(params, event.labels, strict=True)}
        # `result` is the statement's own value: shown by its name (`f`) or expression.
        symbols["result"] = _parse(event.target_label)
        # A constant argument stays a constant, so that the numbers' column folds what the
        # symbols' column folds (`x ** 2`: `2 * 1.5`, not the power rule's whole template).
        numbers = {p: _number_node(v) for p, v in self.values.items()}
        numbers.update(
            (p, clone(label))
            for p, label in zip(params, event.labels, strict=True)
            if _is_number(label)
        )
        self.symbolic = _show(self._inline_setup(template, symbols))
        self.value = self.evaluate(1.0)
        # The numbers show the arm of each of the rule's tests these values take.
        self.numeric = _show(self._inline_setup(template, numbers, arms_taken=True))

    def _inline_setup(
        self, expr: ast.expr, mapping: dict[str, ast.expr], arms_taken: bool = False
    ) -> ast.expr:
        # The template's local names (atan2's r2) are shown as their expressions.
        # The incoming adjoint is 1 here (the local derivative), setup lines included.
        local = {**mapping, "g": ast.Constant(value=1)}
        scope = {**_TEMPLATE_GLOBALS, **self.values, "g": 1.0}
        for stmt in self.setup:
            name, value = stmt.targets[0].id, stmt.value
            if arms_taken:
                value = _ArmsTaken(scope).visit(clone(value))
                scope[name] = _eval(stmt.value, scope)
            local[name] = substitute(value, local)
        if arms_taken:
            expr = _ArmsTaken(scope).visit(clone(expr))
        return substitute(expr, local)

    def evaluate(self, g: float) -> Any:
        """The template's value for incoming adjoint ``g``, as the generated code computes it."""
        scope = {**_TEMPLATE_GLOBALS, **self.values, "g": g}
        for stmt in self.setup:
            scope[stmt.targets[0].id] = _eval(stmt.value, scope)
        return _eval(self.template, scope)


class _ArmsTaken(ast.NodeTransformer):
    """Each conditional expression replaced by the arm its test takes on ``scope``'s values
    (``1 if 0.75 > 0 else ...`` is ``1``); a test that cannot be computed stays."""

    def __init__(self, scope: dict[str, Any]) -> None:
        self.scope = scope

    def visit_IfExp(self, node: ast.IfExp) -> ast.expr:
        try:
            taken = bool(_eval(node.test, self.scope))
        except Exception:  # (a domain error is reported where the value is computed)
            return self.generic_visit(node)
        return self.visit(node.body if taken else node.orelse)


_TEMPLATE_GLOBALS = {"math": math, "abs": abs, "min": min, "max": max, "float": float}


def _eval(expr: ast.expr, scope: dict[str, Any]) -> Any:
    return eval(_compiled(expr), {"__builtins__": {}}, scope)


_CODE: dict[int, tuple[ast.expr, Any]] = {}


# The builtins module, under a name no variable has: the compiler's own calls (`len` in
# `range(len(seq))`) read the builtin through it, even where a user's name hides it.
_BUILTINS = "__adcompile_builtins__"


class _BuiltinsSpelledOut(ast.NodeTransformer):
    """``len`` written by the compiler becomes ``__adcompile_builtins__.len``."""

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if not getattr(node, BUILTIN_MARK, False):
            return node
        owner = ast.Name(id=_BUILTINS, ctx=ast.Load())
        return ast.copy_location(ast.Attribute(value=owner, attr=node.id, ctx=ast.Load()), node)


def _compiled(expr: ast.expr) -> Any:
    """Compiled code for an expression of the core form or of a rule (they live on)."""
    cached = _CODE.get(id(expr))
    if cached is None or cached[0] is not expr:
        if len(_CODE) > 50_000:  # each explanation lowers afresh: keep the cache bounded
            _CODE.clear()
        body = _BuiltinsSpelledOut().visit(clone_located(expr))
        tree = ast.fix_missing_locations(ast.Expression(body=body))
        cached = _CODE[id(expr)] = (expr, compile(tree, "<adcompile explain>", "eval"))
    return cached[1]


def _parse(text: str) -> ast.expr:
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError:
        return ast.Name(id=text, ctx=ast.Load())


def _show(expr: ast.expr) -> ast.expr:
    """Simplify a local derivative for display: ``1 * z`` -> ``z``, ``-1 * e`` -> ``-e``."""
    simplified = _negate_minus_one(simplify(expr))
    if isinstance(simplified, ast.UnaryOp) and isinstance(simplified.operand, ast.Constant):
        value = simplified.operand.value  # a negative number stands out in brackets
        if isinstance(simplified.op, ast.USub) and isinstance(value, int | float):
            return _number_node(-value)
    return simplified


def _negate_minus_one(node: ast.expr) -> ast.expr:
    for child in ast.walk(node):
        for name, value in ast.iter_fields(child):
            if isinstance(value, ast.BinOp):
                setattr(child, name, _negate_minus_one(value))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and _is_minus_one(node.left):
        return ast.UnaryOp(op=ast.USub(), operand=node.right)
    return node


def _is_minus_one(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and node.operand.value == 1
    )


def _line_parts(line: Line | None) -> tuple[int | None, str | None]:
    if isinstance(line, Site):
        return (line.line if isinstance(line.line, int) else None), line.where
    return line, None


# ----- the public entry points -----------------------------------------------------------
@room_for_deep_expressions()
def explain_source(fs: FunctionSource, point: dict[str, Any], wrt: Any = None) -> Explanation:
    """Explain the gradient of a loaded function at ``point`` (a value for each parameter)."""
    core = lower_function(fs)
    if core.array_mode:
        raise fs.error(UnsupportedSyntaxError, fs.node, messages.EXPLAIN_ARRAYS)
    choice = resolve_wrt(core.params, wrt, fs.name)
    interpreter = _Interpreter(core, fs, choice.names)
    value = interpreter.run(point)
    gradient = interpreter.backward()
    for op in interpreter.operations:
        if op.kind == "input" and op.name in gradient:
            op.adjoint = gradient[op.name]
    producer = interpreter.producers.get(interpreter.core.output)
    if producer is not None and producer.node is not None:
        interpreter.operations[producer.node].output = True
    return Explanation(
        function=fs.name,
        output=interpreter.fname,
        filename=fs.filename,
        point=dict(point),
        wrt=choice.names,
        value=value,
        gradient=gradient,
        steps=interpreter.steps,
        operations=interpreter.operations,
    )


def explain(fn: Callable[..., Any], *args: Any, wrt: Any = None) -> Explanation:
    """Explain, step by step, how reverse mode computes the gradient of ``fn`` at ``args``."""
    # A grad(...) result explains its primal, for its partials (its wrt); another
    # decorator's wrapper is itself.
    composite = getattr(fn, "adcompile_composite", None)
    if composite is not None:  # a closure calling generated code, not a gradient to walk
        raise TypeError(
            f"explain walks the backward pass of a function; the result of adcompile."
            f"{composite} is not one: explain the function itself (explain(f, ...))"
        )
    recipe = recipe_of(fn)
    primal = fn.__wrapped__ if recipe is not None else fn
    if recipe is not None and wrt is None:
        wrt = recipe.wrt
    bound = inspect.signature(primal).bind(*args)
    bound.apply_defaults()
    return explain_source(load_function(primal), dict(bound.arguments), wrt)


# ----- text ------------------------------------------------------------------------------
@dataclass
class _Row:
    label: str
    line: str
    formula: str
    numbers: str
    value: str
    note: str = ""


def _hidden_loop(step: Step) -> LoopPosition | None:
    """The outermost loop iteration this step is in that the summary leaves out."""
    for position in step.loops:
        if position.count > 2 * SHOWN_AT_EACH_END and (
            SHOWN_AT_EACH_END < position.iteration <= position.count - SHOWN_AT_EACH_END
        ):
            return position
    return None


def _visible(steps: list[Step], all_iterations: bool) -> Iterator[Step | str]:
    """The steps to show, with a summary line in place of each run of hidden iterations."""
    summarised: tuple[Any, ...] | None = None
    for step in steps:
        hidden = None if all_iterations else _hidden_loop(step)
        if hidden is None:
            summarised = None
            yield step
            continue
        depth = step.loops.index(hidden)
        outer = [(p.line, p.iteration) for p in step.loops[:depth]]
        key = (step.sweep, hidden.line, hidden.run, *outer)
        if key != summarised:
            summarised = key
            more = hidden.count - 2 * SHOWN_AT_EACH_END
            iterations = "iteration" if more == 1 else "iterations"
            yield (
                f"... {more} more {iterations} of line {hidden.line} (all_iterations=True, "
                "or --all on the command line, shows them)"
            )


def _line_text(step: Step) -> str:
    if step.line is None:
        return ""
    return f"line {step.line}" if step.where is None else f"line {step.line} of {step.where}"


_WORDS = ["no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]


def _uses_note(step: Step) -> str:
    uses = step.uses or []
    count = len(step.terms or [])
    word = _WORDS[count] if count < len(_WORDS) else str(count)
    distinct = sorted(set(uses))
    if len(distinct) == 1 and count > 2:
        return f"({word} uses, all on line {distinct[0]})"
    return f"({word} uses: {', '.join(f'line {u}' for u in uses)})"


def _plus(terms: Iterable[str]) -> str:
    """``1 + (-0.08) + 2``: negative terms in brackets."""
    return " + ".join(f"({t})" if t.startswith("-") else t for t in terms)


def _sum_numbers(step: Step, all_iterations: bool) -> str:
    terms = [format_number(t) for t in step.terms or []]
    if len(terms) > 6 and not all_iterations:
        terms = [*terms[:3], "...", *terms[-2:]]
    return _plus(terms)


def _rows(explanation: Explanation, all_iterations: bool) -> list[_Row | str]:
    rows: list[_Row | str] = []
    sweep = None
    previous_line = None
    for item in _visible(explanation.steps, all_iterations):
        if isinstance(item, str):
            rows.append(_Row("", "", item, "", ""))
            previous_line = None
            continue
        step = item
        label = ""
        if step.sweep != sweep:
            sweep = step.sweep
            label = step.sweep
            previous_line = None
        if step.kind == "seed":
            rows.append(f"{'backward':<11}start: {step.formula}")
            continue
        line = _line_text(step)
        shown_line = line if line != previous_line else ""
        previous_line = line or previous_line
        if step.kind == "sum":
            numbers = _sum_numbers(step, all_iterations)
            value = format_number(step.value)
            rows.append(_Row(label, shown_line, step.formula, numbers, value, _uses_note(step)))
        elif step.kind in ("branch", "jump", "iteration"):
            rows.append(_Row(label, shown_line, step.formula, "", ""))
        else:
            value = format_number(step.value)
            numbers = "" if step.numbers == value else step.numbers
            rows.append(_Row(label, shown_line, step.formula, numbers, value))
    return rows


def _cap(width: int) -> int:
    return min(width, 44)


def _format_text(explanation: Explanation, all_iterations: bool) -> str:
    at = ", ".join(f"{k}={format_number(v)}" for k, v in explanation.point.items())
    where = os.path.basename(explanation.filename)
    lines = [f"{explanation.function}({at}) = {format_number(explanation.value)}   ({where})"]
    rows = _rows(explanation, all_iterations)
    table = [r for r in rows if isinstance(r, _Row)]
    line_width = max([len(r.line) for r in table] + [7])
    formula_width = _cap(max([len(r.formula) for r in table if r.value] + [1]))
    numbers_width = _cap(max([len(r.numbers) for r in table] + [1]))
    for row in rows:
        if isinstance(row, str):
            lines.append(row)
            continue
        text = f"{row.label:<11}{row.line:<{line_width}}  {row.formula:<{formula_width}}"
        if row.value:
            if row.numbers:
                text += f"  = {row.numbers:<{numbers_width}}"
            else:
                text += f"  {'':<{numbers_width + 2}}"
            text += f"  = {row.value}"
        if row.note:
            text += f"   {row.note}"
        lines.append(text.rstrip())
    lines.append(_result_line(explanation))
    return "\n".join(lines) + "\n"


def _result_line(explanation: Explanation) -> str:
    fname = explanation.output or "f"
    parts = [
        f"{adjoint_label(fname, name)} = {format_number(value)}"
        for name, value in explanation.gradient.items()
    ]
    return f"{'result':<11}{', '.join(parts)}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|") if text else ""


def _format_markdown(explanation: Explanation, all_iterations: bool) -> str:
    at = ", ".join(f"{k}={format_number(v)}" for k, v in explanation.point.items())
    out = [
        f"**{explanation.function}({at}) = {format_number(explanation.value)}**",
        "",
        "| sweep | line | step | numbers | value |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in _rows(explanation, all_iterations):
        if isinstance(row, str):  # the seed of the backward sweep
            out.append(f"| backward | | start: `{_cell(row.split('start: ', 1)[1])}` | | |")
            continue
        formula = f"`{_cell(row.formula)}`" if row.value else _cell(row.formula)
        numbers = f"`{_cell(row.numbers)}`" if row.numbers else ""
        value = _cell(row.value) + (f" {_cell(row.note)}" if row.note else "")
        out.append(f"| {row.label} | {_cell(row.line)} | {formula} | {numbers} | {value} |")
    out.append("")
    out.append(f"**{_result_line(explanation).removeprefix('result').strip()}**")
    return "\n".join(out) + "\n"


# ----- dump --annotate -------------------------------------------------------------------
def annotate(text: str, fs: FunctionSource) -> str:
    """Generated module text beside the primal lines it comes from (``dump --annotate``)."""
    origins = line_origins(text)
    rows: list[tuple[str, str, str, str]] = []
    previous = None
    for number, line in enumerate(source_lines(text), start=1):
        if line.strip().startswith(("# line ", "# adjoint of line ")):
            continue  # the left column says it
        origin = origins.get(number)
        if origin is None or origin == previous:
            rows.append(("", "", "", line))
        else:
            shown = (
                str(origin.line)
                if origin.where == _header_file(text)
                else (f"{origin.line} of {origin.where}")
            )
            sweep = "adjoint" if origin.sweep == BACKWARD else "forward"
            rows.append((shown, origin.statement, sweep, line))
        previous = origin if origin is not None else previous
    return _side_by_side(rows, os.path.basename(fs.filename))


def _header_file(text: str) -> str:
    match = re.match(r"# .*? \((.+?), line \d+\)", text)
    return match.group(1) if match else ""


def _side_by_side(rows: list[tuple[str, str, str, str]], filename: str) -> str:
    line_width = max([len(r[0]) for r in rows] + [4])
    primal_width = min(max([len(r[1]) for r in rows] + [len(filename) + 9]), 48)
    heading = (
        f"{'line':>{line_width}}  {'primal (' + filename + ')':<{primal_width}}  "
        f"{'sweep':<7}  | generated"
    )
    out = [heading, "-" * len(heading)]
    for line, statement, sweep, generated in rows:
        left = f"{line:>{line_width}}  {statement:<{primal_width}}  {sweep:<7}"
        out.append(f"{left}  | {generated}".rstrip())
    return "\n".join(out) + "\n"
