"""The tree helpers of ``adcompile/astutil.py`` against the standard library's own."""

from __future__ import annotations

import ast
import copy
import itertools
from pathlib import Path

import adcompile.lower
from adcompile.astutil import clone_located, same_tree, statements_in, walk

EXPRESSIONS = [
    "g * x",
    "g * x * -0.5",
    "g * x * 0.5",
    "g * x * -0.0",
    "g * x * 0.0",
    "g * x * 1",
    "g * x * 1.0",
    "g * x * True",
    "x * g",
    "g / x",
    "-(g * x)",
    "+(g * x)",
    "math.cos(t) * g",
    "math.sin(t) * g",
    "math.cos(t, u) * g",
    "np.sum(a, axis=0)",
    "np.sum(a, axis=1)",
    "np.sum(a, keepdims=True)",
    "a if c > 0 else b",
    "a if c >= 0 else b",
    "(a, b)",
    "[a, b]",
    "p['W1'] @ x",
    "p['W2'] @ x",
    "x[1:2]",
    "x[1:3]",
    "'text'",
    "b'text'",
]


def _parse(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def test_same_tree_agrees_with_ast_dump_on_every_pair() -> None:
    trees = [(text, _parse(text)) for text in EXPRESSIONS]
    disagreements = [
        (left, right)
        for (left, a), (right, b) in itertools.product(trees, repeat=2)
        if same_tree(a, b) != (ast.dump(a) == ast.dump(b))
    ]
    assert disagreements == []


def test_same_tree_ignores_positions_but_not_contexts() -> None:
    parsed = _parse("g * x")
    built = ast.BinOp(ast.Name("g", ast.Load()), ast.Mult(), ast.Name("x", ast.Load()))
    assert same_tree(parsed, built)
    stored = ast.BinOp(ast.Name("g", ast.Store()), ast.Mult(), ast.Name("x", ast.Load()))
    assert not same_tree(parsed, stored)


def test_statements_in_finds_every_nested_statement() -> None:
    tree = ast.parse(
        "a = 1\n"
        "if a:\n    b = 2\nelse:\n    for i in r:\n        c = 3\n    else:\n        d = 4\n"
        "while a:\n    e = 5\n"
        "try:\n    f = 6\nexcept E:\n    pass\nfinally:\n    h = 7\n"
    )
    found = {
        n.id
        for s in statements_in(tree.body)
        for n in ast.walk(s)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    assert found >= {"a", "b", "c", "d", "e", "f", "h", "i"}
    expected = [s for s in ast.walk(tree) if isinstance(s, ast.stmt)]
    handler_bodies = [s for h in ast.walk(tree) if isinstance(h, ast.ExceptHandler) for s in h.body]
    assert sorted(map(id, statements_in(tree.body))) == sorted(
        id(s) for s in expected if s not in handler_bodies
    )


def test_clone_located_copies_like_deepcopy_positions_included() -> None:
    tree = ast.parse(Path(adcompile.lower.__file__).read_text())  # every kind of node it has
    copied = clone_located(tree)
    assert ast.dump(copied, include_attributes=True) == ast.dump(
        copy.deepcopy(tree), include_attributes=True
    )
    original = ast.dump(tree)
    for node in ast.walk(copied):
        if isinstance(node, ast.Name):
            node.id = "renamed"
    assert ast.dump(tree) == original  # the copy shares no node with the original


def test_walk_visits_what_ast_walk_visits_except_contexts_and_operators() -> None:
    tree = ast.parse(Path(adcompile.lower.__file__).read_text())
    # Skipped: the `ctx` and `op` fields (a comparison's `ops` list is walked).
    skipped = (ast.expr_context, ast.operator, ast.unaryop, ast.boolop)
    expected = sorted(id(n) for n in ast.walk(tree) if not isinstance(n, skipped))
    assert sorted(id(n) for n in walk(tree)) == expected
