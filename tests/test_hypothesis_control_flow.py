"""Property-based differential test: random programs with control flow against mpmath.

A hypothesis strategy writes a module of 0-2 helper functions and a function ``f`` of 1-3
float inputs and an int loop count ``n`` (0..6, in a random position among the parameters).
Bodies have 1-15 statements mixing assignments (new names, reassigned parameters, damped
augmented assignments), if/elif/else on comparisons with and/or/not and calls, if/else chains
that define a name in every branch, ``for`` over every ``range`` form (nested, with ``break``,
``continue`` and ``else``), bounded ``while`` loops (a counter in the condition, or
``while True`` with a counted ``break``), early returns at any depth, calls of the helpers
(positional and keyword arguments, defaults, helpers calling helpers, helpers with their own
ifs, loops and early returns), lambdas assigned and called, and ``sum`` of a generator over a
range. Every value stays within ``LIMIT``: an operand whose bound would grow past it is squashed
(``tanh``, ``sin``, ``atan`` or ``e / (e * e + 1.0)``), so nothing overflows however often a
loop runs.

Each program is written to a real file and imported (adcompile reads the source), compiled
with ``grad(f, wrt=<float params>)`` and compared at two seeded points with the mpmath
reference, which runs the primal itself at 40 digits. A point is kept only if a float central
difference (step ``FD_STEP``) agrees with the reference: a branch threshold within the step
would make them differ, so kinks and jumps near the point are excluded. A point that fails is
redrawn (``MAX_POINT_TRIES`` times, then the example is rejected).

``ADCOMPILE_HYPOTHESIS_EXAMPLES`` sets the number of programs (default 200). The run is
derandomized, so ``python -m pytest`` checks exactly the programs CI checks;
``ADCOMPILE_HYPOTHESIS_RANDOM=1`` draws new ones.
"""

from __future__ import annotations

import ast
import math
import os
import random
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, event, given, note, reject, settings
from hypothesis import strategies as st

from adcompile import grad
from adcompile.reference import reference_gradient_mp
from adcompile.report import CheckReport, CheckRow, agrees
from tests.helpers import check_int_inputs, function_from_source

EXAMPLES = int(os.environ.get("ADCOMPILE_HYPOTHESIS_EXAMPLES", "200"))
INPUT_BOUND = 2.0
# Every variable, parameter and returned value stays within LIMIT in magnitude.
LIMIT = 4.0
MAX_STATEMENTS = 15
MAX_HELPER_STATEMENTS = 4
MAX_BLOCK = 3
MAX_LOOP_DEPTH = 2
MAX_NESTING = 3
MAX_COUNT = 6
POINTS_PER_PROGRAM = 2
MAX_POINT_TRIES = 10
RTOL, ATOL = 1e-7, 1e-9
FD_STEP = 1e-6
FD_RTOL, FD_ATOL = 1e-4, 1e-6

FLOAT_PARAMS = ("x", "y", "z")
COUNT_PARAM = "n"
# Thresholds of comparisons: no value the program computes exactly from its structure.
THRESHOLDS = (-0.83, -0.291, -0.137, 0.0719, 0.137, 0.413, 0.61, 0.947, 1.31)
# Locals are mostly v1, v2, ...; sometimes a name the code generator uses for itself.
TRICKY_NAMES = (
    "returned",
    "broke",
    "skip",
    "acc",
    "result",
    "stack1",
    "n_iterations",
    "cond1",
    "t1",
    "b_x",
    "b_f",
    "f_grad",
)
# The names the code generator gives its own control-flow flags and accumulators: an inlined
# helper's locals must not clash with them.
FLAG_NAMES = ("returned", "broke", "skip", "result", "acc")
# adcompile ignores the defaults of a lambda's (or nested def's) parameters: a call that
# leaves one out is rejected ("the call to `g` gives no value for parameter `u`").
LAMBDA_DEFAULTS = False
LOOP_NAMES = ("i", "j", "l")
COUNTER_NAMES = ("k", "c")
LAMBDA_PARAMS = ("t", "u", "s")
HELPER_PARAMS = (("t", "u"), ("x", "y"), ("a", "b"))

HEADER = """\
import math
import math as m
from math import (
    acos, acosh, asin, asinh, atan, atan2, atanh, cos, cosh, erf, erfc, exp, expm1, fabs,
    hypot, log, log1p, log2, log10, sin, sinh, sqrt, tan, tanh,
)

"""

Draw = Callable[[st.SearchStrategy[Any]], Any]
T = TypeVar("T")


# --- programs and scopes ----------------------------------------------------------------------


@dataclass(frozen=True)
class Value:
    """An expression's text and a bound on its magnitude."""

    text: str
    bound: float


@dataclass(frozen=True)
class Param:
    """A parameter of a helper or lambda: its name, kind ("float" or "int") and default."""

    name: str
    kind: str = "float"
    default: str | None = None


@dataclass(frozen=True)
class Callee:
    """A helper function or a lambda the generated code may call."""

    name: str
    params: tuple[Param, ...]


@dataclass
class Scope:
    """What a statement may use: bound names, callees and the enclosing loops."""

    floats: list[str]
    ints: list[str]
    helpers: tuple[Callee, ...]
    lambdas: list[Callee] = field(default_factory=list)
    loop_depth: int = 0
    nesting: int = 0
    in_loop: bool = False

    def child(self, *, loop: bool = False, ints: tuple[str, ...] = ()) -> Scope:
        """The scope of a nested block; names it binds are forgotten after it."""
        return Scope(
            list(self.floats),
            [*self.ints, *ints],
            self.helpers,
            list(self.lambdas),
            self.loop_depth + loop,
            self.nesting + 1,
            self.in_loop or loop,
        )

    @property
    def callees(self) -> list[Callee]:
        """Helpers and lambdas in scope."""
        return [*self.helpers, *self.lambdas]


@dataclass
class Context:
    """Per-function state: the statement budget, the fresh-name counter, and the names the code
    generator uses for itself with the odds (1 in ``tricky_odds``) that a new name is one."""

    budget: int
    tricky_names: tuple[str, ...] = TRICKY_NAMES
    tricky_odds: int = 4
    counter: int = 0

    def fresh(self, prefix: str) -> str:
        """A new name ``prefix<N>``."""
        self.counter += 1
        return f"{prefix}{self.counter}"


@dataclass
class Program:
    """A generated module: helper definitions and ``f``'s parameters and body."""

    params: tuple[str, ...]
    floats: tuple[str, ...]
    helpers: list[str]
    body: list[str]

    @property
    def source(self) -> str:
        """The module text."""
        helpers = "".join(f"{text}\n\n" for text in self.helpers)
        body = "".join(f"    {line}\n" for line in self.body)
        return f"{HEADER}{helpers}def f({', '.join(self.params)}):\n{body}"


def indent(lines: list[str]) -> list[str]:
    """``lines`` one level deeper."""
    return [f"    {line}" for line in lines]


# --- expressions ------------------------------------------------------------------------------


def spell(draw: Draw, name: str) -> str:
    """A math function's name as ``math.f``, ``m.f`` or the bare imported ``f``."""
    return draw(st.sampled_from((f"math.{name}", f"m.{name}", name)))


def threshold(draw: Draw) -> float:
    """A comparison constant."""
    return draw(st.sampled_from(THRESHOLDS))


def squash(draw: Draw, value: Value) -> Value:
    """``value`` itself if within LIMIT, else squashed through tanh, sin, atan or e/(e*e+1)."""
    if value.bound <= LIMIT:
        return value
    kind = draw(st.sampled_from(("tanh", "sin", "atan", "ratio")))
    if kind == "ratio":
        return Value(f"({value.text}) / (({value.text}) ** 2 + 1.0)", 0.5)
    return Value(f"{spell(draw, kind)}({value.text})", 1.6)


def positive(a: Value, offset: float) -> Value:
    """``a * a + offset``."""
    return Value(f"({a.text} * {a.text} + {offset})", a.bound**2 + offset)


def unit(draw: Draw, a: Value) -> Value:
    """An expression of ``a`` inside [-0.9, 0.9]."""
    return Value(f"{spell(draw, 'sin')}({a.text}) * 0.9", 0.9)


def call(draw: Draw, name: str, *args: Value, bound: float) -> Value:
    """A call of math function ``name``."""
    return Value(f"{spell(draw, name)}({', '.join(a.text for a in args)})", bound)


def unary(draw: Draw, a: Value) -> Value:
    """A one-operand template applied to ``a`` (|a| <= LIMIT), each where it is smooth."""
    b = a.bound
    templates: dict[str, Callable[[], Value]] = {
        "neg": lambda: Value(f"(-{a.text})", b),
        "square": lambda: Value(f"{a.text} ** 2", b**2),
        "cube": lambda: Value(f"{a.text} ** 3", b**3),
        "sin": lambda: call(draw, "sin", a, bound=1.0),
        "cos": lambda: call(draw, "cos", a, bound=1.0),
        "tan": lambda: call(draw, "tan", unit(draw, a), bound=1.3),
        "asin": lambda: call(draw, "asin", unit(draw, a), bound=1.2),
        "acos": lambda: call(draw, "acos", unit(draw, a), bound=2.7),
        "atan": lambda: call(draw, "atan", a, bound=1.6),
        "sinh": lambda: call(draw, "sinh", a, bound=math.sinh(b)),
        "cosh": lambda: call(draw, "cosh", a, bound=math.cosh(b)),
        "tanh": lambda: call(draw, "tanh", a, bound=1.0),
        "asinh": lambda: call(draw, "asinh", a, bound=math.asinh(b)),
        "acosh": lambda: call(draw, "acosh", positive(a, 1.5), bound=math.acosh(b**2 + 1.5)),
        "atanh": lambda: call(draw, "atanh", unit(draw, a), bound=1.5),
        "exp": lambda: call(draw, "exp", a, bound=math.exp(b)),
        "expm1": lambda: call(draw, "expm1", a, bound=math.exp(b)),
        "log": lambda: call(draw, "log", positive(a, 1.0), bound=math.log(b**2 + 1.0)),
        "log_base": lambda: Value(
            f"{spell(draw, 'log')}({positive(a, 0.5).text}, 2.5)", math.log(b**2 + 0.5, 2.5) + 1
        ),
        "log1p": lambda: call(draw, "log1p", positive(a, 0.0), bound=math.log1p(b**2)),
        "log2": lambda: call(draw, "log2", positive(a, 0.5), bound=math.log2(b**2 + 0.5) + 1),
        "log10": lambda: call(draw, "log10", positive(a, 0.5), bound=math.log10(b**2 + 1) + 1),
        "sqrt": lambda: call(draw, "sqrt", positive(a, 0.5), bound=math.sqrt(b**2 + 0.5)),
        "fabs": lambda: call(draw, "fabs", a, bound=b),
        "abs": lambda: Value(f"abs({a.text})", b),
        "float": lambda: Value(f"float({a.text})", b),
        "erf": lambda: call(draw, "erf", a, bound=1.0),
        "erfc": lambda: call(draw, "erfc", a, bound=2.0),
        "power": lambda: power(draw, a, str(draw(st.sampled_from((0.5, 1.5, -0.5))))),
        "scale": lambda: Value(f"1.7 * {a.text}", 1.7 * b),
    }
    return templates[draw(st.sampled_from(sorted(templates)))]()


def power(draw: Draw, a: Value, exponent: str) -> Value:
    """``(a*a + 0.5) ** exponent`` (|exponent| <= 1.5) spelled ``**``, ``math.pow`` or ``pow``."""
    base = positive(a, 0.5)
    spelling = draw(st.sampled_from(("op", "math", "builtin")))
    if spelling == "op":
        text = f"{base.text} ** {exponent}"
    elif spelling == "math":
        text = f"{spell(draw, 'pow')}({base.text}, {exponent})"
    else:
        text = f"pow({base.text}, {exponent})"
    return Value(text, max(base.bound**1.5, 0.5**-1.5))


def binary(draw: Draw, a: Value, b: Value, scope: Scope, user_calls: bool) -> Value:
    """A two-operand template applied to ``a`` and ``b`` (both within LIMIT)."""
    templates: dict[str, Callable[[], Value]] = {
        "add": lambda: Value(f"({a.text} + {b.text})", a.bound + b.bound),
        "sub": lambda: Value(f"({a.text} - {b.text})", a.bound + b.bound),
        "mul": lambda: Value(f"{a.text} * {b.text}", a.bound * b.bound),
        "div": lambda: Value(f"{a.text} / {positive(b, 1.0).text}", a.bound),
        "pow": lambda: power(draw, a, f"{spell(draw, 'sin')}({b.text})"),
        "atan2": lambda: call(draw, "atan2", a, positive(b, 0.5), bound=math.pi),
        "hypot": lambda: call(draw, "hypot", a, positive(b, 0.5), bound=a.bound + b.bound**2 + 0.5),
        "log_base": lambda: Value(
            f"{spell(draw, 'log')}({positive(a, 1.0).text}, {positive(b, 1.5).text})",
            math.log(a.bound**2 + 1.0) / math.log(1.5),
        ),
        "min": lambda: Value(f"min({a.text}, {b.text} + {threshold(draw)})", a.bound),
        "max": lambda: Value(f"max({a.text}, {b.text} + {threshold(draw)})", a.bound + 1.5),
        "ifexp": lambda: Value(
            f"({a.text} if {condition(draw, scope, user_calls)} else {b.text})",
            max(a.bound, b.bound),
        ),
    }
    return templates[draw(st.sampled_from(sorted(templates)))]()


def int_operand(draw: Draw, scope: Scope) -> str:
    """An int in scope (``n``, a loop variable, a counter) or a small literal."""
    names = [name for name in scope.ints if name != "_"]
    if names and draw(st.integers(0, 3)):
        return draw(st.sampled_from(names))
    return str(draw(st.integers(0, 4)))


def call_text(draw: Draw, scope: Scope, callee: Callee) -> str:
    """A call of ``callee`` with plain operands: positional, keywords, defaults left out."""
    positional: list[str] = []
    keywords: list[str] = []
    for param in callee.params:
        if param.default is not None and draw(st.integers(0, 2)) == 0:
            continue  # left to its default
        if param.kind == "int":
            argument = int_operand(draw, scope)
        else:
            argument = operand(draw, scope, user_calls=False).text
        # After a keyword or a left-out default, the rest must be keywords too.
        skipped = len(positional) + len(keywords) < callee.params.index(param)
        if keywords or skipped or draw(st.integers(0, 3)) == 0:
            keywords.append(f"{param.name}={argument}")
        else:
            positional.append(argument)
    keywords = list(draw(st.permutations(keywords)))
    return f"{callee.name}({', '.join(positional + keywords)})"


def operand(draw: Draw, scope: Scope, user_calls: bool) -> Value:
    """A float name in scope (mostly), an int scaled to a float, or a user call."""
    options: list[str | Callee] = [*scope.floats] * 4
    options += [f"(0.25 * {name})" for name in scope.ints if name != "_"]
    if user_calls:
        options += scope.callees
    choice = draw(st.sampled_from(options))
    if isinstance(choice, Callee):
        return Value(call_text(draw, scope, choice), LIMIT)
    return Value(choice, 0.25 * MAX_COUNT if choice.startswith("(0.25") else LIMIT)


def expression(draw: Draw, scope: Scope, user_calls: bool = True) -> Value:
    """A random expression within LIMIT: one template, sometimes two nested."""
    a = operand(draw, scope, user_calls)
    if draw(st.booleans()):
        result = unary(draw, a)
    else:
        result = binary(draw, a, operand(draw, scope, user_calls), scope, user_calls)
    if draw(st.integers(0, 3)) == 0:
        result = unary(draw, squash(draw, Value(f"({result.text})", result.bound)))
    return squash(draw, result)


def comparison(draw: Draw, scope: Scope, user_calls: bool) -> str:
    """One comparison of a value (or an int) with a constant or another value."""
    kind = draw(st.sampled_from(("const", "const", "call", "chain", "var", "int")))
    a = operand(draw, scope, user_calls).text
    op = draw(st.sampled_from(("<", "<=", ">", ">=")))
    if kind == "call":
        return f"{unary(draw, Value(a, LIMIT)).text} {op} {threshold(draw)}"
    if kind == "chain":
        low, high = sorted(draw(st.lists(st.sampled_from(THRESHOLDS), min_size=2, max_size=2)))
        return f"{round(low - 0.5, 4)} < {a} < {high}"
    if kind == "var":
        return f"{a} {op} {operand(draw, scope, user_calls).text} + {threshold(draw)}"
    if kind == "int" and [name for name in scope.ints if name != "_"]:
        i = int_operand(draw, scope)
        return draw(st.sampled_from((f"{i} {op} 2", f"{i} % 2 == 0", f"{i} == 1", f"{i} != 3")))
    return f"{a} {op} {threshold(draw)}"


def condition(draw: Draw, scope: Scope, user_calls: bool = True) -> str:
    """A test: comparisons combined with and/or/not."""
    first = comparison(draw, scope, user_calls)
    kind = draw(st.sampled_from(("plain", "plain", "and", "or", "not", "or_not")))
    if kind == "plain":
        return first
    if kind == "not":
        return f"not {first}"
    second = comparison(draw, scope, user_calls)
    if kind == "and":
        return f"{first} and {second}"
    if kind == "or":
        return f"{first} or {second}"
    return f"({first} or not {second})"


# --- simple statements ------------------------------------------------------------------------


def new_float_name(draw: Draw, ctx: Context, scope: Scope) -> str:
    """A float name not bound in scope: v<N> or one of the tricky names."""
    tricky = [n for n in ctx.tricky_names if n not in scope.floats]
    if tricky and draw(st.integers(1, ctx.tricky_odds)) == 1:
        return draw(st.sampled_from(tricky))
    return ctx.fresh("v")


def target(draw: Draw, ctx: Context, scope: Scope) -> str:
    """A float name to assign: a new one or one already bound (a parameter included)."""
    if draw(st.booleans()):
        name = new_float_name(draw, ctx, scope)
        scope.floats.append(name)
        return name
    return draw(st.sampled_from(scope.floats))


def assign(draw: Draw, ctx: Context, scope: Scope) -> list[str]:
    """``name = expression``."""
    value = expression(draw, scope)
    return [f"{target(draw, ctx, scope)} = {value.text}"]


def augmented(draw: Draw, ctx: Context, scope: Scope) -> list[str]:
    """An augmented assignment that keeps its target within LIMIT (damped when it adds)."""
    name = draw(st.sampled_from(scope.floats))
    b = operand(draw, scope, user_calls=True).text
    kind = draw(st.sampled_from(("mul", "div", "add", "sub", "pow")))
    if kind == "mul":
        return [f"{name} *= {spell(draw, draw(st.sampled_from(('sin', 'cos', 'tanh'))))}({b})"]
    if kind == "div":
        return [f"{name} /= {positive(Value(b, LIMIT), 1.0).text}"]
    if kind == "pow":
        return [f"{name} = {spell(draw, 'tanh')}({name}) * 1.5", f"{name} **= 2"]
    op = "+=" if kind == "add" else "-="
    return [f"{name} *= 0.5", f"{name} {op} {spell(draw, 'tanh')}({b}) * 2.0"]


def helper_call(draw: Draw, ctx: Context, scope: Scope) -> list[str]:
    """``name = helper(...)``, sometimes inside a math function."""
    text = call_text(draw, scope, draw(st.sampled_from(scope.callees)))
    if draw(st.booleans()):
        text = squash(draw, unary(draw, Value(text, LIMIT))).text
    return [f"{target(draw, ctx, scope)} = {text}"]


def lambda_definition(draw: Draw, ctx: Context, scope: Scope) -> list[str]:
    """``name = lambda t[, u]: expression`` (capturing names in scope), then a call of it."""
    names = list(draw(st.permutations(LAMBDA_PARAMS)))[: draw(st.integers(1, 2))]
    shadowed = draw(st.sampled_from(scope.floats))
    if draw(st.integers(0, 3)) == 0 and shadowed not in names:
        names[0] = shadowed  # the parameter shadows a local or parameter of the function
    params = [Param(p) for p in names]
    if LAMBDA_DEFAULTS and len(params) == 2 and draw(st.booleans()):
        params[1] = Param(names[1], default=str(threshold(draw)))
    captured = [f for f in scope.floats if f not in names]
    # Parameters weigh thrice as much as captured names.
    inner = Scope([*names, *names, *names, *captured], list(scope.ints), scope.helpers)
    body = expression(draw, inner)
    callee = Callee(ctx.fresh("fn"), tuple(params))
    scope.lambdas.append(callee)
    signature = ", ".join(p.name if p.default is None else f"{p.name}={p.default}" for p in params)
    text = call_text(draw, scope, callee)
    return [
        f"{callee.name} = lambda {signature}: {body.text}",
        f"{target(draw, ctx, scope)} = {text}",
    ]


def generator_sum(draw: Draw, ctx: Context, scope: Scope) -> list[str]:
    """``name = sum(term for j in range(...)) / 6.0`` (or squashed)."""
    var = draw(st.sampled_from(("j", "i", ctx.fresh("g"))))
    inner = scope.child(ints=(var,))
    term = expression(draw, inner)
    text = f"sum({term.text} for {var} in {range_text(draw, scope)})"
    if draw(st.booleans()):
        text = f"{text} / {float(MAX_COUNT)}"
    else:
        text = squash(draw, Value(text, MAX_COUNT * LIMIT)).text
    return [f"{target(draw, ctx, scope)} = {text}"]


def early_return(draw: Draw, ctx: Context, scope: Scope) -> list[str]:
    """``if cond: return expression``."""
    return [f"if {condition(draw, scope)}:", f"    return {expression(draw, scope).text}"]


def loop_exit(draw: Draw, ctx: Context, scope: Scope) -> list[str]:
    """``if cond: break`` or ``if cond: continue`` (inside a loop)."""
    word = draw(st.sampled_from(("break", "continue")))
    return [f"if {condition(draw, scope)}:", f"    {word}"]


# --- compound statements ----------------------------------------------------------------------


def branch(draw: Draw, ctx: Context, scope: Scope, define: str | None = None) -> list[str]:
    """A branch body: 1-3 statements, maybe defining ``define`` first, maybe ending in a jump."""
    child = scope.child()
    lines: list[str] = []
    if define is not None:
        lines.append(f"{define} = {expression(draw, child).text}")
        child.floats.append(define)
    lines += block(draw, ctx, child, draw(st.integers(0 if define else 1, MAX_BLOCK)))
    exits = ["return"] + (["break", "continue"] if scope.in_loop else [])
    if draw(st.integers(0, 5)) == 0:
        word = draw(st.sampled_from(exits))
        lines.append(f"return {expression(draw, child).text}" if word == "return" else word)
    return lines


def if_statement(draw: Draw, ctx: Context, scope: Scope) -> list[str]:
    """if/elif/else; with ``defines`` every branch (an else included) binds one new name."""
    defines = draw(st.integers(0, 3)) == 0
    name = new_float_name(draw, ctx, scope) if defines else None
    lines = [f"if {condition(draw, scope)}:", *indent(branch(draw, ctx, scope, name))]
    for _ in range(draw(st.integers(0, 2))):
        lines += [f"elif {condition(draw, scope)}:", *indent(branch(draw, ctx, scope, name))]
    if defines or draw(st.booleans()):
        lines += ["else:", *indent(branch(draw, ctx, scope, name))]
    if name is not None:
        scope.floats.append(name)
    return lines


def range_text(draw: Draw, scope: Scope) -> str:
    """A ``range(...)`` over ints in scope (``n``, loop variables, counters) or literals."""
    bound = int_operand(draw, scope)
    low = draw(st.integers(0, 2))
    forms = (
        f"range({bound})",
        f"range({low}, {bound})",
        f"range({bound}, 0, -1)",
        f"range(0, {bound}, 2)",
        f"range({bound} - 1, -1, -1)",
    )
    return draw(st.sampled_from(forms))


def loop_else(draw: Draw, ctx: Context, scope: Scope) -> list[str]:
    """An optional ``else:`` clause of a loop (its break/continue belong to outer loops).

    It sometimes ends in a return, which must not run when the loop was left by a return.
    """
    if draw(st.integers(0, 3)):
        return []
    child = scope.child()
    lines = block(draw, ctx, child, draw(st.integers(1, 2)))
    if draw(st.integers(0, 2)) == 0:
        lines.append(f"return {expression(draw, child).text}")
    return ["else:", *indent(lines)]


def for_loop(draw: Draw, ctx: Context, scope: Scope) -> list[str]:
    """``for i in range(...):`` with a body of 1-3 statements and maybe an else clause.

    Sometimes the target is a float's name (a parameter's too): the body reads the index by
    that name and may rebind it, and after the loop the name holds the last index, what the
    body left, or (no iteration) the float it held before. It stays a float name only: a
    body that rebinds it must not make a ``range`` bound of it.
    """
    free = [n for n in LOOP_NAMES if n not in scope.ints]
    floats = [n for n in scope.floats if n not in scope.ints]
    if floats and draw(st.integers(0, 3)) == 0:
        var = draw(st.sampled_from(floats))
        inner = scope.child(loop=True)
    else:
        var = draw(st.sampled_from([*free, "_", ctx.fresh("i")]))
        inner = scope.child(loop=True, ints=(var,))
    header = f"for {var} in {range_text(draw, scope)}:"
    body = block(draw, ctx, inner, draw(st.integers(1, MAX_BLOCK)))
    return [header, *indent(body), *loop_else(draw, ctx, scope)]


def while_loop(draw: Draw, ctx: Context, scope: Scope) -> list[str]:
    """A while loop bounded by a counter incremented first (so ``continue`` is safe)."""
    free = [n for n in COUNTER_NAMES if n not in scope.ints]
    counter = draw(st.sampled_from([*free, ctx.fresh("k")]))
    limit = draw(st.sampled_from(("3", "5", COUNT_PARAM if COUNT_PARAM in scope.ints else "4")))
    inner = scope.child(loop=True, ints=(counter,))
    kind = draw(st.sampled_from(("counter_first", "value_first", "counter_only", "true")))
    test = condition(draw, scope, user_calls=False)
    head = [f"{counter} += 1"]
    if kind == "counter_first":
        header = f"while {counter} < {limit} and ({test}):"
    elif kind == "value_first":
        header = f"while ({test}) and {counter} < {limit}:"
    elif kind == "counter_only":
        header = f"while {counter} < {limit}:"
    else:
        header = "while True:"
        head.append(f"if {counter} > {limit}:")
        head.append("    break")
    body = block(draw, ctx, inner, draw(st.integers(1, MAX_BLOCK)))
    return [f"{counter} = 0", header, *indent(head + body), *loop_else(draw, ctx, scope)]


SIMPLE: dict[str, Callable[[Draw, Context, Scope], list[str]]] = {
    "assign": assign,
    "augmented": augmented,
    "early_return": early_return,
    "sum": generator_sum,
    "lambda": lambda_definition,
}
WEIGHTS = {"assign": 6, "augmented": 2, "early_return": 2, "sum": 1, "lambda": 1}


def statement_kinds(ctx: Context, scope: Scope) -> list[str]:
    """The statement kinds allowed here, repeated by weight."""
    kinds = [kind for kind, weight in WEIGHTS.items() for _ in range(weight)]
    if scope.callees:
        kinds += ["call"] * 2
    if scope.in_loop:
        kinds += ["loop_exit"] * 2
    if ctx.budget >= 2 and scope.nesting < MAX_NESTING:
        kinds += ["if"] * 3
        if scope.loop_depth < MAX_LOOP_DEPTH:
            kinds += ["for"] * 3 + ["while"] * 2
    return kinds


def statement(draw: Draw, ctx: Context, scope: Scope) -> list[str]:
    """One statement (several lines when compound) of a kind allowed here."""
    kind = draw(st.sampled_from(statement_kinds(ctx, scope)))
    ctx.budget -= 1
    makers: dict[str, Callable[[Draw, Context, Scope], list[str]]] = {
        **SIMPLE,
        "call": helper_call,
        "loop_exit": loop_exit,
        "if": if_statement,
        "for": for_loop,
        "while": while_loop,
    }
    return makers[kind](draw, ctx, scope)


def block(draw: Draw, ctx: Context, scope: Scope, size: int) -> list[str]:
    """Up to ``size`` statements (at least one when ``size`` > 0), within the budget."""
    lines: list[str] = []
    for index in range(size):
        if index and ctx.budget <= 0:
            break
        lines += statement(draw, ctx, scope)
    return lines


# --- functions --------------------------------------------------------------------------------


def helper(draw: Draw, index: int, earlier: tuple[Callee, ...]) -> tuple[Callee, str]:
    """A module-level helper of 1-2 floats and maybe an int count, with defaults."""
    first, second = draw(st.sampled_from(HELPER_PARAMS))
    params = [Param(first)]
    if draw(st.booleans()):
        params.append(Param(second, default=str(threshold(draw)) if draw(st.booleans()) else None))
    if draw(st.booleans()):
        default = str(draw(st.integers(0, 3))) if draw(st.booleans()) else None
        if default is None and params[-1].default is not None:
            default = "2"
        params.append(Param("count", "int", default))
    floats = [p.name for p in params if p.kind == "float"]
    ints = [p.name for p in params if p.kind == "int"]
    # Inlined helpers are where the generator's own names (returned, broke, ...) may clash.
    ctx = Context(draw(st.integers(1, MAX_HELPER_STATEMENTS)), FLAG_NAMES, tricky_odds=2)
    scope = Scope(floats, ints, earlier)
    body = block(draw, ctx, scope, MAX_HELPER_STATEMENTS)
    body.append(f"return {expression(draw, scope).text}")
    name = f"h{index}"
    signature = ", ".join(p.name if p.default is None else f"{p.name}={p.default}" for p in params)
    text = "\n".join([f"def {name}({signature}):", *indent(body)])
    return Callee(name, tuple(params)), text


def build_program(draw: Draw) -> Program:
    """A module of 0-2 helpers and ``f`` of 1-3 floats and a count ``n``."""
    callees: tuple[Callee, ...] = ()
    texts: list[str] = []
    for index in range(1, draw(st.integers(0, 2)) + 1):
        callee, text = helper(draw, index, callees)
        callees += (callee,)
        texts.append(text)
    floats = FLOAT_PARAMS[: draw(st.integers(1, len(FLOAT_PARAMS)))]
    params = list(floats)
    params.insert(draw(st.integers(0, len(floats))), COUNT_PARAM)
    ctx = Context(draw(st.integers(1, MAX_STATEMENTS)))
    scope = Scope(list(floats), [COUNT_PARAM], callees)
    body = block(draw, ctx, scope, MAX_STATEMENTS)
    names = draw(st.lists(st.sampled_from(scope.floats), min_size=1, max_size=2))
    body.append(f"return {' + '.join([expression(draw, scope).text, *names])}")
    return Program(tuple(params), floats, texts, body)


@st.composite
def programs(draw: Draw) -> Program:
    """The strategy of ``build_program``."""
    return build_program(draw)


# --- what a program covers (hypothesis statistics) --------------------------------------------


def loop_nodes(node: ast.AST) -> list[ast.For | ast.While]:
    """The loops in ``node`` (itself included)."""
    return [n for n in ast.walk(node) if isinstance(n, ast.For | ast.While)]


def features(source: str) -> set[str]:
    """Names of the control-flow features a generated module uses."""
    tree = ast.parse(source)
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    found: set[str] = set()
    checks: dict[str, Callable[[ast.AST], bool]] = {
        "if": lambda n: isinstance(n, ast.If),
        "elif": lambda n: (
            isinstance(n, ast.If) and len(n.orelse) == 1 and isinstance(n.orelse[0], ast.If)
        ),
        "for": lambda n: isinstance(n, ast.For),
        "while": lambda n: isinstance(n, ast.While),
        "loop else": lambda n: isinstance(n, ast.For | ast.While) and bool(n.orelse),
        "nested loop": lambda n: isinstance(n, ast.For | ast.While) and len(loop_nodes(n)) > 1,
        "break": lambda n: isinstance(n, ast.Break),
        "continue": lambda n: isinstance(n, ast.Continue),
        "lambda": lambda n: isinstance(n, ast.Lambda),
        "sum generator": lambda n: isinstance(n, ast.GeneratorExp),
        "keyword argument": lambda n: isinstance(n, ast.keyword),
        "helper call": lambda n: (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and re.fullmatch(r"h\d", n.func.id) is not None
        ),
    }
    for function in functions:
        for node in ast.walk(function):
            found |= {name for name, check in checks.items() if check(node)}
        returns = [n for n in ast.walk(function) if isinstance(n, ast.Return)]
        if any(r is not function.body[-1] for r in returns):
            found.add("early return")
    if len(functions) > 1:
        found.add("helpers")
    return found


# --- points away from kinks -------------------------------------------------------------------


def central_difference(fn: Callable[..., float], point: dict[str, Any], name: str) -> float:
    """The float central difference of ``fn`` along ``name`` with step FD_STEP."""
    up, down = dict(point), dict(point)
    up[name] = point[name] + FD_STEP
    down[name] = point[name] - FD_STEP
    return (fn(**up) - fn(**down)) / (up[name] - down[name])


def smooth_here(
    fn: Callable[..., float], point: dict[str, Any], expected: dict[str, float]
) -> bool:
    """True when float central differences agree with the reference (no kink within a step)."""
    return all(
        abs(central_difference(fn, point, name) - value) <= FD_RTOL * abs(value) + FD_ATOL
        for name, value in expected.items()
    )


def random_point(program: Program, rng: random.Random) -> dict[str, Any]:
    """A seeded point: floats in [-INPUT_BOUND, INPUT_BOUND], the count in 0..MAX_COUNT."""
    point: dict[str, Any] = {
        p: round(rng.uniform(-INPUT_BOUND, INPUT_BOUND), 6) for p in program.floats
    }
    point[COUNT_PARAM] = rng.randint(0, MAX_COUNT)
    return point


def stably(call: Callable[[], T], what: str) -> T:
    """``call()``, an exception from it re-raised as an AssertionError raised here.

    Hypothesis tells failures apart by where they were raised (and what they were raised
    while handling), and every example's generated code has file names of its own: re-raised
    from one place, outside the handler, a replayed failure is recognised as the same one.
    """
    try:
        return call()
    except Exception as exc:  # any error in the generated code is a failure
        detail = "".join(traceback.format_exception(exc))
    raise AssertionError(f"{what} raised an exception:\n{detail}")


def smooth_point(
    fn: Callable[..., float], program: Program, rng: random.Random
) -> tuple[dict[str, Any], dict[str, float]]:
    """A point away from kinks and its mpmath reference gradient; rejects after 10 tries."""
    for tries in range(MAX_POINT_TRIES):
        point = random_point(program, rng)
        value = stably(partial(fn, **point), f"the primal at {point}")
        assert math.isfinite(value), f"the generator made a program that overflows at {point}"
        reference = partial(reference_gradient_mp, fn, point, program.floats)
        expected = stably(reference, f"the mpmath reference at {point}")
        if stably(partial(smooth_here, fn, point, expected), f"the primal near {point}"):
            event(f"point redraws: {tries}")
            return point, expected
    event("example rejected: no smooth point")
    reject()


# --- the test ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory for the generated program files."""
    return tmp_path_factory.mktemp("control_flow_programs")


def compare(
    gradient: Callable[..., tuple[float, ...]],
    floats: tuple[str, ...],
    checks: list[tuple[dict[str, Any], dict[str, float]]],
) -> CheckReport:
    """The compiled gradient against the mpmath reference at each checked point."""
    report = CheckReport("f", RTOL, ATOL, reference="the mpmath reference")
    for point, expected in checks:
        got = stably(partial(gradient, **point), f"the compiled gradient at {point}")
        for name, value in zip(floats, got, strict=True):
            ok = agrees(expected[name], float(value), RTOL, ATOL)
            report.rows.append(CheckRow(name, point, expected[name], float(value), ok))
    return report


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=os.environ.get("ADCOMPILE_HYPOTHESIS_RANDOM") != "1",
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(program=programs(), seed=st.integers(0, 2**32 - 1))
def test_random_control_flow_gradients_match_mpmath(
    program: Program, seed: int, program_dir: Path
) -> None:
    note(program.source)
    for feature in sorted(features(program.source)):
        event(feature)
    fn = function_from_source(program_dir, program.source, "f")
    gradient = grad(fn, wrt=program.floats)
    rng = random.Random(seed)
    checks = [smooth_point(fn, program, rng) for _ in range(POINTS_PER_PROGRAM)]
    report = compare(gradient, program.floats, checks)
    assert report.ok, report.table()
    # Forward mode must agree at the same points (the reference is already computed).
    forward = grad(fn, wrt=program.floats, mode="forward")
    report = compare(forward, program.floats, checks)
    assert report.ok, "forward mode:\n" + report.table()
    point = {k: round(v) if k in program.floats else v for k, v in checks[0][0].items()}
    check_int_inputs(fn, point, program.floats)
