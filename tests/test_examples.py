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


def test_newton_converges_with_generated_second_derivatives():
    import math
    import re

    out = run_example("newton.py")
    steps = re.findall(r"x = (-?\d+\.\d+), energy'\(x\)", out)
    assert len(steps) == 6
    x = float(steps[-1])
    # energy'(x) = sinh(x - 1) + x, written out by hand: Newton has found its root.
    assert abs(math.sinh(x - 1.0) + x) < 1e-11
    # bowl's Hessian, by hand: d2/dx2 = 2, d2/dy2 = 6, d2/dxdy = 0.5.
    assert "((2.0, 0.5), (0.5, 6.0))" in out
    assert "dx_dx = 1.0" in out  # the forward-mode gradient it prints
