"""The optimisation passes on generated statements, one behaviour each."""

from __future__ import annotations

import ast
import re

import numpy as np
import pytest

from adcompile import grad
from adcompile.floats import ARRAY_FACTS
from adcompile.optimize import (
    MAX_INLINED_DEPTH,
    drop_copies_back,
    drop_zero_contributions,
    eliminate_dead_code,
    never_read,
    simplify,
)
from adcompile.reference import assert_grad_matches_mp
from adcompile.reverse import ADJOINT
from tests.corpus import control_flow
from tests.helpers import function_from_source, module_from_source


def _adjoint_statements(text: str) -> list[ast.stmt]:
    statements = ast.parse(text).body
    for stmt in statements:
        stmt.adcompile_sweep = ADJOINT
        stmt.adcompile_line = 1
    return statements


def _text(statements: list[ast.stmt]) -> str:
    return ast.unparse(ast.Module(body=statements, type_ignores=[]))


def test_zero_then_subtract_becomes_a_negated_assignment():
    out = drop_zero_contributions(_adjoint_statements("b = 0.0\nb -= g * x"))
    assert _text(out) == "b = -(g * x)"


def test_zero_then_add_becomes_an_assignment_and_zero_additions_vanish():
    out = drop_zero_contributions(_adjoint_statements("b = 0.0\nb += 0.0\nb += g"))
    assert _text(out) == "b = g"


def test_zero_read_before_the_addition_is_kept():
    out = drop_zero_contributions(_adjoint_statements("b = 0.0\nc = b\nb += g"))
    assert _text(out) == "b = 0.0\nc = b\nb += g"


def test_simplify_identities_and_literal_zero_factors():
    cases = {
        "g * 1": "g",
        "1.0 * g": "g",
        "g + 0": "g",
        "-(-g)": "g",
        "g * 2 * x ** (2 - 1)": "g * 2 * x",
        "g * 0 * x ** -1": "0.0",
        "x ** 2": "x * x",
    }
    for before, after in cases.items():
        assert ast.unparse(simplify(ast.parse(before, mode="eval").body)) == after


def test_array_code_keeps_zero_products_except_a_mask_of_the_other_term():
    # In array code `e * 0` keeps e's shape (it may broadcast the sum), except the power
    # rule's mask `(x == 0) * 0` added to `x` itself: a comparison of x has x's shape.
    cases = {
        "g * 2 * (x + (x == 0) * (2 == 0)) ** (2 - 1.0)": "g * 2 * x",
        "(x == 0) * 0 + x": "x",
        "x + 0 * (x != 1.5)": "x",
        "x + (y == 0) * 0": "x + (y == 0) * 0",  # y may be larger than x
        "x + (x == z) * 0": "x + (x == z) * 0",  # so may z
        "x + (x == 0) * 1": "x + (x == 0)",
        "x + y * 0": "x + y * 0",
    }
    for before, after in cases.items():
        got = simplify(ast.parse(before, mode="eval").body, ARRAY_FACTS)
        assert ast.unparse(got) == after, before


def test_array_square_gradient_has_no_mask(tmp_path):
    module = module_from_source(
        tmp_path,
        "import numpy as np\n\ndef f(x, y):\n    return np.sum((x - y) ** 2)\n",
    )
    g = grad(module.f)
    assert "== 0" not in g.source
    x, y = np.array([0.5, -1.0, 2.0], dtype=np.float32), np.array([0.5, 1.0, 0.0])
    gx, gy = g(x, y)
    assert gx.dtype == np.float32 and gy.dtype == np.float64
    np.testing.assert_allclose(gx, 2.0 * (x.astype(np.float64) - y), rtol=1e-6)
    np.testing.assert_allclose(gy, -2.0 * (x.astype(np.float64) - y), rtol=1e-6)


def test_dead_code_keeps_only_what_the_result_reads():
    statements = _adjoint_statements("a = x * 2\nb = a + 1\nc = x * 3")
    assert _text(eliminate_dead_code(statements, {"b"})) == "a = x * 2\nb = a + 1"


def test_regression_negated_contribution_after_a_loop_accumulator(tmp_path):
    # Found by the control-flow hypothesis test: `b_x = 0.0` (loop accumulator) followed by
    # `b_x -= ...` was turned into `b_x = ...`, losing the sign.
    fn = function_from_source(
        tmp_path,
        """
        import math


        def f(x, y):
            if x < -0.83:
                v1 = math.tanh(y - x)
                for i in range(0):
                    if x < -0.83:
                        unused = x
                        return y
            else:
                v1 = x
            return v1 * x
        """,
    )
    assert_grad_matches_mp(fn, [{"x": -1.2, "y": 0.5}, {"x": 0.4, "y": -0.3}])


def test_a_rule_test_on_literals_is_decided():
    cases = {
        "a if 2.0 > 0 else b": "a",
        "a if 0 != 0 else b": "b",
        "a if -1.5 >= 0 else b if -1.5 == 0 else c": "c",
        "a if x > 0 else b": "a if x > 0 else b",
        "a if 'p' < 'q' else b": "a if 'p' < 'q' else b",  # only numbers are ordered here
        # and/or stop at a decided first operand, as Python evaluates them
        "a if 3.0 != 0 or x != 0 else b": "a",
        "a if 0 != 0 or x != 0 else b": "a if x != 0 else b",
        "1 and 2 and x": "x",
        "0 and x": "0",
        "x or 1": "x or 1",  # not decided: x is read first
        "1 and x and 0 and y": "x and 0 and y",
    }
    for before, after in cases.items():
        assert ast.unparse(simplify(ast.parse(before, mode="eval").body)) == after


def test_power_with_a_zero_exponent_has_a_zero_partial_at_a_zero_base(tmp_path):
    # Found by the int-input test of the loops corpus: `c * x**i` with i == 0 at x == 0 raised
    # ZeroDivisionError (the general formula reads 0.0 ** -1); a**0 is 1 for every a.
    fn = function_from_source(
        tmp_path,
        """
        def f(x, n):
            s = 0.0
            for i in range(n):
                s = s + x ** i
            return s
        """,
    )
    for mode in ("reverse", "forward"):
        # d/dx (1 + x + x**2) at 0 is 1; at 2 it is 1 + 2 * 2.
        assert grad(fn, wrt="x", mode=mode)(0.0, 3) == 1.0
        assert grad(fn, wrt="x", mode=mode)(2.0, 3) == 5.0
        assert grad(fn, wrt="x", mode=mode)(0, 1) == 0.0
    assert "x ** (i - 1) if i != 0 or x != 0 else 0.0" in grad(fn, wrt="x").source


def test_dead_code_in_a_loop_goes_only_if_nothing_anywhere_reads_it():
    statements = _adjoint_statements(
        "c = None\n"
        "acc = 0.0\n"
        "tmp = 0.0\n"
        "for i in range(3):\n"
        "    c = i * 2.0\n"  # read nowhere: goes, with its initial value
        "    carried = s\n"  # read by the next line of a later iteration: stays
        "    s = carried + i\n"
        "    acc += s\n"  # an update reads acc: acc = 0.0 must stay
        "    tmp = s\n"  # read nowhere, here or after
    )
    unread = never_read(statements, ast.parse("acc", mode="eval").body)
    assert unread == {"c", "tmp"}
    out = eliminate_dead_code(statements, {"acc"}, unread)
    assert _text(out) == (
        "acc = 0.0\nfor i in range(3):\n    carried = s\n    s = carried + i\n    acc += s"
    )


def test_copies_that_only_feed_each_other_across_iterations_go():
    statements = _adjoint_statements(
        "flag = False\n"
        "acc = 0.0\n"
        "for i in range(3):\n"
        "    flag_2 = flag\n"  # carried round the loop, and read only by these copies
        "    if i > 1:\n"
        "        flag_3 = True\n"
        "    else:\n"
        "        flag_3 = flag_2\n"
        "    flag = flag_3\n"
        "    keep = i > 0\n"  # read by a test: stays
        "    if keep:\n"
        "        acc += i\n"
    )
    unread = never_read(statements, ast.parse("acc", mode="eval").body)
    assert unread == {"flag", "flag_2", "flag_3"}
    out = eliminate_dead_code(statements, {"acc"}, unread)
    assert _text(out) == (
        "acc = 0.0\nfor i in range(3):\n    keep = i > 0\n    if keep:\n        acc += i"
    )


def test_nested_loops_with_break_and_continue_carry_no_dead_flags(tmp_path):
    """Values only carried round the loops (s, which the adjoint does not read, and the
    inner loop's continue flag) were computed and copied every iteration; dropping them
    must not leave `if cond: pass else: pass` behind."""
    fn = function_from_source(
        tmp_path,
        """
        def f(x, y, m):
            s = x
            for i in range(m):
                for j in range(m):
                    if j > 100:
                        break
                    if (j + i) % 7 == 3:
                        continue
                    s = s * 0.999 + y * 0.001
            return s
        """,
    )
    source = grad(fn, wrt=(0, 1)).source
    assert "pass" not in source, source
    assert not re.search(r"^ *s_\d+ = ", source, re.M), source  # the adjoint reads no s
    assert "skip_1 = None" not in source, source  # the continue flag, carried outside
    assert_grad_matches_mp(
        fn, [{"x": 0.3, "y": 0.7, "m": 9}, {"x": -1.1, "y": 2.0, "m": 4}], (0, 1)
    )


def test_a_loop_copy_nothing_reads_is_not_generated(tmp_path):
    fn = function_from_source(
        tmp_path,
        """
        def f(x):
            s = 0.0
            for i in range(5):
                c = 1.0 / (i + 1)
                s = s * x + c
            return s
        """,
    )
    for mode in ("reverse", "forward"):
        text = grad(fn, mode=mode).source
        assert "c_1" not in text, text  # the copy `c_1 = c_2` a loop would carry
    assert_grad_matches_mp(fn, [{"x": 0.7}, {"x": -1.3}])


def test_a_loop_test_that_only_chose_a_value_nothing_reads_is_not_generated():
    """After the inner loop, `if cond1: j = (its index) else: j = 0` goes (nothing reads
    j); its test `cond1 = len(range(n)) > 0` stayed, read by nothing (ruff: F841)."""
    fn = control_flow.inner_index_bound_before_it
    for mode in ("reverse", "forward"):
        text = grad(fn, wrt="x", mode=mode).source
        assert "cond" not in text, text
    assert_grad_matches_mp(fn, [{"x": 0.7, "n": 3}, {"x": -1.3, "n": 0}], wrt="x")


def test_a_forward_loop_no_partial_needs_is_skipped(tmp_path):
    module = module_from_source(
        tmp_path,
        """
        import math


        def linear(x, n):
            s = 0.0
            for i in range(n):
                s = s + x * i
            return s


        def overflowing(x, n):
            s = 0.0
            for i in range(n):
                s = s + math.exp(1000.0 + i)
            return x * 2.0 + s * 0


        def index_from_before(x, i):
            s = 0.0
            for i in range(i):
                s = s + x * i
            return s * x
        """,
    )
    fn = module.linear
    text = grad(fn, wrt="x").source
    loops = [line.strip() for line in text.splitlines() if line.strip().startswith("for ")]
    assert loops == ["for i in reversed(range(n)):"], text  # no forward loop
    assert_grad_matches_mp(fn, [{"x": 0.7, "n": 4}, {"x": -1.3, "n": 0}], wrt="x")
    assert grad(module.overflowing, wrt="x")(1.0, 3) == 2.0  # the loop never runs
    keep = module.index_from_before  # its range reads the `i` from before the loop
    assert_grad_matches_mp(keep, [{"x": 0.7, "i": 4}, {"x": 1.1, "i": 0}], wrt="x")


def _loop_of(body: str) -> list[ast.stmt]:
    loop = _adjoint_statements(
        "for i in r:\n" + "".join(f"    {line}\n" for line in body.split("\n"))
    )
    for stmt in ast.walk(loop[0]):
        if isinstance(stmt, ast.stmt):
            stmt.adcompile_sweep = ADJOINT
    return loop


def test_a_copy_back_is_dropped_only_while_both_names_are_unchanged():
    out = drop_copies_back(_loop_of("b2 = b1\nb1 = b2\nb1 -= b2 * a"))
    assert _text(out) == "for i in r:\n    b2 = b1\n    b1 -= b2 * a"
    for between in ("b1 += g", "b2 = g", "b2, c = g, g", "if c:\n    pass"):
        kept = _loop_of(f"b2 = b1\n{between}\nb1 = b2")
        assert _text(drop_copies_back(kept)) == _text(kept)
    nested = _loop_of("if c:\n    b2 = b1\n    b1 = b2")  # inside a branch of a loop body
    assert _text(drop_copies_back(nested)) == "for i in r:\n    if c:\n        b2 = b1"


def test_a_loop_reverse_body_does_not_copy_an_adjoint_back(tmp_path):
    fn = function_from_source(
        tmp_path,
        """
        import math

        def f(x, a):
            for i in range(4):
                x = x - 0.1 * math.sin(x) * a
            return x
        """,
    )
    text = grad(fn).source
    assert "b_x_2 = b_x_1" in text and "b_x_1 = b_x_2" not in text, text
    assert_grad_matches_mp(fn, [{"x": 0.7, "a": 1.3}, {"x": -2.0, "a": 0.4}])


def _deepest_statement(source: str) -> int:
    """The deepest nesting of any statement's expression in ``source`` (iteratively)."""
    deepest = 0
    for stmt in ast.walk(ast.parse(source)):
        if isinstance(stmt, ast.Assign | ast.AugAssign | ast.Return):
            stack = [(stmt.value, 1)]
            while stack:
                node, depth = stack.pop()
                deepest = max(deepest, depth)
                stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


@pytest.mark.parametrize(
    "body",
    [
        " * ".join(["(1.0 + x * 0.001)"] * 200),
        " + ".join(f"x * {i}.0" for i in range(500)),
        " + ".join(f"math.sin(x * {i}.0)" for i in range(1, 500)),
    ],
    ids=["product-of-200", "sum-of-500", "sum-of-sines"],
)
def test_forward_mode_of_a_long_line_stays_shallow(tmp_path, body):
    """Its tangent was folded into one expression nesting twice as deep as the line, and
    rendering it raised a bare RecursionError at decoration (reverse mode compiled)."""
    fn = function_from_source(tmp_path, f"import math\n\n\ndef f(x):\n    return {body}\n")
    gradient = grad(fn, mode="forward")
    assert _deepest_statement(gradient.source) < MAX_INLINED_DEPTH + 8
    assert_grad_matches_mp(fn, [{"x": 0.7}], gradient=gradient, rtol=1e-12)
