"""Text tests of the generated code: golden files, plus properties every output must have.

The golden files in ``tests/golden`` hold the exact ``.source`` of a few small gradients;
each was reviewed by hand (every adjoint line checked against the chain rule) before it was
stored. After an intended change to the generated text, regenerate them with
``ADCOMPILE_UPDATE_GOLDEN=1 pytest tests/test_generated_text.py`` and review the diff.

The generated header names the primal's line, so the functions below must stay where they
are: edits above them shift the line numbers in every golden file.
"""

from __future__ import annotations

import math


def seed(x, y, z):
    q = x + y
    return q * z


def square(x):
    return x * x


def sin_exp_chain(x):
    a = math.sin(x)
    b = math.exp(a * x)
    return b * a


def conditional(x, y):
    return x * y if x > y else y - x


def reused(x):
    a = x * x
    return a * a + a * x


# --- everything below may move freely --------------------------------------------------------

import ast  # noqa: E402 -- the functions above must keep their line numbers
import difflib  # noqa: E402
import inspect  # noqa: E402
import linecache  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import textwrap  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402

from adcompile import grad, value_and_grad  # noqa: E402
from tests.corpus.straight_line import CORPUS  # noqa: E402

GOLDEN_DIR = Path(__file__).parent / "golden"
UPDATE_ENV = "ADCOMPILE_UPDATE_GOLDEN"
GOLDEN_FUNCTIONS = (seed, square, sin_exp_chain, conditional, reused)
ALL_FUNCTIONS = [*GOLDEN_FUNCTIONS, *(fn for fn, _ in CORPUS)]

COMMENT = re.compile(r"^\s*# (line|adjoint of line) (\d+): (.*)$")
ADJOINT_COMMENT = "# adjoint of line "
# `* 1.0` or `1.0 *` (not `** 1.0`, not `-1.0 *`), and `+ 0.0`, `- 0.0` or `0.0 +`.
TIMES_ONE = re.compile(r"(?<!\*)\*\s*1\.0(?![\d.])|(?<!\*\s)(?<![\w.*\-])1\.0\s*\*(?!\*)")
PLUS_ZERO = re.compile(r"[+-]\s*0\.0(?![\d.])|(?<![\w.\-])0\.0\s*\+")


def golden_path(fn: Callable[..., Any]) -> Path:
    """Where the golden text of ``grad(fn)`` is stored."""
    return GOLDEN_DIR / f"{fn.__name__}_grad.py"


def unified_diff(expected: str, got: str, name: str) -> str:
    """A unified diff from the golden text to the generated one."""
    lines = difflib.unified_diff(
        expected.splitlines(keepends=True),
        got.splitlines(keepends=True),
        fromfile=f"golden/{name}",
        tofile=f"generated/{name}",
    )
    return "".join(lines)


@pytest.mark.parametrize("fn", GOLDEN_FUNCTIONS, ids=lambda fn: fn.__name__)
def test_source_matches_golden(fn: Callable[..., Any]) -> None:
    got = grad(fn).source
    path = golden_path(fn)
    if os.environ.get(UPDATE_ENV) == "1":
        GOLDEN_DIR.mkdir(exist_ok=True)
        path.write_text(got, encoding="utf-8")
    assert path.exists(), f"no golden file {path}; create it with {UPDATE_ENV}=1 and review it"
    expected = path.read_text(encoding="utf-8")
    if got != expected:
        diff = unified_diff(expected, got, path.name)
        print(diff)
        pytest.fail(
            f"generated text differs from {path.name} ({UPDATE_ENV}=1 regenerates):\n{diff}"
        )


def test_every_golden_file_has_a_function() -> None:
    expected = {golden_path(fn).name for fn in GOLDEN_FUNCTIONS}
    assert {p.name for p in GOLDEN_DIR.glob("*.py")} == expected


# --- structural properties of every generated function ----------------------------------------


def generated_sources(fn: Callable[..., Any]) -> list[str]:
    """The generated text of grad and value_and_grad of ``fn``."""
    return [grad(fn).source, value_and_grad(fn).source]


def adjoint_section(source: str) -> str:
    """The generated code from the first adjoint block on, with comments and docstring dropped.

    The forward sweep is the user's own arithmetic, kept as written; the simplifier owns only
    the adjoint sweep, so that is where trivial arithmetic must never appear.
    """
    lines = source.splitlines()
    starts = [i for i, line in enumerate(lines) if line.lstrip().startswith(ADJOINT_COMMENT)]
    if not starts:
        return ""
    code = [line.split("#", 1)[0].rstrip() for line in lines[starts[0] :]]
    return textwrap.dedent("\n".join(line for line in code if line.strip()))


def statement_lists(tree: ast.AST) -> Iterator[list[ast.stmt]]:
    """Every list of statements in ``tree`` (function bodies, both branches of each if)."""
    for node in ast.walk(tree):
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block


def zero_then_accumulate(block: list[ast.stmt]) -> list[str]:
    """Names set to 0.0 and then ``+=``-ed in the same block, with nothing in between."""
    found = []
    for index, stmt in enumerate(block):
        if not (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Constant)
            and stmt.value.value == 0.0
        ):
            continue
        name = stmt.targets[0].id
        for later in block[index + 1 :]:
            stores = {
                n.id
                for n in ast.walk(later)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            }
            if name in stores:
                if isinstance(later, ast.AugAssign):
                    found.append(name)
                break
    return found


def trivial_arithmetic(tree: ast.AST) -> list[str]:
    """Binary operations with a neutral constant operand: ``e * 1``, ``e + 0`` and the like."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.BinOp):
            continue
        operands = [node.left, node.right]
        constants = [o.value for o in operands if isinstance(o, ast.Constant)]
        if isinstance(node.op, ast.Mult) and 1 in constants:
            found.append(ast.unparse(node))
        if isinstance(node.op, ast.Add) and 0 in constants:
            found.append(ast.unparse(node))
        right = node.right.value if isinstance(node.right, ast.Constant) else None
        if isinstance(node.op, ast.Sub) and right == 0:
            found.append(ast.unparse(node))
        if isinstance(node.op, ast.Div | ast.Pow) and right == 1:
            found.append(ast.unparse(node))
    return found


def function_lines(fn: Callable[..., Any]) -> tuple[str, range]:
    """The file holding ``fn`` and the range of line numbers of its definition."""
    lines, first = inspect.getsourcelines(fn)
    return inspect.getsourcefile(fn), range(first, first + len(lines))


@pytest.mark.parametrize("fn", ALL_FUNCTIONS, ids=lambda fn: fn.__name__)
def test_no_multiplication_by_one_or_addition_of_zero(fn: Callable[..., Any]) -> None:
    for source in generated_sources(fn):
        adjoint = adjoint_section(source)
        assert not TIMES_ONE.findall(adjoint), source
        assert not PLUS_ZERO.findall(adjoint), source
        body = "def sweep():\n" + textwrap.indent(adjoint or "pass", "    ")
        assert not trivial_arithmetic(ast.parse(body)), source


@pytest.mark.parametrize("fn", ALL_FUNCTIONS, ids=lambda fn: fn.__name__)
def test_no_zero_initialization_before_accumulation(fn: Callable[..., Any]) -> None:
    for source in generated_sources(fn):
        tree = ast.parse(source)
        for block in statement_lists(tree):
            assert not zero_then_accumulate(block), source


@pytest.mark.parametrize("fn", ALL_FUNCTIONS, ids=lambda fn: fn.__name__)
def test_block_comments_name_real_source_lines(fn: Callable[..., Any]) -> None:
    filename, lines = function_lines(fn)
    for source in generated_sources(fn):
        for match in filter(None, map(COMMENT.match, source.splitlines())):
            number, text = int(match.group(2)), match.group(3)
            assert number in lines, f"{match.group(0)!r} is outside {fn.__name__}"
            assert linecache.getline(filename, number).strip() == text, match.group(0)


def block_comments(source: str) -> list[tuple[str, int]]:
    """The (kind, line number) of each block comment in the generated function, in order."""
    return [
        (match.group(1), int(match.group(2)))
        for match in filter(None, map(COMMENT.match, source.splitlines()))
    ]


def body_lines(source: str) -> list[str]:
    """The generated function's body lines after its docstring, stripped, blank lines dropped."""
    tree = ast.parse(source)
    (function,) = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    start = function.body[0].end_lineno if ast.get_docstring(function) else function.lineno
    lines = source.splitlines()[start : function.end_lineno]
    return [line.strip() for line in lines if line.strip()]


def statement_index(fn: Callable[..., Any]) -> dict[int, int]:
    """Map each line of ``fn``'s body to the index of the top-level statement it belongs to."""
    lines, first = inspect.getsourcelines(fn)
    (function,) = ast.parse("".join(lines)).body
    return {
        line + first - 1: index
        for index, stmt in enumerate(function.body)
        for line in range(stmt.lineno, stmt.end_lineno + 1)
    }


@pytest.mark.parametrize("fn", ALL_FUNCTIONS, ids=lambda fn: fn.__name__)
def test_every_block_starts_with_its_comment(fn: Callable[..., Any]) -> None:
    statement_of = statement_index(fn)
    for source in generated_sources(fn):
        body = body_lines(source)
        if len(body) > 1:
            assert body[0].startswith(("# line ", "# adjoint of line ")), source
        comments = block_comments(source)
        kinds = [kind for kind, _ in comments]
        # Forward blocks come first, in statement order; adjoint blocks follow, reversed. (A
        # statement spanning several lines may name its lines in any order.)
        assert kinds == sorted(kinds, key=lambda kind: kind != "line"), source
        forward = [statement_of[line] for kind, line in comments if kind == "line"]
        adjoint = [statement_of[line] for kind, line in comments if kind != "line"]
        assert forward == sorted(forward), source
        assert adjoint == sorted(adjoint, reverse=True), source


@pytest.mark.parametrize("fn", ALL_FUNCTIONS, ids=lambda fn: fn.__name__)
def test_adjoint_section_starts_with_the_return(fn: Callable[..., Any]) -> None:
    statement_of = statement_index(fn)
    last = max(statement_of.values())
    unoptimized = grad(fn, optimize=False).source
    adjoint = [line for kind, line in block_comments(unoptimized) if kind != "line"]
    if adjoint:
        assert statement_of[adjoint[0]] == last, "the reverse sweep begins at the return"
    source = grad(fn).source
    adjoint = [line for kind, line in block_comments(source) if kind != "line"]
    if adjoint and statement_of[adjoint[0]] != last:
        # Optimised, the return's block goes only when all it did was pass on the seed
        # `b_f = 1.0`, which no statement reads once the 1.0 factors are gone.
        assert not re.search(r"^\s*b_\w+ = 1\.0$", source, re.MULTILINE), source


BAD_SOURCE = """\
def bad_grad(x):
    # line 2: a = x * x
    a = x * x
    # adjoint of line 3: return a
    b_bad = 1.0
    b_a = b_bad * 1.0
    b_x = 0.0
    b_x += b_a * x + 0.0
    b_y = 1.0 * b_a ** 1
    return b_x, b_y
"""


def test_structural_checks_catch_bad_text() -> None:
    adjoint = adjoint_section(BAD_SOURCE)
    assert adjoint.startswith("b_bad = 1.0")
    assert TIMES_ONE.findall(adjoint) == ["* 1.0", "1.0 *"]
    assert PLUS_ZERO.findall(adjoint) == ["+ 0.0"]
    found = trivial_arithmetic(ast.parse(BAD_SOURCE))
    assert found == ["b_bad * 1.0", "b_a * x + 0.0", "1.0 * b_a ** 1", "b_a ** 1"]
    (function,) = ast.parse(BAD_SOURCE).body
    assert zero_then_accumulate(function.body) == ["b_x"]
    assert block_comments(BAD_SOURCE) == [("line", 2), ("adjoint of line", 3)]


def test_structural_checks_accept_good_text() -> None:
    good = "x ** 1.0 * 2.0\nb = -1.0 * x\nc = x * 1.05 + 10.0"
    assert not TIMES_ONE.findall(good)
    assert not PLUS_ZERO.findall(good)
