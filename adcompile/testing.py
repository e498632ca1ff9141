"""Check compiled gradients against the SymPy reference.

``compare_with_sympy`` compiles with ``adcompile.grad`` and returns a report;
``compare_source_with_sympy`` does the same for an already compiled gradient (``adcompile
check`` prints its table); ``assert_grad_matches_sympy`` is the check for test suites: it
raises AssertionError with that table when any partial disagrees. ``wrt`` means what it means
for ``grad`` (the api's own resolve_wrt interprets it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from .api import Wrt, resolve_wrt
from .depth import room_for_deep_expressions
from .symbolic import SAMPLING_STAGES, SymbolicFunction, sample_points, symbolic_function

Point = Mapping[str, float] | Sequence[float]

# Points a check draws when given none: from a wider box first than the corpus sampling
# (``symbolic.SAMPLING_STAGES``), so that a rule wrong on part of the line is likely seen.
DEFAULT_POINT_COUNT = 10
CHECK_STAGES = ((-5.0, 5.0), *SAMPLING_STAGES)


@dataclass(frozen=True)
class CheckRow:
    """One partial derivative at one point: the reference value and the compiled one."""

    param: str
    point: dict[str, float]
    expected: float
    got: float
    ok: bool

    @property
    def rel_err(self) -> float:
        """|got - expected| relative to |expected| (absolute when expected is 0)."""
        if math.isnan(self.expected) and math.isnan(self.got):
            return 0.0
        if self.expected == self.got:  # also equal infinities
            return 0.0
        error = abs(self.got - self.expected)
        return error / abs(self.expected) if self.expected != 0 else error


@dataclass
class CheckReport:
    """The outcome of comparing a compiled gradient with the SymPy reference."""

    function: str
    rtol: float
    atol: float
    rows: list[CheckRow] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every compared partial agrees (and there was something to compare)."""
        return bool(self.rows) and all(row.ok for row in self.rows)

    @property
    def failures(self) -> list[CheckRow]:
        """The rows that disagree."""
        return [row for row in self.rows if not row.ok]

    def summary(self) -> str:
        """One line: how many partials agree, at which tolerances."""
        tolerances = f"rtol={self.rtol:g}, atol={self.atol:g}"
        if self.ok:
            agree = (
                "the partial matches"
                if len(self.rows) == 1
                else f"all {len(self.rows)} partials match"
            )
            return f"{self.function}: {agree} SymPy ({tolerances})"
        return (
            f"{self.function}: {len(self.failures)} of {len(self.rows)} partials differ "
            f"from SymPy ({tolerances})"
        )

    def table(self) -> str:
        """The summary line, then an aligned table of every compared partial."""
        header = ("parameter", "point", "expected", "got", "rel.err", "status")
        body = [
            (
                row.param,
                _format_point(row.point),
                repr(row.expected),
                repr(row.got),
                f"{row.rel_err:.1e}",
                "ok" if row.ok else "MISMATCH",
            )
            for row in self.rows
        ]
        return self.summary() + "\n" + _align([header, *body])

    def __str__(self) -> str:
        return self.table()


def _format_point(point: Mapping[str, float]) -> str:
    return ", ".join(f"{name}={value!r}" for name, value in point.items())


def _align(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    rule = "-+-".join("-" * w for w in widths)
    return "\n".join([lines[0], rule, *lines[1:]])


def _agrees(expected: float, got: float, rtol: float, atol: float) -> bool:
    # A nan reference means the derivative does not exist there; the compiled code must say so
    # too, rather than invent a number.
    if math.isnan(expected) or math.isnan(got):
        return math.isnan(expected) and math.isnan(got)
    if math.isinf(expected) or math.isinf(got):
        return expected == got
    return abs(got - expected) <= atol + rtol * abs(expected)


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


def _as_tuple(result: object, bare: bool, count: int) -> tuple[float, ...]:
    values = (result,) if bare else result
    if not isinstance(values, tuple | list) or len(values) != count:
        shape = "a single value" if bare else f"a tuple of {count}"
        raise AssertionError(f"the compiled gradient returned {result!r}; expected {shape}")
    return tuple(float(v) for v in values)


@room_for_deep_expressions()
def compare_source_with_sympy(
    source: object,
    gradient: Callable[..., object],
    points: Sequence[Point] | None = None,
    wrt: Wrt = None,
    rtol: float = 1e-9,
    atol: float = 1e-12,
) -> CheckReport:
    """Compare a compiled ``gradient`` of ``source`` (function or FunctionSource) with SymPy."""
    symbolic = symbolic_function(source)
    choice = resolve_wrt(symbolic.params, wrt, symbolic.name)
    names = list(choice.names)
    if points is None:
        points = sample_points(source, DEFAULT_POINT_COUNT, wrt=names, stages=CHECK_STAGES)
    report = CheckReport(symbolic.name, rtol, atol)
    for raw in points:
        point = _as_dict(symbolic, raw)
        result = gradient(*(point[p] for p in symbolic.params))
        got = _as_tuple(result, choice.bare, len(names))
        expected = symbolic.gradient(point, names)
        for name, value in zip(names, got, strict=True):
            ok = _agrees(expected[name], value, rtol, atol)
            report.rows.append(CheckRow(name, point, expected[name], value, ok))
    return report


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
