"""A variable read where some path leaves it unbound: the gradient raises as Python does.

``grad`` used to return 0.0 there (the forward value was dead code for the gradient), and
the unoptimised code and ``explain`` raised a TypeError about None, a value the user never
wrote. The references are Python itself (the function raises UnboundLocalError) and closed
forms where the variable is bound.
"""

from __future__ import annotations

import ast
import textwrap

import numpy as np
import pytest

from adcompile import explain, grad, jvp, value_and_grad
from adcompile.cli import main
from adcompile.unbound import maybe_unbound_reads
from tests.helpers import module_from_source

SOURCE = """
import numpy as np


def branch_only(x):
    if x > 0:
        y = x * 3.0
    return y * 2.0


def after_a_loop(x, n):
    for i in range(n):
        last = x * i
    return last * 2.0 + x


def array_branch(x):
    if np.sum(x) > 0.0:
        y = x * 3.0
    return np.sum(y * y)


def early_return(x):
    if x < 0:
        return 0.0
    y = x * 2.0
    if y > 1.0:
        return y
    z = y * 3.0
    return z


def left_by_break(x):
    while True:
        y = x * 2.0
        if y > 0.0:
            break
        x = x + 1.0
    return y
"""


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    return module_from_source(tmp_path_factory.mktemp("unbound"), SOURCE)


def _flagged(code: str, params: tuple[str, ...] = ("x",)) -> set[str]:
    """The names whose reads the analysis flags in the body of ``def f(x)``."""
    body = ast.parse(textwrap.dedent(code)).body
    stored = (n for n in ast.walk(ast.Module(body, [])) if isinstance(n, ast.Name))
    local = {n.id for n in stored if isinstance(n.ctx, ast.Store)}
    return {name for _, _, name in maybe_unbound_reads(body, params, local - set(params))}


@pytest.mark.parametrize(
    ("code", "flagged"),
    [
        ("if x > 0:\n    y = x\nreturn y", {"y"}),
        ("if x > 0:\n    y = x\nelse:\n    y = -x\nreturn y", set()),
        ("if x > 0:\n    return x\ny = x\nreturn y", set()),  # the returning path never gets there
        ("for i in range(3):\n    last = x\nreturn last + i", {"last", "i"}),  # zero rounds
        ("for i in range(3):\n    s += x\n    s = 0.0\nreturn x", {"s"}),
        ("while True:\n    y = x\n    if y > 0:\n        break\nreturn y", set()),
        ("while x > 0:\n    y = x\n    break\nelse:\n    y = 1.0\nreturn y", set()),
        ("s = sum(x * k for k in range(3))\nreturn s", set()),  # k is the generator's own
        ("for i in range(3):\n    if i > 0:\n        s = p\n    p = x\nreturn x", {"p"}),
    ],
)
def test_the_analysis_flags_reads_some_path_leaves_unbound(code, flagged):
    assert _flagged(code) == flagged


@pytest.mark.parametrize(
    ("name", "unbound_at", "bound_at", "expected"),
    [
        ("branch_only", (-1.0,), (1.5,), 6.0),
        ("after_a_loop", (1.5, 0), (1.5, 3), 2.0 * 2 + 1.0),  # d/dx (2 x (n - 1) + x)
    ],
)
def test_every_transform_raises_where_python_does(module, name, unbound_at, bound_at, expected):
    fn = getattr(module, name)
    with pytest.raises(UnboundLocalError) as python:
        fn(*unbound_at)
    line = python.traceback[-1].lineno + 1  # the user's line Python failed on
    transforms = {
        "reverse": grad(fn, wrt=0),
        "forward": grad(fn, wrt=0, mode="forward"),
        "unoptimised": grad(fn, wrt=0, optimize=False),
        "value_and_grad": value_and_grad(fn, wrt=0),
        "second derivative": grad(grad(fn, wrt=0), wrt=0),
        "jvp": lambda *a: jvp(fn, a, (1.0,) + (0,) * (len(a) - 1)),
        "explain": lambda *a: explain(fn, *a),
    }
    for label, transform in transforms.items():
        with pytest.raises(UnboundLocalError, match=str(python.value)) as caught:
            transform(*unbound_at)
        if label not in ("second derivative", "explain"):
            assert f"in line {line} of " in caught.value.__notes__[0], label
    assert grad(fn, wrt=0)(*bound_at) == expected
    assert grad(fn, wrt=0, mode="forward")(*bound_at) == expected


def test_an_array_variable_bound_in_one_branch(module):
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(grad(module.array_branch)(x), 18.0 * x)
    with pytest.raises(UnboundLocalError):
        grad(module.array_branch)(-x)


def test_paths_python_proves_bound_get_no_check(module):
    for fn in (module.early_return, module.left_by_break):
        assert "UnboundLocalError" not in grad(fn).source
    assert "UnboundLocalError" in grad(module.branch_only).source
    assert grad(module.early_return)(0.7) == 2.0 and grad(module.left_by_break)(-1.3) == 2.0


def test_the_cli_reports_it_as_the_function_failing_there(module, capsys):
    assert main(["explain", f"{module.__file__}:branch_only", "--at", "x=-1"]) == 1
    err = capsys.readouterr().err
    assert "UnboundLocalError: cannot access local variable 'y'" in err
    assert "internal error" not in err and "at x=-1, in line 8 of" in err


SKIPPED_READS = """
def after_and(x):
    if x > 0:
        y = x * x
    if x > 0.0 and y > 1.0:
        return y
    return -2.0 * x


def in_a_while_test(x):
    if x > 0:
        w = 0.1
    while w < 1.0:
        w = w + x
    return w


def in_a_generator(x, n):
    if x > 0:
        y = x
    return sum(y * k for k in range(n)) + x * x
"""


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("after_and", (-1.0,), -2.0),  # `and` never reads y here
        ("after_and", (2.0,), 4.0),
        ("in_a_while_test", (0.5,), 2.0),  # the test reads w after the loop's entry copy
        ("in_a_generator", (-1.0, 0), -2.0),  # no items: the element never runs
    ],
)
def test_reads_python_may_skip_get_no_check(tmp_path, name, args, expected):
    """The regression hunt found checks where Python never reads the name: after the first
    operand of `and`, before a while loop bound its test's variable, in a generator's
    element. Python runs each of these without error; so must every transform."""
    fn = getattr(module_from_source(tmp_path, SKIPPED_READS), name)
    fn(*args)  # Python runs it
    for mode in ("reverse", "forward"):
        assert grad(fn, wrt=0, mode=mode)(*args) == expected
    assert value_and_grad(fn, wrt=0)(*args)[1] == expected


CHECKED_WHERE_READ = """
def while_on_unbound(x):
    if x > 0:
        flag = True
    while flag:
        flag = False
    return x * x


def arm_reads_unbound(x):
    if x > 0:
        y = x
    z = x if x > 0 else y
    return z * 3.0
"""


@pytest.mark.parametrize(
    ("name", "bound_at", "expected"),
    [("while_on_unbound", 1.5, 3.0), ("arm_reads_unbound", 2.0, 3.0)],
)
def test_checks_sit_where_python_reads(tmp_path, name, bound_at, expected):
    """A while test's check ran before the loop's entry copy (always raising), and then was
    dropped (a number where Python raises); an arm of `a if c else b` was not checked."""
    fn = getattr(module_from_source(tmp_path, CHECKED_WHERE_READ), name)
    with pytest.raises(UnboundLocalError):
        fn(-1.0)
    for mode in ("reverse", "forward"):
        assert grad(fn, mode=mode)(bound_at) == expected
        with pytest.raises(UnboundLocalError):
            grad(fn, mode=mode)(-1.0)
    with pytest.raises(UnboundLocalError):
        value_and_grad(fn)(-1.0)


CLOSURES = """
def lambda_reads_later_variable(x):
    g = lambda t: t * y
    if x > 0:
        y = x
    z = g(x)
    return 2.0 * x


def def_reads_later_variable(x):
    def h(t):
        return t * y

    if x > 0:
        y = x
    return h(x) + x
"""


@pytest.mark.parametrize("name", ["lambda_reads_later_variable", "def_reads_later_variable"])
def test_a_local_function_reading_an_unbound_enclosing_variable(tmp_path, name):
    """The analysis did not look inside local functions: `grad` returned 2.0 (or raised a
    TypeError about None) where Python raises NameError ("free variable 'y'")."""
    fn = getattr(module_from_source(tmp_path, CLOSURES), name)
    with pytest.raises(NameError):
        fn(-0.5)
    for mode in ("reverse", "forward"):
        with pytest.raises(NameError):  # UnboundLocalError is a NameError
            grad(fn, mode=mode)(-0.5)
    expected = 2.0 if name.startswith("lambda") else 2.0 * 1.5 + 1.0
    assert grad(fn)(1.5) == pytest.approx(expected)


GUARDED_READS = """
def after_and(x, c):
    if c > 1:
        y = x
    if c > 0 and y != 0.0:
        return x * 3.0
    return x * 2.0


def after_or_not(x, c):
    if c > 1:
        y = x
    return x * 3.0 if (c <= 0 or not y) else x * 2.0


def in_an_arm_of_a_test(x, c):
    if c > 1:
        y = x
    return x * 3.0 if ((y if c > 0 else 1.0) > 0.5) else x * 2.0


def nested_in_and(x, c):
    if c > 1:
        y = x
    if c > 0 and (c > 5 or y > 0.0):
        return x * 3.0
    return x * 2.0
"""


@pytest.mark.parametrize(
    "name", ["after_and", "after_or_not", "in_an_arm_of_a_test", "nested_in_and"]
)
def test_a_guarded_read_is_checked_where_python_makes_it(tmp_path, name):
    """A read after `and`/`or` or in an arm of a test's `a if c else b` went unchecked: at
    c = 0.5, where Python reads the unbound `y` and raises, the gradient returned a number
    (the placeholder took part in `!=`, `not`, `>`). Python itself is the reference."""
    fn = getattr(module_from_source(tmp_path, GUARDED_READS), name)
    source = grad(fn, wrt=0).source  # the placeholder is explained once, at the top
    assert source.count("marks v as not set yet") == 1 and "y_1 = NotImplemented" in source
    transforms = {
        "reverse": grad(fn, wrt=0),
        "forward": grad(fn, wrt=0, mode="forward"),
        "unoptimised": grad(fn, wrt=0, optimize=False),
        "value_and_grad": value_and_grad(fn, wrt=0),
        "jvp": lambda *a: jvp(fn, a, (1.0, 0.0)),
    }
    with pytest.raises(UnboundLocalError):
        fn(0.7, 0.5)
    for label, transform in transforms.items():
        with pytest.raises(UnboundLocalError):
            transform(0.7, 0.5)
        for c in (-1.0, 2.0, 6.0):  # where Python skips the read, or y is bound
            slope = fn(1.0, c) / 1.0  # each function is 2x or 3x: the slope is f(1)
            assert grad(fn, wrt=0)(0.7, c) == slope, (label, c)
            assert value_and_grad(fn, wrt=0)(0.7, c) == (fn(0.7, c), slope), (label, c)


NONE_VALUES = """
def none_in_the_loop(x, p):
    for v in p:
        found = None
        if v > 2.0:
            found = v
    if found is None:
        return x * x
    return found * x


def returns_none(c):
    if c > 0:
        return None
    return c


def none_from_a_helper(x, c, n):
    for i in range(n):
        y = returns_none(c)
    if y is None:
        return x * x
    return y * x


def none_from_a_parameter(x, n, s=None):
    for i in range(n):
        y = s
    if y is None:
        return x * x
    return y * x
"""


@pytest.mark.parametrize(
    ("name", "args", "expected", "unbound_at"),
    [
        ("none_in_the_loop", (1.5, [1.0, 1.0]), 3.0, (1.5, [])),  # None: d(x * x) = 2x
        ("none_in_the_loop", (1.5, [1.0, 3.0]), 3.0, (1.5, [])),  # found = 3.0: d(3x) = 3
        ("none_from_a_helper", (1.5, 1.0, 1), 3.0, (1.5, 1.0, 0)),
        ("none_from_a_helper", (1.5, -2.0, 1), -2.0, (1.5, 1.0, 0)),
        ("none_from_a_parameter", (1.5, 1), 3.0, (1.5, 0)),
        ("none_from_a_parameter", (1.5, 1, 4.0), 4.0, (1.5, 0, 4.0)),
    ],
)
def test_a_variable_holding_none_is_not_taken_for_unbound(
    tmp_path, name, args, expected, unbound_at
):
    """The placeholder of an unbound variable was None, so a variable that may be unbound
    and holds the user's own None raised UnboundLocalError where the function returns."""
    fn = getattr(module_from_source(tmp_path, NONE_VALUES), name)
    for mode in ("reverse", "forward"):
        assert grad(fn, wrt=0, mode=mode)(*args) == expected
        with pytest.raises(UnboundLocalError):  # the loop ran zero times
            grad(fn, wrt=0, mode=mode)(*unbound_at)
    assert value_and_grad(fn, wrt=0)(*args) == (fn(*args), expected)
    with pytest.raises(UnboundLocalError):
        fn(*unbound_at)


ELLIPSIS_SOURCE = """
import numpy as np


def squares_of_a_part(x, c, part):
    if c > 0:
        j = part
    if c > 0:
        return np.sum(x[j] ** 2)
    return np.sum(x)
"""


def test_a_users_ellipsis_is_not_taken_for_unbound(tmp_path):
    """NumPy's whole-array index `...` passed in and held in a variable some path leaves
    unbound was taken for the placeholder (then `...`): UnboundLocalError, in every mode,
    where the function returns 6.5."""
    module = module_from_source(tmp_path, ELLIPSIS_SOURCE)
    fn, x = module.squares_of_a_part, np.array([0.5, 1.5, 2.0])
    assert fn(x, 1.0, ...) == 6.5
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(grad(fn, wrt="x", mode=mode)(x, 1.0, ...), 2.0 * x)
    value, tangent = jvp(fn, (x, 1.0, ...), (np.ones(3), 0.0, None))
    assert value == 6.5 and tangent == pytest.approx(np.sum(2.0 * x))
