"""Every array tangent template, run as plain NumPy, against finite differences.

Forward mode (``adcompile/forward.py``) inlines one tangent template per array primitive:
an explicit one from ``TANGENT_RULES`` (``rules/arrays.py``, ``rules/helper_rules.py``), or,
for an elementwise primitive, its reverse template with ``unbroadcast(e, x)`` read as ``e``.
This file evaluates those templates the way generated code does (the parsed expressions,
with ``g`` the tangent of the argument whose term each one is) on every check case of
``tests/test_array_rules.py``, and compares each argument's term with a central finite
difference of the primal along a random direction of that argument, the others held fixed.
A term of ``None`` must mean the primal does not move along that argument.

Generated code uses one argument's term alone as the tangent of the result when the other
arguments are constants, so each term must have the result's shape. An elementwise term has
its argument's shape, which broadcasting may have stretched: forward.py spreads it with
``broadcast_like`` where the shapes may differ, so for those the term must broadcast to the
result's shape and ``broadcast_like`` must give that shape; every other term must have it.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from adcompile.forward import TangentTemplate, array_tangent_template
from adcompile.rules import RuleTable
from adcompile.rules.array_helpers import HELPERS, broadcast_like
from adcompile.rules.arrays import ELEMENTWISE
from adcompile.rules.registry import REQUIRED, TANGENT_RULES, Rule
from tests.test_array_rules import (
    ATOL,
    CASES,
    DIRECTIONS,
    RTOL,
    RULES,
    STEP,
    Case,
    call_primal,
    case_point,
    checked_arguments,
    draw_like,
    rule_id,
)

Template = Rule | TangentTemplate

# ----- evaluating a tangent template ---------------------------------------------------------

NAMESPACE: dict[str, object] = {"np": np, "math": math, **HELPERS}


def template_parameters(rule: Rule, template: Template) -> tuple[list[str], dict[str, object]]:
    """The names of the primal arguments a template reads, and its static defaults."""
    source = template if isinstance(template, Rule) else rule  # a derived one: the rule's
    statics = {name: default for name, default in source.statics if default is not REQUIRED}
    return list(source.params[: source.arity]), statics


def evaluate_term(
    rule: Rule,
    template: Template,
    i: int,
    args: Sequence[Any],
    result: Any,
    tangent: Any,
    statics: Mapping[str, object],
) -> Any:
    """The template's term of argument ``i`` with ``g = tangent``, as generated code has it.

    For a variadic rule ``args`` is the list of elements and ``tangent`` the list of their
    tangents (the template has one term, of the whole list).
    """
    setup, terms = template.parsed
    expr = terms[i]
    assert expr is not None
    names, defaults = template_parameters(rule, template)
    values = [list(args)] if rule.variadic else list(args)
    scope = {**NAMESPACE, **defaults, **statics, **dict(zip(names, values, strict=True))}
    scope.update(result=result, g=tangent)
    for stmt in setup:
        exec(compile(ast.fix_missing_locations(ast.Module([stmt], [])), "<setup>", "exec"), scope)
    return eval(compile(ast.fix_missing_locations(ast.Expression(expr)), "<term>", "eval"), scope)


def tangent_difference(
    rule: Rule, args: list[Any], statics: Mapping[str, object], i: int, d: Any
) -> Any:
    """Central finite difference of ``t -> primal(args with args[i] + t d)`` at 0."""

    def shifted(t: float) -> Any:
        """The primal with argument ``i`` moved by ``t d``."""
        moved = list(args)
        moved[i] = args[i] + t * d
        return np.asarray(call_primal(rule, moved, statics), dtype=np.float64)

    return (shifted(STEP) - shifted(-STEP)) / (2 * STEP)


def term_of(
    rule: Rule, template: Template, i: int, args: list[Any], result: Any, d: Any, statics: dict
) -> Any:
    """Argument ``i``'s term with tangent ``d``, the others constant (variadic: zero)."""
    if rule.variadic:  # one term of the list of tangents; constant elements get zeros
        tangents = [d if j == i else np.zeros_like(a) for j, a in enumerate(args)]
        return evaluate_term(rule, template, 0, args, result, tangents, statics)
    return evaluate_term(rule, template, i, args, result, d, statics)


def entry_of(rule: Rule, template: Template, i: int) -> ast.expr | None:
    """The template's expression for argument (or, variadic, element) ``i``."""
    return template.parsed[1][0 if rule.variadic else i]


def check_tangent_case(
    rule: Rule, template: Template, case: Case, *, shapes: bool = False, seed: int = 0
) -> None:
    """Check each argument's tangent term against finite differences of the primal.

    With ``shapes``, check instead that each term has the shape of the result.
    """
    where = f"rule {rule_id(rule)}, case {case.label}"
    rng, args, statics, result = case_point(rule, case, seed)
    scale = 1.0 + float(np.max(np.abs(result), initial=0.0))  # initial: an empty result
    for i in checked_arguments(case, args):
        for _ in range(DIRECTIONS):
            d = draw_like(rng, np.shape(args[i]))
            expected = tangent_difference(rule, args, statics, i, d)
            if entry_of(rule, template, i) is None:
                assert np.max(np.abs(expected)) <= ATOL * scale, (
                    f"{where}, argument {i}: the tangent template says None (no derivative), "
                    f"finite differences say {expected!r}"
                )
                continue
            term = term_of(rule, template, i, args, result, d, statics)
            if shapes:
                if rule.primal in ELEMENTWISE:  # forward.py spreads these (broadcast_like)
                    term = broadcast_like(term, result)
                assert np.shape(term) == np.shape(result), (
                    f"{where}, argument {i}: its tangent term has shape {np.shape(term)}, "
                    f"the result {np.shape(result)}"
                )
                continue
            try:
                got = np.broadcast_to(np.asarray(term, dtype=np.float64), np.shape(expected))
            except ValueError:
                raise AssertionError(
                    f"{where}, argument {i}: its tangent term has shape {np.shape(term)}, "
                    f"which does not broadcast to the result's {np.shape(result)}"
                ) from None
            tolerance = RTOL * np.maximum(np.abs(got), np.abs(expected)) + ATOL * scale
            bad = np.abs(got - expected) > tolerance
            assert not bad.any(), (
                f"{where}, argument {i}: tangent term {got!r}, finite differences give {expected!r}"
            )


# ----- the tests -------------------------------------------------------------------------------


def missing_tangents(rules: Sequence[Rule]) -> list[str]:
    """The rules with neither an explicit tangent template nor an elementwise primal."""
    return [
        rule_id(rule)
        for rule in rules
        if TANGENT_RULES.lookup(rule.primal, rule.arity) is None and rule.primal not in ELEMENTWISE
    ]


def test_every_array_rule_has_a_tangent() -> None:
    missing = missing_tangents(RULES)
    assert not missing, (
        f"array rules without a tangent template: {', '.join(missing)}; add an "
        "@array_tangent template for them (or list the primal in ELEMENTWISE if it is one)"
    )


def test_a_rule_without_a_tangent_fails_by_name() -> None:
    def deg2rad(x, result, g):
        return g * (np.pi / 180.0)

    rule = RuleTable().register(np.deg2rad, deg2rad)
    assert missing_tangents([*RULES, rule]) == ["numpy.deg2rad/1"]


def test_tangent_templates_name_only_existing_rules() -> None:
    known = {(id(rule.primal), rule.arity) for rule in RULES}
    stale = [rule_id(t) for t in TANGENT_RULES if (id(t.primal), t.arity) not in known]
    assert not stale, f"tangent templates for primals with no array rule: {stale}"


@pytest.mark.parametrize("rule", RULES, ids=rule_id)
def test_tangent_template_fits_the_rule(rule: Rule) -> None:
    template = array_tangent_template(rule)
    adjoints = rule.parsed[1]
    terms = template.parsed[1]
    assert template.variadic == rule.variadic
    assert len(terms) == len(adjoints), f"{rule_id(rule)}: {len(terms)} terms, {len(adjoints)}"
    # A derivative that one mode drops and the other keeps would make them disagree.
    assert [t is None for t in terms] == [a is None for a in adjoints], (
        f"{rule_id(rule)}: the tangent template and the reverse rule disagree on which "
        "arguments have no derivative"
    )
    if isinstance(template, Rule):
        assert template.statics == rule.statics, f"{rule_id(rule)}: static parameters differ"


def _tangent_params() -> list:
    """One pytest parameter per (rule, case)."""
    return [
        pytest.param(rule, case, id=f"{rule_id(rule)}-{case.label}")
        for rule in RULES
        for case in CASES.get((rule.primal, rule.arity), [])
    ]


@pytest.mark.parametrize(("rule", "case"), _tangent_params())
def test_tangent_matches_finite_differences(rule: Rule, case: Case) -> None:
    check_tangent_case(rule, array_tangent_template(rule), case)


@pytest.mark.parametrize(("rule", "case"), _tangent_params())
def test_tangent_term_has_the_result_shape(rule: Rule, case: Case) -> None:
    check_tangent_case(rule, array_tangent_template(rule), case, shapes=True)


def test_every_case_is_checked() -> None:
    # Guards against parametrizing over nothing, and against rules the check skips.
    params = _tangent_params()
    assert len(params) > 300
    assert {rule_id(p.values[0]) for p in params} == {rule_id(rule) for rule in RULES}


# ----- the check itself fails on wrong templates ---------------------------------------------


def _tangent(primal: object, template: Any, *, variadic: bool = False) -> Rule:
    """``template`` registered as a tangent rule in a table of its own."""
    return RuleTable().register(primal, template, variadic=variadic)


def _rule(primal: object, arity: int) -> Rule:
    """The array rule of ``primal``."""
    found = next((r for r in RULES if r.primal is primal and r.arity == arity), None)
    assert found is not None
    return found


def test_a_wrong_tangent_fails() -> None:
    def moveaxis(x, result, g, *, source, destination):
        return np.moveaxis(g, destination, source)  # the reverse rule's, not the tangent

    rule = _rule(np.moveaxis, 1)
    case = next(c for c in CASES[(np.moveaxis, 1)] if c.label == "first-to-last")
    with pytest.raises(AssertionError, match=r"numpy\.moveaxis/1, case first-to-last"):
        check_tangent_case(rule, _tangent(np.moveaxis, moveaxis), case)


def test_a_tangent_that_ignores_g_fails() -> None:
    def det(x, result, g):
        return result * np.trace(np.linalg.inv(x), axis1=-2, axis2=-1)

    rule = _rule(np.linalg.det, 1)
    with pytest.raises(AssertionError, match="finite differences give"):
        check_tangent_case(rule, _tangent(np.linalg.det, det), CASES[(np.linalg.det, 1)][0])


def test_a_wrong_none_in_a_tangent_fails() -> None:
    def full(shape, fill, result, g):
        return None, None

    rule = _rule(np.full, 2)
    with pytest.raises(AssertionError, match="argument 1: the tangent template says None"):
        check_tangent_case(rule, _tangent(np.full, full), CASES[(np.full, 2)][0])


def test_a_wrong_variadic_tangent_fails() -> None:
    def stack(arrays, result, g, *, axis=0):
        return np.stack(g[::-1], axis=axis)

    rule = _rule(np.stack, 1)
    with pytest.raises(AssertionError, match=r"numpy\.stack/1"):
        check_tangent_case(rule, _tangent(np.stack, stack, variadic=True), CASES[(np.stack, 1)][1])


def test_a_term_of_the_operand_shape_fails_the_shape_check() -> None:
    def outer(a, b, result, g):
        return g * np.mean(b), g * np.mean(a)  # the operand's shape, not the result's

    rule = _rule(np.outer, 2)
    case = next(c for c in CASES[(np.outer, 2)] if c.label == "vectors")
    with pytest.raises(AssertionError, match=r"tangent term has shape \(3,\), the result"):
        check_tangent_case(rule, _tangent(np.outer, outer), case, shapes=True)
