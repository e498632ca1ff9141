"""adcompile.derivative: users' own rules, inlined, checked at registration, scoped."""

from __future__ import annotations

import math
import re

import pytest

from adcompile import AdcompileError, RuleError, derivative, grad, rule_scope
from adcompile.testing import assert_grad_matches_sympy
from tests.helpers import module_from_source

SOURCE = """
import math


def softplus(x):
    return math.log(1.0 + math.exp(x))


def loss(w, x):
    return softplus(w * x) + w * w


def uses_trunc(x):
    return math.trunc(x * 3.0) * x + math.sin(x)
"""


@pytest.fixture
def module(tmp_path):
    return module_from_source(tmp_path, SOURCE)


def test_user_rule_is_inlined_and_overrides_the_source(module):
    with rule_scope():

        @derivative(module.softplus)
        def softplus_rule(x, result, g):
            return g / (1.0 + math.exp(-x))

        dloss = grad(module.loss)
    assert "/ (1.0 + math.exp(-" in dloss.source  # the rule text is in the generated code
    w, x = 0.7, -1.3
    expected_w = x / (1.0 + math.exp(-w * x)) + 2 * w
    expected_x = w / (1.0 + math.exp(-w * x))
    assert dloss(w, x) == pytest.approx((expected_w, expected_x), rel=1e-14)


def test_stable_rule_survives_where_the_source_overflows(module):
    big = 800.0  # exp(800) overflows: differentiating the source cannot work here
    with pytest.raises(OverflowError):
        grad(module.softplus)(big)
    with rule_scope():

        @derivative(module.softplus)
        def stable(x, result, g):
            return g / (1.0 + math.exp(-x)) if x > -30.0 else g * math.exp(x)

        assert grad(module.softplus)(-big) == pytest.approx(math.exp(-big))


def test_rules_do_not_leak_out_of_their_scope(module):
    with rule_scope():

        @derivative(module.softplus)
        def wrong(x, result, g):
            return 0.0 * g

        assert grad(module.softplus)(0.5) == 0.0
    exact = 1.0 / (1.0 + math.exp(-0.5))
    assert grad(module.softplus)(0.5) == pytest.approx(exact, rel=1e-15)


def test_rule_for_a_c_function_with_none_adjoint(module):
    with rule_scope():

        @derivative(math.trunc)
        def trunc_rule(x, result, g):
            return None

        g = grad(module.uses_trunc)
    x = 0.8
    assert g(x) == pytest.approx(math.trunc(x * 3.0) + math.cos(x), rel=1e-15)


def test_signature_mismatch_is_rejected_at_registration(module):
    with rule_scope(), pytest.raises(RuleError, match=r"must take \(x, result, g\)"):

        @derivative(module.softplus)
        def bad(y, result, g):
            return g

    with rule_scope(), pytest.raises(RuleError, match="returns 2 adjoint"):

        @derivative(module.softplus)
        def two(x, result, g):
            return g, g


def test_rule_reading_other_names_is_rejected(module):
    scale = 2.0
    with rule_scope(), pytest.raises(RuleError, match="reads scale"):

        @derivative(module.softplus)
        def closure_rule(x, result, g):
            return g * scale


def test_rule_without_source_text_is_rejected_with_an_adcompile_error(module):
    namespace: dict[str, object] = {}
    exec("def typed_in(x, result, g):\n    return g * result\n", namespace)
    # 3.13 keeps lines of exec'd strings (of the wrong code), so it cannot find the def
    refused = "cannot (read the source|find the definition) of typed_in"
    with rule_scope() as rules, pytest.raises(AdcompileError, match=refused):
        derivative(module.softplus)(namespace["typed_in"])
    assert rules.lookup(module.softplus, 1) is None


DEFAULTS_SOURCE = """
from adcompile import derivative


def scaled(x, k=3.0):
    return k * x * x


@derivative(scaled)
def scaled_rule(x, k, result, g):
    return g * 2.0 * k * x, g * x * x


def uses_default(x):
    return scaled(x)


def uses_keywords(x, y):
    return scaled(k=y, x=x)
"""


def test_a_rule_gets_the_defaults_and_keywords_of_the_call(tmp_path):
    import sympy as sp

    from tests.helpers import module_from_source

    module = module_from_source(tmp_path, DEFAULTS_SOURCE)
    x, y = sp.symbols("x y")
    expected_default = float(sp.diff(3 * x * x, x).subs(x, 1.5))
    expected_keywords = [float(sp.diff(y * x * x, v).subs({x: 1.5, y: 0.5})) for v in (x, y)]
    assert grad(module.uses_default)(1.5) == pytest.approx(expected_default, rel=1e-12)
    assert grad(module.uses_keywords)(1.5, 0.5) == pytest.approx(expected_keywords, rel=1e-12)


ARRAY_RULE_SOURCE = """
import numpy as np


def lse(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def f(x):
    return lse(x) + np.sum(x)


def looped(x):
    s = 0.0
    for i in range(2):
        s = s + lse(x * (i + 1.0))
    return s
"""


def test_a_rule_on_arrays_serves_reverse_mode_and_is_refused_by_forward_mode(tmp_path):
    # A rule is a vector-Jacobian product: for a reduction such as logsumexp, putting the
    # tangent in place of g (as forward mode does for numbers) would be wrong.
    np = pytest.importorskip("numpy")
    from adcompile import NoDerivativeError, hessian, jvp

    module = module_from_source(tmp_path, ARRAY_RULE_SOURCE)
    x = np.array([0.3, -1.2, 2.0])
    softmax = np.exp(x - module.lse(x))
    with rule_scope():

        @derivative(module.lse)
        def lse_rule(x, result, g):
            return g * np.exp(x - result)

        np.testing.assert_allclose(grad(module.f)(x), softmax + 1.0, rtol=1e-13)
        with pytest.raises(NoDerivativeError, match=r":11:12: second derivatives through `lse`"):
            hessian(module.f)(x)  # the body's derivative would stand in for the rule's
        with pytest.raises(NoDerivativeError, match="cannot use the rule registered for `lse`"):
            grad(module.f, mode="forward")
        with pytest.raises(NoDerivativeError, match=r":11:12: forward mode"):
            jvp(module.f, (x,), (x,))
        # hessian of code with loops takes the jvp twice: it says so, not "use reverse mode"
        with pytest.raises(NoDerivativeError, match=r":17:17: hessian of NumPy code with loops"):
            hessian(module.looped)(x)
        np.testing.assert_allclose(
            grad(module.looped)(x), softmax + 2.0 * np.exp(2.0 * x - module.lse(2.0 * x))
        )


def test_the_default_check_points_reach_beyond_minus_one_and_plus_two() -> None:
    """Five points in (-2, 2) passed a softplus rule wrong only for x < -1."""

    def softplus(x):
        return math.log(1.0 + math.exp(x))

    def loss(x):
        return softplus(x) * 2.0

    with rule_scope():

        @derivative(softplus)
        def wrong_below_minus_one(x, result, g):
            return g / (1.0 + math.exp(-x)) if x > -1.0 else g * math.exp(x)

        with pytest.raises(AssertionError, match="MISMATCH"):
            assert_grad_matches_sympy(loss)


def test_a_rule_naming_numpy_in_scalar_code_is_refused(tmp_path) -> None:
    """The generated scalar module imports only math: the gradient raised NameError."""
    import numpy as np

    module = module_from_source(
        tmp_path, "def sq(x):\n    return x * x\n\n\ndef f(x):\n    return sq(x) * x\n"
    )
    with rule_scope():

        @derivative(module.sq)
        def sq_rule(x, result, g):
            return g * 2.0 * np.abs(x) * np.sign(x)

        with pytest.raises(AdcompileError, match="the rule for `sq` uses NumPy"):
            grad(module.f)


def test_a_rule_for_a_function_with_keyword_only_parameters_is_refused() -> None:
    """It was accepted, then every call said "`scaled` has no parameter `k`"."""

    def scaled(x, *, k=2.0):
        return k * x

    with rule_scope(), pytest.raises(RuleError, match="takes k other than by position"):

        @derivative(scaled)
        def scaled_rule(x, result, g):
            return 2.0 * g


SECOND_ORDER_SOURCE = """
import math


def detach(x):
    return x


def half(x):
    return x * 1.0


def wrapped_sin(x):
    k = math.floor(x / (2.0 * math.pi))
    return math.sin(x - 2.0 * math.pi * k)


def stopped(x):
    return detach(x) * x


def halves(x):
    return half(x) * half(x)


def wrapped(x):
    return wrapped_sin(x) * x
"""


@pytest.mark.parametrize(
    ("name", "first", "column"),
    [
        ("stopped", 3.0, 12),  # d/dx (stop(x) * x) = stop(x) = 3
        ("halves", 3.0, 12),  # the rule says half' = 0.5: 2 * half(x) * 0.5 = x
        ("wrapped", math.sin(3.0) + 3.0 * math.cos(3.0), 12),
    ],
)
def test_second_derivatives_through_a_python_function_with_a_rule_are_refused(
    tmp_path, name, first, column
):
    """The gradient computes a ruled function's value with its inlined body; differentiated
    again, that body's derivative stood in for the rule's: hessian of detach(x) * x gave 1.0
    where the rule (a stop-gradient, as in JAX) gives 0.0, and through `math.floor` the error
    pointed into the generated module. First derivatives use the rule."""
    from adcompile import NoDerivativeError, hessian

    module = module_from_source(tmp_path, SECOND_ORDER_SOURCE)
    with rule_scope():

        @derivative(module.detach)
        def detach_rule(x, result, g):
            return None

        @derivative(module.half)
        def half_rule(x, result, g):
            return g * 0.5

        @derivative(module.wrapped_sin)
        def wrapped_sin_rule(x, result, g):
            return g * math.cos(x)

        fn = getattr(module, name)
        for mode in ("reverse", "forward"):
            assert grad(fn, mode=mode)(3.0) == pytest.approx(first, rel=1e-14)
        location = rf"adcompile_case_\d+\.py:\d+:{column}: second derivatives through"
        for second in (
            lambda: hessian(fn),
            lambda: grad(grad(fn)),
            lambda: grad(grad(fn, mode="forward"), mode="forward"),
        ):
            with pytest.raises(NoDerivativeError, match=location):
                second()(3.0)


def test_a_rule_on_a_library_function_serves_second_derivatives() -> None:
    """The generated gradient keeps the call `math.cbrt(x)`, so differentiating it again
    finds the rule again (the README says so). Reference: d2/dx2 (x ** (4/3))."""
    from adcompile import hessian

    def f(x):
        return math.cbrt(x) * x

    with rule_scope():

        @derivative(math.cbrt)
        def cbrt_rule(x, result, g):
            return g / (3.0 * result * result)

        assert hessian(f)(8.0) == pytest.approx(4.0 / 9.0 * 8.0 ** (-2.0 / 3.0), rel=1e-14)
        assert grad(grad(f))(8.0) == pytest.approx(4.0 / 9.0 * 8.0 ** (-2.0 / 3.0), rel=1e-14)


def test_a_rule_that_never_reads_result_serves_second_derivatives() -> None:
    """The body of a function with its own rule computes only `result`; a rule that never
    reads it leaves the body dead in the gradient, so differentiating the gradient again
    follows the rule alone. Reference: d2/dx2 log(1 + e^x) = s (1 - s), s = 1 / (1 + e^-x)."""
    from adcompile import hessian

    def softplus(x):
        return math.log(1.0 + math.exp(x))

    with rule_scope():

        @derivative(softplus)
        def softplus_rule(x, result, g):
            return g / (1.0 + math.exp(-x))

        s = 1.0 / (1.0 + math.exp(-0.7))
        assert hessian(softplus)(0.7) == pytest.approx(s * (1.0 - s), rel=1e-14)


CUBE_SOURCE = """
def cube(x):
    return x * x * x


def in_a_test(x):
    if cube(x) > 1.0:
        return x * x
    return x


def of_a_constant(x):
    return cube(2.0) * x * x


def through_the_value(x):
    return cube(x) * x
"""


def test_second_derivatives_follow_a_ruled_body_only_where_they_pass_through_it(tmp_path):
    """A ruled function read only in a test, or called on constants, holds no derivative
    the rule would give: hessian works there (d2/dx2 x^2 = 2, 0, 2 * 8), and is refused
    only where the gradient computes with the body's value of an input."""
    from adcompile import NoDerivativeError, hessian

    module = module_from_source(tmp_path, CUBE_SOURCE)
    with rule_scope():

        @derivative(module.cube)
        def cube_rule(x, result, g):
            return g * 3.0 * x * x

        assert hessian(module.in_a_test)(1.5) == 2.0
        assert hessian(module.in_a_test)(0.5) == 0.0
        assert hessian(module.of_a_constant)(1.0) == 16.0
        with pytest.raises(NoDerivativeError, match="second derivatives through `cube`"):
            hessian(module.through_the_value)


def test_a_gradient_through_a_rule_called_from_a_function_is_refused_too(tmp_path):
    """`grad(dcube)` was refused, but `grad(g)` with `g(x) = dcube(x)` inlined the generated
    gradient (2 result, by the rule) and followed the body's derivative: 6x^2 (2.94 at 0.7)
    where the rule makes result' = 2 result, so 4x^3 (1.372, as JAX's custom_jvp gives)."""
    from adcompile import NoDerivativeError

    module = module_from_source(
        tmp_path,
        """
        def cube(x):
            return x * x * x


        def g(x):
            return dcube(x)
        """,
    )
    with rule_scope():

        @derivative(module.cube)
        def cube_rule(x, result, g):
            return g * 2.0 * result

        module.dcube = grad(module.cube)
        with pytest.raises(NoDerivativeError, match="second derivatives through `cube`"):
            grad(module.g)


CALLABLES = """
import functools
from operator import mul as omul


def power(x, k):
    return x ** k


square = functools.partial(power, k=2.0)


class Square:
    def __call__(self, x):
        return x * x


square_object = Square()


def via_partial(x):
    return square(x) * x


def via_object(x):
    return square_object(x) * x


def via_operator(x):
    return omul(x, x) * x
"""


@pytest.mark.parametrize(
    ("function", "callee", "what"),
    [
        ("via_partial", "square", "functools.partial"),
        ("via_object", "square_object", "Square"),
        ("via_operator", "omul", "_operator.mul"),
    ],
)
@pytest.mark.parametrize("with_rule", [False, True])
def test_a_callable_the_generated_code_cannot_name_is_refused_at_compile_time(
    tmp_path, function, callee, what, with_rule
):
    """With a rule, these compiled and the gradient raised NameError: the standalone module
    called `square(x)`, which it never defines (`operator.mul` has the `*` rule built in)."""
    module = module_from_source(tmp_path, CALLABLES)
    target = getattr(module, callee) if callee != "omul" else None
    with rule_scope():
        if target is not None and with_rule:

            @derivative(target)
            def rule(x, result, g):
                return g * 2.0 * x

        with pytest.raises(AdcompileError) as caught:
            grad(getattr(module, function))
    message = str(caught.value)
    assert message.startswith(f"{module.__file__}:")
    assert f"`{callee}` is " in message and what in message
    assert "cannot call it" in message


RULE_MISTAKES = """
import math as m

import numpy as np


def w(g, y):
    return g * y


def product(a, b):
    return a * b


def grows(x):
    return m.exp(x)


def rule_for_w(g, y, result, g2):
    return y, g


def list_rule(a, b, result, g):
    return [g * b, g * a]


def three_adjoints(a, b, result, g):
    return g * b, g * a, g


def keyword_only(a, b, *, result, g):
    return g * b, g * a


def aliased_math(x, result, g):
    return g * m.exp(x)


def calls_product(a, b):
    return product(a, b) * a
"""


@pytest.fixture
def mistakes(tmp_path):
    return module_from_source(tmp_path, RULE_MISTAKES)


@pytest.mark.parametrize(
    ("primal", "template", "advice"),
    [
        # it said the rule must take (g, y, result, g): a duplicate, no rule could be written
        ("w", "rule_for_w", "has a parameter named g, the name a rule gives"),
        # it said the rule returned 1 adjoint
        ("product", "three_adjoints", "return one per argument, in order (None for one"),
        # it said the rule read g, as if a name from elsewhere
        ("product", "keyword_only", "takes `result` and `g` by keyword only"),
        # it said the rule read m
        ("grows", "aliased_math", "reads the module `m` (math) under its own name"),
    ],
)
def test_a_rule_written_wrongly_is_told_what_to_write(mistakes, primal, template, advice):
    with rule_scope(), pytest.raises(RuleError, match=re.escape(advice)):
        derivative(getattr(mistakes, primal))(getattr(mistakes, template))


def test_a_rule_may_return_its_adjoints_as_a_list(mistakes):
    """`return [g * b, g * a]` was counted as one adjoint and refused."""
    with rule_scope():
        derivative(mistakes.product)(mistakes.list_rule)
        assert_grad_matches_sympy(mistakes.calls_product, points=[(0.5, -1.5), (2.0, 3.0)])


SCALE_SOURCE = """
import numpy as np


def scale(x):
    return x * 2.0


def total(x):
    return np.sum(scale(x))


def squares(x):
    return np.sum(scale(x) ** 2)
"""


@pytest.mark.parametrize("shape_of", ["a scalar", "a slice"])
@pytest.mark.parametrize("name", ["total", "squares"])
def test_a_rule_adjoint_of_the_wrong_shape_is_refused_when_it_runs(tmp_path, shape_of, name):
    """A rule returning np.sum(g) * 2.0 for a (3,) argument was stretched by unbroadcast:
    total's gradient came out [6, 6, 6] where the rule's author meant [2, 2, 2]."""
    import numpy as np

    module = module_from_source(tmp_path, SCALE_SOURCE)
    x = np.array([1.0, 2.0, 3.0])
    with rule_scope():
        if shape_of == "a scalar":

            @derivative(module.scale)
            def wrong(x, result, g):
                return np.sum(g) * 2.0

        else:

            @derivative(module.scale)
            def wrong(x, result, g):
                return g[:2] * 2.0

        gradient = grad(getattr(module, name))
        got = "(2,)" if shape_of == "a slice" else "()"
        message = f"the rule for {module.__name__}.scale returned an adjoint of shape {got}"
        with pytest.raises(ValueError, match=re.escape(message)):
            gradient(x)
        assert x.tolist() == [1.0, 2.0, 3.0]

        @derivative(module.scale)
        def right(x, result, g):
            return g * 2.0

        expected = {"total": 2.0 * np.ones(3), "squares": 8.0 * x}[
            name
        ]  # d/dx of sum(2x), sum(4x^2)
        np.testing.assert_array_equal(grad(getattr(module, name))(x), expected)


def test_a_rule_reading_its_local_before_assigning_it_is_refused(tmp_path):
    # Inlined, `a = k * g` read the caller's k (1000.0): a silent 2500.0 where Python raises.
    module = module_from_source(
        tmp_path,
        "def sq(x):\n    return x * x\n\n\ndef f(x):\n    k = 1000.0\n    return sq(x) + k * x\n",
    )
    with rule_scope(), pytest.raises(RuleError, match=r"the rule for .*sq reads k before assig"):

        @derivative(module.sq)
        def reads_first(x, result, g):
            a = k * g  # noqa: F821 -- the fault under test
            k = 2.0
            return a * x * k


def test_the_sympy_check_reads_a_point_by_name_in_any_order():
    # The one-sided fallback ran the function on the values in the dict's order: at the
    # swapped point log(0) failed, and SymPy's nan and -inf stood as a false MISMATCH.
    def f(x, y):
        return x**y + math.log(y)

    assert_grad_matches_sympy(f, points=[{"y": 2.0, "x": 0.0}])


def test_jvp_and_vjp_compile_side_by_side_in_threads_with_their_own_rule_scopes(module):
    # Each thread's scope is a new cache key, so versions are evicted all the time; without a
    # lock two threads evicted the same one (KeyError) or iterated while one was added.
    import sys
    import threading
    import time

    from adcompile import jvp, vjp

    errors: list[BaseException] = []
    expected = grad(module.loss)(0.5, 2.0)[0]

    def work() -> None:
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            try:
                with rule_scope():
                    assert jvp(module.loss, (0.5, 2.0), (1.0, 0.0))[1] == pytest.approx(expected)
                    vjp(module.loss, 0.5, 2.0)[1](1.0)
            except BaseException as error:  # collected, then reported
                errors.append(error)
                return

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors[:3]


PAIR_SOURCE = """
def pair(x):
    return x * x, x * 3.0


def indexed(x):
    p = pair(x)
    return p[0] + 2.0 * p[1]


def h(x):
    return x * x


def f(x):
    return h(x) + 0.0
"""


def test_a_rule_on_a_function_returning_a_tuple_is_refused_where_it_is_used(tmp_path):
    # Its g is a tuple of adjoints, while the generated code passed one number: vjp refused
    # the tuple cotangent, jacobian and jvp failed with "'float' object is not subscriptable".
    from adcompile import UnsupportedSyntaxError, jacobian, jvp, vjp

    module = module_from_source(tmp_path, PAIR_SOURCE)
    with rule_scope():

        @derivative(module.pair)
        def pair_rule(x, result, g):
            return g[0] * 2.0 * x + g[1] * 3.0

        refusal = r"`pair` returns a tuple, and a rule on a function returning several values"
        for transform in (
            lambda: vjp(module.pair, 1.5),
            lambda: jacobian(module.pair),
            lambda: jvp(module.pair, (1.5,), (1.0,)),
        ):
            with pytest.raises(UnsupportedSyntaxError, match=r":2:1: " + refusal):
                transform()
        with pytest.raises(UnsupportedSyntaxError, match=r":7:9: " + refusal):
            grad(module.indexed)


def test_a_rules_int_literal_adjoint_is_a_float_partial(tmp_path):
    module = module_from_source(tmp_path, PAIR_SOURCE)
    with rule_scope():

        @derivative(module.h)
        def constant(x, result, g):
            return 0

        for mode in ("reverse", "forward"):
            partial = grad(module.f, mode=mode)(1.5)
            assert partial == 0.0 and type(partial) is float


def test_a_rules_form_is_checked_before_the_names_it_reads(module):
    # `a, b = ...` was refused for "reading a, b", not for its form.
    with rule_scope(), pytest.raises(RuleError, match="only `name = expression` lines may precede"):

        @derivative(module.loss)
        def unpacks(w, x, result, g):
            a, b = g * x, g * w
            return a, b


REBOUND_STANDARD_NAMES = """
import math

import numpy


def max(a, b):
    return math.log(math.exp(a) + math.exp(b))


def bounded(x):
    return math.tanh(x)


def bounded_rule(x, result, g):
    return g * max(1.0 - result * result, 0.0)


def numpy_named_math(x, result, g):
    return g * np.cos(x)


np = math  # `np` is Python's math module here
"""


@pytest.mark.parametrize(
    ("template", "advice"),
    [
        ("bounded_rule", "reads `max`, which its module binds to adcompile_case_"),
        ("numpy_named_math", "reads `np`, which its module binds to the module math"),
    ],
)
def test_a_rule_reading_a_standard_name_its_module_rebinds_is_refused(tmp_path, template, advice):
    """The rule was inlined with the builtin `max` (0.635 where the rule as written gives
    1.060), or with NumPy where its module's `np` was math."""
    module = module_from_source(tmp_path, REBOUND_STANDARD_NAMES)
    with rule_scope(), pytest.raises(RuleError, match=re.escape(advice)):
        derivative(module.bounded)(getattr(module, template))
    assert grad(module.bounded)(0.7) == pytest.approx(1.0 - math.tanh(0.7) ** 2)
