"""``examples/mlp.py`` trains its tiny MLP with adcompile's gradient and prints the loss falling."""

from __future__ import annotations

import importlib.util
import itertools
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "mlp.py"


def run_example(*args: str) -> str:
    """Run ``examples/mlp.py`` with the current interpreter and return its standard output."""
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def load_example() -> types.ModuleType:
    """The example as a module (its data, without training)."""
    spec = importlib.util.spec_from_file_location("mlp_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mlp_example_loss_falls_to_near_the_noise() -> None:
    out = run_example()
    steps = [(int(s), float(v)) for s, v in re.findall(r"step +(\d+): loss (\d+\.\d+)", out)]
    assert [s for s, _ in steps] == list(range(0, 501, 50))
    losses = [v for _, v in steps]
    assert all(b < a for a, b in itertools.pairwise(losses)), losses
    assert losses[-1] < losses[0] / 10
    # Baselines from the example's own data: a constant prediction (the mean) scores var(y);
    # no model can do much better than the noise variance.
    example = load_example()
    _, y = example.make_data()
    noise = example.NOISE**2
    assert 0.5 * noise < losses[-1] < 0.2 * float(np.var(y))
    match = re.search(r"new examples the loss is (\d+\.\d+)", out)
    assert match is not None
    fresh = float(match.group(1))
    assert 0.5 * noise < fresh < 0.2 * float(np.var(example.make_data(seed=2)[1]))
    assert "def loss_grad(params, X, y):" in out  # the generated code is shown


def test_mlp_example_plot_is_optional(tmp_path: Path) -> None:
    png = tmp_path / "loss.png"
    out = run_example("--steps", "3", "--plot", str(png))
    if importlib.util.find_spec("matplotlib") is None:
        assert "matplotlib is not installed" in out
        assert not png.exists()
    else:
        assert png.read_bytes().startswith(b"\x89PNG")
