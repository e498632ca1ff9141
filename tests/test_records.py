"""What loops record for the reverse sweep: recomputing is preferred to recording (issue 3)."""

from __future__ import annotations

import ast
import math

from adcompile import grad
from adcompile.reference import assert_grad_matches_mp


def step(x, a, n):
    for _ in range(n):
        x = x - 0.1 * math.sin(x) * a
    return x


def mixed(x, y, n):
    for _ in range(n):
        t = math.exp(y * 0.5)  # y changes each iteration but nothing else needs it recorded
        y = y + 0.25
        x = x * t + math.cos(x)
    return x


def appended(source: str) -> list[ast.expr]:
    """The values each ``.append(...)`` in the generated code records."""
    return [
        node.args[0]
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "append"
    ]


def test_values_computed_from_recorded_ones_are_recomputed_not_recorded() -> None:
    gradient = grad(step, wrt=("x", "a"))
    records = appended(gradient.source)
    # Only the loop-carried x is recorded; sin(x) and 0.1 * sin(x) are recomputed from it.
    assert len(records) == 1 and isinstance(records[0], ast.Name)
    points = [{"x": 0.7, "a": 1.3, "n": 50}, {"x": -2.0, "a": 0.4, "n": 7}]
    assert_grad_matches_mp(step, points, ("x", "a"), gradient=gradient)


def test_values_whose_operands_are_not_recorded_stay_recorded() -> None:
    gradient = grad(mixed, wrt=("x", "y"))
    (record,) = appended(gradient.source)
    recorded = {e.id for e in (record.elts if isinstance(record, ast.Tuple) else [record])}
    # exp(y * 0.5) would need the old y: t itself is recorded instead.
    assert any(name.startswith("t") for name in recorded), gradient.source
    points = [{"x": 0.3, "y": -0.5, "n": 6}, {"x": 1.1, "y": 0.2, "n": 3}]
    assert_grad_matches_mp(mixed, points, ("x", "y"), gradient=gradient)


def test_recomputed_values_are_bitwise_the_forward_ones() -> None:
    # The gradient with recomputation equals, to the last bit, the one with every pass off
    # (same arithmetic in the same order).
    args = (0.7, 1.3, 200)
    assert grad(step, wrt=("x", "a"))(*args) == grad(step, wrt=("x", "a"), optimize=False)(*args)
