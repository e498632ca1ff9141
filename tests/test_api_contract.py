"""The API's promises around compiled-code reuse, threads and bad arguments."""

from __future__ import annotations

import inspect
import math
import sys
import threading
import types
from pathlib import Path

import numpy as np
import pytest

import adcompile
from adcompile import (
    derivative,
    dump,
    explain,
    grad,
    hessian,
    jacobian,
    jvp,
    rule_scope,
    value_and_grad,
    vjp,
)
from adcompile.compose import _CACHE
from adcompile.rules.registry import RuleError
from adcompile.testing import assert_grad_matches_sympy
from tests.helpers import module_from_source

SOURCE = """
import math

K = 2.0


def softplus(x):
    return math.log(1.0 + math.exp(x))


def scaled(x):
    return K * x


def doubled_softplus(x) -> float:
    return softplus(x) * 2.0


def varargs(*xs):
    return xs[0] * xs[1]


def product(x, y):
    return x * y + x
"""


@pytest.fixture
def module(tmp_path: Path) -> types.ModuleType:
    return module_from_source(tmp_path, SOURCE)


def test_jvp_and_vjp_compile_again_when_a_constant_changes(module: types.ModuleType) -> None:
    """They reuse compiled code; it kept K = 2.0 after the module set K = 5.0."""
    assert jvp(module.scaled, (1.0,), (1.0,)) == (2.0, 2.0)
    assert vjp(module.scaled, 1.0)[1](1.0) == (2.0,)
    module.K = 5.0
    assert jvp(module.scaled, (1.0,), (1.0,)) == (5.0, 5.0)
    assert vjp(module.scaled, 1.0)[1](1.0) == (5.0,)


def test_jvp_and_vjp_compile_again_when_a_module_s_constant_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``helpers.K`` read through the module was not looked at: jvp kept K = 2.0."""
    helpers = module_from_source(tmp_path, "K = 2.0\n")
    monkeypatch.setitem(sys.modules, helpers.__name__, helpers)
    user = module_from_source(
        tmp_path, f"import {helpers.__name__} as hm\n\n\ndef scaled(x):\n    return hm.K * x\n"
    )
    assert jvp(user.scaled, (1.0,), (1.0,)) == (2.0, 2.0)
    helpers.K = 9.0
    assert jvp(user.scaled, (1.0,), (1.0,)) == (9.0, 9.0)
    assert vjp(user.scaled, 1.0)[1](1.0) == (9.0,)


def test_jvp_and_vjp_compile_again_for_a_submodule_or_a_module_in_a_closure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pkg.sub.K` after `import pkg.sub`, and `mod.K` for a module held in a closure, were
    keyed by the module alone: jvp gave the old value and derivative (3.0 where the function
    gives 6.0)."""
    package = tmp_path / "stale_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "sub.py").write_text(
        "K = 2.0\n\n\ndef g(x):\n    return K * x * x\n\n\ndef other(x):\n    return 10.0 * x\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("stale_pkg", "stale_pkg.sub"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    user = module_from_source(
        tmp_path,
        """
        import stale_pkg.sub


        def through_constant(x):
            return stale_pkg.sub.K * x * x


        def through_helper(x):
            return stale_pkg.sub.g(x) + x


        def closing_over(module):
            def inner(x):
                return module.K * x
            return inner
        """,
    )
    sub = sys.modules["stale_pkg.sub"]
    inner = user.closing_over(sub)
    assert jvp(user.through_helper, (1.0,), (1.0,)) == (3.0, 5.0)
    assert vjp(user.through_constant, 1.0)[1](1.0) == (4.0,)
    assert jvp(inner, (1.0,), (1.0,)) == (2.0, 2.0)
    sub.K = 5.0
    assert jvp(user.through_helper, (1.0,), (1.0,)) == (6.0, 11.0)
    assert vjp(user.through_constant, 1.0)[1](1.0) == (10.0,)
    assert jvp(inner, (1.0,), (1.0,)) == (5.0, 5.0)
    sub.g = sub.other
    assert jvp(user.through_helper, (1.0,), (1.0,)) == (11.0, 11.0)


def test_jvp_and_vjp_compile_again_when_a_global_names_another_helper(tmp_path: Path) -> None:
    """The key held numbers only: after `helper = cube`, jvp gave x * x's value and tangent
    and the pullback x * x's cotangent, next to Python's own value of the cube."""
    module = module_from_source(
        tmp_path,
        "def square(x):\n    return x * x\n\n\ndef cube(x):\n    return x * x * x\n\n\n"
        "helper = square\n\n\ndef f(x):\n    return helper(x)\n",
    )
    assert jvp(module.f, (3.0,), (1.0,)) == (9.0, 6.0)
    assert vjp(module.f, 3.0)[1](1.0) == (6.0,)
    module.helper = module.cube
    assert jvp(module.f, (3.0,), (1.0,)) == (27.0, 27.0)
    assert vjp(module.f, 3.0)[1](1.0) == (27.0,)


def test_jvp_and_vjp_compile_again_when_a_constant_a_helper_reads_changes(tmp_path: Path) -> None:
    """Only the function's own code was looked at: after K = 7.0, read by a helper of a
    helper, jvp still gave K = 2.0's value and tangent (the value itself wrong)."""
    module = module_from_source(
        tmp_path,
        "K = 2.0\n\n\ndef inner(t):\n    return t * K\n\n\ndef outer(t):\n"
        "    return inner(t) + t\n\n\ndef f(x):\n    return outer(x) * x\n",
    )
    assert jvp(module.f, (3.0,), (1.0,)) == (27.0, 18.0)
    module.K = 7.0
    expected_value, expected_slope = module.f(3.0), 2 * (7.0 + 1.0) * 3.0  # (K + 1) x^2
    assert jvp(module.f, (3.0,), (1.0,)) == (expected_value, expected_slope)
    assert vjp(module.f, 3.0)[1](1.0) == (expected_slope,)


def test_helpers_naming_each_other_are_read_once(tmp_path: Path) -> None:
    """The key follows helpers; two that name each other must not send it round forever."""
    from adcompile.compose import _constants_read

    module = module_from_source(
        tmp_path,
        "def ping(x):\n    return x if x > 1.0 else pong(x)\n\n\n"
        "def pong(x):\n    return ping(2.0 * x)\n",
    )
    names = [name for name, _ in _constants_read(module.ping)]
    assert names == ["pong", "pong"]  # pong itself, then what pong reads (ping, seen)


def test_jvp_compiles_again_when_an_einsum_subscript_string_changes(tmp_path: Path) -> None:
    """A module-level string (einsum's subscripts) is read at compile time, like a number."""
    module = module_from_source(
        tmp_path,
        'import numpy as np\n\nSUBS = "i,i->"\n\n\n'
        "def g(x, y):\n    return np.einsum(SUBS, x, y)\n",
    )
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    tangents = (np.ones(2), np.zeros(2))
    for _ in range(2):  # the first compile loads NumPy's rules: a second call reuses its code
        assert jvp(module.g, (x, y), tangents) == (11.0, 7.0)
    assert len({id(code) for code in _CACHE[module.g].values()}) == 1
    module.SUBS = "i,j->"
    assert jvp(module.g, (x, y), tangents) == (21.0, 14.0)  # sum(x) * sum(y), sum(y) * 2


@pytest.mark.parametrize("transform", [jvp, vjp])
def test_a_global_whose_hash_raises_gets_the_located_error(tmp_path: Path, transform) -> None:
    """The cache key hashed every global the function reads: a class whose ``__hash__``
    raises anything but TypeError escaped as that error, not grad's located refusal."""
    module = module_from_source(
        tmp_path,
        "class Settings:\n    def __hash__(self):\n        raise RuntimeError('no hash')\n\n\n"
        "SETTINGS = Settings()\n\n\ndef f(x):\n    return x * 2.0 if SETTINGS else x\n",
    )
    arguments = ((1.0,), (1.0,)) if transform is jvp else (1.0,)
    with pytest.raises(
        adcompile.UnsupportedSyntaxError, match="`SETTINGS` is a Settings"
    ) as caught:
        transform(module.f, *arguments)
    assert str(caught.value).startswith(f"{module.__file__}:10:")


def test_jvp_and_vjp_use_the_rules_in_force(module: types.ModuleType) -> None:
    """A rule of a finished rule_scope stayed in use; one registered later was not used."""
    expected = 2.0 / (1.0 + math.exp(-0.3))
    assert jvp(module.doubled_softplus, (0.3,), (1.0,))[1] == pytest.approx(expected)
    with rule_scope():

        @derivative(module.softplus)
        def wrong(x, result, g):
            return g * 100.0

        assert jvp(module.doubled_softplus, (0.3,), (1.0,))[1] == 200.0
        assert vjp(module.doubled_softplus, 0.3)[1](1.0) == (200.0,)
    assert jvp(module.doubled_softplus, (0.3,), (1.0,))[1] == pytest.approx(expected)
    assert vjp(module.doubled_softplus, 0.3)[1](1.0)[0] == pytest.approx(expected)


def test_rule_scopes_belong_to_their_thread(module: types.ModuleType) -> None:
    """One process-wide table: a thread saw another's rule, and scopes ending out of order
    left a rule registered for good."""
    inside, leave_a, leave_b = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, float] = {}

    def thread_a() -> None:
        with rule_scope():

            @derivative(module.softplus)
            def wrong(x, result, g):
                return g * 100.0

            inside.set()
            leave_a.wait(10)
        leave_b.set()

    def thread_b() -> None:
        inside.wait(10)
        with rule_scope():
            seen["inside"] = grad(module.softplus)(0.0)
            leave_a.set()
            leave_b.wait(10)
        seen["after"] = grad(module.softplus)(0.0)

    threads = [threading.Thread(target=thread_a), threading.Thread(target=thread_b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert seen == {"inside": 0.5, "after": 0.5}
    assert grad(module.softplus)(0.0) == 0.5


def test_tangents_and_cotangents_have_their_primals_shapes(module: types.ModuleType) -> None:
    array_module = module_from_source(
        Path(inspect.getfile(module)).parent,
        "import numpy as np\n\n\ndef f(x):\n    return np.sin(x) * 2.0\n",
    )
    x = np.array([0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=r"tangent of argument 0 has shape \(3, 1\)"):
        jvp(array_module.f, (x,), (np.ones((3, 1)),))
    _, pullback = vjp(array_module.f, x)
    with pytest.raises(ValueError, match=r"cotangent of the output has shape \(2, 3\)"):
        pullback(np.ones((2, 3)))
    np.testing.assert_allclose(pullback(np.ones(3))[0], 2.0 * np.cos(x))


def test_bad_arguments_get_clear_errors(module: types.ModuleType) -> None:
    for transform in (hessian, dump):
        with pytest.raises(TypeError, match="not NoneType objects"):
            transform(None)
    with pytest.raises(TypeError, match="the function the rule is for, not 3"):
        derivative(3)
    with pytest.raises(RuleError) as caught:

        @derivative(module.softplus)
        def missing_result(x, g):
            return g

    assert caught.value.location is not None and caught.value.location.filename == __file__
    assert isinstance(caught.value, adcompile.AdcompileError)
    for transform in (
        lambda: jvp(module.varargs, (1.0, 2.0), (1.0, 1.0)),
        lambda: vjp(module.varargs, 1.0, 2.0),
    ):
        with pytest.raises(adcompile.UnsupportedSyntaxError, match="only positional parameters"):
            transform()


def test_sympy_check_at_a_nan_point(module: types.ModuleType) -> None:
    """It failed inside SymPy: "Invalid NaN comparison"."""
    report = assert_grad_matches_sympy(module.product, points=[{"x": math.nan, "y": 1.0}])
    assert report.ok


def test_names_signatures_and_reprs_say_what_they_are(module: types.ModuleType) -> None:
    gradient = grad(module.doubled_softplus)
    assert inspect.signature(gradient).return_annotation is inspect.Signature.empty
    assert jacobian(module.product).__qualname__.endswith("product_jacobian")
    assert hessian(module.product).__qualname__.endswith("product_hessian")
    text = repr(explain(module.product, 0.5, 2.0))
    assert text.startswith("<Explanation of product(x=0.5, y=2)") and len(text) < 200


def test_a_jvp_tangent_is_an_array_of_its_own(tmp_path: Path) -> None:
    """The tangent of `np.add(x, 1.0)` (or a reshape of x) was the caller's tangent array
    itself, or a view of it: changing the result in place changed the caller's array."""
    module = module_from_source(
        tmp_path,
        "import numpy as np\n\n\ndef shift(x):\n    return np.add(x, 1.0)\n\n\n"
        "def flat(x):\n    return x.reshape(4)\n",
    )
    for fn, x in ((module.shift, np.zeros(3)), (module.flat, np.zeros((2, 2)))):
        t = np.ones_like(x)
        _, tangent = jvp(fn, (x,), (t,))
        np.testing.assert_array_equal(tangent.reshape(t.shape), t)
        assert not np.shares_memory(tangent, t) and not np.shares_memory(tangent, x)
        tangent *= 10.0
        np.testing.assert_array_equal(t, np.ones_like(x))


DEAD_FAILURES = """
import math


def unused_log(x):
    t = math.log(x - 3.0)
    return x * x
"""


def test_value_and_grad_skips_a_failing_statement_nothing_reads(tmp_path: Path) -> None:
    """As the README says: the value is computed, but not a statement neither it nor a
    partial reads; optimize=False runs every statement, so it raises as Python does."""
    fn = module_from_source(tmp_path, DEAD_FAILURES).unused_log
    with pytest.raises(ValueError):
        fn(2.0)
    assert value_and_grad(fn)(2.0) == (4.0, 4.0)
    assert jvp(fn, (2.0,), (1.0,)) == (4.0, 4.0)
    with pytest.raises(ValueError):
        value_and_grad(fn, optimize=False)(2.0)
