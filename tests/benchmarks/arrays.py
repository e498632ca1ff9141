"""Array gradient benchmark (issue 4): adcompile against a hand-written NumPy backward and peers.

Run from the repository root::

    python -m tests.benchmarks.arrays [--quick] [--output PATH] [--no-output] [--samples N]
                                      [--peers KEYS] [--clock cpu|wall] [--torch-threads N]

Workloads: the 2-layer tanh MLP loss (``mlp_tanh_loss``, gradient with respect to the params
dict; x: 64, W1: 128x64, W2: 10x128) and least squares (``least_squares``, gradient with
respect to A: 500x200, x and b), both from ``tests/corpus/arrays.py`` with their inputs from
``bench_args``. For each, the primal, the corpus's hand-written NumPy backward and every
installed peer are timed in one process with the machinery of ``peers`` (round-robin, rotating
order, gc disabled, per-call medians; process CPU time by default).

Peers run the corpus function's own source with ``np`` bound to their library
(``autograd.numpy``, ``torch``, ``jax.numpy``); torch and JAX convert the NumPy inputs inside
the timed call, JAX results are blocked until ready; torch runs on ``TORCH_THREADS`` intra-op
threads (one by default, see there). Before timing, the hand-written backward is checked
against finite differences along random directions, then every gradient is compared with it
(same structure and shapes, ``np.allclose`` at rtol ``RTOL``) at two input draws, with a check
that no input is mutated; a wrong gradient is reported as "wrong" and not timed. A peer that is
not installed is reported as such. adcompile's compile time and jax.jit's first call
are reported apart.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import importlib
import inspect
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tests.array_reference import (
    assert_same_structure,
    call_without_mutation,
    directional_difference,
    tree_leaves,
    tree_map,
)
from tests.corpus import arrays as corpus

from . import backends, peers
from .backends import BuildContext, NotAvailable, Peer, Prepared
from .straight_line import FULL, QUICK, BenchmarkError, Settings, header_lines, verdict

RTOL = 1e-6
ATOL = 1e-9  # times max(1, max |hand-written gradient|)
HAND_RTOL = 1e-6  # hand-written backward against finite differences along a direction
DIRECTIONS = 3
TIMING_SEED, CHECK_SEED = 0, 1
ISSUE4_TARGET = 1.2
ISSUE6_TARGET = peers.HAND_TARGET
DEFAULT_OUTPUT = Path(__file__).with_name("arrays_results.md")
DISTRIBUTIONS = ("numpy", "autograd", "torch", "jax", "jaxlib")
# torch's intra-op threads. With 2 on this shared 2-core box, torch's OpenMP workers wait for
# a core that another job holds: a 500x200 elementwise product then costs ~8 ms instead of
# ~40 µs (in CPU time too, as the workers spin). One thread measures torch's own cost.
TORCH_THREADS = 1

Args = tuple[Any, ...]


# --------------------------------------------------------------------------- workloads


@dataclasses.dataclass(frozen=True)
class ArrayWorkload:
    """A corpus function, its hand-written backward, and what is differentiated."""

    name: str
    description: str
    fn: Callable[..., Any]
    hand: Callable[..., tuple[Any, ...]]
    wrt: int | tuple[int, ...]

    @property
    def indices(self) -> tuple[int, ...]:
        """The differentiated parameters' indices, always as a tuple."""
        return (self.wrt,) if isinstance(self.wrt, int) else self.wrt

    def as_tuple(self, gradient: Any) -> tuple[Any, ...]:
        """A gradient result as one tree per ``wrt`` index (a bare ``wrt`` returns one tree)."""
        return (gradient,) if isinstance(self.wrt, int) else tuple(gradient)


@dataclasses.dataclass(frozen=True)
class ArrayCase:
    """A workload with the inputs it is timed at and those it is checked at (like ``Case``)."""

    workload: ArrayWorkload
    timing_args: Args
    check_args: tuple[Args, ...]

    @property
    def name(self) -> str:
        """Short name used in the report."""
        return self.workload.name


WORKLOADS = (
    ArrayWorkload(
        "mlp",
        "0.5 * sum((W2 @ tanh(W1 @ x + b1) + b2 - y) ** 2), x: 64, W1: 128x64, W2: 10x128; "
        "d/d params (dict)",
        corpus.mlp_tanh_loss,
        corpus.mlp_tanh_loss_grad,
        0,
    ),
    ArrayWorkload(
        "least_squares",
        "sum((A @ x - b) ** 2), A: 500x200; d/d(A, x, b)",
        corpus.least_squares,
        corpus.least_squares_grad,
        (0, 1, 2),
    ),
)


def bench_inputs(seed: int) -> dict[str, Args]:
    """``bench_args`` of the corpus, drawn from a generator with ``seed``."""
    return corpus.bench_args(np.random.default_rng(seed))


def array_cases() -> list[ArrayCase]:
    """Every workload, timed at the seed-0 draw and checked there and at the seed-1 draw."""
    timing, other = bench_inputs(TIMING_SEED), bench_inputs(CHECK_SEED)
    return [
        ArrayCase(w, timing[w.fn.__name__], (timing[w.fn.__name__], other[w.fn.__name__]))
        for w in WORKLOADS
    ]


# --------------------------------------------------------------------------- checking


def to_numpy(leaf: Any) -> np.ndarray:
    """A gradient leaf (ndarray, float, torch tensor, JAX array) as a float64 ndarray."""
    if hasattr(leaf, "detach"):
        leaf = leaf.detach().cpu().numpy()
    return np.asarray(leaf, dtype=np.float64)


def gradient_error(got: tuple[Any, ...], ref: tuple[Any, ...]) -> tuple[float, str]:
    """Largest |got - ref| / max(1, max |ref|), and the first failed check ("" if none)."""
    try:
        assert_same_structure(got, ref)
    except AssertionError as exc:
        return float("inf"), f"structure: {exc}"
    scale = max([1.0] + [float(np.max(np.abs(leaf))) for _, leaf in tree_leaves(ref)])
    got_leaves = dict(tree_leaves(got))
    worst = 0.0
    for path, leaf in tree_leaves(ref):
        g, r = to_numpy(got_leaves[path]), np.asarray(leaf, dtype=np.float64)
        if g.shape != r.shape:
            return float("inf"), f"{list(path)}: shape {g.shape} != {r.shape}"
        worst = max(worst, float(np.max(np.abs(g - r), initial=0.0)) / scale)
        if not np.allclose(g, r, rtol=RTOL, atol=ATOL * scale):
            return worst, f"{list(path)}: max |error| / scale = {worst:.2e} (rtol {RTOL:g})"
    return worst, ""


def verify_hand(case: ArrayCase) -> Callable[..., Any]:
    """The hand-written backward, checked by finite differences along random directions."""
    workload = case.workload
    rng = np.random.default_rng(12345)
    for args in case.check_args:
        grads = workload.hand(*args)
        for _ in range(DIRECTIONS):
            directions = [
                tree_map(lambda leaf: rng.standard_normal(np.shape(leaf)), args[k])
                for k in workload.indices
            ]
            fd = directional_difference(workload.fn, args, workload.indices, directions)
            pairs = [
                (g, d)
                for tree, dtree in zip(grads, directions, strict=True)
                for (_, g), (_, d) in zip(tree_leaves(tree), tree_leaves(dtree), strict=True)
            ]
            exact = sum(float(np.sum(g * d)) for g, d in pairs)
            scale = sum(float(np.sum(np.abs(g * d))) for g, d in pairs)
            if abs(exact - fd) > HAND_RTOL * max(scale, 1.0):
                raise BenchmarkError(
                    f"{case.name}: hand-written backward along a random direction: "
                    f"{exact!r} != finite differences {fd!r}"
                )
    return workload.hand


def check(
    fn: Callable[..., Any], case: ArrayCase, expected: Sequence[tuple[Any, ...]]
) -> tuple[float, str]:
    """Worst error of ``fn`` against the hand-written gradients, and the first problem."""
    worst = 0.0
    for args, ref in zip(case.check_args, expected, strict=True):
        # On a copy: a function that mutates its inputs must not spoil them for the others.
        got = case.workload.as_tuple(call_without_mutation(fn, copy.deepcopy(args)))
        error, problem = gradient_error(got, ref)
        worst = max(worst, error)
        if problem:
            return worst, problem
    return worst, ""


# --------------------------------------------------------------------------- peers


def peer_function(fn: Callable[..., Any], np_module: object) -> Callable[..., Any]:
    """The corpus function's own source, executed with ``np`` bound to ``np_module``."""
    source = textwrap.dedent(inspect.getsource(fn))
    namespace: dict[str, object] = {"np": np_module}
    exec(compile(source, f"<bench-array-peer:{fn.__name__}>", "exec"), namespace)
    return namespace[fn.__name__]  # type: ignore[return-value]


def build_adcompile(workload: ArrayWorkload, context: BuildContext) -> Prepared:
    """``adcompile.grad(fn, wrt=...)``; its compile time is the set-up."""
    from adcompile import grad

    fn, seconds = backends.timed(lambda: grad(workload.fn, wrt=workload.wrt))
    return Prepared(fn, seconds, "compile", backends.code_lines(getattr(fn, "source", "")))


def build_autograd(workload: ArrayWorkload, context: BuildContext) -> Prepared:
    """HIPS autograd's ``grad`` with ``argnum=wrt``, on ``autograd.numpy``."""
    autograd = importlib.import_module("autograd")
    primal = peer_function(workload.fn, importlib.import_module("autograd.numpy"))
    return Prepared(autograd.grad(primal, argnum=workload.wrt))


def torch_tree(torch: Any, tree: Any, requires_grad: bool = False) -> Any:
    """NumPy leaves as torch tensors sharing their memory (optionally requiring grad)."""
    if requires_grad:
        return tree_map(lambda leaf: torch.from_numpy(leaf).requires_grad_(), tree)
    return tree_map(torch.from_numpy, tree)


def build_torch_backward(workload: ArrayWorkload, context: BuildContext) -> Prepared:
    """Tensors with ``requires_grad``, the primal, ``backward()``, the ``.grad`` fields."""
    torch = backends.load_torch()
    primal = peer_function(workload.fn, torch)
    indices = workload.indices

    def gradient(*args: Any) -> Any:
        inputs = [torch_tree(torch, a, i in indices) for i, a in enumerate(args)]
        primal(*inputs).backward()
        grads = tuple(tree_map(lambda t: t.grad, inputs[i]) for i in indices)
        return grads[0] if isinstance(workload.wrt, int) else grads

    return Prepared(gradient)


def build_torch_func(workload: ArrayWorkload, context: BuildContext) -> Prepared:
    """``torch.func.grad`` with ``argnums=wrt``."""
    torch = backends.load_torch()
    func = importlib.import_module("torch.func")
    transformed = func.grad(peer_function(workload.fn, torch), workload.wrt)

    def gradient(*args: Any) -> Any:
        return transformed(*(torch_tree(torch, a) for a in args))

    return Prepared(gradient)


def build_jax_eager(workload: ArrayWorkload, context: BuildContext) -> Prepared:
    """``jax.grad`` called eagerly."""
    jax = backends.load_jax()
    primal = peer_function(workload.fn, importlib.import_module("jax.numpy"))
    transformed = jax.grad(primal, argnums=workload.wrt)

    def gradient(*args: Any) -> Any:
        return jax.block_until_ready(transformed(*args))

    return Prepared(gradient)


def build_jax_jit(workload: ArrayWorkload, context: BuildContext) -> Prepared:
    """``jax.jit(jax.grad(f))``; the first call (trace and XLA compile) is the set-up."""
    jax = backends.load_jax()
    primal = peer_function(workload.fn, importlib.import_module("jax.numpy"))
    return backends.jit_prepared(jax.jit(jax.grad(primal, argnums=workload.wrt)), context.args)


PEERS = (
    Peer("adcompile", "adcompile", ("adcompile",), build_adcompile),  # type: ignore[arg-type]
    Peer("autograd", "autograd", ("autograd",), build_autograd),  # type: ignore[arg-type]
    Peer("torch", "torch backward()", ("torch",), build_torch_backward),  # type: ignore[arg-type]
    Peer("torch.func", "torch.func.grad", ("torch",), build_torch_func),  # type: ignore[arg-type]
    Peer("jax", "jax.grad (eager)", ("jax",), build_jax_eager),  # type: ignore[arg-type]
    Peer("jax.jit", "jax.jit(jax.grad)", ("jax",), build_jax_jit),  # type: ignore[arg-type]
)


# --------------------------------------------------------------------------- running


@dataclasses.dataclass
class ArrayResult(peers.CaseResult):
    """``peers.CaseResult`` plus each checked gradient's worst error against the hand-written."""

    errors: dict[str, float] = dataclasses.field(default_factory=dict)


def prepare(
    peer: Peer, case: ArrayCase, expected: Sequence[tuple[Any, ...]]
) -> tuple[peers.Entry, Prepared | None, float | None]:
    """Build and check one peer; the Prepared is None when it is not to be timed."""
    entry = peers.Entry(peer.label, peer.key)
    if not peer.installed():
        entry.status = peers.NOT_INSTALLED
        return entry, None, None
    try:
        prepared = peer.build(case.workload, BuildContext(case.timing_args))  # type: ignore[arg-type]
        entry.setup_s, entry.setup_label = prepared.setup_s, prepared.setup_label
        entry.code_lines = prepared.code_lines
        error, entry.detail = check(prepared.fn, case, expected)
    except NotAvailable as exc:
        entry.status, entry.detail = peers.NOT_AVAILABLE, str(exc)
        return entry, None, None
    except Exception as exc:
        entry.status = f"failed ({type(exc).__name__})"
        entry.detail = " ".join(str(exc).split())[:200]
        return entry, None, None
    if entry.detail:
        entry.status = peers.WRONG
        return entry, None, error
    return entry, prepared, error


def run_array_case(case: ArrayCase, chosen: Sequence[Peer], settings: Settings) -> ArrayResult:
    """Check the hand-written backward and every peer, then time the good ones interleaved."""
    hand = verify_hand(case)
    expected = [hand(*args) for args in case.check_args]
    rows: list[tuple[peers.Entry, Callable[..., object]]] = [
        (peers.Entry("primal", "primal"), case.workload.fn),
        (peers.Entry("hand-written NumPy backward", "hand"), hand),
    ]
    result = ArrayResult(case, [entry for entry, _ in rows], "hand")  # type: ignore[arg-type]
    for peer in chosen:
        entry, prepared, error = prepare(peer, case, expected)
        result.entries.append(entry)
        if error is not None and prepared is not None:
            result.errors[peer.key] = error
            rows.append((entry, prepared.fn))
    peers.time_rows(rows, case.timing_args, settings)
    return result


# --------------------------------------------------------------------------- report


def case_table(result: ArrayResult) -> list[str]:
    """The markdown table of one workload (``peers.case_table``) and the check errors."""
    lines = peers.case_table(result, "gradient")
    if result.errors:
        cells = ", ".join(f"{key} {error:.1e}" for key, error in result.errors.items())
        lines += [
            f"Checked against the hand-written backward (rtol {RTOL:g}) at two input draws, "
            f"max |error| / max(1, max |gradient|): {cells}.",
            "",
        ]
    return lines


def ratio_line(results: Sequence[ArrayResult], target: float) -> str:
    """Per workload: adcompile / hand-written against ``target``."""
    cells = []
    for result in results:
        ad, hand = result.median("adcompile"), result.median("hand")
        if ad is None or hand is None:
            cells.append(f"{result.case.name} n/a")
            continue
        ratio = ad / hand
        cells.append(f"{result.case.name} {peers.format_ratio(ratio)} {verdict(ratio <= target)}")
    return ", ".join(cells)


def targets_section(results: Sequence[ArrayResult]) -> list[str]:
    """The array targets of issues 4 and 6 with the measured figures."""
    torch_keys = ("torch", "torch.func")
    return [
        "## Targets",
        "",
        f"- adcompile ≤ {ISSUE4_TARGET} × hand-written (issue 4): "
        f"{ratio_line(results, ISSUE4_TARGET)}",
        f"- adcompile ≤ {ISSUE6_TARGET} × hand-written (issue 6): "
        f"{ratio_line(results, ISSUE6_TARGET)}",
        f"- faster than autograd (speed-up): {peers.speedup_line(results, ('autograd',), 1.0)}",
        "- faster than torch eager (speed-up over the faster of backward() and "
        f"torch.func.grad): {peers.speedup_line(results, torch_keys, 1.0)}",
        f"- for reference, against jax.jit(jax.grad) per call: "
        f"{peers.speedup_line(results, ('jax.jit',), 1.0)}",
        "",
    ]


def report_header(settings: Settings, torch_note: str = "") -> list[str]:
    """Title, date, machine, versions and sampling lines."""
    lines = header_lines(settings)
    lines[0] = "# adcompile benchmark: NumPy array gradients against the peers"
    versions = ", ".join(f"{name} {peers.version_of(name)}" for name in DISTRIBUTIONS)
    lines[-1:-1] = [
        "- machine: shared 2-core development box; absolute times drift with other jobs, "
        "the interleaved ratios are the figures to read",
        f"- clock: {peers.clock_note(settings)}; BLAS and torch threads count in full",
        f"- adcompile: {peers.adcompile_revision()}",
        f"- peers: {versions}{torch_note}",
        "- inputs: `tests/corpus/arrays.py` `bench_args` (seed 0), float64; torch and JAX "
        "convert the NumPy inputs inside the timed call; JAX results are blocked until ready",
    ]
    return lines


@dataclasses.dataclass(frozen=True)
class Plan:
    """What one run measures."""

    settings: Settings
    peers: frozenset[str]
    torch_threads: int = TORCH_THREADS


def configure_torch(chosen: Sequence[Peer], threads: int) -> str:
    """Set torch's intra-op threads if a chosen torch peer is installed; say what was set."""
    if not any(peer.requires == ("torch",) and peer.installed() for peer in chosen):
        return ""
    backends.load_torch().set_num_threads(threads)
    return f"; torch intra-op threads: {threads} (see `TORCH_THREADS`)"


def run_all(plan: Plan) -> tuple[list[ArrayResult], str]:
    """Measure every workload; return the results and the markdown report."""
    chosen = peers.chosen(PEERS, plan.peers)
    torch_note = configure_torch(chosen, plan.torch_threads)
    results = [run_array_case(case, chosen, plan.settings) for case in array_cases()]
    lines = [*report_header(plan.settings, torch_note), "## Gradients (median per call)", ""]
    for result in results:
        lines += case_table(result)
    lines += targets_section(results)
    return results, "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few samples (smoke run)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="report file")
    parser.add_argument("--no-output", action="store_true", help="print only")
    parser.add_argument("--samples", type=int, help="override the number of runtime samples")
    keys = ",".join(p.key for p in PEERS)
    parser.add_argument("--peers", default=keys, help=f"comma-separated subset of {keys}")
    parser.add_argument(
        "--torch-threads", type=int, default=TORCH_THREADS, help="torch intra-op threads"
    )
    parser.add_argument(
        "--clock",
        choices=sorted(peers.CLOCKS),
        default="cpu",
        help="cpu: process CPU time, all threads (default); wall: perf_counter",
    )
    return parser.parse_args(argv)


def plan_from(args: argparse.Namespace) -> Plan:
    """The Plan that the options describe."""
    settings = dataclasses.replace(QUICK if args.quick else FULL, clock=peers.CLOCKS[args.clock])
    if args.samples:
        settings = dataclasses.replace(settings, samples=args.samples)
    return Plan(settings, frozenset(filter(None, args.peers.split(","))), args.torch_threads)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the array benchmark; print the report and write it (unless ``--no-output``)."""
    args = parse_args(argv)
    return peers.report_main(args, lambda: run_all(plan_from(args))[1])


if __name__ == "__main__":
    sys.exit(main())
