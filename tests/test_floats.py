"""The float facts (``floats.py``) and the factor of 1.0 they let the simplifier drop.

Dropping ``b_f * e`` to ``e`` is exact for a float ``e`` and wrong for an int one (the partial
would come back an int), so the analysis must never call an int a float. Checked directly on
small programs, and end to end: int inputs give float partials in both modes, on the whole
control-flow corpus (loops carry values across iterations, where a flow-insensitive analysis
could go wrong).
"""

from __future__ import annotations

import ast
import math
import textwrap
from typing import Any

import pytest

from adcompile import dump, grad
from adcompile.floats import FloatFacts
from adcompile.optimize import simplify
from tests.corpus import control_flow as cf
from tests.helpers import function_from_source
from tests.test_corpus_control_flow import call_args


def facts(source: str, params: tuple[str, ...] = ("x", "y")) -> FloatFacts:
    """The facts of a function body given as text."""
    return FloatFacts.of(ast.parse(textwrap.dedent(source)).body, list(params), "math")


def test_units_are_names_assigned_once_from_one_or_from_a_unit():
    found = facts(
        """
        b_f = 1.0
        b_q = b_f
        b_twice = 1.0
        b_twice += x
        b_int = 1
        b_copy_of_param = x
        """
    )
    assert found.units == {"b_f", "b_q"}


def name_is_float(found: FloatFacts, name: str) -> bool:
    """Whether the facts call the name ``name`` a float."""
    return found.is_float(ast.Name(id=name, ctx=ast.Load()))


def test_a_parameter_is_never_a_unit_or_a_float():
    found = facts("x = 1.0\ny = x / 2.0", params=("x",))
    assert "x" not in found.units and not name_is_float(found, "x")
    assert name_is_float(found, "y")  # a quotient is a float whatever x holds


@pytest.mark.parametrize(
    ("expr", "is_float"),
    [
        ("x / y", True),
        ("x + 1.0", True),
        ("2.0 ** x", True),
        ("math.sin(x)", True),
        ("-math.exp(x)", True),
        ("x if x > 0 else 0.5", False),
        ("0.5 if x > 0 else x / y", True),
        ("x + y", False),
        ("x * 2", False),
        ("math.floor(x)", False),
        ("abs(x)", False),
        ("min(x, 1.0)", False),
        ("x // 2", False),
        ("x % 2.0", True),
    ],
)
def test_which_expressions_are_floats(expr: str, is_float: bool):
    node = ast.parse(expr, mode="eval").body
    assert facts("pass").is_float(node) is is_float


def test_a_name_is_a_float_only_if_every_store_is():
    found = facts(
        """
        a = 0.0
        a = a + x
        n = 0
        n = n / 2.0
        n = n + 1.0
        c = x
        c = c / 2.0
        for i in range(3):
            d = 2.0 * i
        """
    )
    assert name_is_float(found, "d")
    assert not name_is_float(found, "n")  # one of its values is the int 0
    assert not name_is_float(found, "c")  # one is the (possibly int) parameter
    assert not name_is_float(found, "i")
    # A loop-carried value is not claimed (it reads itself): the 1.0 factor just stays.
    assert not name_is_float(found, "a")


def test_deep_chains_are_cut_short_without_changing_later_answers():
    chain = "\n".join(["v0 = x / y", *(f"v{k} = v{k - 1} + y" for k in range(1, 40))])
    found = facts(chain)
    assert not name_is_float(found, "v39")  # deeper than MAX_DEPTH: not claimed
    assert name_is_float(found, "v5")
    assert not name_is_float(found, "v39")  # the same answer, asked again


def assert_simplifies(cases: dict[str, str], *facts_given: object) -> None:
    """Each expression ``before`` simplifies to the text ``after`` (with the facts given)."""
    for before, after in cases.items():
        got = ast.unparse(simplify(ast.parse(before, mode="eval").body, *facts_given))
        assert got == after, before


def test_simplify_drops_a_unit_factor_only_before_a_float():
    found = facts("b_f = 1.0\nq = x / y")
    cases = {
        "b_f * q": "q",
        "q * b_f": "q",
        "-b_f * q": "-q",
        "q / b_f": "q",
        "b_f * x": "b_f * x",  # x may be an int: the factor makes the partial a float
        "b_f * math.cos(x)": "math.cos(x)",
        "b_f * 0.1 * 3 * (x * x)": "0.1 * 3 * (x * x)",
    }
    assert_simplifies(cases, found)


def test_a_literal_one_goes_only_where_the_type_stays():
    # 0.5 * 2 folds to 1.0; `1.0 * t` is `t` only for a float t: for int inputs the
    # partial of `0.5 * (x - y) ** 2` came out an int.
    found = facts("b_f = 1.0\nq = x / y\nt = x - y")
    cases = {
        "1.0 * t": "1.0 * t",
        "t * 1.0": "t * 1.0",
        "t / 1": "t / 1",
        "t ** 1.0": "t ** 1.0",
        "t + 0.0": "t + 0.0",
        "1 * t": "t",  # an int factor keeps an int an int
        "1.0 * q": "q",
        "2.0 * t ** 1.0": "2.0 * t",  # the float factor makes the product a float anyway
        "t ** 1.0 * q": "t * q",
    }
    assert_simplifies(cases, found)


def test_int_inputs_of_a_half_square_give_float_partials(tmp_path):
    fn = function_from_source(
        tmp_path,
        """
        def f(x, y):
            return 0.5 * (x - y) ** 2
        """,
    )
    for wrt, optimize in ((None, True), (None, False), (0, True)):
        partials = grad(fn, wrt=wrt, optimize=optimize)(3, 1)
        partials = partials if isinstance(partials, tuple) else (partials,)
        assert partials == (2.0, -2.0)[: len(partials)]
        assert all(type(p) is float for p in partials), partials


def test_constants_fold_only_where_the_result_is_exact():
    cases = {"0.5 * 4": "2.0", "3 - 1": "2", "0.1 * 3": "0.1 * 3", "1 / 3": "1 / 3"}
    assert_simplifies(cases)


def test_the_seed_stays_where_an_input_could_be_an_int(tmp_path):
    fn = function_from_source(
        tmp_path,
        """
        def f(x, y, z):
            q = x + y
            return q * z
        """,
    )
    assert "b_f * z" in dump(fn) and "b_f * q" in dump(fn)
    assert grad(fn)(4, -3, 5) == (5.0, 5.0, 1.0)
    assert all(type(p) is float for p in grad(fn)(4, -3, 5))


def test_the_seed_goes_where_every_factor_is_a_float(tmp_path):
    fn = function_from_source(
        tmp_path,
        """
        import math


        def f(x, y):
            r = x / y
            return math.sin(r) * r
        """,
    )
    text = dump(fn)
    assert "= 1.0" not in text, text
    partials = grad(fn)(1, 2)
    r = 0.5
    dr = (math.cos(r) * r + math.sin(r),)
    assert all(type(p) is float for p in partials)
    assert math.isclose(partials[0], dr[0] / 2, rel_tol=1e-15)
    assert math.isclose(partials[1], -dr[0] * 1 / 4, rel_tol=1e-15)


def _int_point(fn: Any, point: dict[str, Any]) -> list[Any] | None:
    """The point rounded to ints, if the primal is finite there; else None."""
    args = [round(v) if isinstance(v, float) else v for v in call_args(fn, point)]
    try:
        value = fn(*args)
    except (ArithmeticError, ValueError, TypeError, IndexError):
        return None
    return args if isinstance(value, int | float) and math.isfinite(value) else None


INT_CASES = [
    (fn, args, wrt)
    for entries in cf.GROUPS.values()
    for fn, points, wrt in entries
    for args in [next(filter(None, (_int_point(fn, p) for p in points)), None)]
    if args is not None
]


def test_the_control_flow_corpus_has_int_points():
    assert len(INT_CASES) >= 40, len(INT_CASES)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("case", INT_CASES, ids=lambda case: case[0].__name__)
def test_int_inputs_give_float_partials_through_control_flow(case: tuple, mode: str):
    fn, args, wrt = case
    partials = grad(fn, wrt=wrt, mode=mode)(*args)
    unoptimized = grad(fn, wrt=wrt, mode=mode, optimize=False)(*args)
    for got, expected in zip(
        partials if isinstance(partials, tuple) else (partials,),
        unoptimized if isinstance(unoptimized, tuple) else (unoptimized,),
        strict=True,
    ):
        assert type(got) is float, (args, got)
        assert math.isclose(got, expected, rel_tol=1e-12, abs_tol=1e-300) or got != got
