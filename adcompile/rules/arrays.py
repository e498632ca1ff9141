"""Rules for NumPy code: elementwise operations, reductions, linear algebra and indexing.

Operands may be arrays of any shape or scalars; NumPy broadcasts them. The adjoint of an
operand that broadcasting stretched is summed back to the operand's shape by ``unbroadcast``
(see ``array_helpers.py``, copied into the generated module). Keyword-only template
parameters (``axis``, ``keepdims``, ``index``, ...) are the call's non-differentiable
arguments; where a template tests them (``axis is None``), the test is decided at compile
time when the call passes literals, so generated code shows only the branch that applies.

Conventions at non-smooth points, as in the scalar rules: ``abs`` has derivative 0 at 0;
``maximum``/``minimum`` send half the adjoint to each operand on a tie, and ``max``/``min``
reductions share it equally among tied extremes (both as JAX and PyTorch do); ``clip`` passes
it to ``x`` inside ``[lo, hi]`` (bounds included, as PyTorch's ``clamp``), also with one
bound (``clip_below``, ``clip_above``).
"""

import math
import operator

import numpy as np

from .array_helpers import (
    cofactors,
    contraction_adjoint_a,
    contraction_adjoint_b,
    cumprod_adjoint,
    cumprod_jvp,
    diagonal_ones,
    diff_adjoint,
    extreme_adjoint,
    extreme_tangent,
    matmul_adjoint_a,
    matmul_adjoint_b,
    prod_adjoint,
    scatter,
    split_adjoint,
    trace_adjoint,
    unbroadcast,
)
from .registry import array_rule, array_tangent


# ----- arithmetic (operators and their ufuncs) --------------------------------------------
@array_rule(operator.add)
def add(a, b, result, g):
    return unbroadcast(g, a), unbroadcast(g, b)


@array_rule(operator.sub)
def sub(a, b, result, g):
    return unbroadcast(g, a), unbroadcast(-g, b)


@array_rule(operator.mul)
def mul(a, b, result, g):
    return unbroadcast(g * b, a), unbroadcast(g * a, b)


@array_rule(operator.truediv)
def truediv(a, b, result, g):
    return unbroadcast(g / b, a), unbroadcast(-(g / b) * result, b)


@array_rule(operator.neg)
def neg(a, result, g):
    return -g


@array_rule(operator.pos)
def pos(a, result, g):
    return g


@array_rule(np.copy)
def copy(a, result, g):
    return g


@array_rule(operator.pow)
def power(a, b, result, g):
    # d(a**b)/da is 0 where b == 0, given by the general formula (b * a**-1) so that its
    # derivative in b, the mixed partial 1/a, is kept; where a == b == 0 the base is read as
    # 1 (the mask adds True), so that 0 * 0**-1 (nan) becomes 0 * 1**-1 = 0. With a literal
    # exponent the mask folds away; `b - 1.0`, as NumPy refuses ints to negative int powers.
    # d(a**b)/db = a**b * log(a): 0 where a == 0, undefined (nan) where a < 0 (0 where g is:
    # a tangent that does not vary, in forward mode).
    return (
        unbroadcast(g * b * (a + (a == 0) * (b == 0)) ** (b - 1.0), a),
        unbroadcast(
            np.where(
                a > 0,
                g * result * np.log(np.where(a > 0, a, 1.0)),
                np.where((a == 0) | (g == 0), 0.0, np.nan),
            ),
            b,
        ),
    )


@array_rule(operator.matmul)
def matmul(a, b, result, g):
    return matmul_adjoint_a(g, a, b), matmul_adjoint_b(g, a, b)


for _ufunc, _template in (
    (np.add, add),
    (np.subtract, sub),
    (np.multiply, mul),
    (np.divide, truediv),
    (np.negative, neg),
    (np.power, power),
    (np.matmul, matmul),
):
    array_rule(_ufunc)(_template)


# ----- elementwise functions --------------------------------------------------------------
@array_rule(np.sin)
def sin(x, result, g):
    return g * np.cos(x)


@array_rule(np.cos)
def cos(x, result, g):
    return -g * np.sin(x)


@array_rule(np.tan)
def tan(x, result, g):
    return g * (1.0 + result * result)


@array_rule(np.arcsin)
def arcsin(x, result, g):
    return g / np.sqrt((1.0 - x) * (1.0 + x))  # as math.asin's rule: no cancellation


@array_rule(np.arccos)
def arccos(x, result, g):
    return -g / np.sqrt((1.0 - x) * (1.0 + x))


@array_rule(np.arctan)
def arctan(x, result, g):
    return g / (1.0 + x * x)


@array_rule(np.arctan2)
def arctan2(y, x, result, g):
    # Over r = hypot(x, y) twice, as math.atan2's rule: x * x + y * y under- and overflows.
    r = np.hypot(x, y)
    return unbroadcast(g * (x / r) / r, y), unbroadcast(-g * (y / r) / r, x)


@array_rule(np.hypot)
def hypot(x, y, result, g):
    return unbroadcast(g * (x / result), x), unbroadcast(g * (y / result), y)


@array_rule(np.sinh)
def sinh(x, result, g):
    return g * np.cosh(x)


@array_rule(np.cosh)
def cosh(x, result, g):
    return g * np.sinh(x)


@array_rule(np.tanh)
def tanh(x, result, g):
    return g * (1.0 - result * result)


@array_rule(np.arcsinh)
def arcsinh(x, result, g):
    return g / np.hypot(x, 1.0)  # as math.asinh's rule: sqrt(x * x + 1) without overflow


@array_rule(np.arccosh)
def arccosh(x, result, g):
    # As math.acosh's rule: sqrt(x * x - 1) without overflow, nor cancellation near 1.
    return g / (np.sqrt(x - 1.0) * np.sqrt(x + 1.0))


@array_rule(np.arctanh)
def arctanh(x, result, g):
    return g / ((1.0 - x) * (1.0 + x))  # as math.atanh's rule: no cancellation near |x| = 1


@array_rule(np.exp)
def exp(x, result, g):
    return g * result


@array_rule(np.expm1)
def expm1(x, result, g):
    return g * np.exp(x)  # as math.expm1's rule: result + 1.0 cancels to 0 below about -20


@array_rule(np.exp2)
def exp2(x, result, g):
    return g * result * math.log(2.0)  # a Python float: float32 stays float32


@array_rule(np.logaddexp)
def logaddexp(a, b, result, g):
    # e^a / (e^a + e^b) as exp(a - result): a - result <= 0, so it never overflows (the
    # quotient does beyond a = 709) and a partial too small for a float comes out 0. Where
    # an argument is the result (an infinite one: inf - inf is nan) its gap is read as 0,
    # and equal arguments share g equally, as they do wherever they are finite.
    gap_a = np.where(a == result, 0.0, a) - np.where(a == result, 0.0, result)
    gap_b = np.where(b == result, 0.0, b) - np.where(b == result, 0.0, result)
    return (
        unbroadcast(g * np.where(a == b, 0.5, np.exp(gap_a)), a),
        unbroadcast(g * np.where(a == b, 0.5, np.exp(gap_b)), b),
    )


@array_rule(np.log)
def log(x, result, g):
    return g / x


@array_rule(np.log1p)
def log1p(x, result, g):
    return g / (1.0 + x)


@array_rule(np.log2)
def log2(x, result, g):
    return g / (x * math.log(2.0))


@array_rule(np.log10)
def log10(x, result, g):
    return g / (x * math.log(10.0))


@array_rule(np.sqrt)
def sqrt(x, result, g):
    return g / (2.0 * result)


@array_rule(np.cbrt)
def cbrt(x, result, g):
    # x ** (-2/3) / 3 through the root itself, which neither over- nor underflows when
    # squared; inf at 0, as NumPy's arithmetic gives (np.sqrt's rule does the same).
    return g / (3.0 * (result * result))


@array_rule(np.square)
def square(x, result, g):
    return g * 2.0 * x


@array_rule(np.reciprocal)
def reciprocal(x, result, g):
    return -g * result * result


@array_rule(np.abs)
def absolute(x, result, g):
    return g * np.sign(x)


@array_rule(np.maximum)
def maximum(a, b, result, g):
    # Half to each operand on a tie. np.where, not g * mask: an infinite g (sqrt at 0
    # downstream) must give the losing operand 0, not inf * 0 = nan.
    share = np.where(a == b, 0.5 * g, g)
    return unbroadcast(np.where(a >= b, share, 0.0), a), unbroadcast(
        np.where(b >= a, share, 0.0), b
    )


@array_rule(np.minimum)
def minimum(a, b, result, g):
    share = np.where(a == b, 0.5 * g, g)
    return unbroadcast(np.where(a <= b, share, 0.0), a), unbroadcast(
        np.where(b <= a, share, 0.0), b
    )


def clip_below(x, lo):
    """``np.clip(x, lo, None)``: np.maximum's value, with clip's derivative at the bound."""
    return np.maximum(x, lo)


def clip_above(x, hi):
    """``np.clip(x, None, hi)``: np.minimum's value, with clip's derivative at the bound."""
    return np.minimum(x, hi)


@array_rule(clip_below)
def clip_below_(x, lo, result, g):
    return unbroadcast(np.where(x >= lo, g, 0.0), x), unbroadcast(np.where(x < lo, g, 0.0), lo)


@array_rule(clip_above)
def clip_above_(x, hi, result, g):
    return unbroadcast(np.where(x <= hi, g, 0.0), x), unbroadcast(np.where(x > hi, g, 0.0), hi)


@array_rule(np.where)
def where(condition, a, b, result, g):
    return (
        None,
        unbroadcast(np.where(condition, g, 0.0), a),
        unbroadcast(np.where(condition, 0.0, g), b),
    )


@array_rule(np.clip)
def clip(x, lo, hi, result, g):
    # np.clip is np.minimum(np.maximum(x, lo), hi): with crossed bounds (lo > hi) every
    # element is hi, and hi gets the whole adjoint.
    return (
        unbroadcast(np.where((x >= lo) & (x <= hi), g, 0.0), x),
        unbroadcast(np.where((x < lo) & (lo <= hi), g, 0.0), lo),
        unbroadcast(np.where((x > hi) | (lo > hi), g, 0.0), hi),
    )


# ----- reductions -------------------------------------------------------------------------
@array_rule(np.sum)
def sum_(x, result, g, *, axis=None, keepdims=False):
    return np.full(np.shape(x), g if axis is None or keepdims else np.expand_dims(g, axis))


@array_rule(np.mean)
def mean(x, result, g, *, axis=None, keepdims=False):
    return np.full(np.shape(x), (g if axis is None or keepdims else np.expand_dims(g, axis))) * (
        np.size(result) / max(np.size(x), 1)  # an empty x: an empty adjoint, any factor
    )


@array_rule(np.var)
def var(x, result, g, *, axis=None, keepdims=False, ddof=0):
    # var = sum((x - mean)**2) / (n - ddof), n the count of each reduced group.
    n = np.size(x) / max(np.size(result), 1)
    # Centred twice: the second mean takes out the first one's rounding (in float32, x's
    # mean is off by about |mean| * 6e-8, as large as the spread of nearly equal x).
    centred = x - np.mean(x, axis=axis, keepdims=True)
    centred = centred - np.mean(centred, axis=axis, keepdims=True)
    return np.full(np.shape(x), (g if axis is None or keepdims else np.expand_dims(g, axis))) * (
        centred * (2.0 / (n - ddof or np.nan))
    )


@array_rule(np.std)
def std(x, result, g, *, axis=None, keepdims=False, ddof=0):
    # std = sqrt(var): var's adjoint over 2 * std (nan where std == 0, as in JAX).
    n = np.size(x) / max(np.size(result), 1)
    spread = result if axis is None or keepdims else np.expand_dims(result, axis)
    centred = x - np.mean(x, axis=axis, keepdims=True)
    centred = centred - np.mean(centred, axis=axis, keepdims=True)  # as var's
    return np.full(np.shape(x), (g if axis is None or keepdims else np.expand_dims(g, axis))) * (
        centred / ((n - ddof) * spread)
    )


@array_rule(np.max)
def max_(x, result, g, *, axis=None, keepdims=False):
    return extreme_adjoint(g, x, result, axis, keepdims)


@array_rule(np.min)
def min_(x, result, g, *, axis=None, keepdims=False):
    return extreme_adjoint(g, x, result, axis, keepdims)


@array_rule(np.prod)
def prod(x, result, g, *, axis=None, keepdims=False):
    return prod_adjoint(g, x, axis, keepdims)


# ----- linear algebra and shapes ----------------------------------------------------------
@array_rule(np.dot)
def dot(a, b, result, g):
    return (
        contraction_adjoint_a(g, a, b, -1, -2 if np.ndim(b) > 1 else -1),
        contraction_adjoint_b(g, a, b, -1, -2 if np.ndim(b) > 1 else -1),
    )


@array_rule(np.inner)
def inner(a, b, result, g):
    return contraction_adjoint_a(g, a, b, -1, -1), contraction_adjoint_b(g, a, b, -1, -1)


@array_rule(np.outer)
def outer(a, b, result, g):
    return np.reshape(g @ np.ravel(b), np.shape(a)), np.reshape(np.ravel(a) @ g, np.shape(b))


@array_rule(np.trace)
def trace(x, result, g):
    return trace_adjoint(g, x)


@array_rule(np.transpose)
def transpose(x, result, g, *, axes=None):
    return (
        np.transpose(g) if axes is None else np.transpose(g, np.argsort(np.mod(axes, np.ndim(g))))
    )


@array_rule(np.reshape)
def reshape(x, result, g, *, shape):
    return np.reshape(g, np.shape(x))


@array_rule(np.ravel)
def ravel(x, result, g):
    return np.reshape(g, np.shape(x))


@array_rule(np.moveaxis)
def moveaxis(x, result, g, *, source, destination):
    return np.moveaxis(g, destination, source)


@array_rule(np.swapaxes)
def swapaxes(x, result, g, *, axis1, axis2):
    return np.swapaxes(g, axis1, axis2)


@array_rule(np.expand_dims)
def expand_dims(x, result, g, *, axis):
    return np.reshape(g, np.shape(x))


@array_rule(np.full)
def full(shape, fill, result, g):
    return None, unbroadcast(g, fill)


@array_rule(np.linalg.norm)
def norm(x, result, g):
    return g * x / result


@array_rule(np.linalg.det)
def det(x, result, g):
    return np.expand_dims(g, (-1, -2)) * cofactors(x)  # singular matrices included


@array_rule(np.linalg.inv)
def inv(x, result, g):
    return -np.swapaxes(result, -1, -2) @ g @ np.swapaxes(result, -1, -2)


@array_rule(np.linalg.solve)
def solve(a, b, result, g):
    # x = solve(a, b): b's adjoint is solve(a^T, g), a's is -solve(a^T, g) x^T, each summed
    # over the stacks broadcasting added. NumPy 2 reads b as one vector only when
    # b.ndim == 1 (x and g then have a's stack shape): g is solved as a column, and a's
    # adjoint is a (stack of) outer products.
    column = np.ndim(b) == 1
    solved = (
        np.linalg.solve(np.swapaxes(a, -1, -2), g[..., None])[..., 0]
        if column
        else np.linalg.solve(np.swapaxes(a, -1, -2), g)
    )
    return (
        unbroadcast(
            -(solved[..., :, None] * result[..., None, :])
            if column
            else -(solved @ np.swapaxes(result, -1, -2)),
            a,
        ),
        unbroadcast(solved, b),
    )


@array_rule(operator.getitem)
def getitem(x, result, g, *, index):
    return scatter(g, x, index)


# ----- np.einsum ---------------------------------------------------------------------------
# One template per operand count (``subscripts`` is a static argument: the call's string,
# read at compile time). Each operand's adjoint is an einsum of g and the other operands,
# whose subscripts (``to_a``...) the compiler works out from ``subscripts``
# (``adcompile/einsum.py``). Where g and the others lack some of the operand's axes (a label
# only this operand has, or a repeated one) a second einsum spreads the result over a fill
# shaped like the operand (``spread_a``): ``np.ones_like``, or ``diagonal_ones`` so that the
# adjoint lands on the diagonal only. An adjoint thus never has more operands than the call,
# and hessian differentiates it with these same rules. With several operands,
# ``unbroadcast`` sums what broadcasting stretched (``...``, or an axis of length 1); an
# operand with ``...`` after labels (``"i..."``) has its adjoint computed with ``...``
# first, summed, then moved back (``front_a``, ``back_a``). With one operand, the adjoint
# has the operand's shape already.
@array_rule(np.einsum)
def einsum_1(
    a,
    result,
    g,
    *,
    subscripts,
    optimize=False,
    to_a,
    fill_a=None,
    spread_a=None,
    front_a=None,
    back_a=None,
):
    return (
        np.einsum(to_a, g, optimize=optimize)
        if fill_a is None
        else np.einsum(
            spread_a,
            g if to_a is None else np.einsum(to_a, g, optimize=optimize),
            np.ones_like(a) if fill_a is True else diagonal_ones(a, fill_a),
        )
    )


@array_rule(np.einsum)
def einsum_2(
    a,
    b,
    result,
    g,
    *,
    subscripts,
    optimize=False,
    to_a,
    to_b,
    fill_a=None,
    fill_b=None,
    spread_a=None,
    spread_b=None,
    front_a=None,
    front_b=None,
    back_a=None,
    back_b=None,
):
    adjoint_a = (
        np.einsum(to_a, g, b, optimize=optimize)
        if fill_a is None
        else np.einsum(
            spread_a,
            np.einsum(to_a, g, b, optimize=optimize),
            np.ones_like(a) if fill_a is True else diagonal_ones(a, fill_a),
        )
    )
    adjoint_b = (
        np.einsum(to_b, g, a, optimize=optimize)
        if fill_b is None
        else np.einsum(
            spread_b,
            np.einsum(to_b, g, a, optimize=optimize),
            np.ones_like(b) if fill_b is True else diagonal_ones(b, fill_b),
        )
    )
    return (
        unbroadcast(adjoint_a, a)
        if front_a is None
        else np.moveaxis(unbroadcast(adjoint_a, np.moveaxis(a, front_a, back_a)), back_a, front_a),
        unbroadcast(adjoint_b, b)
        if front_b is None
        else np.moveaxis(unbroadcast(adjoint_b, np.moveaxis(b, front_b, back_b)), back_b, front_b),
    )


@array_rule(np.einsum)
def einsum_3(
    a,
    b,
    c,
    result,
    g,
    *,
    subscripts,
    optimize=False,
    to_a,
    to_b,
    to_c,
    fill_a=None,
    fill_b=None,
    fill_c=None,
    spread_a=None,
    spread_b=None,
    spread_c=None,
    front_a=None,
    front_b=None,
    front_c=None,
    back_a=None,
    back_b=None,
    back_c=None,
):
    adjoint_a = (
        np.einsum(to_a, g, b, c, optimize=optimize)
        if fill_a is None
        else np.einsum(
            spread_a,
            np.einsum(to_a, g, b, c, optimize=optimize),
            np.ones_like(a) if fill_a is True else diagonal_ones(a, fill_a),
        )
    )
    adjoint_b = (
        np.einsum(to_b, g, a, c, optimize=optimize)
        if fill_b is None
        else np.einsum(
            spread_b,
            np.einsum(to_b, g, a, c, optimize=optimize),
            np.ones_like(b) if fill_b is True else diagonal_ones(b, fill_b),
        )
    )
    adjoint_c = (
        np.einsum(to_c, g, a, b, optimize=optimize)
        if fill_c is None
        else np.einsum(
            spread_c,
            np.einsum(to_c, g, a, b, optimize=optimize),
            np.ones_like(c) if fill_c is True else diagonal_ones(c, fill_c),
        )
    )
    return (
        unbroadcast(adjoint_a, a)
        if front_a is None
        else np.moveaxis(unbroadcast(adjoint_a, np.moveaxis(a, front_a, back_a)), back_a, front_a),
        unbroadcast(adjoint_b, b)
        if front_b is None
        else np.moveaxis(unbroadcast(adjoint_b, np.moveaxis(b, front_b, back_b)), back_b, front_b),
        unbroadcast(adjoint_c, c)
        if front_c is None
        else np.moveaxis(unbroadcast(adjoint_c, np.moveaxis(c, front_c, back_c)), back_c, front_c),
    )


# ----- running sums and products, differences, reorderings -------------------------------
# With axis=None NumPy flattens x first: the adjoint is then 1-d and takes x's shape back.
@array_rule(np.cumsum)
def cumsum(x, result, g, *, axis=None):
    # A running sum's adjoint is the running sum from the other end (flip, cumsum, flip:
    # functions with rules of their own, so second derivatives need nothing more).
    return (
        np.reshape(np.flip(np.cumsum(np.flip(g))), np.shape(x))
        if axis is None
        else np.flip(np.cumsum(np.flip(g, axis), axis), axis)
    )


@array_rule(np.cumprod)
def cumprod(x, result, g, *, axis=None):
    return cumprod_adjoint(g, x, axis)  # exact with zeros: it never divides by x


@array_rule(np.flip)
def flip(x, result, g, *, axis=None):
    return np.flip(g, axis)  # a reversal is its own inverse and its own transpose


@array_rule(np.roll)
def roll(x, result, g, *, shift, axis=None):
    # Rolled back; np.negative, as the shift may be a tuple (one per axis of a tuple axis).
    return np.roll(g, np.negative(shift), axis)


@array_rule(np.diff)
def diff(x, result, g, *, n=1, axis=-1):
    return diff_adjoint(g, x, n, axis)


# ----- arrays built from lists: one adjoint per element -----------------------------------
@array_rule(np.concatenate, variadic=True)
def concatenate(arrays, result, g, *, axis=0):
    return split_adjoint(g, arrays, axis)


@array_rule(np.stack, variadic=True)
def stack(arrays, result, g, *, axis=0):
    return np.moveaxis(g, axis, 0)


@array_rule(np.array, variadic=True)
def array(arrays, result, g):
    return g


# ----- piecewise constant functions: derivative zero almost everywhere --------------------
@array_rule(np.floor)
def floor(x, result, g):
    return None


for _constant_piece in (np.ceil, np.trunc, np.rint, np.round, np.sign):
    array_rule(_constant_piece)(floor)


# ----- what the shape analysis (``shapes.py``) may assume ---------------------------------
# Elementwise primitives: the result has the broadcast shape of the operands.
ELEMENTWISE = frozenset(
    {operator.add, operator.sub, operator.mul, operator.truediv, operator.pow}
    | {operator.neg, operator.pos, np.copy}
    | {np.add, np.subtract, np.multiply, np.divide, np.negative, np.power}
    | {np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan, np.arctan2, np.hypot}
    | {np.sinh, np.cosh, np.tanh, np.exp, np.expm1, np.log, np.log1p, np.log2, np.log10}
    | {np.arcsinh, np.arccosh, np.arctanh, np.cbrt, np.exp2, np.logaddexp}
    | {np.sqrt, np.square, np.reciprocal, np.abs, np.maximum, np.minimum, np.where, np.clip}
    | {clip_below, clip_above}
    | {np.floor, np.ceil, np.trunc, np.rint, np.round, np.sign}
)
# Reductions: a scalar when called without ``axis`` and ``keepdims``.
REDUCTIONS = frozenset({np.sum, np.mean, np.max, np.min, np.prod})


# ----- tangents (forward mode) of the rules that are not elementwise -----------------------
# ``g`` is the tangent of the argument whose term each expression is (see forward.py).
@array_tangent(np.sum)
def sum_tangent(x, result, g, *, axis=None, keepdims=False):
    return np.sum(g, axis=axis, keepdims=keepdims)


@array_tangent(np.mean)
def mean_tangent(x, result, g, *, axis=None, keepdims=False):
    return np.mean(g, axis=axis, keepdims=keepdims)


@array_tangent(np.var)
def var_tangent(x, result, g, *, axis=None, keepdims=False, ddof=0):
    n = np.size(x) / max(np.size(result), 1)
    centred = x - np.mean(x, axis=axis, keepdims=True)
    return np.sum(centred * g, axis=axis, keepdims=keepdims) * (2.0 / (n - ddof or np.nan))


@array_tangent(np.std)
def std_tangent(x, result, g, *, axis=None, keepdims=False, ddof=0):
    n = np.size(x) / max(np.size(result), 1)
    centred = x - np.mean(x, axis=axis, keepdims=True)
    return np.sum(centred * g, axis=axis, keepdims=keepdims) / ((n - ddof) * result)


@array_tangent(np.max)
def max_tangent(x, result, g, *, axis=None, keepdims=False):
    return extreme_tangent(g, x, result, axis, keepdims)


array_tangent(np.min)(max_tangent)


@array_tangent(np.prod)
def prod_tangent(x, result, g, *, axis=None, keepdims=False):
    others = prod_adjoint(np.ones_like(result), x, axis, keepdims)
    return np.sum(others * g, axis=axis, keepdims=keepdims)


@array_tangent(operator.matmul)
def matmul_tangent(a, b, result, g):
    return g @ b, a @ g


array_tangent(np.matmul)(matmul_tangent)


@array_tangent(np.dot)
def dot_tangent(a, b, result, g):
    return np.dot(g, b), np.dot(a, g)


@array_tangent(np.inner)
def inner_tangent(a, b, result, g):
    return np.inner(g, b), np.inner(a, g)


@array_tangent(np.outer)
def outer_tangent(a, b, result, g):
    return np.outer(g, b), np.outer(a, g)


@array_tangent(np.trace)
def trace_tangent(x, result, g):
    return np.trace(g)


@array_tangent(np.transpose)
def transpose_tangent(x, result, g, *, axes=None):
    return np.transpose(g, axes)


@array_tangent(np.reshape)
def reshape_tangent(x, result, g, *, shape):
    return np.reshape(g, shape)


@array_tangent(np.ravel)
def ravel_tangent(x, result, g):
    return np.ravel(g)


@array_tangent(np.moveaxis)
def moveaxis_tangent(x, result, g, *, source, destination):
    return np.moveaxis(g, source, destination)


@array_tangent(np.swapaxes)
def swapaxes_tangent(x, result, g, *, axis1, axis2):
    return np.swapaxes(g, axis1, axis2)


@array_tangent(np.expand_dims)
def expand_dims_tangent(x, result, g, *, axis):
    return np.expand_dims(g, axis)


@array_tangent(np.full)
def full_tangent(shape, fill, result, g):
    return None, np.full(shape, g)


@array_tangent(np.linalg.norm)
def norm_tangent(x, result, g):
    return np.sum(x * g) / result


@array_tangent(np.linalg.det)
def det_tangent(x, result, g):
    return np.sum(cofactors(x) * g, axis=(-2, -1))


@array_tangent(np.linalg.inv)
def inv_tangent(x, result, g):
    return -result @ g @ result


@array_tangent(np.linalg.solve)
def solve_tangent(a, b, result, g):
    # dx = solve(a, db - da x); a vector x (b.ndim == 1) is multiplied as a column.
    column = np.ndim(b) == 1
    return (
        -np.linalg.solve(a, g @ result[..., None])[..., 0]
        if column
        else -np.linalg.solve(a, g @ result),
        np.linalg.solve(a, g),
    )


@array_tangent(operator.getitem)
def getitem_tangent(x, result, g, *, index):
    return g[index]


# np.einsum is linear in each operand: a term is the same einsum with g for the operand.
@array_tangent(np.einsum)
def einsum_1_tangent(
    a,
    result,
    g,
    *,
    subscripts,
    optimize=False,
    to_a,
    fill_a=None,
    spread_a=None,
    front_a=None,
    back_a=None,
):
    return np.einsum(subscripts, g, optimize=optimize)


@array_tangent(np.einsum)
def einsum_2_tangent(
    a,
    b,
    result,
    g,
    *,
    subscripts,
    optimize=False,
    to_a,
    to_b,
    fill_a=None,
    fill_b=None,
    spread_a=None,
    spread_b=None,
    front_a=None,
    front_b=None,
    back_a=None,
    back_b=None,
):
    return (
        np.einsum(subscripts, g, b, optimize=optimize),
        np.einsum(subscripts, a, g, optimize=optimize),
    )


@array_tangent(np.einsum)
def einsum_3_tangent(
    a,
    b,
    c,
    result,
    g,
    *,
    subscripts,
    optimize=False,
    to_a,
    to_b,
    to_c,
    fill_a=None,
    fill_b=None,
    fill_c=None,
    spread_a=None,
    spread_b=None,
    spread_c=None,
    front_a=None,
    front_b=None,
    front_c=None,
    back_a=None,
    back_b=None,
    back_c=None,
):
    return (
        np.einsum(subscripts, g, b, c, optimize=optimize),
        np.einsum(subscripts, a, g, c, optimize=optimize),
        np.einsum(subscripts, a, b, g, optimize=optimize),
    )


@array_tangent(np.cumsum)
def cumsum_tangent(x, result, g, *, axis=None):
    return np.cumsum(g, axis)


@array_tangent(np.cumprod)
def cumprod_tangent(x, result, g, *, axis=None):
    return cumprod_jvp(g, x, axis)


@array_tangent(np.flip)
def flip_tangent(x, result, g, *, axis=None):
    return np.flip(g, axis)


@array_tangent(np.roll)
def roll_tangent(x, result, g, *, shift, axis=None):
    return np.roll(g, shift, axis)


@array_tangent(np.diff)
def diff_tangent(x, result, g, *, n=1, axis=-1):
    return np.diff(g, n, axis)


# Variadic: ``g`` is the list of the elements' tangents (zeros for constant elements).
@array_tangent(np.concatenate, variadic=True)
def concatenate_tangent(arrays, result, g, *, axis=0):
    return np.concatenate(g, axis=axis)


@array_tangent(np.stack, variadic=True)
def stack_tangent(arrays, result, g, *, axis=0):
    return np.stack(g, axis=axis)


@array_tangent(np.array, variadic=True)
def array_tangent_(arrays, result, g):
    return np.array(g)
