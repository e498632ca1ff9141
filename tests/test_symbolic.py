"""The SymPy reference: symbolic execution, partials, sampling, and the grad checker.

Symbolic results are checked against independent references: running the primal in Python,
derivatives written out by hand, and mpmath's numerical differentiation of hand-written
mpmath versions of the functions.
"""

import inspect
import math
import math as m
import operator
import random
import subprocess
import sys
from math import sin as imported_sin
from pathlib import Path

import mpmath
import pytest
import sympy as sp

import adcompile
from adcompile.errors import UnsupportedSyntaxError
from adcompile.source import load_from_file
from adcompile.symbolic import (
    SYMPY_COUNTERPARTS,
    reference_gradient,
    rule_domain,
    sample_points,
    symbolic_function,
    sympy_counterpart,
)
from adcompile.testing import (
    DEFAULT_POINT_COUNT,
    assert_grad_matches_sympy,
    compare_source_with_sympy,
    compare_with_sympy,
)
from tests.helpers import module_from_source, run_cli

ROOT = Path(__file__).resolve().parents[1]
X, Y, Z = sp.symbols("x y z", real=True)
SCALE = 2.5


def random_points(names: str, count: int, seed: int, low: float = -2.0, high: float = 2.0):
    rng = random.Random(seed)
    return [{n: rng.uniform(low, high) for n in names} for _ in range(count)]


def assert_values_match_python(fn, names: str, low: float = -2.0, high: float = 2.0) -> None:
    """The symbolic expression, evaluated, must equal what Python computes."""
    symbolic = symbolic_function(fn)
    for point in random_points(names, 10, seed=1, low=low, high=high):
        expected = fn(**point)
        assert math.isclose(symbolic.value(point), expected, rel_tol=1e-12, abs_tol=1e-14), point


# --- functions under test (module level, so their source can be found) ----------------------


def swap_and_reassign(x, y):
    """A docstring is skipped."""
    a, b = x * y, x + y
    a, b = b, a
    pass
    a = a * a
    return a - b


def augmented(x, y):
    z = x
    z += y
    z -= 0.5
    z *= y
    z /= 3
    z **= 2
    w = x
    w //= 0.7
    v = y
    v %= 1.3
    return z + w + v


def namespace_names(x):
    return imported_sin(x) + m.cos(x) * SCALE + math.pi + operator.mul(x, 2)


def conditional(x, y):
    return x * y if x < y else (x - y if 0 < x <= 1 and not y > 1 else 3.0)


def early_return(x, y):
    if x > 0:
        if y > x:
            return y * y
        t = x + 1
    else:
        t = -x
    return t * y


def many_functions(x, y):
    return (
        math.sin(x) * math.cos(y)
        + math.tan(x / 3)
        + math.atan(x)
        + math.atan2(y, x)
        + math.sinh(x) * math.cosh(y)
        + math.tanh(x)
        + math.asinh(y)
        + math.exp(x)
        + math.expm1(y)
        + math.erf(x)
        + math.erfc(y)
        + math.hypot(x, y)
        + math.fabs(y)
        + abs(x)
        + min(x, y)
        + max(x, y, 0.5)
        + pow(x * x + 1, y)
        + math.pow(y * y + 1, 0.5)
        + float(x)
    )


def positive_functions(x, y):
    return (
        math.log(x)
        + math.log(y, 3)
        + math.log1p(x)
        + math.log2(y)
        + math.log10(x)
        + math.sqrt(x * y)
        + math.asin(x / 4)
        + math.acos(y / 4)
        + math.atanh(x / 4)
        + math.acosh(y + 1)
    )


def square_plus(u, v=3.0):
    return u * u + v


def calls_helper(x):
    return square_plus(x) * square_plus(x, x)


def make_closure():
    offset = 1.5

    def shifted(x):
        return (x + offset) ** 2

    return shifted


def no_real_points(x):
    return math.sqrt(-1.0 - x * x)


def product_sin(x, y):
    return x * y + math.sin(x)


def with_loop(x):
    total = 0.0
    for _ in range(3):
        total += x
    return total


def with_subscript(x):
    return (x, 2.0 * x)[1 if x > 0 else 0]


def with_unknown_call(x):
    return math.gamma(x)


def with_keywords(x):
    return math.log(x, base=2)


def used_before_set(x):
    y = y + x  # noqa: F821 -- deliberately broken
    return y


def line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


# --- symbolic execution ------------------------------------------------------------------------


def test_tuple_unpacking_reassignment_docstring_and_pass() -> None:
    symbolic = symbolic_function(swap_and_reassign)
    assert symbolic.params == ["x", "y"]
    assert symbolic.symbols == [X, Y]
    assert sp.expand(symbolic.expr - ((X + Y) ** 2 - X * Y)) == 0
    assert sp.expand(symbolic.partial("x") - (2 * (X + Y) - Y)) == 0


def test_augmented_assignment_all_operators() -> None:
    assert_values_match_python(augmented, "xy")
    # Away from the jumps of // and %, they contribute 0 and 1 to the x and y partials.
    symbolic = symbolic_function(augmented)
    point = {"x": 0.3, "y": 0.45}
    z = (0.3 + 0.45 - 0.5) * 0.45 / 3
    expected_x = 2 * z * 0.45 / 3
    expected_y = 2 * z * ((0.3 + 2 * 0.45 - 0.5) / 3) + 1
    got = reference_gradient(symbolic, point, ["x", "y"])
    assert got["x"] == pytest.approx(expected_x, rel=1e-14)
    assert got["y"] == pytest.approx(expected_y, rel=1e-14)


def test_names_resolve_through_the_namespace_by_identity() -> None:
    symbolic = symbolic_function(namespace_names)
    expected = sp.sin(X) + sp.cos(X) * sp.Float(SCALE, 30) + sp.pi + 2 * X
    assert sp.simplify(symbolic.expr - expected) == 0
    assert symbolic.expr.has(sp.pi)  # math.pi is pi itself, not a float approximation


def test_closure_variables_are_visible() -> None:
    shifted = make_closure()
    assert sp.expand(symbolic_function(shifted).expr - (X + sp.Float(1.5)) ** 2) == 0


def test_conditional_expression_becomes_piecewise() -> None:
    symbolic = symbolic_function(conditional)
    assert symbolic.expr.has(sp.Piecewise)
    assert_values_match_python(conditional, "xy")
    grad = reference_gradient(conditional, {"x": -1.0, "y": 0.5}, ["x", "y"])
    assert grad == {"x": 0.5, "y": -1.0}  # x * y branch
    grad = reference_gradient(conditional, {"x": 0.5, "y": 0.25}, ["x", "y"])
    assert grad == {"x": 1.0, "y": -1.0}  # x - y branch
    grad = reference_gradient(conditional, {"x": 1.5, "y": 0.25}, ["x", "y"])
    assert grad == {"x": 0.0, "y": 0.0}  # constant branch


def test_if_statements_with_early_returns() -> None:
    assert_values_match_python(early_return, "xy")
    assert reference_gradient(early_return, {"x": 0.5, "y": 1.0}, ["x", "y"]) == {
        "x": 0.0,
        "y": 2.0,
    }
    assert reference_gradient(early_return, {"x": 0.5, "y": 0.25}, ["x", "y"]) == {
        "x": 0.25,
        "y": 1.5,
    }
    assert reference_gradient(early_return, {"x": -0.5, "y": 0.25}, ["x", "y"]) == {
        "x": -0.25,
        "y": 0.5,
    }


def test_math_and_builtin_calls_match_python() -> None:
    assert_values_match_python(many_functions, "xy")
    assert_values_match_python(positive_functions, "xy", low=0.1, high=2.0)


def test_user_helper_functions_are_inlined_with_defaults() -> None:
    symbolic = symbolic_function(calls_helper)
    expected = (X**2 + 3) * (X**2 + X)
    assert sp.expand(symbolic.expr - expected) == 0


def test_lambda() -> None:
    def make():
        return lambda a, b: a / b - b

    symbolic = symbolic_function(make())
    assert symbolic.params == ["a", "b"]
    assert (
        sp.simplify(symbolic.partial("b") - (-symbolic.symbols[0] / symbolic.symbols[1] ** 2 - 1))
        == 0
    )


def test_static_source_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text("import math\nRATE = 0.5\n\ndef f(x):\n    return math.exp(RATE * x)\n")
    source = load_from_file(str(path), "f")
    symbolic = symbolic_function(source)
    assert sp.simplify(symbolic.expr - sp.exp(sp.Float(0.5, 30) * X)) == 0
    # No live function: sampling evaluates the symbolic expression instead.
    points = sample_points(source, 3)
    assert len(points) == 3
    for point in points:
        assert reference_gradient(source, point, ["x"])["x"] == pytest.approx(
            0.5 * math.exp(0.5 * point["x"]), rel=1e-14
        )


@pytest.mark.parametrize(
    ("fn", "text", "message"),
    [
        (with_loop, "for _ in", "for loops"),
        (with_subscript, "(x, 2.0 * x)[", "indexes only tuples, at a literal index"),
        (with_unknown_call, "math.gamma", "does not know"),
        (with_keywords, "base=2", "positional arguments only"),
        (used_before_set, "y = y + x", "used before it is set"),
    ],
    ids=["loop", "subscript", "unknown-call", "keywords", "unbound-local"],
)
def test_unsupported_constructs_raise_located_errors(fn, text: str, message: str) -> None:
    with pytest.raises(UnsupportedSyntaxError, match=message) as caught:
        symbolic_function(fn)
    location = caught.value.location
    assert location is not None
    assert location.filename == __file__
    assert location.line == line_of(fn, text)


# --- counterparts and domains ------------------------------------------------------------------


def test_counterpart_lookup() -> None:
    assert sympy_counterpart(math.log, 2)(X, sp.Integer(3)) == sp.log(X) / sp.log(3)
    modulo = sympy_counterpart(operator.mod, 2)(X, Y)
    (floor,) = modulo.atoms(sp.floor)  # a floor whose derivative is 0, see below
    assert floor.args == (X / Y,)
    assert modulo - (X - Y * floor) == 0
    assert sympy_counterpart(max, 3)(X, Y, Z) == sp.Max(X, Y, Z)
    assert sympy_counterpart(math.gamma, 1) is None
    assert sympy_counterpart(math.sin, 2) is None
    assert sympy_counterpart([], 1) is None  # unhashable: certainly not a primal
    assert SYMPY_COUNTERPARTS[(math.exp, 1)] is sp.exp


def test_rule_domain() -> None:
    assert rule_domain(math.log, 1) == [(0.1, 5.0)]
    assert rule_domain(math.sin, 1) == [(-2.0, 2.0)]
    assert rule_domain(math.gamma, 1) is None


def test_floor_has_zero_derivative_away_from_jumps() -> None:
    def modulo(x, y):
        return x % y + x // y

    symbolic = symbolic_function(modulo)
    (floor,) = symbolic.expr.atoms(sp.floor)
    assert floor.args == (X / Y,)
    assert symbolic.partial("x") == 1
    assert symbolic.partial("y") == -floor
    assert reference_gradient(modulo, {"x": 7.5, "y": 2.0}, ["y"]) == {"y": -3.0}


def test_abs_min_max_partials_away_from_kinks() -> None:
    def kinks(x, y):
        return abs(x) + min(x, y) + max(x, y)

    assert reference_gradient(kinks, {"x": -0.5, "y": 1.0}, ["x", "y"]) == {"x": 0.0, "y": 1.0}
    assert reference_gradient(kinks, {"x": 0.5, "y": -1.0}, ["x", "y"]) == {"x": 2.0, "y": 1.0}


# --- reference values against independent references ------------------------------------------


def test_reference_gradient_matches_hand_derivation() -> None:
    for point in random_points("xy", 5, seed=2):
        x, y = point["x"], point["y"]
        got = reference_gradient(product_sin, point, ["x", "y"])
        assert got["x"] == pytest.approx(y + math.cos(x), rel=1e-15, abs=1e-16)
        assert got["y"] == x


def mp_many(x, y):
    """many_functions written with mpmath, for mpmath.diff."""
    return (
        mpmath.sin(x) * mpmath.cos(y)
        + mpmath.tan(x / 3)
        + mpmath.atan(x)
        + mpmath.atan2(y, x)
        + mpmath.sinh(x) * mpmath.cosh(y)
        + mpmath.tanh(x)
        + mpmath.asinh(y)
        + mpmath.exp(x)
        + mpmath.expm1(y)
        + mpmath.erf(x)
        + mpmath.erfc(y)
        + mpmath.hypot(x, y)
        + abs(y)
        + abs(x)
        + min(x, y)
        + max(x, y, 0.5)
        + (x * x + 1) ** y
        + (y * y + 1) ** 0.5
        + x
    )


def mp_positive(x, y):
    """positive_functions written with mpmath."""
    return (
        mpmath.log(x)
        + mpmath.log(y, 3)
        + mpmath.log1p(x)
        + mpmath.log(y, 2)
        + mpmath.log10(x)
        + mpmath.sqrt(x * y)
        + mpmath.asin(x / 4)
        + mpmath.acos(y / 4)
        + mpmath.atanh(x / 4)
        + mpmath.acosh(y + 1)
    )


@pytest.mark.parametrize(
    ("fn", "mp_fn", "low", "high"),
    [(many_functions, mp_many, -2.0, 2.0), (positive_functions, mp_positive, 0.1, 2.0)],
    ids=["signed", "positive"],
)
def test_reference_gradient_matches_mpmath(fn, mp_fn, low: float, high: float) -> None:
    symbolic = symbolic_function(fn)
    with mpmath.workdps(40):
        for point in random_points("xy", 4, seed=3, low=low, high=high):
            got = symbolic.gradient(point, ["x", "y"])
            x, y = mpmath.mpf(point["x"]), mpmath.mpf(point["y"])
            expected_x = float(mpmath.diff(mp_fn, (x, y), (1, 0)))
            expected_y = float(mpmath.diff(mp_fn, (x, y), (0, 1)))
            assert got["x"] == pytest.approx(expected_x, rel=1e-13), point
            assert got["y"] == pytest.approx(expected_y, rel=1e-13), point


def test_reference_gradient_keeps_precision_through_cancellation() -> None:
    def shifted_exp(x):
        return math.expm1(x) / x

    x = 1e-9
    with mpmath.workdps(50):
        expected = float(mpmath.diff(lambda t: mpmath.expm1(t) / t, mpmath.mpf(x)))
    got = reference_gradient(shifted_exp, {"x": x}, ["x"])["x"]
    assert got == pytest.approx(expected, rel=1e-12)


def test_tiny_partials_are_not_rounded_to_zero() -> None:
    def tiny(x):
        return math.exp(-90 * x) * 1e30 - x

    expected = -90 * math.exp(-90.0) * 1e30 - 1  # -1 - 7.4e-8
    got = reference_gradient(tiny, {"x": 1.0}, ["x"])["x"]
    assert got == pytest.approx(expected, rel=1e-15)

    def tinier(x):
        return math.exp(-90 * x)

    assert reference_gradient(tinier, {"x": 1.0}, ["x"])["x"] == pytest.approx(
        -90 * math.exp(-90.0), rel=1e-14
    )


# --- sampling -----------------------------------------------------------------------------------


def test_sample_points_are_seeded_and_inside_the_domain() -> None:
    def logs(x, y):
        return math.log(x) * math.sqrt(y) + math.asin(y - 1)

    points = sample_points(logs, 6, seed=4)
    assert points == sample_points(logs, 6, seed=4)
    assert points != sample_points(logs, 6, seed=5)
    assert len(points) == 6
    for point in points:
        assert point["x"] > 0 and 0 <= point["y"] <= 2
        assert math.isfinite(logs(**point))


def test_sample_points_respects_wrt() -> None:
    def sqrt_of_y(x, y):
        return x * math.sqrt(y)  # the y partial is infinite at y == 0, never sampled

    points = sample_points(sqrt_of_y, 5, wrt=["x"])
    assert len(points) == 5
    assert all(p["y"] >= 0 for p in points)


def test_sample_points_gives_up_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="found only 0 of 2 points"):
        sample_points(no_real_points, 2)


# --- the grad checker, with a stand-in for the compiler ---------------------------------------


def hand_gradient(fn, wrt=None):
    """A stand-in for adcompile.grad for product_sin: the partials written by hand."""
    assert fn is product_sin
    partials = {"x": lambda x, y: y + math.cos(x), "y": lambda x, y: x}
    names = ["x", "y"] if wrt is None else wrt
    if isinstance(names, str | int):
        name = ["x", "y"][names] if isinstance(names, int) else names
        return lambda x, y: partials[name](x, y)
    names = [["x", "y"][n] if isinstance(n, int) else n for n in names]
    return lambda x, y: tuple(partials[n](x, y) for n in names)


def wrong_gradient(fn, wrt=None):
    return lambda x, y: (y + math.sin(x), x)


@pytest.fixture
def fake_grad(monkeypatch: pytest.MonkeyPatch):
    def install(stand_in) -> None:
        monkeypatch.setattr(adcompile, "grad", stand_in, raising=False)

    return install


@pytest.mark.parametrize(
    ("wrt", "params"),
    [(None, ["x", "y"]), (0, ["x"]), ("y", ["y"]), (("y", "x"), ["y", "x"]), ([1], ["y"])],
    ids=repr,
)
def test_checker_accepts_a_correct_gradient(fake_grad, wrt, params: list[str]) -> None:
    fake_grad(hand_gradient)
    report = assert_grad_matches_sympy(product_sin, wrt=wrt)
    assert report.ok
    assert [row.param for row in report.rows] == params * DEFAULT_POINT_COUNT
    assert "MISMATCH" not in report.table()


def test_checker_reports_a_wrong_gradient_in_a_table(fake_grad) -> None:
    fake_grad(wrong_gradient)
    points = [{"x": 0.25, "y": 1.0}, (-1.0, 2.0)]
    report = compare_with_sympy(product_sin, points=points)
    assert not report.ok
    assert [(row.param, row.ok) for row in report.rows] == [
        ("x", False),
        ("y", True),
        ("x", False),
        ("y", True),
    ]
    with pytest.raises(AssertionError) as caught:
        assert_grad_matches_sympy(product_sin, points=points)
    lines = str(caught.value).splitlines()
    assert "2 of 4 partials differ" in lines[0]
    header = [cell.strip() for cell in lines[1].split("|")]
    assert header[:5] == ["parameter", "point", "expected", "got", "rel.err"]
    # Aligned: every separator sits at the same column on every line of the table.
    header_line, rule_line, *row_lines = lines[1:]
    pipes = [i for i, c in enumerate(header_line) if c == "|"]
    assert [i for i, c in enumerate(rule_line) if c == "+"] == pipes
    assert all([i for i, c in enumerate(line) if c == "|"] == pipes for line in row_lines)
    mismatches = [line for line in lines if "MISMATCH" in line]
    assert [line.split("|")[1].strip() for line in mismatches] == [
        "x=0.25, y=1.0",
        "x=-1.0, y=2.0",
    ]
    cells = [cell.strip() for cell in mismatches[0].split("|")]
    assert float(cells[2]) == pytest.approx(1.0 + math.cos(0.25), rel=1e-15)  # expected
    assert float(cells[3]) == 1.0 + math.sin(0.25)  # got, shown in full


def test_checker_rejects_a_wrongly_shaped_result(fake_grad) -> None:
    fake_grad(lambda fn, wrt=None: lambda x, y: 1.0)
    with pytest.raises(AssertionError, match="expected a tuple of 2"):
        compare_with_sympy(product_sin, points=[(0.5, 0.5)])


def rule_arities_only(x, y):
    # Straight-line code calling only what has derivative rules, at the rules' arities.
    t = math.sin(x) * math.exp(y) + math.atan2(y, x) + max(x, y) - abs(x) ** 1.5
    return t / (1 + x * x) + (math.log(y * y + 1) if x < y else math.hypot(x, y))


def test_checker_of_a_compiled_gradient_of_static_source(tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text("import math\n\ndef f(x, y):\n    return math.log(x) * y\n")
    source = load_from_file(str(path), "f")
    right = compare_source_with_sympy(source, lambda x, y: (y / x, math.log(x)))
    assert right.ok and len(right.rows) == 2 * DEFAULT_POINT_COUNT
    assert all(row.point["x"] > 0 for row in right.rows)  # sampled where log is defined
    wrong = compare_source_with_sympy(source, lambda x, y: 1 / x, points=[(2.0, 3.0)], wrt="x")
    assert not wrong.ok
    (row,) = wrong.rows
    assert (row.param, row.expected, row.got) == ("x", 1.5, 0.5)
    assert row.rel_err == pytest.approx(2 / 3)


def test_checker_with_the_real_compiler() -> None:
    assert_grad_matches_sympy(rule_arities_only)
    assert_grad_matches_sympy(rule_arities_only, wrt="y")


def scaled_where_nonzero(x, y):
    return x * y if x else y


def scaled_in_a_branch(x, y):
    if x:
        return x * y
    return y


def scaled_where_both(x, y):
    return x * y if x and y > 0 else y


@pytest.mark.parametrize("fn", [scaled_where_nonzero, scaled_in_a_branch, scaled_where_both])
def test_a_number_as_a_test_is_compared_with_zero(fn) -> None:
    """A SymPy Symbol is a Boolean, so ``x`` as a test went into Piecewise as it was:
    SymPy raised "Second argument must be a Boolean, not Float" at every point."""
    assert str(symbolic_function(fn).expr).count("Ne(x, 0)") == 1
    points = [(1.5, 2.0), (-0.5, 3.0), (0.0, 2.0), (0, 2), (2.0, -1.0)]
    report = assert_grad_matches_sympy(fn, points=points)
    assert len(report.rows) == 2 * len(points)
    assert_grad_matches_sympy(fn)  # sampled points too


def power(x, y):
    return x**y


@pytest.mark.parametrize("x", [0.0, 0])
def test_partials_sympy_cannot_evaluate_come_from_one_sided_derivatives(x) -> None:
    """SymPy writes d/dx x**y as y*x**y/x and d/dy as x**y*log(x): 0/0 and 0*log(0) at
    x = 0, where both partials are 0. The check raised ZeroDivisionError (a float 0) or
    reported false mismatches against nan and -inf."""
    report = assert_grad_matches_sympy(power, points=[(x, 2.0)])
    assert [row.expected for row in report.rows] == pytest.approx([0.0, 0.0], abs=1e-30)
    assert len(report.notes) == 2 and "one-sided derivatives agree" in report.table()
    # A wrong gradient at that point is still caught.
    wrong = compare_source_with_sympy(power, lambda x, y: (1.0, 0.0), points=[(x, 2.0)])
    assert [row.ok for row in wrong.rows] == [False, True]


def root_of_abs(x):
    return math.sqrt(abs(x))


def test_where_no_derivative_exists_sympy_s_value_stands() -> None:
    """sqrt(|x|) at 0: the one-sided derivatives are -inf and inf, so the symbolic value
    (not finite) is kept and no note is made."""
    report = compare_source_with_sympy(root_of_abs, lambda x: 0.0, points=[(0.0,)])
    (row,) = report.rows
    assert not report.notes and not math.isfinite(row.expected) and not row.ok


def test_the_cli_check_takes_removable_singularities_from_mpmath(tmp_path: Path) -> None:
    path = tmp_path / "power.py"
    path.write_text("def f(x, y):\n    return x ** y\n", encoding="utf-8")
    for at in ("x=0.0,y=2.0", "x=0,y=2"):
        result = run_cli("check", f"{path}:f", "--at", at)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "OK: matches SymPy" in result.stdout
        assert result.stdout.count("one-sided derivatives agree") == 2


# --- import hygiene -----------------------------------------------------------------------------


def test_importing_adcompile_does_not_import_sympy() -> None:
    code = (
        "import sys, adcompile, adcompile.symbolic, adcompile.testing; "
        "assert 'sympy' not in sys.modules, 'sympy was imported'"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)


def _sequential_ifs(count: int, early_return: bool = False) -> str:
    lines = ["def f(x, y):", "    s = x * y"]
    for k in range(count):
        lines += [f"    if x > {k / 10 - 0.7}:", f"        s = s + {k + 1}.0 * x"]
    if early_return:
        lines += ["        if y > 5.0:", "            return s"]
    return "\n".join([*lines, "    return s * y", ""])


def test_sequential_ifs_give_a_reference_linear_in_their_number(tmp_path: Path) -> None:
    """Each `if` ran the rest of the function once per path: 2**n paths for n `if`s (14 took
    51 s in `check`). Paths that rejoin now merge into Piecewise values, so the reference
    of 16 `if`s is about as big as 16 Piecewise terms. Reference: the slope in closed form."""
    path = tmp_path / "ifs.py"
    for count in (4, 16):
        path.write_text(_sequential_ifs(count))
        symbolic = symbolic_function(load_from_file(str(path), "f"))
        assert sp.count_ops(symbolic.expr) < 40 * count
        x, y = 0.35, 1.2  # x > k / 10 - 0.7 for k <= 10
        taken = sum(k + 1 for k in range(count) if x > k / 10 - 0.7)
        point = dict(zip(symbolic.symbols, (x, y), strict=True))
        slope_x = symbolic.expr.diff(symbolic.symbols[0]).subs(point)
        assert float(slope_x) == pytest.approx((y + taken) * y, rel=1e-14)
    path.write_text(_sequential_ifs(3, early_return=True))  # a return: continuations
    symbolic = symbolic_function(load_from_file(str(path), "f"))
    point = dict(zip(symbolic.symbols, (0.35, 6.0), strict=True))
    assert float(symbolic.expr.subs(point)) == pytest.approx(0.35 * 6 + 6 * 0.35, rel=1e-14)


def test_a_value_computed_on_one_path_stays_inside_its_piecewise() -> None:
    """Merging the paths of `if x < -1: y = 2x + 1 / elif x < 1: y = x**3 / else: y = log(x)
    + 1` once wrote y as `log(x) + 1 + (...)`: log(x) was evaluated on every path, nan for
    x < 0, so sampled checks silently skipped two of the three branches. Closed forms of
    d/dx (y x) on each path are the reference."""
    from tests.corpus.control_flow import if_elif_else

    symbolic = symbolic_function(if_elif_else)
    for x, expected in [(-2.0, 4 * -2.0 + 1), (-0.5, 4 * -(0.5**3)), (2.0, math.log(2.0) + 2.0)]:
        assert symbolic.gradient({"x": x}, ["x"])["x"] == pytest.approx(expected, rel=1e-14)


def test_an_overwritten_large_value_is_not_added_and_subtracted_again(tmp_path: Path) -> None:
    """The merge wrote `y = 3x` on one path as `y + (3x - y if x > 1 else 0)`: with y about
    1e260 the reference's slope at x = 2 came out 1e99, and check said MISMATCH to a right 3.
    Only terms added to the old value are written on their own now."""
    path = tmp_path / "large.py"
    path.write_text(
        "import math\n\n\ndef f(x):\n    y = math.exp(300.0 * x) + 1.0\n    if x > 1:\n"
        "        y = x * 3.0\n    return y\n"
    )
    symbolic = symbolic_function(load_from_file(str(path), "f"))
    assert symbolic.gradient({"x": 2.0}, ["x"]) == {"x": 3.0}


def test_the_sympy_check_says_where_a_point_leaves_the_real_domain(tmp_path: Path) -> None:
    # At sqrt's 0 the gradient's ZeroDivisionError came out bare; at a point where x ** y is
    # complex, float() of the partial raised a TypeError from the checker's internals.
    module = module_from_source(
        tmp_path,
        "import math\n\n\ndef f(x):\n    return math.sqrt(x)\n\n\n"
        "def g(x, y):\n    return x ** y\n",
    )
    with pytest.raises(ZeroDivisionError) as raised:
        assert_grad_matches_sympy(module.f, points=[{"x": 0.0}])
    assert "(the gradient of f at x=0.0, checked against SymPy)" in raised.value.__notes__
    with pytest.raises(ValueError, match=r"partials of g at x=-2\.0, y=0\.5 are not real"):
        assert_grad_matches_sympy(module.g, points=[{"x": -2.0, "y": 0.5}])
