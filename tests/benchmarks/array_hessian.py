"""Hessians of NumPy code (issue 7): adcompile against a hand-written Hessian, JAX, torch, autograd.

Run from the repository root::

    python -m tests.benchmarks.array_hessian [--quick] [--output PATH] [--no-output]

Workloads (float64, seed 0):

- ``energy``: ``x @ A @ x + sum(sin(x)) + sum(tanh(W @ x))`` with x: 10, A: 10x10, W: 20x10;
  the Hessian in x (10x10).
- ``logistic``: the L2-regularised logistic loss ``sum(log1p(exp(-y * (X @ w)))) +
  0.5 * sum(w * w)`` with X: 200x20; the Hessian in w (20x20).

Each has a hand-written closed-form Hessian. Every peer's Hessian is checked against it
(``np.allclose`` at rtol ``RTOL``) before timing; a wrong one is reported and not timed. The
rows are timed interleaved in one process with the machinery of ``peers`` (per-call medians of
process CPU time). adcompile's compile time and ``jax.jit``'s first call are reported apart.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import peers
from .straight_line import FULL, QUICK, Settings, header_lines

RTOL = 1e-8
DEFAULT_OUTPUT = Path(__file__).with_name("array_hessian_results.md")
DISTRIBUTIONS = ("numpy", "jax", "torch", "autograd")


def energy(x, A, W):
    return x @ A @ x + np.sum(np.sin(x)) + np.sum(np.tanh(W @ x))


def energy_hessian(x, A, W):
    t = np.tanh(W @ x)
    return A + A.T - np.diag(np.sin(x)) + W.T @ ((-2.0 * t * (1.0 - t * t))[:, None] * W)


def logistic(w, X, y):
    return np.sum(np.log1p(np.exp(-y * (X @ w)))) + 0.5 * np.sum(w * w)


def logistic_hessian(w, X, y):
    s = 1.0 / (1.0 + np.exp(-y * (X @ w)))
    return X.T @ ((s * (1.0 - s))[:, None] * X) + np.eye(len(w))


@dataclasses.dataclass(frozen=True)
class Workload:
    """A scalar NumPy function, its inputs (the first is differentiated) and its Hessian."""

    name: str
    description: str
    fn: Callable[..., Any]
    hand: Callable[..., Any]
    args: tuple[np.ndarray, ...]


def workloads() -> list[Workload]:
    """The two workloads, inputs drawn from a generator seeded with 0."""
    rng = np.random.default_rng(0)
    x, A, W = rng.normal(size=10), rng.normal(size=(10, 10)), 0.3 * rng.normal(size=(20, 10))
    w, X = 0.1 * rng.normal(size=20), rng.normal(size=(200, 20))
    y = np.sign(rng.normal(size=200))
    return [
        Workload(
            "energy",
            "x @ A @ x + sum(sin x) + sum(tanh(W @ x)), H in x: 10x10",
            energy,
            energy_hessian,
            (x, A, W),
        ),
        Workload(
            "logistic",
            "L2 logistic loss, X: 200x20, H in w: 20x20",
            logistic,
            logistic_hessian,
            (w, X, y),
        ),
    ]


# ----- the peers: each returns (hessian function of the inputs, set-up seconds, label) ------
Built = tuple[Callable[..., Any], float | None, str]


def build_adcompile(work: Workload) -> Built:
    """``adcompile.hessian`` (forward over reverse); compile time apart."""
    import adcompile

    start = time.perf_counter()
    fn = adcompile.hessian(work.fn, wrt=0)
    return fn, time.perf_counter() - start, "compile"


def build_jax(work: Workload, jit: bool) -> Built:
    """``jax.hessian`` eager, or under ``jax.jit`` (first call apart)."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    primal = peer_function(work.fn, jnp)
    transformed = jax.hessian(primal)
    if not jit:
        return (lambda *a: np.asarray(transformed(*a).block_until_ready())), None, ""
    compiled = jax.jit(transformed)
    start = time.perf_counter()
    compiled(*work.args).block_until_ready()
    return (
        (lambda *a: np.asarray(compiled(*a).block_until_ready())),
        (time.perf_counter() - start),
        "first call",
    )


def build_torch(work: Workload) -> Built:
    """``torch.autograd.functional.hessian`` in the first input (the others constants)."""
    import torch
    from torch.autograd import functional

    torch.set_num_threads(1)
    primal = peer_function(work.fn, torch)

    def hessian(first: np.ndarray, *rest: np.ndarray) -> np.ndarray:
        constants = [torch.from_numpy(r) for r in rest]
        return functional.hessian(lambda v: primal(v, *constants), torch.from_numpy(first))

    return (lambda *a: hessian(*a).numpy()), None, ""


def build_autograd(work: Workload) -> Built:
    """HIPS ``autograd.hessian``."""
    import autograd
    import autograd.numpy as anp

    return autograd.hessian(peer_function(work.fn, anp)), None, ""


def peer_function(fn: Callable[..., Any], np_module: object) -> Callable[..., Any]:
    """``fn``'s own code with ``np`` bound to another library's NumPy."""
    namespace = {**fn.__globals__, "np": np_module}
    return type(fn)(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)


PEERS: tuple[tuple[str, str, Callable[[Workload], Built]], ...] = (
    ("adcompile", "adcompile.hessian", build_adcompile),
    ("jax", "jax.hessian (eager)", lambda w: build_jax(w, jit=False)),
    ("jax_jit", "jax.jit(jax.hessian)", lambda w: build_jax(w, jit=True)),
    ("torch", "torch.autograd.functional.hessian", build_torch),
    ("autograd", "autograd.hessian", build_autograd),
)


def prepared_row(key: str, label: str, build: Callable, work: Workload, ref: np.ndarray):
    """Build and check one peer: (entry, function to time, or None)."""
    entry = peers.Entry(label, key)
    try:
        fn, entry.setup_s, entry.setup_label = build(work)
        got = np.asarray(fn(*work.args))
    except ImportError:
        entry.status = peers.NOT_INSTALLED
        return entry, None
    except Exception as exc:
        entry.status = f"failed ({type(exc).__name__})"
        entry.detail = " ".join(str(exc).split())[:200]
        return entry, None
    if got.shape != ref.shape or not np.allclose(got, ref, rtol=RTOL, atol=RTOL):
        entry.status, entry.detail = peers.WRONG, f"max error {np.max(np.abs(got - ref)):.3g}"
        return entry, None
    return entry, fn


def run_workload(work: Workload, keys: frozenset[str], settings: Settings) -> list[str]:
    """Check and time every row of one workload; its markdown table."""
    ref = work.hand(*work.args)
    rows = [(peers.Entry("primal", "primal"), work.fn)]
    rows.append((peers.Entry("hand-written Hessian", "hand"), work.hand))
    entries = [entry for entry, _ in rows]
    for key, label, build in PEERS:
        if key not in keys:
            continue
        entry, fn = prepared_row(key, label, build, work, ref)
        entries.append(entry)
        if fn is not None:
            rows.append((entry, fn))
    peers.time_rows(rows, work.args, settings)
    primal, hand = entries[0].median_ns, entries[1].median_ns
    lines = [
        f"### {work.name}: {work.description}",
        "",
        "| Hessian | median µs per call | × primal | × hand-written | samples | set-up / compile |",
        "|---|---:|---:|---:|---:|---|",
    ]
    lines += [peers.table_row(entry, primal, hand) for entry in entries]
    lines += [f"- {e.label}: {e.status}: {e.detail}" for e in entries if e.detail]
    return [*lines, ""]


def report(settings: Settings, keys: frozenset[str]) -> str:
    """The whole markdown report."""
    lines = header_lines(settings)
    lines[0] = "# adcompile benchmark: Hessians of NumPy code against the peers"
    versions = ", ".join(f"{name} {peers.version_of(name)}" for name in DISTRIBUTIONS)
    lines[-1:-1] = [
        f"- clock: {peers.clock_note(settings)}; torch on one thread",
        f"- adcompile: {peers.adcompile_revision()}",
        f"- peers: {versions}",
    ]
    for work in workloads():
        lines += run_workload(work, keys, settings)
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few samples (a smoke run)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--no-output", action="store_true", help="print only")
    parser.add_argument("--peers", default=",".join(key for key, _, _ in PEERS))
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the report and write it."""
    args = parse_args(argv)
    settings = dataclasses.replace(QUICK if args.quick else FULL, clock=time.process_time_ns)
    keys = frozenset(args.peers.split(","))
    return peers.report_main(args, lambda: report(settings, keys))


if __name__ == "__main__":
    raise SystemExit(main())
