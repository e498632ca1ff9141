"""Derivative rules at extreme arguments, against closed forms evaluated in 60-digit mpmath.

The rule table (``test_rule_table.py``) samples each rule where its arguments are ordinary.
Some textbook formulas fail far from there although the derivative is an ordinary float:
``x * x + y * y`` in ``atan2``'s partials underflows near 1e-160 and overflows near 1e154,
``sqrt(x * x + 1)`` in ``asinh``'s overflows, and ``result + 1`` in ``expm1``'s cancels for
x below -20; ``1 - x * x`` in ``asin``'s, ``acos``'s and ``atanh``'s cancels near |x| = 1;
``e^a / (e^a + e^b)`` in ``np.logaddexp``'s overflows beyond a = 709. The rules avoid
these, the scalar ones and their NumPy twins alike; this pins it down, in both modes.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from adcompile import grad
from tests.helpers import function_from_source


def _atan2_partials(y, x):
    return (x / (x * x + y * y), -y / (x * x + y * y))


PARTIALS = {  # exact partials, in mpmath numbers (no overflow, no cancellation)
    "atan2": _atan2_partials,
    "asinh": lambda x: (1 / mpmath.sqrt(x * x + 1),),
    "acosh": lambda x: (1 / mpmath.sqrt(x * x - 1),),
    "expm1": lambda x: (mpmath.exp(x),),
    "asin": lambda x: (1 / mpmath.sqrt(1 - x * x),),
    "acos": lambda x: (-1 / mpmath.sqrt(1 - x * x),),
    "atanh": lambda x: (1 / (1 - x * x),),
    "hypot": lambda x, y: (x / mpmath.hypot(x, y), y / mpmath.hypot(x, y)),
    "cbrt": lambda x: (1 / (3 * abs(x) ** (mpmath.mpf(2) / 3)),),
    "exp2": lambda x: (mpmath.power(2, x) * mpmath.log(2),),
    "logaddexp": lambda a, b: (
        mpmath.exp(a) / (mpmath.exp(a) + mpmath.exp(b)),
        mpmath.exp(b) / (mpmath.exp(a) + mpmath.exp(b)),
    ),
}
CASES = [
    ("atan2", (1e-200, 3e-200)),
    ("atan2", (1e200, -3e200)),
    ("asinh", (1e155,)),
    ("asinh", (-1e200,)),
    ("acosh", (1e160,)),
    ("acosh", (1.0 + 2.0**-40,)),
    ("expm1", (-40.0,)),
    ("expm1", (-700.0,)),
    ("asin", (1.0 - 1e-8,)),
    ("asin", (-1.0 + 2.0**-40,)),
    ("acos", (1.0 - 1e-8,)),
    ("atanh", (1.0 - 1e-9,)),
    ("atanh", (-1.0 + 2.0**-45,)),
]
# math's name -> NumPy's, for the array rules' twins of the same formulas.
NUMPY_NAMES = {"atan2": "arctan2", "asin": "arcsin", "acos": "arccos", "expm1": "expm1"} | {
    "asinh": "arcsinh",
    "acosh": "arccosh",
    "atanh": "arctanh",
}


@pytest.mark.parametrize(("name", "args"), CASES, ids=[f"{n}{a}" for n, a in CASES])
@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_rule_is_accurate_at_extreme_arguments(name, args, mode, tmp_path) -> None:
    params = "y, x" if name == "atan2" else "x"
    source = f"import math\n\n\ndef f({params}):\n    return math.{name}({params})\n"
    f = function_from_source(tmp_path, source)
    got = grad(f, mode=mode)(*args)
    got = got if isinstance(got, tuple) else (got,)
    with mpmath.workdps(60):
        expected = PARTIALS[name](*[mpmath.mpf(a) for a in args])
    for value, exact in zip(got, expected, strict=True):
        assert value == pytest.approx(float(exact), rel=1e-12, abs=0.0)


ARRAY_CASES = [c for c in CASES if c[0] in NUMPY_NAMES] + [
    ("hypot", (1e200, -3e200)),
    ("hypot", (1e-200, 3e-200)),
    # x ** (-2/3) / 3 through the root: no overflow, and negative x too (x ** (2/3) is nan)
    ("cbrt", (1e-300,)),
    ("cbrt", (-8e300,)),
    ("cbrt", (-1e-3,)),
    ("exp2", (1000.0,)),
    ("exp2", (-1000.0,)),
    # e^a / (e^a + e^b) overflows (0/0 below): exp(a - result) does not
    ("logaddexp", (1000.0, 1000.5)),
    ("logaddexp", (-1000.0, -1001.0)),
    ("logaddexp", (0.0, -700.0)),
]


@pytest.mark.parametrize(("name", "args"), ARRAY_CASES, ids=[f"{n}{a}" for n, a in ARRAY_CASES])
@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_array_rule_is_accurate_at_extreme_arguments(name, args, mode, tmp_path) -> None:
    params = "y, x" if name == "atan2" else ("x, y" if name in ("hypot", "logaddexp") else "x")
    function = NUMPY_NAMES.get(name, name)
    source = (
        f"import numpy as np\n\n\ndef f({params}):\n    return np.sum(np.{function}({params}))\n"
    )
    f = function_from_source(tmp_path, source)
    got = grad(f, mode=mode)(*[np.array([a]) for a in args])
    got = got if isinstance(got, tuple) else (got,)
    with mpmath.workdps(60):
        expected = PARTIALS[name](*[mpmath.mpf(a) for a in args])
    for value, exact in zip(got, expected, strict=True):
        assert value[0] == pytest.approx(float(exact), rel=1e-12, abs=0.0)


INFINITE_LOGADDEXP = [
    # (a, b) -> the partials' limits: the larger argument takes all; equal ones share it.
    ((np.inf, 1.0), (1.0, 0.0)),
    ((1.0, np.inf), (0.0, 1.0)),
    ((-np.inf, 2.0), (0.0, 1.0)),
    ((np.inf, np.inf), (0.5, 0.5)),
    ((-np.inf, -np.inf), (0.5, 0.5)),
    ((3.0, 3.0), (0.5, 0.5)),
]


@pytest.mark.parametrize(("args", "limits"), INFINITE_LOGADDEXP, ids=str)
@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_logaddexp_partials_at_infinite_arguments_are_their_limits(
    args, limits, mode, tmp_path
) -> None:
    # exp(a - result) read inf - inf (nan, with NumPy's RuntimeWarning) where a is +inf.
    source = "import numpy as np\n\n\ndef f(x, y):\n    return np.sum(np.logaddexp(x, y))\n"
    f = function_from_source(tmp_path, source)
    got = grad(f, mode=mode)(*[np.array([a]) for a in args])
    assert [float(p[0]) for p in got] == list(limits)


def _quotient_partials(a, b):
    value = mpmath.exp(a) / b * 1000
    return (value, -value / b)


def _scaled_hypot_partials(a, b):
    return (1e9 * a / mpmath.hypot(a, b), 1e9 * b / mpmath.hypot(a, b))


def _hypot_of_product_partials(a, b):
    h = mpmath.hypot(a * b, 1)
    return (b * a * b / h, a * a * b / h)


SCALED_CASES = [
    # g * result overflowed in `-g * result / b`, where (g / b) * result is finite
    ("{m}.exp(a) / b * 1000.0", (709.0, 100.0), _quotient_partials),
    # g * x overflowed in `g * x / result`, where g * (x / result) is finite
    ("1e9 * {m}.hypot(a, b)", (1e300, 3e299), _scaled_hypot_partials),
    ("{m}.hypot(a * b, 1.0)", (1e300, 0.5), _hypot_of_product_partials),
]


@pytest.mark.parametrize(("body", "args", "exact"), SCALED_CASES, ids=[c[0] for c in SCALED_CASES])
@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("arrays", [False, True], ids=["math", "numpy"])
def test_an_incoming_derivative_does_not_overflow_a_finite_partial(
    body, args, exact, mode, arrays, tmp_path
) -> None:
    if arrays:
        returned = f"np.sum({body.format(m='np')})"
        source = f"import numpy as np\n\n\ndef f(a, b):\n    return {returned}\n"
    else:
        source = f"import math\n\n\ndef f(a, b):\n    return {body.format(m='math')}\n"
    f = function_from_source(tmp_path, source)
    point = [np.array([a]) for a in args] if arrays else list(args)
    with np.errstate(over="ignore"):
        got = grad(f, mode=mode)(*point)
    with mpmath.workdps(60):
        expected = exact(*[mpmath.mpf(a) for a in args])
    for value, reference in zip(got, expected, strict=True):
        value = float(np.ravel(value)[0])
        if abs(reference) > np.finfo(float).max:
            assert value == float("inf") * mpmath.sign(reference)  # the true value overflows
        else:
            assert value == pytest.approx(float(reference), rel=1e-12)


MATH_POW = """
import math


def cube_root(x):
    return math.pow(x, 1.0 / 3.0)
"""


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_math_pow_of_a_negative_base_raises_as_the_function_does(tmp_path, mode):
    """Its partial was `(1/3) * x ** (1/3 - 1)`, a complex number at x = -8 (the forward
    math.pow, which raises, was dead code); JAX gives nan, math.pow itself ValueError."""
    fn = function_from_source(tmp_path, MATH_POW, "cube_root")
    with pytest.raises(ValueError):
        fn(-8.0)
    with pytest.raises(ValueError):
        grad(fn, mode=mode)(-8.0)
    expected = mpmath.mpf(1) / 3 * mpmath.power(8, mpmath.mpf(-2) / 3)
    assert grad(fn, mode=mode)(8.0) == pytest.approx(float(expected), rel=1e-15)
