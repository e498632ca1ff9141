"""Every array rule and every array tangent template, against SymPy's exact derivatives.

``test_array_rules.py`` checks the array rule templates against finite differences on its
``CASES`` (and the elementwise ones on scalars against ``sympy.diff``);
``test_array_tangent_rules.py`` does the same for the forward-mode tangent templates. This
file checks both kinds against exact derivatives on those same cases: reductions, linear
algebra, shapes, indexing, broadcasting elementwise functions, and the helpers that
generated gradient code calls (they have rules of their own, for second derivatives).

The primal runs on NumPy object arrays of SymPy expressions: most NumPy functions accept
them; elementwise ones run their SymPy counterpart on each element; the few others have a
counterpart in ``symbolic_table``. For a rule, each differentiated argument becomes an array
of symbols, and the expected adjoint of argument ``i`` is ``d <g, f(args)> / d args[i]``
by ``sympy.diff``; for a tangent template, argument ``i`` becomes ``args[i] + t d`` and the
expected term is ``d f / dt`` at ``t = 0``. Both are evaluated at the case's point in
40-digit arithmetic, and the float64 templates must agree to ``RTOL``. A new rule gets both
checks by being in the rule table: if SymPy cannot run its primal, the check names it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from adcompile.forward import array_tangent_template
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
    _case_params,
    call_primal,
    call_template,
    case_point,
    checked_arguments,
    draw_like,
    is_elementwise,
    rule_id,
    sympy_table,
)
from .test_array_tangent_rules import entry_of, term_of

RTOL = 1e-9  # float64 templates against exact derivatives: rounding only
DIGITS = 40  # precision of SymPy's evaluation at the case's point

Symbolic = Callable[..., Any]
ELEMENTWISE_PRIMALS = frozenset(rule.primal for rule in RULES if is_elementwise(rule))


# ----- SymPy counterparts of the primals NumPy cannot run on object arrays -----------------


def _each(function: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``function`` applied to every element of an object array (or to a lone expression)."""

    def apply(x: Any) -> Any:
        """Map over the elements."""
        if isinstance(x, np.ndarray):
            return np.frompyfunc(function, 1, 1)(x)
        return function(x)

    return apply


def _balanced(combine: Callable[..., Any], items: list[Any]) -> Any:
    """``combine`` of all ``items`` as a balanced tree of pairs, unevaluated: SymPy
    differentiates that in time linear in the count (a flat ``Max`` of n takes n**2)."""
    while len(items) > 1:
        pairs = [combine(*items[k : k + 2], evaluate=False) for k in range(0, len(items) - 1, 2)]
        items = pairs + items[len(items) - len(items) % 2 :]
    return items[0]


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
            out[index] = _balanced(combine, list(groups[index]))
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

    inverse = _per_matrix(lambda m: m.adjugate() / m.det(), matrix_out=True)

    def solve(a: Any, b: Any) -> Any:
        """``inv(a) @ b``: exact, so the same as solving (``b`` a vector only when 1-d)."""
        return np.matmul(inverse(a), b)

    half = sympy.Rational(1, 2)
    return {
        np.std: std,
        np.max: _grouped_reduce(sympy.Max),
        np.min: _grouped_reduce(sympy.Min),
        np.linalg.norm: norm,
        np.linalg.det: _per_matrix(lambda m: m.det(method="berkowitz"), matrix_out=False),
        np.linalg.inv: inverse,
        np.linalg.solve: solve,
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
    if rule.primal in ELEMENTWISE_PRIMALS:  # the scalar SymPy counterpart, element by element
        # A boolean condition (np.where) as 0.0/1.0: SymPy's false is no number.
        args = [a.astype(float) if np.asarray(a).dtype == bool else a for a in args]
        return np.frompyfunc(sympy_table()[rule.primal][0], rule.arity, 1)(*args)
    counterpart = symbolic_table().get(rule.primal)
    if counterpart is None:
        return call_primal(rule, args, statics)
    if rule.variadic:
        return counterpart(list(args), **statics)
    return counterpart(*args, **statics)


def exact_adjoints(
    rule: Rule, case: Case, args: Sequence[Any], g: Any
) -> dict[int, np.ndarray | float]:
    """``d <g, f(args)> / d args[i]`` for each checked ``i``, exact, at the case's point."""
    import sympy

    wrt = checked_arguments(case, args)
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
    rng, args, statics, result = case_point(rule, case, seed)
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


def exact(value: Any) -> Any:
    """A float or float array as 40-digit SymPy numbers (an object array for an array)."""
    import sympy

    if not isinstance(value, np.ndarray):
        return sympy.Float(float(value), DIGITS)
    return np.frompyfunc(lambda v: sympy.Float(float(v), DIGITS), 1, 1)(value)


def exact_tangent(
    rule: Rule,
    statics: Mapping[str, object],
    args: Sequence[Any],
    wrt: tuple[int, ...],
    i: int,
    d: Any,
) -> Any:
    """``d f(args with args[i] + t d) / dt`` at ``t = 0``, exact, as floats."""
    import sympy

    t = sympy.Symbol("t", real=True)
    # Every differentiated argument exact (object arrays, as the helpers' dtype logic then
    # sees consistently); argument ``i`` moving along ``d``.
    moved = [exact(a) if j in wrt else a for j, a in enumerate(args)]
    moved[i] = moved[i] + t * (exact(d) if isinstance(d, np.ndarray) else d)
    value = run_symbolically(rule, moved, statics)
    rate = np.frompyfunc(lambda v: float(sympy.diff(v, t).subs(t, 0).evalf(DIGITS)), 1, 1)
    return np.asarray(rate(value), dtype=np.float64)


def check_tangent_against_sympy(
    rule: Rule, case: Case, template: Any = None, seed: int = 0
) -> None:
    """Each argument's tangent term on ``case`` equals SymPy's exact rate of change."""
    where = f"tangent of {rule_id(rule)}, case {case.label}"
    template = template or array_tangent_template(rule)
    rng, args, statics, result = case_point(rule, case, seed)
    wrt = checked_arguments(case, args)
    for i in wrt:
        d = draw_like(rng, np.shape(args[i]))
        try:
            expected = exact_tangent(rule, statics, args, wrt, i, d)
        except (TypeError, ValueError) as exc:
            raise AssertionError(
                f"{where}: SymPy cannot run the primal on symbols ({exc}); add a counterpart "
                "to SYMBOLIC in tests/test_array_rules_sympy.py"
            ) from exc
        term = 0.0
        if entry_of(rule, template, i) is not None:
            term = term_of(rule, template, i, args, result, d, statics)
        got = np.broadcast_to(np.asarray(term, dtype=np.float64), np.shape(expected))
        scale = 1.0 + float(np.max(np.abs(expected), initial=0.0))
        error = float(np.max(np.abs(got - expected), initial=0.0))
        assert error <= RTOL * scale, (
            f"{where}, argument {i}: the template's term differs from SymPy's by {error!r}"
            f"\ntemplate: {got!r}\nSymPy:    {expected!r}"
        )


@pytest.mark.parametrize(("rule", "case"), _case_params())
def test_rule_matches_sympy(rule: Rule, case: Case) -> None:
    check_against_sympy(rule, case)


@pytest.mark.parametrize(("rule", "case"), _case_params())
def test_tangent_matches_sympy(rule: Rule, case: Case) -> None:
    check_tangent_against_sympy(rule, case)


def test_every_rule_is_checked() -> None:
    # Guards against parametrizing over nothing, and against rules the checks skip.
    checked = {rule_id(p.values[0]) for p in _case_params()}
    assert len(_case_params()) > 300
    assert checked == {rule_id(rule) for rule in RULES}


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
    rule = _rule(primal, arity)
    broken = dataclasses.replace(rule, template=_wrong(rule.template, change))
    case = CASES[(primal, arity)][-1]
    with pytest.raises(AssertionError, match="differs from SymPy"):
        check_against_sympy(broken, case)


def test_a_primal_sympy_cannot_run_is_named() -> None:
    rule = dataclasses.replace(_rule(np.trace, 1), primal=lambda x: math.fsum(np.ravel(x)))
    with pytest.raises(AssertionError, match="add a counterpart to SYMBOLIC"):
        check_against_sympy(rule, CASES[(np.trace, 1)][0])


def test_a_wrong_tangent_fails() -> None:
    from adcompile.rules import RuleTable

    def trace_tangent(x, result, g):
        return np.trace(g) * 1.0000001  # off in the 7th digit

    wrong = RuleTable().register(np.trace, trace_tangent)
    with pytest.raises(AssertionError, match="term differs from SymPy"):
        check_tangent_against_sympy(_rule(np.trace, 1), CASES[(np.trace, 1)][0], wrong)


def test_a_wrong_derived_elementwise_tangent_fails() -> None:
    # Elementwise tangents are derived from the reverse templates (forward.py): a wrong
    # reverse template must show in the tangent too.
    rule = _rule(np.tanh, 1)
    broken = dataclasses.replace(rule, template=_tanh_off)
    with pytest.raises(AssertionError, match="term differs from SymPy"):
        check_tangent_against_sympy(broken, CASES[(np.tanh, 1)][0])


def _tanh_off(x, result, g):
    return g * (1.0 - result * result * 1.0000001)
