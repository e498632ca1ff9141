"""Finding a function's source: a def parsed from its own lines must be the def the whole
file holds, positions included; where its own lines are not surely the whole def, the whole
file is parsed instead."""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import types

import pytest

from adcompile import source
from tests.corpus import arrays, control_flow, control_flow_helpers, straight_line


def _module_functions(module: types.ModuleType) -> list[types.FunctionType]:
    return [
        fn
        for _, fn in inspect.getmembers(module, inspect.isfunction)
        if fn.__module__ == module.__name__
    ]


@functools.cache
def _whole_file(filename: str) -> ast.Module:
    return ast.parse("".join(linecache.getlines(filename)))


def _whole_file_node(fn: types.FunctionType) -> ast.AST:
    node = source._find_node(_whole_file(fn.__code__.co_filename), fn.__code__)
    assert node is not None
    return node


CORPUS = [
    fn
    for module in (straight_line, control_flow, control_flow_helpers, arrays)
    for fn in _module_functions(module)
]


def test_own_lines_give_the_whole_files_def_for_every_corpus_function() -> None:
    mismatched = []
    for fn in CORPUS:
        lines = linecache.getlines(fn.__code__.co_filename)
        own = source._parse_own_lines(lines, fn.__code__)
        expected = ast.dump(_whole_file_node(fn), include_attributes=True)
        if own is None or ast.dump(own, include_attributes=True) != expected:
            mismatched.append(fn.__qualname__)
    assert len(CORPUS) > 400
    assert mismatched == []


def _define(tmp_path, name: str, text: str) -> types.ModuleType:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    module = types.ModuleType(name)
    module.__file__ = str(path)
    exec(compile(text, str(path), "exec"), module.__dict__)
    return module


NESTED = """\
import functools


class Model:
    @functools.lru_cache(maxsize=None)
    def energy(self, x):
        y = (x *
    x)
        return y + 1.0


def outer(a):
    def inner(x):
        return a * x
    return inner
"""


def test_indented_defs_keep_their_real_lines_and_columns(tmp_path) -> None:
    module = _define(tmp_path, "nested_defs", NESTED)
    for fn in (module.Model.energy.__wrapped__, module.outer(2.0)):
        loaded = source.load_function(fn)
        assert ast.dump(loaded.node, include_attributes=True) == ast.dump(
            _whole_file_node(fn), include_attributes=True
        )
        assert loaded.node.col_offset == 4  # the def's own column, not 0


DEAD_CODE = """\
def f(x):
    return x * x
    x = 2.0


def g(x):
    return x + 1.0
"""


def test_a_def_whose_code_ends_early_is_read_from_the_whole_file(tmp_path) -> None:
    module = _define(tmp_path, "dead_code", DEAD_CODE)
    lines = linecache.getlines(module.__file__)
    assert source._parse_own_lines(lines, module.f.__code__) is None  # `x = 2.0` is dropped
    node = source.load_function(module.f).node
    assert [type(s).__name__ for s in node.body] == ["Return", "Assign"]
    assert source._parse_own_lines(lines, module.g.__code__) is not None


def test_lambdas_are_read_from_the_whole_file(tmp_path) -> None:
    module = _define(tmp_path, "lambdas", "square = lambda x: x * x\n")
    lines = linecache.getlines(module.__file__)
    assert source._parse_own_lines(lines, module.square.__code__) is None
    assert isinstance(source.load_function(module.square).node, ast.Lambda)


def test_a_file_whose_name_is_not_utf8_compiles(tmp_path) -> None:
    """Its name reaches Python as a lone surrogate ('\\udcff'), which the generated module's
    header kept: compiling that text raised UnicodeEncodeError in grad and check."""
    import importlib.util
    import os

    from adcompile import grad

    raw = os.fsencode(str(tmp_path)) + b"/\xffmodule.py"
    with open(raw, "wb") as handle:
        handle.write(b"def f(x, y):\n    return x * x * y\n")
    path = os.fsdecode(raw)
    spec = importlib.util.spec_from_file_location("non_utf8_name", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert grad(module.f)(1.5, 2.0) == (6.0, 2.25)
    assert "\\udcffmodule.py" in grad(module.f).source


# Characters str.splitlines ends a line at and Python does not: in a comment, or a form feed
# alone on a line between functions (a page break, as some style guides write).
ODD_BREAKS = ["\x0c", "\x0b", "\x1c", "\x85", "\u2028", "\u2029"]


def test_the_cli_numbers_lines_as_python_does(tmp_path) -> None:
    """A form feed line before the function shifted the CLI's line numbers by one: the words
    of the function's last line went unreserved, so the generated temporary `t1` hid the
    module constant `t1` the adjoint reads: a wrong number, with no error."""
    import math
    import subprocess
    import sys

    for mark in ODD_BREAKS:
        target = tmp_path / "odd.py"
        target.write_text(
            f"import math\n\nt1 = 2.0  # {mark}\n\x0c\n"
            "def f(x):\n    y = x * x\n    return math.sin(y) * t1\n",
            encoding="utf-8",
        )
        dumped = subprocess.run(
            [sys.executable, "-m", "adcompile", "dump", f"{target}:f"],
            capture_output=True,
            text=True,
            encoding="utf-8",
            check=True,
        ).stdout
        assert "# adjoint of line 7: return math.sin(y) * t1" in dumped
        namespace: dict = {}
        exec(compile(dumped, "dumped", "exec"), namespace)
        x = 0.7
        assert namespace["f_grad"](x) == pytest.approx(2.0 * math.cos(x * x) * 2.0 * x, rel=1e-14)


@pytest.mark.parametrize("mark", ODD_BREAKS)
def test_a_comment_holding_an_odd_line_break_compiles(tmp_path, mark) -> None:
    """The error notes' rewrite of the generated text split the comment copied from the
    user's line in two: IndentationError in grad and dump."""
    from adcompile import dump, grad

    module = _define(tmp_path, "odd_comment", f"def f(x):\n    return x * x  # a{mark}b\n")
    assert grad(module.f)(3.0) == 6.0
    assert f"a{mark}b" in dump(module.f)


def test_a_file_name_with_a_line_break_stays_in_the_header_comment(tmp_path) -> None:
    """The header wrote the name as it is: the rest of a file named `a\\nprint(...) #.py`
    ran as code when the gradient was loaded, and `nl\\nname.py` gave a SyntaxError."""
    import importlib.util

    from adcompile import grad

    for name in ('inj\nraise SystemExit("ran") #.py', "nl\rname.py", "nl\nname.py"):
        path = tmp_path / name
        path.write_text("def f(x):\n    return x * x\n")
        spec = importlib.util.spec_from_file_location("odd_name", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        gradient = grad(module.f)
        assert gradient(1.5) == 3.0
        first = gradient.source.splitlines()[0]
        assert first.startswith("# grad of f (") and first.endswith("generated by adcompile.")


def test_a_bad_byte_after_a_bom_is_located_on_its_own_line(tmp_path) -> None:
    """The decoder counts from after the BOM; those offsets indexed the bytes with the BOM,
    so the byte on line 3 was reported at 2:11."""
    from adcompile import UnsupportedSyntaxError

    path = tmp_path / "bom_bad.py"
    path.write_bytes(b"\xef\xbb\xbfdef f(x):\n    return x\n\xe9 = 1\n")
    with pytest.raises(UnsupportedSyntaxError) as caught:
        source.load_from_file(str(path), "f")
    assert str(caught.value).startswith(f"{path}:3:1: cannot read")


def test_a_bad_byte_in_a_comment_of_an_imported_module_is_said(tmp_path) -> None:
    """Python imports a file with a Latin-1 byte in a comment; linecache gives no lines for
    it, so the function was said to have no source file ("made by exec")."""
    import importlib.util

    from adcompile import UnsupportedSyntaxError, grad

    path = tmp_path / "latin_comment.py"
    path.write_bytes(b"def f(x):\n    # caf\xe9\n    return x * x\n")
    spec = importlib.util.spec_from_file_location("latin_comment", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.f(3.0) == 9.0
    with pytest.raises(UnsupportedSyntaxError) as caught:
        grad(module.f)
    message = str(caught.value)
    assert message.startswith(f"{path}:2:10: cannot read {path} as Python source")
    assert "coding" in message and "made by exec" not in message
