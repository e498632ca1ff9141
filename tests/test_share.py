"""The share pass (``adcompile/share.py``): common subexpressions between adjoint statements.

Each test runs the pass on a few statements tagged as the transform tags them, and checks the
text that comes out; ``test_optimize_differential.py`` checks on every corpus function that
the pass, alone and with the others, changes no result.
"""

from __future__ import annotations

import ast
import itertools
import math

from adcompile import grad
from adcompile.reverse import ADJOINT, FORWARD
from adcompile.share import share_common_subexpressions


def _run(source: str, forward_lines: int = 0) -> str:
    """The pass over ``source``; its first ``forward_lines`` statements are forward ones."""
    statements = ast.parse(source).body
    for i, top in enumerate(statements):
        for stmt in ast.walk(top):  # statements nested in an ``if`` are tagged too
            if isinstance(stmt, ast.stmt):
                stmt.adcompile_sweep = FORWARD if i < forward_lines else ADJOINT
                stmt.adcompile_line = i + 1
    counter = itertools.count(1)
    out = share_common_subexpressions(statements, lambda: f"c{next(counter)}", frozenset({"math"}))
    return "\n".join(ast.unparse(s) for s in out)


def test_a_call_computed_twice_is_named_once() -> None:
    text = _run("b_x = g * math.cos(x)\nb_y = h * math.cos(x)")
    assert text == "c1 = math.cos(x)\nb_x = g * c1\nb_y = h * c1"


def test_the_largest_repeated_expression_is_named() -> None:
    text = _run("b_x = g / math.sqrt(1.0 - x * x)\nb_y = h / math.sqrt(1.0 - x * x)")
    assert text == "c1 = math.sqrt(1.0 - x * x)\nb_x = g / c1\nb_y = h / c1"


def test_a_forward_value_is_read_instead_of_recomputed() -> None:
    text = _run("t = math.cos(x)\nb_x = g * math.cos(x)", forward_lines=1)
    assert text == "t = math.cos(x)\nb_x = g * t"


def test_the_forward_sweep_is_left_as_written() -> None:
    source = "a = x * y + 1.0\nb = x * y - 1.0"
    assert _run(source, forward_lines=2) == source


def test_a_changed_operand_makes_a_different_value() -> None:
    source = "b_x = g * y\ng = g + 1.0\nb_z = g * y"
    assert _run(source) == source
    accumulated = "b_x = b_f * y\nb_f += 1.0\nb_z = b_f * y"
    assert _run(accumulated) == accumulated


def test_a_forward_holder_that_changed_is_not_read() -> None:
    source = "t = math.cos(x)\nt = t + 1.0\nb_x = g * math.cos(x)\nb_y = h * math.cos(x)"
    text = _run(source, forward_lines=2)
    assert text.splitlines()[2:] == ["c1 = math.cos(x)", "b_x = g * c1", "b_y = h * c1"]


def test_nothing_moves_out_of_a_conditional_branch() -> None:
    source = "b_x = g / y if y != 0 else 0.0\nb_z = g / y if y != 0 else 1.0"
    assert _run(source) == source


def test_indexing_and_unknown_calls_are_not_shared() -> None:
    source = "b_x = parts[0] * g\nb_y = parts[0] * g\nb_z = f(x) * g\nb_w = f(x) * g"
    assert _run(source) == source


def test_branches_are_blocks_of_their_own() -> None:
    source = "if c:\n    b_x = u * math.exp(x)\n    b_y = v * math.exp(x)\nb_z = w * math.exp(x)"
    text = _run(source)
    assert "if c:\n    c1 = math.exp(x)\n    b_x = u * c1\n    b_y = v * c1" in text
    assert text.endswith("b_z = w * math.exp(x)")


def both_trig(x):
    return math.sin(x) * math.cos(x) + math.cos(x)


def test_generated_gradients_share_and_stay_exact() -> None:
    shared = grad(both_trig)
    plain = grad(both_trig, optimize=["simplify", "zeros", "dead_code", "inline", "copies"])
    assert shared.source.count("math.sin(x)") < plain.source.count("math.sin(x)")
    for x in (0.3, -1.2, 2.5):
        assert shared(x) == plain(x)  # the same floats, bit for bit
