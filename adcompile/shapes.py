"""What the compiler can tell about array shapes without running the code.

Array rules are written for any shapes: the adjoint of an operand that broadcasting may have
stretched is summed back by ``unbroadcast``. Often the shapes are evident from the code:
``t = x ** 2`` has the shape of ``x``, ``s = np.sum(t)`` is a scalar, ``0.5 * s`` too. These
facts let the transform leave out ``unbroadcast`` calls that cannot change anything, read a
shape from a value that is computed anyway (so the forward sweep need not keep the other), and
skip the scalar-output check when the output is a scalar by construction.

Only names assigned once are described (the two arms of an ``if`` and loop headers may
differ in shape from one execution to the next).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .ir import Apply, Atom, Const, Copy, CoreFunction, Global, Stmt, Var, assignment_counts


@dataclass
class ShapeFacts:
    """Names known to be scalars, and for others the earlier name whose shape they have."""

    scalars: set[str] = field(default_factory=set)
    shaped_like: dict[str, str] = field(default_factory=dict)
    # Module-level and closure constants that are not numbers: arrays (data) and tuples.
    array_constants: frozenset[str] = frozenset()

    def origin(self, name: str) -> str:
        """The earliest name known to have the shape of ``name`` (itself if none)."""
        while name in self.shaped_like:
            name = self.shaped_like[name]
        return name

    def is_scalar(self, atom: Atom) -> bool:
        """True for literals, numeric constants and names known to hold scalars."""
        if isinstance(atom, Const):
            return True
        if isinstance(atom, Global):
            return atom.text not in self.array_constants
        return atom.name in self.scalars

    def same_shape(self, a: Atom, b: str) -> bool:
        """True if the operand ``a`` surely has the shape of the name ``b``."""
        if isinstance(a, Var) and self.origin(a.name) == self.origin(b):
            return True
        return self.is_scalar(a) and b in self.scalars


def shape_facts(fn: CoreFunction) -> ShapeFacts:
    """Derive the shape facts of an array-mode function."""
    from .rules.arrays import ELEMENTWISE, REDUCTIONS

    data = frozenset(k for k, v in fn.constants.items() if not isinstance(v, int | float))
    facts = ShapeFacts(array_constants=data)
    once = {name for name, n in assignment_counts(fn.body).items() if n == 1}
    for stmt in _straight_line(fn.body):
        if stmt.target not in once:
            continue
        if isinstance(stmt, Copy) and stmt.render is None and isinstance(stmt.source, Var):
            _same_as(facts, stmt.target, stmt.source)
        elif isinstance(stmt, Copy) and _is_number(stmt.source):
            facts.scalars.add(stmt.target)  # s = 0.0
        elif isinstance(stmt, Apply) and not stmt.forward:
            if getattr(stmt.rule.primal, "adcompile_helper", None) == "unbroadcast":
                _shaped_as(facts, stmt.target, stmt.args[1])  # a generated gradient read back
            elif stmt.rule.primal in ELEMENTWISE:
                _elementwise(facts, stmt)
            elif _gives_a_scalar(stmt, REDUCTIONS):
                facts.scalars.add(stmt.target)
    return facts


def _is_number(atom: Atom) -> bool:
    return isinstance(atom, Const) and isinstance(atom.value, int | float)


def _shaped_as(facts: ShapeFacts, target: str, like: Atom) -> None:
    """``target`` has the shape of the operand ``like``."""
    if facts.is_scalar(like):
        facts.scalars.add(target)
    elif isinstance(like, Var):
        _same_as(facts, target, like)


def _same_as(facts: ShapeFacts, target: str, source: Var) -> None:
    if source.name in facts.scalars:
        facts.scalars.add(target)
    else:
        facts.shaped_like[target] = source.name


def _elementwise(facts: ShapeFacts, stmt: Apply) -> None:
    """An elementwise result has the shape of its one operand that is not a scalar."""
    shaped = [a for a in stmt.args if not facts.is_scalar(a)]
    if not shaped:
        facts.scalars.add(stmt.target)
    elif isinstance(shaped[0], Var) and all(facts.same_shape(a, shaped[0].name) for a in shaped):
        facts.shaped_like[stmt.target] = shaped[0].name


def _reduces_everything(stmt: Apply) -> bool:
    """``np.sum(x)``: no axis and no keepdims, so the result is a scalar."""
    axis, keepdims = stmt.statics.get("axis"), stmt.statics.get("keepdims")
    no_axis = axis is None or (isinstance(axis, ast.Constant) and axis.value is None)
    kept = keepdims is not None and not (
        isinstance(keepdims, ast.Constant) and keepdims.value is False
    )
    return no_axis and not kept


def _gives_a_scalar(stmt: Apply, reductions: frozenset[object]) -> bool:
    """A whole-array reduction, or an einsum with no output label."""
    if stmt.rule.primal in reductions:
        return _reduces_everything(stmt)
    import numpy

    return stmt.rule.primal is numpy.einsum and _contracts_everything(stmt)


def _contracts_everything(stmt: Apply) -> bool:
    """``np.einsum("i,i->", x, y)``: no output label, so the result is a scalar."""
    from .einsum import EinsumError, parse_subscripts

    text = stmt.statics.get("subscripts")
    if not (isinstance(text, ast.Constant) and isinstance(text.value, str)):
        return False
    try:
        return parse_subscripts(text.value, len(stmt.args)).output == ()
    except EinsumError:
        return False


def _straight_line(block: list[Stmt]) -> list[Apply | Copy]:
    """The statements outside branches and loops, in order (inside them shapes may vary)."""
    return [s for s in block if isinstance(s, Apply | Copy)]
