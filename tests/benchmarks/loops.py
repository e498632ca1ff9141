"""Runtime and memory benchmark of adcompile on loops, against careful hand-written gradients.

Run from the repository root::

    python -m tests.benchmarks.loops [--quick] [--output PATH] [--samples N] [--show-source]

Workloads (each built from source text, see ``step_workload`` and ``horner_workload``):

1. ``step100``: ``x = x - 0.1 * math.sin(x) * a`` for 100 steps, gradient w.r.t. (x, a);
2. ``horner50``: Horner evaluation of a degree-50 polynomial whose coefficients are computed
   from the loop index, gradient w.r.t. x;
3. ``step1e6``: the loop of 1 with 10^6 steps: per-call medians of 5 calls, and the peak
   memory (tracemalloc) of one call of each function (10^5 steps with ``--quick``).

For every workload the primal, adcompile's gradient and a hand-written gradient (forward loop
storing what the reverse loop needs in a list, then a reverse loop) are timed in one process
with the machinery of ``straight_line``: round-robin within every repetition, rotating order,
gc disabled, per-call medians. Before any timing both gradients are checked against central
differences (step 1e-6, rtol 1e-5) and against each other (rtol 1e-10); a mismatch aborts.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import gc
import sys
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path

from .straight_line import (
    FULL,
    QUICK,
    BenchmarkError,
    Candidate,
    Settings,
    format_ns,
    header_lines,
    load_grad,
    measure,
    verdict,
)
from .workloads import Workload, as_tuple, evaluation_points, gradient_mismatches, timing_point

FD_STEP = 1e-6
FD_RTOL = 1e-5
AGREE_RTOL = 1e-10
GRAD_PRIMAL_TARGET = 4.0
ADCOMPILE_HAND_TARGET = 1.1
SHORT_STEPS = 100
LONG_STEPS = 1_000_000
QUICK_LONG_STEPS = 100_000
HORNER_DEGREE = 50
LONG_FULL = Settings(samples=5, warmup=1, sample_ns=1, compile_runs={})
LONG_QUICK = Settings(samples=3, warmup=0, sample_ns=1, compile_runs={})
Grad = Callable[..., Callable[..., object]]


@dataclasses.dataclass(frozen=True)
class LoopWorkload:
    """A loop workload: sources and names (``workload``), what to differentiate, where."""

    workload: Workload
    wrt: tuple[str, ...]
    iterations: int
    timing_args: tuple[float, ...]
    check_points: tuple[tuple[float, ...], ...]
    fd_scales: tuple[float, ...]

    @property
    def name(self) -> str:
        """Short name used in the report."""
        return self.workload.name


@dataclasses.dataclass
class Built:
    """Live functions of one verified workload."""

    spec: LoopWorkload
    primal: Callable[..., float]
    generated: Callable[..., object]
    hand: Callable[..., object]


@dataclasses.dataclass(frozen=True)
class Row:
    """Per-call medians (ns) of one workload."""

    spec: LoopWorkload
    primal_ns: float
    adcompile_ns: float
    hand_ns: float
    samples: int


@dataclasses.dataclass(frozen=True)
class MemoryRow:
    """Peak traced bytes of one call of each function, and values recorded per iteration."""

    spec: LoopWorkload
    primal_bytes: int
    adcompile_bytes: int
    hand_bytes: int
    adcompile_recorded: int
    hand_recorded: int
    adcompile_pushes: tuple[str, ...]


# --------------------------------------------------------------------------- workloads


STEP_PRIMAL = """\
import math


def step(x, a):
    for i in range({n}):
        x = x - 0.1 * math.sin(x) * a
    return x
"""

STEP_HAND = """\
import math


def step_grad(x, a):
    xs = []
    for i in range({n}):
        xs.append(x)
        x = x - 0.1 * math.sin(x) * a
    gx = 1.0
    ga = 0.0
    for xk in reversed(xs):
        ga -= 0.1 * gx * math.sin(xk)
        gx -= 0.1 * gx * a * math.cos(xk)
    return gx, ga
"""

HORNER_PRIMAL = """\
def horner(x):
    s = 0.0
    for i in range({n}):
        c = 1.0 / (i + 1)
        s = s * x + c
    return s
"""

HORNER_HAND = """\
def horner_grad(x):
    ss = []
    s = 0.0
    for i in range({n}):
        c = 1.0 / (i + 1)
        ss.append(s)
        s = s * x + c
    gs = 1.0
    gx = 0.0
    for sk in reversed(ss):
        gx += gs * sk
        gs *= x
    return gx
"""


def step_workload(n_steps: int = SHORT_STEPS, name: str | None = None) -> LoopWorkload:
    """``x = x - 0.1 * math.sin(x) * a`` for ``n_steps`` steps, gradient w.r.t. (x, a).

    For more than 100 steps ``a`` is scaled by ``100 / n_steps`` so the loop integrates the
    same flow as the 100-step one (otherwise x sits on a fixed point and both partials are
    exactly 0); the difference step for ``a`` is scaled the same way.
    """
    a_scale = min(1.0, SHORT_STEPS / n_steps)
    x0, a0 = timing_point(2)
    points = [(x, a * a_scale) for x, a in evaluation_points(2, 3 if n_steps <= 10_000 else 1)]
    workload = Workload(
        name=name or f"step{n_steps}",
        description=f"x = x - 0.1 * math.sin(x) * a, {n_steps:,} steps, d/d(x, a)",
        n_inputs=2,
        n_ops=n_steps,
        primal_source=STEP_PRIMAL.format(n=n_steps),
        grad_source=STEP_HAND.format(n=n_steps),
        primal_name="step",
        grad_name="step_grad",
    )
    timing = (x0, a0 * a_scale)
    return LoopWorkload(workload, ("x", "a"), n_steps, timing, (timing, *points), (1.0, a_scale))


def horner_workload(degree: int = HORNER_DEGREE) -> LoopWorkload:
    """Horner loop for sum(x**k / (degree - k + 1)), coefficients from the index; d/dx."""
    workload = Workload(
        name=f"horner{degree}",
        description=f"Horner, degree {degree}: c = 1.0 / (i + 1); s = s * x + c; d/dx",
        n_inputs=1,
        n_ops=degree + 1,
        primal_source=HORNER_PRIMAL.format(n=degree + 1),
        grad_source=HORNER_HAND.format(n=degree + 1),
        primal_name="horner",
        grad_name="horner_grad",
    )
    timing = timing_point(1)
    points = (timing, *evaluation_points(1, 3))
    return LoopWorkload(workload, ("x",), degree + 1, timing, points, (1.0,))


def short_workloads() -> list[LoopWorkload]:
    """Workloads 1 and 2: timed like ``straight_line`` (batches of calls, many samples)."""
    return [step_workload(SHORT_STEPS), horner_workload(HORNER_DEGREE)]


def long_workload(n_steps: int = LONG_STEPS) -> LoopWorkload:
    """Workload 3: the step loop with 10^6 steps (timed per call, memory measured)."""
    return step_workload(n_steps, name=f"step1e{len(str(n_steps)) - 1}")


# --------------------------------------------------------------------------- checking


def fd_gradient(
    fn: Callable[..., float], point: Sequence[float], scales: Sequence[float]
) -> tuple[float, ...]:
    """Central differences with step ``FD_STEP * scales[i]`` in parameter i."""
    partials = []
    for i, scale in enumerate(scales):
        step = FD_STEP * scale
        up = list(point)
        down = list(point)
        up[i] += step
        down[i] -= step
        partials.append((fn(*up) - fn(*down)) / (2.0 * step))
    return tuple(partials)


def build(spec: LoopWorkload, grad: Grad) -> Built:
    """Build primal, adcompile gradient and hand gradient; raise BenchmarkError on mismatch."""
    primal = spec.workload.primal()
    hand = spec.workload.hand_grad()
    generated = grad(primal, wrt=spec.wrt)
    for point in spec.check_points:
        reference = fd_gradient(primal, point, spec.fd_scales)
        hand_value = as_tuple(hand(*point))
        generated_value = as_tuple(generated(*point))
        comparisons = [
            ("hand-written vs finite differences", hand_value, reference, FD_RTOL),
            ("adcompile vs finite differences", generated_value, reference, FD_RTOL),
            ("adcompile vs hand-written", generated_value, hand_value, AGREE_RTOL),
        ]
        for what, actual, expected, rtol in comparisons:
            problems = gradient_mismatches(actual, expected, rtol)
            if problems:
                detail = "; ".join(problems[:4])
                raise BenchmarkError(f"{spec.name} at {point}: {what}: {detail}")
    return Built(spec, primal, generated, hand)


# --------------------------------------------------------------------------- measuring


def time_workload(built: Built, settings: Settings) -> Row:
    """Per-call medians of primal / adcompile / hand, interleaved round-robin, gc off."""
    args = built.spec.timing_args
    candidates = [
        Candidate("primal", built.primal, args),
        Candidate("adcompile", built.generated, args),
        Candidate("hand", built.hand, args),
    ]
    measure(candidates, settings)
    return Row(built.spec, *(c.median() for c in candidates), settings.samples)


def peak_bytes(fn: Callable[..., object], args: Sequence[float]) -> int:
    """Peak traced bytes allocated during one call of ``fn`` (gc off), minus the baseline."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        fn(*args)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        if started:
            tracemalloc.stop()
        if was_enabled:
            gc.enable()
    return peak - baseline


def recorded_values(source: str) -> tuple[int, tuple[str, ...]]:
    """Values pushed per iteration by the ``.append(...)`` calls in ``source``, and the pushes."""
    count = 0
    pushes = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "append"
            and len(node.args) == 1
        ):
            arg = node.args[0]
            count += len(arg.elts) if isinstance(arg, ast.Tuple) else 1
            pushes.append(ast.unparse(node))
    return count, tuple(pushes)


def measure_memory(built: Built) -> MemoryRow:
    """Peak memory of one call of each function, and what the gradients record."""
    args = built.spec.timing_args
    generated_source = getattr(built.generated, "source", "")
    ad_count, ad_pushes = recorded_values(generated_source)
    hand_count, _ = recorded_values(built.spec.workload.grad_source)
    return MemoryRow(
        built.spec,
        primal_bytes=peak_bytes(built.primal, args),
        adcompile_bytes=peak_bytes(built.generated, args),
        hand_bytes=peak_bytes(built.hand, args),
        adcompile_recorded=ad_count,
        hand_recorded=hand_count,
        adcompile_pushes=ad_pushes,
    )


# --------------------------------------------------------------------------- report


def report_header(
    settings: Settings, long_spec: LoopWorkload, long_settings: Settings
) -> list[str]:
    """Title, date, Python, platform and sampling lines (``straight_line``'s, retitled)."""
    lines = header_lines(settings)
    lines[0] = "# adcompile benchmark: loops"
    lines.insert(
        -1,
        f"- {long_spec.name}: median of {long_settings.samples} single calls after "
        f"{long_settings.warmup} warm-up round(s), round-robin, gc disabled",
    )
    return lines


def runtime_table(rows: Sequence[Row]) -> list[str]:
    """Per-call medians and ratios."""
    lines = [
        "## Runtime (median per call)",
        "",
        "| workload | iterations | primal | adcompile grad | hand-written grad | grad/primal "
        f"| ≤ {GRAD_PRIMAL_TARGET:g} | hand/primal | adcompile/hand | ≤ {ADCOMPILE_HAND_TARGET} |",
        "|---|---:|---:|---:|---:|---:|:---:|---:|---:|:---:|",
    ]
    for row in rows:
        grad_ratio = row.adcompile_ns / row.primal_ns
        hand_ratio = row.adcompile_ns / row.hand_ns
        lines.append(
            f"| {row.spec.name} | {row.spec.iterations:,} | {format_time(row.primal_ns)} "
            f"| {format_time(row.adcompile_ns)} | {format_time(row.hand_ns)} "
            f"| {grad_ratio:.2f} | {verdict(grad_ratio <= GRAD_PRIMAL_TARGET)} "
            f"| {row.hand_ns / row.primal_ns:.2f} | {hand_ratio:.2f} "
            f"| {verdict(hand_ratio <= ADCOMPILE_HAND_TARGET)} |"
        )
    lines.append("")
    lines += [f"- {row.spec.name}: {row.spec.workload.description}" for row in rows]
    lines.append("")
    return lines


def format_time(ns: float) -> str:
    """``format_ns`` below 1 ms, else milliseconds."""
    return format_ns(ns) if ns < 1_000_000 else f"{ns / 1e6:,.1f} ms"


def format_bytes(size: int) -> str:
    """Bytes below 1 MB, else MB."""
    return f"{size:,} B" if size < 1_000_000 else f"{size / 1e6:,.2f} MB"


def memory_table(row: MemoryRow) -> list[str]:
    """Peak memory of one call, per iteration and per recorded value."""
    n = row.spec.iterations

    def cells(peak: int, recorded: int | None) -> str:
        per_value = "" if not recorded else f"{peak / (n * recorded):.1f}"
        count = "0" if recorded is None else str(recorded)
        return f"{format_bytes(peak)} | {peak / n:.1f} | {count} | {per_value}"

    pushes = "; ".join(f"`{p}`" for p in row.adcompile_pushes) or "none"
    return [
        f"## Peak memory of one call ({row.spec.name}, {n:,} iterations, tracemalloc)",
        "",
        "| function | peak | bytes/iteration | values recorded/iteration "
        "| bytes/(iteration × value) |",
        "|---|---:|---:|---:|---:|",
        f"| primal | {cells(row.primal_bytes, None)} |",
        f"| adcompile grad | {cells(row.adcompile_bytes, row.adcompile_recorded)} |",
        f"| hand-written grad | {cells(row.hand_bytes, row.hand_recorded)} |",
        "",
        f"adcompile/hand peak = {row.adcompile_bytes / max(row.hand_bytes, 1):.2f}; "
        f"adcompile records per iteration: {pushes}.",
        "",
    ]


# --------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few samples (smoke run)")
    parser.add_argument("--output", type=Path, help="also write the markdown report here")
    parser.add_argument("--samples", type=int, help="override the number of runtime samples")
    parser.add_argument(
        "--show-source", action="store_true", help="append the generated gradients to the report"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Verify, time and measure all loop workloads; print (and optionally save) the report."""
    args = parse_args(argv)
    settings = QUICK if args.quick else FULL
    long_settings = LONG_QUICK if args.quick else LONG_FULL
    long_spec = long_workload(QUICK_LONG_STEPS if args.quick else LONG_STEPS)
    if args.samples:
        settings = dataclasses.replace(settings, samples=args.samples)
    try:
        grad = load_grad()
    except ImportError as exc:
        print(f"cannot import adcompile.grad: {exc}", file=sys.stderr)
        return 2
    try:
        short = [build(spec, grad) for spec in short_workloads()]
        long = build(long_spec, grad)
    except BenchmarkError as exc:
        print(f"ABORT: gradient check failed: {exc}", file=sys.stderr)
        return 1
    rows = [time_workload(built, settings) for built in short]
    rows.append(time_workload(long, long_settings))
    memory = measure_memory(long)
    lines = (
        report_header(settings, long_spec, long_settings)
        + runtime_table(rows)
        + memory_table(memory)
    )
    if args.show_source:
        for built in [*short, long]:
            source = getattr(built.generated, "source", "")
            lines += [
                f"## Generated gradient: {built.spec.name}",
                "",
                "```python",
                source.rstrip(),
                "```",
                "",
            ]
    report = "\n".join(lines)
    print(report)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
