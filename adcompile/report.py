"""The report of a gradient check: one row per partial at one point, and a readable table.

Both references use it: SymPy's symbolic partials (``testing.py``, ``adcompile check``) and
the mpmath numerical one (``reference.py``). Neither SymPy nor mpmath is imported here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field


def agrees(expected: float, got: float, rtol: float, atol: float) -> bool:
    """Closeness with nan matching only nan and infinities matching only themselves.

    A nan reference means the derivative does not exist there: the compiled code must say so
    too, rather than invent a number.
    """
    if math.isnan(expected) or math.isnan(got):
        return math.isnan(expected) and math.isnan(got)
    if math.isinf(expected) or math.isinf(got):
        return expected == got
    return abs(got - expected) <= atol + rtol * abs(expected)


def as_tuple(result: object, bare: bool, count: int) -> tuple[float, ...]:
    """A compiled gradient's result as ``count`` floats (``bare``: a single partial)."""
    values = (result,) if bare else result
    if not isinstance(values, tuple | list) or len(values) != count:
        shape = "a single value" if bare else f"a tuple of {count}"
        raise AssertionError(f"the compiled gradient returned {result!r}; expected {shape}")
    return tuple(float(v) for v in values)


@dataclass(frozen=True)
class CheckRow:
    """One partial derivative at one point: the reference value and the compiled one."""

    param: str
    point: dict[str, object]
    expected: float
    got: float
    ok: bool

    @property
    def rel_err(self) -> float:
        """|got - expected| relative to |expected| (absolute when expected is 0)."""
        if self.expected == self.got or (math.isnan(self.expected) and math.isnan(self.got)):
            return 0.0  # also equal infinities
        error = abs(self.got - self.expected)
        return error / abs(self.expected) if self.expected != 0 else error


@dataclass
class CheckReport:
    """Every compared partial of one function, against one reference.

    ``notes`` say where a row's expected value came from elsewhere (a partial SymPy cannot
    evaluate at the point, taken from mpmath's one-sided derivatives instead).
    """

    function: str
    rtol: float
    atol: float
    reference: str = "SymPy"
    rows: list[CheckRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

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
        if not self.rows:
            return f"{self.function}: no partials compared (no points given)"
        if self.ok:
            agree = (
                "the partial matches"
                if len(self.rows) == 1
                else f"all {len(self.rows)} partials match"
            )
            return f"{self.function}: {agree} {self.reference} ({tolerances})"
        return (
            f"{self.function}: {len(self.failures)} of {len(self.rows)} partials differ "
            f"from {self.reference} ({tolerances})"
        )

    def table(self) -> str:
        """The summary line, an aligned table of every compared partial, then the notes."""
        header = ("parameter", "point", "expected", "got", "rel.err", "status")
        body = [
            (
                row.param,
                format_point(row.point),
                repr(row.expected),
                repr(row.got),
                f"{row.rel_err:.1e}",
                "ok" if row.ok else "MISMATCH",
            )
            for row in self.rows
        ]
        lines = [self.summary()]
        if body:
            lines.append(_align([header, *body]))
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def format_point(point: Mapping[str, object]) -> str:
    """``x=4.0, y=-3.0``."""
    return ", ".join(f"{name}={value!r}" for name, value in point.items())


def _align(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    return "\n".join([lines[0], "-+-".join("-" * w for w in widths), *lines[1:]])


def require_point_list(points: object) -> None:
    """Raise TypeError where ``points`` is one point (a dict) instead of a list of points."""
    if isinstance(points, Mapping | str):
        raise TypeError(
            f"points is a list of points (dicts or tuples of values); got {points!r}, one "
            f"point: pass points=[{points!r}]"
        )
