"""The command line on awkward input: a target's name bound again, imports that misbehave,
odd encodings, closed streams, bad points. Each case was a traceback, an internal error, a
misleading message or a silently wrong answer."""

from __future__ import annotations

import io
import itertools
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adcompile.cli import main
from tests.helpers import module_from_source

ROOT = Path(__file__).resolve().parent.parent
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
        ("def h():\n    global f\n    f = abs\n", "    f = abs", 5),  # when h runs
        ("for f in range(2):\n    pass\n", "for f in", 5),
        ('if __name__ == "__main__":\n    pass\nelse:\n    f = abs\n', "    f = abs", 5),
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
        "def main():\n    global f\n    return 0\n",  # declared, never assigned
        'if __name__ == "__main__":\n    with open(__file__) as f:\n        pass\n',  # a script
        "def g():\n    f = 3\n\n    def h():\n        global f\n        return f\n\n    return f\n",
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


_MODULES = itertools.count()


def _module_target(tmp_path, monkeypatch, source: bytes | str) -> tuple[str, Path]:
    """A fresh module in the current directory: its ``module:f`` target and its path."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    name = f"cli_robust_{next(_MODULES)}"
    path = tmp_path / f"{name}.py"
    path.write_bytes(source if isinstance(source, bytes) else source.encode("utf-8"))
    return f"{name}:f", path


def _under_caret(err: str) -> str:
    """The character of the quoted source line the caret under a located error points at."""
    quoted, caret = err.splitlines()[1:3]
    return quoted[caret.index("^")]


def test_a_base_exception_raised_on_import_is_one_line(capsys, tmp_path, monkeypatch):
    """pytest.importorskip at a module's top raises Skipped, a BaseException: a traceback."""
    source = "class Skipped(BaseException):\n    pass\n\nraise Skipped('no GPU')\n" + SQUARE
    target, _ = _module_target(tmp_path, monkeypatch, source)
    assert main(["dump", target]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("adcompile: error: importing")
    assert "Skipped: no GPU" in err and "Traceback" not in err
    interrupted, _ = _module_target(tmp_path, monkeypatch, "raise KeyboardInterrupt\n" + SQUARE)
    assert main(["dump", interrupted]) == 130
    assert capsys.readouterr().err == "adcompile: interrupted\n"


def test_an_adcompile_error_while_importing_is_printed_located(capsys, tmp_path, monkeypatch):
    """`@grad` on code adcompile refuses raised while importing: it was wrapped in
    "importing ... failed: UnsupportedSyntaxError: PATH:LINE:COL: ..." on one line."""
    source = "from adcompile import grad\n\n\n@grad\ndef f(x):\n    y = x; del y\n    return x\n"
    target, path = _module_target(tmp_path, monkeypatch, source)
    assert main(["dump", target]) == 1
    err = capsys.readouterr().err
    line = _line_of(source, "del y")
    column = source.splitlines()[line - 1].index("del") + 1
    assert err.startswith(f"{path}:{line}:{column}: error: ")
    assert err.splitlines()[1].strip() == "y = x; del y" and _under_caret(err) == "d"


def test_what_a_module_prints_on_import_goes_to_stderr(capsys, tmp_path, monkeypatch):
    """`dump pkg.mod:f > grad.py` wrote the module's "loading model..." into grad.py."""
    target, _ = _module_target(tmp_path, monkeypatch, "print('loading model...')\n" + SQUARE)
    assert main(["dump", target]) == 0
    out, err = capsys.readouterr()
    dumped: dict = {}
    exec(out, dumped)  # the output is the module, and only it
    assert dumped["f_grad"](1.5) == 3.0  # d(x*x)/dx = 2x
    assert "loading model..." in err


@pytest.mark.parametrize(
    ("source", "line", "column", "pointed"),
    [
        # The import's SyntaxError counted UTF-8 bytes up to 3.12: 2:15 for 2:12.
        ("def f(x):\n    é中 = x $ 2\n    return x\n", 2, len("    é中 = x ") + 1, "$"),
        # A NUL byte: the import's SyntaxError has no line, and no file name (`mod:0:0`).
        ("def f(x):\n    y = x\0\n    return x\n", 2, len("    y = x") + 1, " "),
    ],
)
def test_a_module_that_does_not_parse_is_located_as_a_file_is(
    capsys, tmp_path, monkeypatch, source, line, column, pointed
):
    target, path = _module_target(tmp_path, monkeypatch, source)
    assert main(["dump", target]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:{line}:{column}: error: the file does not parse")
    assert _under_caret(err) == pointed  # a NUL byte is shown as a space
    assert main(["dump", f"{path}:f"]) == 1  # the PATH.py form says the same
    assert capsys.readouterr().err == err


def test_a_compiler_error_in_a_module_is_located_in_characters(capsys, tmp_path, monkeypatch):
    """`return` outside a def parses, and the compiler's column counts bytes on every version."""
    source = "é中 = 1; return 2\n" + SQUARE
    target, path = _module_target(tmp_path, monkeypatch, source)
    assert main(["dump", target]) == 1
    column = source.index("return") + 1
    assert capsys.readouterr().err.startswith(f"{path}:1:{column}: error: the module does not")


def test_an_encoding_its_file_does_not_decode_in_is_one_line_naming_it(
    capsys, tmp_path, monkeypatch
):
    """A utf-16 cookie on a UTF-8 file: 3.11/3.12 said "UTF-16 stream does not start with
    BOM" without the file, 3.13 "PATH:0:0: ..."."""
    source = "# -*- coding: utf-16 -*-\n" + SQUARE
    target, path = _module_target(tmp_path, monkeypatch, source)
    for form in (f"{path}:f", target):
        assert main(["dump", form]) == 1
        err = capsys.readouterr().err
        assert err == (
            f"adcompile: error: cannot read {path} as Python source: it declares the "
            "encoding utf-16, which does not decode it\n"
        )


@pytest.mark.parametrize(
    ("decorator", "params", "fragment"),
    [
        ("@grad(wrt=True)", "x, y", "not True"),  # was an internal error (exit 3)
        ('@grad(wrt="z")', "x, y", "'z' is not a parameter"),  # was exit 2, no place
        ("@grad(wrt=(0, 0))", "x, y", "names a parameter twice"),
        ('@grad(wrt="x")', "", "'x' is not a parameter"),
    ],
)
def test_a_file_s_literal_wrt_naming_no_parameter_is_located(
    capsys, tmp_path, decorator, params, fragment
):
    text = f"from adcompile import grad\n\n\n{decorator}\ndef f({params}):\n    return 2.0\n"
    target = tmp_path / "bad_wrt.py"
    target.write_text(text)
    with pytest.raises((ValueError, TypeError), match=fragment.replace("(", r"\(")):
        module_from_source(tmp_path, text)  # the module refuses it too, when it runs
    for command in (["dump"], ["check", "--at", "x=1,y=2"] if params else ["check"]):
        assert main([*command[:1], f"{target}:f", *command[1:]]) == 1
        err = capsys.readouterr().err
        column = decorator.index("=") + 2  # the wrt= value
        assert err.startswith(f"{target}:4:{column}: error: ") and fragment in err


def test_a_file_function_without_parameters_is_located(capsys, tmp_path):
    target = tmp_path / "constant.py"
    target.write_text("import math\n\n\ndef f():\n    return math.pi\n")
    assert main(["dump", f"{target}:f"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{target}:4:1: error: f has no parameters to differentiate")


def _run_with_closed(fd: int, *args: str) -> subprocess.CompletedProcess[str]:
    """``adcompile ARGS`` started with file descriptor ``fd`` closed (``>&-``, ``2>&-``)."""
    keep = {1: subprocess.DEVNULL, 2: subprocess.PIPE}  # the other stream, as a user has it
    # The shell closes it, not a preexec_fn: that forces a fork, which JAX (imported by
    # other tests in this process) warns about, and pytest turns the warning into an error.
    return subprocess.run(
        ["/bin/sh", "-c", f'exec "$@" {fd}>&-', "sh", sys.executable, "-m", "adcompile", *args],
        stdout=subprocess.PIPE if fd == 2 else keep[1],
        stderr=keep[2],
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )


def test_a_closed_standard_output_is_one_line_not_an_internal_error():
    """`adcompile dump f.py:f >&-`: AttributeError on None, "internal error", exit 3."""
    result = _run_with_closed(1, "dump", "examples/seed.py:f")
    assert result.returncode == 1
    assert result.stderr == "adcompile: error: standard output is closed: nowhere to write\n"
    quiet = _run_with_closed(2, "dump", "examples/seed.py:nothing")  # the error goes nowhere
    assert quiet.returncode == 1 and quiet.stdout == ""
    dumped = _run_with_closed(2, "dump", "examples/seed.py:f")
    assert dumped.returncode == 0 and "def f_grad(" in dumped.stdout


@pytest.mark.parametrize(
    ("body", "refused"),
    [
        ("    t = (y, x)\n    return t[1] * x\n", "(y, x)"),  # "f uses NumPy arrays", exit 2
        ("    return int(x) * y\n", "int(x)"),  # graph drew "?" nodes, exit 0
        ("    return math.gamma(x) * y\n", "math.gamma(x)"),
    ],
)
def test_check_explain_and_graph_give_dump_s_located_error(capsys, tmp_path, body, refused):
    text = f"import math\n\n\ndef f(x, y):\n{body}"
    target = tmp_path / "refused.py"
    target.write_text(text)
    line = _line_of(text, refused)
    column = text.splitlines()[line - 1].index(refused) + 1
    assert main(["dump", f"{target}:f"]) == 1
    expected = capsys.readouterr().err
    assert expected.startswith(f"{target}:{line}:{column}: error: ")
    graph = str(tmp_path / "g.dot")
    for command in (
        ["check"],
        ["check", "--at", "x=1.5,y=2"],
        ["explain", "--at", "x=1.5,y=2"],
        ["explain"],  # not "explain needs a point" first, then the real reason
        ["graph", "-o", graph],
        ["graph", "-o", graph, "--at", "x=1.5,y=2"],
    ):
        assert main([command[0], f"{target}:f", *command[1:]]) == 1, command
        assert capsys.readouterr().err == expected, command
    assert not (tmp_path / "g.dot").exists()


def test_a_partial_the_reference_cannot_compute_at_nan_is_not_a_mismatch(capsys, tmp_path):
    """`check f --at x=1,y=nan` for f = x*y said MISMATCH for d/dy: mpmath's reference is
    nan there (every difference quotient at y=nan is), the gradient gives x = 1.0, which is
    d(x*y)/dy. Such a row is set aside as not verifiable, and said so."""
    target = tmp_path / "mul.py"
    target.write_text("def f(x, y):\n    return x * y\n")
    assert main(["check", f"{target}:f", "--at", "x=1,y=nan"]) == 0
    out = capsys.readouterr().out
    assert "MISMATCH" not in out and "OK: matches" in out
    assert "not verifiable" in out and "d/dy at x=1, y=nan" in out
    assert main(["check", f"{target}:f", "--at", "x=1,y=nan", "--wrt", "y"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("adcompile: error: no partial can be verified: d/dy at x=1, y=nan")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("variable", "value", "coloured"),
    [("NO_COLOR", "1", False), ("NO_COLOR", "", True), ("TERM", "dumb", False)],
)
def test_no_color_and_a_dumb_terminal_turn_highlighting_off(monkeypatch, variable, value, coloured):
    pytest.importorskip("pygments")
    from adcompile.cli import highlight

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv(variable, value)  # NO_COLOR: any non-empty value (no-color.org)
    text = "def f(x):\n    return x\n"
    assert ("\x1b[" in highlight(text, _Terminal())) is coloured


def test_a_non_function_target_is_named_with_the_right_article(capsys, tmp_path, monkeypatch):
    target, _ = _module_target(tmp_path, monkeypatch, "f = 3\nimport math as g\n")
    assert main(["dump", target]) == 1
    assert ":f is an int, not a function" in capsys.readouterr().err
    assert main(["dump", target.replace(":f", ":g")]) == 1
    assert ":g is a module, not a function" in capsys.readouterr().err


def test_wrt_given_twice_is_refused_not_the_last_one_kept(capsys):
    for command in (["dump"], ["check"], ["explain", "--at", "x=1,y=2,z=3"]):
        with pytest.raises(SystemExit) as stop:
            main([command[0], "examples/seed.py:f", "--wrt", "x", "--wrt", "y", *command[1:]])
        assert stop.value.code == 2
        assert "--wrt is given more than once" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "expected"),
    [("10", 10), ("1_0", 10), ("0x3", 3), ("-7", -7), ("2.5", 2.5), ("1e3", 1000.0)],
)
def test_a_point_reads_numbers_as_python_does(text, expected):
    from adcompile.cli import parse_point

    value = parse_point(f"n={text}", ["n"])["n"]
    python = eval(text)  # the literal as Python reads it: the independent truth
    assert value == python == expected and type(value) is type(python)


def test_a_point_too_large_for_a_float_is_refused_but_inf_is_allowed(capsys):
    from adcompile.cli import UsageError, parse_point

    with pytest.raises(UsageError, match="too large for a float"):
        parse_point("x=1e400", ["x"])
    assert parse_point("x=-inf", ["x"])["x"] == -math.inf
    assert math.isnan(parse_point("x=nan", ["x"])["x"])
