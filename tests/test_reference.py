"""Tests of the mpmath reference itself, against derivatives known in closed form.

The reference runs the user's own code on mpmath numbers, so these tests need no compiler: they
check that loops, branches, helpers, closures and recursion are followed, that every ``math``
function is mapped to an mpmath equivalent with the right derivative, that nothing is rounded
to a float on the way, and that the comparison helper reports mismatches as a table.
"""

from __future__ import annotations

import ast
import math
import math as m
import subprocess
import sys
import textwrap
from collections.abc import Callable
from math import exp, pi, sin
from pathlib import Path
from typing import Any

import mpmath
import pytest

import adcompile
import tests.corpus.control_flow_helpers as cfh
from adcompile import reference, report
from adcompile.reference import (
    MP_MATH,
    assert_grad_matches_mp,
    compare_with_mp,
    mp_function,
    one_sided_partials,
    reference_gradient_mp,
    reference_hessian_mp,
)
from adcompile.report import CheckReport
from tests.corpus.control_flow import even_power, odd_power, power_recursive
from tests.corpus.control_flow_helpers import gaussian, soft_clip

RTOL = 1e-13

# --- functions under test (module level, so the shim has globals to rewrite) --------------------


def horner_loop(x: float, n: int) -> float:
    """sum_{i<=n} x^i / (i + 1) by Horner's rule."""
    s = 0.0
    for i in range(n, -1, -1):
        s = s * x + 1.0 / (i + 1)
    return s


def horner_derivative(x: float, n: int) -> float:
    """The derivative of horner_loop, term by term."""
    return sum(i * x ** (i - 1) / (i + 1) for i in range(1, n + 1))


def newton_sqrt(a: float, iterations: int) -> float:
    """Newton's iteration for sqrt(a)."""
    x = a
    for _ in range(iterations):
        x = 0.5 * (x + a / x)
    return x


def newton_cbrt_while(a: float) -> float:
    """Newton's iteration for the cube root, until converged (with a cap)."""
    x = a
    k = 0
    while abs(x * x * x - a) > 1e-14 * a and k < 100:
        x = x - (x * x * x - a) / (3.0 * x * x)
        k += 1
    return x


def _sin_squared(t: float) -> float:
    """A module-level helper using `from math import sin`."""
    return sin(t) * sin(t)


def calls_helper_twice(x: float, y: float) -> float:
    """A helper called twice: sin(x)^2 + sin(xy)^2."""
    return _sin_squared(x) + _sin_squared(x * y)


def calls_helper_in_other_module(x: float) -> float:
    """gaussian (another module, `from math import exp`) and soft_clip (branches)."""
    return gaussian(x, 0.5, 2.0) + soft_clip(x, 1.0)


def calls_through_module_attribute(x: float) -> float:
    """A helper reached as an attribute of the user's module: 2 sin(x) + 0.25."""
    return cfh.scaled_sin(x, scale=2.0)


def piecewise(x: float) -> float:
    """x^2 below -1, sin(x) in [-1, 1), e^x from 1 on."""
    if x < -1.0:
        return x * x
    if x < 1.0:
        return math.sin(x)
    return exp(x)


def with_alias_and_constants(x: float) -> float:
    """`import math as m`, `from math import pi`, math.tau and math.e."""
    return m.cos(x) * pi + math.tau * x + math.e


def with_float_builtin(x: float) -> float:
    """float() must not round an mpmath number to 53 bits."""
    return float(x) * float(3)


def loop_count_from_floor(x: float) -> float:
    """A loop whose count is floor(x): d/dx = floor(x)."""
    s = 0.0
    for _ in range(math.floor(x)):
        s = s + x
    return s


def lambda_and_nested_def(x: float, y: float) -> float:
    """A lambda and a nested def, both called: x^2 + (xy)^2 + y."""
    sq = lambda t: t * t  # noqa: E731 -- the point of the test

    def plus_y(t: float) -> float:
        return t + y

    return plus_y(sq(x) + sq(x * y))


def make_composed(outer: Callable[[float], float], k: float) -> Callable[[float], float]:
    """A closure whose cells hold a function (maybe a math function) and a constant."""

    def composed(x: float) -> float:
        return outer(k * x)

    return composed


def make_recursive() -> Callable[[float, int], float]:
    """A nested recursive function: its closure cell holds the function itself."""

    def rec(x: float, n: int) -> float:
        return x if n == 0 else x * rec(x, n - 1)

    return rec


PLAIN_FLOAT = float  # a type, not a function: the shim leaves it alone


def checks_argument_types(x: float, n: int, w: tuple[float, ...], flag: bool, c: float) -> float:
    """Fails unless non-differentiated ints, tuples and bools arrive unconverted, and a
    float as an mpmath number (a fixed float would round where the function picks it)."""
    assert type(n) is int and type(w) is tuple and flag is True
    assert type(c) is not PLAIN_FLOAT and isinstance(c, float)  # the shim's isinstance
    return x * sum(w) * n * c


def branches_on_isinstance(x: float, n: int) -> float:
    """isinstance(.., float) must see an mpmath number as a float, and an int as not."""
    if isinstance(x, float) and not isinstance(n, float) and issubclass(type(x), float):
        return 2.0 * x
    return 3.0 * x


def with_defaults(x: float, scale: float = 3.0) -> float:
    """A default filled in when the point leaves it out."""
    return scale * x * x


def call_math(name: str, *args: float) -> Any:
    """math.<name>(*args), looked up by name on the (shimmed) math module."""
    return getattr(math, name)(*args)


def unary_math(x: float, name: str) -> Any:
    """One math function of x, chosen by a non-differentiated string argument."""
    return call_math(name, x)


def binary_math(x: float, y: float, name: str) -> Any:
    """One two-argument math function."""
    return call_math(name, x, y)


def uses_math_without_equivalent(x: float) -> float:
    """math.nextafter has no mpmath equivalent: the shim must refuse mpmath numbers."""
    return math.nextafter(x, 2.0)


def uses_factorial_of_int(x: float, n: int) -> float:
    """math.factorial on a plain int is fine: x^n / n!."""
    return x**n / math.factorial(n)


def grad_pair(x: float, y: float) -> tuple[float, float]:
    """A correct gradient of calls_helper_twice, written by hand."""
    dx = math.sin(2.0 * x) + y * math.sin(2.0 * x * y)
    dy = x * math.sin(2.0 * x * y)
    return dx, dy


# --- closed forms --------------------------------------------------------------------------------


def close(got: float, expected: float, rtol: float = RTOL) -> bool:
    """Relative closeness (absolute near zero)."""
    return math.isclose(got, expected, rel_tol=rtol, abs_tol=rtol)


@pytest.mark.parametrize(("x", "n"), [(0.7, 5), (-1.3, 8), (1.9, 3), (0.25, 0), (-0.5, 12)])
def test_horner_loop_matches_polynomial_derivative(x: float, n: int) -> None:
    got = reference_gradient_mp(horner_loop, {"x": x, "n": n}, ["x"])
    assert close(got["x"], horner_derivative(x, n))


@pytest.mark.parametrize("a", [0.3, 2.0, 9.5, 140.0])
def test_newton_sqrt_matches_closed_form(a: float) -> None:
    got = reference_gradient_mp(newton_sqrt, {"a": a, "iterations": 40}, ["a"])
    assert close(got["a"], 0.5 / math.sqrt(a))


@pytest.mark.parametrize("a", [0.6, 2.0, 27.0])
def test_newton_cbrt_until_converged_matches_closed_form(a: float) -> None:
    got = reference_gradient_mp(newton_cbrt_while, {"a": a}, ["a"])
    assert close(got["a"], 1.0 / (3.0 * a ** (2.0 / 3.0)), rtol=1e-10)


def test_few_newton_steps_differentiate_the_program_not_the_limit() -> None:
    # One step from x0 = a: x1 = (a + 1) / 2, so dx1/da = 1/2 whatever sqrt would say.
    got = reference_gradient_mp(newton_sqrt, {"a": 5.0, "iterations": 1}, ["a"])
    assert got["a"] == 0.5


@pytest.mark.parametrize(("x", "y"), [(0.5, 0.8), (-1.2, 0.3), (1.7, -2.0)])
def test_helper_called_twice(x: float, y: float) -> None:
    got = reference_gradient_mp(calls_helper_twice, {"x": x, "y": y}, ["x", "y"])
    dx, dy = grad_pair(x, y)
    assert close(got["x"], dx) and close(got["y"], dy)


@pytest.mark.parametrize("x", [-1.7, -0.3, 0.4, 2.2])
def test_helpers_in_another_module_with_branches(x: float) -> None:
    z = (x - 0.5) / 2.0
    d_gaussian = -z / 2.0 * math.exp(-0.5 * z * z)
    d_clip = 1.0 if abs(x) < 1.0 else 1.0 - math.tanh(abs(x) - 1.0) ** 2
    got = reference_gradient_mp(calls_helper_in_other_module, {"x": x}, ["x"])
    assert close(got["x"], d_gaussian + d_clip)


def test_helper_through_module_attribute() -> None:
    got = reference_gradient_mp(calls_through_module_attribute, {"x": 0.9}, ["x"])
    assert close(got["x"], 2.0 * math.cos(0.9))


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (-2.5, -5.0),
        (-1.2, -2.4),
        (-0.9, math.cos(-0.9)),
        (0.6, math.cos(0.6)),
        (1.4, math.exp(1.4)),
    ],
)
def test_branches_on_each_side(x: float, expected: float) -> None:
    assert close(reference_gradient_mp(piecewise, {"x": x}, ["x"])["x"], expected)


@pytest.mark.parametrize(("fn", "n"), [(power_recursive, 5), (even_power, 6), (odd_power, 3)])
def test_recursion_direct_and_mutual(fn: Callable[..., float], n: int) -> None:
    got = reference_gradient_mp(fn, {"x": 1.3, "n": n}, ["x"])
    assert close(got["x"], n * 1.3 ** (n - 1))


def test_nested_recursive_closure() -> None:
    got = reference_gradient_mp(make_recursive(), {"x": 0.8, "n": 4}, ["x"])
    assert close(got["x"], 5 * 0.8**4)


def test_closure_cells_holding_math_function_and_constant() -> None:
    composed = make_composed(math.sin, 2.5)
    got = reference_gradient_mp(composed, {"x": 0.3}, ["x"])
    assert close(got["x"], 2.5 * math.cos(0.75))
    with mpmath.workdps(50):
        value = mp_function(composed)(mpmath.mpf("0.3"))
        assert mpmath.almosteq(value, mpmath.sin(mpmath.mpf("0.75")), rel_eps=mpmath.mpf(10) ** -48)


def test_closure_cells_holding_user_function() -> None:
    composed = make_composed(cfh.chain_inner, 0.5)  # log1p(t^2) at t = x / 2
    got = reference_gradient_mp(composed, {"x": 1.2}, ["x"])
    t = 0.6
    assert close(got["x"], 0.5 * 2.0 * t / (1.0 + t * t))


def test_lambda_and_nested_def() -> None:
    got = reference_gradient_mp(lambda_and_nested_def, {"x": 0.7, "y": -1.1}, ["x", "y"])
    assert close(got["x"], 2.0 * 0.7 + 2.0 * 0.7 * 1.21)
    assert close(got["y"], 2.0 * 0.49 * -1.1 + 1.0)


def test_math_alias_and_constants_are_high_precision() -> None:
    got = reference_gradient_mp(with_alias_and_constants, {"x": 0.4}, ["x"])
    assert close(got["x"], -math.sin(0.4) * math.pi + math.tau)
    with mpmath.workdps(60):
        value = mp_function(with_alias_and_constants)(mpmath.mpf(0))
        expected = mpmath.pi + mpmath.e
        assert mpmath.almosteq(value, expected, rel_eps=mpmath.mpf(10) ** -58)


def test_float_builtin_keeps_precision() -> None:
    with mpmath.workdps(50):
        third = mpmath.mpf(1) / 3
        assert mp_function(with_float_builtin)(third) == 3 * third
    assert with_float_builtin(2.0) == 6.0
    assert reference_gradient_mp(with_float_builtin, {"x": 0.1}, ["x"]) == {"x": 3.0}


@pytest.mark.parametrize("x", [0.5, 2.3, 5.9])
def test_floor_gives_an_int_loop_count(x: float) -> None:
    got = reference_gradient_mp(loop_count_from_floor, {"x": x}, ["x"])
    assert got["x"] == math.floor(x)


def test_isinstance_float_sees_mpmath_numbers_as_floats() -> None:
    assert reference_gradient_mp(branches_on_isinstance, {"x": 0.5, "n": 2}, ["x"]) == {"x": 2.0}


def test_non_wrt_arguments_pass_through_unconverted_but_floats() -> None:
    point = {"x": 0.5, "n": 3, "w": (1.0, 2.0), "flag": True, "c": 0.25}
    got = reference_gradient_mp(checks_argument_types, point, ["x"])
    assert close(got["x"], 3.0 * 3 * 0.25)


def test_int_valued_wrt_parameter() -> None:
    got = reference_gradient_mp(horner_loop, {"x": 2, "n": 3}, ["x"])
    assert close(got["x"], horner_derivative(2.0, 3))


def test_defaults_are_filled_in() -> None:
    assert close(reference_gradient_mp(with_defaults, {"x": 2.0}, ["x"])["x"], 12.0)
    assert close(reference_gradient_mp(with_defaults, {"x": 2.0}, ["scale"])["scale"], 4.0)


def test_exp_derivative_to_full_double_precision() -> None:
    got = reference_gradient_mp(lambda x: math.exp(x), {"x": 1.0}, ["x"])
    assert got["x"] == math.e


# --- every math function against its known derivative -------------------------------------------

UNARY_DERIVATIVES: dict[str, tuple[float, Callable[[float], float]]] = {
    "sin": (0.7, math.cos),
    "cos": (0.7, lambda x: -math.sin(x)),
    "tan": (0.7, lambda x: 1.0 / math.cos(x) ** 2),
    "asin": (0.3, lambda x: 1.0 / math.sqrt(1.0 - x * x)),
    "acos": (0.3, lambda x: -1.0 / math.sqrt(1.0 - x * x)),
    "atan": (0.7, lambda x: 1.0 / (1.0 + x * x)),
    "sinh": (0.7, math.cosh),
    "cosh": (0.7, math.sinh),
    "tanh": (0.7, lambda x: 1.0 - math.tanh(x) ** 2),
    "asinh": (0.7, lambda x: 1.0 / math.sqrt(x * x + 1.0)),
    "acosh": (1.7, lambda x: 1.0 / math.sqrt(x * x - 1.0)),
    "atanh": (0.4, lambda x: 1.0 / (1.0 - x * x)),
    "exp": (0.7, math.exp),
    "exp2": (0.7, lambda x: 2.0**x * math.log(2.0)),
    "expm1": (0.7, math.exp),
    "log": (0.7, lambda x: 1.0 / x),
    "log1p": (0.7, lambda x: 1.0 / (1.0 + x)),
    "log2": (0.7, lambda x: 1.0 / (x * math.log(2.0))),
    "log10": (0.7, lambda x: 1.0 / (x * math.log(10.0))),
    "sqrt": (0.7, lambda x: 0.5 / math.sqrt(x)),
    "cbrt": (-0.7, lambda x: 1.0 / (3.0 * abs(x) ** (2.0 / 3.0))),
    "fabs": (-0.7, lambda x: -1.0),
    "erf": (0.7, lambda x: 2.0 / math.sqrt(math.pi) * math.exp(-x * x)),
    "erfc": (0.7, lambda x: -2.0 / math.sqrt(math.pi) * math.exp(-x * x)),
    "gamma": (2.0, lambda x: 1.0 - 0.5772156649015329),
    "lgamma": (2.0, lambda x: 1.0 - 0.5772156649015329),
    "degrees": (0.7, lambda x: 180.0 / math.pi),
    "radians": (0.7, lambda x: math.pi / 180.0),
}

BINARY_DERIVATIVES: dict[
    str, tuple[float, float, Callable[[float, float], tuple[float, float]]]
] = {
    "atan2": (0.6, -1.3, lambda y, x: (x / (x * x + y * y), -y / (x * x + y * y))),
    "pow": (1.6, 2.5, lambda x, y: (y * x ** (y - 1.0), x**y * math.log(x))),
    "hypot": (0.6, -1.3, lambda x, y: (x / math.hypot(x, y), y / math.hypot(x, y))),
    "log": (
        2.5,
        3.0,
        lambda x, b: (1.0 / (x * math.log(b)), -math.log(x) / (b * math.log(b) ** 2)),
    ),
    "copysign": (0.6, -1.3, lambda x, y: (-1.0, 0.0)),
    "fmod": (5.3, 1.5, lambda x, y: (1.0, -3.0)),
}


@pytest.mark.parametrize("name", sorted(UNARY_DERIVATIVES))
def test_unary_math_function(name: str) -> None:
    x, derivative = UNARY_DERIVATIVES[name]
    got = reference_gradient_mp(unary_math, {"x": x, "name": name}, ["x"])
    assert close(got["x"], derivative(x), rtol=1e-12)


@pytest.mark.parametrize("name", sorted(BINARY_DERIVATIVES))
def test_binary_math_function(name: str) -> None:
    x, y, derivative = BINARY_DERIVATIVES[name]
    got = reference_gradient_mp(binary_math, {"x": x, "y": y, "name": name}, ["x", "y"])
    dx, dy = derivative(x, y)
    assert close(got["x"], dx, rtol=1e-12) and close(got["y"], dy, rtol=1e-12)


def test_shim_covers_the_math_functions_adcompile_supports() -> None:
    required = {
        *("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh"),
        *("asinh", "acosh", "atanh", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt"),
        *("pow", "hypot", "fabs", "erf", "erfc", "floor", "ceil", "trunc", "pi", "e", "tau"),
        *("inf", "isfinite", "isnan", "copysign"),
    }
    assert required <= set(MP_MATH)
    assert set(UNARY_DERIVATIVES) | set(BINARY_DERIVATIVES) <= set(MP_MATH)


def test_three_argument_hypot() -> None:
    got = reference_gradient_mp(
        lambda x, y, z: math.hypot(x, y, z), {"x": 1.0, "y": 2.0, "z": 2.0}, ["x", "z"]
    )
    assert close(got["x"], 1.0 / 3.0) and close(got["z"], 2.0 / 3.0)


def test_predicates_and_rounding_functions() -> None:
    shim = reference.MATH_SHIM
    with mpmath.workdps(30):
        x = mpmath.mpf("2.5")
        assert shim.floor(x) == 2 and type(shim.floor(x)) is int
        assert shim.ceil(x) == 3 and type(shim.ceil(-x)) is int
        assert shim.trunc(-x) == -2
        assert shim.isfinite(x) and not shim.isnan(x) and shim.isinf(shim.inf)
        assert shim.isnan(shim.nan)
        assert shim.copysign(x, -0.0) == -x and shim.copysign(-x, 1.0) == x
        assert shim.isclose(x, x + mpmath.mpf(10) ** -12)
        assert shim.prod([x, x, 2]) == 12.5 and shim.fsum([x, x]) == 5


@pytest.mark.parametrize(("name", "x"), [("sqrt", -1.0), ("log", -2.0), ("asin", 1.5)])
def test_domain_errors_raise_value_error_like_math(name: str, x: float) -> None:
    with pytest.raises(ValueError, match="math domain error"):
        mp_function(unary_math)(mpmath.mpf(x), name)


def test_math_function_without_equivalent_refuses_mpmath_numbers() -> None:
    with pytest.raises(TypeError, match="nextafter has no mpmath equivalent"):
        reference_gradient_mp(uses_math_without_equivalent, {"x": 0.5}, ["x"])
    got = reference_gradient_mp(uses_factorial_of_int, {"x": 1.5, "n": 4}, ["x"])
    assert close(got["x"], 4 * 1.5**3 / 24)


# --- the rebuilt function and its environment ---------------------------------------------------


def test_original_function_and_module_are_untouched() -> None:
    shimmed = mp_function(calls_helper_twice)
    assert shimmed is not calls_helper_twice
    assert shimmed.__code__ is calls_helper_twice.__code__
    assert shimmed.__globals__ is not calls_helper_twice.__globals__
    assert shimmed.__globals__["_sin_squared"] is not _sin_squared
    assert globals()["math"] is math and globals()["sin"] is math.sin
    assert calls_helper_twice(0.5, 2.0) == _sin_squared(0.5) + _sin_squared(1.0)


def test_shimmed_function_keeps_name_and_defaults() -> None:
    shimmed = mp_function(with_defaults)
    assert shimmed.__name__ == "with_defaults"
    assert shimmed.__qualname__ == with_defaults.__qualname__
    assert shimmed.__defaults__ == (3.0,)


def test_precision_is_restored() -> None:
    before = mpmath.mp.prec
    reference_gradient_mp(newton_sqrt, {"a": 2.0, "iterations": 5}, ["a"], dps=80)
    assert mpmath.mp.prec == before


def test_mp_function_rejects_non_functions() -> None:
    with pytest.raises(TypeError, match="Python function"):
        mp_function(math.sin)


def test_wrt_naming_a_tuple_parameter_is_rejected() -> None:
    point = {"x": 0.5, "n": 3, "w": (1.0, 2.0), "flag": True, "c": 0.25}
    with pytest.raises(TypeError, match="only real scalar"):
        reference_gradient_mp(checks_argument_types, point, ["w"])


@pytest.mark.parametrize(
    ("point", "wrt", "message"),
    [
        ({"x": 1.0, "q": 2.0}, ["x"], "unknown parameters"),
        ({"n": 2}, ["n"], "no value for 'x'"),
        ({"x": 1.0, "n": 2}, ["z"], "not a parameter"),
    ],
)
def test_bad_points_and_names(point: dict[str, float], wrt: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        reference_gradient_mp(horner_loop, point, wrt)


def test_errors_in_the_primal_say_where() -> None:
    with pytest.raises(ValueError, match="math domain error") as info:
        reference_gradient_mp(unary_math, {"x": -1.0, "name": "sqrt"}, ["x"])
    assert "d/dx at {'x': -1.0, 'name': 'sqrt'}" in "".join(info.value.__notes__)


# --- comparing a gradient with the reference ----------------------------------------------------

POINTS = [{"x": 0.5, "y": 0.8}, {"x": -1.2, "y": 0.3}]


def test_matching_gradient_passes_and_reports() -> None:
    report = assert_grad_matches_mp(calls_helper_twice, POINTS, gradient=grad_pair)
    assert isinstance(report, CheckReport) and report.ok and len(report.rows) == 4
    assert report.table().startswith(
        "calls_helper_twice: all 4 partials match the mpmath reference (rtol=1e-08"
    )


def test_no_points_is_not_a_pass() -> None:
    """It read "0 of 0 partials differ" (and SymPy's report the same) while failing."""
    with pytest.raises(AssertionError, match="no partials compared"):
        assert_grad_matches_mp(calls_helper_twice, [], gradient=grad_pair)


def test_mismatch_raises_a_table() -> None:
    def wrong(x: float, y: float) -> tuple[float, float]:
        dx, dy = grad_pair(x, y)
        return dx, dy + 1e-3

    with pytest.raises(AssertionError) as info:
        assert_grad_matches_mp(calls_helper_twice, POINTS, gradient=wrong)
    text = str(info.value)
    lines = text.splitlines()
    assert "2 of 4 partials differ from the mpmath reference" in lines[0]
    header = [cell.strip() for cell in lines[1].split(" | ")]
    assert header == ["parameter", "point", "expected", "got", "rel.err", "status"]
    assert sum("MISMATCH" in line for line in lines) == 2
    assert "x=0.5, y=0.8" in text


@pytest.mark.parametrize(
    ("wrt", "make"),
    [
        (None, lambda dx, dy: (dx, dy)),
        ("y", lambda dx, dy: dy),
        (0, lambda dx, dy: dx),
        (-1, lambda dx, dy: dy),
        (("y", "x"), lambda dx, dy: (dy, dx)),
        ([1], lambda dx, dy: (dy,)),
    ],
)
def test_wrt_forms_like_grad(wrt: Any, make: Callable[[float, float], Any]) -> None:
    report = compare_with_mp(
        calls_helper_twice, POINTS, wrt, gradient=lambda x, y: make(*grad_pair(x, y))
    )
    assert report.ok, report.table()


def test_single_parameter_default_wrt_is_bare() -> None:
    report = compare_with_mp(piecewise, [{"x": 0.3}], gradient=lambda x: math.cos(x))
    assert report.ok


def test_wrong_shape_is_reported() -> None:
    with pytest.raises(AssertionError, match="expected a tuple of 2"):
        compare_with_mp(calls_helper_twice, POINTS, gradient=lambda x, y: 1.0)


def test_non_wrt_parameters_are_passed_to_the_gradient() -> None:
    points = [{"x": 0.7, "n": 4}, {"x": -0.2, "n": 0}]
    report = compare_with_mp(horner_loop, points, "x", gradient=horner_derivative)
    assert report.ok


def test_default_gradient_is_adcompile_grad(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def fake_grad(fn: Callable[..., Any], wrt: Any = None) -> Callable[..., Any]:
        calls.append((fn, wrt))
        return grad_pair

    monkeypatch.setattr(adcompile, "grad", fake_grad)
    assert_grad_matches_mp(calls_helper_twice, POINTS, None)
    assert calls == [(calls_helper_twice, None)]


# --- independence ---------------------------------------------------------------------------------


def test_module_level_imports_are_stdlib_and_mpmath_only() -> None:
    tree = ast.parse(Path(reference.__file__).read_text(encoding="utf-8"))
    modules = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            modules |= {alias.name.partition(".")[0] for alias in stmt.names}
        elif isinstance(stmt, ast.ImportFrom) and stmt.level:
            # Only the report's table (a leaf module of the standard library alone).
            assert stmt.module == "report", "reference.py must not import the compiler"
        elif isinstance(stmt, ast.ImportFrom):
            modules.add((stmt.module or "").partition(".")[0])
    third_party = {name for name in modules if name not in sys.stdlib_module_names}
    assert third_party == {"mpmath"}
    report_tree = ast.parse(Path(report.__file__).read_text(encoding="utf-8"))
    imported = {
        (stmt.module or "").partition(".")[0] if isinstance(stmt, ast.ImportFrom) else alias
        for stmt in report_tree.body
        if isinstance(stmt, ast.Import | ast.ImportFrom)
        for alias in ([a.name for a in stmt.names] if isinstance(stmt, ast.Import) else [None])
    }
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}


def test_does_not_import_sympy() -> None:
    code = textwrap.dedent(
        """
        import sys
        from adcompile.reference import reference_gradient_mp
        from tests.corpus.control_flow import rk4_ode
        got = reference_gradient_mp(rk4_ode, {"a": 0.5, "y0": 1.0, "n": 4}, ["a", "y0"])
        assert all(isinstance(v, float) for v in got.values())
        print(sorted(name for name in sys.modules if name.partition(".")[0] == "sympy"))
        """
    )
    root = Path(__file__).resolve().parent.parent
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_one_point_given_as_points_is_refused_with_the_fix() -> None:
    """`points={"x": 1.0}` iterated the dict's keys: the message spoke of "the point
    {'x': 'x'}"; both checkers now say to pass a list."""
    from adcompile.reference import assert_grad_matches_mp
    from adcompile.testing import assert_grad_matches_sympy

    def square(x):
        return x * x

    for check in (assert_grad_matches_sympy, assert_grad_matches_mp):
        with pytest.raises(TypeError, match=r"pass points=\[\{'x': 1\.0\}\]"):
            check(square, points={"x": 1.0})


def _weighted_square_sum(x: float, y: float) -> float:
    s = 0.0
    for t in (1.0, 2.0):
        s = s + t * x * x * y
    return s


@pytest.mark.parametrize("x", [1e-30, 0.7, 1e40, 1e50, 1e150])
def test_the_reference_holds_at_large_points(x: float) -> None:
    """mpmath.diff's absolute step vanished beside x: from about 1e45, x + h == x in its
    working precision, and the reference derivative was 0.0 (a false MISMATCH in check)."""
    import sympy as sp

    sx, sy = sp.symbols("x y")
    expr = 3 * sx**2 * sy  # the loop's sum
    at = {sx: sp.Float(x, 60), sy: 2}
    expected = {name: float(sp.diff(expr, s).subs(at)) for name, s in (("x", sx), ("y", sy))}
    got = reference_gradient_mp(_weighted_square_sum, {"x": x, "y": 2.0}, ["x", "y"])
    assert got == pytest.approx(expected, rel=1e-14)
    hessian = reference_hessian_mp(_weighted_square_sum, {"x": x, "y": 2.0}, ["x", "y"])
    mixed = float(sp.diff(expr, sx, sy).subs(at))
    assert hessian[0][1] == pytest.approx(mixed, rel=1e-14)
    assert one_sided_partials(_weighted_square_sum, {"x": x, "y": 2.0}, "x") == pytest.approx(
        (expected["x"], expected["x"]), rel=1e-14
    )


def _summed_max(x: float, y: float) -> float:
    s = 0.0
    for _ in range(3):
        s = s + max(y, x)
    return s


def _floored(x: float, y: float) -> float:
    return x * (y // 1.0)


def test_a_float_parameter_held_fixed_computes_in_mpmath_too() -> None:
    """At a tie, `max(y, x)` picks the float y on one side of the step: the sum then ran in
    float, and its rounding over mpmath's tiny step gave -1.98e28 (a false MISMATCH in
    check). SymPy's derivative of 3 max(x, y) at the tie is 3 Heaviside(0) = 1.5."""
    import sympy as sp

    sx, sy = sp.symbols("x y", real=True)
    expr = 3 * sp.Max(sx, sy)
    at = {sx: sp.Rational(13, 10), sy: sp.Rational(13, 10)}
    expected = {n: float(sp.diff(expr, s).subs(at)) for n, s in (("x", sx), ("y", sy))}
    assert reference_gradient_mp(_summed_max, {"x": 1.3, "y": 1.3}, ["x", "y"]) == pytest.approx(
        expected, rel=1e-12
    )
    # `//` takes no mpmath number: the fixed float stays a float there, as before
    assert reference_gradient_mp(_floored, {"x": 0.7, "y": 2.5}, ["x"]) == pytest.approx(
        {"x": 2.0}, rel=1e-12
    )
