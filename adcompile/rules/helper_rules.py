"""Rules for the helpers that generated array code calls, so that it can be differentiated again.

``hessian`` and ``grad(grad(f))`` feed a generated gradient back into the compiler. Its calls
of ``unbroadcast``, ``matmul_adjoint_a`` and the other helpers of ``array_helpers.py`` are
primitives there, with the rules below. Each helper is linear in its first argument (the
adjoint it transforms), so its adjoint in that argument is its transpose: the primal
operation it came from, read backwards (``<A(g), c> == <g, M(c)>``). The matmul and
contraction adjoints are bilinear, so the other operand has an adjoint too. An argument
passed only for its shape (``unbroadcast(g, x)``'s ``x``) has none, and neither do the
positions of the extremes in ``extreme_adjoint``: they are piecewise constant.

A generated gradient's ``split_adjoint`` (the pieces of ``np.concatenate``'s adjoint, one per
array) and ``gradient_like`` (a parameter's gradient assembled from its parts) are read back
as ``split_part`` and ``assemble`` calls (``lower_arrays.py``). ``prod_pairs`` (np.prod's
second derivative) has no rule: third derivatives through ``np.prod`` are not supported, and
the compiler says so; nor are they through ``np.cumprod`` (``cumprod_pairs``,
``cumprod_second``).
"""

import numpy as np

from .array_helpers import (
    assemble,
    assemble_adjoint,
    broadcast_like,
    cofactors,
    cofactors_tangent,
    contraction,
    contraction_adjoint_a,
    contraction_adjoint_b,
    cumprod_adjoint,
    cumprod_jvp,
    cumprod_pairs,
    cumprod_second,
    diagonal_ones,
    diff_adjoint,
    extreme_adjoint,
    extreme_tangent,
    join_part,
    matmul_adjoint_a,
    matmul_adjoint_b,
    prod_adjoint,
    prod_pairs,
    rebroadcast,
    restore_axes,
    scatter,
    split_part,
    trace_adjoint,
    unbroadcast,
)
from .registry import array_rule, array_tangent


@array_rule(unbroadcast)
def unbroadcast_rule(part, like, result, g):
    return rebroadcast(g, part), None


@array_tangent(unbroadcast)
def unbroadcast_tangent(part, like, result, g):
    return unbroadcast(g, like), None


@array_rule(broadcast_like)
def broadcast_like_rule(part, like, result, g):
    return unbroadcast(g, part), None


@array_tangent(broadcast_like)
def broadcast_like_tangent(part, like, result, g):
    return broadcast_like(g, like), None


@array_rule(rebroadcast)
def rebroadcast_rule(part, like, result, g):
    return unbroadcast(g, part), None


@array_tangent(rebroadcast)
def rebroadcast_tangent(part, like, result, g):
    return rebroadcast(g, like), None


@array_rule(scatter)
def scatter_rule(part, x, result, g, *, index):
    return g[index], None


@array_tangent(scatter)
def scatter_tangent(part, x, result, g, *, index):
    return scatter(g, x, index), None


@array_rule(extreme_adjoint)
def extreme_adjoint_rule(part, x, extreme, result, g, *, axis, keepdims):
    return extreme_tangent(g, x, extreme, axis, keepdims), None, None


@array_tangent(extreme_adjoint)
def extreme_adjoint_tangent(part, x, extreme, result, g, *, axis, keepdims):
    return extreme_adjoint(g, x, extreme, axis, keepdims), None, None


@array_rule(extreme_tangent)
def extreme_tangent_rule(part, x, extreme, result, g, *, axis, keepdims):
    return extreme_adjoint(g, x, extreme, axis, keepdims), None, None


@array_tangent(extreme_tangent)
def extreme_tangent_tangent(part, x, extreme, result, g, *, axis, keepdims):
    return extreme_tangent(g, x, extreme, axis, keepdims), None, None


@array_rule(matmul_adjoint_a)
def matmul_adjoint_a_rule(part, a, b, result, g):
    return np.matmul(g, b), None, matmul_adjoint_b(part, g, b)


@array_tangent(matmul_adjoint_a)
def matmul_adjoint_a_tangent(part, a, b, result, g):
    return matmul_adjoint_a(g, a, b), None, matmul_adjoint_a(part, a, g)


@array_rule(matmul_adjoint_b)
def matmul_adjoint_b_rule(part, a, b, result, g):
    return np.matmul(a, g), matmul_adjoint_a(part, a, g), None


@array_tangent(matmul_adjoint_b)
def matmul_adjoint_b_tangent(part, a, b, result, g):
    return matmul_adjoint_b(g, a, b), matmul_adjoint_b(part, g, b), None


@array_rule(contraction)
def contraction_rule(a, b, result, g, *, a_axis, b_axis):
    return (
        contraction_adjoint_a(g, a, b, a_axis, b_axis),
        contraction_adjoint_b(g, a, b, a_axis, b_axis),
    )


@array_tangent(contraction)
def contraction_tangent(a, b, result, g, *, a_axis, b_axis):
    return contraction(g, b, a_axis, b_axis), contraction(a, g, a_axis, b_axis)


@array_rule(contraction_adjoint_a)
def contraction_adjoint_a_rule(part, a, b, result, g, *, a_axis, b_axis):
    return (
        contraction(g, b, a_axis, b_axis),
        None,
        contraction_adjoint_b(part, g, b, a_axis, b_axis),
    )


@array_tangent(contraction_adjoint_a)
def contraction_adjoint_a_tangent(part, a, b, result, g, *, a_axis, b_axis):
    return (
        contraction_adjoint_a(g, a, b, a_axis, b_axis),
        None,
        contraction_adjoint_a(part, a, g, a_axis, b_axis),
    )


@array_rule(contraction_adjoint_b)
def contraction_adjoint_b_rule(part, a, b, result, g, *, a_axis, b_axis):
    return (
        contraction(a, g, a_axis, b_axis),
        contraction_adjoint_a(part, a, g, a_axis, b_axis),
        None,
    )


@array_tangent(contraction_adjoint_b)
def contraction_adjoint_b_tangent(part, a, b, result, g, *, a_axis, b_axis):
    return (
        contraction_adjoint_b(g, a, b, a_axis, b_axis),
        contraction_adjoint_b(part, g, b, a_axis, b_axis),
        None,
    )


@array_rule(trace_adjoint)
def trace_adjoint_rule(part, x, result, g):
    return np.trace(g), None


@array_tangent(trace_adjoint)
def trace_adjoint_tangent(part, x, result, g):
    return trace_adjoint(g, x), None


# np.einsum's mask for a repeated label: it depends on x's shape only.
@array_rule(diagonal_ones)
def diagonal_ones_rule(x, result, g, *, subscripts):
    return None


@array_tangent(diagonal_ones)
def diagonal_ones_tangent(x, result, g, *, subscripts):
    return None


@array_rule(diff_adjoint)
def diff_adjoint_rule(part, x, result, g, *, n, axis):
    return np.diff(g, n, axis), None


@array_tangent(diff_adjoint)
def diff_adjoint_tangent(part, x, result, g, *, n, axis):
    return diff_adjoint(g, x, n, axis), None


@array_rule(split_part)
def split_part_rule(whole, result, g, *, arrays, axis, i):
    return join_part(g, whole, arrays, axis, i)


@array_tangent(split_part)
def split_part_tangent(whole, result, g, *, arrays, axis, i):
    return split_part(g, arrays, axis, i)


@array_rule(join_part)
def join_part_rule(part, like, result, g, *, arrays, axis, i):
    return split_part(g, arrays, axis, i), None


@array_tangent(join_part)
def join_part_tangent(part, like, result, g, *, arrays, axis, i):
    return join_part(g, like, arrays, axis, i), None


@array_rule(restore_axes)
def restore_axes_rule(part, x, result, g, *, axis, keepdims):
    return np.reshape(g, np.shape(part)), None


@array_tangent(restore_axes)
def restore_axes_tangent(part, x, result, g, *, axis, keepdims):
    return restore_axes(g, x, axis, keepdims), None


@array_rule(prod_adjoint)
def prod_adjoint_rule(part, x, result, g, *, axis, keepdims):
    return (
        np.sum(
            prod_adjoint(np.ones_like(part), x, axis, keepdims) * g, axis=axis, keepdims=keepdims
        ),
        prod_pairs(g * restore_axes(part, x, axis, keepdims), x, axis),
    )


@array_tangent(prod_adjoint)
def prod_adjoint_tangent(part, x, result, g, *, axis, keepdims):
    return (
        prod_adjoint(g, x, axis, keepdims),
        prod_pairs(g, x, axis) * restore_axes(part, x, axis, keepdims),
    )


# cumprod_adjoint(part, x) is J(x)^T part, J the Jacobian of np.cumprod, and cumprod_jvp(v, x)
# is J(x) v: linear in their first argument, each other's transpose there. Their derivatives
# in x are second derivatives of np.cumprod: cumprod_pairs (a Hessian, its own transpose)
# and cumprod_second, which have no rules (third derivatives are not supported).
@array_rule(cumprod_adjoint)
def cumprod_adjoint_rule(part, x, result, g, *, axis):
    return cumprod_jvp(g, x, axis), cumprod_pairs(g, part, x, axis)


@array_tangent(cumprod_adjoint)
def cumprod_adjoint_tangent(part, x, result, g, *, axis):
    return cumprod_adjoint(g, x, axis), cumprod_pairs(g, part, x, axis)


@array_rule(cumprod_jvp)
def cumprod_jvp_rule(part, x, result, g, *, axis):
    return cumprod_adjoint(g, x, axis), cumprod_pairs(part, g, x, axis)


@array_tangent(cumprod_jvp)
def cumprod_jvp_tangent(part, x, result, g, *, axis):
    return cumprod_jvp(g, x, axis), cumprod_second(part, g, x, axis)


@array_rule(assemble, variadic=True)
def assemble_rule(parts, result, g, *, tree, paths):
    return assemble_adjoint(g, parts, paths)


@array_tangent(assemble, variadic=True)
def assemble_tangent(parts, result, g, *, tree, paths):
    return assemble(g, tree, paths)


# cofactors(x) is det's gradient, so its derivative is det's Hessian: a symmetric map, its
# own transpose, which cofactors_tangent applies (singular matrices included).
@array_rule(cofactors)
def cofactors_rule(x, result, g):
    return cofactors_tangent(x, result, g)


array_tangent(cofactors)(cofactors_rule)
