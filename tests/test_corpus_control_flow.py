"""Differential tests of control flow and calls (issue 3) against the mpmath reference.

Each feature group of ``tests.corpus.control_flow`` has its own parametrized test, named after
the group, so features can be enabled one at a time::

    pytest tests/test_corpus_control_flow.py -k if_statements
    pytest tests/test_corpus_control_flow.py -k "for_range or while_loops"

The ids of the cross-cutting tests (standalone source) start with the group name too, so
``-k if_statements`` selects everything about ``if``. The checks of the corpus itself
(``test_corpus_*``) need no compiler: they run the functions as plain Python and compare the
mpmath reference with float finite differences, which proves the points are away from kinks.
"""

from __future__ import annotations

import ast
import inspect
import math
import re
import sys
import textwrap
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from adcompile import AdcompileError, UnsupportedSyntaxError, explain, grad, hessian, value_and_grad
from adcompile.reference import (
    assert_grad_matches_mp,
    positional_params,
    reference_gradient_mp,
    resolve_wrt,
)
from tests.corpus.control_flow import (
    CLOSURES_LAMBDAS,
    CYCLES,
    EARLY_RETURNS,
    FOR_RANGE,
    GROUPS,
    HELPER_CALLS,
    IF_STATEMENTS,
    ITERATION_FORMS,
    RECORD_FREE,
    RECURSIVE,
    SEQUENCE_VALUES,
    WHILE_LOOPS,
    if_elif_else,
    if_math_condition,
    if_nested,
    if_on_computed,
    if_sequential,
    if_simple,
    range_one_arg,
    sine_map_100,
)
from tests.corpus.straight_line import CORPUS as STRAIGHT_LINE
from tests.helpers import function_from_source, module_from_source, run_cli

Entry = tuple[Callable[..., Any], list[dict[str, Any]], Any]

MIN_CORPUS_SIZE = 70
MILLION = 10**6


def cases(entries: Sequence[Entry], group: str = "") -> list[Any]:
    """pytest params for corpus entries, with ids ``group-function`` (or just the function)."""
    return [
        pytest.param(fn, points, wrt, id=f"{group}-{fn.__name__}" if group else fn.__name__)
        for fn, points, wrt in entries
    ]


def all_cases() -> list[Any]:
    """Every entry of every feature group, ids prefixed with the group name."""
    return [case for group, entries in GROUPS.items() for case in cases(entries, group)]


def wrt_names(fn: Callable[..., Any], wrt: Any) -> list[str]:
    """The parameter names ``wrt`` selects, as grad reads it."""
    return resolve_wrt(positional_params(fn), wrt, fn.__name__)[0]


def call_args(fn: Callable[..., Any], point: dict[str, Any]) -> list[Any]:
    """A point as positional arguments in parameter order."""
    return [point[name] for name in positional_params(fn)]


def generated_function(source: str, name: str) -> ast.FunctionDef:
    """The generated function ``name`` in a dumped module."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise AssertionError(f"no function {name} in the generated source:\n{source}")


def count(node: ast.AST, kind: type[ast.AST]) -> int:
    """How many nodes of ``kind`` are under ``node``."""
    return sum(isinstance(n, kind) for n in ast.walk(node))


def is_reversed_range(node: ast.expr) -> bool:
    """True for ``reversed(range(...))`` or ``reversed(<recorded values>)``: a replay."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "reversed"
        and len(node.args) == 1
        and (
            isinstance(node.args[0], ast.Name)
            or (
                isinstance(node.args[0], ast.Call)
                and isinstance(node.args[0].func, ast.Name)
                and node.args[0].func.id == "range"
            )
        )
    )


def same_float(a: object, b: object) -> bool:
    """Equal, counting nan as equal to nan."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


# --- the corpus itself (no compiler needed) -----------------------------------------------------


def test_corpus_is_large_with_unique_names() -> None:
    entries = [entry for group in GROUPS.values() for entry in group]
    names = [fn.__name__ for fn, _, _ in entries + RECURSIVE]
    assert len(entries) >= MIN_CORPUS_SIZE
    assert len(names) == len(set(names)), "corpus functions need unique names (test ids)"
    assert all(GROUPS.values()), "every feature group needs functions"
    assert set(CYCLES) == {fn.__name__ for fn, _, _ in RECURSIVE}


@pytest.mark.parametrize(("fn", "points", "wrt"), all_cases() + cases(RECURSIVE, "recursive"))
def test_corpus_entry_is_well_formed(
    fn: Callable[..., Any], points: list[dict[str, Any]], wrt: Any
) -> None:
    params = positional_params(fn)
    names = wrt_names(fn, wrt)
    assert 3 <= len(points) <= 4
    for point in points:
        assert set(point) == set(params), f"{point} must give every parameter of {params}"
        for name in names:
            assert type(point[name]) is float, f"{name} is differentiated, so must be a float"


@pytest.mark.parametrize(("fn", "points", "wrt"), all_cases() + cases(RECURSIVE, "recursive"))
def test_corpus_runs_as_plain_python(
    fn: Callable[..., Any], points: list[dict[str, Any]], wrt: Any
) -> None:
    for point in points:
        value = fn(*call_args(fn, point))
        assert isinstance(value, float | int) and math.isfinite(value), (point, value)


def code_objects(code: types.CodeType) -> set[types.CodeType]:
    """A code object and every code object nested in it (lambdas, inner defs, generators)."""
    nested = {code}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            nested |= code_objects(const)
    return nested


def executed_lines(fn: Callable[..., Any], points: list[dict[str, Any]]) -> set[int]:
    """The lines of ``fn`` (and of code nested in it) that run at some point."""
    codes = code_objects(fn.__code__)
    lines: set[int] = set()

    def trace(frame: types.FrameType, event: str, arg: object) -> Any:
        if frame.f_code not in codes:
            return None
        if event == "line":
            lines.add(frame.f_lineno)
        return trace

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        for point in points:
            fn(*call_args(fn, point))
    finally:
        sys.settrace(previous)
    return lines


def statement_lines(fn: Callable[..., Any]) -> set[int]:
    """The first line of every statement in ``fn``'s body, nested bodies included."""
    source_lines, first = inspect.getsourcelines(fn)
    tree = ast.parse(textwrap.dedent("".join(source_lines)))
    definition = tree.body[0]
    assert isinstance(definition, ast.FunctionDef)
    return {
        node.lineno + first - 1
        for stmt in definition.body
        for node in ast.walk(stmt)
        if isinstance(node, ast.stmt)
    }


@pytest.mark.parametrize(("fn", "points", "wrt"), all_cases())
def test_corpus_points_run_every_line(
    fn: Callable[..., Any], points: list[dict[str, Any]], wrt: Any
) -> None:
    """Together the points take every branch: each statement runs at one point at least."""
    missed = statement_lines(fn) - executed_lines(fn, points)
    assert not missed, f"no point runs lines {sorted(missed)} of {fn.__name__}"


@pytest.mark.parametrize(("fn", "points", "wrt"), all_cases())
def test_corpus_points_are_away_from_kinks(
    fn: Callable[..., Any], points: list[dict[str, Any]], wrt: Any
) -> None:
    """The reference agrees with float central differences: no branch flips within 1e-6."""
    names = wrt_names(fn, wrt)
    for point in points:
        reference = reference_gradient_mp(fn, point, names)
        for name in names:
            h = 1e-6 * max(1.0, abs(point[name]))
            up = fn(*call_args(fn, {**point, name: point[name] + h}))
            down = fn(*call_args(fn, {**point, name: point[name] - h}))
            difference = (up - down) / (2.0 * h)
            assert math.isfinite(reference[name])
            assert math.isclose(difference, reference[name], rel_tol=1e-5, abs_tol=1e-6), (
                f"d/d{name} at {point}: mpmath {reference[name]!r}, finite difference "
                f"{difference!r} -- is the point near a kink?"
            )


# --- gradients against the reference, one test per feature group -------------------------------


@pytest.mark.parametrize(("fn", "points", "wrt"), cases(IF_STATEMENTS))
def test_if_statements(fn: Callable[..., Any], points: list[dict[str, Any]], wrt: Any) -> None:
    assert_grad_matches_mp(fn, points, wrt)


@pytest.mark.parametrize(("fn", "points", "wrt"), cases(EARLY_RETURNS))
def test_early_returns(fn: Callable[..., Any], points: list[dict[str, Any]], wrt: Any) -> None:
    assert_grad_matches_mp(fn, points, wrt)


@pytest.mark.parametrize(("fn", "points", "wrt"), cases(FOR_RANGE))
def test_for_range(fn: Callable[..., Any], points: list[dict[str, Any]], wrt: Any) -> None:
    assert_grad_matches_mp(fn, points, wrt)


@pytest.mark.parametrize(("fn", "points", "wrt"), cases(WHILE_LOOPS))
def test_while_loops(fn: Callable[..., Any], points: list[dict[str, Any]], wrt: Any) -> None:
    assert_grad_matches_mp(fn, points, wrt)


@pytest.mark.parametrize(("fn", "points", "wrt"), cases(HELPER_CALLS))
def test_helper_calls(fn: Callable[..., Any], points: list[dict[str, Any]], wrt: Any) -> None:
    assert_grad_matches_mp(fn, points, wrt)


@pytest.mark.parametrize(("fn", "points", "wrt"), cases(CLOSURES_LAMBDAS))
def test_closures_lambdas(fn: Callable[..., Any], points: list[dict[str, Any]], wrt: Any) -> None:
    assert_grad_matches_mp(fn, points, wrt)


@pytest.mark.parametrize(("fn", "points", "wrt"), cases(ITERATION_FORMS))
def test_iteration_forms(fn: Callable[..., Any], points: list[dict[str, Any]], wrt: Any) -> None:
    assert_grad_matches_mp(fn, points, wrt)


@pytest.mark.parametrize(("fn", "points", "wrt"), cases(SEQUENCE_VALUES))
def test_sequences_of_differentiated_values_are_rejected_where_they_are_used(
    fn: Callable[..., Any], points: list[dict[str, Any]], wrt: Any
) -> None:
    """Not supported yet: a located compile-time error, never a silent zero."""
    with pytest.raises(AdcompileError) as info:
        grad(fn, wrt=wrt)
    source_file = inspect.getsourcefile(fn)
    first_line = inspect.getsourcelines(fn)[1]
    prefix, line, _column, _rest = str(info.value).split(":", 3)
    assert prefix == source_file
    assert first_line <= int(line) < first_line + len(inspect.getsourcelines(fn)[0])


@pytest.mark.parametrize(("fn", "points", "wrt"), cases(RECURSIVE))
def test_recursion_is_rejected_naming_the_cycle(
    fn: Callable[..., Any], points: list[dict[str, Any]], wrt: Any
) -> None:
    with pytest.raises(UnsupportedSyntaxError) as info:
        grad(fn, wrt=wrt)
    message = str(info.value)
    for name in CYCLES[fn.__name__]:
        assert name in message, f"the error should name {name} (the cycle): {message}"


# --- the generated source ------------------------------------------------------------------------


@pytest.mark.parametrize(("fn", "points", "wrt"), all_cases())
def test_standalone_source(fn: Callable[..., Any], points: list[dict[str, Any]], wrt: Any) -> None:
    """The dumped module runs in a fresh namespace and computes what grad computes."""
    compiled = grad(fn, wrt=wrt)
    namespace: dict[str, Any] = {"__name__": "dumped"}
    exec(compile(compiled.source, f"<dumped {fn.__name__}>", "exec"), namespace)
    standalone = namespace[compiled.__name__]
    for point in points:
        args = call_args(fn, point)
        expected, got = compiled(*args), standalone(*args)
        pairs = (
            zip(expected, got, strict=True) if isinstance(expected, tuple) else [(expected, got)]
        )
        assert all(same_float(a, b) for a, b in pairs), (point, expected, got)


def first_adjoint_line(source: str) -> int:
    """The line number of the first ``# adjoint of line`` comment: where the adjoint starts."""
    for number, line in enumerate(source.splitlines(), start=1):
        if line.strip().startswith("# adjoint of line"):
            return number
    raise AssertionError(f"no adjoint comment in the generated source:\n{source}")


@pytest.mark.parametrize(
    "fn", [if_simple, if_elif_else, if_nested, if_sequential, if_math_condition, if_on_computed]
)
def test_if_statements_keep_if_in_both_sweeps(fn: Callable[..., Any]) -> None:
    """Branches stay branches: an ``if`` in the forward sweep, one per primal ``if`` after it."""
    compiled = grad(fn, wrt=0)
    primal_ifs = count(ast.parse(textwrap.dedent(inspect.getsource(fn))), ast.If)
    generated = generated_function(compiled.source, compiled.__name__)
    boundary = first_adjoint_line(compiled.source)
    ifs = [node for node in ast.walk(generated) if isinstance(node, ast.If)]
    forward = [node for node in ifs if node.lineno < boundary]
    adjoint = [node for node in ifs if node.lineno > boundary]
    assert forward and len(adjoint) >= primal_ifs, compiled.source


def literal_loop_source(iterations: int) -> str:
    """A function whose loop count is a literal in its source."""
    return textwrap.dedent(
        f"""
        import math


        def f(x, a):
            for i in range({iterations}):
                x = x - 0.1 * math.sin(x) * a + 0.01 * i
            return x
        """
    )


def test_for_range_loop_is_not_unrolled(tmp_path: Path) -> None:
    sources = {}
    for iterations in (3, 30, 3000):
        fn = function_from_source(tmp_path, literal_loop_source(iterations))
        compiled = grad(fn)
        assert "reversed(" in compiled.source
        generated = generated_function(compiled.source, compiled.__name__)
        loops = [node for node in ast.walk(generated) if isinstance(node, ast.For)]
        assert len(loops) >= 2 and any(is_reversed_range(loop.iter) for loop in loops)
        sources[iterations] = compiled.source
    line_counts = {n: len(text.splitlines()) for n, text in sources.items()}
    assert len(set(line_counts.values())) == 1, line_counts


@pytest.mark.parametrize("fn", [range_one_arg, sine_map_100])
def test_for_range_corpus_loops_have_a_reversed_loop(fn: Callable[..., Any]) -> None:
    compiled = grad(fn, wrt=0)
    generated = generated_function(compiled.source, compiled.__name__)
    assert any(
        isinstance(node, ast.For) and is_reversed_range(node.iter) for node in ast.walk(generated)
    ), compiled.source


@pytest.mark.parametrize("fn", [fn for fn, _ in STRAIGHT_LINE], ids=lambda fn: fn.__name__)
def test_straight_line_code_records_nothing(fn: Callable[..., Any]) -> None:
    assert ".append(" not in grad(fn).source


@pytest.mark.parametrize("fn", RECORD_FREE, ids=lambda fn: f"for_range-{fn.__name__}")
def test_for_range_loop_needing_nothing_records_nothing(fn: Callable[..., Any]) -> None:
    compiled = grad(fn, wrt=0)
    assert ".append(" not in compiled.source, compiled.source


# --- a million iterations ------------------------------------------------------------------------


def million_step_decay(x, n):
    """A million steps of x <- x - 1e-6 x^2: the adjoint needs every x."""
    for _ in range(n):
        x = x - 1e-6 * x * x
    return x


def million_step_sum(x, n):
    """A million steps of a sum whose adjoint needs nothing recorded."""
    s = 0.0
    for i in range(n):
        s = s + x * 1e-6 + i * 1e-12
    return s


def decay_derivative(x: float, n: int) -> float:
    """d/dx of million_step_decay by forward-mode chain rule, in plain Python."""
    derivative = 1.0
    for _ in range(n):
        derivative *= 1.0 - 2e-6 * x
        x = x - 1e-6 * x * x
    return derivative


def test_for_range_million_iterations_with_recorded_values() -> None:
    derivative = grad(million_step_decay, wrt="x")(0.8, MILLION)
    assert math.isclose(derivative, decay_derivative(0.8, MILLION), rel_tol=1e-9)


def test_for_range_million_iterations_record_free() -> None:
    derivative = grad(million_step_sum, wrt="x")(0.8, MILLION)
    assert math.isclose(derivative, 1.0, rel_tol=1e-9)


def test_reduction_inside_a_loop_and_a_branch_leaves_nothing_unbound(tmp_path: Path) -> None:
    """Regression: a sum() accumulator inside a loop used to leak into later merges."""
    fn = function_from_source(
        tmp_path,
        """
        def f(x, n):
            y = 0.0
            for i in range(n):
                if x > 0.5:
                    y = y + sum(x * j for j in range(i))
            if x > 0:
                y = y + 1.0
            return y * x
        """,
    )
    for n in (0, 1, 4):
        for x in (0.7, -0.4):
            assert_grad_matches_mp(fn, [{"x": x, "n": n}], "x")


def test_a_helper_called_through_its_module_is_inlined(tmp_path, monkeypatch) -> None:
    """``import helpers; helpers.gaussian(x)`` as ``from helpers import gaussian`` would be."""
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "qualified_helpers.py").write_text(
        "import math\n\n\ndef bump(x, s=2.0):\n    return math.exp(-x * x / s)\n"
    )
    module = module_from_source(
        tmp_path,
        "import qualified_helpers\n\n\ndef f(x, y):\n"
        "    return qualified_helpers.bump(x) * y + qualified_helpers.bump(y, s=0.5)\n",
    )
    code = [line for line in grad(module.f).source.splitlines() if "#" not in line]
    assert not any("qualified_helpers" in line for line in code)  # inlined, not called
    assert_grad_matches_mp(module.f, [{"x": 0.3, "y": -0.7}, {"x": 1.2, "y": 0.4}], None)


SHORT_CIRCUITS = """
import math


def safe_log(t):
    return math.log(t)


def grow(t):
    while t < 10.0:  # ends only for t > 0
        t = t * 2.0
    return t


def guarded_and(x):
    if x > 0 and safe_log(x) > 0.5:
        return x * x
    return x


def guarded_or(x):
    if x <= 0 or not safe_log(x) > 0.5:
        return x
    return x * x


def guarded_arm(x):
    if (safe_log(x) if x > 0 else 0.0) > 0.5:
        return x * x
    return x


def guarded_loop(x):
    y = x * x if x > 0 and grow(x) > 12.0 else x
    return y


def guarded_nested(x, y):
    if not (y > 0 and (x < 0 or safe_log(x) > 0.5)):
        return x * y
    return x + y
"""


@pytest.mark.parametrize(
    "name", ["guarded_and", "guarded_or", "guarded_arm", "guarded_loop", "guarded_nested"]
)
def test_a_call_guarded_by_and_or_runs_only_where_python_runs_it(tmp_path: Path, name: str) -> None:
    """The call was computed before the test: math domain errors, or a loop never ending."""
    fn = function_from_source(tmp_path, SHORT_CIRCUITS, name)
    points = [{"x": -1.0}, {"x": 0.7}, {"x": 2.8}]  # not where grow() lands on 10 exactly
    if name == "guarded_nested":
        points = [{"x": x, "y": y} for x in (-1.0, 0.5, 2.5) for y in (-0.5, 1.5)]
    assert_grad_matches_mp(fn, points, None)
    assert_grad_matches_mp(fn, points, None, gradient=grad(fn, mode="forward"))


@pytest.mark.parametrize(
    ("test", "where"),
    [
        ("while k < n and sum(x * j for j in range(3)) < 5.0:", "in a `while` condition"),
        ("while max(x * j for j in range(3)) < 5.0 and k < n:", "in a `while` condition"),
        ("if 0.0 < x < sum(x * j for j in range(3)) and k < n:", "after the first comparison"),
    ],
)
def test_a_generator_reduction_where_a_call_is_refused_is_named_as_such(
    tmp_path: Path, test: str, where: str
) -> None:
    """It was called "a call to your own function", which the test has none of."""
    fn = function_from_source(
        tmp_path,
        f"def f(x, n):\n    k = 0\n    {test}\n        x = x * 0.9\n        k = k + 1\n"
        "    return x\n",
        "f",
    )
    with pytest.raises(UnsupportedSyntaxError, match=r"`sum`/`min`/`max` of a generator") as e:
        grad(fn, wrt="x")
    assert where in str(e.value)


def test_a_call_late_in_a_comparison_chain_is_refused(tmp_path: Path) -> None:
    fn = function_from_source(
        tmp_path,
        SHORT_CIRCUITS + "\n\ndef chained(x):\n    if 0 < x < safe_log(x):\n        return x\n"
        "    return x * x\n",
        "chained",
    )
    with pytest.raises(UnsupportedSyntaxError, match="after the first comparison of a chain"):
        grad(fn)


def test_a_reduction_in_a_test_and_of_an_empty_sequence(tmp_path: Path) -> None:
    """`sum(...)` of a generator in a test was refused ("supported only inside sum()"), and
    `min`/`max` of nothing gave None where Python raises ValueError."""
    module = module_from_source(
        tmp_path,
        """
        import math


        def tested(x):
            if sum(math.sin(x * i) for i in range(3)) > 0.5:
                return x * x
            return x


        def smallest(x, n):
            m = max(x * i for i in range(n))
            return x if m is None else x * m
        """,
    )
    assert_grad_matches_mp(module.tested, [{"x": 0.7}, {"x": -0.7}], None)
    assert_grad_matches_mp(module.smallest, [{"x": 0.7, "n": 3}], "x")
    with pytest.raises(ValueError) as python:  # its wording differs between versions
        module.smallest(0.7, 0)
    for mode in ("reverse", "forward"):
        with pytest.raises(ValueError, match=re.escape(str(python.value))):
            grad(module.smallest, wrt="x", mode=mode)(0.7, 0)


def _indent_levels(source: str) -> int:
    return max((len(line) - len(line.lstrip(" "))) // 4 for line in source.splitlines() if line)


def test_guard_clauses_breaks_and_long_elif_chains_stay_flat(tmp_path: Path) -> None:
    """Each early exit (and each elif) nested the generated code one level deeper: text
    quadratic in their number, and past 97 of them an IndentationError from Python."""
    guards = ["def guards(x, y):", "    s = x"]
    for k in range(120):
        guards += [
            "    s = s * 0.99 + math.sin(s) * y",
            f"    if s > {1.0 + k / 100}:",
            "        return s",
        ]
    chain = ["def chain(x, y):", "    s = x * y", "    if x <= 0.0:", "        return s"]
    chain += ["    elif math.log(x) < -3.0:", "        s = s + 1.0"]  # log runs only if x > 0
    for k in range(1, 119):
        chain += [f"    elif x < {k / 100}:", f"        s = s * {k} + math.sin(s) * y"]
    chain += ["    else:", "        s = s + y * y", "    return s * x"]
    module = module_from_source(
        tmp_path, "import math\n\n\n" + "\n".join([*guards, "    return s * y", "", "", *chain])
    )
    for name in ("guards", "chain"):
        fn = getattr(module, name)
        assert _indent_levels(grad(fn).source) <= 4
        points = [{"x": x, "y": 0.7} for x in (-0.5, 0.004, 0.305, 0.555, 1.5)]
        assert_grad_matches_mp(fn, points, None)


def test_a_thirty_case_piecewise_function_keeps_its_elif_chain(tmp_path: Path) -> None:
    """Chains of 8 to 31 elifs were flattened onto flags set and tested for every case:
    the gradient of a 30-case piecewise function took 10-17x the function's time (1.5-2.7x
    nested, measured in one process). Flat chains now start at 32 elifs."""
    lines = ["def piecewise(x):"]
    for k in range(30):
        lines += [f"    {'if' if k == 0 else 'elif'} x < {k}.0:", f"        return x * {k + 1}.0"]
    lines += ["    else:", "        return x * x"]
    fn = function_from_source(tmp_path, "\n".join(lines) + "\n", "piecewise")
    source = grad(fn).source
    assert not re.search(r"^ *(done|case)\w* = ", source, re.M), source  # no flags: nested
    for x in (-0.5, 0.5, 14.5, 28.5, 31.0):
        expected = 2.0 * x if x >= 29.0 else float(min(k for k in range(30) if x < k) + 1)
        assert grad(fn)(x) == expected and grad(fn, mode="forward")(x) == expected


def test_a_hundred_nested_conditional_expressions_are_refused_clearly(tmp_path: Path) -> None:
    expression = "x * y"
    for i in range(120):
        expression = f"(y * {i + 1.0} if x < {i * 0.01} else {expression})"
    fn = function_from_source(tmp_path, f"def f(x, y):\n    return {expression}\n")
    with pytest.raises(UnsupportedSyntaxError, match="deeper than Python's limit of 100"):
        grad(fn)


def _nested_loops(depth: int) -> str:
    lines, indent = ["def f(x):", "    s = 0.0"], "    "
    for level in range(depth):
        lines.append(f"{indent}for i{level} in range(2):")
        indent += "    "
    return "\n".join([*lines, f"{indent}s = s + x * x", "    return s"]) + "\n"


def test_twenty_nested_loops_are_refused_clearly_and_nineteen_work(tmp_path: Path) -> None:
    """Python compiles at most 20 nested loops; the running module's `try` takes one: 20
    user loops gave a bare SyntaxError ("too many statically nested blocks") from grad."""
    fn = function_from_source(tmp_path, _nested_loops(20))
    with pytest.raises(UnsupportedSyntaxError, match="nest loops deeper than Python's limit"):
        grad(fn)
    source = _nested_loops(19).replace("range(2)", "range(1)")  # one pass: s = x * x
    fn = function_from_source(tmp_path, source.replace("def f", "def g"), "g")
    assert grad(fn)(1.5) == 3.0 and grad(fn, mode="forward")(1.5) == 3.0
    # An `if` inside the innermost loop is no loop: it was counted as a 20th.
    innermost = " " * 4 * 20 + "s = s + x * x"
    guarded = source.replace(innermost, " " * 4 * 20 + "if x > 0:\n    " + innermost)
    fn = function_from_source(tmp_path, guarded.replace("def f", "def h"), "h")
    assert grad(fn)(1.5) == 3.0 and grad(fn, mode="forward")(1.5) == 3.0


def test_inlining_that_doubles_at_each_level_stops_with_a_message(tmp_path: Path) -> None:
    """Each level calling the one below twice made 2**depth copies, with no end in sight."""
    lines = ["def h0(x, y):", "    return x * y + x"]
    for level in range(1, 14):
        below = f"h{level - 1}"
        lines += ["", "", f"def h{level}(x, y):", f"    return {below}(x, y) + {below}(y, x)"]
    fn = function_from_source(tmp_path, "\n".join(lines) + "\n", "h13")
    with pytest.raises(UnsupportedSyntaxError, match="more than 5,000 inlined bodies"):
        grad(fn)


GUARDED_AGAIN = """
import math


def h(u):
    return math.log(u) + u


def g(u):
    s = u * 0.5
    for i in range(2):
        s = s + 0.1 * u
    if s < -2.0:
        s = 1.0
    elif not (u > 0 and h(u) > 0.8):
        s = s * u
    return s


def twice(x):
    return g(x) * g(x)


def after_return(x, y):
    if y > 1:
        return y
    z = (x > 0 and h(x) > 0.8) if y < 0.7 else False
    if z:
        y = y * x
    return x * y
"""


@pytest.mark.parametrize(
    ("name", "point"), [("twice", {"x": 0.5}), ("after_return", {"x": 2.0, "y": 0.9})]
)
def test_guarded_calls_compile_again_and_on_every_path(tmp_path: Path, name: str, point) -> None:
    """The hoisting wrote its flags into the cached tree (a second compile read a name
    that no longer existed), and a flag set in one arm was merged where it was unbound."""
    fn = function_from_source(tmp_path, GUARDED_AGAIN, name)
    for gradient in (grad(fn), grad(fn, optimize=False), grad(fn, mode="forward")):
        assert_grad_matches_mp(fn, [point], None, gradient=gradient)
    assert explain(fn, *point.values()).gradient == pytest.approx(
        dict(zip(point, grad(fn, wrt=tuple(point))(**point), strict=True))
    )


LITERAL_LOOPS = """
import math


def softplus_sum(a, b, c):
    s = 0.0
    for z in (a, b, c):
        s = s + math.log1p(math.exp(z))
    return s


def items_taken_first(a, b):
    s = 0.0
    for z in [a, b * a]:
        a = a * 2.0  # the list was built before: z is the old a, then the old b * a
        s = s + z * a
    return s


def stops_early(a, b, c):
    s = 0.0
    for z in (a * b, b, c):
        if z > 1.0:
            break
        s = s + math.sin(z) * c
    return s
"""


def test_a_loop_over_a_tuple_of_the_functions_values(tmp_path: Path) -> None:
    """`for z in (a, b, c)` was refused ("indexing a sequence gives its items no
    derivative"): each item is now picked by a test, so derivatives flow through."""
    module = module_from_source(tmp_path, LITERAL_LOOPS)
    points = {
        "softplus_sum": [{"a": 0.3, "b": -1.2, "c": 2.0}],
        "items_taken_first": [{"a": 0.7, "b": -1.3}],
        "stops_early": [{"a": 0.5, "b": 0.9, "c": 1.4}, {"a": 1.5, "b": 0.2, "c": 0.3}],
    }
    for name, at in points.items():
        fn = getattr(module, name)
        for mode in ("reverse", "forward"):
            assert_grad_matches_mp(fn, at, None, gradient=grad(fn, mode=mode))
    h = hessian(module.softplus_sum)(0.3, -1.2, 2.0)
    for i, v in enumerate((0.3, -1.2, 2.0)):  # d2/dz2 softplus(z) = sigmoid(z)(1 - sigmoid(z))
        sigmoid = 1.0 / (1.0 + math.exp(-v))
        assert h[i][i] == pytest.approx(sigmoid * (1.0 - sigmoid), rel=1e-12)


def test_ninety_eight_nested_ifs_are_refused_clearly(tmp_path: Path) -> None:
    """The running module's `try` takes one of Python's 100 indentation levels: 98 nested
    ifs gave a bare IndentationError from grad."""
    lines, indent = ["def f(x):"], "    "
    for level in range(98):
        lines.append(f"{indent}if x > {level}:")
        indent += "    "
    lines += [f"{indent}x = x * 2.0", "    return x"]
    fn = function_from_source(tmp_path, "\n".join(lines) + "\n")
    with pytest.raises(UnsupportedSyntaxError, match="deeper than Python's limit of 100"):
        grad(fn)


TUPLE_ITEMS_SOURCE = """
import math

PTS = ((1.0, 2.0), (0.5, -1.0), (2, 0.25))


def indexed_items(x):
    s = 0.0
    for p in PTS:
        s = s + p[0] * x + math.sin(p[1] * x)
    return s


def item_name_also_assigned(x, pair):
    p = pair
    s = p[1] * x
    for p in PTS:
        s = s + p[0] * x
    return s


def shadowed_tuple(x, PTS):
    s = 0.0
    for p in PTS:
        s = s + p[0] * x
    return s
"""


def test_an_item_of_a_module_tuple_of_numbers_indexed_stays_scalar(tmp_path: Path) -> None:
    """``for p in PTS: p[0]`` counted as array syntax (a constant key on a local): the
    gradient needed NumPy, returned np.float64, and ``adcompile check`` refused it."""
    module = module_from_source(tmp_path, TUPLE_ITEMS_SOURCE)
    gradient = grad(module.indexed_items)
    assert "numpy" not in gradient.source and "unbroadcast" not in gradient.source
    x = 0.3
    expected = sum(p0 + p1 * math.cos(p1 * x) for p0, p1 in module.PTS)
    assert type(gradient(x)) is float
    assert gradient(x) == pytest.approx(expected, rel=1e-15)
    path = Path(module.__file__)
    checked = run_cli("check", f"{path}:indexed_items", "--at", "x=0.3")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # The name bound to a parameter too, or a parameter shadowing the module's tuple: the
    # parameter may hold arrays, so the code stays array code.
    also_assigned = grad(module.item_name_also_assigned, wrt=0)
    assert "import numpy" in also_assigned.source
    assert also_assigned(x, (1.0, 4.0)) == pytest.approx(7.5, rel=1e-15)
    assert "import numpy" in grad(module.shadowed_tuple, wrt=0).source


REBOUND_SEQUENCES_SOURCE = """
import numpy as np


def tuple_rebound_in_body(t, a):
    s = 0.0
    for v in t:
        s = s + v * a
        t = (1.0, 1.0, 1.0)
    return s


def zip_of_a_rebound_tuple(t, a):
    s = 0.0
    for u, v in zip(t, t):
        s = s + u * v * a
        t = (0.5, 0.5, 0.5)
    return s


def rows_rebound_in_body(X, w):
    s = 0.0
    for row in X:
        s = s + np.sum(row * w)
        X = X * 2.0
    return s


def rows_named_like_the_array(x, w):
    s = 0.0
    for x in x:
        s = s + np.sum(x * w)
    return s
"""


def test_a_loop_iterates_what_its_sequence_name_held_at_the_start(tmp_path: Path) -> None:
    """``for v in t`` read ``t[k]`` from the name each iteration, so rebinding ``t`` in the
    body changed the items (wrong values and gradients), and ``for x in x`` indexed the
    item itself (IndexError)."""
    import numpy as np

    module = module_from_source(tmp_path, REBOUND_SEQUENCES_SOURCE)
    t = (2.0, 3.0, 4.0)
    for fn, expected in (
        (module.tuple_rebound_in_body, 9.0),
        (module.zip_of_a_rebound_tuple, 29.0),
    ):
        value, partial = value_and_grad(fn, wrt="a")(t, 1.5)
        assert value == fn(t, 1.5)
        assert partial == expected == reference_gradient_mp(fn, {"t": t, "a": 1.5}, ["a"])["a"]
    X, w = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), np.array([0.5, -1.0])
    for fn in (module.rows_rebound_in_body, module.rows_named_like_the_array):
        for mode in ("reverse", "forward"):
            value, (dX, dw) = value_and_grad(fn, mode=mode)(X, w)
            assert value == fn(X, w)
            np.testing.assert_array_equal(dX, np.tile(w, (3, 1)))
            np.testing.assert_array_equal(dw, X.sum(axis=0))


RANGE_IN_SEQUENCES = """
import math


def rev(x, n):
    s = x
    for k in reversed(range(n)):
        s = s * x + k
    return s


def enum_range(x, n):
    s = x
    for j, k in enumerate(range(n)):
        s = s * x + j * k
    return s


def rev_floor(x):
    s = x
    for k in reversed(range(math.floor(3.0 * x))):
        s = s * x + k
    return s
"""


def test_a_range_inside_reversed_enumerate_or_zip_is_a_loop_count(tmp_path):
    # `reversed(range(n))` becomes `seq = range(n)`, then `seq[k]`: with n differentiated
    # (the default wrt, jvp, vjp, hessian), range counted as a value with no derivative and
    # the indexing was refused, where `range(n - 1, -1, -1)` compiled.
    from adcompile import jvp
    from tests.helpers import module_from_source

    module = module_from_source(tmp_path, RANGE_IN_SEQUENCES)
    x = 0.7  # rev(x, 3) = x**4 + 2 x**2 + x; enum_range(x, 3) = x**4 + x + 2
    assert grad(module.rev)(x, 3) == pytest.approx((4 * x**3 + 4 * x + 1, 0.0), rel=1e-14)
    assert jvp(module.rev, (x, 3), (1.0, 0))[1] == pytest.approx(4 * x**3 + 4 * x + 1)
    assert hessian(module.rev)(x, 3)[0][0] == pytest.approx(12 * x**2 + 4, rel=1e-14)
    assert grad(module.enum_range)(x, 3) == pytest.approx((4 * x**3 + 1, 0.0), rel=1e-14)
    # floor(3 * 1.7) = 5 terms: s = x**6 + 4 x**4 + 3 x**3 + 2 x**2 + x
    y = 1.7
    expected = 6 * y**5 + 16 * y**3 + 9 * y**2 + 4 * y + 1
    assert grad(module.rev_floor)(y) == pytest.approx(expected, rel=1e-14)


SUM_WITH_START = """
import math


def positional(x, n):
    return sum((x * k for k in range(n)), x * x)


def keyword(x, n):
    return sum([math.sin(x * k) for k in range(n)], start=2.0 * x)
"""


def test_sum_of_a_generator_takes_a_start(tmp_path):
    # It was refused as "a builtin with no derivative rule; it takes a sequence".
    from tests.helpers import module_from_source

    module = module_from_source(tmp_path, SUM_WITH_START)
    x, n = 0.7, 4
    assert grad(module.positional)(x, n) == pytest.approx((6 + 2 * x, 0.0), rel=1e-14)
    value, partials = value_and_grad(module.keyword)(x, n)
    assert value == pytest.approx(module.keyword(x, n), rel=1e-15)  # (3.12 compensates sum)
    expected = sum(k * math.cos(x * k) for k in range(n)) + 2.0
    assert partials == pytest.approx((expected, 0.0), rel=1e-14)
    assert hessian(module.positional)(x, n)[0][0] == pytest.approx(2.0)
