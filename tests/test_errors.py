"""Compile-time errors: each unsupported construct is rejected at its node, with its own message."""

from __future__ import annotations

import re
import sys
import textwrap
import types

import pytest

from adcompile import AdcompileError, NoDerivativeError, UnsupportedSyntaxError, grad, jacobian
from tests.helpers import function_from_source, module_from_source

U, N = UnsupportedSyntaxError, NoDerivativeError

# (body of f(x, y), the text the caret must point at, error class, message fragment)
CASES = [
    ("t = (x, y)\nfor v in t:\n    x = x * v\nreturn x", "t:", N, "functions that use NumPy"),
    (f"for v in ({', '.join(['x'] * 33)}):\n    y = y * v\nreturn y", "(x, x", U, "at most 32"),
    ("for a, b in range(3):\n    x = x * 2\nreturn x", "a, b", U, "single name"),
    ("for i in range():\n    x = x * 2\nreturn x", "range()", U, "1 to 3"),
    ("while x > 0:\n    x = x - 1\nelse:\n    print(x)\nreturn x", "print", U, "expression"),
    ("try:\n    x = x * 2\nexcept Exception:\n    pass\nreturn x", "try", U, "`try`"),
    ("with open('f') as h:\n    x = x * 2\nreturn x", "with", U, "`with`"),
    ("global G\nreturn x", "global", U, "`global`"),
    ("@deco\ndef h(a):\n    return a\nreturn h(x)", "def h", U, "decorators on nested"),
    ("class C:\n    pass\nreturn x", "class", U, "class definitions"),
    ("z = x\ndel z\nreturn x", "del", U, "`del`"),
    ("raise ValueError()\nreturn x", "raise", U, "`raise`"),
    ("assert x > 0\nreturn x", "assert", U, "`assert`"),
    ("import math\nreturn x", "import", U, "imports inside"),
    ("return (lambda a: a * 2)(x)", "lambda a", U, "only calls to named functions"),
    ("return helper(x, *[y])", "*[y]", U, "`*args`"),
    ("return helper(x, c=y)", "c=y", U, "no parameter `c`"),
    ("return helper()", "helper()", U, "no value for parameter `a`"),
    ("z = [x * i for i in range(3)]\nreturn x", "[x", U, "a list comprehension is supported only"),
    ("return sum([x, y])", "sum", N, "add up in a `for` loop, or use np.sum"),
    ("z = [x]\nz.append(y)\nreturn x", "z.append", U, "calling methods"),
    ("yield x\nreturn x", "yield", U, "`yield`"),
    ("return (z := x * 2)", "z :=", U, "walrus"),
    ("return [x, y]", "[x, y]", U, "several values"),
    ("return [(x, None), (x, 1.0)]", "[(x", U, "several values"),  # not about the None
    ("a, b = None, x * y\nreturn a", "a\n", U, "`a` may still hold"),
    ("r = None\nout = r if x > 0 else x\nreturn out", "out\n", U, "`out` may still hold"),
    ("r = x\nfor v in (x, None):\n    r = v\nreturn r", "r\n", U, "`r` may still hold"),
    ("g = lambda t: None\nreturn g(x)", "g(x)", U, "`g(...)` may return None"),
    (
        "def g(t):\n    if t > 0:\n        return None\n    return t\nreturn g(x)",
        "g(x)",
        U,
        "`g(...)` may return None",
    ),
    ("return x, y", "x, y", U, "several values"),
    ("z = {'a': x}\nreturn x", "{'a'", U, "dicts"),
    ("s = f'{x}'\nreturn x", "f'", U, "f-strings"),
    ("x.attr = 1.0\nreturn x", "x.attr", U, "assigning to an attribute"),
    ("z = x\nz[0] = 1.0\nreturn x", "z[0]", U, "build arrays from their parts"),
    ("a, *b = x, y, y\nreturn x", "*b", U, "starred"),
    ("return x & y", "x & y", U, "`&`"),
    ("return ~x", "~x", U, "`~`"),
    ("return x * 'a'", "'a'", U, "not a number"),
    ("return x * 1j", "1j", U, "not a number"),
    ("return x * float('inf')", "'inf'", U, "write math.inf instead of float('inf')"),
    ("return crc32(x)", "crc32", U, "`crc32` is `zlib.crc32`, from a module other than math"),
    ("print(x)\nreturn x", "print", U, "expression statement"),
    ("return round(x) * y", "round", N, "`round` has no derivative"),
    ("return (x or y) * 2.0", "x or y", N, "`and`/`or`"),
    ("z = z + x\nreturn z", "z + x", U, "before it is assigned"),
    ("return x * undefined_thing", "undefined_thing", U, "not defined"),
    ("return x * NAME", "NAME", U, "is a str"),
    # Located at the call, not at the default, before.
    ("def h(a, k=y):\n    return a * k\nreturn h(x)", "y):", U, "default must be a number"),
    ("h = lambda a, k=y * 2: a * k\nreturn h(x)", "y * 2", U, "default must be a number"),
    ("for v in LIST:\n    x = x * v\nreturn x", "LIST", U, "is a list, which may change"),
    ("for a, *rest in ((1.0, 2.0),):\n    x = x * a\nreturn x", "a, *rest", U, "starred"),
    ("for k, v.real in enumerate((1.0,)):\n    x = x * k\nreturn x", "v.real", U, "attributes"),
    ("z = x * y", "z = x", U, "must end with `return"),
    ("if x > 0:\n    return x * y", "if x > 0", U, "give the `if` an `else:`"),
    ("if x > 0:\n    return x\nelif y > 0:\n    return y", "if x > 0", U, "without `return`"),
    ("for i in range(3):\n    if x > i:\n        return x", "for i", U, "loop can finish"),
    ("while x > 0:\n    x = x - 1.0\n    return x", "while", U, "loop can finish"),
    ("while True:\n    if x > y:\n        break\n    return x", "while", U, "loop can finish"),
    (
        "while True:\n    for i in range(2):\n        x = x * y\n    else:\n        break\n"
        "    return x",
        "while",
        U,
        "loop can finish",
    ),
    ("if x > y:\n    return y, x\nreturn x", "y, x", U, "grad needs one scalar"),
    ("for i, v in enumerate((x, y), 1, 2):\n    x = x * v\nreturn x", "enumerate", U, "a start"),
    ("for v in reversed((x, y), 1):\n    x = x * v\nreturn x", "reversed", U, "reversed() one"),
    ("for a, b in zip((x,), zip((y,), (y,))):\n    x = x * a\nreturn x", "zip((y,)", U, "inside"),
    # The return inside an unsupported block: the block is named, not a missing return.
    ("try:\n    return x\nexcept Exception:\n    return y", "try", U, "`try` is not"),
    ("with open('f') as h:\n    return x", "with", U, "`with` blocks are not"),
    ("match x:\n    case 1.0:\n        return x", "match", U, "`match` is not"),
    ("try:\n    z = x\nexcept* ValueError:\n    z = y\nreturn z", "try", U, "`try` is not"),
    ("z = x\nglobal G\ntry:\n    return z\nfinally:\n    pass", "global", U, "`global` is"),
    ("return math.hypot(x, y, x)", "math.hypot", U, "with 2 argument(s), not 3"),
    ("return x.real", "x.real", U, "reading `x.real` is not supported"),
    ("return x * y.scale", "y.scale", U, "pass any other value in as a parameter"),
    ("h = x\nreturn h(y)", "h(y)", U, "calling a local"),
    ("t = (x, y)\na, b = t\nreturn a", "t\n", U, "only from a literal tuple"),
    ("t = (x, y)\nreturn t[0] * x", "(x, y)", N, "tuples and lists of differentiated values"),
    ("a, b = x\nreturn a", "x\n", U, "only from a literal tuple"),
    ("a, b = helper(x)\nreturn a", "helper(x)", U, "ends in `return a, b`"),
    ("return max(x)", "max(x)", U, "`max` of one argument (a sequence)"),
    ("return math.log(x, base=2.0)", "base", U, "keyword arguments"),
    ("return", "return", U, "needs a value"),
    # A bare early return used to compile, and the gradient was a silent 0.0.
    ("if x > 0:\n    return\nreturn x", "return\n", U, "`return` needs a value"),
    ("z = x\nyield z", "yield", U, "makes a generator"),
    # `return None` and a local left at None compiled too, with a silent 0.0 gradient.
    ("if x > 0:\n    return None\nreturn x", "None", U, "`None` may be returned here"),
    ("return x if x > 0 else None", "None", U, "`None` may be returned here"),
    ("return y and None", "None", U, "`None` may be returned here"),
    ("z = None\nif x > 0:\n    z = x * y\nreturn z", "z\n", U, "`z` may still hold the None"),
    ("z: float = None\nreturn z if x > 0 else y", "z if", U, "given to it on line"),
    ("z = None\nif x > 0:\n    z = x\nw = z\nreturn w", "w\n", U, "`w` may still hold"),
    (
        "z = None\nfor i in range(3):\n    if y > i:\n        break\n    z = x\nreturn z",
        "z\n",
        U,
        "`z` may still hold",
    ),
    ("def h(a):\n    return a * x\nreturn h", "h\n", U, "is a function here, not a number"),
]


def _case_module(tmp_path, body: str):
    header = "import math\nfrom zlib import crc32\nNAME = 'text'\nLIST = [1.0, 2.0]\n\n\n"
    header += "def helper(a):\n    return a\n\n\n"
    header += "def rec(a):\n    return rec(a - 1) if a > 0 else a\n\n\n"
    text = header + "def f(x, y):\n" + textwrap.indent(body, "    ") + "\n"
    return module_from_source(tmp_path, text), text


def _expected_position(text: str, needle: str) -> tuple[int, int]:
    body_start = text.index("\n", text.index("def f"))
    offset = text.index(needle, body_start)
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, col


def test_an_early_return_of_several_values_is_located(tmp_path):
    body = "for i in range(4):\n    x = x * y\n    if x > 2.0:\n        return x, y\nreturn y, x"
    module, text = _case_module(tmp_path, body)
    with pytest.raises(UnsupportedSyntaxError) as info:
        jacobian(module.f)
    line, col = _expected_position(text, "x, y\n")
    assert str(info.value).startswith(f"{module.__file__}:{line}:{col}: ")
    assert "returned only by the function's last statement" in str(info.value)


@pytest.mark.parametrize(("body", "needle", "cls", "fragment"), CASES, ids=[c[3] for c in CASES])
def test_unsupported_construct_is_located(tmp_path, body, needle, cls, fragment):
    module, text = _case_module(tmp_path, body)
    with pytest.raises(cls) as info:
        grad(module.f, wrt="x")
    line, col = _expected_position(text, needle)
    message = str(info.value)
    assert message.startswith(f"{module.__file__}:{line}:{col}: "), message
    assert fragment in message
    shown, caret = message.splitlines()[1:3]
    assert shown.strip() == text.splitlines()[line - 1].strip()
    indent = len(text.splitlines()[line - 1]) - len(text.splitlines()[line - 1].lstrip())
    assert caret.index("^") - 4 == col - 1 - indent


@pytest.mark.skipif(sys.version_info < (3, 12), reason="`type X = ...` is new in Python 3.12")
def test_a_type_alias_statement_is_refused_with_its_own_message(tmp_path):
    module, text = _case_module(tmp_path, "type Pair = tuple[float, float]\nreturn x")
    with pytest.raises(UnsupportedSyntaxError, match="`type` alias inside the function") as info:
        grad(module.f, wrt="x")
    line, col = _expected_position(text, "type Pair")
    assert str(info.value).startswith(f"{module.__file__}:{line}:{col}: ")


def test_error_classes_share_a_base():
    assert issubclass(UnsupportedSyntaxError, AdcompileError)
    assert issubclass(NoDerivativeError, AdcompileError)
    assert issubclass(AdcompileError, Exception)


def test_non_positional_parameters_are_rejected(tmp_path):
    module = module_from_source(tmp_path, "def f(x, *rest):\n    return x\n")
    with pytest.raises(UnsupportedSyntaxError, match="only positional parameters"):
        grad(module.f)


def test_async_function_is_rejected(tmp_path):
    module = module_from_source(tmp_path, "async def f(x):\n    return x\n")
    with pytest.raises(UnsupportedSyntaxError, match="async functions"):
        grad(module.f)


def test_non_function_is_a_type_error():
    with pytest.raises(TypeError, match="Python functions"):
        grad(len)


@pytest.mark.parametrize(
    ("body", "wrt"),
    [
        ("return x * math.floor(y)", "x"),  # no derivative flows through floor(y)
        ("return x * 2.0 if math.floor(x) > 1 else x", "x"),  # floor only in the test
        ("return (x > 0) * x", "x"),  # comparisons are piecewise constant
        ("return x * round(y)", "x"),
    ],
)
def test_functions_without_rules_are_fine_off_the_derivative_path(tmp_path, body, wrt):
    module, _ = _case_module(tmp_path, body)
    g = grad(module.f, wrt=wrt)
    h = 1e-6
    for x, y in [(0.7, 2.3), (1.6, -1.2)]:
        numeric = (module.f(x + h, y) - module.f(x - h, y)) / (2 * h)
        assert g(x, y) == pytest.approx(numeric, rel=1e-6)


def test_error_on_the_path_depends_on_wrt(tmp_path):
    module, _ = _case_module(tmp_path, "return x * math.floor(y)")
    with pytest.raises(NoDerivativeError, match=r"math\.floor"):
        grad(module.f, wrt="y")


def test_recursion_is_rejected_at_the_recursive_call(tmp_path):
    module = module_from_source(
        tmp_path,
        """
        def even(n, x):
            return x if n <= 0 else odd(n - 1, x)


        def odd(n, x):
            return -x if n <= 0 else even(n - 1, x)


        def f(x):
            return even(3, x) * x
        """,
    )
    with pytest.raises(UnsupportedSyntaxError, match="recursive call even -> odd -> even") as info:
        grad(module.f)
    assert str(info.value).startswith(f"{module.__file__}:7:30: ")


def test_unsupported_block_in_a_called_helper_is_named(tmp_path):
    text = (
        "def f(x):\n    return tryer(x) + 1.0\n\n\n"
        "def tryer(a):\n    try:\n        return a * 2.0\n    except ValueError:\n"
        "        return a\n"
    )
    module = module_from_source(tmp_path, text)
    with pytest.raises(UnsupportedSyntaxError, match="`try` is not supported") as info:
        grad(module.f)
    assert str(info.value).startswith(f"{module.__file__}:6:5: ")


def test_a_reduction_keyword_is_named(tmp_path):
    """`max(gen, default=x)` was told to pass its keywords positionally (a TypeError then)."""
    fn = function_from_source(
        tmp_path, "def f(x, n):\n    return max((x * i for i in range(n)), default=x)\n"
    )
    with pytest.raises(UnsupportedSyntaxError, match="`max\\(\\)` with `default=`"):
        grad(fn)


@pytest.mark.parametrize("name", ["max", "min"])
def test_a_key_of_min_or_max_gets_its_own_advice(tmp_path, name):
    """`max(x, y, key=abs)` was given the advice for `default=`."""
    fn = function_from_source(tmp_path, f"def f(x, y):\n    return {name}(x, y, key=abs)\n")
    with pytest.raises(UnsupportedSyntaxError, match=f"`{name}\\(\\)` with `key=`") as caught:
        grad(fn)
    message = str(caught.value)
    assert "default" not in message
    advice = message.split("e.g. `")[1].split("`")[0]
    advice = re.sub(r"\bb\b", "y", re.sub(r"\ba\b", "x", advice))
    written = function_from_source(tmp_path, f"def f(x, y):\n    return {advice}\n")
    python = function_from_source(tmp_path, f"def f(x, y):\n    return {name}(x, y, key=abs)\n")
    for point in [(1.0, -2.0), (-3.0, 2.0), (2.0, -2.0), (-2.0, 2.0)]:
        assert written(*point) == python(*point)  # the advice is what Python computes


@pytest.mark.parametrize("use", ["if helper(x) > 1.0:", "if x > 0.0 and helper(x) > 1.0:"])
def test_a_call_in_a_test_of_a_function_without_source_is_located_at_the_call(tmp_path, use):
    """A call in a branch test was looked up before the error could be placed: the message
    had no FILE:LINE:COL."""
    module = module_from_source(
        tmp_path,
        f"""
namespace = {{}}
exec("def helper(x):\\n    return x * x\\n", namespace)
helper = namespace["helper"]


def f(x):
    {use}
        return x * 2.0
    return x * 3.0
""",
    )
    with pytest.raises(UnsupportedSyntaxError, match="made by exec") as caught:
        grad(module.f)
    column = 4 + use.index("helper") + 1  # 1-based, after the body's indent
    assert str(caught.value).startswith(f"{module.__file__}:8:{column}: cannot read")


NONE_THEN_NUMBER = """
def overwritten(x):
    best = None
    best = x * x
    return best


def both_arms(x):
    r = None
    if x > 0:
        r = x * x
    else:
        r = -x
    return r


def until_set(x):
    r = None
    while r is None:
        r = x * 4.0
    return r


def running_maximum(x):
    best = None
    for i in range(3):
        if best is None or x * i > best:
            best = x * i
    return best


def equals_none(x):
    r = None
    if x > 0:
        r = x * x
    if None == r:
        r = -x
    return r


def unless_none(x, scale=None):
    if scale is None:
        scale = 2.0
    return x * scale


def returned_default(x, best=None):
    if x > 0:
        best = x * x
    return best


def clipped(x):
    if x < 0:
        return None
    return x * x


def through_a_helper(x):
    return clipped(x)


def tested_by_the_caller(x):
    y = clipped(x)
    if y is None:
        return -x
    return y
"""


def test_a_local_given_none_then_a_number_on_every_path_compiles(tmp_path):
    """Every path gives it a number before the return: refusing these was a false alarm."""
    module = module_from_source(tmp_path, NONE_THEN_NUMBER)
    assert grad(module.overwritten)(1.5) == 3.0
    assert grad(module.both_arms)(1.5) == 3.0 and grad(module.both_arms)(-1.5) == -1.0
    assert grad(module.until_set)(1.5) == 4.0
    assert grad(module.running_maximum)(1.5) == 2.0  # max(0, x, 2x) at x > 0: 2x
    assert grad(module.equals_none)(-1.5) == -1.0
    assert grad(module.unless_none, wrt="x")(1.5) == 2.0


def test_a_none_from_a_default_or_a_helper_is_refused_where_it_is_returned(tmp_path):
    """Each compiled, and the gradient was a silent 0.0 (1.0 for the None parameter)."""
    module = module_from_source(tmp_path, NONE_THEN_NUMBER)
    with pytest.raises(UnsupportedSyntaxError, match="`best` defaults to None"):
        grad(module.returned_default)
    with pytest.raises(UnsupportedSyntaxError, match=r"`clipped\(\.\.\.\)` may return None"):
        grad(module.through_a_helper)
    tested = module.tested_by_the_caller  # a helper's None may be tested by its caller
    assert grad(tested)(1.5) == 3.0 and grad(tested)(-1.5) == -1.0


def test_lambdas_sharing_a_line_are_told_apart(tmp_path):
    """Each lambda's code starts with an instruction of no width at column 0, inside neither
    body: the search for the lambda whose body holds the code's positions found none, and
    two lambdas on one line were always refused."""
    module = module_from_source(
        tmp_path,
        "sq, cube = lambda x: x * x, lambda x: x ** 3\n"
        "outer = lambda s: (lambda x: x * s * x)\n"
        "zero, ident = lambda x: 0.0, lambda x: x\n",
    )
    assert grad(module.sq)(1.5) == 3.0
    assert grad(module.cube)(1.5) == pytest.approx(3.0 * 1.5**2, rel=1e-15)
    assert grad(module.outer(2.0))(1.5) == 6.0  # the inner one: 2 s x
    # Python 3.12 gives a constant-returning lambda's code no position at all.
    assert grad(module.zero)(1.5) == 0.0 and grad(module.ident)(1.5) == 1.0


def test_a_function_made_by_exec_is_said_to_have_no_source_when_linecache_holds_other_code(
    monkeypatch,
):
    """Python 3.13 (under pytest-xdist) caches text for `<string>`: other code's. The
    function was then 'not found' at `<string>:1:1` instead of having no source."""
    import linecache

    namespace: dict = {}
    exec("def helper(x):\n    return x * x\n", namespace)
    other = "import sys;exec(eval(sys.stdin.readline()))\n"
    monkeypatch.setitem(linecache.cache, "<string>", (len(other), None, [other], "<string>"))
    with pytest.raises(AdcompileError, match="made by exec") as caught:
        grad(namespace["helper"])
    assert "<string>:1:1" not in str(caught.value)


def test_a_returned_self_call_with_a_default_is_named_as_recursion(tmp_path):
    """The check for helpers returning None parsed `m(x)` afresh at each call (its default
    filled in), never saw it twice and ran out of stack: "nests too deeply"."""
    module = module_from_source(
        tmp_path,
        """
        def m(x, y=1.0):
            return m(x)


        def f(x):
            return m(x)
        """,
    )
    with pytest.raises(UnsupportedSyntaxError, match="recursive call m -> m"):
        grad(module.f)


def test_another_autodiff_librarys_functions_are_not_inlined(tmp_path, monkeypatch):
    """autograd.numpy's functions are Python wrappers: they were inlined as the user's own
    and failed deep inside autograd ("nests too deeply")."""
    package, numpy_like = types.ModuleType("autograd"), types.ModuleType("autograd.numpy")
    exec("def sin(x, *args, **kwargs):\n    return x\n", numpy_like.__dict__)
    numpy_like.sin.__module__ = "autograd.numpy"
    package.numpy = numpy_like
    monkeypatch.setitem(sys.modules, "autograd", package)
    monkeypatch.setitem(sys.modules, "autograd.numpy", numpy_like)
    module = module_from_source(
        tmp_path,
        """
        import autograd.numpy as anp
        from autograd.numpy import sin


        def through_module(x):
            return anp.sin(x) * x


        def imported(x):
            return sin(x) * x
        """,
    )
    with pytest.raises(UnsupportedSyntaxError, match=r"module `autograd.numpy` is not supported"):
        grad(module.through_module)
    with pytest.raises(UnsupportedSyntaxError, match=r"`sin` is a function of autograd"):
        grad(module.imported)
