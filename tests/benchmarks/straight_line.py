"""Runtime and compile-time benchmark of adcompile on straight-line scalar code.

Run from the repository root::

    python -m tests.benchmarks.straight_line [--quick] [--output PATH] [--samples N]

Runtime: for each workload the primal, adcompile's gradient and a hand-written gradient are
timed in one process, round-robin within every repetition, gc disabled; a sample is the
time of a batch of N calls (N chosen so a batch takes a few ms) divided by N, and the table
reports medians. Before any timing, both gradients are checked against exact (mpmath)
central differences and against each other at several points; any disagreement beyond
rtol 1e-8 aborts the run.

Compile time: wall time of ``grad(fn)`` on generated functions of 300 to 8,000 statements,
each run on a freshly built module so nothing is reused between runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import gc
import itertools
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .workloads import (
    PRIMAL_NAME,
    Workload,
    as_tuple,
    count_operations,
    default_workloads,
    evaluation_points,
    gradient_mismatches,
    load_function,
    mp_fd_gradient,
    statements_for_operations,
    straight_line_source,
    timing_point,
)

RTOL = 1e-8
RATIO_TARGET = 1.3
COMPILE_TARGETS_MS = {300: 50.0, 2000: 500.0}  # by statements (issue 2)
OPERATION_TARGETS_MS = {300: 50.0}  # by operations (issue 6)
SCALING_TARGET = 4.5
MIN_SAMPLES = 5
Grad = Callable[[Callable[..., float]], Callable[..., object]]


class BenchmarkError(RuntimeError):
    """A gradient disagreed with the reference, so its timings would mean nothing."""


@dataclasses.dataclass(frozen=True)
class Settings:
    """How much to measure."""

    samples: int
    warmup: int
    sample_ns: int
    compile_runs: dict[int, int]
    clock: Callable[[], int] = time.perf_counter_ns
    # Compile runs of a function sized by operations, not statements (issue 6's wording).
    operation_runs: dict[int, int] = dataclasses.field(default_factory=dict)


FULL = Settings(
    samples=41,
    warmup=5,
    sample_ns=3_000_000,
    compile_runs={300: 15, 500: 9, 2000: 5, 8000: 3},
    operation_runs={300: 15},
)
QUICK = Settings(
    samples=7,
    warmup=1,
    sample_ns=1_000_000,
    compile_runs={300: 1, 500: 1, 2000: 1, 8000: 1},
    operation_runs={300: 1},
)


@dataclasses.dataclass
class Candidate:
    """One function timed at fixed arguments; ``per_call_ns`` collects the samples."""

    label: str
    fn: Callable[..., object]
    args: tuple[float, ...]
    batch: int = 1
    per_call_ns: list[float] = dataclasses.field(default_factory=list)
    estimate_ns: float = 0.0
    stride: int = 1

    def median(self) -> float:
        """Median per-call time in ns."""
        return statistics.median(self.per_call_ns)


@dataclasses.dataclass(frozen=True)
class RuntimeRow:
    """Medians (ns) for one workload."""

    workload: Workload
    primal_ns: float
    adcompile_ns: float
    hand_ns: float


@dataclasses.dataclass(frozen=True)
class CompileRow:
    """``grad(fn)`` wall times (ms) for one size, in run order."""

    n_ops: int  # statements
    times_ms: tuple[float, ...]
    generated_lines: int | None
    operations: int
    sized_for_operations: int | None = None  # the operation count it was sized to reach

    def median(self) -> float:
        """Median compile time in ms."""
        return statistics.median(self.times_ms)


# --------------------------------------------------------------------------- timing


def make_batch_runner(
    n_args: int, clock: Callable[[], int] = time.perf_counter_ns
) -> Callable[[Callable[..., object], tuple, int], int]:
    """A timeit-style loop calling ``fn`` n times on unpacked locals; returns ``clock`` ns."""
    params = "".join(f"a{i}, " for i in range(n_args))
    source = (
        "def run(fn, args, n):\n"
        f"    {params}= args\n"
        "    start = perf_counter_ns()\n"
        "    for _ in repeat(None, n):\n"
        f"        fn({params})\n"
        "    return perf_counter_ns() - start\n"
    )
    namespace: dict[str, object] = {
        "perf_counter_ns": clock,
        "repeat": itertools.repeat,
    }
    exec(compile(source, f"<batch-runner-{n_args}>", "exec"), namespace)
    return namespace["run"]  # type: ignore[return-value]


def calibrate(
    candidate: Candidate, sample_ns: int, clock: Callable[[], int] = time.perf_counter_ns
) -> None:
    """Choose the batch size so one batch takes about ``sample_ns``."""
    run = make_batch_runner(len(candidate.args), clock)
    n = 1
    while True:
        elapsed = run(candidate.fn, candidate.args, n)
        if elapsed >= sample_ns // 10 or n >= 1 << 30:
            break
        n *= 2
    candidate.estimate_ns = elapsed / n
    candidate.batch = max(1, round(n * sample_ns / max(elapsed, 1)))


def sampling_stride(candidate: Candidate, settings: Settings, budget_ns: float) -> int:
    """Sample only every k-th round when all samples would take more than ``budget_ns``."""
    total_ns = settings.samples * candidate.batch * candidate.estimate_ns
    return max(1, min(math.ceil(total_ns / budget_ns), settings.samples // MIN_SAMPLES))


def takes_part(candidate: Candidate, rep: int, warmup: int) -> bool:
    """Whether ``candidate`` runs in round ``rep`` (a strided one: last warm-up round only)."""
    if rep < warmup:
        return candidate.stride == 1 or rep == warmup - 1
    return (rep - warmup) % candidate.stride == 0


def measure(
    candidates: Sequence[Candidate], settings: Settings, budget_ns: float | None = None
) -> None:
    """Sample all candidates round-robin (rotating the order each round), gc disabled.

    With ``budget_ns``, a candidate so slow that its samples would take longer is sampled in
    every k-th round only (at least ``MIN_SAMPLES`` samples), still interleaved with the rest.
    """
    runners = [make_batch_runner(len(c.args), settings.clock) for c in candidates]
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for candidate in candidates:
            calibrate(candidate, settings.sample_ns, settings.clock)
            if budget_ns is not None:
                candidate.stride = sampling_stride(candidate, settings, budget_ns)
        for rep in range(settings.warmup + settings.samples):
            shift = rep % len(candidates)
            for index in [*range(shift, len(candidates)), *range(shift)]:
                c = candidates[index]
                if not takes_part(c, rep, settings.warmup):
                    continue
                elapsed = runners[index](c.fn, c.args, c.batch)
                if rep >= settings.warmup:
                    c.per_call_ns.append(elapsed / c.batch)
    finally:
        if was_enabled:
            gc.enable()


# --------------------------------------------------------------------------- checking


def check_gradients(workload: Workload, grad: Grad) -> tuple[Callable, Callable, Callable]:
    """Build primal, adcompile and hand gradients; raise BenchmarkError on any mismatch."""
    primal = workload.primal()
    hand = workload.hand_grad()
    generated = grad(primal)
    points = [*evaluation_points(workload.n_inputs, 3), timing_point(workload.n_inputs)]
    for point in points:
        exact = mp_fd_gradient(workload.primal_source, workload.primal_name, point)
        hand_value = as_tuple(hand(*point))
        generated_value = as_tuple(generated(*point))
        comparisons = [
            ("hand-written vs exact differences", hand_value, exact),
            ("adcompile vs exact differences", generated_value, exact),
            ("adcompile vs hand-written", generated_value, hand_value),
        ]
        for what, actual, expected in comparisons:
            problems = gradient_mismatches(actual, expected, RTOL)
            if problems:
                detail = "; ".join(problems[:4])
                raise BenchmarkError(f"{workload.name} at {point}: {what}: {detail}")
    return primal, generated, hand


def run_runtime(workload: Workload, grad: Grad, settings: Settings) -> RuntimeRow:
    """Verify then time primal / adcompile / hand-written for one workload."""
    primal, generated, hand = check_gradients(workload, grad)
    args = timing_point(workload.n_inputs)
    candidates = [
        Candidate("primal", primal, args),
        Candidate("adcompile", generated, args),
        Candidate("hand", hand, args),
    ]
    measure(candidates, settings)
    return RuntimeRow(workload, *(c.median() for c in candidates))


@dataclasses.dataclass
class CompileJob:
    """The generated function of one size, and its compile times so far."""

    n_ops: int  # statements
    runs: int
    source: str
    sized_for_operations: int | None = None
    times_ms: list[float] = dataclasses.field(default_factory=list)
    generated_lines: int | None = None

    def compile_once(self, grad: Grad) -> None:
        """Time ``grad(fn)`` once, on a fresh module of this job's function."""
        run = len(self.times_ms)
        # A distinct comment per run keeps any text-keyed cache from short-cutting the work.
        text = self.source.replace("):\n", f"):\n    # compile run {run}\n", 1)
        fn = load_function(f"compile{self.n_ops}_{run}", text, PRIMAL_NAME)
        gc.collect()
        start = time.perf_counter_ns()
        generated = grad(fn)
        self.times_ms.append((time.perf_counter_ns() - start) / 1e6)
        generated_source = getattr(generated, "source", None)
        self.generated_lines = len(generated_source.splitlines()) if generated_source else None

    def row(self) -> CompileRow:
        """The job's times as a report row."""
        return CompileRow(
            self.n_ops,
            tuple(self.times_ms),
            self.generated_lines,
            count_operations(self.source),
            self.sized_for_operations,
        )


def compile_job(n_ops: int, runs: int, sized_for_operations: int | None = None) -> CompileJob:
    """A job for the generated ``n_ops``-statement function (seed 0, 4 inputs)."""
    source, _ = straight_line_source(n_ops, 4, 0)
    return CompileJob(n_ops, runs, source, sized_for_operations)


def run_compile(
    n_ops: int, runs: int, grad: Grad, sized_for_operations: int | None = None
) -> CompileRow:
    """Time ``grad(fn)`` on fresh modules of a generated ``n_ops``-statement function."""
    job = compile_job(n_ops, runs, sized_for_operations)
    for _ in range(runs):
        job.compile_once(grad)
    return job.row()


def run_compiles(settings: Settings, grad: Grad) -> list[CompileRow]:
    """The compile-time rows: functions sized by operations first, then by statements.

    The sizes take turns, one compile each per round, so that a change in the machine's
    load during the run falls on every size alike and the growth ratio compares like with
    like."""
    jobs = [
        compile_job(statements_for_operations(n), runs, sized_for_operations=n)
        for n, runs in settings.operation_runs.items()
    ]
    jobs += [compile_job(n, runs) for n, runs in settings.compile_runs.items()]
    for round_ in range(max((job.runs for job in jobs), default=0)):
        for job in jobs:
            if round_ < job.runs:
                job.compile_once(grad)
    return [job.row() for job in jobs]


# --------------------------------------------------------------------------- report


def format_ns(ns: float) -> str:
    """A per-call time in ns below 10 µs, else in µs."""
    return f"{ns:,.0f} ns" if ns < 10_000 else f"{ns / 1000:,.1f} µs"


def verdict(ok: bool) -> str:
    """Table cell for a target check."""
    return "yes" if ok else "**NO**"


def header_lines(settings: Settings) -> list[str]:
    """Title and environment lines."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    impl = f"{platform.python_implementation()} {platform.python_version()}"
    return [
        "# adcompile benchmark: straight-line scalar code",
        "",
        f"- date: {now}",
        f"- python: {impl} ({sys.executable})",
        f"- platform: {platform.platform()}, {platform.machine()}, {os.cpu_count()} CPUs",
        f"- runtime samples: {settings.samples} per function after {settings.warmup} warm-up "
        f"rounds, ~{settings.sample_ns / 1e6:g} ms per sample, round-robin, gc disabled",
        "",
    ]


def runtime_lines(rows: Sequence[RuntimeRow]) -> list[str]:
    """The per-call runtime table."""
    lines = [
        "## Runtime (median per call)",
        "",
        "| workload | statements | primal | adcompile grad | hand-written grad "
        f"| grad/primal | hand/primal | adcompile/hand | ≤ {RATIO_TARGET} |",
        "|---|---:|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for row in rows:
        ratio = row.adcompile_ns / row.hand_ns
        lines.append(
            f"| {row.workload.name} | {row.workload.n_ops} | {format_ns(row.primal_ns)} "
            f"| {format_ns(row.adcompile_ns)} | {format_ns(row.hand_ns)} "
            f"| {row.adcompile_ns / row.primal_ns:.2f} | {row.hand_ns / row.primal_ns:.2f} "
            f"| {ratio:.2f} | {verdict(ratio <= RATIO_TARGET)} |"
        )
    lines.append("")
    lines += [f"- {row.workload.name}: {row.workload.description}" for row in rows]
    lines.append("")
    return lines


def compile_lines(rows: Sequence[CompileRow]) -> list[str]:
    """The compile-time table and the scaling check."""
    lines = [
        "## Compile time (`grad(fn)` wall time)",
        "",
        "| statements | operations | runs | first (ms) | median (ms) | min (ms) "
        "| generated lines | target |",
        "|---:|---:|---:|---:|---:|---:|---:|:---|",
    ]
    by_size = {row.n_ops: row for row in rows if row.sized_for_operations is None}
    for row in rows:
        generated = "" if row.generated_lines is None else str(row.generated_lines)
        lines.append(
            f"| {row.n_ops:,} | {row.operations:,} | {len(row.times_ms)} "
            f"| {row.times_ms[0]:.1f} | {row.median():.1f} | {min(row.times_ms):.1f} "
            f"| {generated} | {compile_target(row)} |"
        )
    lines += [
        "",
        "Operations count each binary, unary, comparison, conditional, call and augmented "
        "assignment of the primal (`workloads.count_operations`). Issue 2 sets its targets by "
        "statements, issue 6 by operations.",
        "",
    ]
    if 2000 in by_size and 8000 in by_size:
        small, large = by_size[2000], by_size[8000]
        scaling = large.median() / small.median()
        lines.append(
            f"time(8000) / time(2000) = {scaling:.2f} (linear is 4; target ≤ {SCALING_TARGET}: "
            f"{verdict(scaling <= SCALING_TARGET)})"
        )
        if small.generated_lines and large.generated_lines:
            code = large.generated_lines / small.generated_lines
            lines.append(
                f"The generated code grows {code:.2f}-fold from 2,000 to 8,000 statements "
                f"(the longer program has more accumulations per statement): time per "
                f"generated line grows {scaling / code:.2f}-fold."
            )
        lines.append("")
    return lines


def compile_target(row: CompileRow) -> str:
    """The target a compile row is held to, and whether it is met (empty if none)."""
    if row.sized_for_operations is not None:
        target, unit = OPERATION_TARGETS_MS.get(row.sized_for_operations), "operations"
        size = row.sized_for_operations
    else:
        target, unit, size = COMPILE_TARGETS_MS.get(row.n_ops), "statements", row.n_ops
    if target is None:
        return ""
    return f"< {target:g} ms for {size:,} {unit}: {verdict(row.median() < target)}"


# --------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few samples (smoke run)")
    parser.add_argument("--output", type=Path, help="also write the markdown report here")
    parser.add_argument("--samples", type=int, help="override the number of runtime samples")
    return parser.parse_args(argv)


def load_grad() -> Grad:
    """Import ``adcompile.grad``."""
    from adcompile import grad

    return grad


def main(argv: Sequence[str] | None = None) -> int:
    """Run both benchmarks and print (and optionally save) the markdown report."""
    args = parse_args(argv)
    settings = QUICK if args.quick else FULL
    if args.samples:
        settings = dataclasses.replace(settings, samples=args.samples)
    try:
        grad = load_grad()
    except ImportError as exc:
        print(f"cannot import adcompile.grad: {exc}", file=sys.stderr)
        return 2
    try:
        runtime = [run_runtime(w, grad, settings) for w in default_workloads()]
    except BenchmarkError as exc:
        print(f"ABORT: gradient check failed: {exc}", file=sys.stderr)
        return 1
    compiles = run_compiles(settings, grad)
    report = "\n".join(header_lines(settings) + runtime_lines(runtime) + compile_lines(compiles))
    print(report)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
