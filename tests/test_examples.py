"""Each example runs and prints what it promises."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_example(name: str) -> str:
    """Run ``examples/NAME`` and return its standard output."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_seed_prints_gradients_and_generated_code():
    out = run_example("seed.py")
    assert "(5.0, 5.0, 1.0)" in out
    assert "def f_grad(x, y, z):" in out
    assert "# adjoint of line" in out


def test_square_prints_two_x():
    out = run_example("square.py")
    for x in (1.0, 2.5, -3.0):
        assert f"at x = {x}: {2 * x}" in out
    assert "def square_grad(x):" in out
