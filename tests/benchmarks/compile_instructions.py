"""Compile cost in machine instructions: a noise-free companion to the compile-time table.

Run from the repository root (needs ``valgrind`` and ``git``)::

    python -m tests.benchmarks.compile_instructions [--statements 300 2000] [--runs 4]
                                                     [--base REV]

The development machine's speed drifts by up to 2x within minutes, so two wall-time
medians taken minutes apart cannot resolve a 5% change. Valgrind's cachegrind counts the
instructions a process executes, which does not depend on the machine's load. A driver
process compiles ``grad(f)`` for the generated ``n``-statement workload once to warm up and
then ``runs`` more times on fresh modules; it runs twice, with 0 and with ``runs`` extra
compiles, and the difference divided by ``runs`` is the cost of one compile. With
``--base REV``, the same is measured for the ``adcompile`` package of that git revision (the
workload generator is the working tree's), and the ratio is printed.

Instructions are not time: an instruction that misses the cache costs more than one that
hits. Read the counts to compare two versions of the code, and the wall-time table
(``straight_line.py``) for what a user waits.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# The driver: argv = package root, statements, extra runs. Imports `adcompile` from the root.
DRIVER = """\
import gc, sys
root, n, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sys.path[:0] = [root, {repo!r}]
from tests.benchmarks.workloads import PRIMAL_NAME, load_function, straight_line_source
import adcompile
source, _ = straight_line_source(n, 4, 0)
fresh = [source.replace("):\\n", f"):\\n    # run {{k}}\\n", 1) for k in range(runs + 1)]
functions = [load_function(f"icount_{{k}}", text, PRIMAL_NAME) for k, text in enumerate(fresh)]
for function in functions:
    gc.collect()
    adcompile.grad(function)
"""

_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def instruction_refs(valgrind_output: str) -> int:
    """The ``I refs`` total from cachegrind's summary on stderr."""
    match = _REFS.search(valgrind_output)
    if match is None:
        raise ValueError("no 'I refs' line in valgrind's output")
    return int(match.group(1).replace(",", ""))


def count(driver: Path, root: Path, statements: int, runs: int) -> int:
    """Instructions of one process that compiles the workload ``1 + runs`` times."""
    command = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        sys.executable,
        str(driver),
        str(root),
        str(statements),
        str(runs),
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # set orders, hence the work, repeat exactly
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the driver failed under valgrind:\n{done.stderr[-2000:]}")
    return instruction_refs(done.stderr)


def per_compile(driver: Path, root: Path, statements: int, runs: int) -> float:
    """Instructions of one ``grad(f)`` compile: the difference of two runs, per run."""
    return (count(driver, root, statements, runs) - count(driver, root, statements, 0)) / runs


def export_revision(revision: str, into: Path) -> Path:
    """The ``adcompile`` package of ``revision`` under ``into`` (via ``git archive``)."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", revision, "adcompile"],
        capture_output=True,
        check=True,
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def main(argv: list[str] | None = None) -> int:
    """Print the instructions per compile for each size, and the ratio to ``--base``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--statements", type=int, nargs="+", default=[300, 2000])
    parser.add_argument("--runs", type=int, default=4, help="compiles per measurement")
    parser.add_argument("--base", help="a git revision to compare with")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        driver = Path(tmp, "driver.py")
        driver.write_text(DRIVER.format(repo=str(REPO)))
        base_root = None
        if args.base:
            base_root = export_revision(args.base, Path(tmp, "base"))
        print("| statements | working tree (M instr) | base (M instr) | ratio |")
        print("|---:|---:|---:|---:|")
        for n in args.statements:
            new = per_compile(driver, REPO, n, args.runs) / 1e6
            if base_root is None:
                print(f"| {n:,} | {new:.1f} | | |")
                continue
            old = per_compile(driver, base_root, n, args.runs) / 1e6
            print(f"| {n:,} | {new:.1f} | {old:.1f} | {new / old:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
