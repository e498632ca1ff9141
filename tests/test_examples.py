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
    # The forward-mode gradient it prints: the tangent of cosh is sinh, and the module runs.
    printed = out[out.index("# forward-mode grad of energy") :]
    assert "math.sinh(x - 1.0)" in printed
    namespace: dict[str, object] = {}
    exec(compile(printed, "printed", "exec"), namespace)
    for point in (-1.5, 0.25, 2.0):
        assert math.isclose(namespace["energy_grad"](point), math.sinh(point - 1.0) + point)


def test_logistic_newton_converges_with_a_generated_hessian():
    import importlib.util
    import re

    import numpy as np

    out = run_example("logistic_newton.py")
    norms = [float(n) for n in re.findall(r"\|gradient\| (\S+)", out)]
    assert len(norms) == 8 and norms[-1] < 1e-8
    assert norms[-1] < norms[-2] ** 1.5  # quadratic convergence at the end
    assert "def loss_grad_jvp(" in out  # the generated Hessian code it prints
    spec = importlib.util.spec_from_file_location(
        "logistic_newton", ROOT / "examples" / "logistic_newton.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    X, y = module.make_data()
    *_, (_, w, _, _) = module.newton(X, y)
    # The loss's gradient, written out by hand, vanishes at the fitted weights.
    margins = y * (X @ w)
    by_hand = -X.T @ (y / (1.0 + np.exp(margins))) + module.REGULARISATION * w
    assert np.linalg.norm(by_hand) < 1e-8
