"""Differential test of the optimisation passes (issue 6): switching passes off changes no result.

Every corpus function (straight-line and control flow) is compiled with all passes, with none
(``optimize=False``), and, for a sample, with each pass alone; the results must agree at the
corpus points, in reverse and in forward mode.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from adcompile import grad
from adcompile.optimize import PASSES
from tests.corpus import control_flow as cf
from tests.test_corpus_straight_line import FUNCTIONS, points_for

STRAIGHT_LINE = [
    (fn, [args for args in points_for(name)[:2]]) for name, (fn, _) in FUNCTIONS.items()
]
CONTROL_FLOW = [
    (fn, [list(point.values()) for point in points[:2]], wrt)
    for group, entries in cf.GROUPS.items()
    for fn, points, wrt in entries
]


def agree(a: Any, b: Any) -> bool:
    """Equal partials (a tuple or a bare one), to a few ulps."""
    left = a if isinstance(a, tuple) else (a,)
    right = b if isinstance(b, tuple) else (b,)
    return len(left) == len(right) and all(
        math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-300) or (x != x and y != y)
        for x, y in zip(left, right, strict=True)
    )


def check(fn: Callable[..., Any], calls: list[list[Any]], wrt: Any, optimize: Any) -> None:
    """``grad(fn, optimize=optimize)`` agrees with the fully optimised gradient, both modes."""
    for mode in ("reverse", "forward"):
        full = grad(fn, wrt=wrt, mode=mode)
        partial = grad(fn, wrt=wrt, mode=mode, optimize=optimize)
        for args in calls:
            expected, got = full(*args), partial(*args)
            assert agree(expected, got), f"{mode}, optimize={optimize}, {args}: {got} != {expected}"


def case_id(entry: tuple) -> str:
    """The corpus function's name."""
    return entry[0].__name__


@pytest.mark.parametrize("entry", STRAIGHT_LINE, ids=case_id)
def test_unoptimised_straight_line_agrees(entry: tuple) -> None:
    fn, calls = entry
    check(fn, [list(args) for args in calls], None, optimize=False)


@pytest.mark.parametrize("entry", CONTROL_FLOW, ids=case_id)
def test_unoptimised_control_flow_agrees(entry: tuple) -> None:
    fn, calls, wrt = entry
    check(fn, calls, wrt, optimize=False)


@pytest.mark.parametrize("single_pass", PASSES)
@pytest.mark.parametrize("entry", STRAIGHT_LINE[::7] + CONTROL_FLOW[::7], ids=case_id)
def test_each_pass_alone_agrees(entry: tuple, single_pass: str) -> None:
    fn, calls, *rest = entry
    wrt = rest[0] if rest else None
    check(fn, [list(args) for args in calls], wrt, optimize=[single_pass])


def test_passes_make_the_code_smaller() -> None:
    # Not a speed claim: the optimised seed gradient has fewer statements than the raw one.
    seed = FUNCTIONS["seed"][0]
    raw = grad(seed, optimize=False).source.count("\n")
    assert grad(seed).source.count("\n") < raw


def test_bad_optimize_values_are_rejected() -> None:
    seed = FUNCTIONS["seed"][0]
    with pytest.raises(ValueError, match="unknown optimisation pass 'fast'"):
        grad(seed, optimize=["fast"])
    for text in ("simplify", b"simplify"):  # bytes read as pass 115 before
        with pytest.raises(TypeError, match="optimize must be True, False or a sequence"):
            grad(seed, optimize=text)
