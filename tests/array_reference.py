"""Finite-difference reference gradients for functions of NumPy arrays and pytrees.

A *pytree* is a float, a NumPy scalar, a float ndarray, or a (nested) tuple, list or dict of
them; non-float leaves (ints, bools, int or bool arrays) are data, never differentiated. The
reference is a central difference in float64 refined by one Richardson step:

    D(h) = (f(x + h) - f(x - h)) / 2h,    grad ~ (4 D(h/2) - D(h)) / 3,

per input element, with ``h = STEP * max(1, |x_i|)``. The truncation error is O(h^4) and the
rounding error about ``eps * |f| / h``, so the reference is good to roughly 1e-10 relative
when ``f`` is smooth within ``h`` of the point (inputs must stay more than ``STEP * max(1,
|x_i|)`` away from kinks such as ``abs`` at 0, ties of ``max`` or a ``clip`` bound). Float32
leaves are evaluated in float64 and the result is cast back to float32.

A candidate gradient ``g`` passes :func:`check_gradient` when, leaf by leaf, it has the
structure, shape and dtype of the input and ``|g - ref| <= atol + rtol * |ref|`` elementwise,
where ``atol = ATOL * max(1, max |ref|)`` over all leaves and (rtol, ATOL) come from
``TOLERANCES`` by the input leaf's dtype (float32 gradients are computed in float32 by the
candidate, so they get a looser tolerance).

Typical use, once arrays are supported::

    check_gradient(case.fn, adcompile.grad(case.fn, wrt=case.wrt), case.make_args(rng), case.wrt)

where the candidate returns a tuple with one gradient per index in ``wrt``. Helpers:
:func:`finite_difference_grad` (the reference), :func:`assert_grads_close` (the comparison),
:func:`check_gradient` (both, plus the mutation check), :func:`call_without_mutation` (calls a
function and asserts its arguments are bit-identical afterwards) and
:func:`directional_difference` (one derivative along a direction, for inputs too large for
per-element differences, such as the benchmark sizes).
"""

from __future__ import annotations

import copy
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

STEP = 1e-3
# dtype name -> (rtol, atol relative to max(1, max |reference|)).
TOLERANCES: dict[str, tuple[float, float]] = {"float64": (1e-7, 1e-8), "float32": (2e-4, 2e-5)}

Tree = Any
Path = tuple[Any, ...]


# --- pytrees ------------------------------------------------------------------------------------


def is_float_leaf(leaf: Any) -> bool:
    """True for the leaves that are differentiated: floats, float scalars and float arrays."""
    if isinstance(leaf, bool | np.bool_):
        return False
    if isinstance(leaf, np.ndarray | np.floating):
        return np.issubdtype(leaf.dtype, np.floating)
    return isinstance(leaf, float)


def tree_leaves(tree: Tree, path: Path = ()) -> list[tuple[Path, Any]]:
    """The (path, leaf) pairs of ``tree`` in a fixed order (dict insertion order)."""
    if isinstance(tree, dict):
        return [pair for key, value in tree.items() for pair in tree_leaves(value, (*path, key))]
    if isinstance(tree, list | tuple):
        return [pair for i, value in enumerate(tree) for pair in tree_leaves(value, (*path, i))]
    return [(path, tree)]


def tree_map(fn: Callable[[Any], Any], tree: Tree) -> Tree:
    """A tree of the same structure with ``fn`` applied to every leaf."""
    if isinstance(tree, dict):
        return {key: tree_map(fn, value) for key, value in tree.items()}
    if isinstance(tree, list | tuple):
        return type(tree)(tree_map(fn, value) for value in tree)
    return fn(tree)


def tree_replace(tree: Tree, path: Path, leaf: Any) -> Tree:
    """A shallow rebuild of ``tree`` with the leaf at ``path`` replaced by ``leaf``."""
    if not path:
        return leaf
    head, rest = path[0], path[1:]
    if isinstance(tree, dict):
        return {**tree, head: tree_replace(tree[head], rest, leaf)}
    items = list(tree)
    items[head] = tree_replace(items[head], rest, leaf)
    return type(tree)(items)


def _to_float64(leaf: Any) -> Any:
    """A float64 copy of a float leaf (float stays float); other leaves unchanged."""
    if not is_float_leaf(leaf):
        return leaf
    if isinstance(leaf, np.ndarray):
        return leaf.astype(np.float64)
    return float(leaf)


def _like(value: Any, leaf: Any) -> Any:
    """``value`` (float64) cast to the type, shape and dtype of the input ``leaf``."""
    if isinstance(leaf, np.ndarray):
        return np.asarray(value, dtype=np.float64).astype(leaf.dtype).reshape(leaf.shape)
    if isinstance(leaf, np.floating):
        return leaf.dtype.type(value)
    return float(value)


# --- finite differences -------------------------------------------------------------------------


def _scalar(fn: Callable[..., Any], args: Sequence[Any]) -> float:
    """``fn(*args)`` as a Python float; raises if it is not a real scalar. ``fn`` gets copies:
    it may update a parameter in place (``x += w``), and ``args`` are reused."""
    out = fn(*copy.deepcopy(list(args)))
    if isinstance(out, np.ndarray) and out.shape != ():
        raise TypeError(f"function returned an array of shape {out.shape}, not a scalar")
    return float(out)


def _leaf_fd(evaluate: Callable[[Any], float], leaf: Any, step: float) -> Any:
    """Richardson-refined central differences of ``evaluate`` at every element of ``leaf``."""
    base = np.array(leaf, dtype=np.float64)
    flat = base.reshape(-1)
    out = np.empty(flat.shape)
    for i in range(flat.size):
        h = step * max(1.0, abs(flat[i]))
        out[i] = (4.0 * _central(evaluate, base, i, h / 2) - _central(evaluate, base, i, h)) / 3.0
    return out.reshape(base.shape)


def _central(evaluate: Callable[[Any], float], base: np.ndarray, i: int, h: float) -> float:
    """(f(x + h e_i) - f(x - h e_i)) / 2h, where ``evaluate`` maps a leaf value to f."""
    plus, minus = base.copy(), base.copy()
    plus.reshape(-1)[i] += h
    minus.reshape(-1)[i] -= h
    return (evaluate(plus) - evaluate(minus)) / (2.0 * h)


def _fd_tree(fn: Callable[..., Any], args: list[Any], k: int, step: float) -> Tree:
    """The finite-difference gradient of ``fn`` with respect to ``args[k]`` (float64 leaves)."""
    grads = {}
    for path, leaf in tree_leaves(args[k]):
        if not is_float_leaf(leaf):
            raise TypeError(f"argument {k} has a non-float leaf at {path!r}: {leaf!r}")

        def evaluate(value: Any, path: Path = path, leaf: Any = leaf) -> float:
            new = value if isinstance(leaf, np.ndarray) else float(value)
            trial = list(args)
            trial[k] = tree_replace(args[k], path, new)
            return _scalar(fn, trial)

        grads[path] = _leaf_fd(evaluate, leaf, step)
    return _rebuild(args[k], grads)


def _rebuild(tree: Tree, grads: dict[Path, Any]) -> Tree:
    """A tree shaped like ``tree`` whose leaves are ``grads[path]``."""
    out = tree
    for path, value in grads.items():
        out = tree_replace(out, path, value)
    return out


def finite_difference_grad(
    fn: Callable[..., Any], args: Sequence[Any], wrt: Sequence[int], step: float = STEP
) -> tuple[Tree, ...]:
    """Reference gradients of scalar ``fn(*args)``: one tree per ``wrt`` index, like the input."""
    args64 = [tree_map(_to_float64, copy.deepcopy(a)) for a in args]
    out = []
    for k in wrt:
        grad64 = _fd_tree(fn, args64, k, step)
        out.append(_cast_like(grad64, args[k]))
    return tuple(out)


def _cast_like(grad64: Tree, like: Tree) -> Tree:
    """``grad64`` with each leaf cast to the type and dtype of the matching leaf of ``like``."""
    pairs = dict(tree_leaves(grad64))
    return _rebuild(like, {path: _like(pairs[path], leaf) for path, leaf in tree_leaves(like)})


def directional_difference(
    fn: Callable[..., Any], args: Sequence[Any], wrt: Sequence[int], directions: Sequence[Tree]
) -> float:
    """The derivative of ``fn`` along ``directions`` (one tree per ``wrt`` index), by FD."""
    args64 = [tree_map(_to_float64, copy.deepcopy(a)) for a in args]

    def shifted(t: float) -> float:
        trial = list(args64)
        for k, d in zip(wrt, directions, strict=True):
            trial[k] = _axpy(t, d, args64[k])
        return _scalar(fn, trial)

    h = STEP
    d1 = (shifted(h) - shifted(-h)) / (2 * h)
    d2 = (shifted(h / 2) - shifted(-h / 2)) / h
    return (4.0 * d2 - d1) / 3.0


def _axpy(t: float, d: Tree, x: Tree) -> Tree:
    """``x + t * d`` leaf by leaf, keeping float leaves as floats."""
    pairs = dict(tree_leaves(d))
    return _rebuild(x, {p: _like(np.asarray(v) + t * pairs[p], v) for p, v in tree_leaves(x)})


# --- comparison ---------------------------------------------------------------------------------


def _check_leaf(path: str, got: Any, ref: Any, atol_scale: float) -> None:
    """Assert one candidate leaf has the reference's kind, shape, dtype and values."""
    if isinstance(ref, np.ndarray):
        assert isinstance(got, np.ndarray), f"{path}: expected an ndarray, got {type(got)}"
        assert got.shape == ref.shape, f"{path}: shape {got.shape} != {ref.shape}"
        assert got.dtype == ref.dtype, f"{path}: dtype {got.dtype} != {ref.dtype}"
    else:
        assert isinstance(got, numbers.Real) or (isinstance(got, np.ndarray) and got.shape == ()), (
            f"{path}: expected a real scalar, got {type(got)}"
        )
        if isinstance(ref, np.floating):
            assert np.asarray(got).dtype == ref.dtype, f"{path}: dtype {np.asarray(got).dtype}"
    rtol, atol = TOLERANCES[str(np.asarray(ref).dtype)]
    g, r = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    assert np.all(np.isfinite(g)), f"{path}: non-finite gradient {g}"
    err = np.abs(g - r) - (atol * atol_scale + rtol * np.abs(r))
    assert np.all(err <= 0), f"{path}: gradient\n{g}\n!= finite differences\n{r}"


def assert_same_structure(got: Tree, ref: Tree, path: str = "grad") -> None:
    """Assert ``got`` has the container structure of ``ref`` (same types, lengths, dict keys)."""
    if isinstance(ref, dict):
        assert isinstance(got, dict), f"{path}: expected a dict, got {type(got).__name__}"
        assert set(got) == set(ref), f"{path}: keys {sorted(got)} != {sorted(ref)}"
        for key in ref:
            assert_same_structure(got[key], ref[key], f"{path}[{key!r}]")
    elif isinstance(ref, list | tuple):
        assert type(got) is type(ref), f"{path}: expected {type(ref).__name__}, got {type(got)}"
        assert len(got) == len(ref), f"{path}: length {len(got)} != {len(ref)}"
        for i, (g, r) in enumerate(zip(got, ref, strict=True)):
            assert_same_structure(g, r, f"{path}[{i}]")
    else:
        assert not isinstance(got, dict | list | tuple), f"{path}: expected a leaf, got {got!r}"


def assert_grads_close(got: Sequence[Tree], ref: Sequence[Tree]) -> None:
    """Assert candidate gradients match reference ones in structure, shape, dtype and value."""
    assert isinstance(got, tuple), f"expected a tuple of gradients, got {type(got).__name__}"
    assert len(got) == len(ref), f"{len(got)} gradients, expected {len(ref)}"
    scale = max([1.0] + [float(np.max(np.abs(v), initial=0.0)) for _, v in tree_leaves(ref)])
    for i, (g, r) in enumerate(zip(got, ref, strict=True)):
        assert_same_structure(g, r, f"grad[{i}]")
        got_leaves = dict(tree_leaves(g))
        for path, leaf in tree_leaves(r):
            _check_leaf(f"grad[{i}]{list(path)}", got_leaves[path], leaf, scale)


# --- mutation -----------------------------------------------------------------------------------


def assert_trees_identical(after: Tree, before: Tree, path: str = "arg") -> None:
    """Assert two trees have equal structure and bit-identical leaves (values, dtypes, shapes)."""
    assert_same_structure(after, before, path)
    got = dict(tree_leaves(after))
    for p, old in tree_leaves(before):
        new = got[p]
        assert type(new) is type(old), f"{path}{list(p)}: type changed to {type(new)}"
        if isinstance(old, np.ndarray):
            assert new.dtype == old.dtype and new.shape == old.shape, f"{path}{list(p)} changed"
            assert np.array_equal(new, old, equal_nan=True), f"{path}{list(p)}: values changed"
        else:
            assert new == old or (new != new and old != old), f"{path}{list(p)}: {old} -> {new}"


def call_without_mutation(fn: Callable[..., Any], args: Sequence[Any]) -> Any:
    """Call ``fn(*args)``, assert no argument was mutated, and return the result."""
    before = copy.deepcopy(list(args))
    out = fn(*args)
    for i, (after, old) in enumerate(zip(args, before, strict=True)):
        assert_trees_identical(after, old, f"arg {i}")
    return out


def check_gradient(
    fn: Callable[..., Any],
    grad_fn: Callable[..., Any],
    args: Sequence[Any],
    wrt: Sequence[int],
) -> tuple[Tree, ...]:
    """Assert ``grad_fn(*args)`` matches finite differences of ``fn`` and mutates nothing."""
    got = call_without_mutation(grad_fn, args)
    ref = finite_difference_grad(fn, args, wrt)
    assert_grads_close(got, ref)
    return got
