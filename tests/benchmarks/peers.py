"""Gradient benchmark of adcompile against HIPS autograd, PyTorch, JAX and SymPy.

Run from the repository root::

    python -m tests.benchmarks.peers [--quick] [--output PATH] [--no-output] [--samples N]
                                     [--peers KEYS] [--sympy-budget S] [--swell-max N]

Install the peers with ``pip install -e '.[bench]'``; a peer that is not installed is
reported as such. For every workload the primal, the hand-written gradient and each peer's
gradient are timed in one process: round-robin within every repetition, rotating order, gc
disabled, per-call medians (the machinery of ``straight_line``). Every function takes Python
floats and computes in float64; each peer runs the workload's own source with ``math``
replaced by its library (see ``backends``). Before timing, every gradient is compared with
the hand-written one (itself checked against exact mpmath differences) at four points; a
wrong gradient is reported as "wrong" and not timed. JAX's jit compile time and SymPy's
set-up time (symbolic execution, ``diff``, cse'd ``lambdify``) are reported apart; SymPy's
set-up has a time budget, and where it runs out the table says so.

Sections: the seed, 30-op, 300-op and 100-step loop workloads; expression swell
(``f = sin(f) * f + x`` repeated n times, adcompile and SymPy); compile times; Hessians of a
10-input function and of the 30-op function (``adcompile.hessian`` once it exists, against
``jax.hessian`` and ``torch.autograd.functional.hessian``); the issue-6 targets.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from . import backends
from .backends import (
    BudgetExceeded,
    BuildContext,
    NotAvailable,
    Peer,
    Prepared,
)
from .loops import SHORT_STEPS, step_workload
from .straight_line import (
    FULL,
    QUICK,
    BenchmarkError,
    Candidate,
    CompileRow,
    Settings,
    header_lines,
    load_grad,
    measure,
    run_compile,
    verdict,
)
from .workloads import (
    Workload,
    default_workloads,
    evaluation_points,
    gradient_mismatches,
    medium_workload,
    mp_fd_gradient,
    statements_for_operations,
    timing_point,
)

RTOL = 1e-8
SYMPY_BUDGET_S = 10.0
SLOW_BUDGET_NS = 2e9
SWELL_RANGE = (5, 20)
QUICK_SWELL_MAX = 8
HAND_TARGET = 1.1
TORCH_TARGET = 100.0
COMPILE_TARGET_MS = 50.0
SWELL_TARGET = 1.2
DEFAULT_OUTPUT = Path(__file__).with_name("peers_results.md")
CLOCKS = {"cpu": time.process_time_ns, "wall": time.perf_counter_ns}
PEER_DISTRIBUTIONS = ("sympy", "mpmath", "numpy", "autograd", "torch", "jax", "jaxlib")

OK = ""
NOT_INSTALLED = "not installed"
NOT_AVAILABLE = "not available"
WRONG = "wrong"

GRADIENT_PEERS = (
    Peer("adcompile", "adcompile", ("adcompile",), backends.build_adcompile),
    Peer("autograd", "autograd", ("autograd",), backends.build_autograd),
    Peer("torch", "torch backward()", ("torch",), backends.build_torch_backward),
    Peer("torch.func", "torch.func.grad", ("torch",), backends.build_torch_func),
    Peer("jax", "jax.grad (eager)", ("jax",), backends.build_jax_eager),
    Peer("jax.jit", "jax.jit(jax.grad)", ("jax",), backends.build_jax_jit),
    Peer("sympy", "SymPy diff + lambdify(cse)", ("sympy",), backends.build_sympy),
)
HESSIAN_PEERS = (
    Peer("adcompile", "adcompile.hessian", ("adcompile",), backends.build_adcompile_hessian),
    Peer("jax", "jax.hessian (eager)", ("jax",), backends.build_jax_hessian),
    Peer("jax.jit", "jax.jit(jax.hessian)", ("jax",), backends.build_jax_jit_hessian),
    Peer(
        "torch",
        "torch.autograd.functional.hessian",
        ("torch",),
        backends.build_torch_hessian,
    ),
    Peer("sympy", "SymPy hessian + lambdify(cse)", ("sympy",), backends.build_sympy_hessian),
)
SWELL_PEERS = ("adcompile", "sympy")


# --------------------------------------------------------------------------- workloads


@dataclasses.dataclass(frozen=True)
class Case:
    """A workload with the point where it is timed and the points where it is checked."""

    workload: Workload
    timing_args: tuple[float, ...]
    check_points: tuple[tuple[float, ...], ...]

    @property
    def name(self) -> str:
        """Short name used in the report."""
        return self.workload.name


def straight_case(workload: Workload) -> Case:
    """Timed at ``timing_point``, checked there and at three random points."""
    timing = timing_point(workload.n_inputs)
    return Case(workload, timing, (timing, *evaluation_points(workload.n_inputs, 3)))


def gradient_cases() -> list[Case]:
    """The seed, the 30-op and 300-op functions, and the 100-step loop."""
    step = step_workload(SHORT_STEPS)
    loop = Case(step.workload, step.timing_args, step.check_points)
    return [*(straight_case(w) for w in default_workloads()), loop]


def swell_sources(n: int) -> tuple[str, str]:
    """Primal and hand-written gradient of ``f = x``, then n times ``f = sin(f) * f + x``."""
    primal = ["import math", "", "", "def swell(x):", "    f = x"]
    primal += ["    f = math.sin(f) * f + x"] * n + ["    return f", ""]
    hand = ["import math", "", "", "def swell_grad(x):", "    f0 = x"]
    for k in range(1, n):
        hand += [f"    s{k} = math.sin(f{k - 1})", f"    f{k} = s{k} * f{k - 1} + x"]
    hand += [f"    g = math.cos(f{n - 1}) * f{n - 1} + math.sin(f{n - 1})", "    gx = 1.0 + g"]
    for k in range(n - 1, 0, -1):
        hand.append(f"    g = g * (math.cos(f{k - 1}) * f{k - 1} + s{k})")
        hand.append("    gx += g")
    hand += ["    return gx", ""]
    return "\n".join(primal), "\n".join(hand)


def swell_case(n: int) -> Case:
    """Expression swell of depth ``n`` (one input)."""
    primal, hand = swell_sources(n)
    workload = Workload(
        name=f"swell{n}",
        description=f"f = x; {n} times f = sin(f) * f + x",
        n_inputs=1,
        n_ops=2 * n,
        primal_source=primal,
        grad_source=hand,
        primal_name="swell",
        grad_name="swell_grad",
    )
    return straight_case(workload)


TEN_SOURCE = """\
import math


def ten(x0, x1, x2, x3, x4, x5, x6, x7, x8, x9):
    r2 = x0 * x0 + x1 * x1 + x2 * x2 + x3 * x3 + x4 * x4
    r2 += x5 * x5 + x6 * x6 + x7 * x7 + x8 * x8 + x9 * x9
    e = math.exp(-0.1 * r2)
    a = math.sin(x0 * x1) + math.cos(x2 - x3) * x4
    b = math.tanh(x5 * x6 + x7) * math.log(x8 * x8 + 1.0)
    c = x9 * x0 * x5 + math.sqrt(x1 * x1 + x9 * x9 + 1.0)
    return e * (a + b) + 0.1 * c * c
"""


def hessian_cases() -> list[Case]:
    """A 10-input function with a dense Hessian, and the 30-op function."""
    ten = Workload(
        name="ten10",
        description="10 inputs, 37 ops, dense Hessian (exp of -0.1 |x|^2 times sin/cos/tanh/log)",
        n_inputs=10,
        n_ops=37,
        primal_source=TEN_SOURCE,
        grad_source="",
        primal_name="ten",
    )
    timing = (0.7, -0.4, 1.1, 0.3, -0.9, 0.5, 0.2, -1.3, 0.8, -0.6)
    ten_case = Case(ten, timing, (timing, *evaluation_points(10, 3)))
    return [ten_case, straight_case(medium_workload())]


# --------------------------------------------------------------------------- results


@dataclasses.dataclass
class Entry:
    """One row of a table: a timed function, or why it was not timed."""

    label: str
    key: str = ""
    status: str = OK
    median_ns: float | None = None
    samples: int = 0
    setup_s: float | None = None
    setup_label: str = ""
    code_lines: int | None = None
    detail: str = ""


@dataclasses.dataclass
class CaseResult:
    """All rows of one workload; ``baseline`` is the label of the second ratio column."""

    case: Case
    entries: list[Entry]
    baseline: str

    def entry(self, key: str) -> Entry | None:
        """The row of a peer (or ``primal`` / ``hand``), if present."""
        return next((e for e in self.entries if e.key == key), None)

    def median(self, key: str) -> float | None:
        """Median ns of a timed row, else None."""
        entry = self.entry(key)
        return entry.median_ns if entry is not None and entry.status == OK else None


def flatten(value: object) -> tuple[float, ...]:
    """Nested tuples/lists of scalars (floats, 0-d tensors or arrays) as a flat float tuple."""
    if isinstance(value, tuple | list):
        return tuple(x for item in value for x in flatten(item))
    return (float(value),)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- checking


def verify_hand(case: Case) -> Callable[..., object]:
    """The hand-written gradient, checked against exact differences (BenchmarkError if off)."""
    workload = case.workload
    hand = workload.hand_grad()
    for point in case.check_points:
        exact = mp_fd_gradient(workload.primal_source, workload.primal_name, point)
        problems = gradient_mismatches(flatten(hand(*point)), exact, RTOL)
        if problems:
            raise BenchmarkError(f"{case.name}: hand-written gradient at {point}: {problems[0]}")
    return hand


def expected_values(
    case: Case, reference: Callable[..., object]
) -> dict[tuple[float, ...], tuple[float, ...]]:
    """The reference's flat result at every check point."""
    return {point: flatten(reference(*point)) for point in case.check_points}


def mismatch(
    fn: Callable[..., object], expected: dict[tuple[float, ...], tuple[float, ...]]
) -> str:
    """The first disagreement of ``fn`` with the reference, or "" when it agrees everywhere."""
    for point, values in expected.items():
        problems = gradient_mismatches(flatten(fn(*point)), values, RTOL)
        if problems:
            return f"at {point}: {problems[0]}"
    return ""


def prepare(
    peer: Peer,
    case: Case,
    expected: dict[tuple[float, ...], tuple[float, ...]],
    budget_s: float | None,
) -> tuple[Entry, Prepared | None]:
    """Build and check one peer; the Prepared is None when it is not to be timed."""
    entry = Entry(peer.label, peer.key)
    if not peer.installed():
        entry.status = NOT_INSTALLED
        return entry, None
    try:
        prepared = peer.build(case.workload, BuildContext(case.timing_args, budget_s))
    except BudgetExceeded:
        entry.status = f"gave up (set-up > {budget_s:g} s)"
        return entry, None
    except NotAvailable as exc:
        entry.status, entry.detail = NOT_AVAILABLE, str(exc)
        return entry, None
    except Exception as exc:
        entry.status, entry.detail = f"failed ({type(exc).__name__})", str(exc)[:200]
        return entry, None
    entry.setup_s, entry.setup_label = prepared.setup_s, prepared.setup_label
    entry.code_lines = prepared.code_lines
    try:
        entry.detail = mismatch(prepared.fn, expected)
    except Exception as exc:
        entry.status, entry.detail = f"failed ({type(exc).__name__})", str(exc)[:200]
        return entry, None
    if entry.detail:
        entry.status = WRONG
        return entry, None
    return entry, prepared


# --------------------------------------------------------------------------- measuring


def time_rows(
    rows: Sequence[tuple[Entry, Callable[..., object]]], args: tuple[float, ...], settings: Settings
) -> None:
    """Interleaved per-call medians of every row (slow ones sampled less often)."""
    candidates = [Candidate(entry.label, fn, args) for entry, fn in rows]
    measure(candidates, settings, budget_ns=SLOW_BUDGET_NS)
    for (entry, _), candidate in zip(rows, candidates, strict=True):
        entry.median_ns = candidate.median()
        entry.samples = len(candidate.per_call_ns)


def run_case(
    case: Case,
    peers: Sequence[Peer],
    fixed: Sequence[tuple[Entry, Callable[..., object]]],
    reference: Callable[..., object],
    settings: Settings,
    budget_s: float | None,
) -> list[Entry]:
    """Check every peer against ``reference``, then time the fixed rows and the good peers."""
    expected = expected_values(case, reference)
    entries = [entry for entry, _ in fixed]
    rows = list(fixed)
    for peer in peers:
        entry, prepared = prepare(peer, case, expected, budget_s)
        entries.append(entry)
        if prepared is not None:
            rows.append((entry, prepared.fn))
    time_rows(rows, case.timing_args, settings)
    return entries


def run_gradient_case(
    case: Case, peers: Sequence[Peer], settings: Settings, budget_s: float | None
) -> CaseResult:
    """Primal, hand-written gradient and every peer's gradient of one workload."""
    hand = verify_hand(case)
    fixed = [
        (Entry("primal", "primal"), case.workload.primal()),
        (Entry("hand-written gradient", "hand"), hand),
    ]
    entries = run_case(case, peers, fixed, hand, settings, budget_s)
    return CaseResult(case, entries, "hand")


def run_hessian_case(
    case: Case, peers: Sequence[Peer], settings: Settings, budget_s: float | None
) -> CaseResult:
    """Primal and every peer's Hessian, checked against SymPy's in 40-digit mpmath."""
    reference = backends.sympy_reference_hessian(case.workload)
    fixed = [(Entry("primal", "primal"), case.workload.primal())]
    entries = run_case(case, peers, fixed, reference, settings, budget_s)
    return CaseResult(case, entries, "adcompile")


def run_swell(
    ns: Sequence[int], peers: Sequence[Peer], settings: Settings, budget_s: float | None
) -> list[CaseResult]:
    """Expression swell for each n; once SymPy gives up it is not attempted for larger n."""
    results = []
    gave_up_at = None
    for n in ns:
        active = [p for p in peers if not (p.key == "sympy" and gave_up_at is not None)]
        result = run_gradient_case(swell_case(n), active, settings, budget_s)
        sympy = result.entry("sympy")
        if gave_up_at is not None and any(p.key == "sympy" for p in peers):
            result.entries.append(Entry("SymPy", "sympy", f"not tried (gave up at n={gave_up_at})"))
        elif sympy is not None and sympy.status.startswith("gave up"):
            gave_up_at = n
        results.append(result)
    return results


# --------------------------------------------------------------------------- report


def format_us(ns: float) -> str:
    """Microseconds with three significant figures (no exponent)."""
    us = ns / 1000
    if us < 1:
        return f"{us:.3f}"
    if us < 10:
        return f"{us:.2f}"
    return f"{us:.1f}" if us < 100 else f"{us:,.0f}"


def format_ratio(ratio: float) -> str:
    """A ratio with two decimals below 100, else a whole number."""
    return f"{ratio:.2f}" if ratio < 100 else f"{ratio:,.0f}"


def format_seconds(seconds: float) -> str:
    """A set-up time: ms below 10 s, else s."""
    return f"{seconds * 1000:,.1f} ms" if seconds < 10 else f"{seconds:,.1f} s"


def format_setup(entry: Entry) -> str:
    """Set-up cell: what was measured and how long it took."""
    if entry.setup_s is None:
        return ""
    return f"{entry.setup_label} {format_seconds(entry.setup_s)}"


def ratio_cell(value: float | None, base: float | None) -> str:
    """``value / base`` or empty."""
    return format_ratio(value / base) if value is not None and base else ""


def table_row(entry: Entry, primal: float | None, base: float | None) -> str:
    """One markdown row: median, ratios, samples and set-up, or the status."""
    if entry.status != OK:
        return f"| {entry.label} | {entry.status} | | | | {format_setup(entry)} |"
    median = entry.median_ns
    return (
        f"| {entry.label} | {format_us(median)} | {ratio_cell(median, primal)} "
        f"| {ratio_cell(median, base)} | {entry.samples} | {format_setup(entry)} |"
    )


def case_table(result: CaseResult, what: str) -> list[str]:
    """The markdown table of one workload."""
    base_label = "hand-written" if result.baseline == "hand" else result.baseline
    primal = result.median("primal")
    base = result.median(result.baseline)
    lines = [
        f"### {result.case.name}: {result.case.workload.description}",
        "",
        f"| {what} | median µs per call | × primal | × {base_label} | samples | set-up / compile |",
        "|---|---:|---:|---:|---:|---|",
    ]
    lines += [table_row(entry, primal, base) for entry in result.entries]
    wrong = [e for e in result.entries if e.detail and e.status != NOT_AVAILABLE]
    lines += [""] + [f"- {e.label}: {e.status}: {e.detail}" for e in wrong]
    return [*lines, ""] if wrong else lines


def swell_cell(result: CaseResult, key: str) -> str:
    """Median µs of a swell row, or its status."""
    entry = result.entry(key)
    if entry is None:
        return ""
    return format_us(entry.median_ns) if entry.status == OK else entry.status  # type: ignore[arg-type]


def setup_cell(result: CaseResult, key: str) -> str:
    """Set-up time of a swell row (ms)."""
    entry = result.entry(key)
    if entry is None or entry.setup_s is None:
        return ""
    return f"{entry.setup_s * 1000:,.1f}"


def lines_cell(result: CaseResult) -> str:
    """Generated lines of adcompile and SymPy."""
    cells = []
    for key in ("adcompile", "sympy"):
        entry = result.entry(key)
        cells.append(str(entry.code_lines) if entry and entry.code_lines else "–")
    return " / ".join(cells)


def swell_table(results: Sequence[CaseResult]) -> list[str]:
    """One row per depth n: medians, ratios, set-up times, generated code size."""
    lines = [
        "### swell: f = x; n times f = sin(f) * f + x (d/dx)",
        "",
        "| n | primal µs | hand µs | adcompile µs | SymPy µs | adcompile / SymPy "
        "| adcompile / hand | adcompile compile ms | SymPy set-up ms | lines adcompile / SymPy |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for result in results:
        ad = result.median("adcompile")
        lines.append(
            f"| {result.case.workload.n_ops // 2} | {swell_cell(result, 'primal')} "
            f"| {swell_cell(result, 'hand')} | {swell_cell(result, 'adcompile')} "
            f"| {swell_cell(result, 'sympy')} | {ratio_cell(ad, result.median('sympy'))} "
            f"| {ratio_cell(ad, result.median('hand'))} | {setup_cell(result, 'adcompile')} "
            f"| {setup_cell(result, 'sympy')} | {lines_cell(result)} |"
        )
    return [*lines, ""]


def compile_table(results: Sequence[CaseResult], op300: CompileRow | None) -> list[str]:
    """Set-up costs side by side: adcompile's compile, jax.jit's first call, SymPy's set-up."""
    lines = [
        "## Set-up: compile and symbolic work (wall time, one run each)",
        "",
        "| workload | adcompile `grad(f)` | jax.jit(jax.grad) first call | SymPy set-up |",
        "|---|---:|---:|---:|",
    ]
    for result in results:
        cells = []
        for key in ("adcompile", "jax.jit", "sympy"):
            entry = result.entry(key)
            timed = entry is not None and entry.setup_s is not None
            cells.append(format_seconds(entry.setup_s) if timed else status(entry))  # type: ignore[union-attr,arg-type]
        lines.append(f"| {result.case.name} | {' | '.join(cells)} |")
    if op300 is not None:
        ok = verdict(op300.median() < COMPILE_TARGET_MS)
        lines += [
            "",
            f"adcompile on a generated function of {op300.operations} operations "
            f"({op300.n_ops} statements; line300 has 300 statements and about 400 "
            f"operations), median of {len(op300.times_ms)} fresh compiles (`straight_line."
            f"run_compile`): {op300.median():.1f} ms (target < {COMPILE_TARGET_MS:g} ms: {ok}).",
        ]
    lines += [
        "",
        "Why SymPy gives up (tests/benchmarks/README.md): line300's nested ternaries become "
        "nested `Piecewise` that SymPy folds while building the expression; the loop and the "
        "swell make `diff` exponential in the nesting depth.",
    ]
    return [*lines, ""]


def status(entry: Entry | None) -> str:
    """A row's status for a summary cell."""
    if entry is None:
        return "–"
    return entry.status.split(" (")[0] if entry.status != OK else ""


# --------------------------------------------------------------------------- targets


def speedup_line(results: Sequence[CaseResult], keys: Sequence[str], target: float) -> str:
    """Per workload: (fastest of ``keys``) / adcompile, against ``target``."""
    cells = []
    for result in results:
        ad = result.median("adcompile")
        times = [t for t in (result.median(k) for k in keys) if t is not None]
        if ad is None or not times:
            cells.append(f"{result.case.name} n/a")
            continue
        speedup = min(times) / ad
        cells.append(f"{result.case.name} {format_ratio(speedup)}× {verdict(speedup >= target)}")
    return ", ".join(cells)


def hand_line(results: Sequence[CaseResult]) -> str:
    """Per workload: adcompile / hand-written against HAND_TARGET."""
    cells = []
    for result in results:
        ratio = ratio_cell(result.median("adcompile"), result.median("hand"))
        ok = ratio and float(ratio.replace(",", "")) <= HAND_TARGET
        cells.append(f"{result.case.name} {ratio or 'n/a'} {verdict(bool(ok))}")
    return ", ".join(cells)


def swell_line(results: Sequence[CaseResult]) -> str:
    """adcompile / SymPy for every n where SymPy finished, and where it gave up."""
    cells = []
    for result in results:
        ad, sym = result.median("adcompile"), result.median("sympy")
        n = result.case.workload.n_ops // 2
        if ad is not None and sym is not None:
            cells.append(f"n={n} {format_ratio(ad / sym)} {verdict(ad / sym <= SWELL_TARGET)}")
    gave_up = [r for r in results if status(r.entry("sympy")) == "gave up"]
    if gave_up:
        cells.append(f"SymPy gave up at n={gave_up[0].case.workload.n_ops // 2}")
    return ", ".join(cells) or "n/a"


def linearity_line(results: Sequence[CaseResult]) -> str:
    """adcompile's time per swell step at the smallest and largest n."""
    timed = [(r.case.workload.n_ops // 2, r.median("adcompile")) for r in results]
    timed = [(n, t) for n, t in timed if t is not None]
    if len(timed) < 2:
        return "n/a"
    (n0, t0), (n1, t1) = timed[0], timed[-1]
    return f"{format_us(t0 / n0)} µs per step at n={n0}, {format_us(t1 / n1)} µs per step at n={n1}"


def hessian_line(results: Sequence[CaseResult]) -> str:
    """adcompile.hessian against torch and jax eager (issue 7: faster than both)."""
    if all(r.median("adcompile") is None for r in results):
        return "adcompile.hessian not available"
    return speedup_line(results, ("torch", "jax"), 1.0)


def targets_section(
    gradients: Sequence[CaseResult],
    swell: Sequence[CaseResult],
    hessians: Sequence[CaseResult],
    op300: CompileRow | None,
) -> list[str]:
    """The issue-6 (and issue-7 Hessian) targets with the measured figures."""
    compile_cell = (
        f"{op300.median():.1f} ms {verdict(op300.median() < COMPILE_TARGET_MS)}"
        if op300 is not None
        else "n/a"
    )
    return [
        "## Targets",
        "",
        f"- adcompile ≤ {HAND_TARGET} × hand-written: {hand_line(gradients)}",
        f"- ≥ {TORCH_TARGET:g}× faster than torch eager (the faster of backward() and "
        f"torch.func.grad): {speedup_line(gradients, ('torch', 'torch.func'), TORCH_TARGET)}",
        f"- faster than jax.jit(jax.grad) per call: {speedup_line(gradients, ('jax.jit',), 1.0)}",
        f"- compile of a 300-operation function < {COMPILE_TARGET_MS:g} ms: {compile_cell}",
        f"- swell, adcompile ≤ {SWELL_TARGET} × SymPy cse'd lambdify: {swell_line(swell)}",
        f"- swell, adcompile stays linear: {linearity_line(swell)}",
        f"- Hessian faster than torch and jax eager (speed-up of the faster): "
        f"{hessian_line(hessians)}",
        "",
    ]


# --------------------------------------------------------------------------- header


def version_of(distribution: str) -> str:
    """Installed version of a distribution, or "not installed"."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return NOT_INSTALLED


def adcompile_revision() -> str:
    """Git commit of the working tree (and whether adcompile/ has uncommitted changes)."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "adcompile"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        return "unknown"
    return f"{head}{' + uncommitted changes in adcompile/' if dirty else ''}" or "unknown"


def clock_note(settings: Settings) -> str:
    """What the runtime samples measure."""
    if settings.clock is time.process_time_ns:
        return (
            "process CPU time (`time.process_time_ns`: every thread of this process, not the "
            "time other jobs hold the CPU); set-up and compile times are wall time"
        )
    return "wall time (`time.perf_counter_ns`)"


def report_header(settings: Settings, budget_s: float | None) -> list[str]:
    """Title, date, machine, versions and sampling lines."""
    lines = header_lines(settings)
    lines[0] = "# adcompile benchmark: gradients against the peers"
    versions = ", ".join(f"{name} {version_of(name)}" for name in PEER_DISTRIBUTIONS)
    budget = "none" if budget_s is None else f"{budget_s:g} s per workload"
    lines[-1:-1] = [
        "- machine: shared 2-core development box; absolute times drift with other jobs, "
        "the interleaved ratios are the figures to read",
        f"- clock: {clock_note(settings)}",
        f"- adcompile: {adcompile_revision()}",
        f"- peers: {versions}",
        f"- SymPy set-up budget: {budget}; a candidate whose samples would take more than "
        f"{SLOW_BUDGET_NS / 1e9:g} s is sampled in every k-th round only (see `samples`)",
        "- every function takes Python floats and computes in float64; torch and JAX convert "
        "the inputs inside the timed call; JAX results are blocked until ready",
    ]
    return lines


# --------------------------------------------------------------------------- main


@dataclasses.dataclass(frozen=True)
class Plan:
    """What one run measures."""

    settings: Settings
    peers: frozenset[str]
    budget_s: float | None
    swell_ns: tuple[int, ...]
    compile_runs: int


def chosen(peers: Sequence[Peer], keys: frozenset[str]) -> list[Peer]:
    """The peers whose key was selected."""
    return [peer for peer in peers if peer.key in keys]


def run_all(plan: Plan) -> str:
    """Measure every section and return the markdown report."""
    settings, budget = plan.settings, plan.budget_s
    grad_peers = chosen(GRADIENT_PEERS, plan.peers)
    gradients = [run_gradient_case(c, grad_peers, settings, budget) for c in gradient_cases()]
    swell_peers = chosen(grad_peers, frozenset(SWELL_PEERS))
    swell = run_swell(plan.swell_ns, swell_peers, settings, budget)
    hessian_peers = chosen(HESSIAN_PEERS, plan.peers)
    hessians = [run_hessian_case(c, hessian_peers, settings, budget) for c in hessian_cases()]
    op300 = None
    if "adcompile" in plan.peers and plan.compile_runs:
        statements = statements_for_operations(300)
        op300 = run_compile(statements, plan.compile_runs, load_grad(), sized_for_operations=300)
    lines = [*report_header(settings, budget), "## Gradients (median per call)", ""]
    for result in gradients:
        lines += case_table(result, "gradient")
    lines += ["## Expression swell", "", *swell_table(swell)]
    lines += compile_table(gradients, op300)
    lines += ["## Hessians (median per call)", ""]
    for result in hessians:
        lines += case_table(result, "Hessian")
    lines += targets_section(gradients, swell, hessians, op300)
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few samples, swell up to n=8")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="report file")
    parser.add_argument("--no-output", action="store_true", help="print only")
    parser.add_argument("--samples", type=int, help="override the number of runtime samples")
    keys = ",".join(p.key for p in GRADIENT_PEERS)
    parser.add_argument("--peers", default=keys, help=f"comma-separated subset of {keys}")
    parser.add_argument("--sympy-budget", type=float, default=SYMPY_BUDGET_S, metavar="S")
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="cpu",
        help="cpu: process CPU time, all threads (default); wall: perf_counter",
    )
    parser.add_argument("--swell-max", type=int, help=f"largest n (default {SWELL_RANGE[1]})")
    return parser.parse_args(argv)


def plan_from(args: argparse.Namespace) -> Plan:
    """The Plan that the options describe."""
    settings = QUICK if args.quick else FULL
    settings = dataclasses.replace(settings, clock=CLOCKS[args.clock])
    if args.samples:
        settings = dataclasses.replace(settings, samples=args.samples)
    swell_max = args.swell_max or (QUICK_SWELL_MAX if args.quick else SWELL_RANGE[1])
    return Plan(
        settings=settings,
        peers=frozenset(args.peers.split(",")),
        budget_s=args.sympy_budget,
        swell_ns=tuple(range(SWELL_RANGE[0], swell_max + 1)),
        compile_runs=1 if args.quick else 5,
    )


def report_main(args: argparse.Namespace, make_report: Callable[[], str]) -> int:
    """Print the report ``make_report`` builds and write it (unless ``--no-output``)."""
    try:
        report = make_report()
    except BenchmarkError as exc:
        print(f"ABORT: hand-written gradient check failed: {exc}", file=sys.stderr)
        return 1
    print(report)
    if not args.no_output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(report, encoding="utf-8")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the peer benchmark; print the report and write it (unless ``--no-output``)."""
    args = parse_args(argv)
    return report_main(args, lambda: run_all(plan_from(args)))


if __name__ == "__main__":
    sys.exit(main())
