"""Calls of the user's functions that end in ``return a, b``: unpacked or indexed, each value
carries its derivative (the corpus group ``tuple_returns`` checks them against mpmath)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from adcompile import UnsupportedSyntaxError, explain, grad, hessian, jvp
from adcompile.testing import assert_grad_matches_sympy
from tests.corpus.control_flow import rotate_twice, take_one_value_by_index, unpack_a_helpers_values
from tests.helpers import module_from_source


@pytest.mark.parametrize(
    ("fn", "points"),
    [
        (unpack_a_helpers_values, [(0.7, 1.3), (-1.1, 0.4)]),
        (take_one_value_by_index, [(0.7, 1.3), (2.0, -0.6)]),
        (rotate_twice, [(0.5, 2.0, 0.3), (-1.2, 0.4, -0.7)]),
    ],
)
def test_the_sympy_reference_unpacks_and_indexes_a_helpers_values(fn, points):
    assert_grad_matches_sympy(fn, points=points)


def test_second_derivatives_through_a_helpers_values():
    """rotate_twice(x, y, t) = u*u + 3v with (u, v) = R(3t)(x, y): closed forms."""
    x, y, t = 0.5, 2.0, 0.3
    c, s = math.cos(3 * t), math.sin(3 * t)
    u = c * x - s * y
    expected = [[2 * c * c, -2 * c * s], [-2 * c * s, 2 * s * s]]
    assert np.allclose(hessian(rotate_twice, wrt=("x", "y"))(x, y, t), expected, rtol=1e-12)
    value, tangent = jvp(rotate_twice, (x, y, t), (1.0, 0.0, 0.0))
    assert value == pytest.approx(rotate_twice(x, y, t), rel=1e-14)
    assert tangent == pytest.approx(2 * u * c + 3.0 * s, rel=1e-12)


SOURCE = """
    import math

    import numpy as np

    from adcompile import grad, jacobian, value_and_grad


    def g(x, y):
        return math.sin(x) * y


    dg = grad(g)
    vg = value_and_grad(g)


    def product_of_partials(x, y):
        a, b = dg(x, y)
        return a * b


    def first_partial_times_x(x, y):
        return dg(x, y)[0] * x


    def pair(x, y):
        return x * y, x + y


    def arrays(x, y):
        a, b = pair(x, y)
        return np.sum(a * b) + np.sum(pair(y, x)[1] * x)


    def early(x, y):
        if x > 0:
            return x, y
        return y, x


    def uses_early(x, y):
        a, b = early(x, y)
        return a * b


    def three_names(x, y):
        a, b, c = pair(x, y)
        return a


    def kept_whole(x, y):
        p = pair(x, y)
        return p[0] * x


    def out_of_range(x, y):
        return pair(x, y)[2] * x


    def partials_of_value_and_grad(x, y):
        v, d = vg(x, y)
        return v * d[0]


    def value_of_value_and_grad(x, y):
        v, d = vg(x, y)
        return v * x


    def from_divmod(x, y):
        a, b = divmod(x, y)
        return a * x


    J = jacobian(pair)


    def unpacks_a_jacobian(x, y):
        r0, r1 = J(x, y)
        return x * y


    def keeps_the_partials_whole(x, y):
        d = dg(x, y)
        return d[0] * x
"""


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    return module_from_source(tmp_path_factory.mktemp("tuples"), SOURCE)


def test_a_gradients_partials_unpacked_are_differentiated(module):
    """dg = (cos(x) y, sin(x)): a * b = y sin(2x) / 2, and dg[0] * x = x y cos(x)."""
    x, y = 0.5, 2.0
    got = grad(module.product_of_partials)(x, y)
    assert got == pytest.approx((y * math.cos(2 * x), math.sin(2 * x) / 2), rel=1e-13)
    got = grad(module.first_partial_times_x)(x, y)
    expected = (y * (math.cos(x) - x * math.sin(x)), x * math.cos(x))
    assert got == pytest.approx(expected, rel=1e-13)
    value = grad(module.value_of_value_and_grad)(x, y)
    assert value == pytest.approx((y * math.cos(x) * x + math.sin(x) * y, math.sin(x) * x))


def test_array_helpers_return_several_arrays(module):
    """sum(x y (x + y)) + sum((y + x) x): d/dx = y (x + y) + x y + 2x + y."""
    x, y = np.array([0.5, 1.0]), np.array([2.0, 3.0])
    dx, dy = grad(module.arrays)(x, y)
    np.testing.assert_allclose(dx, y * (x + y) + x * y + 2 * x + y, rtol=1e-13)
    np.testing.assert_allclose(dy, x * (x + y) + x * y + x, rtol=1e-13)


@pytest.mark.parametrize(
    ("name", "line", "message"),
    [
        ("uses_early", "return x, y", "an early `return`"),
        ("three_names", "a, b, c = pair(x, y)", "pair returns 2 values, and this assignment has 3"),
        ("kept_whole", "p = pair(x, y)", "unpack it (`a, b = pair(...)`)"),
        ("out_of_range", "return pair(x, y)[2] * x", "pair returns 2 values: index 2"),
        ("partials_of_value_and_grad", "v, d = vg(x, y)", "value_and_grad(g) returns"),
        ("from_divmod", "a, b = divmod(x, y)", "ends in `return a, b`"),
        # a call that cannot be made says why, not that it cannot be unpacked
        ("unpacks_a_jacobian", "r0, r1 = J(x, y)", "adcompile.jacobian() made calls generated"),
        # a gradient's partials kept whole: unpacking them is the way
        ("keeps_the_partials_whole", "d = dg(x, y)", "unpack it: `a, b = dg(...)`"),
    ],
)
def test_what_cannot_be_unpacked_is_refused_at_the_users_line(module, name, line, message):
    with pytest.raises(UnsupportedSyntaxError) as caught:
        grad(getattr(module, name))
    text = str(caught.value)
    assert message in text, text
    assert text.splitlines()[1].strip() == line, text


def test_explain_shows_each_value_as_the_call_indexed():
    explanation = explain(unpack_a_helpers_values, 0.7, 1.3)
    formulas = [s.formula for s in explanation.steps if s.kind == "assign"]
    assert "polar(x, y)[0] = polar.r" in formulas
    assert "polar(x, y)[1] = atan2(polar.y, polar.x)" in formulas
    assert "r = polar(x, y)[0]" in formulas and "theta = polar(x, y)[1]" in formulas
    assert tuple(explanation.gradient.values()) == pytest.approx(
        grad(unpack_a_helpers_values)(0.7, 1.3), rel=1e-14
    )


STRUCTURED = """
import numpy as np


def passthrough(params, x):
    return params, x * 2.0


def loss(params, x):
    p, z = passthrough(params, x)
    return np.sum(p["W"] @ z)


def loss_indexed(params, x):
    p = passthrough(params, x)[0]
    return np.sum(p["W"] @ x)


def pass_list(layers, x):
    return layers, x


def layer_loss(layers, x):
    ls, z = pass_list(layers, x)
    W, b = ls[0]
    return np.sum(np.tanh(W @ z + b))
"""


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_a_structured_parameter_through_a_helpers_values_stays_structured(tmp_path, mode):
    """`p, z = passthrough(params, x)` then `p["W"]`: reverse mode raised "indexed with a
    variable" at run time; through a list, `W, b = ls[0]` was refused at compile time."""
    module = module_from_source(tmp_path, STRUCTURED)
    W = np.array([[1.0, 2.0, 0.5], [-1.0, 0.3, 2.0]])
    x = np.array([0.2, -0.4, 1.1])
    params, dx = grad(module.loss, mode=mode)({"W": W}, x)
    column = W.sum(axis=0)  # sum(W @ (2x)): d/dW = 2 x per row, d/dx = 2 * column sums
    np.testing.assert_allclose(params["W"], np.tile(2.0 * x, (2, 1)), rtol=1e-14)
    np.testing.assert_allclose(dx, 2.0 * column, rtol=1e-14)
    params, dx = grad(module.loss_indexed, mode=mode)({"W": W}, x)
    np.testing.assert_allclose(params["W"], np.tile(x, (2, 1)), rtol=1e-14)
    b = np.array([0.1, -0.2])
    slope = 1.0 - np.tanh(W @ x + b) ** 2
    dx = grad(module.layer_loss, wrt=1, mode=mode)([(W, b)], x)
    np.testing.assert_allclose(dx, W.T @ slope, rtol=1e-13)
