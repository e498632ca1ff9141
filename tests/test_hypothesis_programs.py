"""Property-based differential test: random straight-line programs against SymPy.

A hypothesis strategy writes random programs of 1-4 inputs and 1-40 statements: new names,
reassignments (of parameters too), tuple assignments and swaps, every augmented operator,
every arithmetic operator, conditional expressions with and/or/not, and every math function
and builtin with a derivative rule, each applied where it is smooth. Values stay bounded: an
operand whose bound grows past ``OPERAND_LIMIT`` is wrapped in ``atan`` before it is used.
Each program is written to a real file and imported (adcompile reads the source), then its
compiled gradient is compared with SymPy's partials at two seeded points in the inputs' box.

The SymPy reference costs far more than the compiler: a value's expanded size is capped at
``MAX_SIZE`` (operands that would exceed it are replaced by smaller ones), which keeps 200
programs (each checked in both modes) well under a minute.

``ADCOMPILE_HYPOTHESIS_EXAMPLES`` sets the number of programs (default 200). The run is
derandomized, so ``python -m pytest`` checks exactly the programs CI checks;
``ADCOMPILE_HYPOTHESIS_RANDOM=1`` draws new ones. (A random draw can, rarely, give SymPy a
derivative whose ``evalf`` runs for many minutes: seen once, in a Min/Max-heavy program.)
"""

from __future__ import annotations

import math
import os
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from adcompile import grad
from adcompile.testing import assert_grad_matches_sympy
from tests.helpers import check_int_inputs, function_from_source

EXAMPLES = int(os.environ.get("ADCOMPILE_HYPOTHESIS_EXAMPLES", "200"))
INPUT_BOUND = 2.0
OPERAND_LIMIT = 4.0
MAX_STATEMENTS = 40
# Expanded size (roughly, nodes of the program as one expression tree) an operand may have;
# SymPy's cost grows with it, and a chain of reuses would otherwise grow it exponentially.
MAX_SIZE = 12
POINTS_PER_PROGRAM = 2
RTOL, ATOL = 1e-7, 1e-9

PARAM_NAMES = ("x", "y", "z", "w")
# Locals are mostly v0, v1, ...; sometimes a name the code generator might want for itself.
TRICKY_NAMES = ("b_x", "dx", "x_bar", "grad", "result", "g", "t1", "cond1", "f_grad", "q_1", "b_f")
# Added to a dividend, comparison or min/max operand so that no exact tie or integer quotient
# can arise from the program's structure (such as (x - x % 0.7) // 0.7).
OFFSETS = (0.137, -0.291, 0.413, 0.0719)
DIVISORS = (0.7, 1.3, 2.5)
# The names a statement line assigns: `a = ...`, `a, b = ...` or `a += ...` (any operator).
TARGETS = re.compile(r"^([\w\s,]+?)\s*(?:\*\*|[-+*/])?= ")

HEADER = """\
import math
import math as m
from math import (
    acos, acosh, asin, asinh, atan, atan2, atanh, cos, cosh, erf, erfc, exp, expm1, fabs,
    hypot, log, log1p, log2, log10, sin, sinh, sqrt, tan, tanh,
)

K = 1.7

"""


@dataclass(frozen=True)
class Value:
    """An expression's text, a bound on its magnitude and its expanded size."""

    text: str
    bound: float
    size: int = 1


@dataclass
class Program:
    """A generated function ``f``: its parameters and body lines (the last one returns)."""

    params: tuple[str, ...]
    body: list[str] = field(default_factory=list)

    @property
    def source(self) -> str:
        """The module text defining ``f``."""
        lines = "".join(f"    {line}\n" for line in self.body)
        return f"{HEADER}\ndef f({', '.join(self.params)}):\n{lines}"


# --- expressions ------------------------------------------------------------------------------

Draw = Callable[[st.SearchStrategy[Any]], Any]


def spell(draw: Draw, name: str) -> str:
    """A math function's name as ``math.f``, ``m.f`` or the bare imported ``f``."""
    return draw(st.sampled_from((f"math.{name}", f"m.{name}", name)))


def bounded(draw: Draw, value: Value) -> Value:
    """``value`` itself if its bound is small, else squashed through atan."""
    if value.bound <= OPERAND_LIMIT:
        return value
    return Value(f"{spell(draw, 'atan')}({value.text})", 1.6, value.size + 1)


def positive(value: Value, offset: float) -> Value:
    """``value * value + offset``: a positive expression at least ``offset``."""
    return Value(
        f"({value.text} * {value.text} + {offset})", value.bound**2 + offset, 2 * value.size
    )


def unit(draw: Draw, value: Value) -> Value:
    """An expression of ``value`` inside [-0.9, 0.9]."""
    return Value(f"{spell(draw, 'sin')}({value.text}) * 0.9", 0.9, value.size + 1)


def call(draw: Draw, name: str, *args: Value, bound: float) -> Value:
    """A call of math function ``name`` on ``args``."""
    text = f"{spell(draw, name)}({', '.join(a.text for a in args)})"
    return Value(text, bound, 1 + sum(a.size for a in args))


def offset(draw: Draw) -> float:
    """One of the tie-breaking offsets."""
    return draw(st.sampled_from(OFFSETS))


def unary(draw: Draw, a: Value) -> Value:
    """A one-operand template applied to ``a`` (|a| <= OPERAND_LIMIT)."""
    kind = draw(st.sampled_from(UNARY_KINDS))
    bound = a.bound
    templates: dict[str, Callable[[], Value]] = {
        "neg": lambda: Value(f"(-{a.text})", bound, a.size + 1),
        "pos": lambda: Value(f"(+{a.text})", bound, a.size + 1),
        "square": lambda: Value(f"{a.text} ** 2", bound**2, a.size + 1),
        "cube": lambda: Value(f"{a.text} ** 3", bound**3, a.size + 1),
        "sin": lambda: call(draw, "sin", a, bound=1.0),
        "cos": lambda: call(draw, "cos", a, bound=1.0),
        "tan": lambda: call(draw, "tan", unit(draw, a), bound=1.3),
        "asin": lambda: call(draw, "asin", unit(draw, a), bound=1.2),
        "acos": lambda: call(draw, "acos", unit(draw, a), bound=2.7),
        "atan": lambda: call(draw, "atan", a, bound=1.6),
        "sinh": lambda: call(draw, "sinh", a, bound=math.sinh(bound)),
        "cosh": lambda: call(draw, "cosh", a, bound=math.cosh(bound)),
        "tanh": lambda: call(draw, "tanh", a, bound=1.0),
        "asinh": lambda: call(draw, "asinh", a, bound=math.asinh(bound)),
        "acosh": lambda: call(draw, "acosh", positive(a, 1.5), bound=math.acosh(bound**2 + 1.5)),
        "atanh": lambda: call(draw, "atanh", unit(draw, a), bound=1.5),
        "exp": lambda: call(draw, "exp", a, bound=math.exp(bound)),
        "expm1": lambda: call(draw, "expm1", a, bound=math.exp(bound)),
        "log": lambda: call(draw, "log", positive(a, 1.0), bound=math.log(bound**2 + 1.0)),
        "log_base": lambda: Value(
            f"{spell(draw, 'log')}({positive(a, 0.5).text}, 2.5)",
            math.log(bound**2 + 0.5, 2.5) + 1.0,
            2 * a.size + 1,
        ),
        "log1p": lambda: call(draw, "log1p", positive(a, 0.0), bound=math.log1p(bound**2)),
        "log2": lambda: call(draw, "log2", positive(a, 0.5), bound=math.log2(bound**2 + 0.5) + 1),
        "log10": lambda: call(draw, "log10", positive(a, 0.5), bound=math.log10(bound**2 + 1)),
        "sqrt": lambda: call(draw, "sqrt", positive(a, 0.5), bound=math.sqrt(bound**2 + 0.5)),
        "fabs": lambda: call(draw, "fabs", a, bound=bound),
        "abs": lambda: Value(f"abs({a.text})", bound, a.size + 1),
        "float": lambda: Value(f"float({a.text})", bound, a.size + 1),
        "erf": lambda: call(draw, "erf", a, bound=1.0),
        "erfc": lambda: call(draw, "erfc", a, bound=2.0),
        "float_power": lambda: power_of_positive(draw, a, draw(st.sampled_from((0.5, 1.5, -0.5)))),
        "floordiv": lambda: floordiv(draw, a, draw(st.sampled_from(DIVISORS))),
        "mod": lambda: mod(draw, a, draw(st.sampled_from(DIVISORS))),
        "constant": lambda: Value(f"K * {a.text}", 1.7 * bound, a.size + 1),
    }
    return templates[kind]()


def power_of_positive(draw: Draw, a: Value, exponent: float | str) -> Value:
    """``(a*a + 0.5) ** exponent`` spelled as ``**``, ``math.pow`` or builtin ``pow``."""
    base = positive(a, 0.5)
    spelling = draw(st.sampled_from(("op", "math", "builtin")))
    if spelling == "op":
        text = f"{base.text} ** {exponent}"
    elif spelling == "math":
        text = f"{draw(st.sampled_from(('math.pow', 'm.pow')))}({base.text}, {exponent})"
    else:
        text = f"pow({base.text}, {exponent})"
    # |exponent| <= 1.5 and base in [0.5, bound**2 + 0.5]
    bound = max(base.bound**1.5, 0.5**-1.5)
    return Value(text, bound, base.size + 2)


def floordiv(draw: Draw, a: Value, divisor: float | Value) -> Value:
    """``(a + offset) // divisor``; the offset keeps the quotient off integers."""
    d_text = divisor.text if isinstance(divisor, Value) else str(divisor)
    d_size = divisor.size if isinstance(divisor, Value) else 0
    low = divisor.bound if isinstance(divisor, Value) else divisor
    low = min(low, 0.5)
    text = f"({a.text} + {offset(draw)}) // {d_text}"
    return Value(text, (a.bound + 0.5) / low + 1.0, a.size + d_size + 2)


def mod(draw: Draw, a: Value, divisor: float | Value) -> Value:
    """``(a + offset) % divisor``, which lies in [0, divisor)."""
    d_text = divisor.text if isinstance(divisor, Value) else str(divisor)
    d_size = divisor.size if isinstance(divisor, Value) else 0
    high = divisor.bound if isinstance(divisor, Value) else divisor
    text = f"({a.text} + {offset(draw)}) % {d_text}"
    return Value(text, high, a.size + d_size + 2)


def condition(draw: Draw, a: Value, b: Value) -> str:
    """A test on ``a`` and ``b`` with comparisons, and/or/not and chained comparisons."""
    c1, c2 = offset(draw), offset(draw)
    kind = draw(st.sampled_from(("gt", "lt", "ge", "le", "and", "or", "not", "chain")))
    simple = {
        "gt": f"{a.text} > {b.text} + {c1}",
        "lt": f"{a.text} < {c1}",
        "ge": f"{a.text} >= {b.text} + {c1}",
        "le": f"{b.text} <= {c1}",
        "and": f"{a.text} > {c1} and {b.text} < {c2}",
        "or": f"{a.text} < {c1} or not {b.text} > {c2}",
        "not": f"not {a.text} > {b.text} + {c1}",
        "chain": f"-1.0 + {c1} < {a.text} < 1.0 + {c2}",
    }
    return simple[kind]


def binary(draw: Draw, a: Value, b: Value) -> Value:
    """A two-operand template applied to ``a`` and ``b`` (both |.| <= OPERAND_LIMIT)."""
    kind = draw(st.sampled_from(BINARY_KINDS))
    size = a.size + b.size + 1
    templates: dict[str, Callable[[], Value]] = {
        "add": lambda: Value(f"({a.text} + {b.text})", a.bound + b.bound, size),
        "sub": lambda: Value(f"({a.text} - {b.text})", a.bound + b.bound, size),
        "mul": lambda: Value(f"{a.text} * {b.text}", a.bound * b.bound, size),
        "div": lambda: Value(f"{a.text} / {positive(b, 1.0).text}", a.bound, size + b.size + 1),
        "floordiv": lambda: floordiv(draw, a, positive(b, 0.5)),
        "mod": lambda: mod(draw, a, positive(b, 0.5)),
        "pow": lambda: power_of_positive(draw, a, f"{spell(draw, 'sin')}({b.text})"),
        "atan2": lambda: call(draw, "atan2", a, positive(b, 0.5), bound=math.pi),
        "hypot": lambda: call(draw, "hypot", a, positive(b, 0.5), bound=a.bound + b.bound**2 + 1),
        "log_var_base": lambda: Value(
            f"{spell(draw, 'log')}({positive(a, 1.0).text}, {positive(b, 1.5).text})",
            math.log(a.bound**2 + 1.0) / math.log(1.5),
            size + a.size + b.size + 2,
        ),
        "min": lambda: Value(f"min({a.text}, {b.text} + {offset(draw)})", a.bound, size),
        "max": lambda: Value(f"max({a.text}, {b.text} + {offset(draw)})", a.bound + 1.0, size),
        "min3": lambda: Value(
            f"min({a.text}, {b.text} + {offset(draw)}, {3 * offset(draw):.4f})", a.bound, size
        ),
        "max3": lambda: Value(
            f"max({a.text}, {b.text} + {offset(draw)}, {3 * offset(draw):.4f})", a.bound + 1.5, size
        ),
        "ifexp": lambda: Value(
            f"({a.text} if {condition(draw, a, b)} else {b.text})",
            max(a.bound, b.bound),
            2 * size,
        ),
        "ifexp_nested": lambda: Value(
            f"(({a.text} * {b.text} if {condition(draw, b, a)} else -{a.text}) "
            f"if {condition(draw, a, b)} else {b.text})",
            max(a.bound * b.bound, a.bound, b.bound),
            4 * size,
        ),
    }
    return templates[kind]()


UNARY_KINDS = (
    "neg",
    "pos",
    "square",
    "cube",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "exp",
    "expm1",
    "log",
    "log_base",
    "log1p",
    "log2",
    "log10",
    "sqrt",
    "fabs",
    "abs",
    "float",
    "erf",
    "erfc",
    "float_power",
    "floordiv",
    "mod",
    "constant",
)
BINARY_KINDS = (
    "add",
    "sub",
    "mul",
    "div",
    "floordiv",
    "mod",
    "pow",
    "atan2",
    "hypot",
    "log_var_base",
    "min",
    "max",
    "min3",
    "max3",
    "ifexp",
    "ifexp_nested",
)


# --- statements -----------------------------------------------------------------------------


@dataclass
class Scope:
    """The names a program has bound so far, with the Value each currently holds."""

    values: dict[str, Value]
    fresh: int = 0

    def operand(self, draw: Draw, budget: int = MAX_SIZE) -> Value:
        """A bound name as an operand (bounded), preferring ones that fit the size budget."""
        names = sorted(self.values)
        small = [n for n in names if self.values[n].size <= budget] or names
        name = draw(st.sampled_from(small))
        value = self.values[name]
        if value.size > budget:
            return Value(f"({draw(st.sampled_from(OFFSETS))})", 0.5, 1)
        return bounded(draw, Value(name, value.bound, value.size))

    def new_name(self, draw: Draw) -> str:
        """A name not bound yet: v0, v1, ... or one of the tricky names."""
        tricky = [n for n in TRICKY_NAMES if n not in self.values]
        if tricky and draw(st.integers(0, 4)) == 0:
            return draw(st.sampled_from(tricky))
        self.fresh += 1
        return f"v{self.fresh}"

    def target(self, draw: Draw) -> str:
        """A name to assign: a new one or one already bound (a parameter included)."""
        if draw(st.booleans()):
            return self.new_name(draw)
        return draw(st.sampled_from(sorted(self.values)))


def expression(draw: Draw, scope: Scope) -> Value:
    """A random expression of the names in scope: one template, sometimes two nested."""
    a = scope.operand(draw, MAX_SIZE // 2)
    if draw(st.booleans()):
        result = unary(draw, a)
    else:
        result = binary(draw, a, scope.operand(draw, MAX_SIZE // 2))
    if draw(st.integers(0, 3)) == 0:
        result = unary(draw, bounded(draw, Value(f"({result.text})", result.bound, result.size)))
    return result


def assign(draw: Draw, scope: Scope) -> str:
    """``name = expression``."""
    value = expression(draw, scope)
    name = scope.target(draw)
    scope.values[name] = value
    return f"{name} = {value.text}"


def tuple_assign(draw: Draw, scope: Scope) -> str:
    """``a, b = e1, e2``, sometimes the swap ``a, b = b, a``."""
    first = scope.target(draw)
    second = scope.target(draw)
    while second == first:
        second = scope.new_name(draw)
    if first in scope.values and second in scope.values and draw(st.booleans()):
        scope.values[first], scope.values[second] = scope.values[second], scope.values[first]
        return f"{first}, {second} = {second}, {first}"
    e1, e2 = expression(draw, scope), expression(draw, scope)
    scope.values[first], scope.values[second] = e1, e2
    return f"{first}, {second} = {e1.text}, {e2.text}"


def augmented(draw: Draw, scope: Scope) -> str:
    """``name op= expression`` for each of += -= *= /= **=."""
    name = draw(st.sampled_from(sorted(scope.values)))
    old = scope.values[name]
    if old.bound > OPERAND_LIMIT or old.size > MAX_SIZE // 2:
        return assign(draw, scope)
    kind = draw(st.sampled_from(("+=", "-=", "*=", "/=", "**=")))
    if kind == "**=":
        exponent = draw(st.sampled_from((2, 3)))
        scope.values[name] = Value(name, old.bound**exponent, old.size + 1)
        return f"{name} **= {exponent}"
    rhs = scope.operand(draw, MAX_SIZE // 2)
    if kind == "/=":
        divisor = positive(rhs, 1.0)
        scope.values[name] = Value(name, old.bound, old.size + divisor.size + 1)
        return f"{name} /= {divisor.text}"
    bound = old.bound * rhs.bound if kind == "*=" else old.bound + rhs.bound
    scope.values[name] = Value(name, bound, old.size + rhs.size + 1)
    return f"{name} {kind} {rhs.text}"


STATEMENTS = (assign, assign, assign, tuple_assign, augmented)


def returned(draw: Draw, scope: Scope, last: str) -> Value:
    """The returned expression: a fresh one, plus the names the last statement assigned."""
    value = expression(draw, scope)
    targets = [name.strip() for name in TARGETS.match(last).group(1).split(",")]
    for name in targets:
        if scope.values[name].size + value.size <= 2 * MAX_SIZE:
            operand = bounded(draw, Value(name, scope.values[name].bound, scope.values[name].size))
            value = Value(
                f"{value.text} + {operand.text}", value.bound + 1, value.size + operand.size
            )
    return value


@st.composite
def programs(draw: Draw) -> Program:
    """A random straight-line function ``f`` of 1-4 inputs and 1-40 statements."""
    params = PARAM_NAMES[: draw(st.integers(1, len(PARAM_NAMES)))]
    scope = Scope({p: Value(p, INPUT_BOUND) for p in params})
    program = Program(params)
    if draw(st.integers(0, 9)) == 0:
        program.body.append('"""A generated program."""')
    for _ in range(draw(st.integers(1, MAX_STATEMENTS))):
        program.body.append(draw(st.sampled_from(STATEMENTS))(draw, scope))
    program.body.append(f"return {returned(draw, scope, program.body[-1]).text}")
    return program


# --- the test -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory for the generated program files."""
    return tmp_path_factory.mktemp("programs")


def sample_inputs(params: tuple[str, ...], seed: int) -> list[dict[str, float]]:
    """Seeded points in the inputs' box [-INPUT_BOUND, INPUT_BOUND]."""
    rng = random.Random(seed)
    return [
        {p: round(rng.uniform(-INPUT_BOUND, INPUT_BOUND), 6) for p in params}
        for _ in range(POINTS_PER_PROGRAM)
    ]


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=os.environ.get("ADCOMPILE_HYPOTHESIS_RANDOM") != "1",
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(program=programs(), seed=st.integers(0, 2**32 - 1))
def test_random_program_gradients_match_sympy(
    program: Program, seed: int, program_dir: Path
) -> None:
    note(program.source)
    fn = function_from_source(program_dir, program.source, "f")
    points = sample_inputs(program.params, seed)
    for point in points:
        value = fn(**point)
        assert math.isfinite(value), f"the generator made a program that overflows at {point}"
    report = assert_grad_matches_sympy(fn, points=points, rtol=RTOL, atol=ATOL)
    # Forward mode against the SymPy values just checked: the report has one row per
    # (point, parameter), in that order.
    forward = grad(fn, mode="forward")
    rows = iter(report.rows)
    for point in points:
        got = forward(**point)
        for value in got if isinstance(got, tuple) else (got,):
            row = next(rows)
            assert math.isclose(value, row.expected, rel_tol=RTOL, abs_tol=ATOL), (
                f"forward mode d/d{row.param} at {point}: {value!r}, SymPy {row.expected!r}"
            )
    check_int_inputs(fn, {p: round(v) for p, v in points[0].items()})
