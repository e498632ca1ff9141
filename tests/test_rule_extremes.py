"""Derivative rules at extreme arguments, against closed forms evaluated in 60-digit mpmath.

The rule table (``test_rule_table.py``) samples each rule where its arguments are ordinary.
Some textbook formulas fail far from there although the derivative is an ordinary float:
``x * x + y * y`` in ``atan2``'s partials underflows near 1e-160 and overflows near 1e154,
``sqrt(x * x + 1)`` in ``asinh``'s overflows, and ``result + 1`` in ``expm1``'s cancels for
x below -20. The rules avoid these; this pins it down, in both modes.
"""

from __future__ import annotations

import mpmath
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
]


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
