"""The command line: dump, check, error reporting and exit statuses."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from adcompile import grad
from adcompile.cli import main
from adcompile.rules import active_rules
from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "examples" / "seed.py"


def test_dump_prints_the_same_code_as_the_api():
    from examples.seed import f

    result = run_cli("dump", "examples/seed.py:f")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f.source
    assert "\x1b[" not in result.stdout  # no colour when stdout is not a terminal


def test_dump_with_wrt():
    result = run_cli("dump", "examples/seed.py:f", "--wrt", "x,z")
    assert result.returncode == 0
    assert "return b_x, b_z" in result.stdout


def test_dump_in_forward_mode_prints_the_api_text():
    from examples.seed import f

    result = run_cli("dump", "examples/seed.py:f", "--mode", "forward")
    assert result.returncode == 0, result.stderr
    assert result.stdout == grad(f.__wrapped__, mode="forward").source
    bad = run_cli("dump", "examples/seed.py:f", "--mode", "sideways")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def test_dump_of_a_module_function_imports_it():
    result = run_cli("dump", "examples.seed:f")
    assert result.returncode == 0, result.stderr
    assert "def f_grad(x, y, z):" in result.stdout


def test_dump_does_not_execute_the_file(tmp_path):
    marker = tmp_path / "ran"
    script = tmp_path / "side_effect.py"
    script.write_text(
        f"import math\nopen({str(marker)!r}, 'w').close()\n\n\ndef f(x):\n    return math.sin(x)\n"
    )
    result = run_cli("dump", f"{script}:f")
    assert result.returncode == 0, result.stderr
    assert "math.cos(x)" in result.stdout
    assert not marker.exists()


def test_dumped_module_runs_without_adcompile(tmp_path):
    dumped = tmp_path / "seed_grad.py"
    dumped.write_text(run_cli("dump", "examples/seed.py:f").stdout)
    code = "import sys; sys.modules['adcompile'] = None\nimport seed_grad\n"
    code += "print(seed_grad.f_grad(4.0, -3.0, 5.0))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "(5.0, 5.0, 1.0)"


def test_unsupported_code_is_one_located_error(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "def f(x):\n    try:\n        x = x * 2\n    finally:\n        pass\n    return x\n"
    )
    result = run_cli("dump", f"{bad}:f")
    assert result.returncode == 1
    assert result.stdout == ""
    first, shown, caret = result.stderr.splitlines()
    assert first.startswith(f"{bad}:2:5: error: `try` is not supported")
    assert shown.strip() == "try:"
    assert caret.strip() == "^"
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "status", "fragment"),
    [
        (("dump", "examples/seed.py:nope"), 1, "no top-level function 'nope'"),
        (("dump", "missing.py:f"), 1, "cannot read missing.py"),
        (("dump", "no_such_module_xyz:f"), 1, "cannot import module"),
        (("dump", "examples/seed.py:f", "--wrt", "w"), 2, "'w' is not a parameter"),
        (("dump", "examples/seed.py"), 2, "expected PATH.py:FUNC"),
        (("check", "examples/seed.py:f", "--at", "x=4,y=-3"), 2, "missing a value for z"),
        (("check", "examples/seed.py:f", "--at", "x=4,y=-3,z=abc"), 2, "not a number"),
        (("check", "examples/seed.py:f", "--at", "x=4,y=-3,z=5,w=1"), 2, "not a parameter"),
        (("check", "examples/seed.py:f", "--at", "x4"), 2, "name=value"),
        (("frobnicate",), 2, "invalid choice"),
    ],
)
def test_bad_input_is_one_line_and_a_status(args, status, fragment):
    result = run_cli(*args)
    assert result.returncode == status
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr


def test_check_passes_on_the_seed():
    result = run_cli("check", "examples/seed.py:f", "--at", "x=4,y=-3,z=5")
    assert result.returncode == 0, result.stderr
    assert "OK: matches SymPy" in result.stdout
    assert "x=4, y=-3, z=5" in result.stdout


def test_check_reports_a_wrong_rule(capsys, tmp_path):
    def wrong_sin(x, result, g):
        return g * math.sin(x)  # deliberately wrong: should be cos

    target = tmp_path / "uses_sin.py"
    target.write_text("import math\n\n\ndef f(x, y):\n    return math.sin(x) * y\n")
    with active_rules().scope() as rules:
        rules.register(math.sin, wrong_sin)
        status = main(["check", f"{target}:f", "--at", "x=0.5,y=2"])
    out = capsys.readouterr().out
    assert status == 1
    assert "MISMATCH" in out


def test_check_uses_random_points_when_none_are_given():
    result = run_cli("check", "examples/seed.py:f")
    assert result.returncode == 0
    assert result.stdout.count("| ok") >= 9


def test_rule_scopes_do_not_leak():
    def wrong_sin(x, result, g):
        return 0.0 * g

    with active_rules().scope() as rules:
        rules.register(math.sin, wrong_sin)
    assert grad(math_sin_user)(0.0) == 1.0


def math_sin_user(x):
    return math.sin(x)


LOOP_FILE = """
import math


def euler(a, y, n):
    for i in range(n):
        y = y + 0.1 * (-a * y + math.sin(0.1 * i))
    return y


def helper(t, scale=2.0):
    return scale * t * t


def uses_helper(x):
    if x > 0:
        return helper(x, scale=3.0)
    return helper(x)
"""


def test_check_falls_back_to_mpmath_for_loops(tmp_path):
    target = tmp_path / "loops.py"
    target.write_text(LOOP_FILE)
    result = run_cli("check", f"{target}:euler", "--at", "a=0.7,y=1.2,n=6", "--wrt", "a,y")
    assert result.returncode == 0, result.stderr
    assert "OK: matches the mpmath reference" in result.stdout
    assert "n=6" in result.stdout  # an integer stays an int: it is a loop count


DEFAULTS_FILE = """
def scaled(x, k=3.0, n=2, label="unused"):
    return k * x ** n
"""


def test_a_point_may_leave_out_parameters_with_number_defaults(tmp_path):
    target = tmp_path / "defaults.py"
    target.write_text(DEFAULTS_FILE)
    checked = run_cli("check", f"{target}:scaled", "--at", "x=2,label=1", "--wrt", "x")
    assert checked.returncode == 0, checked.stderr
    assert "x=2, k=3.0, n=2, label=1" in checked.stdout  # the defaults, as the call takes them
    explained = run_cli("explain", f"{target}:scaled", "--at", "x=2,k=0.5,label=1", "--wrt", "x")
    assert explained.returncode == 0, explained.stderr
    assert "scaled(x=2, k=0.5, n=2, label=1) = 2" in explained.stdout
    assert "dscaled/dx = 2" in explained.stdout  # 2 * k * x
    missing = run_cli("check", f"{target}:scaled", "--at", "x=2")  # a str default is no number
    assert missing.returncode == 2
    assert "missing a value for label" in missing.stderr


def test_check_of_a_loop_needs_a_point(tmp_path):
    target = tmp_path / "loops.py"
    target.write_text(LOOP_FILE)
    result = run_cli("check", f"{target}:euler")
    assert result.returncode == 2
    assert "give a point with --at" in result.stderr


def test_check_and_dump_follow_calls_in_the_same_file(tmp_path):
    target = tmp_path / "loops.py"
    target.write_text(LOOP_FILE)
    dumped = run_cli("dump", f"{target}:uses_helper")
    assert dumped.returncode == 0, dumped.stderr
    assert "of helper in loops.py" in dumped.stdout  # comments name the inlined callee
    for x in ("0.8", "-0.6"):
        result = run_cli("check", f"{target}:uses_helper", "--at", f"x={x}")
        assert result.returncode == 0, result.stdout + result.stderr
