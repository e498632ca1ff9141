"""A corpus of NumPy functions with scalar outputs, for the array support of issue 4.

Nothing here uses adcompile: the functions are plain NumPy code that the array compiler will
have to differentiate, checked today only against finite differences (tests/array_reference.py).
Each :class:`ArrayCase` holds the function, ``make_args(rng)`` drawing its inputs (kept away
from kinks, ties and singular matrices by at least 0.05, far more than the finite-difference
step), a description of the inputs, ``wrt`` (the indices of the differentiated parameters; the
others are data such as int indices, masks and labels), feature tags (see ``FEATURES``) and,
for many, ``grad``: a hand-written NumPy backward returning one gradient per ``wrt`` index, in
the structure, shape and dtype of that input (the "hand-written backward" of the benchmark).

The functions are defined at module level, one per entry, so ``inspect.getsource`` works on
each; they use only ``np`` and their parameters (and, like the scalar corpora, carry no
annotations or docstrings of their own). ``bench_args(rng)`` draws the benchmark sizes of
issue 4 for the MLP loss and least squares.

Hazards the inputs avoid on purpose (a compiler rule must still define them): ties of
max/min/argmax (``distinct`` spaces values >= 0.1 apart), kinks of abs/maximum/minimum/clip,
floor jumps, and ill-conditioned matrices (det/inv use I + small noise or SPD matrices). Where a
parameter only feeds argmax or floor (``argmax_picks_other``'s ``scores``), its reference
gradient is exactly zero. ``float32_mixed_float64`` promotes to float64, yet the gradient of
its float32 input must still be float32.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Args = tuple[object, ...]
MakeArgs = Callable[[np.random.Generator], Args]


@dataclass(frozen=True)
class ArrayCase:
    """One corpus entry: a NumPy function of arrays/pytrees returning a scalar."""

    name: str
    fn: Callable[..., object]
    make_args: MakeArgs
    inputs: str
    wrt: tuple[int, ...]
    tags: tuple[str, ...]
    grad: Callable[..., tuple[object, ...]] | None = None


CASES: list[ArrayCase] = []


def add(
    fn: Callable[..., object],
    make_args: MakeArgs,
    inputs: str,
    tags: tuple[str, ...],
    wrt: tuple[int, ...] = (0,),
    grad: Callable[..., tuple[object, ...]] | None = None,
) -> None:
    """Register ``fn`` as a corpus entry."""
    CASES.append(ArrayCase(fn.__name__, fn, make_args, inputs, wrt, tags, grad))


# --- input generators ---------------------------------------------------------------------------


def normal(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Standard normal float64 values of ``shape``."""
    return rng.standard_normal(shape)


def uniform(rng: np.random.Generator, lo: float, hi: float, *shape: int) -> np.ndarray:
    """Uniform float64 values in [lo, hi) of ``shape``."""
    return rng.uniform(lo, hi, shape)


def away(rng: np.random.Generator, *shape: int, gap: float = 0.1, bound: float = 2.0) -> np.ndarray:
    """Values with ``gap <= |v| < bound`` and random signs (away from the kink at 0)."""
    return rng.choice([-1.0, 1.0], shape) * rng.uniform(gap, bound, shape)


def distinct(rng: np.random.Generator, *shape: int, spacing: float = 0.2) -> np.ndarray:
    """Values of ``shape`` at least ``spacing / 2`` apart (no ties for max, min, argmax)."""
    n = int(np.prod(shape))
    grid = (rng.permutation(n) - n / 2) * spacing
    return (grid + rng.uniform(-spacing / 4, spacing / 4, n)).reshape(shape)


def invertible(rng: np.random.Generator, n: int) -> np.ndarray:
    """A well-conditioned n x n matrix (identity plus a small perturbation, det > 0)."""
    return np.eye(n) + 0.3 * rng.standard_normal((n, n)) / np.sqrt(n)


def spd(rng: np.random.Generator, n: int) -> np.ndarray:
    """A symmetric positive-definite n x n matrix with eigenvalues >= 1."""
    m = rng.standard_normal((n, n))
    return m @ m.T / n + np.eye(n)


def one_hot(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """An (n, k) float64 matrix of one-hot rows."""
    return np.eye(k)[rng.integers(0, k, n)]


def f32(a: np.ndarray) -> np.ndarray:
    """``a`` as float32."""
    return a.astype(np.float32)


# --- elementwise --------------------------------------------------------------------------------


def add_sub_mul(x, y):
    return np.sum(x + y - x * y)


def add_sub_mul_grad(x, y):
    return 1.0 - y, 1.0 - x


add(
    add_sub_mul,
    lambda rng: (normal(rng, 3, 4), normal(rng, 3, 4)),
    "x, y: (3, 4) float64",
    ("op:+", "op:-", "op:*"),
    (0, 1),
    add_sub_mul_grad,
)


def div_and_power(x, y):
    return np.sum(x / y + x**3)


def div_and_power_grad(x, y):
    return 1.0 / y + 3.0 * x**2, -x / y**2


add(
    div_and_power,
    lambda rng: (normal(rng, 5), uniform(rng, 0.5, 2.0, 5)),
    "x: (5,), y: (5,) in [0.5, 2)",
    ("op:/", "op:**"),
    (0, 1),
    div_and_power_grad,
)


def unary_minus(x, y):
    return np.sum(-x * y) - np.sum(-(x**2))


def unary_minus_grad(x, y):
    return -y + 2.0 * x, -x


add(
    unary_minus,
    lambda rng: (normal(rng, 2, 3), normal(rng, 2, 3)),
    "x, y: (2, 3)",
    ("op:neg",),
    (0, 1),
    unary_minus_grad,
)


def array_power_array(x, y):
    return np.sum(x**y)


add(
    array_power_array,
    lambda rng: (uniform(rng, 0.5, 2.0, 4), normal(rng, 4)),
    "x: (4,) in [0.5, 2), y: (4,)",
    ("op:**",),
    (0, 1),
)


def trig(x):
    return np.sum(np.sin(x) * np.cos(x) + np.tan(x))


def trig_grad(x):
    return (np.cos(2.0 * x) + 1.0 / np.cos(x) ** 2,)


add(trig, lambda rng: (uniform(rng, -1.2, 1.2, 3, 3),), "x: (3, 3) in (-1.2, 1.2)",
    ("np.sin", "np.cos", "np.tan"), grad=trig_grad)  # fmt: skip


def exp_and_logs(x, y):
    return np.sum(np.exp(x) + np.log(y) + np.log1p(y) + np.expm1(x))


def exp_and_logs_grad(x, y):
    return 2.0 * np.exp(x), 1.0 / y + 1.0 / (1.0 + y)


add(
    exp_and_logs,
    lambda rng: (normal(rng, 4), uniform(rng, 0.3, 3.0, 4)),
    "x: (4,), y: (4,) in [0.3, 3)",
    ("np.exp", "np.log", "np.log1p", "np.expm1"),
    (0, 1),
    exp_and_logs_grad,
)


def sqrt_tanh(x, y):
    return np.sum(np.sqrt(y) * np.tanh(x))


def sqrt_tanh_grad(x, y):
    return np.sqrt(y) * (1.0 - np.tanh(x) ** 2), np.tanh(x) / (2.0 * np.sqrt(y))


add(
    sqrt_tanh,
    lambda rng: (normal(rng, 2, 3), uniform(rng, 0.2, 2.0, 2, 3)),
    "x: (2, 3), y: (2, 3) in [0.2, 2)",
    ("np.sqrt", "np.tanh"),
    (0, 1),
    sqrt_tanh_grad,
)


def hyperbolic(x):
    return np.sum(np.sinh(x) - np.cosh(x) ** 2)


add(hyperbolic, lambda rng: (normal(rng, 5),), "x: (5,)", ("np.sinh", "np.cosh"))


def inverse_trig(u, x):
    return np.sum(np.arcsin(u) + u * np.arccos(u) + np.arctan(x))


add(
    inverse_trig,
    lambda rng: (uniform(rng, -0.9, 0.9, 4), normal(rng, 4)),
    "u: (4,) in (-0.9, 0.9), x: (4,)",
    ("np.arcsin", "np.arccos", "np.arctan"),
    (0, 1),
)


def arctan2_angles(y, x):
    return np.sum(np.arctan2(y, x) ** 2)


add(
    arctan2_angles,
    lambda rng: (away(rng, 5, gap=0.3), uniform(rng, 0.3, 2.0, 5)),
    "y: (5,) |y| >= 0.3, x: (5,) in [0.3, 2) (away from the branch cut)",
    ("np.arctan2",),
    (0, 1),
)


def abs_weighted(x, y):
    return np.sum(np.abs(x) * y)


def abs_weighted_grad(x, y):
    return np.sign(x) * y, np.abs(x)


add(
    abs_weighted,
    lambda rng: (away(rng, 3, 4), normal(rng, 3, 4)),
    "x: (3, 4) with |x| >= 0.1 (kink at 0), y: (3, 4)",
    ("np.abs",),
    (0, 1),
    abs_weighted_grad,
)


def maximum_minimum(x, y):
    return np.sum(np.maximum(x, y) - np.minimum(x, 0.5) * y)


def _apart(rng: np.random.Generator) -> Args:
    """x away from 0.5, and y at least 0.1 from x."""
    x = 0.5 + away(rng, 6)
    return x, x + away(rng, 6, gap=0.1, bound=1.0)


add(
    maximum_minimum,
    _apart,
    "x: (6,) with |x - 0.5| >= 0.1, y: (6,) with |y - x| >= 0.1 (no ties)",
    ("np.maximum", "np.minimum", "broadcast:scalar-array"),
    (0, 1),
)


def where_branches(x, y):
    return np.sum(np.where(x > 0, x**2, np.sin(y)))


def where_branches_grad(x, y):
    return np.where(x > 0, 2.0 * x, 0.0), np.where(x > 0, 0.0, np.cos(y))


add(
    where_branches,
    lambda rng: (away(rng, 8), normal(rng, 8)),
    "x: (8,) with |x| >= 0.1, y: (8,)",
    ("np.where", "nondiff:comparison"),
    (0, 1),
    where_branches_grad,
)


def clip_weighted(x, y):
    return np.sum(np.clip(x, -0.5, 0.5) * y)


def _clip_args(rng: np.random.Generator) -> Args:
    """x at least 0.05 from the clip bounds +-0.5."""
    x = rng.choice([-1.0, 0.0, 1.0], (3, 3)) + uniform(rng, -0.45, 0.45, 3, 3)
    return x, normal(rng, 3, 3)


add(
    clip_weighted,
    _clip_args,
    "x: (3, 3) at least 0.05 from +-0.5, y: (3, 3)",
    ("np.clip",),
    (0, 1),
)


def square_reciprocal(x, y):
    return np.sum(np.square(x) + np.reciprocal(y))


def square_reciprocal_grad(x, y):
    return 2.0 * x, -1.0 / y**2


add(
    square_reciprocal,
    lambda rng: (normal(rng, 4), uniform(rng, 0.5, 2.0, 4)),
    "x: (4,), y: (4,) in [0.5, 2)",
    ("np.square", "np.reciprocal"),
    (0, 1),
    square_reciprocal_grad,
)


def power_calls(x, y):
    return np.sum(np.power(y, 2.5) + np.power(y, x))


add(
    power_calls,
    lambda rng: (normal(rng, 5), uniform(rng, 0.5, 2.0, 5)),
    "x: (5,), y: (5,) in [0.5, 2)",
    ("np.power",),
    (0, 1),
)


def scalar_params_affine(a, x, b):
    return np.sum((a * x + b) ** 2)


def scalar_params_affine_grad(a, x, b):
    r = 2.0 * (a * x + b)
    return float(np.sum(r * x)), a * r, float(np.sum(r))


add(
    scalar_params_affine,
    lambda rng: (float(rng.normal()), normal(rng, 2, 3), float(rng.normal())),
    "a: float, x: (2, 3), b: float (mixed scalars and arrays)",
    ("broadcast:scalar-array", "mixed:float-param"),
    (0, 1, 2),
    scalar_params_affine_grad,
)


# --- broadcasting -------------------------------------------------------------------------------


def column_plus_row(c, r):
    return np.sum(np.sin(c + r))


def column_plus_row_grad(c, r):
    g = np.cos(c + r)
    return g.sum(axis=1, keepdims=True), g.sum(axis=0, keepdims=True)


add(
    column_plus_row,
    lambda rng: (normal(rng, 4, 1), normal(rng, 1, 5)),
    "c: (4, 1), r: (1, 5)",
    ("broadcast:(n,1)+(1,m)",),
    (0, 1),
    column_plus_row_grad,
)


def vector_times_matrix(v, m):
    return np.sum(np.tanh(v * m))


def vector_times_matrix_grad(v, m):
    g = 1.0 - np.tanh(v * m) ** 2
    return np.sum(g * m, axis=0), g * v


add(
    vector_times_matrix,
    lambda rng: (normal(rng, 3), normal(rng, 2, 3)),
    "v: (3,), m: (2, 3)",
    ("broadcast:(3,)*(2,3)",),
    (0, 1),
    vector_times_matrix_grad,
)


def broadcast_rank3(a, b):
    return np.sum((a * b - b) ** 2)


add(
    broadcast_rank3,
    lambda rng: (normal(rng, 2, 1, 4), normal(rng, 3, 1)),
    "a: (2, 1, 4), b: (3, 1) -> (2, 3, 4)",
    ("broadcast:rank-extend",),
    (0, 1),
)


def column_divides(x, y):
    return np.sum(x / (1.0 + y**2))


add(
    column_divides,
    lambda rng: (normal(rng, 4, 3), normal(rng, 4, 1)),
    "x: (4, 3), y: (4, 1)",
    ("broadcast:column", "op:/"),
    (0, 1),
)


# --- reductions ---------------------------------------------------------------------------------


def sum_axis0(x):
    return np.sum(np.sum(x, axis=0) ** 2)


def sum_axis0_grad(x):
    return (np.broadcast_to(2.0 * np.sum(x, axis=0), x.shape).copy(),)


add(sum_axis0, lambda rng: (normal(rng, 3, 4),), "x: (3, 4)", ("np.sum", "axis:int"),
    grad=sum_axis0_grad)  # fmt: skip


def sum_axis_tuple(x):
    return np.sum(np.sum(x, axis=(0, 2)) ** 2)


def sum_axis_tuple_grad(x):
    return (np.broadcast_to(2.0 * np.sum(x, axis=(0, 2))[None, :, None], x.shape).copy(),)


add(sum_axis_tuple, lambda rng: (normal(rng, 2, 3, 4),), "x: (2, 3, 4)",
    ("np.sum", "axis:tuple"), grad=sum_axis_tuple_grad)  # fmt: skip


def center_rows_keepdims(x):
    return np.sum((x - np.mean(x, axis=1, keepdims=True)) ** 2)


def center_rows_keepdims_grad(x):
    c = x - np.mean(x, axis=1, keepdims=True)
    return (2.0 * (c - np.mean(c, axis=1, keepdims=True)),)


add(center_rows_keepdims, lambda rng: (normal(rng, 3, 5),), "x: (3, 5)",
    ("np.mean", "axis:int", "keepdims"), grad=center_rows_keepdims_grad)  # fmt: skip


def sum_keepdims_tuple(x):
    return np.sum(np.exp(x) / np.sum(np.exp(x), axis=(1, 2), keepdims=True) * x)


add(sum_keepdims_tuple, lambda rng: (normal(rng, 2, 3, 2),), "x: (2, 3, 2)",
    ("np.sum", "axis:tuple", "keepdims"))  # fmt: skip


def methods_sum_mean(x):
    return x.mean() * x.sum() + x.sum(axis=0).mean()


def methods_sum_mean_grad(x):
    n = x.size
    return (np.full(x.shape, 2.0 * x.sum() / n + 1.0 / x.shape[1]),)


add(methods_sum_mean, lambda rng: (normal(rng, 3, 4),), "x: (3, 4)",
    ("x.sum()", "x.mean()", "axis:int"), grad=methods_sum_mean_grad)  # fmt: skip


def mean_axis_and_total(x):
    return np.sum(np.mean(x, axis=1) ** 2) + np.mean(x**2)


add(mean_axis_and_total, lambda rng: (normal(rng, 4, 3),), "x: (4, 3)", ("np.mean", "axis:int"))


def variance_method_keepdims(x):
    return ((x - x.mean(axis=0, keepdims=True)) ** 2).mean()


add(variance_method_keepdims, lambda rng: (normal(rng, 5, 2),), "x: (5, 2)",
    ("x.mean()", "keepdims"))  # fmt: skip


def standardize_rows(x, w):
    z = (x - np.mean(x, axis=1, keepdims=True)) / np.std(x, axis=1, keepdims=True)
    return np.sum(np.tanh(z) * w) + np.var(x, ddof=1)


add(standardize_rows, lambda rng: (normal(rng, 3, 4), normal(rng, 3, 4)), "x, w: (3, 4)",
    ("np.std", "np.var", "ddof"), wrt=(0, 1))  # fmt: skip


def max_plus_min(x):
    return np.max(x) + 2.0 * np.min(x)


def max_plus_min_grad(x):
    g = np.zeros_like(x)
    g[np.unravel_index(np.argmax(x), x.shape)] += 1.0
    g[np.unravel_index(np.argmin(x), x.shape)] += 2.0
    return (g,)


add(max_plus_min, lambda rng: (distinct(rng, 3, 4),), "x: (3, 4), distinct values (no ties)",
    ("np.max", "np.min"), grad=max_plus_min_grad)  # fmt: skip


def max_min_axes(x):
    return np.sum(np.max(x, axis=1) ** 2) - np.sum(np.min(x, axis=0, keepdims=True))


add(max_min_axes, lambda rng: (distinct(rng, 4, 3),), "x: (4, 3), distinct values",
    ("np.max", "np.min", "axis:int", "keepdims"))  # fmt: skip


def max_axis_tuple(x):
    return np.sum(np.sin(np.max(x, axis=(0, 2))))


add(max_axis_tuple, lambda rng: (distinct(rng, 2, 3, 2),), "x: (2, 3, 2), distinct values",
    ("np.max", "axis:tuple"))  # fmt: skip


def product_all(x):
    return np.prod(x)


def product_all_grad(x):
    return (np.prod(x) / x,)


add(product_all, lambda rng: (away(rng, 5, gap=0.5, bound=1.5),), "x: (5,), 0.5 <= |x| < 1.5",
    ("np.prod",), grad=product_all_grad)  # fmt: skip


def product_rows(x):
    return np.sum(np.prod(x, axis=1))


add(product_rows, lambda rng: (normal(rng, 3, 4),), "x: (3, 4) (zeros allowed: no division)",
    ("np.prod", "axis:int"))  # fmt: skip


def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def logsumexp_grad(x):
    e = np.exp(x - np.max(x))
    return (e / np.sum(e),)


add(logsumexp, lambda rng: (distinct(rng, 6, spacing=0.5),), "x: (6,), distinct values",
    ("np.max", "np.exp", "np.log", "broadcast:scalar-array"), grad=logsumexp_grad)  # fmt: skip


# --- linear algebra -----------------------------------------------------------------------------


def tanh_matvec(A, x):
    return np.sum(np.tanh(A @ x))


def tanh_matvec_grad(A, x):
    g = 1.0 - np.tanh(A @ x) ** 2
    return np.outer(g, x), A.T @ g


add(
    tanh_matvec,
    lambda rng: (normal(rng, 3, 4), normal(rng, 4)),
    "A: (3, 4), x: (4,)",
    ("op:@",),
    (0, 1),
    tanh_matvec_grad,
)


def matmul_matrices(A, B):
    return np.sum((A @ B) ** 2)


def matmul_matrices_grad(A, B):
    g = 2.0 * (A @ B)
    return g @ B.T, A.T @ g


add(
    matmul_matrices,
    lambda rng: (normal(rng, 2, 3), normal(rng, 3, 4)),
    "A: (2, 3), B: (3, 4)",
    ("op:@",),
    (0, 1),
    matmul_matrices_grad,
)


def vector_at_vector(u, v):
    return (u @ v) ** 2


add(vector_at_vector, lambda rng: (normal(rng, 4), normal(rng, 4)), "u, v: (4,)", ("op:@",),
    (0, 1))  # fmt: skip


def dot_calls(u, v, A):
    return np.dot(u, v) + np.sum(np.dot(A, v) ** 2)


add(
    dot_calls,
    lambda rng: (normal(rng, 3), normal(rng, 3), normal(rng, 2, 3)),
    "u, v: (3,), A: (2, 3)",
    ("np.dot",),
    (0, 1, 2),
)


def matmul_batched(A, B):
    return np.sum(np.sin(np.matmul(A, B)))


add(
    matmul_batched,
    lambda rng: (normal(rng, 2, 3, 4), normal(rng, 4, 2)),
    "A: (2, 3, 4) (a batch), B: (4, 2)",
    ("np.matmul", "broadcast:rank-extend"),
    (0, 1),
)


def outer_weighted(u, v, W):
    return np.sum(np.outer(u, v) * W)


def outer_weighted_grad(u, v, W):
    return W @ v, W.T @ u, np.outer(u, v)


add(
    outer_weighted,
    lambda rng: (normal(rng, 3), normal(rng, 4), normal(rng, 3, 4)),
    "u: (3,), v: (4,), W: (3, 4)",
    ("np.outer",),
    (0, 1, 2),
    outer_weighted_grad,
)


def inner_products(u, v, A, B):
    return np.inner(u, v) ** 2 + np.sum(np.inner(A, B))


add(
    inner_products,
    lambda rng: (normal(rng, 3), normal(rng, 3), normal(rng, 2, 3), normal(rng, 4, 3)),
    "u, v: (3,), A: (2, 3), B: (4, 3)",
    ("np.inner",),
    (0, 1, 2, 3),
)


def trace_of_product(A, B):
    return np.trace(A @ B)


def trace_of_product_grad(A, B):
    return B.T.copy(), A.T.copy()


add(
    trace_of_product,
    lambda rng: (normal(rng, 3, 4), normal(rng, 4, 3)),
    "A: (3, 4), B: (4, 3)",
    ("np.trace", "op:@"),
    (0, 1),
    trace_of_product_grad,
)


def transposes(A, B, C):
    return (
        np.sum(A.T @ B)
        + np.sum(np.transpose(C, (1, 0, 2)) * A[..., None])
        + np.sum(np.transpose(A) ** 2)
    )


add(
    transposes,
    lambda rng: (normal(rng, 3, 2), normal(rng, 3, 4), normal(rng, 2, 3, 5)),
    "A: (3, 2), B: (3, 4), C: (2, 3, 5)",
    (".T", "np.transpose", "index:ellipsis-none"),
    (0, 1, 2),
)


def reshapes(x, w):
    return np.sum(x.reshape(3, 4) @ w) + np.sum(np.reshape(x, (4, 3))[0] ** 2)


add(
    reshapes,
    lambda rng: (normal(rng, 12), normal(rng, 4)),
    "x: (12,), w: (4,)",
    ("reshape", "np.reshape", "index:int"),
    (0, 1),
)


def concatenates(x, y, A, B):
    return np.sum(np.concatenate([x, y]) ** 2) + np.sum(np.concatenate((A, B), axis=1) ** 3)


def concatenates_grad(x, y, A, B):
    return 2.0 * x, 2.0 * y, 3.0 * A**2, 3.0 * B**2


add(
    concatenates,
    lambda rng: (normal(rng, 3), normal(rng, 2), normal(rng, 2, 2), normal(rng, 2, 3)),
    "x: (3,), y: (2,), A: (2, 2), B: (2, 3)",
    ("np.concatenate",),
    (0, 1, 2, 3),
    concatenates_grad,
)


def stacks(x, y, z, w):
    return np.sum(np.tanh(np.stack([x, y, z], axis=1) @ w)) + np.sum(np.stack((x, z)) ** 2)


add(
    stacks,
    lambda rng: (normal(rng, 4), normal(rng, 4), normal(rng, 4), normal(rng, 3)),
    "x, y, z: (4,), w: (3,)",
    ("np.stack", "op:@"),
    (0, 1, 2, 3),
)


def vector_norms(x, A, b):
    return np.linalg.norm(x) + np.linalg.norm(A @ x - b)


def vector_norms_grad(x, A, b):
    r = A @ x - b
    u = r / np.linalg.norm(r)
    return x / np.linalg.norm(x) + A.T @ u, np.outer(u, x), -u


add(
    vector_norms,
    lambda rng: (normal(rng, 3) + 1.0, normal(rng, 4, 3), normal(rng, 4) + 3.0),
    "x: (3,) ~ N(1, 1), A: (4, 3), b: (4,) ~ N(3, 1) (norms far from 0)",
    ("np.linalg.norm", "op:@"),
    (0, 1, 2),
    vector_norms_grad,
)


def determinant(A):
    return np.linalg.det(A)


def determinant_grad(A):
    return (np.linalg.det(A) * np.linalg.inv(A).T,)


add(determinant, lambda rng: (invertible(rng, 3),), "A: (3, 3) = I + 0.3 N / sqrt(3)",
    ("np.linalg.det",), grad=determinant_grad)  # fmt: skip


def log_det_spd(S):
    return np.log(np.linalg.det(S))


def log_det_spd_grad(S):
    return (np.linalg.inv(S).T,)


add(log_det_spd, lambda rng: (spd(rng, 4),), "S: (4, 4) SPD, eigenvalues >= 1",
    ("np.linalg.det", "np.log"), grad=log_det_spd_grad)  # fmt: skip


def solve_by_inverse(A, b):
    return np.sum(np.linalg.inv(A) @ b)


def solve_by_inverse_grad(A, b):
    ai = np.linalg.inv(A)
    u = ai.T @ np.ones(A.shape[0])
    return -np.outer(u, ai @ b), u


add(
    solve_by_inverse,
    lambda rng: (invertible(rng, 3), normal(rng, 3)),
    "A: (3, 3) = I + 0.3 N / sqrt(3), b: (3,)",
    ("np.linalg.inv", "op:@"),
    (0, 1),
    solve_by_inverse_grad,
)


# --- running sums, reorderings (added after issue 4) ---------------------------------------------


def running_sums(x, w):
    return np.sum(np.cumsum(x * w, axis=1) ** 2) + np.sum(np.sin(np.cumsum(x)))


def running_sums_grad(x, w):
    # A running sum's adjoint is the running sum of the adjoint from the other end.
    rows = 2.0 * np.cumsum(x * w, axis=1)
    rows = np.cumsum(rows[:, ::-1], axis=1)[:, ::-1]
    flat = np.cos(np.cumsum(x))
    flat = np.cumsum(flat[::-1])[::-1].reshape(x.shape)
    return rows * w + flat, rows * x


add(
    running_sums,
    lambda rng: (normal(rng, 3, 4), normal(rng, 3, 4)),
    "x, w: (3, 4); one running sum along rows, one over the flattened x",
    ("np.cumsum", "axis:int"),
    (0, 1),
    running_sums_grad,
)


def flips(x, w):
    return np.sum(np.flip(x, 0) * w) + np.sum(np.flip(x) ** 3) + np.sum(np.flip(w, (0, 1)) * x * x)


def flips_grad(x, w):
    return w[::-1] + 3.0 * x**2 + 2.0 * x * w[::-1, ::-1], x[::-1] + (x * x)[::-1, ::-1]


add(
    flips,
    lambda rng: (normal(rng, 3, 4), normal(rng, 3, 4)),
    "x, w: (3, 4); flipped along one axis, all axes, and an axis tuple",
    ("np.flip",),
    (0, 1),
    flips_grad,
)


def running_products(x, w):
    return np.sum(np.cumprod(x, axis=1) * w) + np.sum(np.cumprod(x) ** 2)


def _cumprod_vjp(x, g):
    """The adjoint of np.cumprod along the last axis, by brute force: x[j]'s partials are the
    running products of x with x[j] set to 1, from j on (exact with zeros)."""
    out = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        ones = x.copy()
        ones[j] = 1.0
        out[j] = np.sum((g * np.cumprod(ones, axis=-1))[..., j[-1] :][j[:-1]])
    return out


def running_products_grad(x, w):
    flat = _cumprod_vjp(x.ravel(), 2.0 * np.cumprod(x))
    return _cumprod_vjp(x, w) + flat.reshape(x.shape), np.cumprod(x, axis=1)


def _with_zeros(rng):
    x = away(rng, 3, 4, gap=0.5, bound=1.5)
    x[0, 1] = x[1, 2] = x[1, 3] = x[2, 0] = 0.0  # first, inside, twice in a row, last
    return x


add(
    running_products,
    lambda rng: (_with_zeros(rng), normal(rng, 3, 4)),
    "x: (3, 4), 0.5 <= |x| < 1.5 but for four exact zeros; w: (3, 4)",
    ("np.cumprod", "axis:int"),
    (0, 1),
    running_products_grad,
)


def running_methods(x, w):
    return np.sum(x.cumsum(axis=0) * w) + np.sum(x.cumprod(1) * w) + np.sum(x.cumprod() ** 2)


add(
    running_methods,
    lambda rng: (away(rng, 3, 4, gap=0.5, bound=1.2), normal(rng, 3, 4)),
    "x: (3, 4), 0.5 <= |x| < 1.2; w: (3, 4)",
    ("x.cumsum()", "x.cumprod()"),
    (0, 1),
)


def rolls(x, w):
    return (
        np.sum(np.roll(x, 1) * w)
        + np.sum(np.roll(x, (1, -2), axis=(0, 1)) ** 3)
        + np.sum(np.sin(np.roll(x * w, -1, axis=0)))
    )


def rolls_grad(x, w):
    # A roll moves elements without changing them: sum(roll(x, 1) * w) = sum(x * roll(w, -1)).
    wave = np.cos(x * w)
    return np.roll(w, -1) + 3.0 * x**2 + wave * w, np.roll(x, 1) + wave * x


add(
    rolls,
    lambda rng: (normal(rng, 3, 4), normal(rng, 3, 4)),
    "x, w: (3, 4); rolled flattened, along a tuple of axes, and along one axis",
    ("np.roll", "axis:tuple"),
    (0, 1),
    rolls_grad,
)


def differences(x, w):
    return np.sum(np.diff(x) ** 2 * w[:, 1:]) + np.sum(np.sin(np.diff(x * w, n=2, axis=0)))


def differences_grad(x, w):
    step = x[:, 1:] - x[:, :-1]
    inner = 2.0 * step * w[:, 1:]
    gx, gw = np.zeros_like(x), np.zeros_like(w)
    gx[:, 1:] += inner
    gx[:, :-1] -= inner
    gw[:, 1:] += step**2
    u = x * w
    outer = np.cos(u[2:] - 2.0 * u[1:-1] + u[:-2])
    gu = np.zeros_like(u)
    gu[2:] += outer
    gu[1:-1] -= 2.0 * outer
    gu[:-2] += outer
    return gx + gu * w, gw + gu * x


add(
    differences,
    lambda rng: (normal(rng, 4, 5), normal(rng, 4, 5)),
    "x, w: (4, 5); first differences along rows, second differences down columns",
    ("np.diff", "axis:int"),
    (0, 1),
    differences_grad,
)


def linear_solves(A, b, B):
    x = np.linalg.solve(A, b)
    X = np.linalg.solve(A, B)
    return np.sum(x**2) + np.sum(np.sin(X)) + x @ b


def linear_solves_grad(A, b, B):
    inverse = np.linalg.inv(A)
    x, X = inverse @ b, inverse @ B
    gb = inverse.T @ (2.0 * x + b)  # through x = A^-1 b
    gB = inverse.T @ np.cos(X)
    return -np.outer(gb, x) - gB @ X.T, gb + x, gB


add(
    linear_solves,
    lambda rng: (invertible(rng, 3), normal(rng, 3), normal(rng, 3, 2)),
    "A: (3, 3) = I + 0.3 N / sqrt(3), b: (3,), B: (3, 2)",
    ("np.linalg.solve", "op:@"),
    (0, 1, 2),
    linear_solves_grad,
)


def stacked_solves(S, b, C):
    return np.sum(np.linalg.solve(S, b) ** 2) + np.sum(np.linalg.solve(S, C) * C)


def stacked_solves_grad(S, b, C):
    gS, gb, gC = np.zeros_like(S), np.zeros_like(b), np.zeros_like(C)
    for k in range(len(S)):  # a 1-d b is one vector for every matrix of the stack (NumPy 2)
        inverse = np.linalg.inv(S[k])
        x, X = inverse @ b, inverse @ C[k]
        u, U = inverse.T @ (2.0 * x), inverse.T @ C[k]
        gS[k] = -np.outer(u, x) - U @ X.T
        gb += u
        gC[k] = X + U
    return gS, gb, gC


add(
    stacked_solves,
    lambda rng: (
        np.stack([invertible(rng, 3) for _ in range(4)]),
        normal(rng, 3),
        normal(rng, 4, 3, 2),
    ),
    "S: (4, 3, 3) of I + 0.3 N / sqrt(3), b: (3,) (one vector for each), C: (4, 3, 2)",
    ("np.linalg.solve",),
    (0, 1, 2),
    stacked_solves_grad,
)


# --- more elementwise functions (added after issue 4) -------------------------------------------


def inverse_hyperbolics(x, y, u):
    return np.sum(np.arcsinh(x) * np.arccosh(y)) + np.sum(np.arctanh(u) ** 2)


def inverse_hyperbolics_grad(x, y, u):
    return (
        np.arccosh(y) / np.sqrt(x * x + 1.0),
        np.arcsinh(x) / np.sqrt(y * y - 1.0),
        2.0 * np.arctanh(u) / (1.0 - u * u),
    )


add(
    inverse_hyperbolics,
    lambda rng: (normal(rng, 3, 4), uniform(rng, 1.2, 3.0, 3, 4), uniform(rng, -0.8, 0.8, 5)),
    "x: (3, 4), y: (3, 4) in [1.2, 3), u: (5,) in [-0.8, 0.8)",
    ("np.arcsinh", "np.arccosh", "np.arctanh"),
    (0, 1, 2),
    inverse_hyperbolics_grad,
)


def roots_powers_and_soft_maxima(x, y, w):
    return np.sum(np.cbrt(x) * np.exp2(y)) + np.sum(np.logaddexp(x, w))


def roots_powers_and_soft_maxima_grad(x, y, w):
    share = 1.0 / (1.0 + np.exp(w - x))  # e^x / (e^x + e^w), w broadcast along the rows
    return (
        np.exp2(y) / (3.0 * np.abs(x) ** (2.0 / 3.0)) + share,
        np.cbrt(x) * 2.0**y * np.log(2.0),
        np.sum(1.0 - share, axis=0),
    )


add(
    roots_powers_and_soft_maxima,
    lambda rng: (away(rng, 3, 4, gap=0.3), normal(rng, 3, 4), normal(rng, 4)),
    "x: (3, 4), 0.3 <= |x| < 2 (cbrt's derivative is infinite at 0); y: (3, 4); w: (4,)",
    ("np.cbrt", "np.exp2", "np.logaddexp", "broadcast:rank-extend"),
    (0, 1, 2),
    roots_powers_and_soft_maxima_grad,
)


# --- np.einsum (added after issue 4) -------------------------------------------------------------


def einsum_products(A, B, x):
    C = np.einsum("ij,jk->ik", A, B)
    return np.sum(np.sin(C)) + np.einsum("i,ij,j->", x, A, np.einsum("jk->j", B))


def einsum_products_grad(A, B, x):
    cos, s = np.cos(A @ B), B.sum(axis=1)  # s: B's row sums, summed in B alone
    return cos @ B.T + np.outer(x, s), A.T @ cos + (A.T @ x)[:, None], A @ s


add(
    einsum_products,
    lambda rng: (normal(rng, 3, 4), normal(rng, 4, 2), normal(rng, 3)),
    "A: (3, 4), B: (4, 2), x: (3,)",
    ("np.einsum",),
    (0, 1, 2),
    einsum_products_grad,
)


def einsum_traces(S, v):
    return (
        np.einsum("ii->", S) ** 2
        + np.sum(np.einsum("ii->i", S) * v)
        + np.einsum("ij,ij->", S, S)
        + np.einsum("ii", S * v)
    )


def einsum_traces_grad(S, v):
    diag = np.diag(S)
    return 2.0 * np.trace(S) * np.eye(3) + 2.0 * np.diag(v) + 2.0 * S, 2.0 * diag


add(
    einsum_traces,
    lambda rng: (normal(rng, 3, 3), normal(rng, 3)),
    "S: (3, 3), v: (3,)",
    ("np.einsum", "broadcast:rank-extend"),
    (0, 1),
    einsum_traces_grad,
)


def einsum_stacks(X, W, u):
    Y = np.einsum("bij,bjk->bik", X, W)
    z = np.einsum("...ij,...j->...i", X, u)
    return 0.5 * np.sum(Y**2) + np.sum(np.tanh(z))


def einsum_stacks_grad(X, W, u):
    Y = X @ W
    slope = 1.0 - np.tanh(X @ u) ** 2  # (2, 3): one per stack and row
    gX = Y @ np.swapaxes(W, 1, 2) + slope[:, :, None] * u
    return gX, np.swapaxes(X, 1, 2) @ Y, np.sum(slope[:, :, None] * X, axis=(0, 1))


add(
    einsum_stacks,
    lambda rng: (normal(rng, 2, 3, 4), normal(rng, 2, 4, 5), normal(rng, 4)),
    "X: (2, 3, 4), W: (2, 4, 5), u: (4,) (one for every stack)",
    ("np.einsum", "broadcast:rank-extend"),
    (0, 1, 2),
    einsum_stacks_grad,
)


def einsum_implicit(A, B):
    P = np.einsum("ij,jk", A, B)
    return np.sum(P * np.einsum("ij->ji", P)) + np.sum(np.einsum("ij->j", A) ** 2)


def einsum_implicit_grad(A, B):
    P = A @ B
    return 2.0 * P.T @ B.T + 2.0 * A.sum(axis=0), 2.0 * A.T @ P.T


add(
    einsum_implicit,
    lambda rng: (normal(rng, 3, 4), normal(rng, 4, 3)),
    "A: (3, 4), B: (4, 3)",
    ("np.einsum",),
    (0, 1),
    einsum_implicit_grad,
)


def einsum_float32_chain(A, B, C):
    return np.sum(np.einsum("ij,jk,kl->il", A, B, C, optimize=True) ** 2)


def einsum_float32_chain_grad(A, B, C):
    M = np.float32(2.0) * (A @ B @ C)
    return M @ (B @ C).T, A.T @ M @ C.T, (A @ B).T @ M


add(
    einsum_float32_chain,
    lambda rng: (f32(normal(rng, 2, 3)), f32(normal(rng, 3, 4)), f32(normal(rng, 4, 2))),
    "A: (2, 3), B: (3, 4), C: (4, 2), all float32; optimize=True",
    ("np.einsum", "dtype:float32"),
    (0, 1, 2),
    einsum_float32_chain_grad,
)


# --- named workloads ----------------------------------------------------------------------------


def quadratic_form(x, A):
    return x @ A @ x


def quadratic_form_grad(x, A):
    return (A + A.T) @ x, np.outer(x, x)


add(
    quadratic_form,
    lambda rng: (normal(rng, 4), normal(rng, 4, 4)),
    "x: (4,), A: (4, 4) (not symmetric)",
    ("workload:quadratic-form", "op:@"),
    (0, 1),
    quadratic_form_grad,
)


def least_squares(A, x, b):
    return np.sum((A @ x - b) ** 2)


def least_squares_grad(A, x, b):
    r = 2.0 * (A @ x - b)
    return np.outer(r, x), A.T @ r, -r


add(
    least_squares,
    lambda rng: (normal(rng, 6, 3), normal(rng, 3), normal(rng, 6)),
    "A: (6, 3), x: (3,), b: (6,) (benchmark: A (500, 200))",
    ("workload:least-squares", "op:@", "op:**"),
    (0, 1, 2),
    least_squares_grad,
)


def logistic_regression(w, b, X, y):
    z = X @ w + b
    p = 1.0 / (1.0 + np.exp(-z))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def logistic_regression_grad(w, b, X, y):
    p = 1.0 / (1.0 + np.exp(-(X @ w + b)))
    r = (p - y) / y.shape[0]
    return X.T @ r, float(np.sum(r))


add(
    logistic_regression,
    lambda rng: (normal(rng, 3), float(rng.normal()), normal(rng, 8, 3),
                 rng.integers(0, 2, 8).astype(float)),
    "w: (3,), b: float, X: (8, 3), y: (8,) of 0.0/1.0 (data)",
    ("workload:logistic-regression", "mixed:float-param", "broadcast:scalar-array"),
    (0, 1),
    logistic_regression_grad,
)  # fmt: skip


def softmax_cross_entropy(W, b, X, Y):
    logits = X @ W + b
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_p = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * log_p, axis=1))


def softmax_cross_entropy_grad(W, b, X, Y):
    logits = X @ W + b
    e = np.exp(logits - np.max(logits, axis=1, keepdims=True))
    g = (e / np.sum(e, axis=1, keepdims=True) - Y) / X.shape[0]
    return X.T @ g, np.sum(g, axis=0)


add(
    softmax_cross_entropy,
    lambda rng: (normal(rng, 3, 4), normal(rng, 4), normal(rng, 5, 3), one_hot(rng, 5, 4)),
    "W: (3, 4), b: (4,), X: (5, 3), Y: (5, 4) one-hot (data)",
    ("workload:softmax-cross-entropy", "np.max", "keepdims", "broadcast:(3,)*(2,3)"),
    (0, 1),
    softmax_cross_entropy_grad,
)


def softmax_cross_entropy_labels(logits, labels):
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -np.mean(log_p[np.arange(logits.shape[0]), labels])


def softmax_cross_entropy_labels_grad(logits, labels):
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    g = e / e.sum(axis=1, keepdims=True)
    g[np.arange(logits.shape[0]), labels] -= 1.0
    return (g / logits.shape[0],)


add(
    softmax_cross_entropy_labels,
    lambda rng: (normal(rng, 6, 3), np.array([0, 2, 2, 1, 0, 2])),
    "logits: (6, 3), labels: (6,) int (data)",
    ("workload:softmax-cross-entropy", "index:fancy-int", "x.sum()", "keepdims"),
    (0,),
    softmax_cross_entropy_labels_grad,
)


def row_normalised(M, W):
    R = M / np.sum(M, axis=1, keepdims=True)
    return np.sum(R * W)


def row_normalised_grad(M, W):
    s = np.sum(M, axis=1, keepdims=True)
    R = M / s
    return (W - np.sum(R * W, axis=1, keepdims=True)) / s, R


add(
    row_normalised,
    lambda rng: (uniform(rng, 0.5, 2.0, 3, 4), normal(rng, 3, 4)),
    "M: (3, 4) in [0.5, 2) (row sums > 0), W: (3, 4)",
    ("workload:row-normalised", "keepdims", "broadcast:column"),
    (0, 1),
    row_normalised_grad,
)


def row_normalised_l2(M):
    R = M / np.sqrt(np.sum(M**2, axis=1, keepdims=True))
    return np.sum(R[:, 0] * R[:, 1])


add(row_normalised_l2, lambda rng: (normal(rng, 4, 3) + 1.0,), "M: (4, 3) ~ N(1, 1)",
    ("workload:row-normalised", "index:column"))  # fmt: skip


def mlp_tanh_loss(params, x, y):
    h = np.tanh(params["W1"] @ x + params["b1"])
    out = params["W2"] @ h + params["b2"]
    return 0.5 * np.sum((out - y) ** 2)


def mlp_tanh_loss_grad(params, x, y):
    h = np.tanh(params["W1"] @ x + params["b1"])
    d_out = params["W2"] @ h + params["b2"] - y
    d_pre = (params["W2"].T @ d_out) * (1.0 - h**2)
    grads = {"W1": np.outer(d_pre, x), "b1": d_pre, "W2": np.outer(d_out, h), "b2": d_out}
    return ({key: grads[key] for key in params},)


def mlp_args(rng: np.random.Generator, n_in: int = 4, n_hidden: int = 5, n_out: int = 3) -> Args:
    """Pytree params of a 2-layer MLP, an input x and a target y (Xavier-scaled weights)."""
    params = {
        "W1": normal(rng, n_hidden, n_in) / np.sqrt(n_in),
        "b1": 0.1 * normal(rng, n_hidden),
        "W2": normal(rng, n_out, n_hidden) / np.sqrt(n_hidden),
        "b2": 0.1 * normal(rng, n_out),
    }
    return params, normal(rng, n_in), normal(rng, n_out)


add(
    mlp_tanh_loss,
    mlp_args,
    'params: {"W1": (5, 4), "b1": (5,), "W2": (3, 5), "b2": (3,)}, x: (4,), y: (3,) (data); '
    "benchmark: x (64,), W1 (128, 64), W2 (10, 128)",
    ("workload:mlp", "pytree:dict", "np.tanh", "op:@"),
    (0,),
    mlp_tanh_loss_grad,
)


def mlp_batch_softmax(params, X, Y):
    H = np.tanh(X @ params["W1"] + params["b1"])
    logits = H @ params["W2"] + params["b2"]
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_p = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.sum(Y * log_p) / X.shape[0]


def mlp_batch_softmax_grad(params, X, Y):
    H = np.tanh(X @ params["W1"] + params["b1"])
    logits = H @ params["W2"] + params["b2"]
    e = np.exp(logits - np.max(logits, axis=1, keepdims=True))
    d_logits = (e / np.sum(e, axis=1, keepdims=True) - Y) / X.shape[0]
    d_pre = (d_logits @ params["W2"].T) * (1.0 - H**2)
    grads = {
        "W1": X.T @ d_pre,
        "b1": d_pre.sum(axis=0),
        "W2": H.T @ d_logits,
        "b2": d_logits.sum(axis=0),
    }
    return ({key: grads[key] for key in params},)


def mlp_batch_args(rng: np.random.Generator) -> Args:
    """Batched MLP params (W stored input-major), inputs X (6, 3) and one-hot targets Y (6, 4)."""
    params = {
        "W1": normal(rng, 3, 5) / np.sqrt(3),
        "b1": 0.1 * normal(rng, 5),
        "W2": normal(rng, 5, 4) / np.sqrt(5),
        "b2": 0.1 * normal(rng, 4),
    }
    return params, normal(rng, 6, 3), one_hot(rng, 6, 4)


add(
    mlp_batch_softmax,
    mlp_batch_args,
    'params: {"W1": (3, 5), "b1": (5,), "W2": (5, 4), "b2": (4,)}, X: (6, 3), Y: (6, 4) '
    "one-hot (data)",
    ("workload:mlp", "workload:softmax-cross-entropy", "pytree:dict", "broadcast:(3,)*(2,3)"),
    (0,),
    mlp_batch_softmax_grad,
)


# --- pytrees ------------------------------------------------------------------------------------


def layers_list_of_tuples(layers, x):
    h = np.tanh(layers[0][0] @ x + layers[0][1])
    W, b = layers[1]
    return np.sum((W @ h + b) ** 2)


def layers_list_of_tuples_grad(layers, x):
    (W1, b1), (W2, b2) = layers
    h = np.tanh(W1 @ x + b1)
    d_out = 2.0 * (W2 @ h + b2)
    d_pre = (W2.T @ d_out) * (1.0 - h**2)
    return [(np.outer(d_pre, x), d_pre), (np.outer(d_out, h), d_out)], W1.T @ d_pre


add(
    layers_list_of_tuples,
    lambda rng: ([(normal(rng, 4, 3), normal(rng, 4)), (normal(rng, 2, 4), normal(rng, 2))],
                 normal(rng, 3)),
    "layers: [(W (4, 3), b (4,)), (W (2, 4), b (2,))] (list of tuples), x: (3,)",
    ("pytree:list", "pytree:tuple", "pytree:nested", "pytree:unpack"),
    (0, 1),
    layers_list_of_tuples_grad,
)  # fmt: skip


def nested_dict_with_float_and_unused(params, x):
    scale = params["scale"]
    w = params["inner"]["w"]
    v, c = params["pair"]
    return scale * np.sum(np.sin(w * x)) + c * np.sum(v**2)


def nested_dict_with_float_and_unused_grad(params, x):
    scale, w = params["scale"], params["inner"]["w"]
    v, c = params["pair"]
    grads = {
        "scale": float(np.sum(np.sin(w * x))),
        "inner": {
            "w": scale * x * np.cos(w * x),
            "unused": np.zeros_like(params["inner"]["unused"]),
        },
        "pair": (2.0 * c * v, float(np.sum(v**2))),
    }
    return grads, scale * w * np.cos(w * x)


add(
    nested_dict_with_float_and_unused,
    lambda rng: ({"scale": 1.5, "inner": {"w": normal(rng, 3), "unused": normal(rng, 2, 2)},
                  "pair": (normal(rng, 2), -0.7)}, normal(rng, 3)),
    'params: {"scale": float, "inner": {"w": (3,), "unused": (2, 2)}, "pair": ((2,), float)}, '
    "x: (3,); the unused leaf's gradient is zeros",
    ("pytree:dict", "pytree:nested", "pytree:tuple", "pytree:float-leaf", "pytree:unused-leaf",
     "pytree:unpack", "mixed:float-param"),
    (0, 1),
    nested_dict_with_float_and_unused_grad,
)  # fmt: skip


def tuple_param(pair, x):
    a, b = pair
    return np.sum(a * x) * np.sum(b)


add(
    tuple_param,
    lambda rng: ((normal(rng, 3), normal(rng, 2)), normal(rng, 3)),
    "pair: ((3,), (2,)) tuple, x: (3,)",
    ("pytree:tuple", "pytree:unpack"),
    (0, 1),
)


def list_of_arrays_float32(ws, x):
    return np.sum(np.tanh(ws[0] * x) + ws[1] * ws[2])


add(
    list_of_arrays_float32,
    lambda rng: ([f32(normal(rng, 3)), f32(normal(rng, 2, 3)), f32(normal(rng, 3))],
                 f32(normal(rng, 3))),
    "ws: [float32 (3,), float32 (2, 3), float32 (3,)], x: float32 (3,)",
    ("pytree:list", "dtype:float32", "broadcast:(3,)*(2,3)"),
    (0, 1),
)  # fmt: skip


# --- right-hand indexing ------------------------------------------------------------------------


def index_int(x, M):
    return x[0] * x[2] + np.sum(M[1] ** 2) + x[-1]


def index_int_grad(x, M):
    gx = np.zeros_like(x)
    gx[0], gx[2], gx[-1] = x[2], x[0], 1.0
    gM = np.zeros_like(M)
    gM[1] = 2.0 * M[1]
    return gx, gM


add(
    index_int,
    lambda rng: (normal(rng, 4), normal(rng, 3, 2)),
    "x: (4,), M: (3, 2)",
    ("index:int", "index:negative"),
    (0, 1),
    index_int_grad,
)


def index_param(x, M, i):
    return x[i] ** 2 + np.sum(np.exp(M[i]))


def index_param_grad(x, M, i):
    gx, gM = np.zeros_like(x), np.zeros_like(M)
    gx[i] = 2.0 * x[i]
    gM[i] = np.exp(M[i])
    return gx, gM


add(
    index_param,
    lambda rng: (normal(rng, 5), normal(rng, 5, 2), int(rng.integers(0, 5))),
    "x: (5,), M: (5, 2), i: int in [0, 5) (data)",
    ("index:param",),
    (0, 1),
    index_param_grad,
)


def slices(x, M):
    return np.sum(x[1:3] * x[2:4]) + np.sum(M[::2, 1:] ** 2) + np.sum(x[:-1] - x[1:])


add(
    slices,
    lambda rng: (normal(rng, 5), normal(rng, 4, 3)),
    "x: (5,), M: (4, 3) (overlapping slices)",
    ("index:slice",),
    (0, 1),
)


def columns(M):
    return np.sum(M[:, 0] * M[:, 1]) + np.sum(M[:, -1] ** 3)


def columns_grad(M):
    g = np.zeros_like(M)
    g[:, 0] = M[:, 1]
    g[:, 1] = M[:, 0]
    g[:, -1] += 3.0 * M[:, -1] ** 2
    return (g,)


add(columns, lambda rng: (normal(rng, 4, 3),), "M: (4, 3)", ("index:column",), grad=columns_grad)


def ellipsis_none_outer(x, y):
    return np.sum(np.sin(x[..., None] * y[None, ...]))


add(
    ellipsis_none_outer,
    lambda rng: (normal(rng, 3), normal(rng, 4)),
    "x: (3,), y: (4,)",
    ("index:ellipsis-none",),
    (0, 1),
)


def boolean_mask_param(x, mask):
    return np.sum(x[mask] ** 2)


def boolean_mask_param_grad(x, mask):
    return (np.where(mask, 2.0 * x, 0.0),)


add(
    boolean_mask_param,
    lambda rng: (normal(rng, 3, 4), np.arange(12).reshape(3, 4) % 3 == 0),
    "x: (3, 4), mask: (3, 4) bool (data)",
    ("index:bool-mask",),
    grad=boolean_mask_param_grad,
)


def boolean_mask_computed(x):
    return np.sum(x[x > 0] ** 3) - np.sum(x[x < 0])


add(boolean_mask_computed, lambda rng: (away(rng, 7),), "x: (7,) with |x| >= 0.1",
    ("index:bool-mask", "nondiff:comparison"))  # fmt: skip


def repeated_fancy_constant(x, w):
    idx = np.array([0, 2, 0, 1, 2, 2])
    return np.sum(x[idx] * w)


def repeated_fancy_constant_grad(x, w):
    idx = np.array([0, 2, 0, 1, 2, 2])
    gx = np.zeros_like(x)
    np.add.at(gx, idx, w)
    return gx, x[idx]


add(
    repeated_fancy_constant,
    lambda rng: (normal(rng, 3), normal(rng, 6)),
    "x: (3,), w: (6,); x[[0, 2, 0, 1, 2, 2]]",
    ("index:repeated-fancy", "construct:np.array-constant"),
    (0, 1),
    repeated_fancy_constant_grad,
)


def repeated_fancy_param(M, rows):
    return np.sum(np.tanh(M[rows]) ** 2)


add(
    repeated_fancy_param,
    lambda rng: (normal(rng, 4, 2), np.array([3, 1, 3, 3, 0])),
    "M: (4, 2), rows: int array [3, 1, 3, 3, 0] (data, repeats)",
    ("index:repeated-fancy", "index:param"),
)


def fancy_pairs_2d(M):
    return np.sum(M[[0, 0, 1], [1, 1, 2]] ** 2)


add(fancy_pairs_2d, lambda rng: (normal(rng, 2, 3),), "M: (2, 3); M[[0, 0, 1], [1, 1, 2]]",
    ("index:repeated-fancy", "index:fancy-int"))  # fmt: skip


# --- construction -------------------------------------------------------------------------------


def zeros_like_accumulate(x, y):
    acc = np.zeros_like(x)
    acc = acc + np.sin(x)
    acc = acc * y
    return np.sum(acc)


def zeros_like_accumulate_grad(x, y):
    return np.cos(x) * y, np.sin(x)


add(
    zeros_like_accumulate,
    lambda rng: (normal(rng, 2, 3), normal(rng, 2, 3)),
    "x, y: (2, 3)",
    ("construct:zeros_like",),
    (0, 1),
    zeros_like_accumulate_grad,
)


def ones_like_weights(x):
    return np.sum(np.ones_like(x) / (1.0 + x**2))


add(ones_like_weights, lambda rng: (normal(rng, 5),), "x: (5,)", ("construct:ones_like",))


def array_from_scalars(a, b, w):
    v = np.array([a, b, a * b])
    return np.sum(v**2) + v @ w


def array_from_scalars_grad(a, b, w):
    ga = 2.0 * a + w[0] + b * (2.0 * a * b + w[2])
    gb = 2.0 * b + w[1] + a * (2.0 * a * b + w[2])
    return float(ga), float(gb), np.array([a, b, a * b])


add(
    array_from_scalars,
    lambda rng: (float(rng.normal()), float(rng.normal()), normal(rng, 3)),
    "a, b: float, w: (3,)",
    ("construct:np.array-scalars", "mixed:float-param", "op:@"),
    (0, 1, 2),
    array_from_scalars_grad,
)


def array_from_elements(x):
    v = np.array([x[0], 2.0 * x[1], x[0] * x[2]])
    return np.sum(np.exp(v))


add(array_from_elements, lambda rng: (normal(rng, 3),), "x: (3,)",
    ("construct:np.array-scalars", "index:int"))  # fmt: skip


def zeros_shape_constant(x):
    z = np.zeros((2, 3))
    z2 = np.zeros(x.shape)
    return np.sum((x - z) ** 2 + z2)


add(zeros_shape_constant, lambda rng: (normal(rng, 2, 3),), "x: (2, 3)", ("construct:zeros",))


# --- non-differentiable helpers feeding control flow or indexing --------------------------------


def argmax_picks_other(scores, x):
    i = np.argmax(scores)
    return x[i] ** 2 + np.sum(x)


add(
    argmax_picks_other,
    lambda rng: (distinct(rng, 4), normal(rng, 4)),
    "scores: (4,) distinct (gradient zero: it only feeds argmax), x: (4,)",
    ("nondiff:argmax", "index:param"),
    (0, 1),
)


def argmax_picks_self(x):
    i = np.argmax(x)
    return np.exp(x[i]) - np.sum(x)


def argmax_picks_self_grad(x):
    g = -np.ones_like(x)
    g[np.argmax(x)] += np.exp(np.max(x))
    return (g,)


add(argmax_picks_self, lambda rng: (distinct(rng, 5),), "x: (5,), distinct values",
    ("nondiff:argmax",), grad=argmax_picks_self_grad)  # fmt: skip


def floor_picks_row(M, t):
    k = int(np.floor(t))
    return np.sum(M[k] ** 2)


add(
    floor_picks_row,
    lambda rng: (normal(rng, 3, 2), float(rng.integers(0, 3) + rng.uniform(0.2, 0.8))),
    "M: (3, 2), t: float in [0, 3) at least 0.2 from an integer (data)",
    ("nondiff:floor", "index:param"),
)


def comparison_branch(x):
    if np.sum(x) > 0:
        return np.sum(x**2)
    return np.sum(np.sin(x))


def comparison_branch_grad(x):
    return (2.0 * x if np.sum(x) > 0 else np.cos(x),)


def _sum_away_from_zero(rng: np.random.Generator) -> Args:
    """x of shape (4,) whose sum is at least 0.5 from 0, either sign."""
    x = normal(rng, 4)
    return (x - x.mean() + rng.choice([-1.0, 1.0]) * rng.uniform(0.2, 1.0),)


add(
    comparison_branch,
    _sum_away_from_zero,
    "x: (4,) with |sum(x)| >= 0.8",
    ("nondiff:comparison", "control-flow"),
    grad=comparison_branch_grad,
)


def floor_in_condition(x):
    n = np.floor(np.max(np.abs(x)))
    if n >= 1:
        return np.sum(x**2) / n
    return np.sum(x)


def _max_abs_away_from_one(rng: np.random.Generator) -> Args:
    """x of shape (4,) scaled so max |x| lies in [0.3, 0.8] or [1.2, 1.8] (floor jumps at 1)."""
    x = normal(rng, 4)
    target = rng.choice([rng.uniform(0.3, 0.8), rng.uniform(1.2, 1.8)])
    return (x * target / np.max(np.abs(x)),)


add(
    floor_in_condition,
    _max_abs_away_from_one,
    "x: (4,) with max |x| in [0.3, 0.8] or [1.2, 1.8] (both branches, away from the jump)",
    ("nondiff:floor", "control-flow", "np.abs", "np.max"),
)


# --- float32 ------------------------------------------------------------------------------------


def float32_elementwise(x, w):
    return np.sum(np.tanh(x) * w + np.exp(-(x**2)))


def float32_elementwise_grad(x, w):
    t = np.tanh(x)
    return (1.0 - t**2) * w - 2.0 * x * np.exp(-(x**2)), t


add(
    float32_elementwise,
    lambda rng: (f32(normal(rng, 3, 4)), f32(normal(rng, 3, 4))),
    "x, w: (3, 4) float32",
    ("dtype:float32",),
    (0, 1),
    float32_elementwise_grad,
)


def float32_least_squares(A, x, b):
    return np.sum((A @ x - b) ** 2)


def float32_least_squares_grad(A, x, b):
    r = np.float32(2.0) * (A @ x - b)
    return np.outer(r, x), A.T @ r, -r


add(
    float32_least_squares,
    lambda rng: (f32(normal(rng, 5, 3)), f32(normal(rng, 3)), f32(normal(rng, 5))),
    "A: (5, 3), x: (3,), b: (5,), all float32",
    ("dtype:float32", "workload:least-squares"),
    (0, 1, 2),
    float32_least_squares_grad,
)


def float32_mixed_float64(x, y):
    return np.sum(x * y) + np.sum(x**2)


def float32_mixed_float64_grad(x, y):
    return (y + 2.0 * x).astype(np.float32), x.astype(np.float64)


add(
    float32_mixed_float64,
    lambda rng: (f32(normal(rng, 4)), normal(rng, 4)),
    "x: (4,) float32, y: (4,) float64 (result promotes to float64)",
    ("dtype:float32", "dtype:mixed"),
    (0, 1),
    float32_mixed_float64_grad,
)


# --- feature tags -------------------------------------------------------------------------------

# The np functions of issue 4: each tag ``np.NAME`` requires ``np.NAME(`` in the source.
NP_FUNCTIONS = (
    "sin",
    "cos",
    "tan",
    "exp",
    "log",
    "log1p",
    "expm1",
    "sqrt",
    "tanh",
    "sinh",
    "cosh",
    "arcsin",
    "arccos",
    "arctan",
    "arctan2",
    "abs",
    "maximum",
    "minimum",
    "where",
    "clip",
    "square",
    "reciprocal",
    "power",
    "sum",
    "mean",
    "var",
    "std",
    "max",
    "min",
    "prod",
    "dot",
    "matmul",
    "outer",
    "inner",
    "trace",
    "transpose",
    "reshape",
    "concatenate",
    "stack",
    "linalg.norm",
    "linalg.det",
    "linalg.inv",
    # added after issue 4
    "cumsum",
    "flip",
    "roll",
    "diff",
    "linalg.solve",
    "cumprod",
    "arcsinh",
    "arccosh",
    "arctanh",
    "cbrt",
    "exp2",
    "logaddexp",
    "einsum",
)

# Every feature of issue 4 that the corpus must cover. A tag maps to text that must appear in
# the source of each function carrying it (None: a semantic tag, checked only by coverage).
FEATURES: dict[str, str | None] = {
    "op:+": " + ",
    "op:-": " - ",
    "op:*": " * ",
    "op:/": " / ",
    "op:**": "**",
    "op:neg": "-",
    **{f"np.{name}": f"np.{name}(" for name in NP_FUNCTIONS},
    "x.sum()": ".sum(",
    "x.mean()": ".mean(",
    "x.cumsum()": ".cumsum(",
    "x.cumprod()": ".cumprod(",
    "axis:int": "axis=",
    "axis:tuple": "axis=(",
    "keepdims": "keepdims=True",
    "ddof": "ddof=",
    "broadcast:scalar-array": None,
    "broadcast:(n,1)+(1,m)": None,
    "broadcast:(3,)*(2,3)": None,
    "broadcast:rank-extend": None,
    "broadcast:column": None,
    "mixed:float-param": None,
    "op:@": " @ ",
    ".T": ".T",
    "reshape": ".reshape(",
    "index:int": "[",
    "index:negative": "[-1]",
    "index:param": "[",
    "index:slice": ":",
    "index:column": "[:, ",
    "index:ellipsis-none": "[..., None]",
    "index:bool-mask": "[",
    "index:repeated-fancy": "[",
    "index:fancy-int": "[",
    "construct:zeros_like": "np.zeros_like(",
    "construct:ones_like": "np.ones_like(",
    "construct:np.array-scalars": "np.array([",
    "construct:np.array-constant": "np.array([",
    "construct:zeros": "np.zeros(",
    "nondiff:argmax": "np.argmax(",
    "nondiff:floor": "np.floor(",
    "nondiff:comparison": ">",
    "control-flow": "if ",
    "pytree:dict": '["',
    "pytree:list": "[",
    "pytree:tuple": None,
    "pytree:nested": None,
    "pytree:unpack": " = ",
    "pytree:float-leaf": None,
    "pytree:unused-leaf": None,
    "dtype:float32": None,
    "dtype:mixed": None,
    "workload:mlp": "np.tanh(",
    "workload:least-squares": "**",
    "workload:logistic-regression": "np.exp(",
    "workload:softmax-cross-entropy": "max(",
    "workload:quadratic-form": "x @ A @ x",
    "workload:row-normalised": "keepdims=True",
}


def bench_args(rng: np.random.Generator) -> dict[str, Args]:
    """Inputs at issue 4's benchmark sizes for ``mlp_tanh_loss`` and ``least_squares``."""
    return {
        "mlp_tanh_loss": mlp_args(rng, n_in=64, n_hidden=128, n_out=10),
        "least_squares": (normal(rng, 500, 200), normal(rng, 200), normal(rng, 500)),
    }
