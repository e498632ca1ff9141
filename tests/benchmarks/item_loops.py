"""NumPy loops over the items of an array: does the gradient stay linear in the loop's length?

Run from the repository root::

    python -m tests.benchmarks.item_loops [--quick] [--output PATH]

The workload reads one item per iteration, ``s = s * w + x[i]``, gradient w.r.t. (x, w), at
1,000, 4,000 and 16,000 items. The adjoint of ``x[i]`` once made a new array the size of ``x``
per iteration (36x, 50x and 95x the function at these sizes); it is now added in place into
the reverse loop's own accumulator (``adcompile/in_place.py``). For each size the primal,
adcompile's gradient and a hand-written gradient (a forward loop storing ``s``, then a
reverse loop writing ``gx[i]``) are timed interleaved with the machinery of
``straight_line`` (round-robin, rotating order, gc disabled, per-call medians). Before timing,
adcompile's gradient is compared with the hand-written one (rtol 1e-12); a mismatch aborts.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .straight_line import FULL, QUICK, BenchmarkError, Candidate, Settings, header_lines, measure
from .workloads import load_function

SIZES = (1_000, 4_000, 16_000)
QUICK_SIZES = (100, 400)
W = 0.999
DEFAULT_OUTPUT = Path(__file__).with_name("item_loops_results.md")

SOURCE = """\
import numpy as np


def recurrence(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        s = s * w + x[i]
    return s


def recurrence_grad(x, w):
    n = x.shape[0]
    values = []
    s = 0.0
    for i in range(n):
        values.append(s)
        s = s * w + x[i]
    gx = np.empty_like(x)
    gw = 0.0
    gs = 1.0
    for i in range(n - 1, -1, -1):
        gx[i] = gs
        gw += gs * values[i]
        gs = gs * w
    return gx, gw
"""


@dataclasses.dataclass(frozen=True)
class Row:
    """Per-call medians (ns) at one size."""

    size: int
    primal: float
    adcompile: float
    hand: float


def functions() -> tuple:
    """The primal, adcompile's gradient and the hand-written gradient."""
    from adcompile import grad

    primal = load_function("item_loops_bench", SOURCE, "recurrence")
    hand = load_function("item_loops_bench_hand", SOURCE, "recurrence_grad")
    return primal, grad(primal), hand


def check(generated, hand, x: np.ndarray) -> None:
    """adcompile's gradient equals the hand-written one, or the benchmark stops."""
    got, want = generated(x, W), hand(x, W)
    for part, expected in zip(got, want, strict=True):
        if not np.allclose(part, expected, rtol=1e-12, atol=1e-12):
            raise BenchmarkError(f"item loop at {x.size} items: adcompile's gradient differs")


def run(sizes: Sequence[int], settings: Settings) -> list[Row]:
    """Time the three functions at each size."""
    primal, generated, hand = functions()
    rows = []
    for size in sizes:
        x = np.random.default_rng(size).normal(size=size)
        check(generated, hand, x)
        candidates = [Candidate(label, fn, (x, W)) for label, fn in
                      (("primal", primal), ("adcompile", generated), ("hand", hand))]  # fmt: skip
        measure(candidates, settings)
        rows.append(Row(size, *(c.median() for c in candidates)))
    return rows


def table(rows: Sequence[Row]) -> list[str]:
    """The markdown table, and the growth of the gradient's time with the size."""
    lines = [
        "| items | primal | adcompile grad | hand-written grad | grad/primal | hand/primal "
        "| adcompile/hand |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.size:,} | {r.primal / 1e3:,.1f} µs | {r.adcompile / 1e3:,.1f} µs "
            f"| {r.hand / 1e3:,.1f} µs | {r.adcompile / r.primal:.2f} | {r.hand / r.primal:.2f} "
            f"| {r.adcompile / r.hand:.2f} |"
        )
    first, last = rows[0], rows[-1]
    growth = (last.adcompile / first.adcompile) / (last.size / first.size)
    lines += ["", f"gradient time per item, {last.size:,} against {first.size:,}: {growth:.2f}"]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the report and write it to ``--output``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few samples")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL
    rows = run(QUICK_SIZES if args.quick else SIZES, settings)
    header = header_lines(settings)
    header[0] = "# adcompile benchmark: NumPy loops over items"
    text = "\n".join([*header, *table(rows)]) + "\n"
    print(text)
    args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
