"""Smoke tests of the instruction-count benchmark: its driver compiles, its parser reads
cachegrind's summary. Valgrind itself is not needed (nor run) here."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.benchmarks import compile_instructions as ci

CACHEGRIND_SUMMARY = """\
==123== Cachegrind, a high-precision tracing profiler
==123== I   refs:      2,814,170,871
"""


def test_instruction_refs_reads_the_summary_line() -> None:
    """The ``I refs`` figure, without its thousands separators."""
    assert ci.instruction_refs(CACHEGRIND_SUMMARY) == 2_814_170_871


def test_instruction_refs_rejects_output_without_a_summary() -> None:
    """A run that printed no summary is an error, not zero instructions."""
    with pytest.raises(ValueError, match="I refs"):
        ci.instruction_refs("==123== error: something else\n")


def test_driver_compiles_the_workload_under_plain_python(tmp_path) -> None:
    """The driver that valgrind runs imports adcompile from the given root and compiles."""
    driver = tmp_path / "driver.py"
    driver.write_text(ci.DRIVER.format(repo=str(ci.REPO)))
    probe = "\nprint(adcompile.__file__, len(functions))\n"
    driver.write_text(driver.read_text() + probe)
    done = subprocess.run(
        [sys.executable, str(driver), str(ci.REPO), "5", "2"],
        capture_output=True,
        text=True,
        check=True,
    )
    package, compiled = done.stdout.split()
    assert package.startswith(str(ci.REPO / "adcompile"))
    assert compiled == "3"  # one warm-up compile and two measured ones
