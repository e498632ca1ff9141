"""The command line on awkward input: a target's name bound again, imports that misbehave,
odd encodings, closed streams, bad points. Each case was a traceback, an internal error, a
misleading message or a silently wrong answer."""

from __future__ import annotations

import pytest

from adcompile.cli import main
from tests.helpers import module_from_source

SQUARE = "def f(x):\n    return x * x\n"


def _numeric_derivative(fn, x: float) -> float:
    h = 1e-6
    return (fn(x + h) - fn(x - h)) / (2 * h)


def _line_of(text: str, fragment: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if fragment in line)


@pytest.mark.parametrize(
    ("rebinding", "fragment", "column"),
    [
        ("def g(x):\n    return x * x * x\n\nf = g\n", "f = g", 1),
        ("f = 3\n", "f = 3", 1),
        ("import os\nif os.sep:\n    f = abs\n", "    f = abs", 5),  # the assignment's f
        ("from fractions import f\n", "from fractions import f", 23),  # the imported name
        ("from collections import *\n", "from collections import *", 1),
        ("def h():\n    global f\n    f = abs\n", "global f", 5),
        ("for f in range(2):\n    pass\n", "for f in", 5),
    ],
)
def test_a_file_target_bound_again_after_its_def_is_refused(
    capsys, tmp_path, rebinding, fragment, column
):
    """`def f` ... `f = g`: dump differentiated the def while the module's f is g, and check
    said OK. Refused, located at what binds the name again."""
    text = SQUARE + "\n" + rebinding
    target = tmp_path / "rebound.py"
    target.write_text(text)
    assert main(["dump", f"{target}:f"]) == 1
    out, err = capsys.readouterr()
    line = _line_of(text, fragment)
    assert err.startswith(f"{target}:{line}:{column}: error: f is bound again here")
    assert "may stand for another function" in err and out == ""
    assert main(["check", f"{target}:f", "--at", "x=2"]) == 1
    assert "bound again" in capsys.readouterr().err


@pytest.mark.parametrize(
    "after",
    [
        "print([f for f in range(3)])\n",  # a comprehension's variable stays in it
        "from math import *\n",  # math has no public `f`
        "f: int\n",  # an annotation alone binds nothing
        "def g(f):\n    f = 2\n    return f\n",  # another scope
        "def f(x):\n    return x * x * x\n",  # a second def: the module's f is this one
    ],
)
def test_a_file_target_s_name_used_but_not_rebound_is_read(capsys, tmp_path, after):
    text = "f = 1.0\n" + SQUARE + after
    target = tmp_path / "kept.py"
    target.write_text(text)
    module = module_from_source(tmp_path, text)
    assert main(["dump", f"{target}:f"]) == 0, capsys.readouterr().err
    dumped: dict = {}
    exec(capsys.readouterr().out, dumped)
    expected = _numeric_derivative(module.f, 1.5)  # the module's f, run
    assert dumped["f_grad"](1.5) == pytest.approx(expected, rel=1e-7)
