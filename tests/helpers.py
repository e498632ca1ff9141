"""Shared test helpers: source text as real module files, and the command line as a user runs it."""

from __future__ import annotations

import importlib.util
import itertools
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

_COUNTER = itertools.count()
ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """Run ``python -m adcompile`` in a subprocess (as a user would)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "adcompile", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        check=False,
    )


def module_from_source(directory: Path, text: str) -> types.ModuleType:
    """Write ``text`` (dedented) to a fresh .py file in ``directory`` and import it."""
    name = f"adcompile_case_{next(_COUNTER)}"
    path = directory / f"{name}.py"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def function_from_source(directory: Path, text: str, name: str = "f") -> types.FunctionType:
    """The function ``name`` defined by ``text``."""
    return getattr(module_from_source(directory, text), name)
