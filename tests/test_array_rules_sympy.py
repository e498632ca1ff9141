"""Every array rule that is not elementwise, against SymPy's exact derivatives.

``test_array_rules.py`` checks each array rule template against finite differences on its
``CASES`` and checks the elementwise rules on scalars against ``sympy.diff``. This file adds
the exact check for the rest (reductions, linear algebra, shapes, indexing, and the helpers
that generated gradient code calls, which have rules of their own for second derivatives).

For each case, the arguments the rule differentiates become NumPy object arrays of SymPy
symbols; the primal is run on them (most NumPy functions accept object arrays; the few that
do not have a SymPy counterpart in ``SYMBOLIC``), which gives each element of the result as
an exact expression. The expected adjoint of argument ``i`` is then ``d <g, f(args)> / d
args[i]`` by ``sympy.diff``, evaluated at the case's point in 40-digit arithmetic, and the
template's float64 adjoint must agree with it to ``RTOL``. A new rule gets this check by
being in the rule table: if SymPy cannot run its primal, the check fails and names it.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from adcompile.rules.array_helpers import (
    assemble,
    cofactors,
    extreme_adjoint,
    extreme_tangent,
    restore_axes,
    scatter,
)
from adcompile.rules.registry import Rule

from .test_array_rules import (
    CASES,
    RULES,
    Case,
    call_primal,
    call_template,
    draw_like,
    is_elementwise,
    rule_id,
)

RTOL = 1e-9  # float64 templates against exact derivatives: rounding only
DIGITS = 40  # precision of SymPy's evaluation at the case's point

Symbolic = Callable[..., Any]


# ----- SymPy counterparts of the primals NumPy cannot run on object arrays -----------------


def _each(function: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``function`` applied to every element of an object array (or to a lone expression)."""

    def apply(x: Any) -> Any:
        """Map over the elements."""
        if isinstance(x, np.ndarray):
            return np.frompyfunc(function, 1, 1)(x)
        return function(x)

    return apply


def _grouped_reduce(combine: Callable[..., Any]) -> Symbolic:
    """A reduction ``combine(*elements)`` over ``axis`` (an int, a tuple or None)."""

    def reduce(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        """Reduce each group of elements that ``axis`` gathers."""
        x = np.asarray(x, dtype=object)
        axes = tuple(range(x.ndim)) if axis is None else np.atleast_1d(axis).tolist()
        axes = sorted(a % x.ndim for a in axes)
        kept = [a for a in range(x.ndim) if a not in axes]
        groups = np.transpose(x, kept + axes).reshape([x.shape[a] for a in kept] + [-1])
        out = np.empty(groups.shape[:-1], dtype=object)
        for index in np.ndindex(out.shape):
            out[index] = combine(*groups[index])
        if keepdims:
            out = np.expand_dims(out, tuple(axes))
        return out[()] if out.ndim == 0 else out

    return reduce


def _per_matrix(function: Callable[[Any], Any], matrix_out: bool) -> Symbolic:
    """``function`` of a SymPy Matrix, over each matrix of a stack (last two axes)."""

    def apply(x: Any) -> Any:
        """Convert each matrix, apply, and stack the results back."""
        import sympy

        x = np.asarray(x, dtype=object)
        out = np.empty(x.shape if matrix_out else x.shape[:-2], dtype=object)
        for index in np.ndindex(x.shape[:-2]):
            value = function(sympy.Matrix(x[index]))
            out[index] = np.array(value.tolist(), dtype=object) if matrix_out else value
        return out[()] if out.ndim == 0 else out

    return apply


def _extreme_adjoint(g: Any, x: Any, result: Any, axis: Any, keepdims: bool) -> Any:
    """``extreme_adjoint``, linear in ``g``: its numeric weights times ``g`` put back in place.

    The weights (which elements are the extremes) depend on ``x`` only, which the case keeps
    numeric; ``bool * Symbol`` is what stops the helper itself from running on symbols."""
    weights = extreme_adjoint(np.ones(np.shape(g)), x, result, axis, keepdims)
    return weights * restore_axes(g, x, axis, keepdims)


def _extreme_tangent(g: Any, x: Any, result: Any, axis: Any, keepdims: bool) -> Any:
    """``extreme_tangent``, linear in ``g``: the weighted sum over the tied extremes."""
    weights = extreme_adjoint(np.ones(np.shape(result)), x, result, axis, keepdims)
    return np.sum(weights * g, axis=axis, keepdims=keepdims)


def _scatter(g: Any, x: Any, index: Any) -> Any:
    """``scatter`` into an object array: ``g`` added at ``index`` into zeros shaped like ``x``."""
    out = np.zeros(np.shape(x), dtype=object)
    np.add.at(out, index, g)
    return out


def _assemble(parts: Sequence[Any], tree: Any, paths: Sequence[Any]) -> Any:
    """``assemble`` over a tree of object zeros, so that symbolic parts fit in."""
    return assemble(list(parts), np.zeros(np.shape(tree), dtype=object), paths)


def symbolic_table() -> dict[object, Symbolic]:
    """Primal -> a function computing it on object arrays of SymPy expressions."""
    import sympy

    def norm(x: Any) -> Any:
        """The 2-norm of all elements."""
        return sympy.sqrt(np.sum(np.asarray(x) * np.asarray(x)))

    def std(x: Any, axis: Any = None, keepdims: bool = False, ddof: int = 0) -> Any:
        """The square root of NumPy's ``var`` (which runs on object arrays)."""
        return _each(sympy.sqrt)(np.var(x, axis=axis, keepdims=keepdims, ddof=ddof))

    def floor(v: Any) -> Any:
        """``floor`` as a staircase of unit steps (exact on [-5, 6), where the cases draw):
        SymPy leaves the derivative of its own ``floor`` unevaluated."""
        return -5 + sympy.Add(*(sympy.Heaviside(v - k) for k in range(-4, 6)))

    half = sympy.Rational(1, 2)
    return {
        np.std: std,
        np.max: _grouped_reduce(sympy.Max),
        np.min: _grouped_reduce(sympy.Min),
        np.linalg.norm: norm,
        np.linalg.det: _per_matrix(lambda m: m.det(method="berkowitz"), matrix_out=False),
        np.linalg.inv: _per_matrix(lambda m: m.adjugate() / m.det(), matrix_out=True),
        cofactors: _per_matrix(lambda m: m.adjugate().T, matrix_out=True),
        np.floor: _each(floor),
        np.ceil: _each(lambda v: -floor(-v)),
        np.trunc: _each(lambda v: sympy.sign(v) * floor(sympy.Abs(v))),
        np.rint: _each(lambda v: floor(v + half)),  # away from halves, as the cases are
        np.round: _each(lambda v: floor(v + half)),
        np.sign: _each(sympy.sign),
        extreme_adjoint: _extreme_adjoint,
        extreme_tangent: _extreme_tangent,
        scatter: _scatter,
        assemble: _assemble,
    }


# ----- the check ---------------------------------------------------------------------------


def symbols_like(value: Any, tag: str) -> Any:
    """A real SymPy symbol per element of ``value`` (one symbol for a Python float)."""
    import sympy

    if not isinstance(value, np.ndarray):
        return sympy.Symbol(tag, real=True)
    names = [sympy.Symbol(f"{tag}_{k}", real=True) for k in range(value.size)]
    return np.array(names, dtype=object).reshape(value.shape)


def run_symbolically(rule: Rule, args: Sequence[Any], statics: Mapping[str, object]) -> Any:
    """The rule's primal on symbolic arguments: NumPy itself, or its SymPy counterpart."""
    counterpart = symbolic_table().get(rule.primal)
    if counterpart is None:
        return call_primal(rule, args, statics)
    if rule.variadic:
        return counterpart(list(args), **statics)
    return counterpart(*args, **statics)


def differentiated(case: Case, args: Sequence[Any]) -> tuple[int, ...]:
    """The arguments the case checks: those it names, else every float one."""
    if case.wrt is not None:
        return case.wrt
    return tuple(i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f")


def exact_adjoints(
    rule: Rule, case: Case, args: Sequence[Any], g: Any
) -> dict[int, np.ndarray | float]:
    """``d <g, f(args)> / d args[i]`` for each checked ``i``, exact, at the case's point."""
    import sympy

    wrt = differentiated(case, args)
    symbolic = [symbols_like(a, f"a{i}") if i in wrt else a for i, a in enumerate(args)]
    value = run_symbolically(rule, symbolic, dict(case.statics))
    pairing = sympy.Add(*np.ravel(np.multiply(np.asarray(g, dtype=object), value)).tolist())
    point = {}
    for i in wrt:
        names, values = np.ravel(symbolic[i]).tolist(), np.ravel(args[i]).tolist()
        point.update({s: sympy.Float(float(v), DIGITS) for s, v in zip(names, values, strict=True)})
    out: dict[int, np.ndarray | float] = {}
    for i in wrt:
        partials = [
            float(sympy.diff(pairing, s).xreplace(point).evalf(DIGITS))
            for s in np.ravel(symbolic[i]).tolist()
        ]
        out[i] = np.reshape(partials, np.shape(args[i])) if np.ndim(args[i]) else partials[0]
    return out


def check_against_sympy(rule: Rule, case: Case, seed: int = 0) -> None:
    """The template's adjoints on ``case`` equal SymPy's exact ones to ``RTOL``."""
    where = f"rule {rule_id(rule)}, case {case.label}"
    rng = np.random.default_rng(seed)
    args = case.arguments(rng)
    statics = dict(case.statics)
    result = call_primal(rule, args, statics)
    g = draw_like(rng, np.shape(result))
    adjoints = call_template(rule, args, result, g, statics)
    try:
        expected = exact_adjoints(rule, case, args, g)
    except (TypeError, ValueError) as exc:
        raise AssertionError(
            f"{where}: SymPy cannot run the primal on symbols ({exc}); add a counterpart "
            "to SYMBOLIC in tests/test_array_rules_sympy.py"
        ) from exc
    for i, exact in expected.items():
        got = np.zeros(np.shape(exact)) if adjoints[i] is None else np.asarray(adjoints[i])
        scale = 1.0 + float(np.max(np.abs(exact), initial=0.0))
        error = float(np.max(np.abs(got - exact), initial=0.0))
        assert error <= RTOL * scale, (
            f"{where}, argument {i}: the template's adjoint differs from SymPy's by {error!r}"
            f"\ntemplate: {got!r}\nSymPy:    {np.asarray(exact)!r}"
        )


NON_ELEMENTWISE = [rule for rule in RULES if not is_elementwise(rule)]


def _params() -> list:
    """One parameter per (rule, case) of the rules this file checks, known defects marked."""
    params = []
    for rule in NON_ELEMENTWISE:
        for case in CASES.get((rule.primal, rule.arity), []):
            marks = []
            if case.xfail:
                marks = [pytest.mark.xfail(strict=True, raises=case.raises, reason=case.xfail)]
            params.append(pytest.param(rule, case, id=f"{rule_id(rule)}-{case.label}", marks=marks))
    return params


@pytest.mark.parametrize(("rule", "case"), _params())
def test_rule_matches_sympy(rule: Rule, case: Case) -> None:
    check_against_sympy(rule, case)


def test_every_rule_is_checked_against_sympy_somewhere() -> None:
    # The elementwise rules are checked on scalars in test_array_rules.py; the rest here,
    # once per case (and every rule has a case: test_every_array_rule_has_a_case).
    assert NON_ELEMENTWISE and len(NON_ELEMENTWISE) + sum(map(is_elementwise, RULES)) == len(RULES)
    unchecked = [rule_id(r) for r in NON_ELEMENTWISE if not CASES.get((r.primal, r.arity))]
    assert not unchecked, f"rules without a SymPy-checked case: {unchecked}"


def test_symbolic_table_names_only_rules() -> None:
    primals = {rule.primal for rule in RULES}
    stale = [f for f in symbolic_table() if f not in primals]
    assert not stale, f"SYMBOLIC names functions without a rule: {stale}"


# ----- the check itself can fail ------------------------------------------------------------


def _wrong(template: Callable[..., Any], change: Callable[[Any], Any]) -> Callable[..., Any]:
    """``template`` with its (first) adjoint changed by ``change``."""

    @functools.wraps(template)
    def wrong(*args: Any, **kwargs: Any) -> Any:
        out = template(*args, **kwargs)
        if isinstance(out, tuple):
            return (change(out[0]), *out[1:])
        return change(out)

    return wrong


def _rule(primal: object, arity: int) -> Rule:
    """The registered rule of ``primal`` with ``arity`` arguments."""
    return next(r for r in RULES if r.primal is primal and r.arity == arity)


@pytest.mark.parametrize(
    ("primal", "arity", "change"),
    [
        (np.trace, 1, lambda a: a * (1.0 + 1e-7)),  # off in the 7th digit
        (np.linalg.inv, 1, lambda a: np.swapaxes(a, -1, -2)),  # a transpose forgotten
        (operator.matmul, 2, lambda a: -a),
        (np.max, 1, lambda a: a * 0.5),  # the adjoint halved
    ],
    ids=["trace-scaled", "inv-transposed", "matmul-negated", "max-halved"],
)
def test_a_wrong_template_fails(primal: object, arity: int, change: Callable[[Any], Any]) -> None:
    import dataclasses

    rule = _rule(primal, arity)
    broken = dataclasses.replace(rule, template=_wrong(rule.template, change))
    case = CASES[(primal, arity)][-1]
    with pytest.raises(AssertionError, match="differs from SymPy"):
        check_against_sympy(broken, case)


def test_a_primal_sympy_cannot_run_is_named() -> None:
    import dataclasses

    rule = dataclasses.replace(_rule(np.trace, 1), primal=lambda x: math.fsum(np.ravel(x)))
    with pytest.raises(AssertionError, match="add a counterpart to SYMBOLIC"):
        check_against_sympy(rule, CASES[(np.trace, 1)][0])
