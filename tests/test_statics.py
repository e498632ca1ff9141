"""Static tests of array-rule templates decided at compile time (``adcompile/statics.py``)."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import numpy as np
import pytest

from adcompile import grad
from adcompile.statics import fold_static_tests
from tests.helpers import function_from_source


def _folded(text: str) -> str:
    return ast.unparse(fold_static_tests(ast.parse(text, mode="eval").body))


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("g if 1 is None or kd else e(g, 1)", "g if kd else e(g, 1)"),
        ("g if kd or 1 is None else e(g, 1)", "g if kd else e(g, 1)"),
        ("g if None is None or kd else e(g, 1)", "g"),
        ("g if 1 is None and kd else e(g, 1)", "e(g, 1)"),
        ("g if 2 > 1 and kd and a else h", "g if kd and a else h"),
        ("g if 1 is None or 2 is None else h", "h"),
        ("g if kd or a else h", "g if kd or a else h"),
    ],
)
def test_literal_operands_of_a_test_are_decided(template: str, expected: str) -> None:
    """A literal operand that cannot decide ``and``/``or`` is dropped; one that can decides."""
    assert _folded(template) == expected


def test_a_computed_keepdims_with_a_literal_axis_compiles_without_warnings(
    tmp_path: Path,
) -> None:
    """The unoptimised gradient read ``b if 1 is None or kd else ...``: compiling it gave
    ``SyntaxWarning: "is" with a literal``."""
    fn = function_from_source(
        tmp_path,
        """
        import numpy as np


        def f(x, kd):
            return np.sum(np.sum(x, axis=1, keepdims=kd) * np.ones((2, 1)))
        """,
    )
    x = np.arange(6.0).reshape(2, 3)
    for optimize in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            gradient = grad(fn, wrt="x", optimize=optimize)
        assert " is None" not in gradient.source
        for kd in (False, True):
            # kd=False: the (2,) sums broadcast against (2, 1) to (2, 2), each read twice
            expected = np.full((2, 3), 1.0 if kd else 2.0)
            np.testing.assert_array_equal(gradient(x, kd), expected)
