"""Corners of NumPy code: computed static arguments, empty arrays and empty reductions.

References are closed forms (the values JAX gives, in float64), and shapes as JAX returns them.
"""

from __future__ import annotations

import math
import types
import warnings

import numpy as np
import pytest

from adcompile import UnsupportedSyntaxError, grad, hessian, jacobian, jvp, vjp
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


def every_other_row(w, X):
    s = 0.0
    for i in range(2):
        k = 2 * i
        s = s + np.sum(np.sin(X[k] * w))
    return s


def batches(w, X, y):
    s = 0.0
    b = 0
    while b < len(X):
        r = X[b : b + 2] @ w - y[b : b + 2]
        s = s + np.sum(r * r)
        b = b + 2
    return s


def ident(v):
    return v


def through_helper(x):
    a = x * 1.0
    b = ident(a)
    a += x
    return np.sum(a * b)


def through_conditional(x):
    a = x * 1.0
    b = a if np.sum(x) > 0 else x
    a += x
    return np.sum(a * b)


def early_return(x, y):
    if np.sum(x) > 0:
        return x * y
    return (x - y) ** 2


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


def det_hessian_by_sympy(x: np.ndarray) -> np.ndarray:
    """d2 det / dx_ij dx_kl of a square matrix, exact (SymPy), as an (n, n, n, n) array."""
    import sympy

    n = x.shape[-1]
    symbols = sympy.Matrix(n, n, lambda i, j: sympy.Symbol(f"x{i}{j}"))
    det = symbols.det()
    at = {symbols[i, j]: sympy.nsimplify(x[i, j]) for i in range(n) for j in range(n)}
    flat = list(symbols)
    table = [[float(sympy.diff(det, a, b).subs(at)) for b in flat] for a in flat]
    return np.array(table).reshape(n, n, n, n)


@pytest.mark.parametrize(
    "x",
    [
        np.array([[1.0, 2.0], [2.0, 4.0]]),
        np.zeros((3, 3)),
        np.arange(1.0, 10.0).reshape(3, 3),
        np.outer([1.0, -2.0, 0.5], [3.0, 1.0, -1.0]),
        np.array(
            [[2.0, 1.0, 0.0, 1.0], [4.0, 2.0, 0.0, 2.0], [1.0, 0.0, 3.0, 1.0], [0.0, 1.0, 1.0, 2.0]]
        ),
    ],
    ids=["2x2-rank-1", "3x3-zero", "3x3-rank-2", "3x3-rank-1", "4x4-rank-3"],
)
def test_det_has_a_hessian_at_singular_matrices(module: types.ModuleType, x) -> None:
    """det's second derivative inverted x: LinAlgError at a singular matrix (its first
    derivative already had a fallback). Forward over reverse, and a jvp of the gradient."""
    expected = det_hessian_by_sympy(x)
    np.testing.assert_allclose(hessian(module.determinant)(x), expected, atol=1e-12)
    direction = np.arange(x.size, dtype=float).reshape(x.shape) / x.size
    _, tangent = jvp(grad(module.determinant), (x,), (direction,))
    np.testing.assert_allclose(tangent, np.tensordot(expected, direction, 2), atol=1e-12)


def test_det_hessian_of_a_stack_with_one_singular_matrix(module: types.ModuleType) -> None:
    x = np.stack([np.eye(3) * 2.0, np.arange(1.0, 10.0).reshape(3, 3)])
    got = hessian(module.determinant)(x)
    for k in range(2):
        np.testing.assert_allclose(got[k, :, :, k], det_hessian_by_sympy(x[k]), atol=1e-12)
        np.testing.assert_array_equal(got[k, :, :, 1 - k], 0.0)


def test_an_index_computed_in_a_loop_is_the_iterations_own_in_reverse(
    module: types.ModuleType,
) -> None:
    """The reverse loop recomputed X[k] with the k of the last forward iteration."""
    w = np.array([0.3, -0.7, 1.1])
    X = np.arange(12.0).reshape(4, 3) / 7.0
    expected = np.cos(X[0] * w) * X[0] + np.cos(X[2] * w) * X[2]
    np.testing.assert_allclose(grad(module.every_other_row, wrt=0)(w, X), expected, rtol=1e-14)
    y = np.array([0.5, -0.5, 1.0, 0.25])
    residual = X @ w - y
    np.testing.assert_allclose(
        grad(module.batches, wrt=0)(w, X, y), 2.0 * X.T @ residual, rtol=1e-13
    )


@pytest.mark.parametrize("name", ["through_helper", "through_conditional"])
def test_updating_an_array_another_name_may_hold_is_refused(
    module: types.ModuleType, name: str
) -> None:
    """`b = ident(a)` or `b = a if c else x`, then `a += x`: NumPy changes b too."""
    with pytest.raises(UnsupportedSyntaxError, match=r"write `a = a \+ \.\.\.`"):
        grad(getattr(module, name))


def test_vjp_and_reverse_jacobian_after_an_early_return(module: types.ModuleType) -> None:
    """A zero adjoint took its shape from a result the vjp had dropped: NameError."""
    x, y = np.array([-1.0, -2.0]), np.array([0.5, 0.25])
    d_x, d_y = jacobian(module.early_return)(x, y)
    np.testing.assert_allclose(d_x, np.diag(2.0 * (x - y)), rtol=1e-15)
    np.testing.assert_allclose(d_y, np.diag(-2.0 * (x - y)), rtol=1e-15)
    _, pullback = vjp(module.early_return, x, y)
    np.testing.assert_allclose(pullback(np.ones(2))[0], 2.0 * (x - y), rtol=1e-15)


ZERO_FACTORS = """
import numpy as np


def reshaped(x):
    return np.sum(np.sin(0.0 * x.reshape(3, 1)))


def multiplied(A, x):
    return np.sum(np.sin(0.0 * (A @ x)))


def joined(x):
    return np.sum(np.cos(np.concatenate([x, x]) * 0.0))


def reversed_zero(x):
    t = 0.0 * x
    return np.sum(t[::-1] + x)


def matmul_zero(A, x):
    t = 0.0 * x
    return np.sum(A @ t + x)
"""


def test_a_literal_zero_factor_keeps_the_arrays_shape(tmp_path) -> None:
    """`e * 0.0` was folded to the number 0.0 in array code too: a later reshape, slice,
    matmul or split adjoint (or tangent) then failed ("cannot reshape array of size 1")."""
    module = module_from_source(tmp_path, ZERO_FACTORS)
    x, A = np.array([1.0, 2.0, 3.0]), np.arange(9.0).reshape(3, 3)
    cases = [
        (module.reshaped, (x,), [np.zeros(3)]),
        (module.multiplied, (A, x), [np.zeros((3, 3)), np.zeros(3)]),
        (module.joined, (x,), [np.zeros(3)]),
        (module.reversed_zero, (x,), [np.ones(3)]),
        (module.matmul_zero, (A, x), [np.zeros((3, 3)), np.ones(3)]),
    ]
    for fn, args, expected in cases:
        wrt = tuple(range(len(args)))
        for mode in ("reverse", "forward"):
            got = grad(fn, wrt=wrt, mode=mode)(*args)
            for part, want in zip(got, expected, strict=True):
                np.testing.assert_array_equal(part, want)


def test_a_returned_adjoint_that_is_a_method_view_of_a_parameter_is_copied() -> None:
    # `x.reshape(3)` and `x.transpose()` are x, or views of it, like np.reshape(x, 3): a
    # gradient read from them must be copied (their origin was unknown, and one alone was
    # returned as it was, sharing the caller's array).
    import ast

    from adcompile.returned_arrays import separate_returned_arrays

    for method in ("x.reshape(3)", "x.transpose()", "x.T"):
        statements = ast.parse(f"t = {method}\nb_x = t").body
        out = separate_returned_arrays(
            statements, ast.parse("b_x", mode="eval").body, ["x"], {}, "np"
        )
        assert ast.unparse(out[-1]) == "b_x = np.copy(b_x)", method
    statements = ast.parse("t = x.sum(axis=0)\nb_x = t").body  # a new array: no copy
    out = separate_returned_arrays(statements, ast.parse("b_x", mode="eval").body, ["x"], {}, "np")
    assert ast.unparse(out[-1]) == "b_x = t"


NUMPY_OUTSIDE_THE_BODY = """
import math

import numpy as np


def annotated(x: float, y: float) -> np.float64:
    return math.sin(x) * y


def float_default(x, y=np.pi):
    return math.sin(x) * y
"""


def test_numpy_named_only_in_an_annotation_or_a_float_default_is_scalar_code(tmp_path):
    """`-> np.float64` or `y=np.pi` made a function of numbers "array code", which explain
    and check refuse ("uses NumPy arrays")."""
    from adcompile import explain

    module = module_from_source(tmp_path, NUMPY_OUTSIDE_THE_BODY)
    for fn in (module.annotated, module.float_default):
        source = grad(fn).source
        assert "needs only Python's math module" in source and "import numpy" not in source
        partials = grad(fn)(0.5, np.pi)
        assert partials == pytest.approx((math.cos(0.5) * np.pi, math.sin(0.5)), rel=1e-15)
        explain(fn, 0.5, np.pi)  # refused before: "uses NumPy arrays"


METHODS_SOURCE = """
import numpy as np

W = np.arange(6.0).reshape(2, 3)


def on_a_constant(x):
    return np.sum(x * W.flatten())


def on_an_undifferentiated_parameter(x, w):
    return np.sum(x * w.flatten())


def ravel_and_swapaxes(x):
    return np.sum(x.ravel() * W.ravel() + x.swapaxes(0, 1).ravel() ** 2)


def through_a_method_with_no_rule(x):
    return np.sum(x.flatten() ** 2)


def with_a_dtype(x):
    return np.sum(x * W.astype(np.float32).reshape(-1))
"""


def test_methods_with_no_rule_serve_values_no_derivative_passes_through(tmp_path):
    """`W.flatten()` on constant data (or on a parameter left out by wrt) was refused as a
    method with no derivative rule; `.ravel()` and `.swapaxes()` had none though np.ravel and
    np.swapaxes do. References: d/dx sum(x * c) = c, d/dx sum(x * W + x^2) = W + 2x."""
    from adcompile import NoDerivativeError

    module = module_from_source(tmp_path, METHODS_SOURCE)
    x = np.arange(6.0) * 0.5
    np.testing.assert_array_equal(grad(module.on_a_constant)(x), np.arange(6.0))
    w = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(
        grad(module.on_an_undifferentiated_parameter, wrt=0)(x, w), w.flatten()
    )
    X = np.arange(6.0).reshape(2, 3) * 0.3
    np.testing.assert_allclose(grad(module.ravel_and_swapaxes)(X), module.W + 2.0 * X, rtol=1e-15)
    with pytest.raises(NoDerivativeError, match=r":20:19: the method `\.flatten\(\)` has no"):
        grad(module.through_a_method_with_no_rule)
    # a NumPy type names a dtype there (it was refused as "a type, not a number")
    np.testing.assert_array_equal(grad(module.with_a_dtype)(x), np.arange(6.0))


LIST_AND_TUPLE_SOURCE = """
import numpy as np

IDX = (0, 2, 2)
AX = (0,)


def index_by_a_list(x):
    return np.sum(x[list(IDX)] ** 2)


def index_by_a_parameter_list(x, idx):
    return np.sum(x[list(idx)] ** 2)


def axis_by_a_tuple(a):
    return np.sum(np.sum(a, axis=tuple(AX)) ** 2)


def list_of_differentiated_rows(x):
    rows = list(x)
    return np.sum(rows[0] * x)
"""


def test_list_and_tuple_serve_indices_and_axes(tmp_path):
    """`x[list(IDX)]` and `axis=tuple(AX)` were refused ("no derivative rule for list"),
    though an index or an axis carries no derivative. References: repeated indices add up
    (d/dx sum(x[[0, 2, 2]]^2) = [2 x0, 0, 4 x2, 0]); d/da sum(colsum(a)^2) = 2 colsum(a)."""
    from adcompile import NoDerivativeError

    module = module_from_source(tmp_path, LIST_AND_TUPLE_SOURCE)
    x = np.array([1.0, 2.0, 3.0, 4.0])
    expected = np.array([2.0, 0.0, 12.0, 0.0])
    np.testing.assert_array_equal(grad(module.index_by_a_list)(x), expected)
    np.testing.assert_array_equal(
        grad(module.index_by_a_parameter_list, wrt=0)(x, (0, 2, 2)), expected
    )
    a = np.arange(6.0).reshape(2, 3)
    colsum = np.sum(a, axis=0)
    np.testing.assert_array_equal(grad(module.axis_by_a_tuple)(a), 2.0 * np.stack([colsum, colsum]))
    with pytest.raises(NoDerivativeError, match=r":21:12: .*derivative\(list\)"):
        grad(module.list_of_differentiated_rows)  # values with a derivative: still refused


POWER_ZERO_SOURCE = """
import numpy as np


def broadcast_sum_to_the_first(x, y):
    return np.sum((x + y) ** 1.0)


def scalar_broadcast_to_the_first(x, s):
    return np.sum((x - s) ** 1)
"""


def test_a_power_of_zero_in_an_adjoint_keeps_its_array_shape(tmp_path):
    """d/de e ** 1.0 is `e ** 0.0`, which the simplifier made a scalar 1.0; where that
    factor alone carried the broadcast shape, unbroadcast then summed nothing: grad gave 1
    where each element of x meets 3 of y (and -1 where s meets 3 elements of x)."""
    from adcompile import vjp

    module = module_from_source(tmp_path, POWER_ZERO_SOURCE)
    x, y = np.array([[1.0], [2.0], [3.0]]), np.array([[1.0, 2.0, 3.0]])
    for optimize in (True, False):
        gx, gy = grad(module.broadcast_sum_to_the_first, optimize=optimize)(x, y)
        np.testing.assert_array_equal(gx, np.full((3, 1), 3.0))
        np.testing.assert_array_equal(gy, np.full((1, 3), 3.0))
    np.testing.assert_array_equal(
        vjp(module.broadcast_sum_to_the_first, x, y)[1](1.0)[0], 3.0 * np.ones((3, 1))
    )
    assert grad(module.scalar_broadcast_to_the_first, wrt=1)(np.array([1.0, 2.0, 3.0]), 0.5) == -3.0


POSITIONAL_NUMPY_ARGUMENTS = """
import numpy as np

WEIGHTS = np.array([1.0, 2.0, 3.0])


def sum_out_none(x):
    return np.sum(np.max(x, 1, None) * WEIGHTS)


def var_dtype_out_none(x):
    return np.sum(np.var(x, 0, None, None) * WEIGHTS)


def method_out_none(x):
    return np.sum(x.sum(1, None) * WEIGHTS)


def sum_dtype(x):
    return np.sum(np.sum(x, 1, np.float64) * WEIGHTS)


def method_mean_dtype(x):
    return np.sum(x.mean(1, "f8") * WEIGHTS)


def method_cumsum_dtype(x):
    return np.sum(x.cumsum(1, np.float64))


def sum_keepdims_after_nones(x):
    return np.sum(np.sum(x * x, 1, None, None, True) * WEIGHTS)


def var_ddof_after_nones(x):
    return np.sum(np.var(x, 0, None, None, 1) * WEIGHTS)


def method_cumsum_dtype_none(x):
    return np.sum(x.cumsum(1, None) * WEIGHTS)


def concatenate_out_none(x):
    return np.sum(np.concatenate((x, x * x), 1, None) ** 2)
"""


@pytest.mark.parametrize(
    "name",
    [
        "sum_out_none",
        "var_dtype_out_none",
        "method_out_none",
        "sum_keepdims_after_nones",
        "var_ddof_after_nones",
        "method_cumsum_dtype_none",
        "concatenate_out_none",
    ],
)
@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_positional_arguments_of_a_reduction_are_bound_as_numpy_binds_them(tmp_path, name, mode):
    """`np.max(x, 1, None)` bound None as `keepdims` (the rule's second static), not `out`
    (NumPy's): forward mode raised TypeError, and `np.var(x, 0, None, None)` took None as
    `ddof`. More positionals than the rule's statics (`np.sum(x, 1, None, None, True)`,
    NumPy's axis, dtype, out, keepdims) were refused before they were bound."""
    from tests.array_reference import check_gradient

    module = module_from_source(tmp_path, POSITIONAL_NUMPY_ARGUMENTS)
    fn = getattr(module, name)
    x = np.array([[0.3, 1.7, -0.4], [2.2, -1.1, 0.9], [0.5, 0.8, -2.0]])
    check_gradient(fn, grad(fn, wrt=(0,), mode=mode), [x], (0,))


@pytest.mark.parametrize(
    ("name", "argument"),
    [
        ("sum_dtype", "np.float64"),
        ("method_mean_dtype", '"f8"'),
        ("method_cumsum_dtype", "np.float64"),
    ],
)
def test_a_positional_dtype_is_refused_not_read_as_keepdims(tmp_path, name, argument):
    """`np.sum(x, 1, np.float64)` was differentiated with `keepdims=np.float64` (truthy):
    the gradient of each row went to each column, silently. `x.cumsum(1, np.float64)` said
    it had no rule, advising to register one."""
    module = module_from_source(tmp_path, POSITIONAL_NUMPY_ARGUMENTS)
    fn = getattr(module, name)
    with pytest.raises(UnsupportedSyntaxError) as caught:
        grad(fn)
    message = str(caught.value)
    line = fn.__code__.co_firstlineno + 1
    column = module.__loader__.get_source(module.__name__).splitlines()[line - 1].index(argument)
    assert message.startswith(f"{module.__file__}:{line}:{column + 1}:")
    assert "dtype" in message or "other arguments are not supported" in message


@pytest.mark.parametrize("x", [np.array(0.7), np.array(0.7, np.float32)])
def test_forward_mode_of_a_0d_array_times_a_list(tmp_path, x):
    """The tangent of a 0-d array was the Python float 1.0, so the tangent code computed
    `1.0 * [1.0, 2.0, 3.0]`: TypeError in forward mode and jacobian."""
    from tests.array_reference import finite_difference_grad

    module = module_from_source(
        tmp_path, "import numpy as np\n\n\ndef f(x):\n    return np.sum(x * [1.0, 2.0, 3.0])\n"
    )
    expected = finite_difference_grad(module.f, [x], (0,))[0]
    for gradient in (grad(module.f, mode="forward"), jacobian(module.f, mode="forward")):
        assert float(gradient(x)) == pytest.approx(float(expected), rel=1e-6)
    assert np.result_type(grad(module.f, mode="forward")(x)) == x.dtype  # as in reverse mode
    assert np.result_type(grad(module.f)(x)) == x.dtype


LINALG_BY_NAME = """
import numpy as np
from numpy.linalg import det, norm, solve
from numpy.linalg import inv as INV


def f(a, b):
    return np.sum(INV(a)) + det(a) + norm(solve(a, b))
"""


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_numpy_linalg_functions_imported_by_name(tmp_path, mode):
    """`from numpy.linalg import inv as INV` compiled, and the generated code called `INV`,
    which it never defines: NameError at the first call, and a dump that did not run."""
    from tests.array_reference import check_gradient

    module = module_from_source(tmp_path, LINALG_BY_NAME)
    a, b = np.array([[2.0, 0.5], [0.3, 1.5]]), np.array([1.0, -2.0])
    gradient = grad(module.f, mode=mode)
    check_gradient(module.f, gradient, [a, b], (0, 1))
    standalone: dict = {}
    exec(compile(gradient.source, "<dump>", "exec"), standalone)  # needs only NumPy
    np.testing.assert_array_equal(standalone["f_grad"](a, b)[0], gradient(a, b)[0])


@pytest.mark.parametrize(
    "reduction", ["np.max(x, axis=0)", "np.min(x)", "x.max(0)", "np.min(x, 1, keepdims=True)"]
)
def test_forward_tangents_of_max_and_min_keep_float32(tmp_path, reduction):
    """The tangent divided by the int count of tied extremes, so float32 became float64."""

    module = module_from_source(
        tmp_path, f"import numpy as np\n\n\ndef f(x):\n    return {reduction}\n"
    )
    x = np.array([[3.0, 1.0, 2.5, 2.0], [3.5, 0.0, 5.0, 2.25], [1.0, 4.0, 5.5, 0.5]], np.float32)
    t = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4)
    _, tangent = jvp(module.f, (x,), (t,))
    x64, t64, h = x.astype(np.float64), t.astype(np.float64), 1e-3  # no ties: f is linear
    expected = (module.f(x64 + h * t64) - module.f(x64 - h * t64)) / (2 * h)
    assert np.asarray(tangent).dtype == np.float32
    np.testing.assert_allclose(tangent, expected, rtol=1e-6)
    assert jacobian(module.f, mode="forward")(x).dtype == np.float32


MATMUL_OF_LISTS = """
import numpy as np


def f(a, v):
    return np.sum((a @ v) ** 2)
"""


def test_a_matmul_of_a_nested_list_differentiates_the_array_numpy_reads(tmp_path):
    """NumPy's `@` reads a nested list as an array; the adjoint helpers took a list (no
    `ndim`) for a scalar, and the gradient was wrong for both arguments."""
    module = module_from_source(tmp_path, MATMUL_OF_LISTS)
    a, v = [[1.0, 2.0], [3.0, 4.0]], np.array([10.0, 20.0])
    r = np.array(a) @ v  # d/da sum(r**2) = 2 r v^T; d/dv = 2 a^T r
    expected = (2.0 * np.outer(r, v), 2.0 * np.array(a).T @ r)
    for got in (grad(module.f)(a, v), vjp(module.f, a, v)[1](1.0)):
        np.testing.assert_allclose(got[0], expected[0], rtol=1e-12)
        np.testing.assert_allclose(got[1], expected[1], rtol=1e-12)
    np.testing.assert_allclose(hessian(module.f, wrt=1)(a, v), 2.0 * np.array(a).T @ a)


IN_PLACE_CALLS = [  # (a statement, the call's callee: where the error points)
    ("_ = np.fill_diagonal(a, 0.0)", "np.fill_diagonal"),
    ("_ = np.copyto(a, w)", "np.copyto"),
    ("_ = np.put(a, 0, 1.0)", "np.put"),
    ("_ = np.putmask(a, a > 1.0, 0.0)", "np.putmask"),
    ("_ = np.place(a, a > 1.0, 0.0)", "np.place"),
    ("_ = FILL(a, 0.0)", "FILL"),
    ("_ = a.fill(0.0)", "a.fill"),
    ("_ = a.sort()", "a.sort"),
    ("_ = a.partition(1)", "a.partition"),
    ("_ = a.__imul__(2.0)", "a.__imul__"),
    ("k = np.sum(a) + (np.copyto(a, w) is None)", "np.copyto"),
    ("if np.copyto(a, w) is None:\n        k = 1.0", "np.copyto"),
    ("while a.sort() is not None:\n        pass", "a.sort"),
    ("_ = np.random.default_rng(0).shuffle(a)", "np.random.default_rng(0).shuffle"),
    ("_ = np.take(w * 0.0, [0, 1], out=a)", "np.take"),
    ("_ = np.random.default_rng(0).random(out=a)", "np.random.default_rng(0).random"),
]


@pytest.mark.parametrize(("statement", "callee"), IN_PLACE_CALLS)
def test_a_call_changing_an_array_in_place_is_refused_where_its_result_is_kept(
    tmp_path, statement, callee
):
    """Refused as a statement of its own, such a call compiled once its result was kept:
    dead code then, or run before the adjoint read the array, so the gradient (and jvp's
    value) ignored the change or read the changed array."""
    source = (
        "import numpy as np\nfrom numpy import fill_diagonal as FILL\n\n\n"
        f"def f(w):\n    a = w * 2.0\n    {statement}\n    return np.sum(a ** 2)\n"
    )
    module = module_from_source(tmp_path, source)
    with pytest.raises(
        UnsupportedSyntaxError, match=r"changes an array \(or list\) in place"
    ) as info:
        grad(module.f)
    column = source.splitlines()[6].index(callee + "(") + 1
    assert str(info.value).startswith(f"{module.__file__}:7:{column}:")


COMPLEX_ABS = """
import numpy as np


def f(z):
    return np.sum(np.abs(z * z))


def g(x):
    return np.sin(x) * 2.0


def h(x, c):
    return np.sum(x * c)
"""


def test_complex_arrays_are_refused_when_called(tmp_path):
    """The rules are real ones: np.abs's adjoint is g * z / |z| while z * z passes g * 2z
    back (not its conjugate), so grad of sum(|z * z|) gave [-4.4-0.8j, ...], in no
    convention (PyTorch and finite differences give 2z, JAX its conjugate)."""
    module = module_from_source(tmp_path, COMPLEX_ABS)
    z = np.array([1 + 2j, -0.5 + 0.3j])
    calls = [
        lambda: grad(module.f)(z),
        lambda: grad(module.f, mode="forward")(z),
        lambda: jvp(module.f, (z,), (z,)),
        lambda: vjp(module.f, z)[1](1.0),
        lambda: jacobian(module.f)(z),
        lambda: hessian(module.f)(z),
    ]
    for call in calls:
        with pytest.raises(TypeError, match="only real arrays are differentiated"):
            call()
    x = z.real  # real values still differentiate: d/dx sum(x^2) = 2x
    np.testing.assert_allclose(grad(module.f)(x), 2.0 * x)
    # A complex value that is not the argument: a cotangent, a parameter not differentiated
    # (the complex adjoint was cast to the argument's real dtype, its imaginary part lost).
    with pytest.raises(TypeError, match="only real arrays are differentiated"):
        vjp(module.g, x)[1](np.array([1j, 0.0]))
    with pytest.raises(TypeError, match="only real arrays are differentiated"):
        grad(module.h, wrt="x")(x, np.array([1j, 1.0]))


VAR_STD = """
import numpy as np


def variance(x):
    return np.var(x)


def spread(x):
    return np.std(x)


def row_variances(x):
    return np.sum(np.var(x, axis=1))
"""


def test_float32_var_and_std_gradients_keep_their_digits(tmp_path):
    """The adjoint is 2 (x - mean) / n: with x near 1000 and spread 0.01, float32's mean is
    off by as much as the spread, and the gradient lost 3 digits (1.2e-3; JAX 6e-8)."""
    module = module_from_source(tmp_path, VAR_STD)
    rng = np.random.default_rng(0)
    x = (1000.0 + 0.01 * rng.standard_normal((4, 250))).astype(np.float32)
    wide = x.astype(np.float64)  # the same values, and float64 arithmetic for the reference
    deviation = wide - wide.mean()
    rows = wide - wide.mean(axis=1, keepdims=True)
    references = {
        "variance": 2.0 * deviation / wide.size,
        "spread": deviation / (wide.size * wide.std()),
        "row_variances": 2.0 * rows / rows.shape[1],
    }
    for name, reference in references.items():
        got = grad(getattr(module, name))(x)
        assert got.dtype == np.float32
        error = np.max(np.abs(got - reference)) / np.max(np.abs(reference))
        assert error < 2e-6, (name, error)


UNTAKEN_PART_READS = """
import numpy as np


def first_or_zero(x):
    if x.shape[0] == 0:
        return 0.0
    return np.sum(x[0] ** 2) + np.sum(x)


def optional_bias(p, x):
    y = p["W"] @ x
    if len(p) > 1:
        y = y + p["b"]
    return np.sum(np.tanh(y))


def scalar_or_pair(x):
    if np.ndim(x) == 0:
        return x * x
    return x[0] * x[1]


def first_times_all(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i] * x[0]
    return s
"""


def test_a_part_read_only_on_a_path_not_taken_is_not_evaluated(tmp_path):
    """The zero adjoint of `x[0]` (of `p["b"]`) started as np.zeros_like(x[0]) on the path
    that never reads it, where it does not exist: IndexError, KeyError and TypeError from
    the gradient of a function that ran."""
    m = module_from_source(tmp_path, UNTAKEN_PART_READS)
    empty = np.zeros((0, 3))
    for gradient in (grad(m.first_or_zero), lambda x: vjp(m.first_or_zero, x)[1](1.0)[0]):
        out = gradient(empty)
        assert out.shape == (0, 3)
    assert hessian(m.first_or_zero)(empty).shape == (0, 3, 0, 3)
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    expected = np.ones_like(x)
    expected[0] += 2 * x[0]
    np.testing.assert_allclose(grad(m.first_or_zero)(x), expected)
    W, v = np.ones((2, 3)), np.array([0.1, 0.2, 0.3])
    t = np.tanh(W @ v)
    gW = grad(m.optional_bias, wrt="p")({"W": W}, v)
    assert set(gW) == {"W"}
    np.testing.assert_allclose(gW["W"], np.outer(1 - t * t, v))
    assert grad(m.scalar_or_pair)(3.0) == pytest.approx(6.0)
    np.testing.assert_allclose(grad(m.scalar_or_pair)(np.array([2.0, 5.0])), [5.0, 2.0])
    assert grad(m.first_times_all)(np.zeros(0)).shape == (0,)
    np.testing.assert_allclose(grad(m.first_times_all)(np.array([2.0, 3.0])), [7.0, 2.0])


FLAGS_AND_INDICES = """
import numpy as np


def by_mode(x, mode):
    if mode == "sum":
        return np.sum(x * x)
    return np.max(x)


def of_a_part(x, index):
    return np.sum(x[index] ** 2)
"""


@pytest.mark.parametrize(
    ("name", "other"), [("by_mode", "sum"), ("of_a_part", ...), ("of_a_part", slice(0, 2))]
)
def test_vjp_gives_a_flag_or_an_index_argument_a_zero_cotangent(tmp_path, name, other):
    """Its cotangent was built as zeros of dtype np.result_type("sum", 1.0): "data type
    'sum' not understood" (and "Cannot interpret 'Ellipsis' as a data type")."""
    fn = getattr(module_from_source(tmp_path, FLAGS_AND_INDICES), name)
    x = np.array([1.0, -2.0])
    value, pullback = vjp(fn, x, other)
    assert value == fn(x, other) == 5.0
    cotangent_x, cotangent_other = pullback(1.0)
    np.testing.assert_allclose(cotangent_x, 2.0 * x)
    assert cotangent_other == 0.0
