"""Users' rules in NumPy code: on library functions, module-level, for dict and list arguments."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from adcompile import (
    NoDerivativeError,
    RuleError,
    derivative,
    grad,
    hessian,
    jacobian,
    jvp,
    rule_scope,
)
from tests.helpers import ROOT, module_from_source

np = pytest.importorskip("numpy")

NORM_SOURCE = """
import numpy as np


def f(x):
    return np.linalg.vector_norm(x) * 2.0


def g(a, b):
    return np.inner(a, b) * 2.0


def looped(x):
    s = 0.0
    for _ in range(2):
        s = s + np.linalg.vector_norm(x)
    return s
"""


def test_forward_mode_refuses_a_rule_on_a_numpy_function_and_reverse_mode_uses_it(tmp_path):
    # A rule is a vector-Jacobian product; as a tangent it gave vector_norm's jvp the shape
    # of x, and np.inner's built-in tangent was used in place of the rule.
    module = module_from_source(tmp_path, NORM_SOURCE)
    x = np.array([3.0, 4.0])
    with rule_scope():

        @derivative(np.linalg.vector_norm)
        def norm_rule(x, result, g):
            return g * x / result

        np.testing.assert_allclose(grad(module.f)(x), 2.0 * x / 5.0)
        for forward in (
            lambda: jvp(module.f, (x,), (x,)),
            lambda: jacobian(module.f, mode="forward"),
            lambda: grad(module.f, mode="forward"),
        ):
            with pytest.raises(NoDerivativeError, match=r":6:12: forward mode .* `numpy\.linalg"):
                forward()
        # hessian is forward mode over the gradient: refused at the user's line, with advice
        with pytest.raises(NoDerivativeError, match=r":6:12: second derivatives in forward mode"):
            hessian(module.f)(x)
        with pytest.raises(NoDerivativeError, match=r":16:17: hessian of NumPy code with loops"):
            hessian(module.looped)(x)
        # ... which works: reverse over reverse goes through the rule
        expected = 2.0 * (np.eye(2) / 5.0 - np.outer(x, x) / 125.0)
        np.testing.assert_allclose(jacobian(grad(module.f))(x), expected, rtol=1e-14)
    with rule_scope():

        @derivative(np.inner)
        def stop_b(a, b, result, g):
            return g * b, None

        np.testing.assert_allclose(grad(module.g)(x, x)[1], [0.0, 0.0])
        with pytest.raises(NoDerivativeError, match=r":10:12: forward mode"):
            grad(module.g, mode="forward")


def test_a_module_level_rule_on_a_numpy_function_overrides_its_array_rule(tmp_path):
    # Registered outside any scope, the rule went into the built-in table, below NumPy's
    # array rules: det's own rule was used, silently.
    script = tmp_path / "module_level.py"
    script.write_text(
        textwrap.dedent(
            """
            import numpy as np
            from adcompile import derivative, grad

            def f(A):
                return np.linalg.det(A) * 2.0

            @derivative(np.linalg.det)
            def det_rule(a, result, g):
                return g * np.ones_like(a)

            print(grad(f)(np.array([[2.0, 1.0], [0.5, 3.0]])).tolist())
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's adcompile
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, check=True
    )
    assert run.stdout.strip() == "[[2.0, 2.0], [2.0, 2.0]]"


SIN_SOURCE = """
import numpy as np


def f(x):
    return np.sum(np.sin(x))


def p(x, y):
    return pow(x, y)
"""


def test_a_rule_on_a_library_function_takes_the_arguments_its_calls_pass(tmp_path):
    # np.sin(x, /, out=None) and pow(base, exp, mod=None): the rule for the calls written
    # `np.sin(x)` takes (x, result, g); one taking `out` too was the only form accepted, and
    # it served no call.
    module = module_from_source(tmp_path, SIN_SOURCE)
    x = np.array([0.1, 0.2])
    with rule_scope():

        @derivative(np.sin)
        def scaled(x, result, g):
            return g * 100.0

        np.testing.assert_allclose(grad(module.f)(x), [100.0, 100.0])

        @derivative(pow)
        def pow_rule(base, exp, result, g):
            return g * 10.0, g * 1000.0

        assert grad(module.p)(1.5, 0.5) == (10.0, 1000.0)
        with pytest.raises(RuleError, match=r"must take \(x, result, g\) or \(x, out, result, g\)"):

            @derivative(np.sin)
            def misnamed(y, result, g):
                return g


LAYER_SOURCE = """
import numpy as np


def layer(params, x):
    return params["W"] @ x + params["b"]


def loss(params, x):
    return np.sum(layer(params, x) ** 2)


def layer2(wb, x):
    W, b = wb
    return W @ x + b


def loss2(wb, x):
    return np.sum(layer2(wb, x) ** 2)


def loss3(wb, x):
    return np.sum(layer2(wb, x) ** 2) + np.sum(wb[0] * 3.0)


def nested_layer(net, x):
    W, b = net["layers"]
    return W @ x + b


def nested_loss(net, x):
    return np.sum(nested_layer(net, x) ** 2)
"""


@pytest.fixture
def layers(tmp_path):
    module = module_from_source(tmp_path, LAYER_SOURCE)
    rng = np.random.default_rng(0)
    W, b, x = rng.normal(size=(2, 3)), rng.normal(size=2), rng.normal(size=3)
    return module, W, b, x


def test_a_rules_adjoint_of_a_dict_or_list_argument_is_checked_leaf_by_leaf(layers):
    module, W, b, x = layers
    r2 = 2.0 * (W @ x + b)  # d sum(r ** 2) / dr
    with rule_scope():

        @derivative(module.layer)
        def short_rule(params, x, result, g):
            return {"W": np.outer(g, x)[:, :2]}, params["W"].T @ g

        # Not checked before: a gradient with W of shape (2, 2) and no "b" came back.
        with pytest.raises(ValueError, match=r"laid out as \{'W': \(2, 2\)\} .* \{'W': \(2, 3\), "):
            grad(module.loss)({"W": W, "b": b}, x)

        @derivative(module.layer2)
        def list_rule(wb, x, result, g):
            return [np.outer(g, x), g], wb[0].T @ g

        # A right rule for a list crashed in NumPy ("inhomogeneous shape").
        dwb, dx = grad(module.loss2)([W, b], x)
        np.testing.assert_allclose(dwb[0], np.outer(r2, x), rtol=1e-14)
        np.testing.assert_allclose(dwb[1], r2, rtol=1e-14)
        np.testing.assert_allclose(dx, W.T @ r2, rtol=1e-14)
        assert isinstance(dwb, list)
        # The rule's adjoint of the whole list and that of an item used on its own add up.
        dwb, _ = grad(module.loss3)([W, b], x)
        np.testing.assert_allclose(dwb[0], np.outer(r2, x) + 3.0, rtol=1e-14)
        np.testing.assert_allclose(dwb[1], r2, rtol=1e-14)

        @derivative(module.nested_layer)
        def nested_rule(net, x, result, g):
            return {"layers": [np.outer(g, x), g]}, net["layers"][0].T @ g

        dnet, _ = grad(module.nested_loss)({"layers": [W, b]}, x)
        np.testing.assert_allclose(dnet["layers"][0], np.outer(r2, x), rtol=1e-14)
        np.testing.assert_allclose(dnet["layers"][1], r2, rtol=1e-14)

        @derivative(module.layer2)
        def tuple_for_list(wb, x, result, g):
            return (np.outer(g, x), g), wb[0].T @ g

        with pytest.raises(ValueError, match=r"laid out as \(\(2, 3\), \(2,\)\)"):
            grad(module.loss2)([W, b], x)


SCALE_SOURCE = """
import numpy as np


def scale(x):
    return x * 2.0


def lin(x):
    return np.sum(scale(x) * 3.0) + np.sum(x ** 3)
"""


def test_hessian_goes_through_a_rule_whose_value_the_gradient_reads_for_its_shape(tmp_path):
    # The gradient seeds sum's adjoint as np.full(np.shape(t), 1.0): a read of the ruled
    # value's shape, no derivative of it; it was refused as "second derivatives through".
    module = module_from_source(tmp_path, SCALE_SOURCE)
    x = np.array([1.0, 2.0, 3.0])
    with rule_scope():

        @derivative(module.scale)
        def linear(x, result, g):
            return g * 2.0

        np.testing.assert_allclose(hessian(module.lin)(x), np.diag(6.0 * x), rtol=1e-14)


def test_an_argument_a_users_rule_differentiates_passed_by_keyword_says_so(tmp_path):
    # `np.sinc(x=x)` with a rule registered for np.sinc advised registering one.
    from adcompile import UnsupportedSyntaxError

    module = module_from_source(
        tmp_path, "import numpy as np\n\n\ndef f(x):\n    return np.sum(np.sinc(x=x))\n"
    )
    with rule_scope():

        @derivative(np.sinc)
        def sinc_rule(x, result, g):
            return g * 2.0

        with pytest.raises(UnsupportedSyntaxError, match=r":5:27: pass `x` to np.sinc by pos"):
            grad(module.f)
