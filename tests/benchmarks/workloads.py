"""Benchmark workloads: scalar straight-line functions with careful hand-written gradients.

Every workload is Python *source text*: the primal (what adcompile differentiates) and a
hand-written reverse-mode gradient (what a careful person would type). ``make_module`` turns
text into a live module whose source ``linecache`` (and so adcompile) can read, without
touching the disk.

The generated workloads come from a small SSA program (a list of ``Op``) built with
``random.Random(seed)``. Two independent emitters read it: one writes the primal in ordinary
style (reassigned names, augmented assignment, conditional expressions), the other writes
the hand-style reverse sweep (forward values in locals, adjoints accumulated in place, no
copies, dead forward values dropped). Values stay bounded (|v| <= ``VALUE_LIMIT`` for inputs
in [-``INPUT_BOUND``, ``INPUT_BOUND``]) and every ``log``/``sqrt``/division has a positive
argument, so the functions are smooth away from the rare ``a if c > 0.0 else b`` switch.
"""

from __future__ import annotations

import ast
import itertools
import linecache
import math
import random
import re
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass

INPUT_BOUND = 2.0
VALUE_LIMIT = 8.0
PRIMAL_NAME = "f"
HAND_GRAD_NAME = "f_grad"

_module_ids = itertools.count()

_UNARY_WEIGHTS = {
    "sin": 3,
    "cos": 3,
    "tanh": 2,
    "atan": 1,
    "exp": 1,
    "logsq": 1,
    "sqrtsq": 1,
    "scale": 2,
    "shift": 1,
    "neg": 1,
    "square": 1,
    "cube": 1,
}
_BINARY_WEIGHTS = {"add": 3, "sub": 2, "mul": 4, "divsq": 1}
_SCALES = (0.5, -0.75, 1.5, 0.25, -2.0)
_SHIFTS = (0.5, -1.25, 1.0, 0.3)
_FORWARD_NAME = re.compile(r"\b[vdx]\d+\b")
_ATOM = re.compile(r"^(?:[A-Za-z_]\w*|\d+\.\d*)$")


# --------------------------------------------------------------------------- modules


def make_module(name: str, source_text: str) -> types.ModuleType:
    """Execute ``source_text`` as a new module whose source is readable through linecache."""
    filename = f"<adcompile-bench:{name}:{next(_module_ids)}>"
    linecache.cache[filename] = (
        len(source_text),
        None,
        source_text.splitlines(keepends=True),
        filename,
    )
    module = types.ModuleType(name)
    module.__file__ = filename
    exec(compile(source_text, filename, "exec"), module.__dict__)
    return module


def load_function(name: str, source_text: str, func_name: str) -> Callable[..., object]:
    """Return function ``func_name`` from a fresh module built from ``source_text``."""
    return getattr(make_module(name, source_text), func_name)


# --------------------------------------------------------------------------- workloads


@dataclass(frozen=True)
class Workload:
    """A benchmark function: primal and hand-written gradient source, and their names."""

    name: str
    description: str
    n_inputs: int
    n_ops: int
    primal_source: str
    grad_source: str
    primal_name: str = PRIMAL_NAME
    grad_name: str = HAND_GRAD_NAME

    def primal(self) -> Callable[..., float]:
        """Build and return a fresh primal function object."""
        return load_function(f"{self.name}_primal", self.primal_source, self.primal_name)

    def hand_grad(self) -> Callable[..., tuple[float, ...]]:
        """Build and return a fresh hand-written gradient function object."""
        return load_function(f"{self.name}_hand", self.grad_source, self.grad_name)


SEED_PRIMAL_SOURCE = """\
def seed(x, y, z):
    q = x + y
    return q * z
"""

SEED_GRAD_SOURCE = """\
def seed_grad(x, y, z):
    q = x + y
    return z, z, q
"""

MEDIUM_PRIMAL_SOURCE = """\
import math


def medium(x, y, z, w):
    r2 = x * x + y * y + 1.0
    r = math.sqrt(r2)
    u = math.sin(x * z) / r
    v = math.cos(y - w) * math.exp(-0.5 * z * z)
    s = u * v + math.tanh(w * x)
    s += 0.25 * math.log(z * z + 1.0)
    t = s if u > 0.0 else -s
    t = t * t / r2
    return t + 0.1 * y ** 3
"""

MEDIUM_GRAD_SOURCE = """\
import math


def medium_grad(x, y, z, w):
    r2 = x * x + y * y + 1.0
    r = math.sqrt(r2)
    xz = x * z
    u = math.sin(xz) / r
    ymw = y - w
    cyw = math.cos(ymw)
    e = math.exp(-0.5 * z * z)
    v = cyw * e
    th = math.tanh(w * x)
    zz1 = z * z + 1.0
    s = u * v + th + 0.25 * math.log(zz1)
    t0 = s if u > 0.0 else -s
    q = t0 / r2
    g_t0 = 2.0 * q
    g_s = g_t0 if u > 0.0 else -g_t0
    g_u = g_s * v
    g_v = g_s * u
    g_wx = g_s * (1.0 - th * th)
    g_ymw = -g_v * e * math.sin(ymw)
    g_xz = g_u / r * math.cos(xz)
    g_r2 = -q * q - 0.5 * g_u * u / r2
    gx = g_wx * w + g_xz * z + 2.0 * x * g_r2
    gy = 0.3 * y * y + g_ymw + 2.0 * y * g_r2
    gz = 0.5 * g_s * z / zz1 - g_v * v * z + g_xz * x
    gw = g_wx * x - g_ymw
    return gx, gy, gz, gw
"""


def seed_workload() -> Workload:
    """The two-operation seed: ``q = x + y; return q * z``."""
    return Workload(
        name="seed",
        description="q = x + y; return q * z",
        n_inputs=3,
        n_ops=2,
        primal_source=SEED_PRIMAL_SOURCE,
        grad_source=SEED_GRAD_SOURCE,
        primal_name="seed",
        grad_name="seed_grad",
    )


def medium_workload() -> Workload:
    """A hand-written 30-operation function of 4 inputs with a hand-written gradient."""
    return Workload(
        name="medium30",
        description="hand-written, 30 ops, 4 inputs (sqrt/sin/cos/exp/tanh/log, a ternary)",
        n_inputs=4,
        n_ops=30,
        primal_source=MEDIUM_PRIMAL_SOURCE,
        grad_source=MEDIUM_GRAD_SOURCE,
        primal_name="medium",
        grad_name="medium_grad",
    )


def straight_line_workload(n_ops: int, n_inputs: int = 4, seed: int = 0) -> Workload:
    """A generated straight-line workload of ``n_ops`` statements."""
    primal_source, grad_source = straight_line_source(n_ops, n_inputs, seed)
    return Workload(
        name=f"line{n_ops}",
        description=(
            f"generated, {n_ops} statements ({count_operations(primal_source)} operations), "
            f"{n_inputs} inputs, seed {seed}"
        ),
        n_inputs=n_inputs,
        n_ops=n_ops,
        primal_source=primal_source,
        grad_source=grad_source,
    )


def default_workloads() -> list[Workload]:
    """The runtime benchmark set: seed, 30-op hand-written, 300-op generated."""
    return [seed_workload(), medium_workload(), straight_line_workload(300, 4, 0)]


def evaluation_points(n_inputs: int, count: int, seed: int = 1) -> list[tuple[float, ...]]:
    """Deterministic points in [-1.5, 1.5]^n at which to check gradients."""
    rng = random.Random(seed)
    return [tuple(rng.uniform(-1.5, 1.5) for _ in range(n_inputs)) for _ in range(count)]


def timing_point(n_inputs: int) -> tuple[float, ...]:
    """The fixed input at which runtimes are measured."""
    return (0.7, -0.4, 1.1, 0.3, -0.9, 0.5)[:n_inputs]


# --------------------------------------------------------------------------- generator


@dataclass(frozen=True)
class Op:
    """One SSA statement: value ``out`` = ``kind(*args)``; ``acc`` marks accumulator updates."""

    kind: str
    out: int
    args: tuple[int, ...]
    const: float = 0.0
    acc: bool = False


@dataclass(frozen=True)
class Program:
    """A generated straight-line program: inputs ``0..n_inputs-1``, then one value per op."""

    n_inputs: int
    ops: tuple[Op, ...]
    output: int


_BOUNDS: dict[str, Callable[[Sequence[float], float], float]] = {
    "sin": lambda b, c: 1.0,
    "cos": lambda b, c: 1.0,
    "tanh": lambda b, c: 1.0,
    "atan": lambda b, c: math.pi / 2,
    "exp": lambda b, c: math.exp(b[0]) if b[0] < 50.0 else math.inf,
    "logsq": lambda b, c: math.log(b[0] * b[0] + 1.0),
    "sqrtsq": lambda b, c: math.sqrt(b[0] * b[0] + 1.0),
    "scale": lambda b, c: abs(c) * b[0],
    "shift": lambda b, c: b[0] + abs(c),
    "neg": lambda b, c: b[0],
    "square": lambda b, c: b[0] * b[0],
    "cube": lambda b, c: b[0] * b[0] * b[0],
    "add": lambda b, c: b[0] + b[1],
    "sub": lambda b, c: b[0] + b[1],
    "mul": lambda b, c: b[0] * b[1],
    "divsq": lambda b, c: b[0],
    "select": lambda b, c: max(b[0], b[1]),
}


def _result_bound(kind: str, bounds: Sequence[float], const: float) -> float:
    """Upper bound of |result| given bounds of |args| (for inputs within INPUT_BOUND)."""
    return _BOUNDS[kind](bounds, const)


class _Builder:
    """Grows a program op by op, tracking value bounds and values not used yet."""

    def __init__(self, n_inputs: int, rng: random.Random) -> None:
        self.rng = rng
        self.ops: list[Op] = []
        self.bounds: list[float] = [INPUT_BOUND] * n_inputs
        self.unused: dict[int, None] = dict.fromkeys(range(n_inputs))
        self.pool: list[int] = list(range(n_inputs))
        self.acc: int | None = None

    def _emit(self, kind: str, args: tuple[int, ...], const: float = 0.0, acc: bool = False) -> int:
        """Append an op, consume its arguments and register its result."""
        out = len(self.bounds)
        self.bounds.append(_result_bound(kind, [self.bounds[a] for a in args], const))
        self.ops.append(Op(kind, out, args, const, acc))
        for a in args:
            self.unused.pop(a, None)
        if acc:
            self.acc = out
        else:
            self.unused[out] = None
            self.pool.append(out)
        return out

    def _pick(self, exclude: Sequence[int] = ()) -> int:
        """Choose an operand: mostly unused values, else a recent (or any) pool value."""
        fresh = [v for v in self.unused if v not in exclude]
        if fresh and self.rng.random() < 0.7:
            return self.rng.choice(fresh)
        window = self.pool[-12:] if self.rng.random() < 0.85 else self.pool
        choices = [v for v in window if v not in exclude]
        return self.rng.choice(choices or [v for v in self.pool if v not in exclude])

    def _choose_kind(self, weights: dict[str, int], args: tuple[int, ...]) -> tuple[str, float]:
        """Choose a kind (and constant) among those keeping the result within VALUE_LIMIT."""
        kinds, kind_weights, consts = [], [], []
        for kind, weight in weights.items():
            const = 0.0
            if kind == "scale":
                const = self.rng.choice(_SCALES)
            elif kind == "shift":
                const = self.rng.choice(_SHIFTS)
            bound = _result_bound(kind, [self.bounds[a] for a in args], const)
            if bound <= VALUE_LIMIT:
                kinds.append(kind)
                kind_weights.append(weight)
                consts.append(const)
        index = self.rng.choices(range(len(kinds)), kind_weights)[0]
        return kinds[index], consts[index]

    def init_acc(self) -> None:
        """Start the accumulator ``s`` from an input."""
        self._emit("scale", (self._pick(),), 0.5, acc=True)

    def fold(self) -> None:
        """Fold an unused value into the accumulator (``s += v`` / ``s -= v``)."""
        assert self.acc is not None
        value = self.rng.choice(list(self.unused))
        self._emit(self.rng.choice(("add", "sub")), (self.acc, value), acc=True)

    def squash(self) -> None:
        """Update the accumulator alone (``s *= 0.5`` or ``s = math.tanh(s)``)."""
        assert self.acc is not None
        if self.bounds[self.acc] > 3.0 or self.rng.random() < 0.5:
            self._emit("scale", (self.acc,), 0.5, acc=True)
        else:
            self._emit("tanh", (self.acc,), acc=True)

    def unary(self) -> None:
        """Append a one-operand op."""
        a = self._pick()
        kind, const = self._choose_kind(_UNARY_WEIGHTS, (a,))
        self._emit(kind, (a,), const)

    def binary(self) -> None:
        """Append a two-operand op."""
        a = self._pick()
        b = self._pick((a,))
        kind, const = self._choose_kind(_BINARY_WEIGHTS, (a, b))
        self._emit(kind, (a, b), const)

    def select(self) -> None:
        """Append ``a if c > 0.0 else b``."""
        c = self._pick()
        a = self._pick((c,))
        b = self._pick((c, a))
        self._emit("select", (a, b, c))

    def free_step(self) -> None:
        """Append one op of a randomly chosen category."""
        roll = self.rng.random()
        if roll < 0.12 and self.unused:
            self.fold()
        elif roll < 0.14:
            self.squash()
        elif roll < 0.17 and len(self.pool) >= 3:
            self.select()
        elif roll < 0.57 and len(self.pool) >= 2:
            self.binary()
        else:
            self.unary()


def generate_program(n_ops: int, n_inputs: int = 4, seed: int = 0) -> Program:
    """Generate a live straight-line program of exactly ``n_ops`` statements."""
    if n_inputs < 1 or n_ops < max(n_inputs, 2):
        raise ValueError(f"need n_inputs >= 1 and n_ops >= max(n_inputs, 2), got {n_ops}")
    builder = _Builder(n_inputs, random.Random(seed))
    builder.init_acc()
    for i in range(1, n_ops):
        remaining = n_ops - i
        unused = len(builder.unused)
        if unused >= remaining - 1 and unused:
            builder.fold()
        elif unused >= remaining - 1:
            builder.squash()
        else:
            builder.free_step()
    assert not builder.unused and builder.acc is not None
    return Program(n_inputs, tuple(builder.ops), builder.acc)


def _expr(kind: str, args: Sequence[str], const: float) -> str:
    """The right-hand side of one op, in primal style."""
    a = args[0]
    if kind in ("sin", "cos", "tanh", "atan", "exp"):
        return f"math.{kind}({a})"
    forms = {
        "logsq": lambda: f"math.log({a} * {a} + 1.0)",
        "sqrtsq": lambda: f"math.sqrt({a} * {a} + 1.0)",
        "scale": lambda: f"{const!r} * {a}",
        "shift": lambda: f"{a} + {const!r}" if const >= 0 else f"{a} - {-const!r}",
        "neg": lambda: f"-{a}",
        "square": lambda: f"{a} ** 2",
        "cube": lambda: f"{a} ** 3",
        "add": lambda: f"{a} + {args[1]}",
        "sub": lambda: f"{a} - {args[1]}",
        "mul": lambda: f"{a} * {args[1]}",
        "divsq": lambda: f"{a} / ({args[1]} * {args[1]} + 1.0)",
        "select": lambda: f"{a} if {args[2]} > 0.0 else {args[1]}",
    }
    return forms[kind]()


def _header(func_name: str, n_inputs: int) -> str:
    """``import math`` and the ``def`` line of a generated function."""
    params = ", ".join(f"x{i}" for i in range(n_inputs))
    return f"import math\n\n\ndef {func_name}({params}):\n"


def _last_uses(program: Program) -> dict[int, int]:
    """Index of the last op reading each value."""
    last: dict[int, int] = {}
    for index, op in enumerate(program.ops):
        for a in op.args:
            last[a] = index
    return last


def primal_source(program: Program, func_name: str = PRIMAL_NAME, seed: int = 0) -> str:
    """Emit the primal: reused names, ``s +=``-style accumulator updates, ``return s``."""
    rng = random.Random(seed + 7919)
    last = _last_uses(program)
    names = {i: f"x{i}" for i in range(program.n_inputs)}
    free: list[str] = []
    lines = []
    for index, op in enumerate(program.ops):
        args = [names[a] for a in op.args]
        for a in op.args:
            if last[a] == index and names[a].startswith("v"):
                free.append(names[a])
        if op.acc:
            names[op.out] = "s"
            lines.append(_accumulator_line(op, args))
            continue
        reuse = bool(free) and rng.random() < 0.3
        target = free.pop(rng.randrange(len(free))) if reuse else f"v{op.out}"
        names[op.out] = target
        lines.append(f"{target} = {_expr(op.kind, args, op.const)}")
    body = "".join(f"    {line}\n" for line in lines)
    return _header(func_name, program.n_inputs) + body + "    return s\n"


def _accumulator_line(op: Op, args: Sequence[str]) -> str:
    """An accumulator update in augmented/reassignment form (or its initialisation)."""
    if args[0] != "s":
        return f"s = {_expr(op.kind, args, op.const)}"
    forms = {
        "add": f"s += {args[-1]}",
        "sub": f"s -= {args[-1]}",
        "scale": f"s *= {op.const!r}",
        "tanh": "s = math.tanh(s)",
    }
    return forms[op.kind]


def _prod(*factors: str) -> str:
    """Product text, dropping factors that are the literal 1.0."""
    kept = [f for f in factors if f != "1.0"]
    return " * ".join(kept) if kept else "1.0"


def _contributions(op: Op, g: str, names: Sequence[str], t: str) -> list[tuple[int, str, str]]:
    """Adjoint contributions (target value, sign, expression) of a non-select op."""
    a = names[0]
    b = names[1] if len(names) > 1 else ""
    d = f"d{op.out}"
    first, second = op.args[0], op.args[-1]
    table: dict[str, list[tuple[int, str, str]]] = {
        "sin": [(first, "+", _prod(g, f"math.cos({a})"))],
        "cos": [(first, "-", _prod(g, f"math.sin({a})"))],
        "tanh": [(first, "+", _prod(g, f"(1.0 - {t} * {t})"))],
        "atan": [(first, "+", f"{g} / (1.0 + {a} * {a})")],
        "exp": [(first, "+", _prod(g, t))],
        "logsq": [(first, "+", f"{_prod('2.0', g, a)} / {d}")],
        "sqrtsq": [(first, "+", f"{_prod(g, a)} / {t}")],
        "scale": [(first, "+", _prod(repr(op.const), g))],
        "shift": [(first, "+", g)],
        "neg": [(first, "-", g)],
        "square": [(first, "+", _prod("2.0", g, a))],
        "cube": [(first, "+", _prod("3.0", g, a, a))],
        "add": [(first, "+", g), (second, "+", g)],
        "sub": [(first, "+", g), (second, "-", g)],
        "mul": [(first, "+", _prod(g, b)), (second, "+", _prod(g, a))],
        "divsq": [(first, "+", f"{g} / {d}"), (second, "-", f"{_prod('2.0', g, b, t)} / {d}")],
    }
    return table[op.kind]


def _forward_lines(op: Op, names: Sequence[str]) -> list[tuple[str, str]]:
    """Forward statements (target, text) of one op in SSA hand style."""
    t = f"v{op.out}"
    d = f"d{op.out}"
    if op.kind == "logsq":
        return [(d, f"{d} = {names[0]} * {names[0]} + 1.0"), (t, f"{t} = math.log({d})")]
    if op.kind == "divsq":
        return [(d, f"{d} = {names[1]} * {names[1]} + 1.0"), (t, f"{t} = {names[0]} / {d}")]
    return [(t, f"{t} = {_expr(op.kind, names, op.const)}")]


class _ReverseSweep:
    """Emits adjoint statements: assign the first contribution, accumulate later ones in place.

    A contribution that is a bare name or literal (``g_a = g_t`` for ``t = a + b``) is not
    copied: the adjoint of ``a`` just refers to it until something is added.
    """

    def __init__(self, forward_names: dict[int, str]) -> None:
        self.fwd = forward_names
        self.adjoint: dict[int, str] = {}
        self.lines: list[str] = []

    def add(self, target: int, sign: str, expr: str) -> None:
        """Add ``sign expr`` to the adjoint of ``target`` (a bare name or literal is aliased)."""
        name = f"g{self.fwd[target]}"
        current = self.adjoint.get(target)
        if current is None and sign == "+" and _ATOM.match(expr):
            self.adjoint[target] = expr
            return
        if current is None:
            self.lines.append(f"{name} = {expr}" if sign == "+" else f"{name} = -{expr}")
        elif current != name:
            self.lines.append(f"{name} = {current} {sign} {expr}")
        else:
            self.lines.append(f"{name} {sign}= {expr}")
        self.adjoint[target] = name

    def select(self, op: Op, g: str) -> None:
        """Route the adjoint of ``a if c > 0.0 else b`` to the taken branch."""
        a, b, c = op.args
        for target in (a, b):
            name = f"g{self.fwd[target]}"
            current = self.adjoint.get(target)
            if current != name:
                self.lines.append(f"{name} = {current or '0.0'}")
                self.adjoint[target] = name
        self.lines += [
            f"if {self.fwd[c]} > 0.0:",
            f"    {self.adjoint[a]} += {g}",
            "else:",
            f"    {self.adjoint[b]} += {g}",
        ]

    def op(self, op: Op) -> None:
        """Propagate the adjoint of ``op.out`` to its arguments (nothing if it is zero)."""
        g = self.adjoint.get(op.out)
        if g is None:
            return
        if op.kind == "select":
            self.select(op, g)
            return
        names = [self.fwd[a] for a in op.args]
        for target, sign, expr in _contributions(op, g, names, self.fwd[op.out]):
            self.add(target, sign, expr)


def _live_forward(forward: list[tuple[str, str]], used_text: str) -> list[str]:
    """Keep only the forward statements whose values the reverse sweep needs."""
    needed = set(_FORWARD_NAME.findall(used_text))
    kept = []
    for target, text in reversed(forward):
        if target in needed:
            kept.append(text)
            needed.update(_FORWARD_NAME.findall(text.split("=", 1)[1]))
    return kept[::-1]


def hand_grad_source(program: Program, func_name: str = HAND_GRAD_NAME) -> str:
    """Emit the hand-style reverse sweep of ``program``, returning one partial per input."""
    fwd = {i: f"x{i}" for i in range(program.n_inputs)}
    forward: list[tuple[str, str]] = []
    for op in program.ops:
        forward += _forward_lines(op, [fwd[a] for a in op.args])
        fwd[op.out] = f"v{op.out}"
    sweep = _ReverseSweep(fwd)
    sweep.adjoint[program.output] = "1.0"
    for op in reversed(program.ops):
        sweep.op(op)
    partials = [sweep.adjoint.get(i, "0.0") for i in range(program.n_inputs)]
    ret = f"return {', '.join(partials)}"
    body = _live_forward(forward, "\n".join([*sweep.lines, ret])) + sweep.lines + [ret]
    text = "".join(f"    {line}\n" for line in body)
    return _header(func_name, program.n_inputs) + text


def straight_line_source(n_ops: int, n_inputs: int = 4, seed: int = 0) -> tuple[str, str]:
    """Return (primal source, hand-written gradient source) of a generated workload."""
    program = generate_program(n_ops, n_inputs, seed)
    return primal_source(program, seed=seed), hand_grad_source(program)


_OPERATIONS = (ast.BinOp, ast.BoolOp, ast.Call, ast.Compare, ast.IfExp, ast.AugAssign)


def count_operations(source: str) -> int:
    """Operations in ``source`` as a person counts them: each binary, boolean, comparison,
    conditional, call, augmented assignment and unary operation (``-0.75`` is a number)."""
    return sum(
        isinstance(node, _OPERATIONS)
        or (isinstance(node, ast.UnaryOp) and not isinstance(node.operand, ast.Constant))
        for node in ast.walk(ast.parse(source))
    )


def statements_for_operations(n_operations: int, n_inputs: int = 4, seed: int = 0) -> int:
    """The statement count at which the generated function first has ``n_operations``.

    Counting up from two thirds of ``n_operations``: the generated statements average about
    1.35 operations (``v = a / (b * b + 1.0)`` has three), so the 300-statement workload has
    about 400 operations and a 300-operation one about 230 statements."""
    n = max(n_inputs, 2, 2 * n_operations // 3)
    while count_operations(straight_line_source(n, n_inputs, seed)[0]) < n_operations:
        n += 1
    return n


# --------------------------------------------------------------------------- checking


def float_fd_gradient(
    fn: Callable[..., float], point: Sequence[float], step: float = 1e-6
) -> tuple[float, ...]:
    """Central finite differences in plain floats."""
    partials = []
    for i in range(len(point)):
        up = list(point)
        down = list(point)
        up[i] += step
        down[i] -= step
        partials.append((fn(*up) - fn(*down)) / (2.0 * step))
    return tuple(partials)


def _mp_math() -> types.SimpleNamespace:
    """A stand-in for ``math`` whose functions compute in mpmath precision."""
    import mpmath

    names = ("sin", "cos", "tan", "exp", "log", "sqrt", "tanh", "atan", "sinh", "cosh")
    return types.SimpleNamespace(pi=mpmath.pi, e=mpmath.e, **{n: getattr(mpmath, n) for n in names})


def mp_fd_gradient(
    source: str, func_name: str, point: Sequence[float], dps: int = 60
) -> tuple[float, ...]:
    """Central differences of the primal evaluated in ``dps``-digit mpmath (exact to double)."""
    import mpmath

    namespace: dict[str, object] = {}
    exec(compile(source, f"<adcompile-bench-mp:{func_name}>", "exec"), namespace)
    namespace["math"] = _mp_math()
    fn = namespace[func_name]
    assert callable(fn)
    with mpmath.workdps(dps):
        step = mpmath.mpf(10) ** (-(dps // 3))
        base = [mpmath.mpf(p) for p in point]
        partials = []
        for i in range(len(base)):
            up = list(base)
            down = list(base)
            up[i] += step
            down[i] -= step
            partials.append(float((fn(*up) - fn(*down)) / (2 * step)))
    return tuple(partials)


def as_tuple(value: object) -> tuple[float, ...]:
    """Normalise a gradient result (bare float for one parameter) to a tuple."""
    return tuple(value) if isinstance(value, tuple | list) else (value,)  # type: ignore[arg-type]


def gradient_mismatches(
    actual: Sequence[float], expected: Sequence[float], rtol: float
) -> list[str]:
    """Describe components where |a - e| > rtol * max(|e|, 1e-3 * max|e|, 1e-12)."""
    scale = max((abs(e) for e in expected), default=0.0)
    problems = []
    if len(actual) != len(expected):
        return [f"length {len(actual)} != {len(expected)}"]
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        tol = rtol * max(abs(e), 1e-3 * scale, 1e-12)
        if not abs(a - e) <= tol:
            problems.append(f"d/dx{i}: got {a!r}, expected {e!r} (tol {tol:.2e})")
    return problems
