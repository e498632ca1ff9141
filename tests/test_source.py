"""Finding a function's source: a def parsed from its own lines must be the def the whole
file holds, positions included; where its own lines are not surely the whole def, the whole
file is parsed instead."""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import types

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
