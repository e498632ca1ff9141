"""``adcompile explain``: backprop step by step, from the compiler's own rule templates."""

from __future__ import annotations

import inspect
import json
import math
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from adcompile import explain, grad, hessian, jacobian
from adcompile.cli import main
from adcompile.explain import JSON_SCHEMA, Explanation
from tests.corpus.control_flow import GROUPS
from tests.helpers import module_from_source, run_cli
from tests.test_corpus_straight_line import FUNCTIONS, param_names, points_for

ROOT = Path(__file__).resolve().parent.parent

SEED_TEXT = """\
f(x=4, y=-3, z=5) = 5   (seed.py)
forward    line 11  q = x + y          = 4 + (-3)  = 1
           line 12  f = q * z          = 1 * 5     = 5
backward   start: df/df = 1
           line 12  df/dq = df/df * z  = 1 * 5     = 5
                    df/dz = df/df * q  = 1 * 1     = 1
           line 11  df/dx = df/dq * 1  = 5 * 1     = 5
                    df/dy = df/dq * 1  = 5 * 1     = 5
result     df/dx = 5, df/dy = 5, df/dz = 1
"""


def seed_explanation() -> Explanation:
    from examples.seed import f

    return explain(f, 4.0, -3.0, 5.0)


# --- the seed example, line by line --------------------------------------------------------------
def test_seed_text_line_by_line():
    assert str(seed_explanation()) == SEED_TEXT


def test_seed_cli_prints_the_same_text():
    result = run_cli("explain", "examples/seed.py:f", "--at", "x=4,y=-3,z=5")
    assert result.returncode == 0, result.stderr
    assert result.stdout == SEED_TEXT


def test_seed_steps_as_data():
    steps = seed_explanation().steps
    forward = [(s.line, s.formula, s.numbers, s.value) for s in steps if s.sweep == "forward"]
    assert forward == [(11, "q = x + y", "4 + (-3)", 1.0), (12, "f = q * z", "1 * 5", 5.0)]
    adjoints = [s for s in steps if s.kind == "adjoint"]
    assert [(s.target, s.of, s.local, s.local_value, s.value) for s in adjoints] == [
        ("q", "f", "z", 5.0, 5.0),
        ("z", "f", "q", 1.0, 1.0),
        ("x", "q", "1", 1, 5.0),
        ("y", "q", "1", 1, 5.0),
    ]
    assert [s.rule for s in adjoints] == ["operator.mul"] * 2 + ["operator.add"] * 2


def test_local_derivatives_are_the_rule_templates():
    def f(x, y):
        return math.sin(x) / y

    steps = explain(f, 0.5, 2.0).steps
    local = {s.target: s.local for s in steps if s.kind == "adjoint"}
    # truediv's template is `g / b, -(g / b) * result`; sin's is `g * math.cos(x)`.
    assert local == {"sin(x)": "1 / y", "y": "-(1 / y) * f", "x": "cos(x)"}  # result: f
    assert "df/dx = df/d(sin(x)) * cos(x)" in [s.formula for s in steps]


def test_gradient_equals_grad_for_the_seed():
    from examples.seed import f

    assert tuple(seed_explanation().gradient.values()) == f(4.0, -3.0, 5.0)


# --- accumulation ------------------------------------------------------------------------------
def reused(x, y):
    a = x * y
    b = a + x
    return b * x


def test_a_reused_variable_shows_the_accumulation():
    explanation = explain(reused, 2.0, 3.0)
    sums = [s for s in explanation.steps if s.kind == "sum"]
    assert len(sums) == 1
    (total,) = sums
    first = reused.__code__.co_firstlineno
    assert total.target == "x"
    assert total.terms == [8.0, 2.0, 6.0]
    assert total.uses == [first + 3, first + 2, first + 1]
    assert total.value == 16.0
    line = next(t for t in str(explanation).splitlines() if "three uses" in t)
    assert "dreused/dx" in line
    assert "= 8 + 2 + 6" in line
    assert "= 16" in line
    assert f"(three uses: line {first + 3}, line {first + 2}, line {first + 1})" in line
    accumulating = [s.formula for s in explanation.steps if s.accumulates]
    assert accumulating == ["dreused/dx += dreused/db * 1", "dreused/dx += dreused/da * y"]
    assert explanation.gradient == {"x": 16.0, "y": 4.0}


def chooses_a_or_y(x, y):
    a = x * y
    return (a if x > 0 else y) + a


def steps_by_a_chosen_factor(x, a):
    for _ in range(3):
        x = x - 0.1 * (x if x > 0 else a) * x
    return x


def test_a_contribution_through_a_conditional_expression_adds_on():
    """The arm `a` of `a if x > 0 else y` is the value `a`: its contribution says `+=` when
    another came first (it said `=`, with `accumulates` false, beside the sum of two uses)."""
    explanation = explain(chooses_a_or_y, 2.0, 3.0)
    rows = [
        (s.formula, s.accumulates)
        for s in explanation.steps
        if s.target == "a" and s.sweep == "backward"
    ]
    assert rows == [
        ("dchooses_a_or_y/da = dchooses_a_or_y/dchooses_a_or_y * 1", False),
        ("dchooses_a_or_y/da += dchooses_a_or_y/dchooses_a_or_y * 1", True),
        ("dchooses_a_or_y/da", False),  # the sum of the two
    ]
    _contributions_add_up(explanation)


@pytest.mark.parametrize("x", [1.5, -1.5])
def test_each_iteration_adds_an_arms_contribution_to_that_iterations_value(x):
    explanation = explain(steps_by_a_chosen_factor, x, 2.0)
    marks: dict[int, list[bool]] = {}
    for step in explanation.steps:
        if step.kind == "adjoint" and step.target == "x" and step.loops:
            marks.setdefault(step.loops[0].iteration, []).append(step.accumulates)
    expected = [False, True, True] if x > 0 else [False, True]
    assert marks == {3: expected, 2: expected, 1: expected}
    _contributions_add_up(explanation)


def _contributions_add_up(explanation: Explanation) -> None:
    """Every contribution after a value's first says `+=`, and only those: a sum of k uses
    follows k - 1 of them."""
    adding = sum(1 for s in explanation.steps if s.kind == "adjoint" and s.accumulates)
    later = sum(len(s.terms or []) - 1 for s in explanation.steps if s.kind == "sum")
    assert adding == later, (adding, later)


# --- labels: one value, one label ----------------------------------------------------------------
def swapped(x, y):
    a, b = x, y
    a, b = b * a, a + b
    return a * b


def _formulas(explanation: Explanation, kind: str = "assign") -> list[str]:
    return [s.formula for s in explanation.steps if s.kind == kind]


def test_each_value_of_a_reassigned_name_has_its_own_label():
    """`a, b = b * a, a + b` read the old a and b: shown as `a`, the new ones as `a'`."""
    explanation = explain(swapped, 1.5, 2.0)
    assert _formulas(explanation) == [
        "a = x",
        "b = y",
        "a' = b * a",
        "b' = a + b",
        "swapped = a' * b'",
    ]
    adjoints = _formulas(explanation, "adjoint")
    assert adjoints[:3] == [
        "dswapped/da' = dswapped/dswapped * b'",
        "dswapped/db' = dswapped/dswapped * a'",
        "dswapped/da = dswapped/db' * 1",
    ]
    assert explanation.gradient == pytest.approx(
        dict(zip("xy", grad(swapped)(1.5, 2.0), strict=True))
    )


def added_five_times(x):
    s = x
    s += x
    s += x
    s += x
    s += x
    return s


def test_primes_past_three_are_counted():
    targets = [s.target for s in explain(added_five_times, 1.5).steps if s.kind == "assign"]
    assert targets == ["s", "s'", "s''", "s'''", "s'4", "added_five_times"]


def descent(x, a):
    for _ in range(3):
        x = x - 0.1 * math.sin(x) * a
    return x


def test_every_iteration_is_labelled_like_the_first():
    """In an iteration, `x` is the value it starts with and `x'` the one it leaves."""
    explanation = explain(descent, 1.5, 2.0)
    named = [f for f in _formulas(explanation) if f.startswith(("x", "descent"))]
    assert named == ["x' = x - 0.1 * sin(x) * a"] * 3 + ["descent = x'"]
    sums = [
        (s.target, s.loops[0].iteration if s.loops else None)
        for s in explanation.steps
        if s.kind == "sum"
    ]
    # x' of iterations 2 and 1 is used twice by the next iteration (as its x); the input x twice.
    assert sums[:2] == [("x'", 2), ("x'", 1)]
    assert ("x", None) in sums


def nested_loops(x):
    s = x
    s = s * 2
    for _ in range(2):
        s = s * 0.5
        for j in range(2):
            s = s + x * j
        s = s * s
    return s


def test_nested_loops_count_on_from_the_enclosing_iteration():
    explanation = explain(nested_loops, 1.5)
    first = nested_loops.__code__.co_firstlineno
    by_line = {}
    for step in explanation.steps:
        if step.kind == "assign" and step.sweep == "forward":
            by_line.setdefault(step.line - first, set()).add(step.formula)
    assert by_line[2] == {"s' = s * 2"}
    assert by_line[4] == {"s'' = s' * 0.5"}
    assert by_line[6] == {"x * j", "s''' = s'' + x * j"}
    assert by_line[7] == {"s'4 = s''' * s'''"}
    assert by_line[8] == {"nested_loops = s'4"}
    assert explanation.gradient["x"] == pytest.approx(grad(nested_loops)(1.5))


def helper_square(a):
    return a * a


def two_calls(x, y):
    return helper_square(x) + helper_square(y)


def test_an_inlined_call_is_shown_as_the_call():
    """Not as the callee's returned expression (`helper_square.a * helper_square.a` twice)."""
    explanation = explain(two_calls, 1.5, 2.0)
    formulas = _formulas(explanation)
    assert "two_calls = helper_square(x) + helper_square(y)" in formulas
    assert "helper_square(x) = helper_square.a * helper_square.a" in formulas
    assert "helper_square(y) = helper_square.a' * helper_square.a'" in formulas
    of = {s.of for s in explanation.steps if s.kind == "adjoint"}
    assert {"helper_square(x)", "helper_square(y)"} <= of


def test_graphs_show_an_inlined_call_as_the_call():
    from adcompile.graph import executed_graph, static_graph
    from adcompile.source import load_function

    for graph in (
        executed_graph(explain(two_calls, 1.5, 2.0)),
        static_graph(load_function(two_calls)),
    ):
        assert "two_calls = helper_square(x) + helper_square(y)" in graph.source


def set_in_a_branch(x):
    if x > 0:
        u = x * 2
        v = u * u
    else:
        u = x
        v = u
    return v + u


def test_uses_passed_through_a_join_name_the_lines_that_read_them():
    """u's uses are line 7 and line 3 twice, not the `if` line where the branches join."""
    first = set_in_a_branch.__code__.co_firstlineno
    (total,) = [s for s in explain(set_in_a_branch, 1.5).steps if s.kind == "sum"]
    assert (total.target, total.uses) == ("u", [first + 7, first + 3, first + 3])
    assert total.terms == [1.0, 3.0, 3.0]


def keeps_its_index(x, n):
    i = 0
    for i in range(n):  # noqa: B007 (i is read after the loop)
        x = x * 1.5
    return x + i


def test_the_compilers_own_loop_ran_test_is_not_shown():
    """`i` after `for i in range(n)` is the last index, or 0 if the loop never ran: the
    compiler asks `len(range(n)) > 0`, which the user never wrote."""
    for n in (0, 2):
        explanation = explain(keeps_its_index, 1.5, n, wrt="x")
        assert "len(range" not in str(explanation)
        assert [s.kind for s in explanation.steps if s.kind in ("test", "branch")] == []
        assert explanation.gradient["x"] == pytest.approx(1.5**n)


def test_graphs_draw_the_loop_ran_test_as_what_it_asks():
    from adcompile.graph import static_graph
    from adcompile.source import load_function

    source = static_graph(load_function(keeps_its_index)).source
    assert "if the loop ran" in source and "len(range" not in source


def returns_early(x):
    if x > 0:
        return x * x
    return -x


def test_early_returns_assign_the_functions_value():
    """Not `result = x * x` and `returns_early = result` (a name the user never wrote)."""
    for x, expected in ((1.5, "returns_early = x * x"), (-1.5, "returns_early = -x")):
        explanation = explain(returns_early, x)
        assert _formulas(explanation) == [expected]
        text = str(explanation)
        assert "result =" not in text and "= result" not in text and "/dresult" not in text


def weighted_items(x, ws):
    s = 0.0
    for w in ws:
        s += w * x
    return s + sum(v * x for v in ws)


def test_loops_over_items_and_sums_show_no_names_of_the_compilers():
    """`for w in ws` counts with an index of the compiler's (shown by value: `w = ws[1]`),
    and a generator's running sum is `sum`, not `acc`."""
    explanation = explain(weighted_items, 1.5, (1.0, 2.0), wrt="x")
    formulas = _formulas(explanation)
    assert formulas.count("w = ws[0]") == 1 and formulas.count("v = ws[1]") == 1
    assert "sum' = sum + v * x" in formulas
    iterations = [s.formula for s in explanation.steps if s.kind == "iteration"]
    assert iterations[:2] == ["iteration 1", "iteration 2"]
    assert not re.search(r"\b(?:acc|k)\b", str(explanation))
    assert explanation.gradient["x"] == pytest.approx(6.0)


def largest_and_smallest(x, ws):
    return max(w * x for w in ws) - min(x * v for v in ws if v > 0)


def test_a_generators_running_max_and_min_are_largest_and_smallest():
    """They showed as `acc`, with rows `acc = None` and `acc is None` for the compiler's test
    of the first item; a filter that skipped the first item primed the first value."""
    explanation = explain(largest_and_smallest, 2.0, (-1.0, 3.0, 2.0), wrt="x")
    formulas = _formulas(explanation)
    assert formulas.count("largest = w * x") == 1
    assert formulas.count("largest' = max(largest, w * x)") == 2
    assert formulas.count("smallest = x * v") == 1  # the filter skipped -1.0
    assert formulas.count("smallest' = min(smallest, x * v)") == 1
    text = str(explanation)
    assert not re.search(r"\bacc\b|None|max\(\(\)\)|min\(\(\)\)", text), text
    _contributions_add_up(explanation)
    assert explanation.gradient["x"] == pytest.approx(3.0 - 2.0)


def keeps_a_largest_of_its_own(x, ws):
    largest = x
    return largest * max(w * x for w in ws)


def test_a_running_max_does_not_take_the_label_of_a_users_variable():
    explanation = explain(keeps_a_largest_of_its_own, 2.0, (1.0, 3.0), wrt="x")
    formulas = _formulas(explanation)
    assert "largest = x" in formulas and "running_max' = max(running_max, w * x)" in formulas
    _one_label_per_value(explanation)


def test_graphs_draw_the_first_item_test_as_what_it_asks():
    from adcompile.graph import static_graph
    from adcompile.source import load_function

    source = static_graph(load_function(largest_and_smallest)).source
    assert "if it is the first item" in source and "is None" not in source


def squares_of_three(x, y):
    s = 0.0
    for t in (x, y, x * y):
        s = s + t * t
    return s


def counts_from(x, n):
    s = 0.0
    for i, w in enumerate((1.0, 2.0), n - 1):
        s += i * w * x
    return s


def rebinds_its_sequence(x, ws):
    s = 0.0
    for w in ws:
        ws = [2.0, 3.0]
        s = s + w * x
    return s


def test_loops_over_literal_tuples_enumerate_and_rebound_sequences_show_the_values():
    """They showed the compiler's names: `item = x` and `t = item` picked by `0 == 0` tests,
    `start = 1` and `i = 0 + start`, `seq = ws` and `w = seq[0]`."""
    tuple_loop = explain(squares_of_three, 2.0, 3.0)
    formulas = _formulas(tuple_loop)
    assert [f for f in formulas if f.startswith("t =")] == ["t = x", "t = y", "t = x * y"]
    backward = [s.formula for s in tuple_loop.steps if s.sweep == "backward"]
    assert "dsquares_of_three/d(x * y) = dsquares_of_three/dt" in backward
    assert "dsquares_of_three/dy = dsquares_of_three/dt" in backward
    assert tuple_loop.gradient == pytest.approx(
        {"x": 4.0 + 2 * 6.0 * 3.0, "y": 6.0 + 2 * 6.0 * 2.0}
    )
    counted = explain(counts_from, 2.0, 3, wrt="x")
    assert "i = 0 + (n - 1)" in _formulas(counted)
    constant = explain(over_constants, 2.0)
    assert "w = (1.0, 2.0)[1]" in _formulas(constant)
    for explanation in (tuple_loop, counted, constant):
        formulas = "\n".join(step.formula for step in explanation.steps)
        assert not re.search(r"\b(?:item|start|seq|k)\b|\d == \d", formulas), formulas
        _contributions_add_up(explanation)
        _one_label_per_value(explanation)


def over_constants(x):
    s = 0.0
    for w in (1.0, 2.0):
        s = s + w * x
    return s


def rebinds_an_item(x, y):
    for t in (x, y):
        x = x + t * t
    return x


def test_a_value_from_before_a_loop_that_rebinds_its_names_keeps_its_own_label():
    """`t = x` in the second iteration, beside `x' = x + t * t` where `x` was the value the
    iteration starts with: one label, two values. (So for a sequence the loop rebinds.)"""
    item_loop = explain(rebinds_an_item, 0.7, 1.3)
    picks = [f for f in _formulas(item_loop) if f.startswith("t =")]
    assert picks == ["t = item", "t = y"]
    rebound = explain(rebinds_its_sequence, 2.0, [1.0, 5.0], wrt="x")
    assert "w = seq[1]" in _formulas(rebound)
    for explanation in (item_loop, rebound):
        _contributions_add_up(explanation)
        _one_label_per_value(explanation)
    assert tuple(item_loop.gradient.values()) == pytest.approx(grad(rebinds_an_item)(0.7, 1.3))


def squares_in_a_helper(x, y):
    return squares_of_three(x, y) * x


def test_an_inlined_helpers_literal_tuple_loop_shows_the_values_too():
    """Inside a helper the items' versions are renamed: `item`, `item_1` showed."""
    formulas = _formulas(explain(squares_in_a_helper, 2.0, 3.0))
    picks = [f for f in formulas if f.startswith("squares_of_three.t =")]
    assert picks == [
        "squares_of_three.t = squares_of_three.x",
        "squares_of_three.t = squares_of_three.y",
        "squares_of_three.t = squares_of_three.x * squares_of_three.y",
    ]
    assert not any(re.search(r"\bitem", f) for f in formulas), formulas


def test_graphs_draw_the_item_tests_as_what_they_ask():
    from adcompile.graph import static_graph
    from adcompile.source import load_function

    source = static_graph(load_function(squares_of_three)).source
    assert "if it is item 1" in source and "if it is item 2" in source and "==" not in source


def helper_returning_early(a):
    if a > 3.0:
        return a
    return a * a


def calls_one_returning_early(x):
    return helper_returning_early(x) * x


def test_an_inlined_helpers_early_returns_assign_the_call():
    """Not `result = helper.a * helper.a`, then `helper(x) = result`."""
    explanation = explain(calls_one_returning_early, 1.5)
    formulas = _formulas(explanation)
    expected = "helper_returning_early(x) = helper_returning_early.a * helper_returning_early.a"
    assert expected in formulas
    assert not any("result" in f for f in formulas)
    assert not any("result" in s.formula for s in explanation.steps if s.sweep == "backward")


def adds_on_two_of_three(x):
    s = 0.0
    for i in range(3):
        if i < 2:
            s = s + x
    return s


def reads_what_the_last_iteration_left(x):
    for i in range(3):
        if i > 0:
            x = x + t  # noqa: F821 (bound by the previous iteration)
        t = x * 2.0
    return t


def test_after_a_loop_a_variable_has_its_latest_values_label():
    """The last iteration assigned nothing: `adds_on_two_of_three = s` read 3 under the label
    that `s = 0.0` had; a name first bound in the loop and read before it is assigned again
    showed two values as `t` in one iteration."""
    explanation = explain(adds_on_two_of_three, 1.5)
    assert _formulas(explanation)[-1] == "adds_on_two_of_three = s'"
    first = next(s for s in explanation.steps if s.sweep == "backward" and s.kind == "adjoint")
    assert first.target == "s'"
    carried = explain(reads_what_the_last_iteration_left, 1.5)
    by_iteration: dict[int, list[str]] = {}
    for step in carried.steps:
        if step.kind == "assign" and step.loops:
            by_iteration.setdefault(step.loops[0].iteration, []).append(step.formula)
    assert by_iteration[1] == ["t = x * 2.0"]
    assert by_iteration[2] == ["x' = x + t", "t' = x' * 2.0"]
    assert _formulas(carried)[-1] == "reads_what_the_last_iteration_left = t'"
    expected = grad(reads_what_the_last_iteration_left)(1.5)
    assert carried.gradient["x"] == pytest.approx(expected)


def test_a_users_rule_takes_no_prime_of_its_own():
    """`a = softplus(x)` was shown as `a' = softplus(x)`: the rule's own body, run quietly
    for the value, counted as a value of `a`."""
    from adcompile import derivative, rule_scope

    def softplus(x):
        a = math.log1p(math.exp(x))
        return a

    def softplus_rule(x, result, g):
        return g / (1.0 + math.exp(-x))

    def uses_it(x):
        a = softplus(x)
        return a * x

    with rule_scope():
        derivative(softplus)(softplus_rule)
        explanation = explain(uses_it, 0.3)
    assert _formulas(explanation) == ["a = softplus(x)", "uses_it = a * x"]


def test_each_iterations_first_contribution_to_a_variable_assigns():
    """Per iteration, backwards: `dx = dx' * 1`, then `dx += d(sin(x)) * cos(x)`. (A version
    deciding `+=` by label said `+=` for the first, the label `x` having collected the next
    iteration's contributions.)"""
    explanation = explain(descent, 1.5, 2.0)
    marks: dict[int, list[bool]] = {}
    for step in explanation.steps:
        if step.kind == "adjoint" and step.target == "x" and step.loops:
            marks.setdefault(step.loops[0].iteration, []).append(step.accumulates)
    assert marks == {3: [False, True], 2: [False, True], 1: [False, True]}


def squared(a):
    return a * a


def squares_twice(x):
    return squared(x) * squared(x)


def test_a_call_made_twice_gives_two_labels():
    """Both values were `squared(x)`, and the backward rows could not say which."""
    explanation = explain(squares_twice, 1.5)
    formulas = _formulas(explanation)
    assert "squared(x) = squared.a * squared.a" in formulas
    assert "squared(x)' = squared.a' * squared.a'" in formulas
    assert "squares_twice = squared(x) * squared(x)'" in formulas
    of = [
        s.of for s in explanation.steps if s.kind == "adjoint" and s.target.startswith("squared.a")
    ]
    assert of == ["squared(x)'"] * 2 + ["squared(x)"] * 2


def _one_label_per_value(explanation: Explanation) -> None:
    """Within the function body, and within each iteration, no two assignments share a label."""
    seen: dict[tuple[Any, ...], set[str]] = {}
    for step in explanation.steps:
        if step.sweep != "forward" or step.kind != "assign":
            continue
        if not re.fullmatch(r"[\w.]+(?:'+|'\d+)?", step.target):
            continue  # an unnamed partial result: `sin(x)` may well be computed twice
        frame = tuple((p.line, p.iteration, p.run) for p in step.loops)
        labels = seen.setdefault(frame, set())
        assert step.target not in labels, (step.target, frame)
        labels.add(step.target)


# --- control flow ------------------------------------------------------------------------------
def branchy(x, y):
    if x > 0:  # noqa: SIM108 -- an `if` statement is under test
        z = x * y
    else:
        z = -x
    return math.sin(z)


def test_the_branch_taken_is_shown():
    taken = explain(branchy, 0.5, 2.0)
    branches = [s for s in taken.steps if s.kind == "branch"]
    assert [(s.sweep, s.target) for s in branches] == [("forward", "if"), ("backward", "if")]
    assert "runs the if branch (x > 0 is True)" in str(taken)
    other = explain(branchy, -0.5, 2.0)
    assert "runs the else branch (x > 0 is False)" in str(other)
    assert "z = -x" in str(other) and "z = x * y" not in str(other)


def jumps(x, n):
    s = 0.0
    for i in range(n):
        if i == 1:
            continue
        s = s + x * i
        if s > 2.5:
            break
    if s > 10.0:
        return s * 2.0
    return s


def test_jumps_are_shown_as_the_statements_not_as_the_compilers_flags():
    explanation = explain(jumps, 1.5, 5)
    text = str(explanation)
    for flag in ("skip", "broke", "returned"):
        assert not re.search(rf"\b{flag}\b", text)  # the compiler's variables for the jumps
    shown = [(s.line, s.target, s.formula) for s in explanation.steps if s.kind == "jump"]
    assert shown == [
        (jumps.__code__.co_firstlineno + 4, "continue", "continue: on to the next iteration"),
        (jumps.__code__.co_firstlineno + 7, "break", "break: leaves the loop"),
        (jumps.__code__.co_firstlineno + 10, "return", "return: leaves the function"),
    ]
    assert explanation.gradient == pytest.approx({"x": 2.0, "n": 0.0})  # s = x * 2, then break
    early = explain(jumps, 6.0, 5)  # s = 12 > 10: the early return
    returns = [s.line for s in early.steps if s.kind == "jump" and s.target == "return"]
    assert returns == [jumps.__code__.co_firstlineno + 9]
    assert early.gradient == pytest.approx({"x": 4.0, "n": 0.0})
    data = json.loads(early.to_json())
    _check(data, JSON_SCHEMA)


def test_an_if_without_else_is_skipped_not_said_to_run_an_else():
    explanation = explain(jumps, 1.5, 5)
    text = str(explanation)
    assert "skips the if branch (i == 1 is False)" in text
    assert "else branch" not in text  # neither forward nor back: no `if` here has an `else`
    other = explain(branchy, -0.5, 2.0)  # an `if` with an `else` still says so
    assert "runs the else branch (x > 0 is False)" in str(other)
    assert "back through the else branch" in str(other)


def halve_or_square(u):
    if u > 1.0:
        return u * 2.0
    return u * u


def calls_an_early_return(x):
    b = halve_or_square(x)
    return b * 3.0


def returns_from_a_loop(x, y):
    for _ in range(3):
        if x > 2.0:
            return x * y
        x = x + y
    return -x


def test_a_gathered_result_is_shown_at_the_call_not_at_a_line_that_never_ran():
    """After an early return, `b = result` was labelled with the callee's last line (`return
    u * u`, not run), and the callee's `if` without `else` was said to run its else."""
    first = calls_an_early_return.__code__.co_firstlineno
    callee = halve_or_square.__code__.co_firstlineno
    for x, skipped in ((2.0, False), (0.5, True)):
        explanation = explain(calls_an_early_return, x)
        copies = [s for s in explanation.steps if s.target == "b" and s.sweep == "forward"]
        assert [(s.line, s.where) for s in copies] == [(first + 1, None)]
        text = str(explanation)
        assert ("skips the if branch (halve_or_square.u > 1.0 is False)" in text) is skipped
        assert "else branch" not in text  # the `if` has no `else`
        expected = 6.0 if x > 1.0 else 6.0 * x  # d(3 * 2x)/dx, d(3 * x * x)/dx
        assert explanation.gradient == pytest.approx({"x": expected})
    assert callee + 3 not in [s.line for s in explain(calls_an_early_return, 2.0).steps]
    looped = explain(returns_from_a_loop, 0.5, 0.9)  # returns in the loop's second pass
    last_line = returns_from_a_loop.__code__.co_firstlineno + 5  # `return -x`: not run
    assert last_line not in [s.line for s in looped.steps]
    assert looped.gradient == pytest.approx({"x": 0.9, "y": 0.5 + 2 * 0.9 + 2 * 0.9})


def decay(x, a):
    for _ in range(100):
        x = x - 0.1 * math.sin(x) * a
    return x


def five_steps(x):
    for _ in range(5):
        x = x * 1.5
    return x


def test_one_hidden_iteration_is_said_in_the_singular():
    text = str(explain(five_steps, 1.0))
    assert "... 1 more iteration of line" in text
    assert "all_iterations=True" in text


def test_loops_show_first_and_last_iterations():
    explanation = explain(decay, 1.3, 0.8)
    text = str(explanation)
    assert text.count("... 96 more iterations of line") == 2  # forward and backward
    for shown in ("iteration 1 (_ = 0)", "iteration 2 (_ = 1)", "iteration 100 (_ = 99)"):
        assert shown in text
    assert "iteration 3 (_ = 2)" not in text
    assert "iteration 1, backwards" in text and "iteration 100, backwards" in text
    every = explanation.to_text(all_iterations=True)
    assert "more iterations" not in every
    assert "iteration 50 (_ = 49)" in every
    loops = [s.loops for s in explanation.steps if s.kind == "iteration"]
    assert [p[0].iteration for p in loops[:100]] == list(range(1, 101))
    assert all(p[0].count == 100 for p in loops)
    assert explanation.gradient == pytest.approx(
        dict(zip("xa", grad(decay)(1.3, 0.8), strict=True))
    )


def test_cli_all_shows_every_iteration():
    short = run_cli("explain", "examples/seed.py:f", "--at", "x=4,y=-3,z=5", "--all")
    assert short.returncode == 0 and short.stdout == SEED_TEXT


# --- one source of truth: explain's gradient is grad's -------------------------------------------
def _same_gradient(explanation: Explanation, expected: Any) -> None:
    got = tuple(explanation.gradient.values())
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)


# The numbers' column is read by Python with the functions it names (`cos(1.5)`).
_DISPLAY_SCOPE = {
    **{name: getattr(math, name) for name in dir(math) if not name.startswith("_")},
    "abs": abs,
    "min": min,
    "max": max,
    "float": float,
}


def _numbers_agree(explanation: Explanation) -> None:
    """Each adjoint step's numbers evaluate to its value (to the six digits shown), and show
    the arm of each of the rule's tests that the values take, not the test (`if b != 0 or
    a != 0`)."""
    for step in explanation.steps:
        if step.kind != "adjoint":
            continue
        assert " if " not in step.numbers, (step.formula, step.numbers)
        shown = eval(step.numbers, {"__builtins__": {}}, _DISPLAY_SCOPE)
        assert shown == pytest.approx(step.value, rel=2e-5, abs=1e-5, nan_ok=True), step.numbers


def _uses_read_the_variable(explanation: Explanation, fn: Any) -> None:
    """Each use a sum names is a line of the function that mentions the variable: not the
    line of a copy the compiler added (a branches' join at the `if`, a loop's header)."""
    lines = inspect.getsourcelines(fn)
    first = lines[1]
    for step in explanation.steps:
        name = re.sub(r"(?:'+|'\d+)$", "", step.target)
        if step.kind != "sum" or step.where is not None or not name.isidentifier():
            continue
        for line in step.uses:
            text = lines[0][line - first] if 0 <= line - first < len(lines[0]) else ""
            assert re.search(rf"\b{name}\b", text), (step.formula, line, text)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_straight_line_corpus_matches_grad(name):
    fn, _ = FUNCTIONS[name]
    args = points_for(name)[0]
    explanation = explain(fn, *args)
    _same_gradient(explanation, grad(fn)(*args))
    assert list(explanation.gradient) == param_names(fn)
    _numbers_agree(explanation)
    _uses_read_the_variable(explanation, fn)
    _one_label_per_value(explanation)
    _contributions_add_up(explanation)


CONTROL_FLOW = [
    pytest.param(fn, point, wrt, id=f"{group}-{fn.__name__}-{i}")
    for group, entries in GROUPS.items()
    for fn, points, wrt in entries
    for i, point in enumerate(points[:2])
]


@pytest.mark.parametrize(("fn", "point", "wrt"), CONTROL_FLOW)
def test_control_flow_corpus_matches_grad(fn, point, wrt):
    args = [point[p] for p in point]
    explanation = explain(fn, *args, wrt=wrt)
    _same_gradient(explanation, grad(fn, wrt=wrt)(*args))
    _numbers_agree(explanation)
    _uses_read_the_variable(explanation, fn)
    _one_label_per_value(explanation)
    _contributions_add_up(explanation)


# --- the forms ---------------------------------------------------------------------------------
def _check(value: Any, schema: dict[str, Any], where: str = "$") -> None:
    """A small JSON Schema validator: type, enum, required, properties, items, anyOf."""
    if "anyOf" in schema:
        failures = []
        for option in schema["anyOf"]:
            try:
                _check(value, option, where)
                return
            except AssertionError as failure:
                failures.append(str(failure))
        raise AssertionError(f"{where}: {value!r} matches no option: {failures}")
    types = schema.get("type")
    if types is not None:
        allowed = types if isinstance(types, list) else [types]
        python = {
            "object": dict,
            "array": list,
            "string": str,
            "boolean": bool,
            "null": type(None),
            "integer": int,
            "number": (int, float),
        }
        ok = any(
            isinstance(value, python[t]) and not (t in ("number", "integer") and value is True)
            for t in allowed
        )
        ok = ok or (value is False and "boolean" in allowed)
        assert ok, f"{where}: {value!r} is not {allowed}"
    if "enum" in schema:
        assert value in schema["enum"], f"{where}: {value!r} not in {schema['enum']}"
    if isinstance(value, dict):
        for key in schema.get("required", []):
            assert key in value, f"{where}: missing {key!r}"
        for key, item in value.items():
            sub = schema.get("properties", {}).get(key, schema.get("additionalProperties"))
            if sub is not None:
                _check(item, sub, f"{where}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            _check(item, schema["items"], f"{where}[{i}]")


@pytest.mark.parametrize(
    ("fn", "args"), [(reused, (2.0, 3.0)), (branchy, (0.5, 2.0)), (decay, (1.3, 0.8))]
)
def test_json_validates_against_the_documented_shape(fn, args):
    data = json.loads(explain(fn, *args).to_json())
    _check(data, JSON_SCHEMA)
    kinds = {step["kind"] for step in data["steps"]}
    assert {"assign", "seed", "adjoint"} <= kinds


def test_json_cli_output():
    result = run_cli("explain", "examples/seed.py:f", "--at", "x=4,y=-3,z=5", "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    _check(data, JSON_SCHEMA)
    assert data["gradient"] == {"x": 5.0, "y": 5.0, "z": 1.0}
    assert data["point"] == {"x": 4, "y": -3, "z": 5}
    assert data["steps"][0]["formula"] == "q = x + y"


def test_json_of_nan_gradients_and_sequence_values_validates(tmp_path):
    module = module_from_source(
        tmp_path,
        "def power(x, p):\n    return x ** p\n\n\n"
        "def weighted(x, ws):\n    s = 0.0\n    for w in ws:\n        s = s + w * x\n"
        "    return s\n\n\n"
        "def horner(x, n):\n    s = 0.0\n    for i in reversed(range(1, n)):\n"
        "        s = s * x + i\n    return s\n\n\n"
        "def pairs(x, data, mode):\n    s = 0.0\n    for a, b in data:\n"
        "        s = s + a * x + b\n    return s if mode == 'sum' else -s\n",
    )
    nan_gradient = json.loads(explain(module.power, -2.0, 3.0).to_json())
    _check(nan_gradient, JSON_SCHEMA)
    assert nan_gradient["gradient"] == {"x": 12.0, "p": None}  # d/dp of (-2)**p: nan
    sequence = json.loads(explain(module.weighted, 1.5, (1.0, 2.0), wrt="x").to_json())
    _check(sequence, JSON_SCHEMA)
    assert sequence["point"]["ws"] == [1.0, 2.0] and sequence["gradient"] == {"x": 3.0}
    looped_range = json.loads(explain(module.horner, 0.5, 5, wrt="x").to_json())  # a range
    _check(looped_range, JSON_SCHEMA)
    assert [1, 2, 3, 4] in [step["value"] for step in looped_range["steps"]]
    assert looped_range["gradient"]["x"] == pytest.approx(12.0 * 0.5**2 + 6.0 * 0.5 + 2.0)
    # Tuples of tuples and a string flag failed the schema the README gives for the output.
    nested = json.loads(
        explain(module.pairs, 1.0, ((1.0, 2.0), (3.0, 4.0)), "sum", wrt="x").to_json()
    )
    _check(nested, JSON_SCHEMA)
    assert nested["point"]["data"] == [[1.0, 2.0], [3.0, 4.0]] and nested["point"]["mode"] == "sum"
    assert nested["gradient"] == {"x": 4.0}


def test_schema_rejects_a_wrong_shape():
    data = json.loads(seed_explanation().to_json())
    del data["steps"][0]["formula"]
    with pytest.raises(AssertionError, match="missing 'formula'"):
        _check(data, JSON_SCHEMA)


def test_markdown_table():
    text = seed_explanation().to_markdown()
    rows = [line for line in text.splitlines() if line.startswith("|")]
    assert rows[0] == "| sweep | line | step | numbers | value |"
    assert rows[1] == "| --- | --- | --- | --- | --- |"
    assert all(row.replace("\\|", "").count("|") == 6 for row in rows)
    assert "| forward | line 11 | `q = x + y` | `4 + (-3)` | 1 |" in rows
    assert "|  | line 11 | `df/dx = df/dq * 1` | `5 * 1` | 5 |" in rows
    assert "**df/dx = 5, df/dy = 5, df/dz = 1**" in text


def test_markdown_cli():
    result = run_cli(
        "explain", "examples/seed.py:f", "--at", "x=4,y=-3,z=5", "--format", "markdown"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == seed_explanation().to_markdown()


# --- the Python API ----------------------------------------------------------------------------
def with_default(x, k=3.0):
    return k * x * x


def test_api_defaults_wrt_and_grad_results():
    explanation = explain(with_default, 2.0)
    assert explanation.point == {"x": 2.0, "k": 3.0}
    assert explanation.gradient == {"x": 12.0, "k": 4.0}
    assert explain(with_default, 2.0, wrt="x").gradient == {"x": 12.0}
    assert explain(grad(with_default), 2.0).gradient == explanation.gradient  # the primal's
    assert explanation.value == 12.0


def test_explain_at_a_point_outside_the_domain_names_the_line():
    def f(x):
        q = x - 2.0
        return math.log(q)

    with pytest.raises(ValueError, match="math domain error") as info:
        explain(f, 1.0)
    (note,) = info.value.__notes__
    line = f.__code__.co_firstlineno + 2
    assert note == f"in line {line} of test_explain.py: return math.log(q) (forward sweep)"


# --- the command line: errors ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("at", "message"),
    [
        ("x=4,y=-3", "--at is missing a value for z"),
        ("x=4,y=oops,z=5", "--at y='oops': not a number"),
        ("x=4,y=-3,z=5,w=1", "--at names 'w', which is not a parameter (x, y, z)"),
        ("x4", "--at expects name=value pairs separated by commas, got 'x4'"),
    ],
)
def test_bad_at_is_a_one_line_usage_error(at, message, capsys):
    assert main(["explain", "examples/seed.py:f", "--at", at]) == 2
    err = capsys.readouterr().err
    assert err == f"adcompile: error: {message}\n"


def test_explain_without_at_is_a_usage_error(capsys):
    assert main(["explain", "examples/seed.py:f"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--at" in err


def test_bad_wrt_is_a_usage_error(capsys):
    assert main(["explain", "examples/seed.py:f", "--at", "x=1,y=2,z=3", "--wrt", "w"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_run_time_failure_is_one_line_and_exit_1(tmp_path, capsys):
    path = tmp_path / "bad.py"
    path.write_text("import math\n\n\ndef f(x):\n    return math.log(x)\n")
    assert main(["explain", f"{path}:f", "--at", "x=-1"]) == 1
    err = capsys.readouterr().err
    assert err == (
        "adcompile: error: ValueError: math domain error at x=-1, "
        "in line 5 of bad.py: return math.log(x) (forward sweep)\n"
    )


# --- dump --annotate ---------------------------------------------------------------------------
def test_dump_annotate_puts_the_primal_beside_the_generated_code():
    result = run_cli("dump", "examples/seed.py:f", "--annotate")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["line", "primal", "(seed.py)", "sweep", "|", "generated"]
    rows = [[part.strip() for part in line.split("|", 1)] for line in lines[2:]]
    assert ["11  q = x + y         forward", "q = x + y"] in rows
    assert ["12  return q * z      adjoint", "b_f = 1.0"] in rows
    assert ["11  q = x + y         adjoint", "b_x = b_q"] in rows
    assert ["", "return b_x, b_y, b_z"] in rows
    # Every generated code line is there, in order; the comments became the left column.
    from examples.seed import f

    code = [line for line in f.source.splitlines() if not line.strip().startswith("# line")]
    code = [line for line in code if not line.strip().startswith("# adjoint of line")]
    assert [line.split("| ", 1)[1] if "| " in line else "" for line in lines[2:]] == code


def test_import_adcompile_loads_neither_sympy_nor_graphviz():
    code = (
        "import sys, adcompile; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sympy', 'graphviz')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
    )
    assert result.stdout.strip() == "[]"


def test_readme_shows_real_explain_output():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"<!-- explain: (.*?) -->\n```text\n(.*?)```", readme, re.S)
    assert blocks, "the README's backprop section shows explain output"
    for command, shown in blocks:
        result = run_cli("explain", *shlex.split(command))
        assert result.returncode == 0, result.stderr
        assert result.stdout == shown


def test_a_user_rule_reading_g_in_a_setup_line_shows_no_free_g(tmp_path):
    import re

    module = module_from_source(
        tmp_path,
        "from adcompile import derivative\n\n\ndef clipmul(a, b, lo=0.0):\n"
        "    return max(a * b, lo)\n\n\n@derivative(clipmul)\n"
        "def clipmul_rule(a, b, lo, result, g):\n    s = 1.0 if a * b > lo else 0.5\n"
        "    t = g * s\n    return t * b, t * a, None\n\n\n"
        "def use_clip(x, y):\n    return clipmul(x, y) + clipmul(y, x, lo=1.0)\n",
    )
    data = json.loads(explain(module.use_clip, 1.3, 0.7).to_json())
    adjoints = [step for step in data["steps"] if step["kind"] == "adjoint"]
    assert adjoints
    for step in adjoints:
        assert not re.search(r"\bg\b", step["numbers"] + step["formula"]), step
    assert data["gradient"] == pytest.approx({"x": 0.7 + 0.35, "y": 1.3 + 0.65})


def weighted(x, y):
    return x * y * y


def test_explaining_a_gradient_explains_its_partials():
    """explain(grad(f, wrt="y")) explained every partial, ignoring the gradient's wrt."""
    assert explain(grad(weighted, wrt="y"), 2.0, 3.0).gradient == {"y": 12.0}


@pytest.mark.parametrize("transform", [jacobian, hessian])
def test_explaining_a_jacobian_or_hessian_says_what_to_explain(transform):
    """It was an UnsupportedSyntaxError located in adcompile's own compose.py (*args)."""
    with pytest.raises(TypeError, match=r"explain the function itself \(explain\(f, \.\.\.\)\)"):
        explain(transform(weighted), 2.0, 3.0)


NAMES_SOURCE = """
def summed(x):
    acc = x * 2.0
    return acc + sum(x * k for k in range(3))


def early(x):
    result = x * 3.0
    if x > 1:
        return result * x
    return result + 1.0


def g(g, result):
    return g * g * result


def h(x):
    h = x * 2.0
    return h + x


def counts(x, len):
    t = x
    for c in (1.0, 2.0):
        t = t * c * len
    return t
"""


@pytest.fixture(scope="module")
def named(tmp_path_factory):
    from tests.helpers import module_from_source

    return module_from_source(tmp_path_factory.mktemp("names"), NAMES_SOURCE)


def test_the_compilers_own_variables_never_show_under_a_users_name(named):
    """`sum(...)`'s accumulator showed as `acc` beside the user's acc (`c2 = acc + acc` with
    two values), and an early return's result as the user's `result`."""
    last = [s for s in explain(named.summed, 0.5).steps if s.sweep == "forward"][-1]
    left, right = last.formula.split(" = ")[-1].split(" + ")
    assert left == "acc" and right != "acc", last.formula
    rows = {s.formula for s in explain(named.early, 0.5).steps if s.sweep == "forward"}
    assert "result = x * 3.0" in rows
    assert not any(r.startswith("result = result") for r in rows), rows


def test_the_output_is_told_apart_from_a_variable_of_the_same_name(named):
    result_line = str(explain(named.g, 1.5, 2.0)).splitlines()[-1]
    assert "dg_out/dg = 6" in result_line and "dg/dg" not in result_line
    forward = [s.formula for s in explain(named.h, 1.5).steps if s.sweep == "forward"]
    assert forward[-1] == "h_out = h + x", forward  # a local h: the output was shown as h
    from adcompile.graph import executed_graph

    dot = executed_graph(explain(named.g, 1.5, 2.0)).source
    assert "dg_out/dg = 6" in dot and "dg/dg" not in dot


def test_a_parameter_named_like_a_builtin_stays_out_of_the_builtins_numbers(named):
    steps = explain(named.counts, 1.1, 0.5).steps
    step = next(s for s in steps if s.formula == "len((1.0, 2.0))")
    assert step.numbers == "len((1.0, 2.0))" and step.value == 2


def test_an_inlined_functions_variables_are_shown_under_its_name(tmp_path):
    """softplus's parameter `x` was shown as a second `x` (`x = x * y`, and a `df/dx` row
    the final total leaves out); it is `softplus.x` now. The numbers are the function's."""
    module = module_from_source(
        tmp_path,
        """
        import math


        def softplus(x):
            return math.log(1.0 + math.exp(x))


        def f(x, y):
            a = softplus(x * y)
            return a * x
        """,
    )
    steps = explain(module.f, 0.5, 2.0).steps
    formulas = [s.formula for s in steps]
    assert "softplus.x = x * y" in formulas
    assert not any(f.startswith("x = ") for f in formulas)
    total = [s for s in steps if s.formula.startswith("df/dx") and "+" in (s.numbers or "")]
    assert total[-1].value == pytest.approx(grad(module.f)(0.5, 2.0)[0], rel=1e-15)


def test_the_numbers_show_the_arm_a_rule_takes_and_the_formula_its_tests(tmp_path):
    module = module_from_source(
        tmp_path,
        "def f(x, y):\n    m = max(x, y)\n    return x ** y + abs(x - y) + m\n",
    )
    steps = {
        step.formula: step.numbers
        for step in explain(module.f, 1.5, 0.75).steps
        if step.kind == "adjoint"
    }
    assert steps["df/dx += df/d(x ** y) * (y * x ** (y - 1) if y != 0 or x != 0 else 0.0)"] == (
        "1 * (0.75 * 1.5 ** (0.75 - 1))"
    )
    # `g == 0` with g = 1 is no part of the test shown: `x == 0`, not `x == 0 or 0`.
    power_y = (
        "df/dy += df/d(x ** y) * (x ** y * log(x) if x > 0 else 0.0 if x == 0 else x ** y * nan)"
    )
    assert steps[power_y] == "1 * (1.3554 * log(1.5))"
    assert steps["df/dy += df/dm * ((0.5 if x == y else 1.0) if y >= x else 0.0)"] == "1 * 0.0"


def test_a_tests_numbers_show_closure_and_module_constants_as_numbers(tmp_path):
    # `x * y > limit = 1.5 * 1.2 > limit`: the next row showed limit's value, the test did not.
    module = module_from_source(
        tmp_path,
        "K = 2.5\n\n\ndef make(limit):\n    def f(x, y):\n        if x * y > limit:\n"
        "            return x * y - limit\n        return x + K\n    return f\n\n\n"
        "f = make(1.0)\n\n\ndef g(x):\n    if x > K:\n        return x * K\n    return x\n",
    )
    tests = [step.numbers for step in explain(module.f, 1.5, 1.2).steps if step.kind == "test"]
    assert tests == ["1.5 * 1.2 > 1"]
    tests = [step.numbers for step in explain(module.g, 3.0).steps if step.kind == "test"]
    assert tests == ["3 > 2.5"]
