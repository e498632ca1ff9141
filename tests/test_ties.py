"""Ties of min/max: half the adjoint to each operand, as JAX and PyTorch do.

With the whole adjoint to the first operand (the convention before), ``max(x, c) + min(x,
c)``, which is ``x + c``, had derivative 2 at ``x == c``, and ``max(a, b) * min(a, b)``,
which is ``a * b``, had the gradient ``(2a, 0)`` at ``a == b``. The references are SymPy's
derivatives of those identities. ``np.clip`` keeps its own convention: inside the bounds,
bounds included (PyTorch's ``clamp``), with one bound too.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from adcompile import grad
from tests.helpers import module_from_source

SOURCE = """
import math

import numpy as np


def sum_of_extremes(x, c):
    return max(x, c) + min(x, c)


def product_of_extremes(a, b):
    return max(a, b) * min(a, b)


def difference_of_extremes(a, b):
    return max(a, b) - max(b, a)


def arrays_sum_of_extremes(x, c):
    return np.sum(np.maximum(x, c) + np.minimum(x, c))


def arrays_product_of_extremes(a, b):
    return np.sum(np.maximum(a, b) * np.minimum(a, b))


def clipped_below(x):
    return np.sum(np.clip(x, 0.5, None) * 3.0)


def clipped_above(x):
    return np.sum(np.clip(x, None, 0.5) * 3.0)


def root_of_max(x):
    return math.sqrt(max(x, 0.0))


def root_of_min(x):
    return math.sqrt(-min(x, 0.0))


def arrays_root_of_maximum(x):
    return np.sum(np.sqrt(np.maximum(x, 0.0)))


def arrays_root_of_minimum(x):
    return np.sum(np.sqrt(-np.minimum(x, 0.0)))


def arrays_root_of_clip_below(x):
    return np.sum(np.sqrt(np.clip(x, 0.0, None)))


def arrays_root_of_clip_above(x):
    return np.sum(np.sqrt(-np.clip(x, None, 0.0)))
"""

a, b = sp.symbols("a b", real=True)
IDENTITIES = {  # each function is one of these smooth expressions
    "sum_of_extremes": a + b,
    "product_of_extremes": a * b,
    "difference_of_extremes": sp.Integer(0),
}


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    return module_from_source(tmp_path_factory.mktemp("ties"), SOURCE)


def _expected(name: str, point: float) -> tuple[float, float]:
    expr = IDENTITIES[name]
    return tuple(float(sp.diff(expr, s).subs({a: point, b: point})) for s in (a, b))


@pytest.mark.parametrize("name", sorted(IDENTITIES))
@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_a_tie_of_two_gives_the_identitys_derivative(module, name, mode):
    function = getattr(module, name)
    for point in (0.5, -1.25, 3.0):
        assert grad(function, mode=mode)(point, point) == _expected(name, point)


@pytest.mark.parametrize("name", ["sum_of_extremes", "product_of_extremes"])
def test_arrays_tie_elementwise_as_scalars_do(module, name):
    function = getattr(module, f"arrays_{name}")
    x = np.array([0.5, -1.25, 3.0, 2.0])
    y = np.array([0.5, -1.25, 3.0, 1.0])  # three ties, and one pair apart
    for mode in ("reverse", "forward"):
        gx, gy = grad(function, mode=mode)(x, y)
        expected = [_expected(name, p) for p in x[:3]]
        np.testing.assert_array_equal(gx[:3], [e[0] for e in expected])
        np.testing.assert_array_equal(gy[:3], [e[1] for e in expected])
        smooth = sp.diff(sp.Max(a, b) + sp.Min(a, b) if "sum" in name else a * b, a)
        assert gx[3] == float(smooth.subs({a: 2.0, b: 1.0}))


def test_a_float32_tie_keeps_float32(module):
    x = np.array([0.5, 2.0], np.float32)
    gx, gy = grad(module.arrays_sum_of_extremes)(x, np.float32(0.5))
    assert gx.dtype == np.float32 and gx.tolist() == [1.0, 1.0] and gy == 2.0  # c: both


@pytest.mark.parametrize("name", ["clipped_below", "clipped_above"])
def test_one_sided_clip_passes_the_adjoint_at_its_bound(module, name):
    """A one-sided clip used np.maximum's rule; with ties split it would give 1.5 at the
    bound, where the two-sided clip gives 3 (the bound is inside)."""
    function = getattr(module, name)
    x = np.array([0.5, 0.0, 1.0])
    inside = x >= 0.5 if name == "clipped_below" else x <= 0.5
    for mode in ("reverse", "forward"):
        np.testing.assert_array_equal(grad(function, mode=mode)(x), 3.0 * inside)


# Each is sqrt(0) == 0 where the clamp holds the other operand (x < 0 for max, x > 0 for min),
# and sqrt(|x|) elsewhere: SymPy's derivative of that branch is the reference.
CLAMPED_ROOTS = {
    "root_of_max": (sp.sqrt(a), [-1.0, 4.0]),
    "root_of_min": (sp.sqrt(-a), [1.0, -4.0]),
    "arrays_root_of_maximum": (sp.sqrt(a), [-1.0, 4.0]),
    "arrays_root_of_minimum": (sp.sqrt(-a), [1.0, -4.0]),
    "arrays_root_of_clip_below": (sp.sqrt(a), [-1.0, 4.0]),
    "arrays_root_of_clip_above": (sp.sqrt(-a), [1.0, -4.0]),
}


@pytest.mark.parametrize("name", sorted(CLAMPED_ROOTS))
def test_an_infinite_adjoint_does_not_reach_the_clamped_operand(module, name):
    """sqrt's adjoint at 0 is infinite; the operand the clamp discards must get 0, not a
    ZeroDivisionError (the tie's second read of g was hoisted out of its branch) or nan
    (inf * False)."""
    branch, (clamped, free) = CLAMPED_ROOTS[name]
    expected = [0.0, float(sp.diff(branch, a).subs(a, free))]
    function = grad(getattr(module, name))
    if name.startswith("arrays_"):
        with np.errstate(divide="ignore"):  # sqrt's adjoint at 0 is inf before the mask
            got = function(np.array([clamped, free])).tolist()
    else:
        got = [function(clamped), function(free)]
    assert got == expected
