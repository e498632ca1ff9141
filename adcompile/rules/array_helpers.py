"""NumPy-only helper functions that generated array code calls.

The renderer copies the source of each helper a gradient uses into the generated module
(under a name that cannot collide with the user's), so a dumped module still needs nothing
but NumPy. They must therefore be self-contained: only ``np``, builtins and the other helpers
listed in ``HELPER_DEPENDENCIES`` may be named inside them, and no f-strings (astor renders
them through ``ast.Str``, deprecated since Python 3.12).
"""

import numpy as np


def unbroadcast(g, x):
    """The adjoint ``g`` summed down to the shape of ``x`` (undoing broadcasting), in its dtype."""
    if isinstance(g, float) and isinstance(x, float):
        return g  # two numbers (np.float64 is a float): nothing was broadcast
    try:
        if g.shape == x.shape and g.dtype == x.dtype and g.dtype.kind == "f":
            return g  # the common case: two float arrays, nothing was broadcast
    except AttributeError:  # a Python number on either side
        pass
    shape, dtype = np.shape(x), getattr(x, "dtype", None)
    extra = np.ndim(g) - len(shape)
    if extra > 0:
        g = np.sum(g, axis=tuple(range(extra)))
    if np.ndim(g) == len(shape):
        stretched = tuple(i for i, n in enumerate(shape) if n == 1 and np.shape(g)[i] != 1)
        if stretched:
            g = np.sum(g, axis=stretched, keepdims=True)
    if np.shape(g) != shape:  # a scalar zero standing for a whole array
        g = g + np.zeros(shape)
    if dtype is not None and dtype.kind == "f":
        if getattr(g, "dtype", dtype) != dtype:
            if g.dtype.kind == "c":  # a complex value the derivative read: not cast away
                raise TypeError(
                    "only real arrays are differentiated here; a complex value reached "
                    + "this argument's derivative (the derivative rules, np.abs's among "
                    + "them, are those of real values)"
                )
            g = np.asarray(g, dtype=dtype)
    elif isinstance(x, complex) or (dtype is not None and dtype.kind == "c"):
        raise TypeError(
            "only real arrays are differentiated here; this argument is complex (the "
            + "derivative rules, np.abs's among them, are those of real values)"
        )
    elif isinstance(g, int) or getattr(getattr(g, "dtype", None), "kind", "f") in "biu":
        g = np.asarray(g, dtype=float)  # an int input's zero gradient: partials are floats
    if not shape and isinstance(g, np.ndarray):
        g = g[()]  # a number's gradient is a number
    return g


def rebroadcast(g, like):
    """The transpose of ``unbroadcast(like, x)``: ``g`` spread back over ``like``'s shape."""
    shape = np.broadcast_shapes(np.shape(g), np.shape(like))
    return unbroadcast(np.broadcast_to(g, shape), like)


def broadcast_like(tangent, value):
    """``tangent`` spread to the shape of ``value`` (a broadcast operand's tangent is smaller)."""
    if np.shape(tangent) == np.shape(value):
        return tangent
    return np.broadcast_to(tangent, np.shape(value))


def scatter(g, x, index):
    """The adjoint of ``x[index]``: ``g`` added at ``index`` into zeros shaped like ``x``."""
    if isinstance(x, dict | list | tuple):
        raise TypeError(
            "a structured parameter (dict, list or tuple) can be indexed only with constant "
            "keys, one int or string such as params['W'] or layers[0]; indexing it with a "
            "variable (as a loop over its items does) or a tuple key is not supported yet"
        )
    out = np.zeros(np.shape(x), dtype=np.result_type(x, g, 1.0))
    if _may_repeat(index):  # np.add.at adds once per occurrence
        np.add.at(out, index, g)
    else:  # ints, slices, None, ... and masks select each element at most once
        out[index] = g
    return out


def _may_repeat(index):
    """Whether an index may select an element twice: it holds an integer array."""
    parts = index if isinstance(index, tuple) else (index,)
    return any(np.ndim(i) > 0 and np.asarray(i).dtype != bool for i in parts)


def scatter_into(acc, g, x, index):
    """``acc + scatter(g, x, index)``, added into ``acc`` itself when it is an array of the
    sum's shape and dtype: a reverse loop's own accumulator (``in_place.py``), so that each
    ``x[i]`` read costs its item, not a new array the size of ``x``."""
    if isinstance(acc, np.ndarray) and isinstance(x, np.ndarray) and acc.shape == x.shape:
        if isinstance(g, float) and isinstance(index, int) and acc.dtype == np.float64:
            acc[index] += g  # the common case, first: one number at one place
            return acc
        if acc.dtype == np.result_type(acc, x, g, 1.0):
            if _may_repeat(index):
                np.add.at(acc, index, g)
            else:
                acc[index] += g
            return acc
    return acc + scatter(g, x, index)


def restore_axes(g, x, axis, keepdims):
    """The adjoint of a reduction of ``x`` over ``axis``, with the reduced axes put back."""
    if axis is not None and not keepdims:
        g = np.expand_dims(g, axis)
    return g


def extreme_adjoint(g, x, result, axis, keepdims):
    """The adjoint of ``np.max``/``np.min``: ``g`` shared equally among the tied extremes."""
    result = restore_axes(result, x, axis, keepdims)
    hits = x == result
    g = restore_axes(g, x, axis, keepdims)
    # counted in g's float type: an int count would make a float32 share float64
    dtype = g.dtype if isinstance(g, np.ndarray) and g.dtype.kind == "f" else None
    return hits * (g / np.sum(hits, axis=axis, keepdims=True, dtype=dtype))


def extreme_tangent(g, x, result, axis, keepdims):
    """``g`` averaged over the tied extremes of ``x``: the tangent of ``np.max``/``np.min``.

    It is also the transpose of ``extreme_adjoint`` in its first argument.
    """
    weights = extreme_adjoint(np.ones_like(result), x, result, axis, keepdims)
    return np.sum(weights * g, axis=axis, keepdims=keepdims)


def prod_adjoint(g, x, axis, keepdims):
    """The adjoint of ``np.prod``: the product of the other factors, zeros allowed."""
    flat, order = _grouped(x, axis)
    return _ungrouped(_others(flat), order) * restore_axes(g, x, axis, keepdims)


def prod_pairs(v, x, axis):
    """``np.prod``'s second derivative applied to ``v``, exact with zeros.

    Per reduction group: ``w[j]`` is the sum over ``i != j`` of ``v[i]`` times the product of
    the ``x[k]`` with ``k`` neither ``i`` nor ``j``. It is both the tangent of the factors
    ``prod_adjoint`` multiplies by and (the matrix being symmetric) its transpose.
    """
    flat, order = _grouped(x, axis)
    values = _grouped(v, axis)[0]
    eye = np.eye(flat.shape[-1], dtype=bool)
    rows = np.where(eye, 1.0, flat[..., None, :])  # row j: the group with x[j] set to 1
    pairs = np.where(eye, 0.0, _others(rows))
    return _ungrouped(np.sum(pairs * values[..., None, :], axis=-1), order)


def _grouped(x, axis):
    """``x`` with the reduced axes moved last and merged into one, and how to undo that."""
    axes = tuple(range(np.ndim(x))) if axis is None else np.atleast_1d(axis)
    axes = tuple(int(a) % np.ndim(x) for a in axes)
    order = [a for a in range(np.ndim(x)) if a not in axes] + list(axes)
    moved = np.transpose(x, order)
    kept = moved.shape[: np.ndim(x) - len(axes)]
    merged = int(np.prod(moved.shape[len(kept) :]))  # not -1: a size-0 array may be reshaped
    return moved.reshape((*kept, merged)), (order, moved.shape)


def _ungrouped(flat, undo):
    """The inverse of ``_grouped``."""
    order, shape = undo
    return np.transpose(flat.reshape(shape), np.argsort(order))


def _others(flat):
    """The product of the other elements along the last axis, zeros allowed."""
    ones = np.ones_like(flat[..., :1])
    before = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    after = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    return before * after


def cofactors(x):
    """The cofactor matrix of (each matrix in) ``x``: the derivative of ``np.linalg.det``,
    defined for singular matrices too. ``det(x) * inv(x)^T`` where ``x`` is invertible; else
    from ``x = u diag(s) vt``: ``det(u) det(vt) u diag(product of the other s) vt``."""
    try:
        inverse = np.linalg.inv(x)
    except np.linalg.LinAlgError:  # singular (in a stack: at least one of them)
        u, s, vt = np.linalg.svd(x)
        sign = np.linalg.det(u) * np.linalg.det(vt)
        return np.expand_dims(sign, (-1, -2)) * ((u * _others(s)[..., None, :]) @ vt)
    return np.expand_dims(np.linalg.det(x), (-1, -2)) * np.swapaxes(inverse, -1, -2)


def cofactors_tangent(x, c, g):
    """The derivative of ``c = cofactors(x)`` in the direction ``g`` (det's Hessian applied to
    ``g``, a symmetric map: its own adjoint), defined for singular matrices too. Where ``x`` is
    invertible: ``c tr(inv(x) g) - det(x) (inv(x) g inv(x))^T``; else the same formula taken
    at ``diag(s)`` of ``x = u diag(s) vt``, written with products of all the ``s`` but two."""
    try:
        inverse = np.linalg.inv(x)
    except np.linalg.LinAlgError:  # singular (in a stack: at least one of them)
        return _cofactors_tangent_by_svd(x, g)
    along = np.expand_dims(np.sum(np.swapaxes(inverse, -1, -2) * g, axis=(-2, -1)), (-1, -2))
    det = np.expand_dims(np.linalg.det(x), (-1, -2))
    return along * c - det * np.swapaxes(inverse @ g @ inverse, -1, -2)


def _cofactors_tangent_by_svd(x, g):
    """``cofactors_tangent`` from the SVD: at ``diag(s)`` the adjugate's derivative in the
    direction ``e`` is ``-e[a, b] p[a, b]`` off the diagonal and ``sum(e[k, k] p[a, k])`` on
    it, where ``p[a, b]`` is the product of the ``s`` but ``s[a]`` and ``s[b]``."""
    u, s, vt = np.linalg.svd(x)
    sign = np.expand_dims(np.linalg.det(u) * np.linalg.det(vt), (-1, -2))
    e = np.swapaxes(u, -1, -2) @ g @ np.swapaxes(vt, -1, -2)
    eye = np.eye(s.shape[-1], dtype=bool)
    pairs = np.where(eye, 0.0, _others(np.where(eye, 1.0, s[..., None, :])))
    on_diagonal = np.sum(pairs * np.diagonal(e, axis1=-2, axis2=-1)[..., None, :], axis=-1)
    adjugate_tangent = np.where(eye, on_diagonal[..., :, None], -e * pairs)
    return sign * (u @ np.swapaxes(adjugate_tangent, -1, -2) @ vt)


def matmul_adjoint_a(g, a, b):
    """The adjoint of ``a`` in ``a @ b`` (vectors, matrices and stacks of matrices)."""
    a_ndim, b_ndim = getattr(a, "ndim", None), getattr(b, "ndim", None)
    if a_ndim is None or b_ndim is None:  # a number, or a nested list (as `@` reads it)
        a = np.asarray(a) if isinstance(a, list | tuple) else a
        b = np.asarray(b) if isinstance(b, list | tuple) else b
        a_ndim, b_ndim = np.ndim(a), np.ndim(b)
    if a_ndim == 2 and b_ndim == 1:  # matrix @ vector: the outer product (faster than np.outer)
        return g[:, None] * b
    if a_ndim == 2 and b_ndim == 2:
        return g @ b.T
    if a_ndim == 0 or b_ndim == 0:  # np.dot with a scalar multiplies
        return unbroadcast(g * b, a)
    if b_ndim == 1:
        return unbroadcast(g[..., None] * b, a) if a_ndim > 1 else g * b
    if a_ndim == 1:
        return unbroadcast(np.matmul(b, g[..., None])[..., 0], a)
    return unbroadcast(np.matmul(g, np.swapaxes(b, -1, -2)), a)


def matmul_adjoint_b(g, a, b):
    """The adjoint of ``b`` in ``a @ b`` (vectors, matrices and stacks of matrices)."""
    a_ndim, b_ndim = getattr(a, "ndim", None), getattr(b, "ndim", None)
    if a_ndim is None or b_ndim is None:  # a number, or a nested list (as `@` reads it)
        a = np.asarray(a) if isinstance(a, list | tuple) else a
        b = np.asarray(b) if isinstance(b, list | tuple) else b
        a_ndim, b_ndim = np.ndim(a), np.ndim(b)
    if a_ndim == 2 and b_ndim == 1:  # matrix @ vector
        return g @ a
    if a_ndim == 2 and b_ndim == 2:
        return a.T @ g
    if a_ndim == 0 or b_ndim == 0:
        return unbroadcast(g * a, b)
    if a_ndim == 1:
        return unbroadcast(a[:, None] * g[..., None, :], b) if b_ndim > 1 else g * a
    if b_ndim == 1:
        return unbroadcast(np.matmul(g[..., None, :], a)[..., 0, :], b)
    return unbroadcast(np.matmul(np.swapaxes(a, -1, -2), g), b)


def split_adjoint(g, arrays, axis):
    """The adjoints of the arrays joined by ``np.concatenate(arrays, axis)``."""
    if axis is None:  # the arrays were flattened first
        ends = np.cumsum([np.size(a) for a in arrays])[:-1]
        return [np.reshape(p, np.shape(a)) for p, a in zip(np.split(g, ends), arrays, strict=True)]
    ends = np.cumsum([np.shape(a)[axis] for a in arrays])[:-1]
    return np.split(g, ends, axis=axis)


def split_part(g, arrays, axis, i):
    """The piece of ``g`` for the ``i``-th array joined by ``np.concatenate(arrays, axis)``."""
    return split_adjoint(g, arrays, axis)[i]


def join_part(part, g, arrays, axis, i):
    """``part`` as piece ``i`` of zeros shaped like ``g`` (the transpose of ``split_part``)."""
    pieces = [np.zeros_like(piece) for piece in split_adjoint(g, arrays, axis)]
    pieces[i] = part
    if axis is None:  # the arrays were flattened first
        return np.concatenate([np.ravel(piece) for piece in pieces])
    return np.concatenate(pieces, axis=axis)


def contraction(a, b, a_axis, b_axis):
    """``np.tensordot(a, b, axes=(a_axis, b_axis))``, or the product when either is a scalar.

    ``np.dot`` contracts the last axis of ``a`` with the second-to-last of ``b`` (the last
    if ``b`` is a vector); ``np.inner`` contracts the last axes of both.
    """
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return a * b
    return np.tensordot(a, b, axes=(a_axis, b_axis))


def contraction_adjoint_a(g, a, b, a_axis, b_axis):
    """The adjoint of ``a`` in ``contraction(a, b, a_axis, b_axis)``."""
    na, nb = np.ndim(a), np.ndim(b)
    if na == 0 or nb == 0:  # a scalar operand multiplies
        return unbroadcast(g * b, a)
    b_axis = b_axis % nb
    g_axes = list(range(na - 1, na - 1 + nb - 1))
    out = np.tensordot(g, b, axes=(g_axes, [j for j in range(nb) if j != b_axis]))
    return np.moveaxis(out, -1, a_axis % na)


def contraction_adjoint_b(g, a, b, a_axis, b_axis):
    """The adjoint of ``b`` in ``contraction(a, b, a_axis, b_axis)``."""
    na, nb = np.ndim(a), np.ndim(b)
    if na == 0 or nb == 0:
        return unbroadcast(g * a, b)
    a_axis = a_axis % na
    # Sum over the free axes of a, then put the contracted axis back in place.
    out = np.tensordot(a, g, axes=([i for i in range(na) if i != a_axis], list(range(na - 1))))
    return np.moveaxis(out, 0, b_axis % nb)


def trace_adjoint(g, x):
    """The adjoint of ``np.trace(x)``: ``g`` on the diagonal of the first two axes."""
    rows, cols = np.shape(x)[:2]
    eye = np.eye(rows, cols).reshape((rows, cols) + (1,) * (np.ndim(x) - 2))
    return eye * g


def diagonal_ones(x, subscripts):
    """Ones shaped like ``x`` where the axes that ``subscripts`` (einsum labels, one per
    axis of ``x``) label alike have equal indices, zeros elsewhere: ``"ii"`` gives the
    identity. Its dtype is ``x``'s if a float, else float64."""
    head, _, tail = subscripts.partition("...")
    ndim = np.ndim(x)
    # Labels after "..." name the last axes.
    axes = list(enumerate(head)) + [(ndim - len(tail) + i, label) for i, label in enumerate(tail)]
    index = np.indices(np.shape(x), sparse=True)
    mask = np.ones(np.shape(x), dtype=bool)
    first = {}
    for axis, label in axes:
        if label in first:
            mask = mask & (index[first[label]] == index[axis])
        else:
            first[label] = axis
    return mask.astype(np.result_type(x, 1.0))


def diff_adjoint(g, x, n, axis):
    """The adjoint of ``np.diff(x, n, axis)``: ``g`` with ``n`` zeros added at both ends of
    ``axis``, differenced ``n`` times, times ``(-1) ** n`` (one difference's transpose is
    minus the difference of ``g`` padded with a zero at each end)."""
    if n == 0:  # np.diff(x, 0) is x (a 0-d x too, which has no axis to read)
        return g * 1.0  # a new array, of a float dtype
    if np.shape(g)[axis] == 0:  # n >= the length: nothing depended on x
        return np.zeros(np.shape(x), np.result_type(g, 1.0))
    widths = [(0, 0)] * np.ndim(g)
    widths[axis] = (n, n)
    return (-1.0) ** n * np.diff(np.pad(g, widths), n, axis)


def cumprod_adjoint(g, x, axis):
    """The adjoint of ``np.cumprod(x, axis)``, exact with zeros (it never divides by ``x``).

    Along the axis, ``x[j]``'s adjoint is the product of the elements before it times
    ``s[j] = g[j] + x[j + 1] * s[j + 1]``: the sum over the later running products of
    their factors after ``x[j]``, a linear recurrence that ``_linear_scan`` runs backwards.
    """
    flat = _along_last(x, axis)
    after = _linear_scan(_shifted(flat, -1), _along_last(g, axis), True)
    return _back_from_last(_exclusive_cumprod(flat) * after, x, axis)


def cumprod_jvp(v, x, axis):
    """The derivative of ``np.cumprod(x, axis)`` along ``v`` (the transpose of
    ``cumprod_adjoint``): ``d[i] = x[i] * d[i - 1] + (product before x[i]) * v[i]``."""
    flat = _along_last(x, axis)
    tangent = _linear_scan(flat, _exclusive_cumprod(flat) * _along_last(v, axis), False)
    return tangent if _flattens(x, axis) else np.moveaxis(tangent, -1, axis)


def cumprod_pairs(v, p, x, axis):
    """The Hessian of ``sum(p * np.cumprod(x, axis))`` applied to ``v``, exact with zeros:
    the derivative of ``cumprod_adjoint(p, x, axis)`` along ``v`` (both of its factors'
    derivatives are linear recurrences like theirs). Being a Hessian, it is its own transpose."""
    flat, moved = _along_last(x, axis), _along_last(v, axis)
    following = _shifted(flat, -1)
    after = _linear_scan(following, _along_last(p, axis), True)
    before = _exclusive_cumprod(flat)
    before_tangent = _shifted(_linear_scan(flat, before * moved, False), 1)
    after_tangent = _linear_scan(following, _shifted(moved * after, -1), True)
    return _back_from_last(before_tangent * after + before * after_tangent, x, axis)


def cumprod_second(v, w, x, axis):
    """The second derivative of ``np.cumprod(x, axis)`` along ``v`` and ``w``: the derivative
    of ``cumprod_jvp(v, x, axis)`` along ``w``, a linear recurrence too, exact with zeros."""
    flat, along_v, along_w = _along_last(x, axis), _along_last(v, axis), _along_last(w, axis)
    before = _exclusive_cumprod(flat)
    first_v = _shifted(_linear_scan(flat, before * along_v, False), 1)
    first_w = _shifted(_linear_scan(flat, before * along_w, False), 1)
    second = _linear_scan(flat, along_w * first_v + along_v * first_w, False)
    return second if _flattens(x, axis) else np.moveaxis(second, -1, axis)


def _along_last(x, axis):
    """``x`` with ``axis`` moved last; with ``axis=None``, flattened (as NumPy's running
    sums and products read it, and a 0-d ``x`` with ``axis=0``)."""
    return np.ravel(x) if _flattens(x, axis) else np.moveaxis(x, axis, -1)


def _flattens(x, axis):
    """Whether ``np.cumprod(x, axis)`` reads ``x`` flattened: no axis, or a 0-d ``x``."""
    return axis is None or np.ndim(x) == 0


def _back_from_last(flat, x, axis):
    """The inverse of ``_along_last(x, axis)``: ``flat`` in the shape of ``x``."""
    return np.reshape(flat, np.shape(x)) if _flattens(x, axis) else np.moveaxis(flat, -1, axis)


def _shifted(z, by):
    """``z`` moved one place along the last axis, a zero filling the gap: ``z[i - 1]`` at
    ``i`` for ``by=1``, ``z[i + 1]`` for ``by=-1``."""
    zero = np.zeros((*np.shape(z)[:-1], 1), np.result_type(z, 1.0))
    if by > 0:
        return np.concatenate([zero, z], axis=-1)[..., :-1]
    return np.concatenate([z, zero], axis=-1)[..., 1:]


def _exclusive_cumprod(flat):
    """The product of the elements before each one along the last axis (1 for the first)."""
    one = np.ones((*np.shape(flat)[:-1], 1), np.result_type(flat, 1.0))
    return np.cumprod(np.concatenate([one, flat], axis=-1), axis=-1)[..., :-1]


def _linear_scan(a, b, backwards):
    """``s[i] = a[i] * s[i - 1] + b[i]`` along the last axis, ``s[0] = b[0]`` (``backwards``:
    ``s[i] = a[i] * s[i + 1] + b[i]``, from the end).

    By recursive doubling, as a parallel scan: log2(n) passes over the whole array, each
    folding in the terms twice as far back. Only products and sums of the ``a`` and ``b``
    (no division), so zeros in ``a`` are exact.
    """
    if backwards:
        return _linear_scan(a[..., ::-1], b[..., ::-1], False)[..., ::-1]
    s = np.array(b, dtype=np.result_type(a, b, 1.0))  # copies: updated below
    a = np.array(a, dtype=s.dtype)
    step = 1
    while step < s.shape[-1]:
        # Each right side is a new array, computed before its slice is overwritten.
        s[..., step:] = s[..., step:] + a[..., step:] * s[..., :-step]
        a[..., step:] = a[..., step:] * a[..., :-step]
        step *= 2
    return s


def gradient_like(tree, parts):
    """The gradient of a parameter, shaped like ``tree``, from the adjoints of its parts.

    ``tree`` may be an array, a number, or a (nested) dict, list or tuple of them. ``parts``
    is the adjoint of the whole, or a dict from keys to the parts below them (key ``()``:
    the adjoint of the value itself); whatever no part reaches gets zeros.
    """
    if type(parts) is not dict:
        return unbroadcast(parts, tree)
    if isinstance(tree, dict):
        if () in parts:  # a user rule's adjoint of the whole dict
            parts = _whole_as_parts(parts)
        grads = {}
        for key, value in tree.items():
            part = parts.get(key, {})
            grads[key] = (
                gradient_like(value, part) if type(part) is dict else unbroadcast(part, value)
            )
        return grads
    if isinstance(tree, list | tuple):
        if () in parts:  # a user rule's adjoint of the whole list
            parts = _whole_as_parts(parts)
        if not tree:  # its parts' adjoints are zeros from paths that read no item
            return type(tree)()
        below = {}
        for key, part in parts.items():  # layers[-1] and layers[1] may be the same item
            i = key % len(tree)
            below[i] = _merged(below[i], part) if i in below else part
        return type(tree)(gradient_like(value, below.get(i, {})) for i, value in enumerate(tree))
    if isinstance(tree, str | bytes | slice) or tree is ...:
        return 0.0  # a flag or an index (`mode="sum"`, `...`): no number, no derivative
    out = np.zeros(np.shape(tree), dtype=np.result_type(tree, 1.0))
    _add_parts(out, (), parts)
    return unbroadcast(out, tree)


def _whole_as_parts(parts):
    """``parts`` with the adjoint of the whole structured value (a user rule's, shaped like
    its dict or list argument) spread over its keys."""
    whole = parts[()]
    if not isinstance(whole, dict | list | tuple):
        raise TypeError("a structured parameter was used whole in arithmetic")
    rest = {key: part for key, part in parts.items() if key != ()}
    return _merged(rest, _as_parts(whole)) if rest else _as_parts(whole)


def _as_parts(adjoint):
    """A structured adjoint as parts: a dict from keys (or indices) to the parts below."""
    if isinstance(adjoint, dict):
        return {key: _as_parts(value) for key, value in adjoint.items()}
    if isinstance(adjoint, list | tuple):
        return {i: _as_parts(value) for i, value in enumerate(adjoint)}
    return adjoint


def _merged(a, b):
    """Two parts (adjoints or dicts of parts) of the same value, as one."""
    if type(a) is not dict and type(b) is not dict:
        return a + b
    if type(a) is not dict:
        a = {(): a}
    if type(b) is not dict:
        b = {(): b}
    out = dict(a)
    for key, part in b.items():
        out[key] = _merged(out[key], part) if key in out else part
    return out[()] if list(out) == [()] else out


def _add_parts(out, index, parts):
    """Add each adjoint in ``parts`` into ``out`` at ``index`` extended by its keys."""
    for key, part in parts.items():
        at = index if key == () else (*index, key)
        if type(part) is dict:
            _add_parts(out, at, part)
        elif np.ndim(part) != 0 or part != 0:  # adding zero would change nothing, and a
            np.add.at(out, at, part)  # part no path read may not exist (`x[0]` of an empty x)


def check_scalar(value):
    """Raise unless a function's value is a scalar: only scalars have a gradient."""
    if type(value) is not float and np.ndim(value) != 0:
        # No f-string: astor renders them through ast.Str, deprecated since Python 3.12.
        raise TypeError(
            "grad needs a function returning a scalar; this one returned an array of shape "
            + str(np.shape(value))
            + " (reduce it, e.g. with np.sum, or use jacobian)"
        )


def check_rule_adjoint(adjoint, x, rule):
    """Raise unless the adjoint a user's rule returned has the shape of its argument ``x``
    (as JAX's custom_vjp asks): ``unbroadcast`` would otherwise stretch a wrong one. For a
    dict, list or tuple argument: the same keys or length, and each leaf's shape."""
    if isinstance(x, dict | list | tuple):
        if _layout(adjoint) != _layout(x):
            raise ValueError(
                "the rule for "
                + rule
                + " returned an adjoint laid out as "
                + str(_layout(adjoint))
                + " (shapes) for an argument laid out as "
                + str(_layout(x))
                + "; return one with the argument's keys, items and shapes"
            )
    elif np.shape(adjoint) != np.shape(x):
        raise ValueError(
            "the rule for "
            + rule
            + " returned an adjoint of shape "
            + str(np.shape(adjoint))
            + " for an argument of shape "
            + str(np.shape(x))
            + "; return one of the argument's shape"
        )


def _layout(tree):
    """A (nested) dict, list or tuple with each leaf replaced by its shape."""
    return _rebuilt(tree, iter([np.shape(leaf) for leaf in _leaves(tree)]))


def forward_jacobian(jvp, args, wrt):
    """``(value, partials)`` by forward mode: one ``jvp`` call per element of each argument.

    Each partial has the shape ``value.shape + argument.shape``. A tuple (or dict, list)
    value gives one such partial per item; a structured argument gives a partial shaped like
    it, one array per leaf (as ``jax.jacfwd`` does). Forward mode carries one direction per
    pass, so an array of n elements takes n passes; reverse mode takes one per output element.
    """
    zeros = [_zeros_like(args[k]) for k in wrt]
    value, partials = None, []
    for position, k in enumerate(wrt):
        columns = []
        for tangents in _basis(zeros, position, args[k]):
            value, slope = jvp(*args, *tangents)
            columns.append(slope)
        if columns and all(np.size(leaf) for leaf in _leaves(args[k])):
            template = columns[0]
        else:  # an empty array: one pass along zero tangents gives the output's shapes
            value, template = jvp(*args, *zeros)
        partials.append(_stacked(columns, args[k], template))
    return value, partials


def _basis(zeros, position, arg):
    """Copies of the tangents ``zeros`` whose item ``position`` is, in turn, 1 at each element
    of (each leaf of) ``arg`` and 0 elsewhere."""
    leaves = _leaves(arg)
    for n, leaf in enumerate(leaves):
        for i in range(int(np.size(leaf))):
            basis = [_zero(other) for other in leaves]
            basis[n] = _unit(leaf, i)
            tangents = list(zeros)
            tangents[position] = _rebuilt(arg, iter(basis))
            yield tangents


def _zeros_like(tree):
    """A zero tangent for ``tree`` (an array, a number, or a structure of them)."""
    return _rebuilt(tree, iter([_zero(leaf) for leaf in _leaves(tree)]))


def _stacked(columns, arg, template):
    """Derivatives of an output along each element of the input ``arg``, as one array per
    output leaf and input leaf, of the output leaf's shape followed by the input leaf's.
    ``template`` is one column (any): the output's structure, also when ``arg`` is empty."""
    if isinstance(template, dict):
        return {
            key: _stacked([column[key] for column in columns], arg, template[key])
            for key in template
        }
    if isinstance(template, list | tuple):
        items = [
            _stacked([column[i] for column in columns], arg, template[i])
            for i in range(len(template))
        ]
        return type(template)(items)
    blocks, start = [], 0
    for leaf in _leaves(arg):
        size = int(np.size(leaf))
        part = [np.asarray(c) for c in columns[start : start + size]]
        if part:
            stacked = np.stack(part, axis=-1)
        else:  # no elements: no columns, an empty block
            stacked = np.zeros((*np.shape(template), 0), np.result_type(template, 1.0))
        blocks.append(stacked.reshape(stacked.shape[:-1] + np.shape(leaf)))
        start += size
    return _rebuilt(arg, iter(blocks))


def _leaves(tree):
    """The arrays and numbers of a (nested) dict, list or tuple, in order."""
    if isinstance(tree, dict):
        return [leaf for value in tree.values() for leaf in _leaves(value)]
    if isinstance(tree, list | tuple):
        return [leaf for value in tree for leaf in _leaves(value)]
    return [tree]


def _rebuilt(tree, leaves):
    """A structure like ``tree`` holding the next items of the iterator ``leaves``."""
    if isinstance(tree, dict):
        return {key: _rebuilt(value, leaves) for key, value in tree.items()}
    if isinstance(tree, list | tuple):
        return type(tree)([_rebuilt(value, leaves) for value in tree])
    return next(leaves)


def _zero(leaf):
    """A zero tangent for ``leaf``, in its float dtype (float32 stays float32)."""
    return _unit(leaf, None)


def _unit(leaf, i):
    """The tangent of ``leaf`` that is 1 at its element ``i`` (None: nowhere) and 0
    elsewhere. A NumPy leaf gets a NumPy tangent, also with no axes: a Python float cannot
    multiply a list (``x * [1.0, 2.0]``), which NumPy reads as an array."""
    if not isinstance(leaf, np.ndarray | np.generic):
        return 0.0 if i is None else 1.0
    unit = np.zeros(np.shape(leaf), np.result_type(leaf, 1.0))
    if i is not None:
        unit.flat[i] = 1.0
    return unit if isinstance(leaf, np.ndarray) else unit[()]


def forward_gradient(jvp, args, wrt, bare, with_value):
    """A gradient by forward mode (``forward_jacobian`` of a scalar function)."""
    value, partials = forward_jacobian(jvp, args, wrt)
    check_scalar(value)
    grads = []
    for partial, k in zip(partials, wrt, strict=True):  # each leaf in its input's shape and dtype
        pairs = zip(_leaves(partial), _leaves(args[k]), strict=True)
        grads.append(_rebuilt(args[k], iter([unbroadcast(p, x) for p, x in pairs])))
    result = grads[0] if bare else tuple(grads)
    return (value, result) if with_value else result


def assemble(parts, tree, paths):
    """``tree``'s gradient from the adjoints ``parts`` of its items at ``paths``.

    ``gradient_like`` with the parts listed: how a generated gradient's
    ``gradient_like(params, {'W': b_W, ...})`` is read back when it is differentiated again.
    """
    nested = {}
    for part, path in zip(parts, paths, strict=True):
        for key in reversed(path):
            part = {key: part}
        nested = _merged(nested, part if type(part) is dict else {(): part})
    return gradient_like(tree, nested)


def assemble_adjoint(g, parts, paths):
    """The adjoints of ``assemble``'s parts: each one's item of ``g``, in the part's shape."""
    out = []
    for part, path in zip(parts, paths, strict=True):
        item = g
        for key in path:
            item = item[key]
        out.append(rebroadcast(item, part))
    return out


HELPERS = {
    "unbroadcast": unbroadcast,
    "broadcast_like": broadcast_like,
    "scatter": scatter,
    "_may_repeat": _may_repeat,
    "scatter_into": scatter_into,
    "rebroadcast": rebroadcast,
    "restore_axes": restore_axes,
    "extreme_adjoint": extreme_adjoint,
    "extreme_tangent": extreme_tangent,
    "prod_adjoint": prod_adjoint,
    "prod_pairs": prod_pairs,
    "_grouped": _grouped,
    "_ungrouped": _ungrouped,
    "_others": _others,
    "cofactors": cofactors,
    "cofactors_tangent": cofactors_tangent,
    "_cofactors_tangent_by_svd": _cofactors_tangent_by_svd,
    "matmul_adjoint_a": matmul_adjoint_a,
    "matmul_adjoint_b": matmul_adjoint_b,
    "split_adjoint": split_adjoint,
    "split_part": split_part,
    "join_part": join_part,
    "contraction": contraction,
    "contraction_adjoint_a": contraction_adjoint_a,
    "contraction_adjoint_b": contraction_adjoint_b,
    "trace_adjoint": trace_adjoint,
    "diagonal_ones": diagonal_ones,
    "diff_adjoint": diff_adjoint,
    "cumprod_adjoint": cumprod_adjoint,
    "cumprod_jvp": cumprod_jvp,
    "cumprod_pairs": cumprod_pairs,
    "cumprod_second": cumprod_second,
    "_along_last": _along_last,
    "_back_from_last": _back_from_last,
    "_flattens": _flattens,
    "_shifted": _shifted,
    "_exclusive_cumprod": _exclusive_cumprod,
    "_linear_scan": _linear_scan,
    "gradient_like": gradient_like,
    "_merged": _merged,
    "_whole_as_parts": _whole_as_parts,
    "_as_parts": _as_parts,
    "_add_parts": _add_parts,
    "check_scalar": check_scalar,
    "check_rule_adjoint": check_rule_adjoint,
    "_layout": _layout,
    "forward_jacobian": forward_jacobian,
    "_basis": _basis,
    "_zeros_like": _zeros_like,
    "_stacked": _stacked,
    "_leaves": _leaves,
    "_rebuilt": _rebuilt,
    "_zero": _zero,
    "_unit": _unit,
    "forward_gradient": forward_gradient,
    "assemble": assemble,
    "assemble_adjoint": assemble_adjoint,
}
for _name, _helper in HELPERS.items():
    # Generated modules' copies carry the same tag (``api.py``): the compiler reads their
    # calls as primitives with the rules of ``helper_rules.py``.
    _helper.adcompile_helper = _name

# The helpers each helper calls: copying one into a module copies these too.
HELPER_DEPENDENCIES = {
    "unbroadcast": (),
    "broadcast_like": (),
    "scatter": ("_may_repeat",),
    "_may_repeat": (),
    "scatter_into": ("scatter", "_may_repeat"),
    "rebroadcast": ("unbroadcast",),
    "restore_axes": (),
    "extreme_adjoint": ("restore_axes",),
    "extreme_tangent": ("extreme_adjoint",),
    "prod_adjoint": ("restore_axes", "_grouped", "_ungrouped", "_others"),
    "prod_pairs": ("_grouped", "_ungrouped", "_others"),
    "_grouped": (),
    "_ungrouped": (),
    "_others": (),
    "cofactors": ("_others",),
    "cofactors_tangent": ("_cofactors_tangent_by_svd",),
    "_cofactors_tangent_by_svd": ("_others",),
    "matmul_adjoint_a": ("unbroadcast",),
    "matmul_adjoint_b": ("unbroadcast",),
    "split_adjoint": (),
    "split_part": ("split_adjoint",),
    "join_part": ("split_adjoint",),
    "contraction": (),
    "contraction_adjoint_a": ("unbroadcast",),
    "contraction_adjoint_b": ("unbroadcast",),
    "trace_adjoint": (),
    "diagonal_ones": (),
    "diff_adjoint": (),
    "cumprod_adjoint": (
        "_along_last",
        "_back_from_last",
        "_shifted",
        "_exclusive_cumprod",
        "_linear_scan",
    ),
    "cumprod_jvp": ("_along_last", "_flattens", "_exclusive_cumprod", "_linear_scan"),
    "cumprod_pairs": (
        "_along_last",
        "_back_from_last",
        "_shifted",
        "_exclusive_cumprod",
        "_linear_scan",
    ),
    "cumprod_second": (
        "_along_last",
        "_flattens",
        "_shifted",
        "_exclusive_cumprod",
        "_linear_scan",
    ),
    "_along_last": ("_flattens",),
    "_back_from_last": ("_flattens",),
    "_flattens": (),
    "_shifted": (),
    "_exclusive_cumprod": (),
    "_linear_scan": (),
    "gradient_like": ("unbroadcast", "_merged", "_add_parts", "_whole_as_parts"),
    "_whole_as_parts": ("_merged", "_as_parts"),
    "_as_parts": (),
    "_merged": (),
    "_add_parts": (),
    "check_scalar": (),
    "check_rule_adjoint": ("_layout",),
    "_layout": ("_leaves", "_rebuilt"),
    "forward_jacobian": ("_basis", "_zeros_like", "_stacked"),
    "_basis": ("_leaves", "_rebuilt", "_zero", "_unit"),
    "_zeros_like": ("_leaves", "_rebuilt", "_zero"),
    "_stacked": ("_leaves", "_rebuilt"),
    "_leaves": (),
    "_rebuilt": (),
    "_zero": (),
    "_unit": (),
    "forward_gradient": ("forward_jacobian", "unbroadcast", "check_scalar", "_leaves", "_rebuilt"),
    "assemble": ("gradient_like", "_merged"),
    "assemble_adjoint": ("rebroadcast",),
}
