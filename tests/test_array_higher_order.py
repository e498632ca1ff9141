"""Second and third derivatives of NumPy code: ``hessian`` and ``grad`` of a generated gradient.

A generated array gradient calls helpers (``unbroadcast``, ``matmul_adjoint_a``, ...); read
back by the compiler they are primitives with rules of their own (``rules/helper_rules.py``).
Every corpus function (``tests/corpus/arrays.py``), structured parameters included, gets
its Hessian checked against Richardson-refined central differences of a gradient that is
itself verified: the hand-written backward where the corpus has one, else adcompile's
first-order gradient (checked against differences of the function in
``test_array_gradients.py``). A structured parameter's Hessian is structured as
``jax.hessian``'s is. Mixed and third derivatives are checked against closed forms.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

import adcompile
from adcompile import NoDerivativeError, grad, hessian
from tests.array_reference import tree_leaves, tree_map, tree_replace
from tests.corpus.arrays import CASES, ArrayCase
from tests.test_array_gradients import _loop_cases


def _args(case: ArrayCase) -> tuple[Any, ...]:
    """The case's inputs, drawn from a generator seeded by its name."""
    return case.make_args(np.random.default_rng([9, sum(case.name.encode())]))


def _structured(case: ArrayCase, args: tuple[Any, ...]) -> bool:
    """True if some differentiated parameter is a dict, list or tuple."""
    return any(isinstance(args[k], dict | list | tuple) for k in case.wrt)


PLAIN = [c for c in CASES if not _structured(c, _args(c))]


def _moved(args: Sequence[Any], k: int, path: tuple, index: tuple, delta: float) -> list[Any]:
    """``args`` with element ``index`` of the leaf at ``path`` of argument ``k`` moved by
    ``delta`` (in float64; a number stays a number)."""
    leaf = np.array(dict(tree_leaves(args[k]))[path], dtype=np.float64)
    leaf[index] += delta
    moved = list(args)
    moved[k] = tree_replace(args[k], path, leaf if leaf.ndim else float(leaf))
    return moved


def _at(tree: Any, path: tuple) -> Any:
    """The item of ``tree`` at ``path``."""
    for key in path:
        tree = tree[key]
    return tree


def assert_hessian_matches_differences(
    got: Any,
    gradient: Callable[..., Any],
    args: Sequence[Any],
    wrt: Sequence[int],
    **tolerance: float,
) -> None:
    """Every element of the Hessian blocks ``got[i][j]`` (structured like ``jax.hessian``'s: the
    output's structure, then the input's) against Richardson-refined central differences of
    ``gradient``, which returns one partial (a tree like its parameter) per ``wrt`` index."""
    for j, k in enumerate(wrt):
        for path, leaf in tree_leaves(args[k]):
            for index in np.ndindex(np.shape(leaf)):
                h = 1e-4 * max(1.0, abs(float(np.asarray(leaf)[index])))

                def central(
                    step: float, k: int = k, path: tuple = path, index: tuple = index
                ) -> list:
                    plus = gradient(*_moved(args, k, path, index, step))
                    minus = gradient(*_moved(args, k, path, index, -step))
                    return [tree_map(np.asarray, p) for p in plus], [
                        tree_map(np.asarray, m) for m in minus
                    ]

                (coarse_p, coarse_m), (fine_p, fine_m) = central(h), central(h / 2)
                for i in range(len(wrt)):
                    for out_path, _ in tree_leaves(coarse_p[i]):
                        coarse = (_at(coarse_p[i], out_path) - _at(coarse_m[i], out_path)) / (2 * h)
                        fine = (_at(fine_p[i], out_path) - _at(fine_m[i], out_path)) / h
                        expected = (4 * fine - coarse) / 3
                        block = np.asarray(_at(_at(got[i][j], out_path), path))
                        assert block.shape == np.shape(expected) + np.shape(leaf), (
                            i,
                            j,
                            out_path,
                            path,
                        )
                        np.testing.assert_allclose(block[(..., *index)], expected, **tolerance)


def _as_blocks(result: Any) -> list[list[Any]]:
    """A Hessian result for a tuple ``wrt`` (a tuple of rows) as a list of lists of blocks."""
    return [list(row) for row in result]


def _reference_gradient(case: ArrayCase) -> Callable[..., Any]:
    """The hand-written backward, or else adcompile's verified first-order gradient."""
    if case.grad is not None:
        return case.grad
    return grad(case.fn, wrt=tuple(case.wrt))  # a tuple wrt: a tuple of partials


def _tolerance(args: Sequence[Any]) -> dict[str, float]:
    """float32 inputs: compare to float32 precision."""
    single = any(getattr(a, "dtype", None) == np.float32 for a in args)
    return {"rtol": 2e-3, "atol": 2e-3} if single else {"rtol": 1e-6, "atol": 1e-6}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hessian_matches_differences_of_a_verified_gradient(case: ArrayCase) -> None:
    args = _args(case)
    wrt = tuple(case.wrt)
    got = _as_blocks(hessian(case.fn, wrt=wrt)(*args))
    reference = _reference_gradient(case)
    assert_hessian_matches_differences(got, reference, args, wrt, **_tolerance(args))


@pytest.mark.parametrize("case", PLAIN, ids=[c.name for c in PLAIN])
def test_hessian_blocks_are_symmetric(case: ArrayCase) -> None:
    args = _args(case)
    wrt = tuple(case.wrt)
    blocks = _as_blocks(hessian(case.fn, wrt=wrt)(*args))
    for i, k in enumerate(wrt):
        for j, m in enumerate(wrt):
            n_i, n_j = np.size(args[k]), np.size(args[m])
            left = np.reshape(blocks[i][j], (n_i, n_j))
            right = np.reshape(blocks[j][i], (n_j, n_i))
            np.testing.assert_allclose(left, right.T, **_tolerance(args))


ARRAY_FIRST = [c for c in PLAIN if np.ndim(_args(c)[c.wrt[0]]) > 0]


@pytest.mark.parametrize("case", ARRAY_FIRST, ids=[c.name for c in ARRAY_FIRST])
def test_reverse_over_reverse_agrees_with_forward_over_reverse(case: ArrayCase) -> None:
    """``jacobian(grad(f))`` in reverse mode runs the helpers' transposes; hessian, tangents."""
    args = _args(case)
    k = case.wrt[0]
    by_vjps = adcompile.jacobian(grad(case.fn, wrt=k), wrt=k)(*args)
    np.testing.assert_allclose(by_vjps, hessian(case.fn, wrt=k)(*args), **_tolerance(args))


def dict_loss(params, x):
    h = np.tanh(params["W"] @ x + params["b"])
    return np.sum(h * h) + params["scale"] * np.sum(x)


def test_hessian_of_a_dict_is_a_dict_of_dicts_like_jax() -> None:
    rng = np.random.default_rng(8)
    params = {"W": rng.normal(size=(3, 2)), "b": rng.normal(size=3), "scale": 0.5}
    x = rng.normal(size=2)
    blocks = hessian(dict_loss, wrt="params")(params, x)
    assert list(blocks) == ["W", "b", "scale"]
    assert all(list(row) == ["W", "b", "scale"] for row in blocks.values())
    assert blocks["W"]["b"].shape == (3, 2, 3)
    assert blocks["scale"]["W"].shape == (3, 2)
    assert np.shape(blocks["scale"]["scale"]) == ()
    compiled = grad(dict_loss, wrt="params")
    assert_hessian_matches_differences(
        [[blocks]], lambda *a: (compiled(*a),), (params, x), (0,), rtol=1e-6, atol=1e-7
    )


def product_of_scaled(s, x):
    return np.prod(s * x)


def test_third_derivatives_through_np_prod_say_so() -> None:
    second = grad(grad(product_of_scaled, wrt="s"), wrt="s")
    x = np.array([0.5, 2.0, 0.0, 1.5])
    s = 0.8
    # d2/ds2 prod(s x) = n (n - 1) s^(n - 2) prod(x): zero here (x has a zero), exactly.
    assert second(s, x) == 0.0
    x[2] = 3.0
    np.testing.assert_allclose(second(s, x), 12 * s**2 * np.prod(x), rtol=1e-13)
    with pytest.raises(NoDerivativeError, match=r"third derivative of np\.prod"):
        grad(second, wrt="s")


def running_product_of_scaled(s, x):
    return np.sum(np.cumprod(s * x))


def test_third_derivatives_through_np_cumprod_say_so() -> None:
    second = grad(grad(running_product_of_scaled, wrt="s"), wrt="s")
    x = np.array([0.5, 2.0, -1.5, 0.0, 3.0])
    s = 0.8
    # d2/ds2 of sum_i s^(i+1) prod(x[:i+1]) is sum_i (i+1) i s^(i-1) prod(x[:i+1]); the
    # products from the zero on vanish, exactly.
    i = np.arange(len(x))
    expected = np.sum((i + 1) * i * s ** (i - 1.0) * np.cumprod(x))
    np.testing.assert_allclose(second(s, x), expected, rtol=1e-13)
    with pytest.raises(NoDerivativeError, match=r"third derivative of np\.cumprod"):
        grad(second, wrt="s")


@pytest.mark.parametrize(
    ("fn", "args", "wrt"), _loop_cases(), ids=lambda v: getattr(v, "__name__", "")
)
def test_hessian_through_loops_and_branches(fn, args, wrt) -> None:
    got = _as_blocks(hessian(fn, wrt=wrt)(*args))
    assert_hessian_matches_differences(got, grad(fn, wrt=wrt), args, wrt, rtol=1e-6, atol=1e-6)


# ----- grad of grad, mixed partials and third derivatives, against closed forms -------------
def sine_sum(s, x):
    return np.sum(np.sin(s * x) * x)


def test_second_and_third_derivatives_in_a_scalar_parameter() -> None:
    x = np.random.default_rng(3).normal(size=5)
    s = 0.7
    d1 = grad(sine_sum, wrt="s")
    d2 = grad(d1, wrt="s")
    d3 = grad(d2, wrt="s")
    np.testing.assert_allclose(d1(s, x), np.sum(x * x * np.cos(s * x)), rtol=1e-12)
    np.testing.assert_allclose(d2(s, x), -np.sum(x**3 * np.sin(s * x)), rtol=1e-12)
    np.testing.assert_allclose(d3(s, x), -np.sum(x**4 * np.cos(s * x)), rtol=1e-12)


def test_mixed_partials_of_array_code() -> None:
    x = np.random.default_rng(4).normal(size=5)
    s = -0.4
    mixed = grad(grad(sine_sum, wrt="s"), wrt="x")(s, x)
    expected = 2 * x * np.cos(s * x) - s * x * x * np.sin(s * x)
    np.testing.assert_allclose(mixed, expected, rtol=1e-12, atol=1e-15)
    both = hessian(sine_sum)(s, x)
    np.testing.assert_allclose(both[0][1], expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(both[1][0], expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(both[0][0], -np.sum(x**3 * np.sin(s * x)), rtol=1e-12)


def quadratic_form(A, x):
    return x @ A @ x + np.sum(np.tanh(A))


def test_hessian_of_a_quadratic_form_is_a_plus_a_transpose() -> None:
    rng = np.random.default_rng(5)
    A, x = rng.normal(size=(4, 4)), rng.normal(size=4)
    np.testing.assert_allclose(hessian(quadratic_form, wrt="x")(A, x), A + A.T, rtol=1e-13)
    # d2/dA2 of sum(tanh(A)) is diagonal: -2 tanh(a) (1 - tanh(a)^2) per element.
    t = np.tanh(A)
    expected = np.diag((-2 * t * (1 - t * t)).ravel()).reshape(4, 4, 4, 4)
    np.testing.assert_allclose(hessian(quadratic_form, wrt="A")(A, x), expected, atol=1e-13)


def test_grad_of_an_array_valued_gradient_says_to_reduce() -> None:
    second = grad(grad(lambda x: np.sum(x**3)))
    with pytest.raises(TypeError, match="returning a scalar"):
        second(np.ones(3))


def test_hessian_dump_is_a_standalone_module() -> None:
    text = hessian(quadratic_form, wrt="x").source
    first = text.splitlines()[0]  # names the user's function, not the generated module
    assert first.startswith("# jvp of quadratic_form_grad (from quadratic_form in "), first
    assert "test_array_higher_order.py, line " in first
    assert "adcompile" not in text.split("\n", 2)[2]  # past the header comment
    namespace: dict[str, Any] = {}
    exec(compile(text, "<hessian dump>", "exec"), namespace)
    jvp_of_grad = next(v for k, v in namespace.items() if k.endswith("_grad_jvp"))
    rng = np.random.default_rng(6)
    A, x, u = rng.normal(size=(4, 4)), rng.normal(size=4), rng.normal(size=4)
    _, column = jvp_of_grad(A, x, u)
    np.testing.assert_allclose(column, (A + A.T) @ u, rtol=1e-13)


def test_hessian_of_float32_code_stays_float32() -> None:
    x = np.linspace(-1, 1, 4, dtype=np.float32)
    h = hessian(lambda x: np.sum(np.sin(x) * x))(x)
    assert h.dtype == np.float32
    np.testing.assert_allclose(h, np.diag(2 * np.cos(x) - x * np.sin(x)), rtol=1e-5, atol=1e-6)


def running_sine_product(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sin(x[i]) * x[i - 1]
    return s


def accumulated_in_float64(x):
    acc = np.zeros(3)
    for i in range(2):
        acc = acc + x * x * (i + 1.0)
    return np.sum(acc)


def test_hessian_blocks_of_a_loop_have_the_parameters_float_dtype() -> None:
    """A float64 accumulator (np.zeros) made the loop's Hessian float64 for a float32 input,
    while its gradient (and a loop-free Hessian) is float32."""
    x = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    h = hessian(accumulated_in_float64)(x)
    assert h.dtype == np.float32 and grad(accumulated_in_float64)(x).dtype == np.float32
    np.testing.assert_allclose(h, np.diag(np.full(3, 6.0)), rtol=1e-7)
    ints = hessian(accumulated_in_float64)(np.array([1, 2, 3]))
    assert ints.dtype == np.float64  # int parameters: float partials


def test_hessian_of_float32_code_with_a_loop_stays_float32() -> None:
    """A loop's Hessian takes tangents of the jvp, whose ``s = 0.0`` got the zero tangent
    ``np.zeros_like(0.0)``: a float64 array that made every float32 tangent float64."""
    x = np.array([0.1, 0.5, -0.3, 0.7], dtype=np.float32)
    _, slope = adcompile.jvp(running_sine_product, (x,), (np.ones_like(x),))
    assert slope.dtype == np.float32
    h = hessian(running_sine_product)(x)
    assert h.dtype == np.float32
    expected = hessian(running_sine_product)(x.astype(np.float64))
    np.testing.assert_allclose(h, expected, rtol=1e-5, atol=1e-6)
    n = len(x)  # closed form: -sin(x_i) x_(i-1) on the diagonal, cos(x_i) cos(x_(i-1)) off it
    closed = np.diag(-np.sin(x.astype(np.float64)) * np.roll(x, 1))
    for i in range(n):
        j = (i - 1) % n
        closed[i, j] += np.cos(float(x[i]))
        closed[j, i] += np.cos(float(x[i]))
    np.testing.assert_allclose(expected, closed, rtol=1e-12)


def test_jvp_of_a_generated_gradient_names_stay_fresh() -> None:
    def f(x, unbroadcast, b_x):
        return np.sum(x * unbroadcast * b_x)

    jac = adcompile.jacobian(grad(f, wrt="x"), wrt="unbroadcast", mode="forward")
    x, u, b = np.ones(3), np.arange(3.0), np.full(3, 2.0)
    np.testing.assert_allclose(jac(x, u, b), np.diag(b), rtol=0, atol=0)


def loop_with_dict(params, x):
    for _ in range(3):
        x = np.tanh(params["W"] @ x + params["b"])
    return np.sum(x * x)


def test_hessian_of_a_dict_through_a_loop() -> None:
    rng = np.random.default_rng(12)
    params = {"W": 0.5 * rng.normal(size=(2, 2)), "b": rng.normal(size=2)}
    x = rng.normal(size=2)
    blocks = hessian(loop_with_dict, wrt=("params", "x"))(params, x)
    assert blocks[0][0]["W"]["b"].shape == (2, 2, 2)
    assert blocks[0][1]["b"].shape == (2, 2)
    assert blocks[1][0]["W"].shape == (2, 2, 2)
    gradient = grad(loop_with_dict, wrt=("params", "x"))
    assert_hessian_matches_differences(blocks, gradient, (params, x), (0, 1), rtol=1e-6, atol=1e-7)


def loop_times_index(x, k):
    for i in range(3):
        x = x + 0.1 * i * np.sin(k * x)
    return np.sum(x**2)


def test_hessian_through_a_loop_index_times_an_array() -> None:
    """The tangent code spreads a scalar tangent with broadcast_like; its own rules let the
    second derivative pass (it was refused, located in generated code)."""
    args = (np.array([0.5, -1.0, 1.5]), 0.7)
    blocks = hessian(loop_times_index)(*args)
    compiled = grad(loop_times_index)
    assert_hessian_matches_differences(blocks, compiled, args, (0, 1), rtol=1e-6, atol=1e-7)


def linear_dict(p):
    return np.sum(p["a"] * 2.0) + np.sum(p["b"])


def linear_pair(p):
    a, b = p
    return np.sum(a) + b


def test_hessian_of_a_linear_function_of_a_structure_is_zero_blocks() -> None:
    """A constant gradient's tangent is zeros in its structure (np.zeros_like of a dict was
    an object array; of a ragged tuple, a ValueError)."""
    blocks = hessian(linear_dict)({"a": np.ones(3), "b": np.ones(2)})
    shapes = {(r, c): np.shape(blocks[r][c]) for r in "ab" for c in "ab"}
    assert shapes == {
        ("a", "a"): (3, 3),
        ("a", "b"): (3, 2),
        ("b", "a"): (2, 3),
        ("b", "b"): (2, 2),
    }
    assert all(not np.any(blocks[r][c]) for r in "ab" for c in "ab")
    (aa, ab), (ba, bb) = hessian(linear_pair)((np.ones(3), 0.5))
    assert [np.shape(v) for v in (aa, ab, ba, bb)] == [(3, 3), (3,), (3,), ()]
    assert not any(np.any(v) for v in (aa, ab, ba, bb))


def looped_tanh(s, x):
    h = x
    for _i in range(3):
        h = np.tanh(s * h + 0.1)
    return np.sum(h**2)


def test_grad_of_a_looped_array_gradient_points_to_hessian() -> None:
    with pytest.raises(TypeError, match=r"use hessian\(looped_tanh\)"):
        grad(grad(looped_tanh, wrt="s"), wrt="s")
    x, step = np.array([0.3, -0.8, 1.1]), 1e-5
    gradient = grad(looped_tanh, wrt="s")
    central = (gradient(0.7 + step, x) - gradient(0.7 - step, x)) / (2 * step)
    assert hessian(looped_tanh, wrt="s")(0.7, x) == pytest.approx(central, rel=1e-7)


def halved_or_squashed(v):
    if np.sum(v) > 1.0:
        return v * 0.5
    return np.tanh(v)


def calls_a_helper_with_an_early_return_in_a_branch(x):
    if np.sum(x) > 0:  # noqa: SIM108 -- an if statement (a branch) is under test
        y = halved_or_squashed(x)
    else:
        y = x * 2.0
    return np.sum(y * x)


def test_hessian_through_a_helper_that_returns_early_inside_a_branch() -> None:
    """The gradient binds the helper's skipped result to the placeholder None and reads it
    under the same test; compiled again, that read was taken for one that may be unbound, and
    its check raised UnboundLocalError on the placeholder."""
    fn = calls_a_helper_with_an_early_return_in_a_branch
    for x in (np.array([0.3, 0.2, 0.1]), np.array([0.9, 0.5, 0.4]), np.array([-0.3, 0.1, 0.1])):
        s = np.sum(x)
        if s <= 0:
            expected = np.diag(np.full(3, 4.0))
        elif s > 1.0:
            expected = np.diag(np.full(3, 1.0))
        else:  # d2/dx2 of tanh(x) x: 2 sech^2 x - 2 x tanh x sech^2 x
            sech2 = 1.0 - np.tanh(x) ** 2
            expected = np.diag(2.0 * sech2 - 2.0 * x * np.tanh(x) * sech2)
        np.testing.assert_allclose(hessian(fn)(x), expected, rtol=1e-12, atol=1e-15)


def test_a_constant_made_by_np_array_goes_through_hessian(tmp_path):
    # grad kept `x[np.array(1)]`; read back for the Hessian, `np.array(1)` (an argument that
    # is no list) was refused, at a line of the generated gradient.
    from tests.helpers import module_from_source

    module = module_from_source(
        tmp_path,
        "import numpy as np\n\n\ndef f(x):\n"
        "    return np.sum(x[np.array(1)] ** 3) * np.array(2.0)\n",
    )
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(grad(module.f)(x), [0.0, 24.0, 0.0], rtol=1e-15)
    np.testing.assert_allclose(hessian(module.f)(x), np.diag([0.0, 24.0, 0.0]), rtol=1e-15)


def test_an_index_tuple_is_array_syntax_in_a_function_without_numpy(tmp_path):
    # `A[1, 2]` indexes no list or tuple; without an `np.` call the function was compiled
    # for numbers and refused ("indexing a sequence gives its items no derivative").
    from tests.helpers import module_from_source

    module = module_from_source(
        tmp_path, "def f(A):\n    return A[1, 2] * A[0, 0] + A[-1, -1] ** 2\n"
    )
    A = np.arange(1.0, 13.0).reshape(3, 4)
    expected = np.zeros((3, 4))
    expected[1, 2], expected[0, 0], expected[2, 3] = A[0, 0], A[1, 2], 2.0 * A[2, 3]
    np.testing.assert_allclose(grad(module.f)(A), expected, rtol=1e-15)
    H = hessian(module.f)(A)
    assert H.shape == (3, 4, 3, 4)
    assert H[1, 2, 0, 0] == H[0, 0, 1, 2] == 1.0 and H[2, 3, 2, 3] == 2.0
    assert np.count_nonzero(H) == 3


def test_a_dict_read_with_a_tuple_key_is_a_constant_or_a_clear_refusal(tmp_path):
    # An index tuple makes array code: a dict left out by wrt still reads as Python reads it,
    # and differentiated, the refusal names the tuple key.
    from tests.helpers import module_from_source

    module = module_from_source(tmp_path, "def f(x, d):\n    return x * d[1, 2] + x * x\n")
    assert grad(module.f, wrt="x")(1.5, {(1, 2): 3.0}) == pytest.approx(3.0 + 2 * 1.5)
    with pytest.raises(TypeError, match="or a tuple key is not supported yet"):
        grad(module.f)(1.5, {(1, 2): 3.0})
