"""Every built-in derivative rule, run as plain Python, against SymPy's derivative.

The rule templates are what the compiler inlines into generated code, so a wrong template
means wrong gradients everywhere. Each rule must have a SymPy counterpart (a new rule without
one fails here, by name) and must agree with ``sympy.diff`` of it at random points.
"""

import math
import random

import pytest
import sympy as sp

from adcompile.forward import rule_tangent_function
from adcompile.rules import BUILTIN_RULES, Rule, RuleTable
from adcompile.symbolic import rule_domain, sample_rule_arguments, sympy_counterpart

POINTS_PER_RULE = 20
RTOL = 1e-10

RULES = list(BUILTIN_RULES)


def rule_id(rule: Rule) -> str:
    return f"{rule.name}/{rule.arity}"


def call_template(rule: Rule, args: tuple[float, ...], g: float) -> tuple[float | None, ...]:
    """Run the template as the generated code would: primal result first, then the adjoints."""
    adjoints = rule.template(*args, rule.primal(*args), g)
    return adjoints if isinstance(adjoints, tuple) else (adjoints,)


def sympy_partials(rule: Rule) -> tuple[list[sp.Symbol], list[sp.Expr]]:
    counterpart = sympy_counterpart(rule.primal, rule.arity)
    assert counterpart is not None, (
        f"rule {rule_id(rule)} has no SymPy counterpart: pair it in "
        "adcompile.symbolic.SYMPY_COUNTERPARTS so it can be checked"
    )
    symbols = list(sp.symbols(f"a0:{rule.arity}", real=True))
    expr = counterpart(*symbols)
    return symbols, [sp.diff(expr, s) for s in symbols]


def check_rule(rule: Rule, points: int = POINTS_PER_RULE) -> None:
    """Assert that ``rule`` agrees with SymPy at ``points`` seeded random points."""
    symbols, partials = sympy_partials(rule)
    rng = random.Random(rule_id(rule))
    for _ in range(points):
        args = sample_rule_arguments(rule.primal, rule.arity, rng)
        adjoints = call_template(rule, args, 1.0)
        assert len(adjoints) == rule.arity, f"rule {rule_id(rule)} returned {adjoints!r}"
        subs = {s: sp.Float(a, 30) for s, a in zip(symbols, args, strict=True)}
        for index, (adjoint, partial) in enumerate(zip(adjoints, partials, strict=True)):
            expected = float(partial.evalf(30, subs=subs))
            where = f"rule {rule_id(rule)}, argument {index}, at {args}"
            if adjoint is None:
                # None promises "no derivative": the true derivative must vanish there.
                assert expected == 0.0, f"{where}: template says None, SymPy says {expected!r}"
            else:
                assert math.isclose(adjoint, expected, rel_tol=RTOL), (
                    f"{where}: template gives {adjoint!r}, SymPy gives {expected!r}"
                )


@pytest.mark.parametrize("rule", RULES, ids=rule_id)
def test_rule_matches_sympy(rule: Rule) -> None:
    check_rule(rule)


@pytest.mark.parametrize("rule", RULES, ids=rule_id)
def test_rule_is_linear_in_the_adjoint(rule: Rule) -> None:
    # With g = 1 a template that forgot to multiply by g would still pass the check above.
    rng = random.Random(rule_id(rule) + "/g")
    args = sample_rule_arguments(rule.primal, rule.arity, rng)
    scale = -1.75
    unit = call_template(rule, args, 1.0)
    scaled = call_template(rule, args, scale)
    for one, many in zip(unit, scaled, strict=True):
        if one is None:
            assert many is None
        else:
            assert math.isclose(many, scale * one, rel_tol=1e-12, abs_tol=1e-300)


def test_rule_table_is_not_empty() -> None:
    # Guards against parametrizing over nothing (every test above would then vanish).
    names = {rule_id(rule) for rule in RULES}
    assert {"math.sin/1", "operator.mul/2", "math.log/2"} <= names


def test_rule_domains_cover_every_rule() -> None:
    for rule in RULES:
        domain = rule_domain(rule.primal, rule.arity)
        assert domain is not None and len(domain) == rule.arity, rule_id(rule)
        assert all(low < high for low, high in domain), rule_id(rule)


def test_a_rule_without_counterpart_fails_by_name() -> None:
    def gamma(x, result, g):
        return g * result * math.log(x)

    rule = RuleTable().register(math.gamma, gamma)
    with pytest.raises(AssertionError, match=r"math\.gamma/1 has no SymPy counterpart"):
        check_rule(rule)


def test_a_wrong_template_fails() -> None:
    def sin(x, result, g):
        return g * math.sin(x)  # the derivative of sin is cos

    rule = RuleTable().register(math.sin, sin)
    with pytest.raises(AssertionError, match=r"rule math\.sin/1, argument 0"):
        check_rule(rule)


def test_a_wrong_none_fails() -> None:
    def mod(a, b, result, g):
        return g, None  # d(a % b)/db = -(a // b), not zero

    rule = RuleTable().register(__import__("operator").mod, mod)
    with pytest.raises(AssertionError, match="template says None"):
        check_rule(rule)


def check_tangent(rule: Rule, points: int = POINTS_PER_RULE) -> None:
    """Assert that the tangent forward mode derives from ``rule`` is SymPy's differential."""
    symbols, partials = sympy_partials(rule)
    tangent = rule_tangent_function(rule)
    rng = random.Random(rule_id(rule) + "/tangent")
    for _ in range(points):
        args = sample_rule_arguments(rule.primal, rule.arity, rng)
        directions = [rng.uniform(-2.0, 2.0) for _ in args]
        got = tangent(*args, rule.primal(*args), *directions)
        subs = {s: sp.Float(a, 30) for s, a in zip(symbols, args, strict=True)}
        expected = float(
            sum(p.evalf(30, subs=subs) * d for p, d in zip(partials, directions, strict=True))
        )
        assert math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-12), (
            f"tangent of rule {rule_id(rule)} at {args} along {directions}: "
            f"got {got!r}, SymPy gives {expected!r}"
        )


@pytest.mark.parametrize("rule", RULES, ids=rule_id)
def test_tangent_rule_matches_sympy(rule: Rule) -> None:
    check_tangent(rule)


def test_a_wrong_template_gives_a_wrong_tangent() -> None:
    def mul(a, b, result, g):
        return g * b, g * b  # d(a*b)/db = a

    rule = RuleTable().register(__import__("operator").mul, mul)
    with pytest.raises(AssertionError, match=r"tangent of rule operator\.mul/2"):
        check_tangent(rule)
