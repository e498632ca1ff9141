"""Forward mode, jvp/vjp, jacobians, hessians and nested grads (issue 7).

Straight-line functions are checked against SymPy's first, second and third derivatives on
the whole straight-line corpus; control-flow functions against the mpmath reference.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import sympy as sp

from adcompile import (
    AdcompileError,
    UnsupportedSyntaxError,
    derivative,
    grad,
    hessian,
    jacobian,
    jvp,
    rule_scope,
    value_and_grad,
    vjp,
)
from adcompile.reference import assert_grad_matches_mp, reference_hessian_mp
from adcompile.symbolic import symbolic_function
from tests.corpus import control_flow as cf
from tests.corpus.straight_line import NO_DERIVATIVE
from tests.helpers import module_from_source
from tests.test_corpus_control_flow import wrt_names
from tests.test_corpus_straight_line import FUNCTIONS, corpus_params, param_names, points_for

RTOL = 1e-7
ATOL = 1e-9
SECOND_ORDER_POINTS = 2


def point_dict(fn: Callable[..., Any], args: tuple[float, ...]) -> dict[str, float]:
    """Argument tuple -> {parameter: value}."""
    return dict(zip(param_names(fn), args, strict=True))


@functools.cache
def symbolic(fn: Callable[..., Any]) -> Any:
    """``symbolic_function(fn)``, computed once per function."""
    return symbolic_function(fn)


@functools.cache
def symbolic_derivative(fn: Callable[..., Any], wrt: tuple[str, ...]) -> Any:
    """SymPy's partial derivative expression of ``fn`` along ``wrt`` (repeats allowed)."""
    function = symbolic(fn)
    return sp.diff(function.expr, *(function.symbol(name) for name in wrt))


def sympy_derivative(fn: Callable[..., Any], args: tuple[float, ...], *wrt: str) -> float:
    """SymPy's partial derivative of ``fn`` along ``wrt``, evaluated at ``args`` to 30 digits."""
    exact = symbolic(fn).bind(point_dict(fn, args))
    # Substituting exact values first and evaluating once is far faster than evalf(subs=...)
    # on large expressions; evalf then raises its working precision where it must.
    value = symbolic_derivative(fn, tuple(wrt)).xreplace(exact).evalf(30)
    return float(value) if value.is_real else math.nan


def assert_close(got: float, expected: float, what: str) -> None:
    """Relative agreement, absolute near zero; a NaN reference is not a pass."""
    assert math.isfinite(expected), f"{what}: the reference is {expected}"
    assert math.isclose(got, expected, rel_tol=RTOL, abs_tol=ATOL), (
        f"{what}: got {got!r}, expected {expected!r}"
    )


def as_matrix(result: Any, size: int) -> list[list[float]]:
    """A hessian result (bare for one parameter) as a size x size list of lists."""
    if size == 1:
        return [[result]]
    return [list(row) for row in result]


# --- the straight-line corpus against SymPy -----------------------------------------------------


@pytest.mark.parametrize(("fn", "domain"), corpus_params())
def test_forward_mode_grad_matches_sympy(fn: Callable[..., Any], domain: Any) -> None:
    names = param_names(fn)
    compiled = grad(fn, mode="forward")
    for args in points_for(fn.__name__)[:3]:
        got = compiled(*args)
        partials = got if len(names) > 1 else (got,)
        for name, value in zip(names, partials, strict=True):
            expected = sympy_derivative(fn, args, name)
            assert_close(value, expected, f"d{fn.__name__}/d{name} at {args}")


@pytest.mark.parametrize(("fn", "domain"), corpus_params())
def test_hessian_matches_sympy(fn: Callable[..., Any], domain: Any) -> None:
    names = param_names(fn)
    compiled = hessian(fn)
    for args in points_for(fn.__name__)[:SECOND_ORDER_POINTS]:
        matrix = as_matrix(compiled(*args), len(names))
        for i, a in enumerate(names):
            for j, b in enumerate(names[: i + 1]):
                expected = sympy_derivative(fn, args, b, a)  # SymPy's partials commute
                where = f"d2{fn.__name__}/d{a}d{b} at {args}"
                assert_close(matrix[i][j], expected, where)
                assert_close(matrix[j][i], expected, where + " (transposed)")


@pytest.mark.parametrize(("fn", "domain"), corpus_params())
def test_third_derivative_matches_sympy(fn: Callable[..., Any], domain: Any) -> None:
    first = param_names(fn)[0]
    third = grad(grad(grad(fn, wrt=0), wrt=0), wrt=0)
    for args in points_for(fn.__name__)[:1]:  # SymPy's third derivatives are the slow part
        expected = sympy_derivative(fn, args, first, first, first)
        assert_close(third(*args), expected, f"d3{fn.__name__}/d{first}3 at {args}")


MULTI_PARAMETER = [name for name, (fn, _) in FUNCTIONS.items() if len(param_names(fn)) >= 2]


@pytest.mark.parametrize(("fn", "domain"), corpus_params(MULTI_PARAMETER[::3]))
def test_mixed_partial_by_nested_grad_matches_sympy(fn: Callable[..., Any], domain: Any) -> None:
    a, b = param_names(fn)[:2]
    mixed = grad(grad(fn, wrt=a), wrt=b)
    for args in points_for(fn.__name__)[:SECOND_ORDER_POINTS]:
        assert_close(mixed(*args), sympy_derivative(fn, args, a, b), f"d2/d{a}d{b} at {args}")


@pytest.mark.parametrize(("fn", "domain"), corpus_params(MULTI_PARAMETER[::3]))
def test_jvp_and_vjp_match_sympy(fn: Callable[..., Any], domain: Any) -> None:
    names = param_names(fn)
    rng = random.Random(fn.__name__)
    args = points_for(fn.__name__)[0]
    partials = [sympy_derivative(fn, args, name) for name in names]
    tangents = tuple(rng.uniform(-1.0, 1.0) for _ in names)
    value, tangent_out = jvp(fn, args, tangents)
    assert value == fn(*args)
    expected = sum(p * t for p, t in zip(partials, tangents, strict=True))
    assert_close(tangent_out, expected, "jvp")
    value, pullback = vjp(fn, *args)
    assert value == fn(*args)
    cotangents = pullback(-2.5)
    assert len(cotangents) == len(names)
    for name, got, partial in zip(names, cotangents, partials, strict=True):
        assert_close(got, -2.5 * partial, f"vjp cotangent of {name}")


# --- tuple outputs: jacobians ----------------------------------------------------------------


def polar(r, theta):
    return r * math.cos(theta), r * math.sin(theta)


def polar_x(r, theta):
    return r * math.cos(theta)


def polar_y(r, theta):
    return r * math.sin(theta)


def spiral(t):
    a = math.exp(0.1 * t)
    return a * math.cos(t), a * math.sin(t), t * t


def spiral_0(t):
    return math.exp(0.1 * t) * math.cos(t)


def spiral_1(t):
    return math.exp(0.1 * t) * math.sin(t)


def spiral_2(t):
    return t * t


TUPLE_FUNCTIONS = [
    (polar, (polar_x, polar_y), (1.3, 0.4)),
    (spiral, (spiral_0, spiral_1, spiral_2), (0.7,)),
]


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize(("fn", "components", "args"), TUPLE_FUNCTIONS, ids=lambda v: "")
def test_jacobian_of_tuple_output_matches_sympy(fn, components, args, mode) -> None:
    names = param_names(fn)
    rows = jacobian(fn, mode=mode)(*args)
    assert len(rows) == len(components)
    for row, component in zip(rows, components, strict=True):
        entries = row if len(names) > 1 else (row,)
        for name, got in zip(names, entries, strict=True):
            expected = sympy_derivative(component, args, name)
            assert_close(got, expected, f"d{component.__name__}/d{name}")


def test_jacobian_wrt_one_parameter_is_a_column_of_bare_partials() -> None:
    column = jacobian(polar, wrt="theta")(2.0, 0.3)
    assert column == pytest.approx((-2.0 * math.sin(0.3), 2.0 * math.cos(0.3)), rel=1e-12)


def test_jacobian_of_a_scalar_function_is_its_gradient() -> None:
    fn = FUNCTIONS["seed"][0]
    assert jacobian(fn)(4.0, -3.0, 5.0) == grad(fn)(4.0, -3.0, 5.0) == (5.0, 5.0, 1.0)
    assert jacobian(fn, mode="forward")(4.0, -3.0, 5.0) == (5.0, 5.0, 1.0)


def test_jvp_and_vjp_of_a_tuple_output() -> None:
    value, tangent = jvp(polar, (2.0, 0.3), (1.0, 0.0))
    assert value == polar(2.0, 0.3)
    assert tangent == pytest.approx((math.cos(0.3), math.sin(0.3)), rel=1e-12)
    value, pullback = vjp(polar, 2.0, 0.3)
    assert value == polar(2.0, 0.3)
    assert pullback((0.0, 1.0)) == pytest.approx((math.sin(0.3), 2.0 * math.cos(0.3)))
    with pytest.raises(ValueError, match="the output has 2 elements; got 3"):
        pullback((1.0, 2.0, 3.0))


def _x_times_y_plus_x(x, y):
    return x * y + x


def _both_defaults(x=1.0, y=2.0):
    return x * y


def test_a_0d_array_cotangent_is_neither_changed_nor_read_after_a_change() -> None:
    """Code for numbers adds adjoints in place (`b_x = b_f; b_x += b_f * y`): a 0-d array
    cotangent was the caller's array itself, so it was changed, and d/dy came out 4x."""
    _, pullback = vjp(_x_times_y_plus_x, 2.0, 3.0)
    cotangent = np.array(1.0)
    assert pullback(cotangent) == (4.0, 2.0)
    assert cotangent == 1.0
    _, pullback = vjp(polar, 2.0, 0.3)
    cotangents = (np.array(0.0), np.array(1.0))
    assert pullback(cotangents) == pytest.approx((math.sin(0.3), 2.0 * math.cos(0.3)))
    assert cotangents[0] == 0.0 and cotangents[1] == 1.0


def test_a_pullback_refuses_cotangents_that_are_not_its_outputs_shape() -> None:
    _, pullback = vjp(polar, 2.0, 0.3)
    two = (np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    with pytest.raises(ValueError, match="output element 0 has shape \\(2,\\); output"):
        pullback(two)
    assert np.array_equal(two[1], [1.0, 1.0])  # the caller's arrays are left alone
    with pytest.raises(TypeError, match="a tuple of 2 elements; pass a tuple of 2 cotangents"):
        pullback(1.0)
    _, pullback = vjp(_x_times_y_plus_x, 2, 3)
    with pytest.raises(TypeError, match="is a tuple; it must be a number"):
        pullback((1,))  # Python would repeat the tuple: ((1, 1, 1), (1, 1))


def test_a_pullback_of_array_outputs_checks_each_shape() -> None:
    def f(x, y):
        return np.sum(x * y), x * y

    x, y = np.array([0.5, 1.5]), np.array([2.0, 3.0])
    _, pullback = vjp(f, x, y)
    for bad in ((1.0, np.ones((3, 2))), (np.array([1.0, 5.0]), np.ones(2))):
        with pytest.raises(ValueError, match="a cotangent has its output's shape"):
            pullback(bad)
    got = pullback((1.0, np.array([1.0, 0.0])))
    assert np.allclose(got[0], [2.0 * y[0], y[1]]) and np.allclose(got[1], [2.0 * x[0], x[1]])


def _with_a_none_output(x):
    return x * 2.0, None


def test_a_none_among_a_tuples_outputs_is_an_output_with_no_derivative() -> None:
    assert jacobian(_with_a_none_output)(1.5) == (2.0, 0.0)
    assert jvp(_with_a_none_output, (1.5,), (1.0,)) == ((3.0, None), (2.0, 0.0))


def _no_parameters():
    return 3.0


def _returns_none_by_default(x=2.0):
    return None


def test_jvp_and_vjp_with_every_argument_left_to_its_default() -> None:
    """As JAX: no primals, no tangents; no cotangents come back (it gave two)."""
    assert jvp(_both_defaults, (), ()) == (2.0, 0.0)
    value, pullback = vjp(_both_defaults)
    assert value == 2.0 and pullback(1.0) == ()
    assert jvp(_no_parameters, (), ()) == (3.0, 0.0)  # vjp raised ValueError
    assert vjp(_no_parameters)[1](1.0) == ()
    for transform in (
        lambda: jvp(_returns_none_by_default, (), ()),
        lambda: vjp(_returns_none_by_default),
    ):
        with pytest.raises(UnsupportedSyntaxError, match="`None` may be returned"):
            transform()  # jvp compiled nothing, and gave (None, 0.0)
    with pytest.raises(TypeError, match="the cotangent of the output is None"):
        vjp(_both_defaults)[1](None)


def test_jvp_needs_one_tangent_per_primal() -> None:
    with pytest.raises(ValueError, match="2 primals but 1 tangents"):
        jvp(polar, (1.0, 2.0), (1.0,))


def test_grad_of_a_tuple_output_is_still_rejected() -> None:
    with pytest.raises(UnsupportedSyntaxError, match="returns several values"):
        grad(polar)


def test_bad_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="mode must be one of"):
        grad(polar_x, mode="sideways")
    with pytest.raises(ValueError, match="mode must be"):
        jacobian(polar, mode="sideways")


# --- generated code: readable, standalone, fresh names at every level -------------------------


def collide(x, d_x, dx_dx, b_x, bar_x):
    t1 = x * d_x + dx_dx * b_x
    return math.sin(t1) * bar_x + x * x * x


def test_forward_mode_source_is_readable_and_records_nothing() -> None:
    source = grad(FUNCTIONS["seed"][0], mode="forward").source
    assert "# line" in source and "adjoint" not in source.split('"""')[2]
    assert "dq_dx = dx_dx" in source
    assert "append" not in source


def test_nested_transforms_never_collide_with_user_names() -> None:
    args = (0.3, 1.1, -0.7, 0.9, 1.4)
    names = param_names(collide)
    for level in (grad(collide), grad(collide, mode="forward")):
        got = level(*args)
        for name, value in zip(names, got, strict=True):
            assert_close(value, sympy_derivative(collide, args, name), f"d/d{name}")
    matrix = hessian(collide)(*args)
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            assert_close(matrix[i][j], sympy_derivative(collide, args, a, b), f"d2/d{a}d{b}")


def power(x, y):
    return x**y


def power_of_a_count(n, y):
    return y**n


def power_of_a_chosen_exponent(x, y):
    e = y if y > 5.0 else 3.0
    return x**e


def test_forward_mode_of_a_power_whose_exponent_does_not_vary_has_no_nan() -> None:
    """The exponent's term of the tangent is `tangent * result * nan` at a negative base:
    nan for a zero tangent too, so forward mode, jvp and jacobian gave nan where reverse mode
    gives the real partial (an int count, a branch that picks a constant)."""
    y = sp.Symbol("y")
    expected = float(sp.diff(y**2, y).subs(y, -1.1))  # -2.2
    assert jacobian(power_of_a_count)(2, -1.1)[1] == pytest.approx(expected, rel=1e-15)
    assert jacobian(power_of_a_count, mode="forward")(2, -1.1)[1] == pytest.approx(expected)
    assert jvp(power_of_a_count, (2, -1.1), (0, 1.0))[1] == pytest.approx(expected)
    assert hessian(power_of_a_count, wrt="y")(2, -1.1) == pytest.approx(2.0)
    for mode in ("reverse", "forward"):
        assert grad(power_of_a_chosen_exponent, mode=mode)(-2.0, 1.0) == (12.0, 0.0)
    assert hessian(power_of_a_chosen_exponent)(-2.0, 1.0) == ((-12.0, 0.0), (0.0, 0.0))


def test_hessian_of_a_power_with_a_negative_base_is_nan_where_y_varies() -> None:
    # d(x**y)/dy has no real value for x < 0: nan, and so is every derivative of it (jax too).
    # d2/dx2 is real (6x for y = 3): it was nan too, from the zero tangent of y times nan.
    assert grad(power)(-2.0, 3.0)[0] == 12.0 and math.isnan(grad(power)(-2.0, 3.0)[1])
    (xx, xy), (yx, yy) = hessian(power)(-2.0, 3.0)
    assert xx == sympy_derivative(power, (-2.0, 3.0), "x", "x")
    assert all(math.isnan(entry) for entry in (xy, yx, yy))
    assert_close(hessian(power)(2.0, 3.0)[0][1], sympy_derivative(power, (2.0, 3.0), "x", "y"), "h")


@pytest.mark.parametrize("x", [2.0, 0.5])
def test_the_mixed_partial_of_a_power_survives_a_zero_exponent(x: float) -> None:
    # d(x**y)/dx was the constant 0.0 where y == 0, so its derivative in y (1/x) was lost:
    # the Hessian was not symmetric. y == 0 is a smooth point of x**y for x > 0 (for x < 0,
    # d/dy is nan by convention, and so is every derivative through it).
    expected = sympy_derivative(power, (x, 0.0), "x", "y")
    assert_close(grad(grad(power, wrt="x"), wrt="y")(x, 0.0), expected, "reverse over reverse")
    forward = grad(grad(power, wrt="x", mode="forward"), wrt="y", mode="forward")
    assert_close(forward(x, 0.0), expected, "forward over forward")
    matrix = hessian(power)(x, 0.0)
    assert_close(matrix[0][1], expected, "hessian")
    assert_close(matrix[1][0], expected, "hessian, the other side")
    assert grad(power, wrt="x")(0.0, 0.0) == 0.0  # 0.0 ** -1 is never evaluated


def test_the_mixed_partial_of_an_array_power_survives_a_zero_exponent() -> None:
    def total(x, y):
        return np.sum(x**y)

    x, y = np.array([2.0, 0.5]), np.array([0.0, 0.0])
    blocks = hessian(total)(x, y)
    np.testing.assert_allclose(blocks[0][1], np.diag([0.5, 2.0]), rtol=1e-15)
    np.testing.assert_allclose(blocks[1][0], np.diag([0.5, 2.0]), rtol=1e-15)
    at_zero = grad(total)(np.array([0.0, 2.0]), np.array([0.0, 0.0]))
    np.testing.assert_array_equal(at_zero[0], [0.0, 0.0])  # 0 ** -1 (nan) is not read


def test_hessian_source_is_a_standalone_module() -> None:
    compiled = hessian(collide)
    namespace: dict[str, Any] = {}
    exec(compile(compiled.source, "<hessian dump>", "exec"), namespace)
    generated = [v for k, v in namespace.items() if k.endswith("_jvp")]
    assert len(generated) == 1
    args = (0.3, 1.1, -0.7, 0.9, 1.4)
    gradient, tangent = generated[0](*args, 1.0, 0.0, 0.0, 0.0, 0.0)
    assert gradient == pytest.approx(grad(collide)(*args), rel=1e-12)
    assert tangent == pytest.approx([row[0] for row in hessian(collide)(*args)], rel=1e-12)


def test_value_and_grad_composes() -> None:
    cube = FUNCTIONS["cube_literal_power"][0] if "cube_literal_power" in FUNCTIONS else None
    assert cube is not None
    value, second = value_and_grad(grad(cube))(1.5)
    assert_close(value, sympy_derivative(cube, (1.5,), "x"), "first derivative")
    assert_close(second, sympy_derivative(cube, (1.5,), "x", "x"), "second derivative")
    value, first = value_and_grad(cube, mode="forward")(1.5)
    assert value == cube(1.5)
    assert_close(first, sympy_derivative(cube, (1.5,), "x"), "forward value_and_grad")


def test_third_derivatives_named_in_the_issue() -> None:
    def fifth(x):
        return x**5

    def sine_times(x):
        return math.sin(x) * x

    assert_close(grad(grad(grad(fifth)))(1.3), 60 * 1.3**2, "d3 x**5")
    expected = -math.cos(1.3) * 1.3 - 3 * math.sin(1.3)
    assert_close(grad(grad(grad(sine_times)))(1.3), expected, "d3 sin(x)*x")


# --- control flow against mpmath ----------------------------------------------------------------

CONTROL_FLOW = [
    case
    for group, entries in cf.GROUPS.items()
    if group not in ("sequence_values",)
    for case in [(fn, points, wrt) for fn, points, wrt in entries]
]


def control_flow_params(entries: list[Any]) -> list[Any]:
    """pytest params (fn, points, wrt) with the function's name as id."""
    return [pytest.param(*entry, id=entry[0].__name__) for entry in entries]


@pytest.mark.parametrize(("fn", "points", "wrt"), control_flow_params(CONTROL_FLOW))
def test_forward_mode_control_flow_matches_mpmath(fn, points, wrt) -> None:
    assert_grad_matches_mp(fn, points[:2], wrt, gradient=grad(fn, wrt=wrt, mode="forward"))


@pytest.mark.parametrize(("fn", "points", "wrt"), control_flow_params(CONTROL_FLOW[::4]))
def test_hessian_of_control_flow_matches_mpmath(fn, points, wrt) -> None:
    names = wrt_names(fn, wrt)
    compiled = hessian(fn, wrt=wrt)
    for point in points[:1]:
        args = [point[name] for name in param_names(fn)]
        expected = reference_hessian_mp(fn, point, names)
        result = compiled(*args)
        got = [list(row) for row in result] if isinstance(result, tuple) else [[result]]
        for i, a in enumerate(names):
            for j, b in enumerate(names):
                assert math.isclose(got[i][j], expected[i][j], rel_tol=1e-6, abs_tol=1e-8), (
                    f"d2{fn.__name__}/d{a}d{b} at {point}: got {got[i][j]}, mpmath {expected[i][j]}"
                )


@pytest.mark.parametrize("fn", NO_DERIVATIVE, ids=lambda fn: fn.__name__)
def test_forward_mode_raises_the_same_errors(fn: Callable[..., Any]) -> None:
    with pytest.raises(AdcompileError) as reverse:
        grad(fn)
    with pytest.raises(AdcompileError) as forward:
        grad(fn, mode="forward")
    assert type(forward.value) is type(reverse.value)
    assert str(forward.value) == str(reverse.value)
    assert str(forward.value).startswith(f"{__file__.rsplit('/', 1)[0]}/corpus/straight_line.py:")


# --- parameters left to their defaults -----------------------------------------------------------
DEFAULTS_SOURCE = """
import math


def cubic_default(x, y=3.0):
    return x**3 * y + math.sin(y)


def pair_default(x, y=3.0):
    return x * y, x + y
"""


def test_transforms_fill_in_defaults_the_call_leaves_out(tmp_path) -> None:
    from tests.helpers import module_from_source

    module = module_from_source(tmp_path, DEFAULTS_SOURCE)
    x, y = sp.symbols("x y")
    f = x**3 * y + sp.sin(y)
    at = {x: 2.0, y: 3.0}
    gradient = [float(sp.diff(f, v).subs(at)) for v in (x, y)]
    second = [[float(sp.diff(f, a, b).subs(at)) for b in (x, y)] for a in (x, y)]
    cubic, pair = module.cubic_default, module.pair_default
    assert hessian(cubic, wrt="x")(2.0) == pytest.approx(second[0][0], rel=1e-12)
    for got, want in zip(hessian(cubic)(2.0), second, strict=True):
        assert got == pytest.approx(tuple(want), rel=1e-12)
    for mode in ("reverse", "forward"):
        assert jacobian(cubic, mode=mode)(2.0) == pytest.approx(tuple(gradient), rel=1e-12)
        assert jacobian(pair, mode=mode)(2.0) == ((3.0, 2.0), (1.0, 1.0))
    assert jvp(cubic, (2.0,), (1.0,))[1] == pytest.approx(gradient[0], rel=1e-12)
    assert vjp(cubic, 2.0)[1](1.0) == pytest.approx((gradient[0],), rel=1e-12)
    with pytest.raises(TypeError, match="missing required positional argument"):
        jacobian(cubic)()
    # by keyword, as the primal's signature allows
    assert jacobian(cubic)(x=2.0, y=3.0) == pytest.approx(tuple(gradient), rel=1e-12)
    for got, want in zip(hessian(cubic)(x=2.0), second, strict=True):
        assert got == pytest.approx(tuple(want), rel=1e-12)
    with pytest.raises(TypeError, match="missing required argument"):
        hessian(cubic)(y=3.0)


def three_defaults(x, y=2.0, z=3.0):
    return x * x * y * z


def test_a_keyword_call_may_skip_a_parameter_with_a_default() -> None:
    # f(1.0, z=5.0): y takes its default, as Python binds the call.
    assert grad(three_defaults)(1.0, z=5.0) == (20.0, 5.0, 2.0)
    for mode in ("reverse", "forward"):
        assert jacobian(three_defaults, mode=mode)(1.0, z=5.0) == (20.0, 5.0, 2.0)
    assert hessian(three_defaults, wrt="x")(1.0, z=5.0) == 20.0
    with pytest.raises(TypeError, match=r"takes 3 arguments but 4 were given"):
        jvp(three_defaults, (1.0, 2.0, 3.0, 4.0), (1.0, 0.0, 0.0, 0.0))


def positional_only(x, /, y=2.0):
    return x * x * y


def test_positional_only_parameters_stay_positional_only() -> None:
    """`f(x=...)` is a TypeError for `def f(x, /, y)`: so it is for every transform of f
    (the generated `def` had no `/`, and jacobian/hessian bound keywords themselves)."""
    transforms = [
        grad(positional_only),
        value_and_grad(positional_only),
        grad(positional_only, mode="forward"),
        jacobian(positional_only),
        jacobian(positional_only, mode="forward"),
        hessian(positional_only),
    ]
    for transform in transforms:
        transform(2.0, y=3.0)  # y may be named
        with pytest.raises(TypeError, match="positional-only arguments passed as keyword"):
            transform(x=2.0, y=3.0)
    assert grad(positional_only)(2.0, y=3.0) == (12.0, 4.0)
    assert "def positional_only_grad(x, /, y=2.0):" in grad(positional_only).source


def test_a_hessians_argument_errors_name_the_function_not_its_gradient() -> None:
    with pytest.raises(TypeError, match=r"^three_defaults\(\) takes 3 arguments but 4"):
        hessian(three_defaults)(1.0, 2.0, 3.0, 4.0)
    with pytest.raises(TypeError, match=r"^three_defaults\(\) got an unexpected keyword"):
        hessian(three_defaults)(1.0, w=2.0)


def test_results_of_hessian_and_jacobian_say_how_to_go_higher(tmp_path) -> None:
    from tests.helpers import module_from_source

    module = module_from_source(tmp_path, "def quartic(x):\n    return x**4\n")
    for transform in (hessian, jacobian):
        with pytest.raises(TypeError, match=r"build higher derivatives from grad"):
            grad(transform(module.quartic))
    third = grad(grad(grad(module.quartic)))(2.0)
    assert third == pytest.approx(float(sp.diff(sp.Symbol("x") ** 4, "x", 3).subs("x", 2)))


def test_jvp_tangents_must_have_the_primals_structure() -> None:
    np = pytest.importorskip("numpy")

    def weighted(p):
        return np.sum(p["W"] * 2.0) + p["b"]

    p = {"W": np.ones(2), "b": 0.5}
    assert jvp(weighted, (p,), ({"W": np.ones(2), "b": 1.0},))[1] == pytest.approx(5.0)
    with pytest.raises(ValueError, match=r"tangent of argument 0 has \['W'\]; its primal has"):
        jvp(weighted, (p,), ({"W": np.ones(2)},))
    with pytest.raises(ValueError, match=r"has \['W', 'b', 'c'\]"):
        jvp(weighted, (p,), ({"W": np.ones(2), "b": 1.0, "c": 2.0},))


def two_inputs(x, y):
    return x * x * y + math.sin(x * y)


def test_grad_of_a_tuple_of_partials_says_what_to_do_in_the_users_terms():
    """The message pointed at the generated code's `return` and advised returning a sum."""
    with pytest.raises(UnsupportedSyntaxError, match=r"grad\(two_inputs\) returns a tuple") as e:
        grad(grad(two_inputs))
    assert "grad(grad(two_inputs, wrt='x'))" in str(e.value) and "hessian(two_inputs)" in str(
        e.value
    )
    assert f"{__file__}:" in str(e.value)
    for transform in (grad, functools.partial(jacobian, mode="forward"), jacobian):
        with pytest.raises(UnsupportedSyntaxError, match=r"value_and_grad\(two_inputs\) ret"):
            transform(value_and_grad(two_inputs))
    second = grad(grad(two_inputs, wrt="x"), wrt="x")
    assert second(0.5, 2.0) == pytest.approx(4.0 - 4.0 * math.sin(1.0), rel=1e-14)


def scaled_by_a_generator_sum(x, n):
    z = x
    for _round in range(2):
        z = z * sum(x * j for j in range(n))
    return z  # x**3 * S**2, S = n (n - 1) / 2


@pytest.mark.parametrize("n", [0, 1, 3])
def test_second_derivative_through_a_generator_loop_that_may_not_run(n: int) -> None:
    """The first-order gradient sets the generator's index to None before its loop; the
    second-order one recorded that loop's own index in the outer loop and read it unbound
    where the loop never ran (n = 0)."""
    s = n * (n - 1) / 2
    second = grad(grad(scaled_by_a_generator_sum, wrt=0), wrt=0)
    third = grad(second, wrt=0)
    assert second(0.7, n) == pytest.approx(6.0 * 0.7 * s * s, rel=1e-14, abs=0.0)
    assert third(0.7, n) == pytest.approx(6.0 * s * s, rel=1e-14, abs=0.0)


def test_jvp_and_vjp_of_a_function_of_a_sequence_say_how(tmp_path) -> None:
    """jvp and vjp take every parameter, so the refusal of a sequence parameter told the user
    to exclude it with wrt=, which neither accepts; the closure it suggests now works and is
    checked against the closed form d/dx sum(w sin x) = sum(w) cos x."""
    from adcompile import NoDerivativeError, jvp, vjp
    from tests.helpers import module_from_source

    module = module_from_source(
        tmp_path,
        """
        import math


        def f(x, ws):
            s = 0.0
            for w in ws:
                s = s + w * math.sin(x)
            return s
        """,
    )
    ws = (0.5, 2.0)
    with pytest.raises(NoDerivativeError, match=r"jvp\(lambda x: f\(x, ws\), \(x,\), \(t,\)\)"):
        jvp(module.f, (1.0, ws), (1.0, (0.0, 0.0)))
    value, tangent = jvp(lambda x: module.f(x, ws), (1.0,), (1.0,))
    assert (value, tangent) == pytest.approx((2.5 * math.sin(1.0), 2.5 * math.cos(1.0)), rel=1e-15)
    _, pullback = vjp(lambda x: module.f(x, ws), 1.0)
    assert pullback(2.0) == pytest.approx((5.0 * math.cos(1.0),), rel=1e-15)


CALLS_OF_TRANSFORMS = """
import math

from adcompile import grad, hessian, value_and_grad


def loopy(x, n):
    s = x
    for i in range(n):
        s = s * math.cos(s) + x
    return s


def h(x, y):
    return math.sin(x * y) + x ** 3 * y


dloopy = grad(loopy, wrt="x")
dh = grad(h)
H = hessian(h, wrt="x")


def calls_a_loop_gradient(x):
    return dloopy(x, 3) * x


def calls_a_tuple_gradient(x, y):
    return dh(x, y) * y


def calls_a_hessian(x, y):
    return H(x, y) * x


vh = value_and_grad(h)


def tests_a_tuple_gradient(x, y):
    if dh(x, y)[0] > 0.0:
        return x * y
    return x - y


def tests_a_value_and_gradient(x, y):
    if vh(x, y)[1][1] > 0.0:
        return x * y
    return x - y
"""


def test_a_function_calling_a_reverse_gradient_with_loops_is_differentiated(tmp_path) -> None:
    """Calling it was refused at the generated code's `stack1.append`, which differentiating
    it directly (grad(grad(loopy))) already replaced with its forward-mode twin."""
    import mpmath as mp

    from tests.helpers import module_from_source

    module = module_from_source(tmp_path, CALLS_OF_TRANSFORMS)

    def loopy_mp(x):
        s = x
        for _ in range(3):
            s = s * mp.cos(s) + x
        return s

    second = grad(module.calls_a_loop_gradient)
    for x in (0.4, -0.9, 1.3):
        with mp.workdps(40):
            expected = mp.diff(loopy_mp, x, 2) * x + mp.diff(loopy_mp, x, 1)
        assert second(x) == pytest.approx(float(expected), rel=1e-12)


@pytest.mark.parametrize(
    ("caller", "message"),
    [
        ("calls_a_tuple_gradient", r"grad\(h\) returns a tuple of partials"),
        ("calls_a_hessian", r"adcompile.hessian\(\) made calls generated code"),
    ],
)
def test_a_call_of_a_transform_that_cannot_be_read_again_is_refused_at_the_call(
    tmp_path, caller, message
) -> None:
    """The errors pointed into the generated module and into adcompile's compose.py."""
    from tests.helpers import module_from_source

    module = module_from_source(tmp_path, CALLS_OF_TRANSFORMS)
    function = getattr(module, caller)
    with pytest.raises(UnsupportedSyntaxError, match=message) as caught:
        grad(function)
    line = function.__code__.co_firstlineno + 1
    assert str(caught.value).startswith(f"{module.__file__}:{line}:12:")


@pytest.mark.parametrize("caller", ["tests_a_tuple_gradient", "tests_a_value_and_gradient"])
def test_a_branch_test_may_read_a_gradients_tuple(tmp_path, caller) -> None:
    """A test's value needs no derivative: reading a tuple of partials there was refused
    when calls of gradients were checked as values to differentiate."""
    from tests.helpers import module_from_source

    module = module_from_source(tmp_path, CALLS_OF_TRANSFORMS)
    x, y = sp.symbols("x y")
    h = sp.sin(x * y) + x**3 * y
    index = 0 if caller == "tests_a_tuple_gradient" else 1
    gradient = grad(getattr(module, caller))
    for point in ((0.4, 0.9), (-0.7, 1.2), (1.1, -2.0)):
        at = {x: point[0], y: point[1]}
        branch = x * y if sp.diff(h, (x, y)[index]).subs(at) > 0 else x - y
        expected = tuple(float(sp.diff(branch, v).subs(at)) for v in (x, y))
        assert gradient(*point) == expected


def test_jvp_and_vjp_of_a_hessian_say_how_to_go_higher(tmp_path) -> None:
    """They refused the Hessian function's `*args`, in adcompile's compose.py."""
    from tests.helpers import module_from_source

    module = module_from_source(tmp_path, CALLS_OF_TRANSFORMS)
    with pytest.raises(TypeError, match=r"build higher derivatives from grad"):
        jvp(module.H, (0.4, 0.9), (1.0, 0.0))
    with pytest.raises(TypeError, match=r"build higher derivatives from grad"):
        vjp(module.H, 0.4, 0.9)


# --- a user's wrapper of a generated gradient is the user's function ----------------------------
WRAPPED_GRADIENT = """
import functools

from adcompile import grad


def fourth(x):
    for _ in range(2):
        x = x * x
    return x


d_fourth = grad(fourth)


@functools.wraps(d_fourth)
def twice(x):
    return 2.0 * d_fourth(x)


@functools.wraps(d_fourth)
def bound_on_one_side(x):
    if x > 0.0:
        y = d_fourth(x)
    return y * 2.0


def deco(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return 2.0 * fn(x)

    return wrapper


@deco
@grad
def decorated(x):
    return x * x * x
"""


def test_a_functools_wraps_wrapper_of_a_gradient_is_differentiated_as_written(tmp_path):
    """functools.wraps copies the gradient's attributes onto the wrapper; it was taken for the
    gradient itself, and the loop gradient's forward twin ran in its place (12 for 24, every
    transform, even the value: 4 for 8)."""
    module = module_from_source(tmp_path, WRAPPED_GRADIENT)
    f = module.twice  # 8 x**3
    assert grad(f)(1.0) == pytest.approx(24.0)
    assert grad(f, mode="forward")(1.0) == pytest.approx(24.0)
    assert jvp(f, (1.0,), (1.0,)) == pytest.approx((8.0, 24.0))
    assert vjp(f, 1.0)[1](1.0) == pytest.approx((24.0,))
    assert jacobian(f)(1.0) == pytest.approx(24.0)
    assert hessian(f)(1.0) == pytest.approx(48.0)
    assert value_and_grad(f)(1.0) == pytest.approx((8.0, 24.0))
    # The wrapper's own unbound read is checked, as for any function of the user's.
    with pytest.raises(UnboundLocalError):
        grad(module.bound_on_one_side)(-1.0)
    # `@deco @grad def decorated`: the module's `decorated` is 2 * 3 x**2.
    assert grad(module.decorated)(2.0) == pytest.approx(24.0)
    assert "2.0 * fn(x)" in grad(module.decorated).source


LOOP_WITH_CONSTANT = """
K = 2.0


def p(x):
    s = x
    for _ in range(2):
        s = s * x * K
    return s
"""


def test_a_loop_gradient_is_not_differentiated_again_with_constants_changed_since(tmp_path):
    """grad(p) keeps K = 2 (3 K**2 x**2); its forward twin, compiled for grad(grad(p)),
    read K = 5 and gave 150 where grad(p)'s own derivative is 24. Refused; a twin compiled
    before the change keeps serving, as grad(p) keeps its K."""
    module = module_from_source(tmp_path, LOOP_WITH_CONSTANT)
    dp = grad(module.p)
    module.K = 5.0
    assert dp(1.0) == pytest.approx(12.0)
    with pytest.raises(TypeError, match=r"K changed after grad\(p\) was compiled"):
        grad(dp)
    module.K = 2.0
    second = grad(dp)
    module.K = 7.0
    slope = (dp(1.0 + 1e-6) - dp(1.0 - 1e-6)) / 2e-6
    assert second(1.0) == pytest.approx(slope, rel=1e-6)
    assert grad(dp)(1.0) == pytest.approx(slope, rel=1e-6)


LOOP_WITH_HELPER = """
import math

from adcompile import derivative


def cube(x):
    return x * x * x


def square(x):
    return x * x


def cube_rule(x, result, g):
    return g * 100.0


def sign_zero(x):
    s = 0.0
    for _ in range(2):
        s = s + x * x * math.atan2(ZERO, -1.0)
    return s


helper = cube
ZERO = 0.0


def p(x):
    s = 0.0
    for _ in range(3):
        s = s + helper(x)
    return s
"""


def _slope(fn, x):
    return (fn(x + 1e-6) - fn(x - 1e-6)) / 2e-6


def test_a_loop_gradient_is_not_differentiated_again_with_a_helper_rebound_since(tmp_path):
    """grad(p) inlined cube (9 x**2); its twin inlined square after `helper = square`:
    grad(grad(p)) gave 6 where 18 is due, jvp gave the value 6 beside grad(p)'s 9."""
    module = module_from_source(tmp_path, LOOP_WITH_HELPER)
    dp = grad(module.p)
    module.helper = module.square
    assert dp(1.0) == pytest.approx(9.0)
    for transform in (grad, hessian, lambda f: jvp(f, (1.0,), (1.0,))):
        with pytest.raises(TypeError, match=r"grad\(p\) inlined the function cube, and its"):
            transform(dp)
    module.helper = module.cube
    second = grad(dp)  # made while p is as dp was made: it serves whatever changes later
    module.helper = module.square
    assert second(1.0) == pytest.approx(_slope(dp, 1.0), rel=1e-6)
    assert grad(dp)(1.0) == pytest.approx(18.0)


def test_a_loop_gradient_is_not_differentiated_again_with_other_rules_in_force(tmp_path):
    """grad(p) made inside a rule_scope used the rule (p' = 300 for x = 1); outside, the
    twin did not: grad(grad(p)) gave 18 where grad(p) is constant. And the other way round."""
    module = module_from_source(tmp_path, LOOP_WITH_HELPER)
    with rule_scope():
        derivative(module.cube)(module.cube_rule)
        inside = grad(module.p)
    assert inside(1.0) == pytest.approx(300.0)
    with pytest.raises(TypeError, match=r"rule for .*cube that grad\(p\) was compiled with"):
        grad(inside)
    outside = grad(module.p)
    with rule_scope():
        derivative(module.cube)(module.cube_rule)
        with pytest.raises(TypeError, match=r"a derivative rule for .*cube was registered"):
            grad(outside)


def test_a_constant_changed_from_zero_to_negative_zero_is_a_change(tmp_path):
    """atan2(0.0, -1.0) is pi, atan2(-0.0, -1.0) is -pi; 0.0 == -0.0 let the twin through."""
    module = module_from_source(tmp_path, LOOP_WITH_HELPER)
    dp = grad(module.sign_zero)
    module.ZERO = -0.0
    assert dp(1.0) == pytest.approx(4.0 * math.pi)
    with pytest.raises(TypeError, match=r"ZERO changed after grad\(sign_zero\)"):
        grad(dp)


def test_a_helper_rebound_to_one_reading_other_constants_is_named_not_a_constant(tmp_path):
    """The twin of `helper = lambda t: t * C` rebound to cube read no C: the refusal said
    "C changed", though C had not."""
    module = module_from_source(
        tmp_path,
        "C = 0.5\n\n\ndef scaled(t):\n    return t * C\n\n\n"
        "def cube(t):\n    return t * t * t\n\n\n"
        "helper = scaled\n\n\ndef f(x):\n    s = x\n    for _ in range(2):\n"
        "        s = s + helper(x)\n    return s\n",
    )
    df = grad(module.f)
    module.helper = module.cube
    with pytest.raises(TypeError, match=r"inlined the function scaled, and its name now holds"):
        grad(df)
