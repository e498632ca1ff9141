"""The command line: dump, check, error reporting and exit statuses."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adcompile import grad
from adcompile.cli import main
from adcompile.rules import active_rules
from tests.helpers import module_from_source, run_cli

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


def test_a_module_constant_computed_by_an_expression_is_named_as_such(capsys, tmp_path):
    target = tmp_path / "computed.py"
    target.write_text("K = 2 * 3.0\n\n\ndef f(x):\n    return K * x * x\n")
    assert main(["dump", f"{target}:f"]) == 1
    err = capsys.readouterr().err
    assert f"{target}:5:12: error: `K` comes from `K = 2 * 3.0` at module level" in err
    assert "package.module:FUNC" in err
    (tmp_path / "importer.py").write_text(
        "from elsewhere import sq\n\n\ndef f(x):\n    return sq(x)\n"
    )
    assert main(["dump", f"{tmp_path / 'importer.py'}:f"]) == 1
    assert "`sq` comes from `from elsewhere import sq` at module level" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("module_code", "shown"),
    [
        ("K = 3.0\nK += 1.0\n", "K += 1.0"),
        ("K = 3.0\nif True:\n    K = 7.0\n", "if True:"),
        ("K = 3.0\nfor K in (1.0, 2.0):\n    pass\n", "for K in (1.0, 2.0):"),
        ("K = 3.0\nK, M = divmod(9.0, 2.0)\n", "K, M = divmod(9.0, 2.0)"),
    ],
)
def test_a_module_constant_rebound_by_running_code_is_not_taken_from_its_literal(
    capsys, tmp_path, module_code, shown
):
    """Read without running the file, `K = 3.0` then `K += 1.0` gave K = 3.0 silently."""
    target = tmp_path / "rebound.py"
    target.write_text(f"{module_code}\n\ndef f(x):\n    return K * x\n")
    assert main(["dump", f"{target}:f"]) == 1
    assert f"`K` comes from `{shown}` at module level" in capsys.readouterr().err


KINKS_FILE = """
def clamp(x):
    return min(x, 1.0) * 2


def floor_sum(x):
    s = 0.0
    for i in range(3):
        s = s + (x if x > 1.0 else 1.0)
    return s


def square(x):
    return x * x
"""


def test_check_accepts_a_one_sided_derivative_on_a_kink(capsys, tmp_path):
    # mpmath's central difference averages the two sides of a kink; the gradient follows
    # the side Python's comparison picks. A tie of min/max splits the adjoint, which is
    # SymPy's Heaviside(0) = 1/2 too: the average, with no one-sided note.
    target = tmp_path / "kinks.py"
    target.write_text(KINKS_FILE)
    assert main(["check", f"{target}:clamp", "--at", "x=1.0"]) == 0
    out = capsys.readouterr().out
    assert "x         | x=1.0 | 1.0      | 1.0 |" in out and "OK: matches SymPy\n" in out
    assert main(["check", f"{target}:floor_sum", "--at", "x=1.0"]) == 0
    out = capsys.readouterr().out
    assert "(0.0 from the left, 3.0 from the right" in out and "gives the left one" in out
    assert main(["check", f"{target}:square", "--at", "x=nan"]) == 0  # SymPy refuses nan
    assert "x=nan | nan      | nan" in capsys.readouterr().out

    def wrong_min(a, b, result, g):
        return (0.0 if b < a else 3.0 * g), (g if b < a else 0.0)  # neither side: 3 * 2

    with active_rules().scope() as rules:
        rules.register(min, wrong_min)
        assert main(["check", f"{target}:clamp", "--at", "x=1.0"]) == 1
    assert "MISMATCH" in capsys.readouterr().out


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
    assert f"{target}:6:5: for loops are not supported by the SymPy reference" in result.stderr


def test_check_and_dump_follow_calls_in_the_same_file(tmp_path):
    target = tmp_path / "loops.py"
    target.write_text(LOOP_FILE)
    dumped = run_cli("dump", f"{target}:uses_helper")
    assert dumped.returncode == 0, dumped.stderr
    assert "of helper in loops.py" in dumped.stdout  # comments name the inlined callee
    for x in ("0.8", "-0.6"):
        result = run_cli("check", f"{target}:uses_helper", "--at", f"x={x}")
        assert result.returncode == 0, result.stdout + result.stderr


# --- failures at the point, odd files and module targets: clean errors, never a traceback --------
FAILING = """
import math


def loop(x, n):
    s = 0.0
    for i in range(n):
        s = s + x ** i
    return s


def ratio(x, y):
    return x / y


T = (1.0, 2.0)


def lookup(x, i):
    return x * T[i]
"""


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("check", "loop", "--at", "x=0.5,n=4"), "leave it out with --wrt"),
        (("check", "ratio", "--at", "x=1,y=0"), "ZeroDivisionError"),
        (("explain", "loop", "--at", "x=0.5,n=4.0"), "TypeError"),
        # An IndexError is the function failing there too: the point and the line, as above.
        (("explain", "lookup", "--at", "x=1.5,i=5", "--wrt", "x"), "IndexError: tuple index"),
        (("explain", "lookup", "--at", "x=1.5,i=5", "--wrt", "x"), "at x=1.5,i=5, in line 20"),
        (("check", "lookup", "--at", "x=1.5,i=5", "--wrt", "x"), "at x=1.5,i=5"),
    ],
)
def test_a_function_failing_at_the_point_is_an_error_not_a_crash(tmp_path, capsys, args, fragment):
    target = tmp_path / "failing.py"
    target.write_text(FAILING)
    command, func, *rest = args
    assert main([command, f"{target}:{func}", *rest]) == 1
    err = capsys.readouterr().err
    assert fragment in err and "internal error" not in err


def test_the_point_names_each_parameter_once(capsys):
    assert main(["check", "examples/seed.py:f", "--at", "x=1,y=2,z=3,x=4"]) == 2
    assert "--at gives x twice" in capsys.readouterr().err
    assert main(["check", "examples/seed.py:f", "--at", ""]) == 2


def test_files_are_read_in_the_encoding_python_would_use(tmp_path, capsys):
    cookie = tmp_path / "cookie.py"
    cookie.write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\ndef f(x):\n    return x * x\n")
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbfdef f(x):\n    return x * x\n")
    for path in (cookie, bom):
        assert main(["dump", f"{path}:f"]) == 0
        assert "b_x = 2.0 * (b_f * x)" in capsys.readouterr().out
    undecodable = tmp_path / "latin.py"
    undecodable.write_bytes(b"# caf\xe9\ndef f(x):\n    return x * x\n")
    assert main(["dump", f"{undecodable}:f"]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_module_targets_import_from_the_current_directory(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    package = tmp_path / "clipkg_targets"
    package.mkdir()
    (package / "__init__.py").write_text("def f(x):\n    return x * x\n\n\nclass C:\n    pass\n")
    (package / "broken.py").write_text("raise RuntimeError('boom at import')\n")
    (package / "bad_syntax.py").write_text("def f(x):\n    return x +\n")
    assert main(["dump", "clipkg_targets:f"]) == 0
    assert "b_x = 2.0 * (b_f * x)" in capsys.readouterr().out
    for target, status, fragment in [
        ("clipkg_targets:C", 1, "is a type, not a function"),
        ("clipkg_targets.broken:f", 1, "RuntimeError: boom at import"),
        ("clipkg_targets.bad_syntax:f", 1, "bad_syntax.py:2:"),
    ]:
        assert main(["dump", target]) == status
        err = capsys.readouterr().err
        assert fragment in err and "internal error" not in err


def test_rules_in_a_file_read_without_running_it_are_noted(tmp_path, capsys):
    target = tmp_path / "with_rule.py"
    target.write_text(
        "from adcompile import derivative\n\n\ndef sq(x):\n    return x * x\n\n\n"
        "@derivative(sq)\ndef sq_rule(x, result, g):\n    return g * 2.0 * x\n"
    )
    assert main(["dump", f"{target}:sq"]) == 0
    assert "apply only when the module runs" in capsys.readouterr().err


def test_a_closed_pipe_ends_the_output_quietly(tmp_path):
    target = tmp_path / "long.py"
    target.write_text("def f(x):\n    for i in range(30):\n        x = x * 0.999\n    return x\n")
    command = [sys.executable, "-m", "adcompile", "explain", f"{target}:f", "--at", "x=1", "--all"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    process.stdout.close()  # before the command has imported adcompile, let alone written
    status = process.wait(timeout=120)
    with process.stderr:
        assert process.stderr.read() == b""
    assert status == 1


def test_static_defaults_are_read_not_written_as_none(capsys, tmp_path):
    """A default naming a module constant was written `clip=None` (a different gradient)."""
    target = tmp_path / "defaults.py"
    target.write_text(
        "CLIP = True\nN = 3\n\n\ndef f(x, clip=CLIP, n=N):\n"
        "    if clip:\n        x = min(x, 1.0)\n    return x * x * n\n\n\n"
        "def g(x, u=2 ** 3):\n    return x * u\n"
    )
    assert main(["dump", f"{target}:f"]) == 0
    assert "def f_grad(x, clip=True, n=3):" in capsys.readouterr().out
    assert main(["dump", f"{target}:g"]) == 1
    err = capsys.readouterr().err
    assert f"{target}:11:12: error: the default of `u` is `2 ** 3`, which is known only by" in err


def test_check_of_a_file_runs_none_of_its_code(capsys, tmp_path):
    """The mpmath reference defined every function of the file, running its defaults."""
    marker = tmp_path / "ran.txt"
    target = tmp_path / "quiet.py"
    target.write_text(
        "def f(x, n=3):\n    s = 0.0\n    for i in range(n):\n        s = s + x * i\n"
        f"    return s\n\n\ndef other(z=open({str(marker)!r}, 'w').write('x')):\n"
        "    return z\n"
    )
    assert main(["check", f"{target}:f", "--at", "x=1.5", "--wrt", "x"]) == 0
    assert "OK: matches the mpmath reference" in capsys.readouterr().out
    assert not marker.exists()


def test_static_mode_follows_star_imports_and_global_statements(capsys, tmp_path):
    star = tmp_path / "star.py"
    star.write_text("from math import *\n\n\ndef f(x):\n    return sin(x) * exp(x)\n")
    assert main(["dump", f"{star}:f"]) == 0
    assert "math.cos(x)" in capsys.readouterr().out
    configured = tmp_path / "configured.py"
    configured.write_text(
        "M = 1.0\n\n\ndef configure():\n    global M\n    M = 5.0\n\n\n"
        "configure()\n\n\ndef f(x):\n    return x * M\n"
    )
    assert main(["dump", f"{configured}:f"]) == 1
    assert "`M` comes from `global M` in a function" in capsys.readouterr().err


def test_a_numpy_float_constant_is_written_as_a_float(tmp_path, monkeypatch):
    """`np.float64(0.1)` was written by its repr, naming NumPy the module never imports."""
    np = pytest.importorskip("numpy")
    module = module_from_source(
        tmp_path, "import math\n\nRATE = 0.0\n\n\ndef f(x):\n    return math.sin(x) * RATE\n"
    )
    module.RATE = np.float64(0.1)
    gradient = grad(module.f)
    assert "RATE = 0.1\n" in gradient.source
    assert gradient(0.5) == math.cos(0.5) * 0.1


def test_a_module_that_exits_on_import_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "cli_exiting.py").write_text(
        "import sys\n\n\ndef f(x):\n    return x * x\n\n\nif len(sys.argv) > 1:\n"
        "    sys.exit(4)\n\nsys.exit(5)\n"
    )
    assert main(["dump", "cli_exiting:f"]) == 1
    err = capsys.readouterr().err
    assert "importing 'cli_exiting' failed: it called sys.exit(5)" in err  # saw no arguments


def test_interrupted_and_unreadable_files_are_one_line(tmp_path, monkeypatch, capsys):
    import adcompile.cli as cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "command_dump", interrupted)
    assert main(["dump", "x.py:f"]) == 130
    assert capsys.readouterr().err == "adcompile: interrupted\n"
    monkeypatch.undo()
    nul = tmp_path / "nul.py"
    nul.write_bytes(b"\ndef f(x):\n    return x * 2.0\x00\n")
    assert main(["dump", f"{nul}:f"]) == 1
    assert f"{nul}:3:19: error: the file does not parse" in capsys.readouterr().err
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"def f(x):\n    return x  # caf\xe9\n")
    assert main(["dump", f"{latin}:f"]) == 1
    assert f"{latin}:2:20: error: cannot read" in capsys.readouterr().err


def test_sums_of_hundreds_of_terms_compile(tmp_path, capsys):
    """About 400 terms exceeded the recursion limit (an internal error in the CLI)."""
    target = tmp_path / "long_sum.py"
    target.write_text("def f(x):\n    return " + " + ".join(["x * x"] * 1500) + "\n")
    assert main(["check", f"{target}:f", "--at", "x=0.5"]) == 0
    assert "OK: matches SymPy" in capsys.readouterr().out
    deep = tmp_path / "deep_sum.py"
    deep.write_text("def f(x):\n    return " + " + ".join(["x"] * 20000) + "\n")
    assert main(["dump", f"{deep}:f"]) == 1
    assert "nests too deeply" in capsys.readouterr().err


def test_check_without_points_outside_the_domain_says_to_give_one(tmp_path, capsys):
    target = tmp_path / "domain.py"
    target.write_text("import math\n\n\ndef f(x):\n    return math.log(x - 50.0)\n")
    assert main(["check", f"{target}:f"]) == 1
    assert "give a point in its domain with --at" in capsys.readouterr().err


def test_rules_registered_under_another_name_are_noted_in_static_mode(capsys, tmp_path):
    target = tmp_path / "aliased_rule.py"
    target.write_text(
        "from adcompile import derivative as rule_for\n\n\ndef sq(x):\n    return x * x\n\n\n"
        "def sq_rule(x, result, g):\n    return 3.0 * x * g\n\n\nrule_for(sq)(sq_rule)\n\n\n"
        "def f(x):\n    return sq(x)\n"
    )
    assert main(["dump", f"{target}:f"]) == 0
    assert "registers rules with adcompile.derivative" in capsys.readouterr().err


def test_a_decorated_target_is_its_wrapper_not_the_wrapped_body(capsys, tmp_path, monkeypatch):
    """module:FUNC followed any __wrapped__: check said OK for the undecorated body."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "cli_doubled.py").write_text(
        "import functools\n\n\ndef doubled(fn):\n    @functools.wraps(fn)\n"
        "    def wrapper(x):\n        return 2.0 * fn(x)\n\n    return wrapper\n\n\n"
        "@doubled\ndef f(x):\n    return x * x\n"
    )
    assert main(["check", "cli_doubled:f", "--at", "x=1.5"]) == 0
    out = capsys.readouterr().out
    assert "| 6.0      | 6.0 |" in out  # d(2 x^2)/dx at 1.5, not 3.0


def test_a_grad_target_keeps_its_own_wrt(capsys, tmp_path, monkeypatch):
    """`@grad(wrt="y") def f` in a module: the CLI explained and dumped every partial."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "cli_wrt_y.py").write_text(
        "import math\n\nfrom adcompile import grad\n\n\n@grad(wrt='y')\n"
        "def f(x, y):\n    return math.sin(x * y) + y\n"
    )
    assert main(["explain", "cli_wrt_y:f", "--at", "x=1,y=2"]) == 0
    out = capsys.readouterr().out
    assert "df/dy" in out and "df/dx" not in out
    assert main(["dump", "cli_wrt_y:f"]) == 0
    assert '"""Return df/dy."""' in capsys.readouterr().out
    assert main(["explain", "cli_wrt_y:f", "--at", "x=1,y=2", "--wrt", "x"]) == 0
    assert "df/dx" in capsys.readouterr().out  # --wrt still chooses


def test_a_mismatch_in_a_function_with_floor_division_is_shown(capsys, tmp_path):
    """The one-sided mpmath retry cannot run `//`: its TypeError hid the MISMATCH table."""

    def wrong_sin(x, result, g):
        return g * math.sin(x)

    target = tmp_path / "floor_kink.py"
    target.write_text("import math\n\n\ndef f(x):\n    return math.sin(x) + (x + 0.5) // 3.0\n")
    with active_rules().scope() as rules:
        rules.register(math.sin, wrong_sin)
        status = main(["check", f"{target}:f", "--at", "x=1.0"])
    captured = capsys.readouterr()
    assert status == 1 and "MISMATCH" in captured.out and "TypeError" not in captured.err


def test_messages_for_a_missing_rule_and_a_module_read_in_static_mode(capsys, tmp_path):
    """math.cbrt was said to have "no derivative"; `helpers.f` in PATH.py mode got the
    "attribute access" message instead of pointing to package.module:FUNC."""
    target = tmp_path / "messages_case.py"
    target.write_text(
        "import math\nimport helpers_elsewhere\n\n\ndef f(x):\n    return math.cbrt(x) * x\n\n\n"
        "def g(x):\n    return helpers_elsewhere.h(x)\n"
    )
    assert main(["dump", f"{target}:f"]) == 1
    assert "register one with adcompile.derivative(math.cbrt)" in capsys.readouterr().err
    assert main(["dump", f"{target}:g"]) == 1
    err = capsys.readouterr().err
    assert "`helpers_elsewhere` comes from `import helpers_elsewhere`" in err
    assert "package.module:FUNC" in err


STATIC_READING = """
import functools

K = 2.0


def doubled(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return 2.0 * fn(x)

    return wrapper


@doubled
def twice_square(x):
    return x * x


def scaled(x, k=K):
    return x * k


K = 5.0


def through_decorated(x):
    return twice_square(x) + x


def through_default(x):
    return scaled(x) + x * K


def keyword_call(x):
    return imported_helper(x, p=2.0)


from helpers_not_installed import imported_helper
"""


def _numeric_derivative(fn, x: float) -> float:
    h = 1e-6
    return (fn(x + h) - fn(x - h)) / (2 * h)


def test_static_reading_takes_defaults_where_the_def_stands_and_refuses_decorators(
    capsys, tmp_path
):
    """PATH.py mode read `k=K` as K's last value in the file (5.0, not the 2.0 Python binds
    when the def runs) and ignored `@doubled` on a helper: `check` then said OK to a wrong
    gradient, since its SymPy reference came from the same reading. The reference here is
    the module itself, run, differentiated numerically."""
    target = tmp_path / "static_reading.py"
    target.write_text(STATIC_READING)
    module = module_from_source(tmp_path, STATIC_READING.replace("from helpers_not", "# from"))
    expected = _numeric_derivative(module.through_default, 0.7)  # 2 + 5
    assert main(["check", f"{target}:through_default", "--at", "x=0.7"]) == 0
    assert "OK: matches SymPy" in capsys.readouterr().out
    assert main(["dump", f"{target}:through_default"]) == 0
    dumped: dict = {}
    exec(capsys.readouterr().out, dumped)  # the dump is a standalone module
    assert dumped["through_default_grad"](0.7) == pytest.approx(expected, rel=1e-8)
    assert main(["dump", f"{target}:through_decorated"]) == 1
    err = capsys.readouterr().err
    assert "`twice_square` comes from `@doubled` on `def twice_square`" in err
    assert "write a literal" not in err and "package.module:FUNC" in err
    # imported, the decorated helper is the wrapper, and the gradient follows it (4x + 1)
    slope = _numeric_derivative(module.through_decorated, 0.7)
    assert grad(module.through_decorated)(0.7) == pytest.approx(slope, rel=1e-8)


def test_a_keyword_call_of_a_helper_a_file_imports_says_the_import_does_not_run(capsys, tmp_path):
    """It said "keyword arguments are not supported in calls here" instead."""
    target = tmp_path / "static_keyword.py"
    target.write_text(STATIC_READING)
    assert main(["dump", f"{target}:keyword_call"]) == 1
    err = capsys.readouterr().err
    assert "`imported_helper` comes from `from helpers_not_installed import" in err
    assert "keyword arguments" not in err


REBOUND_WITHOUT_A_NAME_NODE = """
import math

K = 2.0
A = 2.0
B = 2.0
C = 2.0

match math.pi:
    case K:
        pass

try:
    pass
except ValueError as A:
    pass


def by_match(x):
    return x * K


def by_except(x):
    return x * A


def by_star_import(x):
    return x * B
"""


@pytest.mark.parametrize(
    ("func", "statement"),
    [
        ("by_match", "match math.pi:"),
        ("by_except", "try:"),
        ("by_star_import", "from constants_not_installed import *"),
    ],
)
def test_constants_rebound_by_running_code_without_a_name_are_unknown(
    capsys, tmp_path, func, statement
):
    """`case K:`, `except ... as A` (which unbinds A) and a star import of a module not
    imported rebind names with no `Name` node: PATH.py mode kept the literal 2.0."""
    target = tmp_path / "rebound.py"
    source = REBOUND_WITHOUT_A_NAME_NODE
    if func == "by_star_import":  # it may rebind every name: the others too
        source = source.replace("\ndef by_match", f"\n{statement}\n\n\ndef by_match")
    target.write_text(source)
    assert main(["dump", f"{target}:{func}"]) == 1
    assert f"comes from `{statement}" in capsys.readouterr().err


def test_a_default_of_a_static_module_constant_and_an_unimportable_submodule(capsys, tmp_path):
    """`hi=math.inf` was refused twice: in PATH.py mode as "known only by running the file",
    and by grad itself ("cannot be written into generated code"); `import math.foo` (an
    ImportError when the file runs) crashed the CLI with an internal error."""
    target = tmp_path / "static_defaults.py"
    target.write_text(
        "import math\n\n\ndef f(x, hi=math.inf, lo=-math.inf):\n"
        "    return min(x * x, hi) + max(x, lo)\n"
    )
    broken = tmp_path / "unimportable.py"
    broken.write_text(target.read_text().replace("import math\n", "import math.foo\n", 1))
    assert main(["dump", f"{broken}:f", "--wrt", "x"]) == 1
    err = capsys.readouterr().err  # `math` is unknown: Python stops at the import
    assert "the default of `hi` is `math.inf`, which is known only by running the file" in err
    assert main(["dump", f"{target}:f", "--wrt", "x"]) == 0
    dumped: dict = {}
    exec(capsys.readouterr().out, dumped)
    assert dumped["f_grad"](1.5) == 2.0 * 1.5 + 1.0
    assert dumped["f_grad"](1.5, 1.0) == 1.0  # min picks hi = 1.0: no derivative
    module = module_from_source(tmp_path, target.read_text())
    assert grad(module.f, wrt="x")(-2.5) == 2.0 * -2.5 + 1.0


def test_an_error_with_no_place_in_a_file_is_one_prefixed_line(capsys, tmp_path):
    """A bad coding cookie printed a bare `error: ...`, without the `adcompile:` prefix every
    other one-line error has."""
    target = tmp_path / "cookie.py"
    target.write_bytes(b"# -*- coding: no-such-codec -*-\ndef f(x):\n    return x * x\n")
    assert main(["dump", f"{target}:f"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("adcompile: error: cannot read") and err.count("\n") == 1


LOOP = "def f(x, n):\n    s = 0.0\n    for i in range(n):\n        s = s + {term}\n    return s\n"


@pytest.mark.parametrize(
    ("source", "at", "status", "shown", "not_shown"),
    [
        # the builtins in the file's globals hid the reference's `float` stand-in, which
        # keeps mpmath numbers: the reference said 0.0 and a right 3.0 was a MISMATCH
        (LOOP.format(term="float(x)"), "x=1.5,n=3", 0, "OK: matches the mpmath", "MISMATCH"),
        # it said to leave out an int loop count with --wrt, which the user had done
        (LOOP.format(term="x * (x // 1.0)"), "x=2.5,n=3", 1, "cannot compute // on", "--wrt"),
        # `//=` (and a float on the left of `//`) got the int-parameter hint too
        (LOOP.format(term="x\n        s //= 0.7"), "x=1.3,n=2", 1, "// on", "--wrt"),
        (LOOP.format(term="2.5 // x"), "x=0.7,n=2", 1, "cannot compute // on", "--wrt"),
        # a decorated function was left out of the file's static definitions (its name is
        # unknown until the decorator runs): "... is not a callable object"; (a decorator
        # not adcompile's is refused: test_a_file_target_s_own_decorator_is_refused...)
        (
            "from adcompile import grad\n\n\n@grad(wrt='x')\n" + LOOP.format(term="x * x"),
            "x=0.7,n=3",
            0,
            "OK: matches the mpmath",
            "callable",
        ),
    ],
)
def test_check_of_a_loop_in_a_file_against_mpmath(
    capsys, tmp_path, source, at, status, shown, not_shown
):
    """Functions with loops are checked against the mpmath reference, which needs the
    file's functions defined without running the file."""
    target = tmp_path / "loop.py"
    target.write_text(source)
    assert main(["check", f"{target}:f", "--at", at, "--wrt", "x"]) == status
    captured = capsys.readouterr()
    assert shown in captured.out + captured.err
    assert not_shown not in captured.out + captured.err


DECORATED_TARGETS = """
import adcompile as ad
from adcompile import grad as G, value_and_grad


def twice(fn):
    def wrapper(x):
        return 2 * fn(x)

    return wrapper


@twice
def doubled(x):
    return x * x


@G(wrt="y")
def grad_in_y(x, y):
    return x * y * y


@ad.grad(wrt=("y", "x"))
def grad_in_y_then_x(x, y):
    return x * y * y


@value_and_grad
def value_and_slope(x):
    return x * x


WRT = "x"


@G(wrt=WRT)
def wrt_from_a_name(x, y):
    return x * y
"""


def test_a_file_target_s_own_decorator_is_refused_not_ignored(capsys, tmp_path):
    """PATH.py mode differentiated `@twice def doubled`'s body: 2x where the module's
    `doubled` (2x^2) has 4x, silently. The reference is the module, run, differentiated
    numerically; the module form (which imports it) follows the wrapper."""
    target = tmp_path / "decorated_targets.py"
    target.write_text(DECORATED_TARGETS)
    module = module_from_source(tmp_path, DECORATED_TARGETS)
    assert _numeric_derivative(module.doubled, 1.5) == pytest.approx(6.0, rel=1e-8)
    for command in (["dump"], ["check", "--at", "x=1.5"], ["explain", "--at", "x=1.5"]):
        assert main([command[0], f"{target}:doubled", *command[1:]]) == 1
        err = capsys.readouterr().err
        line = DECORATED_TARGETS.splitlines().index("@twice") + 1
        assert err.startswith(f"{target}:{line}:2: error: `@twice` on doubled is not applied")
        assert "package.module:FUNC" in err and "Traceback" not in err


def test_a_file_target_s_grad_decorator_keeps_its_literal_wrt(capsys, tmp_path):
    """PATH.py mode dumped every partial of `@grad(wrt="y")`, where the module's name (and
    the module form) gives only df/dy."""
    target = tmp_path / "decorated_targets.py"
    target.write_text(DECORATED_TARGETS)
    module = module_from_source(tmp_path, DECORATED_TARGETS)
    cases = {
        "grad_in_y": '"""Return dgrad_in_y/dy."""',
        "grad_in_y_then_x": '"""Return (dgrad_in_y_then_x/dy, dgrad_in_y_then_x/dx)."""',
        "value_and_slope": '"""Return (value_and_slope, dvalue_and_slope/dx)."""',
    }
    for name, docstring in cases.items():
        assert main(["dump", f"{target}:{name}"]) == 0
        text = capsys.readouterr().out
        assert docstring in text
        dumped: dict = {}
        exec(text, dumped)
        with_value = name == "value_and_slope"
        point = (0.5, 1.5)[: 1 if with_value else 2]
        expected = getattr(module, name)(*point)
        got = dumped[f"{name}_{'value_and_grad' if with_value else 'grad'}"](*point)
        assert got == expected
    assert main(["dump", f"{target}:grad_in_y", "--wrt", "x"]) == 0
    assert '"""Return dgrad_in_y/dx."""' in capsys.readouterr().out  # --wrt still chooses
    assert main(["dump", f"{target}:wrt_from_a_name"]) == 1
    err = capsys.readouterr().err
    line = DECORATED_TARGETS.splitlines().index("@G(wrt=WRT)") + 1
    assert err.startswith(f"{target}:{line}:8: error: a `wrt=` known only by running the file")


def test_a_file_s_string_constant_is_einsum_s_subscripts(capsys, tmp_path):
    """PATH.py mode refused a module-level subscripts string that the API accepts."""
    source = (
        'import numpy as np\n\nSUBSCRIPTS = "ij,jk->ik"\n\n\n'
        "def f(a):\n    return np.sum(np.einsum(SUBSCRIPTS, a, a))\n"
    )
    target = tmp_path / "einsum_constant.py"
    target.write_text(source)
    module = module_from_source(tmp_path, source)
    assert main(["dump", f"{target}:f"]) == 0
    dumped: dict = {}
    exec(capsys.readouterr().out, dumped)
    import numpy as np

    a = np.array([[0.5, -1.0], [2.0, 0.25]])
    np.testing.assert_array_equal(dumped["f_grad"](a), grad(module.f)(a))
    from tests.array_reference import check_gradient

    check_gradient(module.f, lambda a: (dumped["f_grad"](a),), [a], (0,))


def test_check_takes_several_points_and_explain_one(capsys):
    """A second --at replaced the first without a word: check verified one point only."""
    status = main(["check", "examples/seed.py:f", "--at", "x=4,y=-3,z=5", "--at", "x=1,y=2,z=3"])
    out = capsys.readouterr().out
    assert status == 0 and "all 6 partials match SymPy" in out
    assert "| x=4, y=-3, z=5 |" in out and "| x=1, y=2, z=3  |" in out
    for command in ("explain", "graph"):
        extra = ["-o", "unused.svg"] if command == "graph" else []
        with pytest.raises(SystemExit) as caught:
            main(
                [
                    command,
                    "examples/seed.py:f",
                    "--at",
                    "x=4,y=-3,z=5",
                    "--at",
                    "x=1,y=2,z=3",
                    *extra,
                ]
            )
        assert caught.value.code == 2
        assert "--at is given more than once" in capsys.readouterr().err


def test_a_file_s_literal_tuple_unpacking_binds_constants(capsys, tmp_path):
    """`I, J = 2.0, 3.0` at module level was unknown to PATH.py mode (shown as `I, J =
    (2.0, 3.0)`); a literal unpacking binds each name as Python does."""
    source = (
        "I, J = 2.0, 3.0\n[A, B] = (1.5, -2)\n\n\ndef f(x):\n    return x * I * J + A * x * x + B\n"
    )
    target = tmp_path / "unpacked_constants.py"
    target.write_text(source)
    module = module_from_source(tmp_path, source)
    assert main(["dump", f"{target}:f"]) == 0
    dumped: dict = {}
    exec(capsys.readouterr().out, dumped)
    assert dumped["f_grad"](0.7) == pytest.approx(_numeric_derivative(module.f, 0.7), rel=1e-8)
    target.write_text("I, (J, K) = 2.0, (3.0, 4.0)\n\n\ndef f(x):\n    return x * J\n")
    assert main(["dump", f"{target}:f"]) == 1  # nested: known only by running it
    assert "`J` comes from" in capsys.readouterr().err


DECORATED_DEFAULT = """\
from adcompile import grad

K = 2.0


@grad(wrt="x")
def f(x, c=K):
    return x * x * c


K = 5.0
"""


def test_a_decorated_targets_defaults_are_read_where_its_def_stands(capsys, tmp_path):
    """`@grad def f(x, c=K)` took K's last value in the file (5.0): Python binds 2.0 when
    the def runs. The reference is the module, imported and differentiated numerically."""
    target = tmp_path / "decorated_default.py"
    target.write_text(DECORATED_DEFAULT)
    module = module_from_source(tmp_path, DECORATED_DEFAULT)
    expected = _numeric_derivative(module.f.__wrapped__, 0.7)  # 2 x c with c = 2.0
    assert main(["dump", f"{target}:f"]) == 0
    dumped: dict = {}
    exec(capsys.readouterr().out, dumped)
    assert dumped["f_grad"](0.7) == pytest.approx(expected, rel=1e-8)
    assert module.f(0.7) == pytest.approx(expected, rel=1e-8)


@pytest.mark.parametrize(
    "rebinding",
    [
        "def grad(fn):\n    return lambda x: 2.0 * fn(x)\n",
        "grad = lambda fn: (lambda x: 2.0 * fn(x))\n",
        "from fractions import Fraction as grad\n",
        "def rebind():\n    global grad\n    grad = None\n",
    ],
    ids=["def", "assignment", "import", "global"],
)
def test_a_decorator_name_the_file_binds_again_is_not_adcompiles(capsys, tmp_path, rebinding):
    """After `from adcompile import grad`, the file's own `grad` was still taken for
    adcompile's: the undecorated body's gradient was dumped (6 at x = 3 where the module's
    function, 2 x**2, has 12) and `check` said OK. It is refused, as any other decorator."""
    target = tmp_path / "rebound_decorator.py"
    target.write_text(
        f"from adcompile import grad\n\n{rebinding}\n\n@grad\ndef f(x):\n    return x * x\n"
    )
    for command in ("dump", "check"):
        assert main([command, f"{target}:f"]) == 1
        assert "`@grad` on f is not applied" in capsys.readouterr().err


def test_a_decorator_imported_again_from_adcompile_is_adcompiles(capsys, tmp_path):
    target = tmp_path / "imported_again.py"
    target.write_text(
        "from adcompile import grad\n\ngrad = None\nfrom adcompile import grad\n\n\n"
        "@grad(wrt='x')\ndef f(x, y):\n    return x * y\n"
    )
    assert main(["dump", f"{target}:f"]) == 0
    assert '"""Return df/dx."""' in capsys.readouterr().out


def test_a_module_whose_code_raises_syntaxerror_is_said_to_fail_on_import(tmp_path):
    """It parses; `eval("1 +")` at its top raised SyntaxError, which was reported as "the
    module does not parse" at <string>:1:0."""
    (tmp_path / "runs_eval.py").write_text('CONFIG = eval("1 +")\n\n\ndef f(x):\n    return x\n')
    result = run_cli("dump", "runs_eval:f", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("adcompile: error: importing 'runs_eval' failed: SyntaxError")
    assert "does not parse" not in result.stderr
    (tmp_path / "returns_at_top.py").write_text("def f(x):\n    return x\n\n\nreturn 1\n")
    result = run_cli("dump", "returns_at_top:f", cwd=tmp_path)
    assert result.returncode == 1
    assert "returns_at_top.py:5:1: error: the module does not parse" in result.stderr


def test_a_syntaxwarning_in_the_users_file_is_printed_once(tmp_path):
    """Python 3.12+ warns about `"\\d"` when the file is parsed; adcompile parsed it three
    more times without its name and the warning came four times, three as <unknown>."""
    target = tmp_path / "escapes.py"
    target.write_text(
        'from adcompile import grad\n\nPAT = "\\d+"\n\n\n@grad\ndef f(x):\n    return x\n'
    )
    result = run_cli("dump", f"{target}:f")
    assert result.returncode == 0, result.stderr
    assert "<unknown>" not in result.stderr
    assert result.stderr.count("SyntaxWarning") <= 1


FLAG_DEFAULT = """\
def f(x, clip=True):
    if clip:
        return min(x, 1.0) * x
    return x * x
"""


def test_at_takes_flags_and_a_flags_default(capsys, tmp_path):
    """`clip=True` as a default was "missing a value", and `clip=False` "not a number"."""
    target = tmp_path / "flag_default.py"
    target.write_text(FLAG_DEFAULT)
    assert main(["check", f"{target}:f", "--at", "x=0.5", "--wrt", "x"]) == 0
    assert "x=0.5, clip=True | 1.0 " in capsys.readouterr().out  # min(x, 1) * x: 2x
    assert main(["check", f"{target}:f", "--at", "x=2,clip=False", "--wrt", "x"]) == 0
    assert "x=2, clip=False | 4.0 " in capsys.readouterr().out  # x * x
    assert main(["explain", f"{target}:f", "--at", "x=2,clip= True", "--wrt", "x"]) == 0
    assert "runs the if branch (clip is True)" in capsys.readouterr().out


DECORATOR_OPTIONS = """\
import math

from adcompile import grad, value_and_grad


@grad(mode="forward")
def f(x, y):
    return math.sin(x * y)


@grad(optimize=False)
def g(x, y):
    return math.sin(x * y)


@value_and_grad(wrt="y", mode="forward")
def h(x, y):
    return x * y * math.sin(y)


@value_and_grad
def k(x, y):
    return x * math.exp(y)
"""


@pytest.mark.parametrize("name", ["f", "g", "h", "k"])
def test_dump_prints_the_source_a_decorators_mode_and_optimize_made(tmp_path, name):
    """`dump` dropped `@grad(mode=...)` and `@grad(optimize=...)`: it printed the reverse,
    optimised code where the module's `f.source` is forward mode (`g.source` unoptimised);
    and it printed the grad module of a `@value_and_grad` function (h, k)."""
    (tmp_path / "decorator_options.py").write_text(DECORATOR_OPTIONS)
    module = module_from_source(tmp_path, DECORATOR_OPTIONS)
    expected = getattr(module, name).source.split("\n", 1)[1]  # after the header's file
    for target in (f"decorator_options:{name}", f"decorator_options.py:{name}"):
        result = run_cli("dump", target, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert result.stdout.split("\n", 1)[1] == expected
    forced = run_cli("dump", "decorator_options.py:f", "--mode", "reverse", cwd=tmp_path)
    assert forced.stdout.startswith("# grad of f")
