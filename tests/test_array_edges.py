"""Corners of NumPy code: computed static arguments, empty arrays and empty reductions.

References are closed forms (the values JAX gives, in float64), and shapes as JAX returns them.
"""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest

from adcompile import UnsupportedSyntaxError, grad, hessian, jacobian, jvp
from tests.helpers import module_from_source

SOURCE = """
import numpy as np


def row_sums_squared(x):
    k = x.ndim - 1
    return np.sum(np.sum(x, axis=k) ** 2)


def square_sum(x):
    return np.sum(x ** 2)


def scaled_sine(x):
    return np.sin(x) * 2.0


def cubes_in_a_loop(x):
    s = 0.0
    for i in range(len(x)):
        s = s + np.sum(x[i] ** 3)
    return s


def mean_rows(x):
    return np.sum(np.mean(x, axis=1))


def var_rows(x):
    return np.sum(np.var(x, axis=1))


def std_rows(x):
    return np.sum(np.std(x, axis=1))


def prod_rows(x):
    return np.sum(np.prod(x, axis=1))


def var_one_degree(x):
    return np.var(x, ddof=1)


def determinant(x):
    return np.sum(np.linalg.det(x))


def sorts_in_place(a):
    b = a * 1.0
    b.sort()
    return np.sum(b)
"""


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> types.ModuleType:
    return module_from_source(tmp_path_factory.mktemp("array_edges"), SOURCE)


def test_a_computed_axis_in_forward_mode(module: types.ModuleType) -> None:
    """Dead-code elimination did not see `axis=k` as a read of k: forward mode lost k."""
    x = np.arange(6.0).reshape(2, 3)
    expected = 2.0 * np.repeat(x.sum(axis=1, keepdims=True), 3, axis=1)
    f = module.row_sums_squared
    np.testing.assert_allclose(grad(f, mode="forward")(x), expected, rtol=1e-15)
    np.testing.assert_allclose(jacobian(f, mode="forward")(x), expected, rtol=1e-15)
    _, slope = jvp(f, (x,), (np.ones_like(x),))
    assert slope == pytest.approx(np.sum(expected))


def test_empty_arrays_in_every_transform(module: types.ModuleType) -> None:
    empty = np.zeros(0)
    for mode in ("reverse", "forward"):
        assert grad(module.square_sum, mode=mode)(empty).shape == (0,)
        assert jacobian(module.scaled_sine, mode=mode)(empty).shape == (0, 0)
    assert hessian(module.square_sum)(empty).shape == (0, 0)
    assert hessian(module.cubes_in_a_loop)(empty).shape == (0, 0)
    np.testing.assert_allclose(
        hessian(module.cubes_in_a_loop)(np.array([1.0, 2.0])), np.diag([6.0, 12.0]), rtol=1e-15
    )


@pytest.mark.parametrize(
    ("name", "shape"),
    [("mean_rows", (3, 0)), ("var_rows", (3, 0)), ("std_rows", (3, 0)), ("prod_rows", (0, 3))],
)
def test_reductions_over_an_empty_axis(module: types.ModuleType, name: str, shape: tuple) -> None:
    """A ZeroDivisionError (mean, var, std) and a failed reshape (prod) before."""
    with warnings.catch_warnings():  # NumPy's own, from the primal: "Mean of empty slice"
        warnings.simplefilter("ignore", RuntimeWarning)
        gradient = grad(getattr(module, name))(np.zeros(shape))
    assert gradient.shape == shape


def test_var_with_as_many_degrees_as_elements_is_nan(module: types.ModuleType) -> None:
    """``np.var([x], ddof=1)`` is nan (NumPy warns); its gradient raised ZeroDivisionError."""
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        gradient = grad(module.var_one_degree)(np.array([2.0]))
    assert np.isnan(gradient).all()


def test_a_call_statement_says_to_assign_instead(module: types.ModuleType) -> None:
    with pytest.raises(UnsupportedSyntaxError, match=r"`b.sort\(...\)` as a statement .* instead"):
        grad(module.sorts_in_place)


def cofactors_by_minors(x: np.ndarray) -> np.ndarray:
    """The textbook cofactor matrix: signed determinants of the minors."""
    n = x.shape[-1]
    out = np.empty_like(x)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(x, i, axis=-2), j, axis=-1)
            out[..., i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return out


@pytest.mark.parametrize(
    "x",
    [
        np.array([[1.0, 2.0], [2.0, 4.0]]),
        np.zeros((2, 2)),
        np.arange(1.0, 10.0).reshape(3, 3),
        np.stack([np.eye(3) * 2.0, np.arange(1.0, 10.0).reshape(3, 3)]),
    ],
    ids=["rank-1", "zero", "3x3-rank-2", "stack-with-one-singular"],
)
def test_det_is_differentiable_at_singular_matrices(module: types.ModuleType, x) -> None:
    """The rule used inv(x) (forward mode: solve): LinAlgError at a singular matrix."""
    expected = cofactors_by_minors(x)
    for mode in ("reverse", "forward"):
        got = grad(module.determinant, mode=mode)(x)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
