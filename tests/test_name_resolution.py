"""Names the compiled code reads must mean what they mean to Python: module constants of
inlined helpers, local functions, closures and identifiers Python normalises.

Each case is checked against mpmath running the same source (``assert_grad_matches_mp``) or
against the refusal the case calls for.
"""

from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path

import pytest

from adcompile import UnsupportedSyntaxError, grad
from adcompile.reference import assert_grad_matches_mp
from tests.helpers import module_from_source


def test_helpers_of_two_modules_keep_their_own_constant_of_one_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each inlined helper's namespace is a new object: its id could be taken by the next
    one's, which then read the first module's ``K`` (the gradient was 21, not 36)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    for name, k in (("names_moda", 2.0), ("names_modb", 5.0), ("names_modc", 3.0)):
        (tmp_path / f"{name}.py").write_text(f"K = {k}\n\n\ndef h(x):\n    return x * K * K\n")
    module = module_from_source(
        tmp_path,
        """
        import names_moda
        import names_modb
        import names_modc

        K = 7.0


        def f(x):
            return names_moda.h(x) + names_modb.h(x) + names_modc.h(x) + K * x
        """,
    )
    assert grad(module.f)(0.7) == 4.0 + 25.0 + 9.0 + 7.0


def test_a_helpers_float_constant_is_not_the_callers_equal_int(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``2**53 == 2.0**53``, but ``(K + 1) - K`` is 1 for the int and 0.0 for the float."""
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "names_float_k.py").write_text(
        "K = 2.0 ** 53\n\n\ndef h(x):\n    return x * ((K + 1) - K)\n"
    )
    module = module_from_source(
        tmp_path,
        """
        import names_float_k

        K = 2 ** 53


        def f(x):
            return names_float_k.h(x) + x * (K - K + 2)
        """,
    )
    assert grad(module.f)(3.0) == 2.0
    assert_grad_matches_mp(module.f, [{"x": 3.0}])


@pytest.mark.parametrize(
    ("body", "message", "line"),
    [
        (  # both branches bind `g`: the last definition was inlined whichever branch ran
            """
            if x > 0:
                g = lambda t: t * t
            else:
                g = lambda t: t * t * t
            return g(x)
            """,
            "bound to a local function and bound again",
            5,
        ),
        (  # the same with annotations: they were not counted as bindings
            """
            if x > 0:
                g: object = lambda t: t * t
            else:
                g: object = lambda t: t * t * t
            return g(x)
            """,
            "bound to a local function and bound again",
            5,
        ),
        (  # redefined in a loop after its call: the next iteration's call read the new one
            """
            s = 0.0
            def g(t):
                return t
            for _ in range(3):
                s = s + g(x)
                def g(t):
                    return 2.0 * t
            return s
            """,
            "bound to a local function and bound again",
            7,
        ),
        (  # defined in a branch, called after it: Python fails when the branch did not run
            """
            if x > 10.0:
                def g(t):
                    return t * t
            return g(x)
            """,
            "used outside the statements that follow its definition",
            5,
        ),
        (  # a def makes its name local from the start of the body: called above, it fails
            """
            y = sq(x)
            def sq(t):
                return t * t
            return y
            """,
            "`sq` is used before it is assigned",
            2,
        ),
        (  # a lambda used as a value (it was called "used before it is assigned")
            """
            g = lambda t: t * t
            return apply(g, x)
            """,
            "`g` is a function here, not a number",
            3,
        ),
    ],
    ids=[
        "rebound-in-branches",
        "annotated-rebound-in-branches",
        "rebound-in-loop",
        "called-after-branch",
        "called-above-def",
        "lambda-value",
    ],
)
def test_local_functions_bound_where_the_inlining_cannot_follow_are_refused(
    tmp_path: Path, body: str, message: str, line: int
) -> None:
    indented = textwrap.indent(textwrap.dedent(body).strip(), "    ")
    source = (
        "def apply(h, t):\n    return h(t)\n\n\ndef sq(t):\n    return 10.0 * t\n\n\n"
        f"def f(x):\n{indented}\n"
    )
    module = module_from_source(tmp_path, source)
    with pytest.raises(UnsupportedSyntaxError, match=re.escape(message)) as caught:
        grad(module.f)
    assert f".py:{8 + line}:" in str(caught.value)


def test_a_local_function_defined_in_a_branch_and_called_there_compiles(tmp_path: Path) -> None:
    module = module_from_source(
        tmp_path,
        """
        def f(x):
            y = x
            if x > 0.0:
                def g(t):
                    return t * t * t
                y = g(x) + x
            for i in range(2):
                h = lambda t: t * (i + 1.0)
                y = y + h(x)
            return y
        """,
    )
    assert_grad_matches_mp(module.f, [{"x": 0.7}, {"x": -0.4}])


def test_a_positional_only_parameter_given_by_keyword_is_refused(tmp_path: Path) -> None:
    module = module_from_source(
        tmp_path,
        """
        def scale(a, b, /):
            return a * b


        def f(x, y):
            return scale(x, b=y)
        """,
    )
    with pytest.raises(UnsupportedSyntaxError, match="takes `b` by position only"):
        grad(module.f)


def test_identifiers_python_normalises_are_reserved_as_python_reads_them(
    tmp_path: Path,
) -> None:
    """``𝐛_x`` is the name ``b_x`` to Python (NFKC): x's adjoint overwrote such a parameter,
    and a temporary ``t1`` hid a module constant written ``𝐭1``."""
    module = module_from_source(
        tmp_path,
        """
        import math

        \U0001d42d1 = 3.0


        def f(x, \U0001d41b_x):
            return x * x * \U0001d41b_x + math.sin(x * \U0001d42d1) * \U0001d41b_x
        """,
    )
    assert_grad_matches_mp(module.f, [{"x": 0.7, "b_x": 1.5}, {"x": -1.2, "b_x": 0.25}])


def test_a_closure_variable_assigned_after_the_def_is_refused_not_read_as_a_global(
    tmp_path: Path,
) -> None:
    """Python reads the enclosing function's ``k``; its empty cell let the global through."""
    module = module_from_source(
        tmp_path,
        """
        from adcompile import grad

        k = 100.0


        def build():
            def f(x):
                return x * k

            gradient = grad(f)
            k = 3.0
            return gradient
        """,
    )
    with pytest.raises(UnsupportedSyntaxError, match="`k` is a variable of the enclosing"):
        module.build()


def test_a_helper_defined_below_the_decorated_function_gets_a_fix(tmp_path: Path) -> None:
    source = """
    from adcompile import grad


    @grad
    def f(x):
        return helper(x)


    def helper(x):
        return x * x
    """
    with pytest.raises(UnsupportedSyntaxError, match="define it above, or call `grad") as caught:
        module_from_source(tmp_path, source)
    assert ".py:7:12: name `helper` is not defined" in str(caught.value)


def test_functions_sharing_one_wrappers_code_are_not_recursion(tmp_path: Path) -> None:
    """Recursion was told by the code's position: two functions one decorator (or factory)
    made looked like one function calling itself."""
    module = module_from_source(
        tmp_path,
        """
        import functools
        import math


        def scaled(fn):
            @functools.wraps(fn)
            def wrapper(x):
                return 2.0 * fn(x)

            return wrapper


        @scaled
        def inner(t):
            return math.sin(t)


        @scaled
        def outer(t):
            return inner(t) * t


        def compose(a, b):
            def c(t):
                return a(b(t))

            return c


        square = lambda t: t * t  # noqa: E731
        quartic = compose(square, square)
        power16 = compose(quartic, quartic)


        def f(x):
            return outer(x)


        def g(x):
            return power16(x)
        """,
    )
    x = 0.7
    assert grad(module.f)(x) == pytest.approx(4.0 * (math.sin(x) + x * math.cos(x)), rel=1e-14)
    assert grad(module.g)(x) == pytest.approx(16.0 * x**15, rel=1e-14)


def test_private_names_in_a_class_body_are_read_as_python_mangles_them(tmp_path: Path) -> None:
    """In a class body ``__k`` is ``_Model__k``: the unmangled global was read."""
    module = module_from_source(
        tmp_path,
        """
        __k = 1.0
        _Model__k = 5.0


        def __sq(t):
            return t


        def _Model__sq(t):
            return t * t


        class Model:
            @staticmethod
            def f(x, __w):
                return x * __k + __sq(x) * __w
        """,
    )
    assert grad(module.Model.f)(0.7, 2.0) == pytest.approx((5.0 + 2.8, 0.49), rel=1e-15)


def test_a_helper_without_source_is_reported_at_its_call(tmp_path: Path) -> None:
    namespace: dict[str, object] = {}
    code = compile("def scale(t):\n    return 3.0 * t\n", "<no file: test>", "exec")
    exec(code, namespace)  # a file name no other code registers in linecache
    module = module_from_source(tmp_path, "def f(x):\n    return scale(x) * x\n")
    module.scale = namespace["scale"]
    with pytest.raises(UnsupportedSyntaxError, match="cannot read the source of scale") as caught:
        grad(module.f)
    assert ".py:2:12:" in str(caught.value)


def test_a_classmethod_gets_a_hint_naming_its_class(tmp_path: Path) -> None:
    module = module_from_source(
        tmp_path,
        """
        class Model:
            @classmethod
            def f(cls, x):
                return x * x
        """,
    )
    with pytest.raises(TypeError, match=r"Model.__dict__\['f'\].__func__ .* pass the class"):
        grad(module.Model.f)


def test_a_modules_functions_and_constants_read_through_the_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``helpers.K`` was refused ("module not supported"), and ``helpers.h(w)`` with NumPy
    in ``h`` did not make the caller array code (refused where ``h(w)`` compiled)."""
    np = pytest.importorskip("numpy")
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "names_consts.py").write_text(
        "import numpy as np\n\nK = 3.0\nT = (1.0, 2.0)\n\n\n"
        "def h(w):\n    return np.sum(w * w) * K\n"
    )
    module = module_from_source(
        tmp_path,
        """
        import names_consts


        def f(x):
            s = names_consts.K * x * x
            for c in names_consts.T:
                s = s + c * x
            return s


        def g(w):
            return names_consts.h(w) + names_consts.K
        """,
    )
    assert_grad_matches_mp(module.f, [{"x": 0.5}, {"x": -1.25}])
    assert "names_consts_K = 3.0" in grad(module.f).source
    w = np.array([0.5, -1.0])
    np.testing.assert_allclose(grad(module.g)(w), 6.0 * w, rtol=1e-15)


def test_a_helpers_tuple_default_is_passed_as_a_literal(tmp_path: Path) -> None:
    """`def weighted(x, w=(1.0, 2.5))` called as `weighted(x)` was refused ("only numbers
    can be passed here"), though passing the same tuple compiles."""
    module = module_from_source(
        tmp_path,
        """
        import math


        def weighted(x, w=(1.0, 2.5), pairs=((0.5, -1.0),)):
            s = 0.0
            for v in w:
                s = s + v * math.sin(x)
            for a, b in pairs:
                s = s + a * x * b
            return s


        def f(x):
            return weighted(x) * x
        """,
    )
    assert_grad_matches_mp(module.f, [{"x": 0.3}, {"x": -1.7}])
    assert "w = 1.0, 2.5" in grad(module.f).source


def test_a_helpers_none_default_is_passed_as_none(tmp_path: Path) -> None:
    """`def scaled(x, scale=None)` called as `scaled(x)` was refused ("the default of
    `scale` is None; only numbers can be passed here"), though `scaled(x, None)` compiles."""
    module = module_from_source(
        tmp_path,
        """
        import math


        def scaled(x, scale=None):
            if scale is None:
                scale = 2.0
            return math.sin(x) * scale


        def f(x):
            return scaled(x) + scaled(x, 3.0)
        """,
    )
    assert_grad_matches_mp(module.f, [{"x": 0.3}, {"x": -1.7}])


def test_a_loop_over_a_list_of_a_range(tmp_path: Path) -> None:
    """`list(range(n))` was refused as a call of `list`, which has no derivative rule; it
    carries none. Reference: d/dx sum(x * i for i < n) = n (n - 1) / 2."""
    module = module_from_source(
        tmp_path,
        """
        def f(x, n):
            s = 0.0
            for i in list(range(n)):
                s = s + x * i
            return s
        """,
    )
    assert grad(module.f, wrt=0)(2.0, 4) == 6.0


def test_int_enum_constants_are_written_as_ints(tmp_path: Path) -> None:
    """An IntEnum member is an int whose repr (`<Order.SECOND: 2>`) is not Python: written
    as it was, the generated module did not parse (a bare SyntaxError at compile time)."""
    module = module_from_source(
        tmp_path,
        """
        import enum


        class Order(enum.IntEnum):
            SECOND = 2


        K = Order.SECOND
        ORDERS = (Order.SECOND, 3)


        def f(x):
            return x ** K + x ** ORDERS[1]


        def power(k):
            def g(x):
                return x ** k

            return g
        """,
    )
    assert_grad_matches_mp(module.f, [{"x": 1.5}, {"x": -0.75}])
    assert_grad_matches_mp(module.power(module.Order.SECOND), [{"x": 1.5}])
    assert "K = 2\n" in grad(module.f).source


def test_a_submodule_named_through_its_package_is_the_users_module(tmp_path, monkeypatch):
    """After `import pkg.sub`, `pkg.sub.h(x)` and `pkg.sub.C` were refused ("attribute
    access is supported only on modules"), where `import pkg.sub as s; s.h(x)` worked."""
    package = tmp_path / "adcompile_pkg_case"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "sub.py").write_text(
        "import math\nC = 1.5\n\n\ndef h(x):\n    return math.sin(x) * C\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = module_from_source(
        tmp_path,
        """
        import adcompile_pkg_case.sub


        def f(x):
            return adcompile_pkg_case.sub.h(x) + adcompile_pkg_case.sub.C * x
        """,
    )
    expected = math.cos(0.7) * 1.5 + 1.5
    assert grad(module.f)(0.7) == pytest.approx(expected, rel=1e-12)
    assert grad(module.f, mode="forward")(0.7) == pytest.approx(expected, rel=1e-12)
