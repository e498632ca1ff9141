"""The public API: decorator forms, wrt, value_and_grad, dump and the generated function."""

from __future__ import annotations

import inspect
import math
import subprocess
import sys
from pathlib import Path

import pytest

from adcompile import dump, grad, value_and_grad
from tests.helpers import function_from_source, module_from_source

SEED = """
def f(x, y, z):
    q = x + y
    return q * z
"""


@pytest.fixture
def seed(tmp_path):
    return function_from_source(tmp_path, SEED)


def test_seed_gradient_is_exact(seed):
    assert grad(seed)(4.0, -3.0, 5.0) == (5.0, 5.0, 1.0)


def test_square_gradient(tmp_path):
    sq = function_from_source(tmp_path, "def sq(x):\n    return x * x\n", "sq")
    assert grad(sq)(1.0) == 2.0
    assert grad(sq)(-1.5) == -3.0


def test_decorator_forms(tmp_path):
    module = module_from_source(
        tmp_path,
        """
        from adcompile import grad

        @grad
        def a(x, y):
            return x * y

        @grad(wrt="y")
        def b(x, y):
            return x * y

        def c(x, y):
            return x * y
        """,
    )
    assert module.a(2.0, 3.0) == (3.0, 2.0)
    assert module.b(2.0, 3.0) == 2.0
    assert grad(module.c, wrt="x")(2.0, 3.0) == 3.0


@pytest.mark.parametrize(
    ("wrt", "expected"),
    [
        (None, (5.0, 5.0, 1.0)),
        ("x", 5.0),
        (2, 1.0),
        (-1, 1.0),
        (("z", "x"), (1.0, 5.0)),
        ([1], (5.0,)),
        ((0, "z"), (5.0, 1.0)),
    ],
)
def test_wrt_selects_and_orders_partials(seed, wrt, expected):
    assert grad(seed, wrt=wrt)(4.0, -3.0, 5.0) == expected


@pytest.mark.parametrize(
    ("wrt", "fragment"),
    [
        ("w", "'w' is not a parameter"),
        (3, "out of range"),
        (-4, "out of range"),
        (("x", "x"), "twice"),
        ((0, "x"), "twice"),
        ((), "selects no parameter"),
    ],
)
def test_bad_wrt_raises_value_error_naming_parameters(seed, wrt, fragment):
    with pytest.raises(ValueError, match=fragment) as info:
        grad(seed, wrt=wrt)
    assert "(x, y, z)" in str(info.value)


class _Scaled:
    def times_three(self, x):
        return x * 3.0


def test_bound_method_is_refused_with_the_way_to_differentiate_it():
    with pytest.raises(TypeError, match=r"differentiate the function _Scaled\.times_three"):
        grad(_Scaled().times_three)
    with pytest.raises(TypeError, match="not builtin_function_or_method objects"):
        grad(abs)
    # What the message suggests works: the plain function, the instance passed in.
    assert grad(_Scaled.times_three, wrt="x")(_Scaled(), 2.0) == 3.0


def test_wrt_of_wrong_type_is_type_error(seed):
    with pytest.raises(TypeError, match=r"not True; f has parameters \(x, y, z\)"):
        grad(seed, wrt=True)
    with pytest.raises(TypeError, match=r"not 1.5; f has parameters \(x, y, z\)"):
        grad(seed, wrt=1.5)


def test_numpy_integers_are_indices_in_wrt(seed):
    np = pytest.importorskip("numpy")
    assert grad(seed, wrt=np.int64(2))(4.0, -3.0, 5.0) == grad(seed, wrt=2)(4.0, -3.0, 5.0)
    assert grad(seed, wrt=(np.int32(0), 1))(4.0, -3.0, 5.0) == (5.0, 5.0)


def test_function_without_parameters_is_rejected(tmp_path):
    f = function_from_source(tmp_path, "def f():\n    return 1.0\n")
    with pytest.raises(ValueError, match="no parameters"):
        grad(f)


def test_value_and_grad(seed):
    value, grads = value_and_grad(seed)(4.0, -3.0, 5.0)
    assert value == seed(4.0, -3.0, 5.0)
    assert grads == (5.0, 5.0, 1.0)
    assert value_and_grad(seed, wrt="z")(4.0, -3.0, 5.0) == (5.0, 1.0)


def test_generated_function_carries_source_signature_and_primal(seed):
    g = grad(seed)
    assert g.__name__ == "f_grad"
    assert g.__wrapped__ is seed
    assert inspect.signature(g) == inspect.signature(seed)
    assert "def f_grad(x, y, z):" in g.source
    assert dump(seed) == g.source
    assert value_and_grad(seed).__name__ == "f_value_and_grad"


def test_compiling_twice_gives_independent_objects_and_same_text(seed):
    first, second = grad(seed), grad(seed)
    assert first is not second
    assert first.source == second.source


def test_generated_module_is_standalone(seed):
    source = grad(seed).source
    assert "adcompile" not in "".join(
        line for line in source.splitlines() if line.startswith(("import", "from"))
    )
    namespace: dict[str, object] = {}
    exec(compile(source, "<dumped>", "exec"), namespace)
    assert namespace["f_grad"](4.0, -3.0, 5.0) == (5.0, 5.0, 1.0)


def test_int_inputs_give_float_partials(tmp_path):
    f = function_from_source(tmp_path, "def f(x, n):\n    return x * n + x\n")
    partials = grad(f)(2, 3)
    assert partials == (4.0, 2.0)
    assert all(type(p) is float for p in partials)


def test_constant_function_has_zero_float_gradient(tmp_path):
    f = function_from_source(tmp_path, "def f(x, y):\n    return 2.0 * y\n")
    assert grad(f, wrt="x")(1.0, 5.0) == 0.0
    assert type(grad(f, wrt="x")(1.0, 5.0)) is float


def test_defaults_are_kept(tmp_path):
    f = function_from_source(tmp_path, "def f(x, scale=3.0):\n    return scale * x * x\n")
    assert grad(f, wrt="x")(2.0) == 12.0
    assert "scale=3.0" in grad(f).source


def test_numpy_scalar_and_non_finite_tuple_defaults_are_written_as_python_numbers(tmp_path):
    """`y=np.float64(2.0)`, `n=np.int64(3)` and `t=(1.0, math.nan)` were refused ("cannot be
    written into generated code"), though module constants of the same values compile."""
    f = function_from_source(
        tmp_path,
        "import math\nimport numpy as np\n\n\n"
        "def f(x, y=np.float64(2.0), n=np.int64(3), t=(1.0, math.nan)):\n"
        "    return x * y * n\n",
    )
    gradient = grad(f, wrt="x")
    assert gradient(1.5) == 6.0
    assert "y=2.0, n=3, t=(1.0, float('nan'))" in gradient.source


def test_globals_and_closure_constants(tmp_path):
    module = function_from_source(
        tmp_path,
        """
        import math
        K = 3.0

        def make(c):
            def inner(x):
                return K * x + c * x + math.pi * x
            return inner

        f = make(2.0)
        """,
    ).__globals__
    g = grad(module["f"])
    assert g(1.0) == pytest.approx(5.0 + math.pi, rel=1e-15)
    assert "K = 3.0" in g.source
    assert "c = 2.0" in g.source


def test_lambda_can_be_differentiated(tmp_path):
    module = function_from_source(tmp_path, "sq = lambda x: x * x\n", "sq")
    assert grad(module)(3.0) == 6.0


def test_import_and_grad_do_not_import_sympy(tmp_path):
    path = tmp_path / "nosympy.py"
    path.write_text(
        SEED + "\nimport sys\nfrom adcompile import grad\nprint(grad(f)(4.0, -3.0, 5.0))\n"
        "assert 'sympy' not in sys.modules, 'sympy was imported'\n"
    )
    run = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "(5.0, 5.0, 1.0)"


def test_scalar_code_runs_without_numpy_installed(tmp_path):
    """NumPy is not a runtime dependency: `pip install -e . && python examples/seed.py` (the
    README's first command) failed on a fresh machine once a module imported NumPy's rules
    at start-up. The check, explain and dump commands' scalar paths need none either."""
    path = tmp_path / "nonumpy.py"
    path.write_text(
        "import sys\nsys.modules['numpy'] = None  # as if not installed: importing it fails\n"
        + SEED
        + "\nfrom adcompile import grad, explain\nfrom adcompile.cli import main\n"
        "print(grad(f)(4.0, -3.0, 5.0))\nprint(explain(f, 4.0, -3.0, 5.0).gradient)\n"
        f"assert main(['dump', {str(path)!r} + ':f']) == 0\n"
    )
    run = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[:2] == ["(5.0, 5.0, 1.0)", "{'x': 5.0, 'y': 5.0, 'z': 1.0}"]


def test_a_file_edited_after_import_is_read_again(tmp_path):
    first = function_from_source(tmp_path, "def f(x):\n    return x * x\n")
    assert grad(first)(3.0) == 6.0
    path = Path(first.__code__.co_filename)
    path.write_text("def f(x):\n    return x * x * x\n")  # same file, new content
    namespace: dict[str, object] = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    assert grad(namespace["f"])(3.0) == 27.0


def _generated_line_entries() -> int:
    import linecache

    return sum(1 for name in linecache.cache if name.startswith("<adcompile "))


def test_compiled_versions_and_their_lines_do_not_pile_up(tmp_path: Path) -> None:
    """A constant changed on every step (a schedule in a training loop) kept one compiled
    version per value for jvp, and every compile kept its lines in linecache for good."""
    import gc

    from adcompile import jvp

    module = module_from_source(tmp_path, "K = 1.0\n\n\ndef f(x):\n    return x * K\n")
    gc.collect()
    before = _generated_line_entries()
    for step in range(200):
        module.K = float(step)
        assert jvp(module.f, (2.0,), (1.0,)) == (2.0 * step, float(step))
        assert grad(module.f)(1.0) == float(step)
    gc.collect()
    assert _generated_line_entries() - before <= 20
    import linecache

    alive = grad(module.f)
    name = alive.__code__.co_filename
    assert linecache.getlines(name)  # a living gradient's lines stay, for tracebacks
    del alive
    gc.collect()
    assert not linecache.cache.get(name)
