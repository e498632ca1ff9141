"""Check compiled gradients against the SymPy reference.

``compare_with_sympy`` compiles with ``adcompile.grad`` and returns a report;
``compare_source_with_sympy`` does the same for an already compiled gradient (``adcompile
check`` prints its table); ``assert_grad_matches_sympy`` is the check for test suites: it
raises AssertionError with that table when any partial disagrees. ``wrt`` means what it means
for ``grad`` (the api's own resolve_wrt interprets it).
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable, Mapping, Sequence

from .api import Wrt, resolve_wrt
from .depth import room_for_deep_expressions
from .report import CheckReport, CheckRow, agrees, as_tuple, format_point, require_point_list
from .symbolic import SAMPLING_STAGES, SymbolicFunction, sample_points, symbolic_function

Point = Mapping[str, float] | Sequence[float]

# Points a check draws when given none: from a wider box first than the corpus sampling
# (``symbolic.SAMPLING_STAGES``), so that a rule wrong on part of the line is likely seen.
DEFAULT_POINT_COUNT = 10
CHECK_STAGES = ((-5.0, 5.0), *SAMPLING_STAGES)


def _as_dict(symbolic: SymbolicFunction, point: Point) -> dict[str, float]:
    """A point as a dict, filling parameters it leaves out from the defaults."""
    if isinstance(point, Mapping):
        given = dict(point)
    else:
        values = list(point)
        if len(values) > len(symbolic.params):
            raise ValueError(
                f"the point {tuple(values)} has more values than {symbolic.name} has parameters"
            )
        given = dict(zip(symbolic.params, values, strict=False))
    unknown = set(given) - set(symbolic.params)
    if unknown:
        raise ValueError(f"the point {given} names unknown parameters {sorted(unknown)}")
    for name in symbolic.params:
        if name not in given:
            if name not in symbolic.defaults:
                raise ValueError(f"the point {given} gives no value for {name!r}")
            given[name] = symbolic.defaults[name]
    return given


@room_for_deep_expressions()
def compare_source_with_sympy(
    source: object,
    gradient: Callable[..., object],
    points: Sequence[Point] | None = None,
    wrt: Wrt = None,
    rtol: float = 1e-9,
    atol: float = 1e-12,
    load_primal: Callable[[], Callable[..., object] | None] | None = None,
) -> CheckReport:
    """Compare a compiled ``gradient`` of ``source`` (function or FunctionSource) with SymPy.

    Where SymPy's partial has no finite value at a point, mpmath differentiates the function
    there: ``load_primal()`` gives it (default: ``source`` itself, or the function it was read
    from), called only then (the CLI defines a file's function for it).
    """
    require_point_list(points)
    symbolic = symbolic_function(source)
    choice = resolve_wrt(symbolic.params, wrt, symbolic.name)
    names = list(choice.names)
    if points is None:
        points = sample_points(source, DEFAULT_POINT_COUNT, wrt=names, stages=CHECK_STAGES)
    report = CheckReport(symbolic.name, rtol, atol)
    if load_primal is None:
        live = source if isinstance(source, types.FunctionType) else symbolic.origin
        load_primal = lambda: live  # noqa: E731 -- the default: no work to load it
    for raw in points:
        point = _as_dict(symbolic, raw)
        at = format_point(point)
        try:
            result = gradient(*(point[p] for p in symbolic.params))
        except (ArithmeticError, ValueError) as exc:  # sqrt'(0): infinite, as Python says
            exc.add_note(f"(the gradient of {symbolic.name} at {at}, checked against SymPy)")
            raise
        try:  # float() of a complex partial, the gradient's or SymPy's
            got = as_tuple(result, choice.bare, len(names))
            expected = symbolic.gradient(point, names)
        except TypeError as exc:
            if "complex" not in str(exc):
                raise
            raise ValueError(
                f"the partials of {symbolic.name} at {at} are not real numbers (the function "
                "is complex there): check it at points of its real domain"
            ) from exc
        for name, value in zip(names, got, strict=True):
            if not math.isfinite(expected[name]):
                expected[name] = _one_sided_agreement(
                    load_primal, point, name, report, expected[name]
                )
            ok = agrees(expected[name], value, rtol, atol)
            report.rows.append(CheckRow(name, point, expected[name], value, ok))
    return report


def _one_sided_agreement(
    load_primal: Callable[[], Callable[..., object] | None],
    point: dict[str, float],
    name: str,
    report: CheckReport,
    symbolic: float,
) -> float:
    """The partial where SymPy's formula gives no finite value but the function has one.

    ``d/dx x ** y`` is ``y * x ** y / x`` to SymPy and ``d/dy`` is ``x ** y * log(x)``: 0/0
    and 0 * -inf at ``x = 0``, where both derivatives are 0 (evalf even makes the second
    ``-inf``). When the function is finite there and mpmath's one-sided derivatives agree on
    a finite value, that is the partial (noted in the report); otherwise SymPy's value stands.
    """
    from .reference import complete_point, one_sided_partials

    try:
        primal = load_primal()
        if not callable(primal):
            return symbolic
        value = primal(*complete_point(primal, point).values())  # (any order of keys)
        if not (isinstance(value, int | float) and math.isfinite(value)):
            return symbolic
        left, right = one_sided_partials(primal, point, name)
    except (ArithmeticError, ValueError, TypeError, RecursionError):  # mpmath cannot run it
        return symbolic
    if not (math.isfinite(left) and agrees(left, right, report.rtol, report.atol)):
        return symbolic
    partial = (left + right) / 2
    report.notes.append(
        f"d/d{name} at {format_point(point)}: SymPy's formula gives {symbolic!r} there; "
        f"the mpmath one-sided derivatives agree on {partial!r}"
    )
    return partial


def compare_with_sympy(
    fn: Callable[..., object],
    points: Sequence[Point] | None = None,
    wrt: Wrt = None,
    rtol: float = 1e-9,
    atol: float = 1e-12,
) -> CheckReport:
    """Compare ``adcompile.grad(fn, wrt=wrt)`` with the SymPy reference at each point."""
    from adcompile import grad  # looked up on the package at call time, so tests can stand in

    return compare_source_with_sympy(fn, grad(fn, wrt=wrt), points, wrt=wrt, rtol=rtol, atol=atol)


def assert_grad_matches_sympy(
    fn: Callable[..., object],
    points: Sequence[Point] | None = None,
    wrt: Wrt = None,
    rtol: float = 1e-9,
    atol: float = 1e-12,
) -> CheckReport:
    """Raise AssertionError with a table unless the compiled gradient matches SymPy."""
    report = compare_with_sympy(fn, points, wrt=wrt, rtol=rtol, atol=atol)
    if not report.ok:
        raise AssertionError(report.table())
    return report
