"""Every array derivative rule, run as plain NumPy, against finite differences and SymPy.

The array rule templates (``adcompile/rules/arrays.py``) are what the compiler inlines into
generated array code, so a wrong template means wrong gradients everywhere. ``CASES`` below
pairs every rule of the array table with check cases (shapes, broadcasting, static arguments,
value domains); a rule added without a case fails ``test_every_array_rule_has_a_case`` by
name. Each case checks the template as a vector-Jacobian product against central finite
differences, the unbroadcast contract (each adjoint has its argument's shape) and that the
template leaves its inputs alone. The helpers that generated gradient code calls
(``unbroadcast``, ``matmul_adjoint_a``, ...) have rules too (``hessian`` differentiates that
code again) and cases here; their arguments depend on each other (an adjoint shaped like a
result), so those cases draw the whole argument list (``Case.make``). The elementwise rules
are also checked on scalars against ``sympy.diff``, a few against float32 inputs, and the
helpers of ``array_helpers.py`` have unit tests of their own. Every other rule is checked
against ``sympy.diff`` on these same cases in ``test_array_rules_sympy.py``.

A case marked ``xfail`` (strict) records a known defect of a rule: the case fails today, and
will report XPASS, failing the run, once the rule is fixed and the mark must go.
"""

from __future__ import annotations

import copy
import functools
import math
import operator
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from adcompile.einsum import adjoint_statics, parse_subscripts
from adcompile.rules import RuleTable
from adcompile.rules.array_helpers import (
    assemble,
    broadcast_like,
    check_scalar,
    cofactors,
    contraction,
    contraction_adjoint_a,
    contraction_adjoint_b,
    cumprod_adjoint,
    cumprod_jvp,
    diagonal_ones,
    diff_adjoint,
    extreme_adjoint,
    extreme_tangent,
    gradient_like,
    join_part,
    matmul_adjoint_a,
    matmul_adjoint_b,
    prod_adjoint,
    rebroadcast,
    restore_axes,
    scatter,
    split_part,
    trace_adjoint,
    unbroadcast,
)
from adcompile.rules.arrays import clip_above, clip_below
from adcompile.rules.registry import Rule, array_rules
from adcompile.symbolic import sample_rule_arguments, sympy_counterpart

STEP = 1e-6  # central-difference step
RTOL = 1e-6  # relative tolerance of the finite-difference comparison
ATOL = 1e-8  # absolute tolerance, times 1 + sum|g * f(x)| (the rounding scale of <g, f>)
DIRECTIONS = 2  # random directions per argument
SYMPY_POINTS = 6  # random points per elementwise rule in the SymPy check

RULES = list(array_rules())

# A shape entry of ``None`` stands for a Python float argument.
Shape = tuple[int, ...] | None
Domain = Callable[[np.random.Generator, Shape], Any]


def rule_id(rule: Rule) -> str:
    """The readable name of a rule: ``numpy.sin/1``."""
    return f"{rule.name}/{rule.arity}"


# ----- value domains -------------------------------------------------------------------------


def _float_or_array(values: Any, shape: Shape) -> Any:
    """``values`` as a Python float when ``shape`` is None, else as a float64 array."""
    return float(values) if shape is None else np.asarray(values, dtype=np.float64)


def uniform(low: float, high: float) -> Domain:
    """Values drawn uniformly from ``[low, high]``."""

    def draw(rng: np.random.Generator, shape: Shape) -> Any:
        """Draw from the interval."""
        return _float_or_array(rng.uniform(low, high, size=shape), shape)

    return draw


def signed(low: float, high: float) -> Domain:
    """Magnitudes in ``[low, high]`` with random signs: away from zero (kinks, poles)."""

    def draw(rng: np.random.Generator, shape: Shape) -> Any:
        """Draw magnitudes and signs."""
        signs = rng.choice([-1.0, 1.0], size=shape)
        return _float_or_array(signs * rng.uniform(low, high, size=shape), shape)

    return draw


def on_grid(offset: float) -> Domain:
    """Integers plus ``offset``, jittered by up to 0.1: two such domains whose offsets differ
    by 0.5 never come within 0.3 of each other (no ties for maximum/minimum)."""

    def draw(rng: np.random.Generator, shape: Shape) -> Any:
        """Draw jittered grid points."""
        ints = rng.integers(-2, 2, size=shape)
        return _float_or_array(ints + offset + rng.uniform(-0.1, 0.1, size=shape), shape)

    return draw


def off_grid(rng: np.random.Generator, shape: Shape) -> Any:
    """Values at least 0.15 from every multiple of 0.5: floor, ceil, round... do not jump."""
    halves = rng.integers(-4, 4, size=shape) * 0.5
    return _float_or_array(halves + 0.25 + rng.uniform(-0.1, 0.1, size=shape), shape)


def distinct(rng: np.random.Generator, shape: Shape) -> Any:
    """Values at least 0.2 apart from each other: max and min reductions have no ties."""
    if shape is None:
        return rng.uniform(-2.0, 2.0)
    size = math.prod(shape)
    spaced = (rng.permutation(size) - size / 2) * 0.3 + rng.uniform(-0.05, 0.05, size=size)
    return spaced.reshape(shape)


def with_zeros(rng: np.random.Generator, shape: Shape) -> Any:
    """Values away from zero except for a few exact zeros (two in the first row)."""
    values = signed(0.5, 1.5)(rng, shape)
    values.flat[[0, 1, values.size - 1]] = 0.0
    return values


def zeros_at(*positions: int) -> Domain:
    """Values away from zero except exact zeros at the flat ``positions`` (negative: from
    the end), as in the middle of a running product."""

    def draw(rng: np.random.Generator, shape: Shape) -> Any:
        """Draw, then put the zeros in."""
        values = signed(0.5, 1.5)(rng, shape)
        values.flat[[p % values.size for p in positions]] = 0.0
        return values

    return draw


def clip_inputs(rng: np.random.Generator, shape: Shape) -> Any:
    """Values below, inside and above ``[-0.5, 0.5]``, at least 0.15 from the bounds."""
    pieces = np.array([[-2.0, -0.7], [-0.35, 0.35], [0.7, 2.0]])
    which = rng.integers(0, 3, size=shape)
    low, high = pieces[which, 0], pieces[which, 1]
    return _float_or_array(low + (high - low) * rng.uniform(size=shape), shape)


def well_conditioned(rng: np.random.Generator, shape: Shape) -> Any:
    """Diagonally dominant square matrices (or stacks): invertible, determinant away from 0."""
    assert shape is not None and shape[-1] == shape[-2]
    return 2.0 * np.eye(shape[-1]) + rng.uniform(-0.4, 0.4, size=shape)


def boolean(rng: np.random.Generator, shape: Shape) -> Any:
    """A boolean mask (a condition that is not a float: no finite difference)."""
    return rng.uniform(size=shape) < 0.5


def constant(value: object) -> Domain:
    """Always ``value`` (an integer exponent, say), whatever the shape."""
    return lambda rng, shape: value


ANY = uniform(-2.0, 2.0)
POSITIVE = uniform(0.2, 3.0)
UNIT = uniform(-0.9, 0.9)
NONZERO = signed(0.5, 2.0)


# ----- check cases ---------------------------------------------------------------------------


Make = Callable[[np.random.Generator], list[Any]]


@dataclass(frozen=True)
class Case:
    """One way to call a rule: argument shapes and domains, static arguments, what to check."""

    label: str
    shapes: tuple[Shape, ...] = ()
    domains: Domain | tuple[Domain, ...] = ANY
    statics: Mapping[str, object] = field(default_factory=dict)
    # Arguments whose adjoint is checked by finite differences (default: every float one).
    wrt: tuple[int, ...] | None = None
    xfail: str | None = None  # a known defect: the case must fail until the rule is fixed
    raises: type[Exception] = AssertionError  # how the known defect shows
    # Draws the whole argument list instead of ``shapes``/``domains``: for arguments that
    # depend on each other (an adjoint shaped like a result, ``np.max(x)`` passed with ``x``).
    make: Make | None = None

    def arguments(self, rng: np.random.Generator) -> list[Any]:
        """Draw the primal's differentiable arguments (the elements, for a variadic rule)."""
        if self.make is not None:
            assert not self.shapes, f"{self.label}: give shapes or make, not both"
            return self.make(rng)
        domains = self.domains if isinstance(self.domains, tuple) else (self.domains,)
        if len(domains) == 1:
            domains = domains * len(self.shapes)
        assert len(domains) == len(self.shapes), self.label
        return [domain(rng, shape) for domain, shape in zip(domains, self.shapes, strict=True)]


def cases(domains: Domain | tuple[Domain, ...], *specs: tuple[str, tuple[Shape, ...]]) -> list:
    """Cases that differ only in their shapes, all drawing from ``domains``."""
    return [Case(label, shapes, domains) for label, shapes in specs]


UNARY_SHAPES = (("matrix", ((3, 4),)), ("float", (None,)))
BINARY_SHAPES = (
    ("same-shape", ((3, 4), (3, 4))),
    ("broadcast-(3,1)-(1,4)", ((3, 1), (1, 4))),
    ("rank-extension-(3,)-(2,3)", ((3,), (2, 3))),
    ("rank-extension-(2,3)-(3,)", ((2, 3), (3,))),
    ("float-array", (None, (2, 3))),
    ("array-float", ((2, 3), None)),
    ("stretch-and-extend-(4,1,3)-(2,3)", ((4, 1, 3), (2, 3))),
)


def unary(domain: Domain = ANY) -> list[Case]:
    """The cases of an elementwise function of one argument."""
    return cases(domain, *UNARY_SHAPES)


def binary(*domains: Domain) -> list[Case]:
    """The broadcasting cases of an elementwise function of two arguments."""
    return cases(domains or ANY, *BINARY_SHAPES)


def power_cases() -> list[Case]:
    """``a ** b``: positive bases (both adjoints), and negative bases with integer exponents."""
    return [
        *binary(uniform(0.5, 2.0), ANY),
        Case("negative-base-int-exponent", ((3, 4), None), (ANY, constant(3)), wrt=(0,)),
        Case("square-by-int", ((2, 3), None), (ANY, constant(2)), wrt=(0,)),
    ]


def reduction_cases(domain: Domain) -> list[Case]:
    """Reductions over every kind of ``axis=`` and ``keepdims=``."""
    cube = (2, 3, 4)
    return [
        Case(label, (shape,), domain, statics)
        for label, shape, statics in (
            ("all", cube, {}),
            ("axis=1", cube, {"axis": 1}),
            ("axis=-1", cube, {"axis": -1}),
            ("axis=(0,2)", cube, {"axis": (0, 2)}),
            ("axis=(0,-1)-keepdims", cube, {"axis": (0, -1), "keepdims": True}),
            ("axis=1-keepdims", cube, {"axis": 1, "keepdims": True}),
            ("axis=None-keepdims", cube, {"axis": None, "keepdims": True}),
            ("vector-axis=0", (5,), {"axis": 0}),
            ("vector-keepdims=False", (5,), {"keepdims": False}),
        )
    ]


MATMUL_SHAPES = (
    ("matrix-matrix", ((3, 4), (4, 2))),
    ("vector-matrix", ((4,), (4, 2))),
    ("matrix-vector", ((3, 4), (4,))),
    ("vector-vector", ((4,), (4,))),
    ("stack-matrix", ((2, 3, 4), (4, 5))),
    ("broadcast-stacks", ((2, 1, 3, 4), (5, 4, 2))),
    ("vector-stack", ((4,), (2, 4, 3))),
    ("stack-vector", ((2, 3, 4), (4,))),
)


def matmul_cases() -> list[Case]:
    """``a @ b`` for vectors, matrices and broadcast stacks."""
    return cases(ANY, *MATMUL_SHAPES)


def index_forms() -> list[tuple[str, tuple[int, ...], object]]:
    """Every index form as ``(label, shape of x, index)``."""
    mask = np.arange(20).reshape(4, 5) % 3 == 0
    return [
        ("int", (4, 5), 1),
        ("negative-int", (4, 5), -1),
        ("slice", (4, 5), slice(1, 3)),
        ("step-slice", (4, 5), slice(None, None, -2)),
        ("slice-int", (4, 5), (slice(None), 2)),
        ("ellipsis-negative-int", (4, 5), (Ellipsis, -1)),
        ("none-slice", (4, 5), (None, slice(1, 3))),
        ("slice-none-int", (4, 5), (slice(None, None, 2), None, 3)),
        ("int-ellipsis-none", (2, 3, 4), (1, Ellipsis, None)),
        ("ellipsis-none-negative", (2, 3, 4), (Ellipsis, None, -1)),
        ("mask", (4, 5), mask),
        ("row-mask", (4, 5), np.array([True, False, True, True])),
        ("mask-in-tuple", (4, 5), (slice(1, 3), np.array([True, False, False, True, True]))),
        ("repeated-int-array", (4, 5), np.array([0, 2, 0, -1, 2])),
        ("repeated-list", (4, 5), [1, 1, 3]),
        ("2d-int-array", (4, 5), np.array([[0, 1], [1, 1]])),
        ("repeated-pairs", (4, 5), (np.array([0, 0, 3]), np.array([1, 1, -1]))),
        ("slice-int-array", (4, 5), (slice(1, 3), np.array([0, 0, 4]))),
        ("int-slice-int-array", (2, 3, 4), (0, slice(None), np.array([1, 1, 2]))),
        ("vector-int", (5,), 3),
    ]


def index_cases() -> list[Case]:
    """``x[index]`` for every index form (the index is a static argument)."""
    return [Case(label, (shape,), ANY, {"index": index}) for label, shape, index in index_forms()]


CASES: dict[tuple[object, int], list[Case]] = {}
for _primal in (operator.add, operator.sub, operator.mul, np.add, np.subtract, np.multiply):
    CASES[(_primal, 2)] = binary()
for _primal in (operator.truediv, np.divide):
    CASES[(_primal, 2)] = binary(ANY, NONZERO)
for _primal in (operator.neg, operator.pos, np.negative):
    CASES[(_primal, 1)] = unary()
for _primal in (operator.pow, np.power):
    CASES[(_primal, 2)] = power_cases()
for _primal in (operator.matmul, np.matmul):
    CASES[(_primal, 2)] = matmul_cases()
for _primal, _domain in (
    (np.sin, ANY),
    (np.cos, ANY),
    (np.tan, uniform(-1.2, 1.2)),
    (np.arcsin, UNIT),
    (np.arccos, UNIT),
    (np.arctan, ANY),
    (np.sinh, ANY),
    (np.cosh, ANY),
    (np.tanh, ANY),
    (np.arcsinh, ANY),
    (np.arccosh, uniform(1.1, 3.0)),
    (np.arctanh, UNIT),
    (np.cbrt, NONZERO),
    (np.exp2, ANY),
    (np.exp, ANY),
    (np.expm1, ANY),
    (np.log, POSITIVE),
    (np.log1p, uniform(-0.5, 3.0)),
    (np.log2, POSITIVE),
    (np.log10, POSITIVE),
    (np.sqrt, POSITIVE),
    (np.square, ANY),
    (np.copy, ANY),
    (np.reciprocal, NONZERO),
    (np.abs, signed(0.2, 2.0)),
    # Piecewise constant (adjoint None): away from the jumps, the derivative is 0.
    (np.floor, off_grid),
    (np.ceil, off_grid),
    (np.trunc, off_grid),
    (np.rint, off_grid),
    (np.round, off_grid),
    (np.sign, off_grid),
):
    CASES[(_primal, 1)] = unary(_domain)
CASES[(np.arctan2, 2)] = binary(signed(0.3, 2.0), signed(0.3, 2.0))
CASES[(np.hypot, 2)] = binary(signed(0.3, 2.0), signed(0.3, 2.0))
CASES[(np.logaddexp, 2)] = [
    *binary(),
    Case("far-apart", ((3, 4), (3, 4)), (uniform(-2.0, 2.0), uniform(30.0, 40.0))),
]
CASES[(np.maximum, 2)] = binary(on_grid(0.25), on_grid(0.75))
CASES[(np.minimum, 2)] = binary(on_grid(0.25), on_grid(0.75))
CASES[(clip_below, 2)] = binary(on_grid(0.25), on_grid(0.75))  # np.clip(x, lo, None)
CASES[(clip_above, 2)] = binary(on_grid(0.25), on_grid(0.75))  # np.clip(x, None, hi)
CASES[(np.where, 3)] = [
    # A float condition (nonzero is true) lets the check see that its derivative is 0.
    *cases(
        (signed(0.5, 1.5), ANY, ANY),
        ("same-shape", ((3, 4), (3, 4), (3, 4))),
        ("broadcast-condition", ((3, 1), (1, 4), None)),
        ("rank-extension", ((4,), (3, 4), (3, 1))),
    ),
    Case("bool-condition", ((3, 4), (3, 4), (4,)), (boolean, ANY, ANY), wrt=(1, 2)),
]
CASES[(np.clip, 3)] = cases(
    (clip_inputs, uniform(-0.55, -0.45), uniform(0.45, 0.55)),
    ("float-bounds", ((3, 4), None, None)),
    ("array-bounds", ((3, 4), (3, 1), (4,))),
    ("floats", (None, None, None)),
)
CASES[(np.sum, 1)] = reduction_cases(ANY)
CASES[(np.mean, 1)] = reduction_cases(ANY)


def spread_cases() -> list[Case]:
    """``np.var``/``np.std``: every reduction form, and the sample (``ddof=1``) versions."""
    return [
        *reduction_cases(ANY),
        Case("ddof=1", ((3, 4),), ANY, {"ddof": 1}),
        Case("axis=1-ddof=1-keepdims", ((3, 4),), ANY, {"axis": 1, "ddof": 1, "keepdims": True}),
        Case("axis=(0,2)-ddof=1", ((2, 3, 4),), ANY, {"axis": (0, 2), "ddof": 1}),
    ]


CASES[(np.var, 1)] = spread_cases()
CASES[(np.std, 1)] = spread_cases()
CASES[(np.max, 1)] = reduction_cases(distinct)
CASES[(np.min, 1)] = reduction_cases(distinct)
CASES[(np.prod, 1)] = [
    *reduction_cases(signed(0.5, 1.5)),
    Case("zeros", ((3, 4),), with_zeros),
    Case("zeros-axis=1", ((3, 4),), with_zeros, {"axis": 1}),
]
CASES[(np.dot, 2)] = [
    *cases(
        ANY,
        ("matrix-matrix", ((3, 4), (4, 2))),
        ("vector-vector", ((4,), (4,))),
        ("matrix-vector", ((3, 4), (4,))),
        ("vector-matrix", ((4,), (4, 2))),
        ("stack-matrix", ((2, 3, 4), (4, 5))),
    ),
    Case("float-vector", (None, (3,))),
    Case("matrix-3d", ((2, 3), (4, 3, 5))),
]
CASES[(np.inner, 2)] = [
    *cases(
        ANY,
        ("vector-vector", ((3,), (3,))),
        ("matrix-matrix", ((2, 3), (4, 3))),
        ("vector-matrix", ((3,), (4, 3))),
        ("matrix-vector", ((2, 3), (3,))),
        ("3d-matrix", ((2, 3, 4), (5, 4))),
    ),
    Case("float-vector", (None, (3,))),
    Case("matrix-3d", ((2, 3), (4, 5, 3))),
]
CASES[(np.outer, 2)] = cases(
    ANY,
    ("vectors", ((3,), (4,))),
    ("matrix-vector-flattened", ((2, 2), (3,))),
    ("float-vector", (None, (3,))),
)
CASES[(np.trace, 1)] = [
    *cases(ANY, ("square", ((3, 3),)), ("wide", ((2, 4),)), ("tall", ((4, 2),))),
    Case("3d", ((2, 2, 3),)),
]
CASES[(np.transpose, 1)] = [
    Case("matrix", ((2, 3),)),
    Case("3d-reversed", ((2, 3, 4),)),
    Case("axes=(1,2,0)", ((2, 3, 4),), statics={"axes": (1, 2, 0)}),
    Case("axes=(2,0,1)", ((2, 3, 4),), statics={"axes": (2, 0, 1)}),
    Case("axes=[1,0]", ((2, 3),), statics={"axes": [1, 0]}),
    Case("axes=(-1,0,1)", ((2, 3, 4),), statics={"axes": (-1, 0, 1)}),
]
CASES[(np.reshape, 1)] = [
    Case("matrix", ((2, 6),), statics={"shape": (3, 4)}),
    Case("minus-one", ((2, 3, 4),), statics={"shape": (-1, 4)}),
    Case("vector-to-3d", ((6,),), statics={"shape": (2, 3, 1)}),
    Case("flatten", ((2, 3),), statics={"shape": -1}),
]
CASES[(np.linalg.norm, 1)] = cases(NONZERO, ("vector", ((5,),)), ("matrix", ((3, 4),)))
for _primal in (np.linalg.det, np.linalg.inv, cofactors):
    CASES[(_primal, 1)] = [
        *cases(well_conditioned, ("2x2", ((2, 2),)), ("3x3", ((3, 3),))),
        Case("stack", ((2, 3, 3),), well_conditioned),
    ]
# NumPy 2: b is one vector only when b.ndim == 1; otherwise (..., M, K), stacks broadcast.
CASES[(np.linalg.solve, 2)] = cases(
    (well_conditioned, ANY),
    ("vector", ((3, 3), (3,))),
    ("matrix-rhs", ((3, 3), (3, 2))),
    ("one-column", ((3, 3), (3, 1))),
    ("stack-vector", ((2, 3, 3), (3,))),
    ("stack-stack", ((2, 3, 3), (2, 3, 2))),
    ("stack-matrix-rhs", ((2, 3, 3), (3, 2))),
    ("matrix-stack-rhs", ((3, 3), (2, 3, 4))),
    ("broadcast-stacks", ((2, 1, 3, 3), (4, 3, 2))),
)
CASES[(operator.getitem, 1)] = index_cases()
CASES[(np.concatenate, 1)] = [
    Case("default-axis", ((3,), (2,))),
    Case("axis=0", ((2, 3), (1, 3)), statics={"axis": 0}),
    Case("axis=1-three", ((2, 3), (2, 1), (2, 2)), statics={"axis": 1}),
    Case("axis=-1", ((2, 3), (2, 2)), statics={"axis": -1}),
    Case("axis=None", ((2, 3), (1, 3)), statics={"axis": None}),
]
CASES[(np.stack, 1)] = [
    Case("default-axis", ((3,), (3,))),
    Case("axis=1", ((2, 3), (2, 3), (2, 3)), statics={"axis": 1}),
    Case("axis=-1", ((2, 3), (2, 3)), statics={"axis": -1}),
]
CASES[(np.array, 1)] = cases(
    ANY,
    ("floats", (None, None, None)),
    ("vectors", ((3,), (3,))),
    ("matrices", ((2, 2), (2, 2), (2, 2))),
)

CASES[(np.ravel, 1)] = [
    Case("matrix", ((3, 4),)),
    Case("3d", ((2, 3, 4),)),
    Case("vector", ((5,),)),
    Case("float", (None,)),
]
CASES[(np.moveaxis, 1)] = [
    Case(label, (shape,), statics={"source": source, "destination": destination})
    for label, shape, source, destination in (
        ("matrix", (2, 3), 0, 1),
        ("first-to-last", (2, 3, 4), 0, -1),
        ("last-to-first", (2, 3, 4), -1, 0),
        ("middle-to-last", (2, 3, 4), 1, 2),
        ("tuples", (2, 3, 4), (0, 1), (2, 0)),
        ("negative-tuples", (2, 3, 4, 5), (-1, 0), (1, -2)),
    )
]
CASES[(np.swapaxes, 1)] = [
    Case(label, (shape,), statics={"axis1": axis1, "axis2": axis2})
    for label, shape, axis1, axis2 in (
        ("matrix", (2, 3), 0, 1),
        ("3d-outer", (2, 3, 4), 0, 2),
        ("3d-negative", (2, 3, 4), -1, 1),
        ("same-axis", (2, 3), 1, 1),
    )
]
CASES[(np.expand_dims, 1)] = [
    Case(label, (shape,), statics={"axis": axis})
    for label, shape, axis in (
        ("axis=0", (3, 4), 0),
        ("axis=-1", (3, 4), -1),
        ("axis=(0,2)", (3, 4), (0, 2)),
        ("axis=(-1,1)", (3,), (-1, 1)),
        ("vector-axis=1", (3,), 1),
        ("float", None, 0),
    )
]
# np.full(shape, fill): the shape is an argument too, with no derivative (ints: not checked).
CASES[(np.full, 2)] = [
    Case(label, (None, fill), (constant(shape), ANY))
    for label, shape, fill in (
        ("float-fill", (2, 3), None),
        ("int-shape", 4, None),
        ("row-fill", (2, 3), (3,)),
        ("keepdims-fill", (2, 3), (2, 1)),
        ("same-shape-fill", (2, 3), (2, 3)),
    )
]

# Running sums and reorderings: axis=None flattens (cumsum) or reverses every axis (flip).
CASES[(np.cumsum, 1)] = [
    Case(label, (shape,), statics=statics)
    for label, shape, statics in (
        ("flattened", (2, 3, 4), {}),
        ("axis=None-matrix", (3, 4), {"axis": None}),
        ("axis=0", (3, 4), {"axis": 0}),
        ("axis=1", (2, 3, 4), {"axis": 1}),
        ("axis=-1", (2, 3, 4), {"axis": -1}),
        ("vector", (5,), {}),
        ("float", None, {}),
    )
]
CASES[(np.flip, 1)] = [
    Case(label, (shape,), statics=statics)
    for label, shape, statics in (
        ("all-axes", (2, 3, 4), {}),
        ("axis=0", (3, 4), {"axis": 0}),
        ("axis=-1", (2, 3, 4), {"axis": -1}),
        ("axis=(0,2)", (2, 3, 4), {"axis": (0, 2)}),
        ("vector", (5,), {}),
        ("float", None, {}),
    )
]
# Running products: exact zeros first, in the middle, twice in a row, last.
CUMPRODS: tuple[tuple[str, tuple[int, ...], int | None, Domain], ...] = (
    ("flattened", (2, 3, 4), None, signed(0.5, 1.5)),
    ("axis=0", (3, 4), 0, signed(0.5, 1.5)),
    ("axis=-1", (2, 3, 4), -1, signed(0.5, 1.5)),
    ("vector", (6,), None, signed(0.5, 1.5)),
    ("zeros-flattened", (3, 4), None, with_zeros),
    ("zeros-axis=1", (3, 4), 1, with_zeros),
    ("zeros-axis=0", (3, 4), 0, with_zeros),
    ("zero-inside", (7,), None, zeros_at(3)),
    ("zeros-inside-axis=1", (2, 6), 1, zeros_at(2, 4, 7, 8)),
    ("zero-last", (5,), 0, zeros_at(-1)),
    ("0-d-axis=0", (), 0, signed(0.5, 1.5)),  # NumPy reads a 0-d x as one element
)
CASES[(np.cumprod, 1)] = [
    *(Case(label, (shape,), domain, {"axis": axis}) for label, shape, axis, domain in CUMPRODS),
    Case("float", (None,), NONZERO),
]
CASES[(np.roll, 1)] = [
    Case(label, (shape,), statics=statics)
    for label, shape, statics in (
        ("flattened", (3, 4), {"shift": 5}),
        ("axis=0", (3, 4), {"shift": 1, "axis": 0}),
        ("negative-axis=-1", (2, 3, 4), {"shift": -2, "axis": -1}),
        ("tuples", (2, 3, 4), {"shift": (1, -2), "axis": (0, 2)}),
        ("beyond-the-length", (5,), {"shift": 12}),
        ("float", None, {"shift": 1}),
    )
]
# (label, shape of x, n, axis) of np.diff, for its rule and diff_adjoint's.
DIFFS: tuple[tuple[str, tuple[int, ...], int, int], ...] = (
    ("vector", (6,), 1, -1),
    ("rows", (3, 5), 1, -1),
    ("n=2-axis=0", (5, 3), 2, 0),
    ("n=3-axis=1", (2, 6, 3), 3, 1),
    ("n=0", (3, 4), 0, -1),
    ("n=length", (2, 3), 3, -1),  # an empty result: nothing depends on x
    ("n-beyond-length", (4, 2), 5, 0),
    ("0-d-n=0", (), 0, -1),  # x itself: a 0-d x has no axis to difference along
)
CASES[(np.diff, 1)] = [
    Case(label, (shape,), statics={"n": n, "axis": axis}) for label, shape, n, axis in DIFFS
]


def einsum_statics(subscripts: str, operands: int, optimize: object = False) -> dict[str, object]:
    """The static arguments the compiler gives np.einsum's rule: the call's subscripts and
    optimize=, and the subscripts and fill of each operand's adjoint (``adcompile/einsum.py``;
    the checks below judge the adjoints they make, not these strings)."""
    parsed = parse_subscripts(subscripts, operands)
    statics: dict[str, object] = {"subscripts": subscripts, "optimize": optimize}
    return statics | adjoint_statics(parsed)


def einsum_cases(*specs: tuple[str, str, tuple[Shape, ...]]) -> list[Case]:
    """``np.einsum(subscripts, *operands)`` for each (label, subscripts, operand shapes)."""
    return [
        Case(label, shapes, ANY, einsum_statics(subscripts, len(shapes)))
        for label, subscripts, shapes in specs
    ]


# Every form: a label summed in one operand only (its adjoint spread back: a ones fill),
# repeated labels (traces, diagonals: the adjoint on the diagonal only), '...' (stacks that
# broadcast), implicit outputs, and labels of length 1 against longer ones (NumPy allows it).
CASES[(np.einsum, 1)] = [
    *einsum_cases(
        ("transpose", "ij->ji", ((2, 3),)),
        ("implicit-transpose", "ji", ((2, 3),)),
        ("implicit-identity", "ij", ((2, 3),)),
        ("column-sums", "ij->j", ((3, 4),)),
        ("sum-all", "ijk->", ((2, 3, 4),)),
        ("permute", "ijk->kij", ((2, 3, 4),)),
        ("trace", "ii->", ((3, 3),)),
        ("implicit-trace", "ii", ((3, 3),)),
        ("diagonal", "ii->i", ((3, 3),)),
        ("diagonal-of-3d", "iij->ji", ((3, 3, 2),)),
        ("apart-repeats", "iji->j", ((3, 2, 3),)),
        ("all-equal", "iii->i", ((2, 2, 2),)),
        ("stacked-traces", "...ii->...", ((2, 4, 3, 3),)),
        ("stacked-diagonals", "...ii->...i", ((2, 3, 3),)),
        ("ellipsis-last", "i...->...", ((3, 2, 4),)),
        ("ellipsis-sum", "...i->...", ((2, 3, 4),)),
        ("float", "", (None,)),
    ),
    Case("optimize=True", ((3, 4),), ANY, einsum_statics("ij->i", 1, True)),
]
CASES[(np.einsum, 2)] = [
    *einsum_cases(
        ("matmul", "ij,jk->ik", ((3, 4), (4, 2))),
        ("implicit-matmul", "ij,jk", ((3, 4), (4, 2))),
        ("dot", "i,i->", ((4,), (4,))),
        ("implicit-dot", "i,i", ((4,), (4,))),
        ("batched-matmul", "bij,bjk->bik", ((2, 3, 4), (2, 4, 5))),
        ("row-dots", "ij,ij->i", ((3, 4), (3, 4))),
        ("outer", "i,j->ij", ((3,), (4,))),
        ("implicit-outer", "i,j", ((3,), (4,))),
        ("summed-in-one", "ij,j->", ((3, 4), (4,))),
        ("sums-times", "ij,kl->ik", ((2, 3), (4, 5))),
        ("trace-of-product", "ij,ji->", ((3, 4), (4, 3))),
        ("diagonal-times", "ii,i->i", ((3, 3), (3,))),
        ("trace-times", "ii,jk->jk", ((3, 3), (2, 4))),
        ("stacks-broadcast", "...ij,...j->...i", ((2, 3, 4), (4,))),
        ("stacks-extended", "...ij,...j->...i", ((3, 4), (2, 4))),
        ("stacks-stretched", "...ij,...j->...i", ((2, 1, 3, 4), (5, 4))),
        ("ellipsis-in-one", "...i,i->...", ((2, 3, 4), (4,))),
        ("implicit-ellipsis", "...j,j", ((2, 3), (3,))),
        ("elementwise-broadcast", "...,...->...", ((3, 1), (1, 4))),
        ("length-1-label", "ij,jk->ik", ((3, 1), (2, 4))),
        ("length-1-vector", "i,i->i", ((1,), (3,))),
        ("float-times-matrix", ",ij->ij", (None, (2, 3))),
        ("stacked-diagonal-dots", "...ii,...i->...", ((2, 3, 3), (3,))),
    ),
    Case("optimize=True", ((3, 4), (4, 2)), ANY, einsum_statics("ij,jk->ik", 2, True)),
]
CASES[(np.einsum, 3)] = [
    *einsum_cases(
        ("bilinear", "i,ij,j->", ((3,), (3, 4), (4,))),
        ("chain", "ij,jk,kl->il", ((2, 3), (3, 4), (4, 2))),
        ("implicit-chain", "ij,jk,kl", ((2, 3), (3, 4), (4, 2))),
        ("batched-quadratic-forms", "bi,bij,bj->b", ((2, 3), (2, 3, 4), (2, 4))),
        ("diagonal-scaled", "ii,ij,j->i", ((3, 3), (3, 4), (4,))),
        ("summed-in-each", "ij,jk,l->", ((2, 3), (3, 4), (2,))),
        ("length-1", "i,i,i->", ((3,), (1,), (3,))),
        ("stacks", "...i,...i,i->...", ((2, 3), (3,), (3,))),
    ),
    Case(
        "optimize=greedy",
        ((2, 3), (3, 4), (4, 2)),
        ANY,
        einsum_statics("ij,jk,kl->il", 3, "greedy"),
    ),
]

# ----- the helpers that generated gradient code calls (differentiated again by hessian) -----


def part_and(forward: Callable[..., Any], shapes: tuple[Shape, ...], domain: Domain = ANY) -> Make:
    """Arguments ``[part, *operands]`` of an adjoint helper: ``part`` shaped like
    ``forward(*operands)`` (the value whose adjoint it is), operands of ``shapes``."""

    def make(rng: np.random.Generator) -> list[Any]:
        """Draw the operands, then the adjoint of the value."""
        operands = [domain(rng, shape) for shape in shapes]
        return [draw_like(rng, np.shape(forward(*operands))), *operands]

    return make


def ties(rng: np.random.Generator, shape: Shape) -> Any:
    """Small integers: reductions over them have tied extremes."""
    return _float_or_array(rng.integers(-1, 2, size=shape), shape)


def extreme_arguments(
    reduce: Callable[..., Any],
    domain: Domain,
    shape: Shape,
    statics: Mapping[str, Any],
    part_like_x: bool,
) -> Make:
    """Arguments ``[part, x, reduce(x, **statics)]`` of ``extreme_adjoint``/``extreme_tangent``:
    ``part`` shaped like the extreme, or (``part_like_x``) like ``x``."""

    def make(rng: np.random.Generator) -> list[Any]:
        """Draw ``x``, reduce it, then draw ``part``."""
        x = domain(rng, shape)
        extreme = reduce(x, **statics)
        return [draw_like(rng, np.shape(x) if part_like_x else np.shape(extreme)), x, extreme]

    return make


def extreme_cases(part_like_x: bool) -> list[Case]:
    """``extreme_adjoint`` (or ``extreme_tangent``) over the axes of ``reduction_cases``.

    Only ``part`` is moved by finite differences: moving ``x`` without its extreme breaks
    the equalities ``x == extreme`` that the helpers look for.
    """
    cube = (2, 3, 4)
    specs = (
        ("all", np.max, distinct, cube, None, False),
        ("axis=1", np.max, distinct, cube, 1, False),
        ("axis=-1", np.max, distinct, cube, -1, False),
        ("axis=(0,2)", np.max, distinct, cube, (0, 2), False),
        ("axis=(0,-1)-keepdims", np.max, distinct, cube, (0, -1), True),
        ("axis=1-keepdims", np.max, distinct, cube, 1, True),
        ("axis=None-keepdims", np.max, distinct, cube, None, True),
        ("vector-axis=0", np.max, distinct, (5,), 0, False),
        ("min-axis=1", np.min, distinct, cube, 1, False),
        ("min-all", np.min, distinct, (3, 4), None, False),
        ("ties-axis=1", np.max, ties, (4, 6), 1, False),
        ("ties-all-keepdims", np.min, ties, (3, 4), None, True),
    )
    out = []
    for label, reduce, domain, shape, axis, keepdims in specs:
        statics = {"axis": axis, "keepdims": keepdims}
        make = extreme_arguments(reduce, domain, shape, statics, part_like_x)
        out.append(Case(label, make=make, statics=statics, wrt=(0,)))
    return out


# (label, shapes, a_axis, b_axis) of ``contraction(a, b, a_axis, b_axis)``.
CONTRACTIONS: tuple[tuple[str, tuple[Shape, ...], int, int], ...] = (
    ("dot-matrices", ((3, 4), (4, 2)), -1, -2),
    ("dot-matrix-vector", ((3, 4), (4,)), -1, -1),
    ("dot-vector-matrix", ((4,), (4, 2)), -1, -2),
    ("dot-vectors", ((4,), (4,)), -1, -1),
    ("dot-matrix-3d", ((2, 3), (4, 3, 5)), -1, -2),
    ("inner-matrices", ((2, 3), (4, 3)), -1, -1),
    ("inner-3d-matrix", ((2, 3, 4), (5, 4)), -1, -1),
    ("3d-axis=0-matrix-axis=1", ((3, 2, 4), (5, 3)), 0, 1),
    ("3d-3d-middle", ((2, 3, 4), (4, 3, 2)), 1, -2),
    ("float-vector", (None, (3,)), -1, -1),
    ("matrix-float", ((2, 3), None), -1, -2),
    ("floats", (None, None), -1, -1),
)


def contraction_adjoint_cases() -> list[Case]:
    """``contraction_adjoint_a``/``_b(part, a, b)`` over ``CONTRACTIONS``."""
    return [
        Case(
            label,
            make=part_and(functools.partial(contraction, a_axis=a_axis, b_axis=b_axis), shapes),
            statics={"a_axis": a_axis, "b_axis": b_axis},
        )
        for label, shapes, a_axis, b_axis in CONTRACTIONS
    ]


# unbroadcast(part, like): part has the broadcast shape of like and other operands, or is a
# scalar standing for zeros (or any number) spread over like.
CASES[(unbroadcast, 2)] = cases(
    ANY,
    ("same-shape", ((3, 4), (3, 4))),
    ("keepdims-row", ((3, 4), (1, 4))),
    ("keepdims-column", ((3, 4), (3, 1))),
    ("rank-extension", ((3, 4), (4,))),
    ("to-0d-array", ((3, 4), ())),
    ("to-float", ((2, 3), None)),
    ("3d-to-keepdims", ((2, 3, 4), (1, 3, 1))),
    ("3d-to-column", ((2, 3, 4), (3, 1))),
    ("unit-vector", ((5,), (1,))),
    ("float-to-array", (None, (2, 3))),
    ("float-to-keepdims", (None, (1, 4))),
    ("column-to-row", ((3, 1), (1, 4))),
)
# rebroadcast(part, like): part has the shape of an unbroadcast result; like a larger one.
CASES[(rebroadcast, 2)] = cases(
    ANY,
    ("same-shape", ((3, 4), (3, 4))),
    ("row-to-matrix", ((1, 4), (3, 4))),
    ("column-to-matrix", ((3, 1), (3, 4))),
    ("vector-to-matrix", ((4,), (3, 4))),
    ("float-to-array", (None, (2, 3))),
    ("0d-to-3d", ((), (2, 3, 4))),
    ("keepdims-to-3d", ((1, 3, 1), (2, 3, 4))),
    ("matrix-to-keepdims", ((3, 4), (1, 4))),
    ("float-to-float", (None, None)),
)
# broadcast_like(part, like): a tangent spread to the shape of the value it belongs to.
CASES[(broadcast_like, 2)] = cases(
    ANY,
    ("same-shape", ((3, 4), (3, 4))),
    ("row-to-matrix", ((1, 4), (3, 4))),
    ("vector-to-matrix", ((4,), (3, 4))),
    ("float-to-array", (None, (2, 3))),
    ("0d-to-3d", ((), (2, 3, 4))),
)
CASES[(scatter, 2)] = [
    Case(label, make=part_and(operator.itemgetter(index), (shape,)), statics={"index": index})
    for label, shape, index in index_forms()
]
CASES[(extreme_adjoint, 3)] = extreme_cases(part_like_x=False)
CASES[(extreme_tangent, 3)] = extreme_cases(part_like_x=True)
for _helper in (matmul_adjoint_a, matmul_adjoint_b):
    CASES[(_helper, 3)] = [
        Case(label, make=part_and(np.matmul, shapes)) for label, shapes in MATMUL_SHAPES
    ]
CASES[(contraction, 2)] = [
    Case(label, shapes, statics={"a_axis": a_axis, "b_axis": b_axis})
    for label, shapes, a_axis, b_axis in CONTRACTIONS
]
CASES[(contraction_adjoint_a, 3)] = contraction_adjoint_cases()
CASES[(contraction_adjoint_b, 3)] = contraction_adjoint_cases()
CASES[(trace_adjoint, 2)] = [
    Case(label, make=part_and(np.trace, (shape,)))
    for label, shape in (
        ("square", (3, 3)),
        ("wide", (2, 4)),
        ("tall", (4, 2)),
        ("3d", (2, 2, 3)),
        ("4d", (3, 2, 2, 2)),
    )
]
# cumprod_adjoint(part, x): part shaped like np.cumprod(x); cumprod_jvp(v, x): v like x.
# Moving x checks their second derivatives (cumprod_pairs, and cumprod_second as a tangent).
CASES[(cumprod_adjoint, 2)] = [
    Case(
        label,
        make=part_and(functools.partial(np.cumprod, axis=axis), (shape,), domain),
        statics={"axis": axis},
    )
    for label, shape, axis, domain in CUMPRODS
]
CASES[(cumprod_jvp, 2)] = [
    Case(label, make=part_and(np.copy, (shape,), domain), statics={"axis": axis})
    for label, shape, axis, domain in CUMPRODS
]
# Shaped like x only: the derivative in x is 0.
CASES[(diagonal_ones, 1)] = [
    Case(label, (shape,), statics={"subscripts": subscripts})
    for label, shape, subscripts in (
        ("identity", (3, 3), "ii"),
        ("stacked", (2, 3, 3), "...ii"),
        ("apart", (2, 3, 2), "iji"),
        ("two-pairs", (2, 3, 2, 3), "ijij"),
    )
]
CASES[(diff_adjoint, 2)] = [
    Case(
        label,
        make=part_and(functools.partial(np.diff, n=n, axis=axis), (shape,)),
        statics={"n": n, "axis": axis},
    )
    for label, shape, n, axis in DIFFS
]


# (label, shape of x, axis, keepdims) of the reductions whose adjoint helpers take statics.
REDUCED = (
    ("all", (2, 3, 4), None, False),
    ("axis=1", (2, 3, 4), 1, False),
    ("axis=-1", (2, 3, 4), -1, False),
    ("axis=(0,2)", (2, 3, 4), (0, 2), False),
    ("axis=(0,-1)-keepdims", (2, 3, 4), (0, -1), True),
    ("axis=None-keepdims", (3, 4), None, True),
    ("vector-axis=0", (5,), 0, False),
)


def reduced_cases(reduce: Callable[..., Any], domain: Domain = ANY) -> list[Case]:
    """``helper(part, x, axis, keepdims)`` with ``part`` shaped like ``reduce(x, axis, ...)``."""
    return [
        Case(
            label,
            make=part_and(functools.partial(reduce, axis=axis, keepdims=keep), (shape,), domain),
            statics={"axis": axis, "keepdims": keep},
        )
        for label, shape, axis, keep in REDUCED
    ]


CASES[(restore_axes, 2)] = reduced_cases(np.sum)
# prod_adjoint is nonlinear in x: its x-adjoint is np.prod's second derivative (prod_pairs).
CASES[(prod_adjoint, 2)] = [
    *reduced_cases(np.prod, signed(0.5, 1.5)),
    Case(
        "zeros-all",
        make=part_and(np.prod, ((3, 4),), with_zeros),
        statics={"axis": None, "keepdims": False},
    ),
    Case(
        "zeros-axis=1",
        make=part_and(functools.partial(np.prod, axis=1), ((3, 4),), with_zeros),
        statics={"axis": 1, "keepdims": False},
    ),
]

# (label, shapes of the joined arrays, axis) of np.concatenate, for split_part and join_part.
JOINS: tuple[tuple[str, tuple[tuple[int, ...], ...], int | None], ...] = (
    ("vectors", ((3,), (2,)), 0),
    ("rows", ((2, 3), (1, 3)), 0),
    ("columns-three", ((2, 3), (2, 1), (2, 2)), 1),
    ("negative-axis", ((2, 3), (2, 2)), -1),
    ("flattened", ((2, 3), (1, 3)), None),
)


def split_cases(join: bool) -> list[Case]:
    """``split_part(whole, arrays, axis, i)``, or ``join_part(part, whole, arrays, axis, i)``."""
    out = []
    for label, shapes, axis in JOINS:
        arrays = tuple(np.zeros(shape) for shape in shapes)
        whole = np.shape(np.concatenate(arrays, axis=axis))
        for i, shape in enumerate(shapes):
            piece = shape  # split_adjoint gives each piece its array's shape, even flattened
            statics = {"arrays": arrays, "axis": axis, "i": i}
            args = (piece, whole) if join else (whole,)
            out.append(Case(f"{label}-{i}", args, statics=statics))
    return out


CASES[(split_part, 1)] = split_cases(join=False)
CASES[(join_part, 2)] = split_cases(join=True)

# assemble(parts, tree, paths): a gradient shaped like ``tree`` from parts at index paths.
# Dict and list trees are checked end to end (Hessians of structured parameters in
# test_array_higher_order.py); here the tree is an array, as for ``x[0]`` leaves.
ASSEMBLE_TREE = np.zeros((4, 5))
CASES[(assemble, 1)] = [
    Case(label, shapes, statics={"tree": ASSEMBLE_TREE, "paths": paths})
    for label, shapes, paths in (
        ("rows", ((5,), (5,), (5,)), ((0,), (2,), (-1,))),
        ("whole-and-row", ((4, 5), (5,)), ((), (1,))),
        ("repeated-row", ((5,), (5,)), ((1,), (1,))),
        ("element", (None,), ((0, 2),)),
        ("broadcast-whole", ((3, 4, 5),), ((),)),
        ("none", (), ()),
    )
]


def missing_cases(rules: Sequence[Rule]) -> list[str]:
    """The rules of ``rules`` that have no check case in ``CASES``, by name."""
    return [rule_id(rule) for rule in rules if not CASES.get((rule.primal, rule.arity))]


def assert_every_rule_has_a_case(rules: Sequence[Rule]) -> None:
    """Fail, naming them, if some rules have no check case."""
    missing = missing_cases(rules)
    assert not missing, (
        f"array rules without a check case: {', '.join(missing)}; add cases for them to "
        "CASES in tests/test_array_rules.py (every derivative rule must be verified)"
    )


def test_every_array_rule_has_a_case() -> None:
    assert_every_rule_has_a_case(RULES)


def test_cases_name_only_existing_rules() -> None:
    known = {(rule.primal, rule.arity) for rule in RULES}
    stale = [key for key in CASES if key not in known]
    assert not stale, f"CASES has entries for rules that do not exist: {stale}"


def test_case_labels_are_unique() -> None:
    for key, entries in CASES.items():
        labels = [case.label for case in entries]
        assert len(set(labels)) == len(labels), key


def test_a_rule_without_a_case_fails_by_name() -> None:
    def deg2rad(x, result, g):
        return g * (np.pi / 180.0)

    rule = RuleTable().register(np.deg2rad, deg2rad)
    with pytest.raises(AssertionError, match=r"numpy\.deg2rad/1"):
        assert_every_rule_has_a_case([*RULES, rule])


# ----- the finite-difference check ------------------------------------------------------------


def call_primal(rule: Rule, args: Sequence[Any], statics: Mapping[str, object]) -> Any:
    """Call the rule's primal the way user code does."""
    if rule.variadic:
        return rule.primal(list(args), **statics)
    if rule.primal is operator.getitem:
        return args[0][statics["index"]]
    if rule.primal is np.einsum:  # the other statics are the compiler's, for the template
        return np.einsum(statics["subscripts"], *args, optimize=statics["optimize"])
    return rule.primal(*args, **statics)


def call_template(
    rule: Rule, args: Sequence[Any], result: Any, g: Any, statics: Mapping[str, object]
) -> list[Any]:
    """Run the template as the generated code would: one adjoint per argument (or element)."""
    if rule.variadic:
        adjoints = list(rule.template(list(args), result, g, **statics))
        assert len(adjoints) == len(args), f"{rule_id(rule)}: one adjoint per element"
        return adjoints
    adjoints = rule.template(*args, result, g, **statics)
    return [adjoints] if rule.arity == 1 else list(adjoints)


def same_value(before: Any, after: Any) -> bool:
    """True if two snapshots are equal: arrays elementwise (and dtype), containers by item."""
    if isinstance(before, np.ndarray) or isinstance(after, np.ndarray):
        return (
            isinstance(after, np.ndarray)
            and isinstance(before, np.ndarray)
            and before.dtype == after.dtype
            and np.array_equal(before, after, equal_nan=before.dtype.kind == "f")
        )
    if isinstance(before, dict):
        return (
            isinstance(after, dict)
            and before.keys() == after.keys()
            and all(same_value(before[k], after[k]) for k in before)
        )
    if isinstance(before, list | tuple):
        return (
            type(before) is type(after)
            and len(before) == len(after)
            and all(same_value(b, a) for b, a in zip(before, after, strict=True))
        )
    return bool(before == after)


def directional_difference(
    rule: Rule, args: list[Any], statics: Mapping[str, object], g: Any, i: int, d: Any
) -> float:
    """Central finite difference of ``t -> <g, primal(args with args[i] + t d)>`` at 0."""

    def pairing(t: float) -> float:
        shifted = list(args)
        shifted[i] = args[i] + t * d
        return float(np.sum(np.multiply(g, call_primal(rule, shifted, statics))))

    return (pairing(STEP) - pairing(-STEP)) / (2 * STEP)


def draw_like(rng: np.random.Generator, shape: tuple[int, ...]) -> Any:
    """A standard normal draw of ``shape`` (a Python float for shape ``()``)."""
    return rng.standard_normal() if shape == () else rng.standard_normal(shape)


def checked_arguments(case: Case, args: Sequence[Any]) -> tuple[int, ...]:
    """The arguments a check moves: the case's ``wrt``, else every float one."""
    if case.wrt is not None:
        return case.wrt
    return tuple(i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f")


def case_point(
    rule: Rule, case: Case, seed: int
) -> tuple[np.random.Generator, list[Any], dict[str, object], Any]:
    """A case's arguments drawn with ``seed``, its statics and the primal's result, with the
    generator for further draws (the same point for every check of the case)."""
    rng = np.random.default_rng(seed)
    args = case.arguments(rng)
    statics = dict(case.statics)
    return rng, args, statics, call_primal(rule, args, statics)


def check_case(rule: Rule, case: Case, seed: int = 0) -> None:
    """Check ``rule``'s template on ``case``: vector-Jacobian products, shapes, no mutation."""
    where = f"rule {rule_id(rule)}, case {case.label}"
    rng, args, statics, result = case_point(rule, case, seed)
    g = draw_like(rng, np.shape(result))
    before = copy.deepcopy((args, result, g, statics))

    adjoints = call_template(rule, args, result, g, statics)

    assert same_value(before, (args, result, g, statics)), f"{where}: the template mutated an input"
    assert len(adjoints) == len(args), f"{where}: {len(adjoints)} adjoints for {len(args)} args"
    wrt = checked_arguments(case, args)
    scale = 1.0 + float(np.sum(np.abs(np.multiply(g, result))))
    for i, (arg, adjoint) in enumerate(zip(args, adjoints, strict=True)):
        if adjoint is not None:
            assert np.shape(adjoint) == np.shape(arg), (
                f"{where}, argument {i}: adjoint has shape {np.shape(adjoint)}, "
                f"the argument {np.shape(arg)} (adjoints must be unbroadcast)"
            )
        if i not in wrt:
            continue
        for _ in range(DIRECTIONS):
            d = draw_like(rng, np.shape(arg))
            expected = directional_difference(rule, args, statics, g, i, d)
            if adjoint is None:
                assert abs(expected) <= ATOL * scale, (
                    f"{where}, argument {i}: the template says None (no derivative), "
                    f"finite differences say {expected!r}"
                )
                continue
            got = float(np.sum(np.multiply(adjoint, d)))
            tolerance = RTOL * max(abs(got), abs(expected)) + ATOL * scale
            assert abs(got - expected) <= tolerance, (
                f"{where}, argument {i}: <adjoint, d> = {got!r}, "
                f"finite differences give {expected!r}"
            )


def _case_params() -> list:
    """One pytest parameter per (rule, case), with the known defects marked xfail."""
    params = []
    for rule in RULES:
        for case in CASES.get((rule.primal, rule.arity), []):
            marks = []
            if case.xfail:
                marks = [pytest.mark.xfail(strict=True, raises=case.raises, reason=case.xfail)]
            params.append(pytest.param(rule, case, id=f"{rule_id(rule)}-{case.label}", marks=marks))
    return params


@pytest.mark.parametrize(("rule", "case"), _case_params())
def test_rule_matches_finite_differences(rule: Rule, case: Case) -> None:
    check_case(rule, case)


def test_rule_table_is_not_empty() -> None:
    # Guards against parametrizing over nothing (every check above would then vanish).
    names = {rule_id(rule) for rule in RULES}
    assert {"numpy.sin/1", "operator.getitem/1", "numpy.concatenate/1"} <= names
    assert len(_case_params()) > 200


def _sin_case() -> Case:
    """The first check case of ``np.sin`` (a 3x4 matrix)."""
    return CASES[(np.sin, 1)][0]


def test_a_wrong_template_fails() -> None:
    def sin(x, result, g):
        return g * np.sin(x)  # the derivative of sin is cos

    rule = RuleTable().register(np.sin, sin)
    with pytest.raises(AssertionError, match=r"numpy\.sin/1, case matrix, argument 0: <adjoint"):
        check_case(rule, _sin_case())


def test_a_template_that_ignores_g_fails() -> None:
    def sin(x, result, g):
        return np.cos(x)

    rule = RuleTable().register(np.sin, sin)
    with pytest.raises(AssertionError, match="finite differences give"):
        check_case(rule, _sin_case())


def test_a_missing_unbroadcast_fails() -> None:
    def mul(a, b, result, g):
        return g * b, unbroadcast(g * a, b)

    rule = RuleTable().register(operator.mul, mul)
    case = CASES[(operator.mul, 2)][1]  # (3, 1) * (1, 4)
    with pytest.raises(AssertionError, match=r"adjoint has shape \(3, 4\), the argument \(3, 1\)"):
        check_case(rule, case)


def test_a_mutating_template_fails() -> None:
    def sin(x, result, g):
        return np.multiply(g, np.cos(x), out=g)  # right values, but g is overwritten

    rule = RuleTable().register(np.sin, sin)
    with pytest.raises(AssertionError, match="mutated an input"):
        check_case(rule, _sin_case())


def test_a_wrong_none_fails() -> None:
    def where(condition, a, b, result, g):
        return None, None, unbroadcast(np.where(condition, 0.0, g), b)

    rule = RuleTable().register(np.where, where)
    with pytest.raises(AssertionError, match="argument 1: the template says None"):
        check_case(rule, CASES[(np.where, 3)][0])


# ----- elementwise rules on scalars against SymPy ------------------------------------------

# Elementwise primals whose derivative is also the derivative of a scalar twin in
# adcompile.symbolic (SymPy counterpart and sampling domain both reused).
SCALAR_TWINS: dict[object, object] = {
    np.add: operator.add,
    np.subtract: operator.sub,
    np.multiply: operator.mul,
    np.divide: operator.truediv,
    np.negative: operator.neg,
    np.power: operator.pow,
    np.sin: math.sin,
    np.cos: math.cos,
    np.tan: math.tan,
    np.arcsin: math.asin,
    np.arccos: math.acos,
    np.arctan: math.atan,
    np.hypot: math.hypot,
    np.sinh: math.sinh,
    np.cosh: math.cosh,
    np.tanh: math.tanh,
    np.arcsinh: math.asinh,
    np.arccosh: math.acosh,
    np.arctanh: math.atanh,
    np.exp: math.exp,
    np.expm1: math.expm1,
    np.log: math.log,
    np.log1p: math.log1p,
    np.log2: math.log2,
    np.log10: math.log10,
    np.sqrt: math.sqrt,
}
SCALAR_OPERATORS = (
    operator.add,
    operator.sub,
    operator.mul,
    operator.truediv,
    operator.neg,
    operator.pos,
    operator.pow,
)


def is_elementwise(rule: Rule) -> bool:
    """True for the rules the SymPy check covers: differentiable elementwise functions."""
    if len(rule.nondifferentiable_args) == rule.arity:
        return False  # piecewise constant (floor, sign...): the finite differences check them
    if rule.primal in (np.where, np.clip, np.copy, clip_below, clip_above):
        return True
    if rule.primal in SCALAR_OPERATORS:
        return True
    return isinstance(rule.primal, np.ufunc) and rule.primal is not np.matmul


def _maximum_arguments(rng: random.Random, k: int) -> tuple[float, ...]:
    """Two floats at least 0.1 apart (no tie)."""
    a = rng.uniform(-2.0, 2.0)
    return a, a + rng.choice([-1.0, 1.0]) * rng.uniform(0.1, 2.0)


def _where_arguments(rng: random.Random, k: int) -> tuple[float, ...]:
    """A condition, true and false in turn, and two floats."""
    return float(k % 2), rng.uniform(-2.0, 2.0), rng.uniform(-2.0, 2.0)


def _clip_arguments(rng: random.Random, k: int) -> tuple[float, ...]:
    """``x`` below, inside and above ``[lo, hi]`` in turn, at least 0.1 from the bounds; every
    fourth point has the bounds crossed (``lo > hi``, where NumPy gives ``hi`` everywhere)."""
    lo, hi = rng.uniform(-1.0, -0.5), rng.uniform(0.5, 1.0)
    x = (rng.uniform(-3.0, lo - 0.1), rng.uniform(lo + 0.1, hi - 0.1), rng.uniform(hi + 0.1, 3))
    if k % 4 == 3:
        return x[rng.randrange(3)], hi, lo
    return x[k % 4], lo, hi


@functools.cache
def sympy_table() -> dict[object, tuple[Callable[..., Any], Callable[..., tuple[float, ...]]]]:
    """Elementwise primal -> (SymPy counterpart, sampler of ``(rng, k)`` -> arguments)."""
    import sympy as sp

    def twin_sampler(twin: object, arity: int) -> Callable[..., tuple[float, ...]]:
        """Sample from the scalar twin's domain in adcompile.symbolic."""
        return lambda rng, k: sample_rule_arguments(twin, arity, rng)

    def sampler(low: float, high: float, *, nonzero: bool = False) -> Callable[..., tuple]:
        """One float from ``[low, high]`` (with alternating signs if ``nonzero``)."""

        def draw(rng: random.Random, k: int) -> tuple[float, ...]:
            """Draw the k-th point."""
            value = rng.uniform(low, high)
            return ((-1.0) ** k * value if nonzero else value,)

        return draw

    table: dict[object, tuple[Callable[..., Any], Callable[..., tuple[float, ...]]]] = {}
    for rule in RULES:
        twin = SCALAR_TWINS.get(rule.primal, rule.primal)
        counterpart = sympy_counterpart(twin, rule.arity)
        if counterpart is not None:
            table[rule.primal] = (counterpart, twin_sampler(twin, rule.arity))
    table[np.arctan2] = (sp.atan2, lambda rng, k: (rng.uniform(-2, 2), rng.uniform(0.3, 2)))
    table[np.square] = (lambda x: x**2, sampler(-2.0, 2.0))
    table[np.copy] = (lambda x: x, sampler(-2.0, 2.0))
    table[np.reciprocal] = (lambda x: 1 / x, sampler(0.3, 2.0, nonzero=True))
    table[np.cbrt] = (
        lambda x: sp.sign(x) * sp.Abs(x) ** sp.Rational(1, 3),
        sampler(0.1, 3.0, nonzero=True),
    )
    table[np.exp2] = (lambda x: 2**x, sampler(-3.0, 3.0))
    table[np.logaddexp] = (
        lambda a, b: sp.log(sp.exp(a) + sp.exp(b)),
        lambda rng, k: (rng.uniform(-3.0, 3.0), rng.uniform(-3.0, 3.0)),
    )
    table[np.abs] = (sp.Abs, sampler(0.1, 2.0, nonzero=True))
    table[np.maximum] = (sp.Max, _maximum_arguments)
    table[np.minimum] = (sp.Min, _maximum_arguments)
    table[clip_below] = (sp.Max, _maximum_arguments)
    table[clip_above] = (sp.Min, _maximum_arguments)
    table[np.where] = (lambda c, a, b: sp.Piecewise((a, sp.Ne(c, 0)), (b, True)), _where_arguments)
    table[np.clip] = (lambda x, lo, hi: sp.Min(sp.Max(x, lo), hi), _clip_arguments)
    return table


ELEMENTWISE = [rule for rule in RULES if is_elementwise(rule)]


def test_every_elementwise_rule_has_a_sympy_counterpart() -> None:
    missing = [rule_id(rule) for rule in ELEMENTWISE if rule.primal not in sympy_table()]
    assert not missing, f"elementwise array rules without a SymPy counterpart: {missing}"
    assert len(ELEMENTWISE) > 30


@pytest.mark.parametrize("rule", ELEMENTWISE, ids=rule_id)
def test_elementwise_rule_matches_sympy(rule: Rule) -> None:
    import sympy as sp

    counterpart, sample = sympy_table()[rule.primal]
    symbols = list(sp.symbols(f"a0:{rule.arity}", real=True))
    expr = counterpart(*symbols)
    partials = [sp.diff(expr, s) for s in symbols]
    rng = random.Random(rule_id(rule))
    for k in range(SYMPY_POINTS):
        args = sample(rng, k)
        g = rng.uniform(-2.0, 2.0)
        adjoints = call_template(rule, args, rule.primal(*args), g, {})
        subs = {s: sp.Float(a, 30) for s, a in zip(symbols, args, strict=True)}
        for i, (adjoint, partial) in enumerate(zip(adjoints, partials, strict=True)):
            expected = g * float(partial.evalf(30, subs=subs))
            where = f"rule {rule_id(rule)}, argument {i}, at {args}, g={g}"
            if adjoint is None:
                assert expected == 0.0, f"{where}: template says None, SymPy says {expected!r}"
            else:
                assert np.ndim(adjoint) == 0, f"{where}: a scalar gave an array adjoint"
                assert math.isclose(float(adjoint), expected, rel_tol=1e-10, abs_tol=1e-14), (
                    f"{where}: template gives {adjoint!r}, SymPy gives {expected!r}"
                )


# ----- float32 inputs ------------------------------------------------------------------------

FLOAT32_CASES = [
    (np.sin, ((3, 4),), {}),
    (np.exp, ((3,),), {}),
    (np.tanh, (None,), {}),
    (operator.mul, ((3, 1), (1, 4)), {}),
    (np.add, ((3,), (2, 3)), {}),
    (operator.truediv, ((2, 3), None), {}),
    (np.maximum, ((3, 4), (4,)), {}),
    (operator.matmul, ((3, 4), (4, 2)), {}),
    (np.matmul, ((4,), (2, 4, 3)), {}),
    (np.sum, ((2, 3),), {"axis": 1}),
    (np.mean, ((2, 3),), {"axis": 0, "keepdims": True}),
    (np.std, ((2, 3),), {"axis": 1, "ddof": 1}),
    (np.cumsum, ((2, 3),), {"axis": 0}),
    (np.cumprod, ((2, 3),), {"axis": 1}),
    (np.diff, ((2, 4),), {"n": 2}),
    (np.logaddexp, ((3,), (2, 3)), {}),
]


@pytest.mark.parametrize("g_dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    ("primal", "shapes", "statics"),
    FLOAT32_CASES,
    ids=[f"{getattr(p, '__name__', p)}-{s}" for p, s, _ in FLOAT32_CASES],
)
def test_float32_adjoints_keep_the_dtype(
    primal: object, shapes: tuple[Shape, ...], statics: dict, g_dtype: type
) -> None:
    rule = array_rules().lookup(primal, len(shapes))
    assert rule is not None
    rng = np.random.default_rng(5)
    args64 = [ANY(rng, shape) for shape in shapes]
    args = [np.float32(a) for a in args64]  # a float32 scalar or array
    result = call_primal(rule, args, statics)
    assert np.result_type(result) == np.float32
    g = np.asarray(draw_like(rng, np.shape(result)), dtype=g_dtype)
    adjoints = call_template(rule, args, result, g, statics)
    reference = call_template(rule, args64, call_primal(rule, args64, statics), g, statics)
    for arg, adjoint, exact in zip(args, adjoints, reference, strict=True):
        out = unbroadcast(adjoint, arg)
        assert out.dtype == np.float32, f"{rule_id(rule)}: adjoint dtype {out.dtype}"
        assert np.shape(out) == np.shape(arg)
        np.testing.assert_allclose(out, exact, rtol=1e-4, atol=1e-5)


# ----- helpers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("g_shape", "x_shape"),
    [
        ((3, 4), (3, 4)),
        ((3, 4), (3, 1)),
        ((3, 4), (1, 4)),
        ((3, 4), (4,)),
        ((3, 4), (1, 1)),
        ((3, 4), ()),
        ((2, 3, 4), (3, 1)),
        ((2, 3, 4), (1, 3, 1)),
        ((5,), (1,)),
    ],
)
def test_unbroadcast_sums_to_the_shape(g_shape: tuple, x_shape: tuple) -> None:
    rng = np.random.default_rng(1)
    g = rng.standard_normal(g_shape)
    x = np.ones(x_shape)
    out = unbroadcast(g, x)
    assert np.shape(out) == x_shape
    # The adjoint of broadcasting: <unbroadcast(g), d> == <g, broadcast(d)>.
    d = rng.standard_normal(x_shape)
    assert math.isclose(
        float(np.sum(out * d)), float(np.sum(g * np.broadcast_to(d, g_shape))), rel_tol=1e-12
    )


def test_unbroadcast_of_a_python_float() -> None:
    out = unbroadcast(np.arange(6.0).reshape(2, 3), 2.0)
    assert np.shape(out) == () and float(out) == 15.0


def test_unbroadcast_casts_to_float_dtypes_only() -> None:
    g = np.ones((2, 3))
    assert unbroadcast(g, np.ones(3, dtype=np.float32)).dtype == np.float32
    assert unbroadcast(g, np.ones((2, 3), dtype=np.float32)).dtype == np.float32
    assert unbroadcast(g, np.float32(1.0)).dtype == np.float32
    # An integer argument does not make its adjoint an integer.
    assert unbroadcast(0.5 * g, np.ones(3, dtype=np.int64)).dtype == np.float64
    np.testing.assert_array_equal(unbroadcast(0.5 * g, np.ones(3, dtype=np.int64)), [1.0] * 3)


def test_unbroadcast_scalar_zero_placeholder() -> None:
    out = unbroadcast(0.0, np.ones((2, 3), dtype=np.float32))
    assert out.shape == (2, 3) and out.dtype == np.float32 and not out.any()


def test_unbroadcast_scalar_zero_placeholder_with_unit_axis() -> None:
    out = unbroadcast(0.0, np.ones((1, 3)))
    assert out.shape == (1, 3) and not out.any()


def test_unbroadcast_leaves_a_read_only_input_alone() -> None:
    g = np.arange(12.0).reshape(3, 4)
    g.flags.writeable = False
    x = np.zeros((1, 4))
    x.flags.writeable = False
    out = unbroadcast(g, x)
    np.testing.assert_array_equal(out, [[12.0, 15.0, 18.0, 21.0]])
    np.testing.assert_array_equal(g, np.arange(12.0).reshape(3, 4))
    same = unbroadcast(g, np.zeros((3, 4)))  # nothing to sum: may return g itself
    np.testing.assert_array_equal(same, g)


def test_scatter_adds_repeated_indices() -> None:
    out = scatter(np.array([1.0, 2.0, 4.0, 8.0]), np.zeros(5), np.array([0, 3, 0, -2]))
    np.testing.assert_array_equal(out, [5.0, 0.0, 0.0, 10.0, 0.0])
    pairs = (np.array([1, 1, 0]), np.array([2, 2, 0]))
    out = scatter(np.array([1.0, 2.0, 4.0]), np.zeros((2, 3)), pairs)
    np.testing.assert_array_equal(out, [[4.0, 0.0, 0.0], [0.0, 0.0, 3.0]])
    out = scatter(np.ones((2, 2)), np.zeros((3, 4)), (slice(None, 2), [1, 1]))
    np.testing.assert_array_equal(out[:2], [[0.0, 2.0, 0.0, 0.0]] * 2)


def test_scatter_masks_and_slices() -> None:
    x = np.arange(6.0).reshape(2, 3)
    mask = x > 2.5
    out = scatter(np.array([1.0, 2.0, 3.0]), x, mask)
    np.testing.assert_array_equal(out, [[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]])
    out = scatter(np.array([[1.0], [2.0]]), x, (slice(None), slice(1, 2)))
    np.testing.assert_array_equal(out, [[0.0, 1.0, 0.0], [0.0, 2.0, 0.0]])
    out = scatter(np.array([7.0, 9.0]), x, (Ellipsis, -1))
    np.testing.assert_array_equal(out, [[0.0, 0.0, 7.0], [0.0, 0.0, 9.0]])
    out = scatter(np.array([[1.0, 2.0]]), np.zeros(4), (None, slice(None, None, 2)))
    np.testing.assert_array_equal(out, [1.0, 0.0, 2.0, 0.0])
    out = scatter(5.0, x, (1, 2))
    assert out[1, 2] == 5.0 and out.sum() == 5.0
    assert scatter(np.ones(2), np.zeros(3, dtype=np.float32), slice(1, 3)).shape == (3,)


def as_parts(pairs: list[tuple[tuple[object, ...], object]]) -> object:
    """The nested-dict form of (path, adjoint) pairs that generated code passes to gradient_like.

    Each key leads one level down; key ``()`` holds the adjoint of the value itself; a dict
    holding only ``()`` stands for that adjoint.
    """
    parts: dict = {}
    for path, adjoint in pairs:
        node = parts
        for key in path:
            below = node.setdefault(key, {})
            if not isinstance(below, dict):
                below = node[key] = {(): below}
            node = below
        node[()] = adjoint
    return _collapse(parts)


def _collapse(parts: object) -> object:
    """``{(): b}`` as ``b``, recursively."""
    if not isinstance(parts, dict):
        return parts
    if list(parts) == [()]:
        return parts[()]
    return {key: _collapse(value) for key, value in parts.items()}


def test_gradient_like_nested_trees() -> None:
    tree = {"w": np.ones((2, 3)), "layers": [np.ones(2), (np.ones(3), 2.0)], "k": 1.5}
    parts = [
        (("w",), np.full((2, 3), 2.0)),
        (("layers", -2, 1), 3.0),  # a negative list index names the same leaf as 0
        (("layers", 0), np.array([1.0, 1.0])),
        (("layers", 1, 0, 2), 4.0),
        (("layers", 1, 1), 5.0),
    ]
    out = gradient_like(tree, as_parts(parts))
    assert set(out) == {"w", "layers", "k"}
    np.testing.assert_array_equal(out["w"], np.full((2, 3), 2.0))
    assert isinstance(out["layers"], list) and isinstance(out["layers"][1], tuple)
    np.testing.assert_array_equal(out["layers"][0], [1.0, 4.0])
    np.testing.assert_array_equal(out["layers"][1][0], [0.0, 0.0, 4.0])
    assert out["layers"][1][1] == 5.0
    assert out["k"] == 0.0 and np.ndim(out["k"]) == 0


def test_gradient_like_unused_leaves_are_zeros_of_the_leaf_dtype() -> None:
    tree = {"a": np.ones(3, dtype=np.float32), "b": [np.ones((2, 2)), 4.0], "c": (7.0,)}
    out = gradient_like(tree, {})
    assert out["a"].dtype == np.float32 and out["a"].shape == (3,) and not out["a"].any()
    assert out["b"][0].shape == (2, 2) and not out["b"][0].any()
    assert np.ndim(out["b"][1]) == 0 and out["b"][1] == 0.0
    assert isinstance(out["c"], tuple) and len(out["c"]) == 1 and out["c"][0] == 0.0


def test_gradient_like_float_leaf_used_whole_comes_back_a_float() -> None:
    out = gradient_like([1.0, 2.0], as_parts([((1,), np.float64(3.5))]))
    assert isinstance(out[1], float) and out[1] == 3.5


def test_gradient_like_unused_float_leaves_come_back_as_floats() -> None:
    parts = as_parts([(("pair", 0), np.ones(2))])
    out = gradient_like({"k": 1.5, "pair": [np.ones(2), 2.0]}, parts)
    assert isinstance(out["k"], float), f"unused float leaf came back as {out['k']!r}"
    assert isinstance(out["pair"][1], float), f"came back as {out['pair'][1]!r}"


def test_gradient_like_whole_array_and_elements_add_up() -> None:
    tree = [np.zeros(3, dtype=np.float32)]
    out = gradient_like(tree, as_parts([((0,), np.ones(3)), ((0, 1), 2.0), ((-1, 1), 1.0)]))
    np.testing.assert_array_equal(out[0], [1.0, 4.0, 1.0])
    assert out[0].dtype == np.float32
    out = gradient_like(np.zeros((2, 2)), as_parts([((), np.ones((2, 2))), ((1, 0), 5.0)]))
    np.testing.assert_array_equal(out, [[1.0, 1.0], [6.0, 1.0]])


def test_gradient_like_unused_leaf_with_unit_axis() -> None:
    out = gradient_like({"w": np.ones(3), "b": np.zeros((1, 3))}, as_parts([(("w",), np.ones(3))]))
    assert out["b"].shape == (1, 3)


def test_gradient_like_rejects_a_structure_used_whole() -> None:
    with pytest.raises(TypeError, match="used whole"):
        gradient_like([np.ones(2), np.ones(2)], as_parts([((), 1.0), ((0,), np.ones(2))]))


def test_check_scalar() -> None:
    for value in (1.0, np.float64(2.0), np.array(3.0), np.float32(1.0), 3):
        check_scalar(value)
    # The test is on the number of dimensions, not the size: shape (1,) is not a scalar.
    for value in (np.ones(3), np.ones((2, 2)), np.ones(1), np.ones((1, 1))):
        with pytest.raises(TypeError, match=r"returning a scalar.*shape"):
            check_scalar(value)


def test_check_scalar_rejects_a_list() -> None:
    # np.ndim sees the list's dimension: a function returning [x] has no gradient either.
    with pytest.raises(TypeError, match=r"returning a scalar.*shape \(1,\)"):
        check_scalar([1.0])


@pytest.mark.parametrize(
    ("values", "axis", "keepdims"),
    [
        ([[0.0, 2.0, 3.0], [1.5, 0.5, -2.0]], None, False),
        ([[0.0, 2.0, 3.0], [1.5, 0.5, -2.0]], 1, False),
        ([[0.0, 2.0, 0.0], [1.5, 0.0, -2.0]], 0, True),
        ([[0.0, 2.0, 0.0], [1.5, 0.0, -2.0]], None, True),
        ([[0.0, 0.0, 3.0], [0.0, 0.0, 0.0]], (0, -1), False),
    ],
)
def test_prod_adjoint_with_zeros(values: list, axis: object, keepdims: bool) -> None:
    x = np.array(values)
    rng = np.random.default_rng(2)
    result = np.prod(x, axis=axis, keepdims=keepdims)
    g = rng.standard_normal(np.shape(result))
    adjoint = prod_adjoint(g, x, axis, keepdims)
    assert adjoint.shape == x.shape
    # Finite differences along each coordinate (prod is multilinear: they are exact-ish).
    expected = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = STEP
        up = np.sum(g * np.prod(x + e, axis=axis, keepdims=keepdims))
        down = np.sum(g * np.prod(x - e, axis=axis, keepdims=keepdims))
        expected.flat[k] = (up - down) / (2 * STEP)
    np.testing.assert_allclose(adjoint, expected, rtol=1e-7, atol=1e-9)


def test_extreme_adjoint_splits_ties_equally() -> None:
    x = np.array([[3.0, 1.0, 3.0], [2.0, 2.0, 2.0]])
    result = np.max(x, axis=1)
    out = extreme_adjoint(np.array([6.0, 9.0]), x, result, 1, False)
    np.testing.assert_array_equal(
        out,
        [[3.0, 0.0, 3.0], [3.0, 3.0, 3.0]],
        err_msg="convention: tied extremes share the adjoint equally (as in JAX, PyTorch)",
    )
    out = extreme_adjoint(4.0, x, np.min(x), None, False)
    np.testing.assert_array_equal(
        out, [[0.0, 4.0, 0.0], [0.0, 0.0, 0.0]], err_msg="a unique minimum takes it all"
    )
    out = extreme_adjoint(np.array([[4.0]]), x, np.max(x, keepdims=True), None, True)
    np.testing.assert_array_equal(
        out,
        [[2.0, 0.0, 2.0], [0.0, 0.0, 0.0]],
        err_msg="convention: the two tied maxima share the adjoint equally",
    )


def _numpy_function(primal: object) -> bool:
    module = getattr(primal, "__module__", None) or ""
    return isinstance(primal, np.ufunc) or module == "numpy" or module.startswith("numpy.")


def _call_text(name: str, statics: Mapping[str, object]) -> str:
    """``np.name(x, key=value...)`` as the user writes it (einsum: subscripts first)."""
    statics = dict(statics)
    first = [repr(statics.pop("subscripts"))] if name == "einsum" else []
    keywords = [f"{key}={value!r}" for key, value in statics.items()]
    return f"np.{name}({', '.join([*first, 'x', *keywords])})"


def test_every_ruled_function_whose_result_is_a_view_is_known_to_share() -> None:
    """An in-place update of a call's result changes the argument when the result is a view
    of it (or the argument itself); ``aliasing.may_share`` must say so, or adcompile would
    compute a new array where NumPy changes the old one. Checked on every case of every
    NumPy function with a rule, with the case's statics as the user writes them."""
    import ast

    from adcompile.aliasing import may_share

    views = set()
    for rule in RULES:
        if not _numpy_function(rule.primal):
            continue
        name = rule.primal.__name__
        for case in CASES.get((rule.primal, rule.arity), []):
            _, args, statics, result = case_point(rule, case, 0)
            arrays = [a for a in args if isinstance(a, np.ndarray)]
            if isinstance(result, np.ndarray) and any(np.shares_memory(result, a) for a in arrays):
                views.add(name)
                call = ast.parse(_call_text(name, statics), mode="eval").body
                assert may_share(name, call), f"{name} ({case.label}) gives a view"
    assert {"reshape", "transpose", "flip"} <= views  # the check does see views
