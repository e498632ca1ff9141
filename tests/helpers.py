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
from typing import Any

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


def check_int_inputs(fn: Any, point: dict[str, Any], wrt: Any = None) -> None:
    """At int inputs the partials are floats, in both modes, equal to the unoptimised ones.

    This guards the simplifier's dropping of the seed's factor 1.0 (``floats.py``): dropped
    before an int, it would hand back an int. A point where the program fails or overflows
    is not checked (callers check float points as well)."""
    import math

    from adcompile import grad

    try:
        value = fn(**point)
        expected = grad(fn, wrt=wrt, optimize=False)(**point)
    except (ArithmeticError, ValueError):
        return
    if not math.isfinite(value):
        return
    expected = expected if isinstance(expected, tuple) else (expected,)
    for mode in ("reverse", "forward"):
        got = grad(fn, wrt=wrt, mode=mode)(**point)
        for partial, reference in zip(
            got if isinstance(got, tuple) else (got,), expected, strict=True
        ):
            assert type(partial) is float, f"{mode} mode at {point}: {partial!r} is not a float"
            same = math.isclose(partial, reference, rel_tol=1e-9, abs_tol=1e-12)
            assert same or (partial != partial and reference != reference), (
                f"{mode} mode at {point}: {partial!r}, unoptimised {reference!r}"
            )
