"""The peers of ``peers.py``: each builds a gradient (or Hessian) function from a workload.

A workload's primal is Python source calling ``math``. A peer runs *that same source* with
``math`` replaced by a namespace of its own functions (``autograd.numpy``, ``torch``,
``jax.numpy``, SymPy), so every library differentiates the identical program. Where a
library cannot branch on a traced value (``jax.jit``, SymPy), conditional expressions
``a if c else b`` are rewritten to a call of its select (``jnp.where``, ``Piecewise``).

Every built function takes the workload's inputs as Python floats, converts them itself
(that is part of the timed call), and returns the partials in the library's own types (JAX
results are blocked until ready). All peers compute in float64.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import gc
import importlib
import importlib.util
import inspect
import math
import signal
import threading
import time
import types
from collections.abc import Callable, Iterator, Sequence

from .workloads import Workload

MATH_FUNCTIONS = ("sin", "cos", "tan", "exp", "log", "sqrt", "tanh", "atan", "sinh", "cosh")
NUMPY_NAMES = {"atan": "arctan"}
SELECT_NAME = "_bench_select"
Select = Callable[[object, object, object], object]


class BudgetExceeded(BaseException):
    """A set-up ran out of its time budget (a BaseException so library code cannot catch it)."""


class NotAvailable(RuntimeError):
    """The peer is installed but lacks the transform (e.g. ``adcompile.hessian`` not yet)."""


@dataclasses.dataclass
class Prepared:
    """A ready-to-time function, and what it cost to build (compile or set-up)."""

    fn: Callable[..., object]
    setup_s: float | None = None
    setup_label: str = ""
    code_lines: int | None = None


@dataclasses.dataclass(frozen=True)
class BuildContext:
    """What a builder may need besides the workload: the timing inputs, the set-up budget."""

    args: tuple[float, ...]
    budget_s: float | None = None


Build = Callable[[Workload, BuildContext], Prepared]


@dataclasses.dataclass(frozen=True)
class Peer:
    """A library's way to differentiate: ``build(workload, context)`` returns a Prepared."""

    key: str
    label: str
    requires: tuple[str, ...]
    build: Build

    def installed(self) -> bool:
        """Whether every module this peer needs can be imported."""
        return all(_module_exists(name) for name in self.requires)


def _module_exists(name: str) -> bool:
    """``find_spec`` that treats a missing parent package as absent."""
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


# --------------------------------------------------------------------------- sources


class _SelectRewriter(ast.NodeTransformer):
    """Rewrite ``a if c else b`` as ``_bench_select(c, a, b)``."""

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        """Replace one conditional expression (inner ones first)."""
        self.generic_visit(node)
        func = ast.Name(SELECT_NAME, ast.Load())
        return ast.copy_location(ast.Call(func, [node.test, node.body, node.orelse], []), node)


def backend_function(
    workload: Workload, math_namespace: object, select: Select | None = None
) -> Callable[..., object]:
    """The workload's primal, executed with ``math`` bound to ``math_namespace``."""
    tree = ast.parse(workload.primal_source)
    if select is not None:
        tree = ast.fix_missing_locations(_SelectRewriter().visit(tree))
    namespace: dict[str, object] = {SELECT_NAME: select}
    exec(compile(tree, f"<bench-peer:{workload.name}>", "exec"), namespace)
    namespace["math"] = math_namespace
    return namespace[workload.primal_name]  # type: ignore[return-value]


def math_namespace(module: object, renames: dict[str, str] | None = None) -> types.SimpleNamespace:
    """A stand-in for ``math`` taking its functions from ``module``."""
    renames = renames or {}
    functions = {}
    for name in MATH_FUNCTIONS:
        target = getattr(module, renames.get(name, name), None) or getattr(module, name, None)
        if target is not None:
            functions[name] = target
    return types.SimpleNamespace(pi=math.pi, e=math.e, **functions)


def parameter_names(workload: Workload) -> list[str]:
    """The primal's positional parameter names."""
    tree = ast.parse(workload.primal_source)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == workload.primal_name:
            return [arg.arg for arg in node.args.args]
    raise ValueError(f"no function {workload.primal_name} in {workload.name}")


def argnums(workload: Workload) -> tuple[int, ...]:
    """Indices of every input: peers differentiate all of them, like the hand gradient."""
    return tuple(range(workload.n_inputs))


@contextlib.contextmanager
def time_budget(seconds: float | None) -> Iterator[None]:
    """Raise BudgetExceeded in the main thread after ``seconds`` (no limit elsewhere)."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if seconds is None or not usable:
        yield
        return

    expired = []

    def expire(signum: int, frame: object) -> None:
        expired.append(True)
        raise BudgetExceeded(f"more than {seconds:g} s")

    # The alarm may interrupt C code, which can turn the exception into another one (a
    # SystemError); and it must not land in a garbage-collector callback, where it would be
    # printed and ignored. So: no collection meanwhile, and any error after expiry is expiry.
    collecting = gc.isenabled()
    gc.disable()
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except Exception as exc:
        if expired:
            raise BudgetExceeded(f"more than {seconds:g} s") from exc
        raise
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if collecting:
            gc.enable()


def timed(build: Callable[[], Callable[..., object]]) -> tuple[Callable[..., object], float]:
    """Call ``build`` and return its result with the wall time in seconds."""
    start = time.perf_counter()
    result = build()
    return result, time.perf_counter() - start


# --------------------------------------------------------------------------- libraries


def load_torch() -> types.ModuleType:
    """Import torch."""
    return importlib.import_module("torch")


def load_jax() -> types.ModuleType:
    """Import jax with float64 enabled (before any array exists)."""
    jax = importlib.import_module("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


def torch_function(workload: Workload) -> Callable[..., object]:
    """The primal on 0-d torch tensors."""
    return backend_function(workload, math_namespace(load_torch()))


def jax_function(workload: Workload, traced_branches: bool) -> Callable[..., object]:
    """The primal on JAX values; ``traced_branches`` rewrites ternaries to ``jnp.where``."""
    jnp = importlib.import_module("jax.numpy")
    select = jnp.where if traced_branches else None
    return backend_function(workload, math_namespace(jnp, NUMPY_NAMES), select)


def torch_inputs(args: Sequence[float], requires_grad: bool = False) -> list[object]:
    """float64 0-d tensors from Python floats."""
    torch = load_torch()
    return [torch.tensor(a, dtype=torch.float64, requires_grad=requires_grad) for a in args]


def jit_prepared(jitted: Callable[..., object], args: Sequence[float]) -> Prepared:
    """Time the first call of a jitted function (trace + XLA compile) and wrap the rest."""
    block = load_jax().block_until_ready

    def call(*inputs: float) -> object:
        return block(jitted(*inputs))

    _, seconds = timed(lambda: call(*args))
    return Prepared(call, seconds, "compile (first call)")


# --------------------------------------------------------------------------- gradients


def code_lines(source: str) -> int | None:
    """Lines of code in generated source: not blank, not a comment."""
    lines = [line for line in source.splitlines() if line.strip()]
    return len([line for line in lines if not line.lstrip().startswith("#")]) or None


def build_adcompile(workload: Workload, context: BuildContext) -> Prepared:
    """``adcompile.grad`` of the primal; its compile time is the set-up."""
    from adcompile import grad

    primal = workload.primal()
    fn, seconds = timed(lambda: grad(primal))
    return Prepared(fn, seconds, "compile", code_lines(getattr(fn, "source", "")))


def build_autograd(workload: Workload, context: BuildContext) -> Prepared:
    """HIPS autograd's ``grad`` over every argument."""
    autograd = importlib.import_module("autograd")
    anp = importlib.import_module("autograd.numpy")
    primal = backend_function(workload, math_namespace(anp, NUMPY_NAMES))
    return Prepared(autograd.grad(primal, argnum=argnums(workload)))


def build_torch_backward(workload: Workload, context: BuildContext) -> Prepared:
    """Tensors with ``requires_grad``, the primal, ``backward()``, the ``.grad`` fields."""
    primal = torch_function(workload)

    def gradient(*args: float) -> list[object]:
        inputs = torch_inputs(args, requires_grad=True)
        primal(*inputs).backward()  # type: ignore[attr-defined]
        return [t.grad for t in inputs]  # type: ignore[attr-defined]

    return Prepared(gradient)


def build_torch_func(workload: Workload, context: BuildContext) -> Prepared:
    """``torch.func.grad`` over every argument."""
    func = importlib.import_module("torch.func")
    transformed = func.grad(torch_function(workload), argnums=argnums(workload))

    def gradient(*args: float) -> object:
        return transformed(*torch_inputs(args))

    return Prepared(gradient)


def build_jax_eager(workload: Workload, context: BuildContext) -> Prepared:
    """``jax.grad`` called eagerly (Python branches allowed)."""
    jax = load_jax()
    transformed = jax.grad(jax_function(workload, False), argnums=argnums(workload))

    def gradient(*args: float) -> object:
        return jax.block_until_ready(transformed(*args))

    return Prepared(gradient)


def build_jax_jit(workload: Workload, context: BuildContext) -> Prepared:
    """``jax.jit(jax.grad(f))``; the first call (trace and compile) is the set-up."""
    jax = load_jax()
    primal = jax_function(workload, True)
    return jit_prepared(jax.jit(jax.grad(primal, argnums=argnums(workload))), context.args)


def sympy_expression(workload: Workload) -> tuple[object, list[object]]:
    """The primal executed on SymPy symbols (ternaries as ``Piecewise``), and the symbols."""
    import sympy

    def select(test: object, body: object, orelse: object) -> object:
        return sympy.Piecewise((body, test), (orelse, True))

    symbols = [sympy.Symbol(name, real=True) for name in parameter_names(workload)]
    primal = backend_function(workload, math_namespace(sympy), select)
    return primal(*symbols), symbols


def lambdified(symbols: Sequence[object], exprs: object) -> Prepared:
    """``lambdify(..., modules="math", cse=True)``, with the generated code's line count."""
    import sympy

    fn = sympy.lambdify(symbols, exprs, modules="math", cse=True)
    return Prepared(fn, code_lines=code_lines(inspect.getsource(fn)))


def build_sympy(workload: Workload, context: BuildContext) -> Prepared:
    """``sympy.diff`` of the symbolically executed primal, cse'd ``lambdify``, within budget."""
    import sympy

    start = time.perf_counter()
    with time_budget(context.budget_s):
        expr, symbols = sympy_expression(workload)
        prepared = lambdified(symbols, [sympy.diff(expr, s) for s in symbols])
    prepared.setup_s = time.perf_counter() - start
    prepared.setup_label = "set-up"
    return prepared


# --------------------------------------------------------------------------- Hessians


def build_adcompile_hessian(workload: Workload, context: BuildContext) -> Prepared:
    """``adcompile.hessian`` when it exists (issue 7), else NotAvailable."""
    import adcompile

    if not hasattr(adcompile, "hessian"):
        raise NotAvailable("adcompile.hessian does not exist yet")
    primal = workload.primal()
    fn, seconds = timed(lambda: adcompile.hessian(primal))
    return Prepared(fn, seconds, "compile", code_lines(getattr(fn, "source", "")))


def build_jax_hessian(workload: Workload, context: BuildContext) -> Prepared:
    """``jax.hessian`` called eagerly."""
    jax = load_jax()
    transformed = jax.hessian(jax_function(workload, False), argnums=argnums(workload))

    def hessian(*args: float) -> object:
        return jax.block_until_ready(transformed(*args))

    return Prepared(hessian)


def build_jax_jit_hessian(workload: Workload, context: BuildContext) -> Prepared:
    """``jax.jit(jax.hessian(f))``; the first call is the set-up."""
    jax = load_jax()
    primal = jax_function(workload, True)
    return jit_prepared(jax.jit(jax.hessian(primal, argnums=argnums(workload))), context.args)


def build_torch_hessian(workload: Workload, context: BuildContext) -> Prepared:
    """``torch.autograd.functional.hessian`` on a tuple of 0-d tensors."""
    functional = importlib.import_module("torch.autograd.functional")
    primal = torch_function(workload)

    def hessian(*args: float) -> object:
        return functional.hessian(primal, tuple(torch_inputs(args)))

    return Prepared(hessian)


def sympy_hessian_matrix(workload: Workload) -> tuple[list[list[object]], list[object]]:
    """Second partials of the symbolically executed primal, and the symbols."""
    import sympy

    expr, symbols = sympy_expression(workload)
    firsts = [sympy.diff(expr, s) for s in symbols]
    return [[sympy.diff(d, s) for s in symbols] for d in firsts], symbols


def build_sympy_hessian(workload: Workload, context: BuildContext) -> Prepared:
    """SymPy second partials, cse'd ``lambdify``, within budget."""
    start = time.perf_counter()
    with time_budget(context.budget_s):
        matrix, symbols = sympy_hessian_matrix(workload)
        prepared = lambdified(symbols, matrix)
    prepared.setup_s = time.perf_counter() - start
    prepared.setup_label = "set-up"
    return prepared


def sympy_reference_hessian(workload: Workload) -> Callable[..., object]:
    """The SymPy Hessian evaluated in 40-digit mpmath: the reference for every Hessian peer."""
    import mpmath
    import sympy

    matrix, symbols = sympy_hessian_matrix(workload)
    fn = sympy.lambdify(symbols, matrix, modules="mpmath")

    def reference(*args: float) -> object:
        with mpmath.workdps(40):
            return fn(*(mpmath.mpf(a) for a in args))

    return reference
