"""Differential tests of the straight-line corpus against the SymPy reference.

Every function in ``tests.corpus.straight_line.CORPUS`` is compiled and compared with SymPy's
symbolic partials at seeded points of its domain; the same points drive the checks of
``wrt``, ``value_and_grad``, the standalone ``.source``, determinism and integer inputs.
"""

from __future__ import annotations

import ast
import functools
import inspect
import math
import random
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from adcompile import NoDerivativeError, grad, value_and_grad
from adcompile.symbolic import sample_points
from adcompile.testing import assert_grad_matches_sympy, compare_source_with_sympy
from tests.corpus import straight_line as corpus
from tests.corpus.straight_line import CORPUS, DEFAULT_INTERVAL, NO_DERIVATIVE, TWINS, Domain

POINT_COUNT = 5
POINT_DECIMALS = 6
FUNCTIONS: dict[str, tuple[Callable[..., Any], Domain]] = {fn.__name__: (fn, d) for fn, d in CORPUS}

# Functions with several parameters on which every spelling of ``wrt`` is checked.
WRT_SAMPLE = (
    "seed",
    "product3",
    "tuple_rotate3",
    "variable_power",
    "math_inverse_hyperbolic",
    "cond_or_not_and",
    "builtin_max4",
    "unused_params",
    "with_default",
    "collide_math_param",
    "collide_everything",
    "f",
)

# Integer points (inside each domain, away from kinks) where SymPy is compared exactly.
INT_POINTS: dict[str, tuple[int, ...]] = {
    "seed": (4, -3, 5),
    "square": (3,),
    "cube_literal_power": (-2,),
    "negative_int_power": (2,),
    "variable_power": (2, 3),
    "int_literal_arithmetic": (3,),
    "int_literal_power_chain": (2,),
    "constant_function": (1,),
    "constant_int_function": (1, 2),
    "identity": (5,),
    "returns_second_param": (1, 2),
    "unused_params": (1, 2, 3),
    "with_default": (3, 4),
    "module_constants": (2,),
    "floordiv_params": (7, 2),
    "mod_params": (7, 2),
    "aug_every_kind_on_param": (1, 2),
    "aug_pow": (2, 3),
    "tuple_rotate3": (1, 2, 3),
    "math_log_family": (2,),
    "math_sqrt": (4,),
    "math_exp_family": (1,),
    "math_pow_variable": (2, 3),
    "builtin_pow_constant": (2,),
    "builtin_float": (2, 3),
    "builtin_max2": (1, 2),
    "builtin_abs": (1,),
    "cond_simple": (2,),
    "every_function_once": (1,),
    "collide_everything": (1, 2, 3, 4, 5, 6, 7),
}


# Points that random sampling never hits, where the derivative exists all the same.
EXACT_POINTS: dict[str, list[tuple[float, ...]]] = {
    "square": [(0.0,)],
    "cube_literal_power": [(0.0,)],
    "float_power": [(0.0,)],
    "math_pow_constant": [(0.0,)],
    "builtin_pow_constant": [(0.0,)],
    "powers_zero_and_one": [(0.0,), (0,)],
}


def corpus_params(names: Sequence[str] | None = None) -> list[Any]:
    """pytest params (function, domain) for the named corpus entries, or for all of them."""
    chosen = names if names is not None else list(FUNCTIONS)
    return [pytest.param(*FUNCTIONS[name], id=name) for name in chosen]


def param_names(fn: Callable[..., Any]) -> list[str]:
    """The positional parameter names of ``fn``."""
    return list(inspect.signature(fn).parameters)


def interval(domain: Domain, name: str) -> tuple[float, float]:
    """The sampling interval of parameter ``name``."""
    return (domain or {}).get(name, DEFAULT_INTERVAL)


@functools.cache
def points_for(name: str) -> tuple[tuple[float, ...], ...]:
    """Five seeded points (as argument tuples) in the domain of corpus function ``name``."""
    fn, domain = FUNCTIONS[name]
    params = param_names(fn)
    if domain is None:
        found = sample_points(fn, POINT_COUNT, seed=0)
        return tuple(tuple(point[p] for p in params) for point in found)
    rng = random.Random(f"corpus:{name}")
    return tuple(
        tuple(round(rng.uniform(*interval(domain, p)), POINT_DECIMALS) for p in params)
        for _ in range(POINT_COUNT)
    )


def as_tuple(gradient: object) -> tuple[object, ...]:
    """A gradient result as a tuple, whether bare or not."""
    return gradient if isinstance(gradient, tuple) else (gradient,)


# --- the corpus itself -----------------------------------------------------------------------


def test_corpus_is_large_with_unique_names() -> None:
    names = [fn.__name__ for fn, _ in CORPUS]
    assert len(names) >= 90
    assert len(set(names)) == len(names)
    defined = {
        name
        for name, value in vars(corpus).items()
        if inspect.isfunction(value) and value.__module__ == corpus.__name__
    }
    twins = {f.__name__ for fn, twin, _, _ in TWINS for f in (fn, twin)}
    refused = {fn.__name__ for fn in NO_DERIVATIVE}
    assert defined == set(names) | twins | refused, "every corpus function is registered"


@pytest.mark.parametrize(("fn", "domain"), corpus_params())
def test_domain_is_well_formed(fn: Callable[..., Any], domain: Domain) -> None:
    if domain is None:
        return
    assert set(domain) <= set(param_names(fn))
    for low, high in domain.values():
        assert low < high


@pytest.mark.parametrize(("fn", "domain"), corpus_params())
def test_primal_is_finite_at_the_points(fn: Callable[..., Any], domain: Domain) -> None:
    for args in points_for(fn.__name__):
        value = fn(*args)
        assert isinstance(value, int | float)
        assert math.isfinite(value), args


# --- gradients against SymPy ----------------------------------------------------------------


@pytest.mark.parametrize(("fn", "domain"), corpus_params())
def test_grad_matches_sympy(fn: Callable[..., Any], domain: Domain) -> None:
    report = assert_grad_matches_sympy(fn, points=list(points_for(fn.__name__)))
    assert len(report.rows) == POINT_COUNT * len(param_names(fn))


@pytest.mark.parametrize(("fn", "domain"), corpus_params(list(EXACT_POINTS)))
def test_grad_matches_sympy_at_exact_points(fn: Callable[..., Any], domain: Domain) -> None:
    assert_grad_matches_sympy(fn, points=EXACT_POINTS[fn.__name__])


def wrt_variants(params: list[str]) -> list[object]:
    """Every single name and index, a subset (first and last) and the reversed tuple."""
    variants: list[object] = [*params, *range(len(params))]
    variants.append((params[0], params[-1]))
    variants.append((len(params) - 1, 0))
    variants.append(tuple(reversed(params)))
    return variants


@pytest.mark.parametrize(("fn", "domain"), corpus_params(WRT_SAMPLE))
def test_wrt_variants_match_sympy(fn: Callable[..., Any], domain: Domain) -> None:
    points = list(points_for(fn.__name__))[:3]
    for wrt in wrt_variants(param_names(fn)):
        assert_grad_matches_sympy(fn, points=points, wrt=wrt)


@pytest.mark.parametrize(("fn", "domain"), corpus_params(WRT_SAMPLE))
def test_negative_wrt_index_is_the_last_parameter(fn: Callable[..., Any], domain: Domain) -> None:
    last = len(param_names(fn)) - 1
    by_negative, by_index = grad(fn, wrt=-1), grad(fn, wrt=last)
    for args in points_for(fn.__name__):
        assert by_negative(*args) == by_index(*args)


@pytest.mark.parametrize(("fn", "domain"), corpus_params(WRT_SAMPLE))
def test_wrt_subset_agrees_with_full_gradient(fn: Callable[..., Any], domain: Domain) -> None:
    params = param_names(fn)
    full, reverse = grad(fn, wrt=tuple(params)), grad(fn, wrt=tuple(reversed(params)))
    for args in points_for(fn.__name__):
        expected = full(*args)
        assert reverse(*args) == pytest.approx(tuple(reversed(expected)), rel=1e-12, abs=1e-15)


def seeded_points(name: str, fn: Callable[..., Any], domain: Domain) -> list[dict[str, float]]:
    """Five seeded points in ``domain``, as dicts."""
    rng = random.Random(f"twin:{name}")
    return [
        {p: round(rng.uniform(*interval(domain, p)), POINT_DECIMALS) for p in param_names(fn)}
        for _ in range(POINT_COUNT)
    ]


@pytest.mark.parametrize(
    ("fn", "twin", "domain", "wrt"), TWINS, ids=[fn.__name__ for fn, *_ in TWINS]
)
def test_non_differentiable_helpers_match_sympy_of_twin(
    fn: Callable[..., Any], twin: Callable[..., Any], domain: Domain, wrt: object
) -> None:
    points = seeded_points(fn.__name__, fn, domain)
    assert all(fn(**point) == twin(**point) for point in points), "the twin must be equal"
    report = compare_source_with_sympy(twin, grad(fn, wrt=wrt), points, wrt=wrt)
    assert report.ok, report.table()


@pytest.mark.parametrize("fn", NO_DERIVATIVE, ids=lambda fn: fn.__name__)
def test_derivative_through_floor_or_round_is_refused(fn: Callable[..., Any]) -> None:
    with pytest.raises(NoDerivativeError):
        grad(fn)


# --- the generated function --------------------------------------------------------------------


@pytest.mark.parametrize(("fn", "domain"), corpus_params())
def test_value_and_grad_agrees_with_primal_and_grad(fn: Callable[..., Any], domain: Domain) -> None:
    both, gradient = value_and_grad(fn), grad(fn)
    for args in points_for(fn.__name__):
        value, partials = both(*args)
        assert value == fn(*args)
        assert partials == gradient(*args)


def import_lines(source: str) -> list[str]:
    """The source text of every import statement in ``source``."""
    tree = ast.parse(source)
    return [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
    ]


@pytest.mark.parametrize(("fn", "domain"), corpus_params())
def test_source_is_standalone(fn: Callable[..., Any], domain: Domain) -> None:
    compiled = grad(fn)
    assert not any("adcompile" in line for line in import_lines(compiled.source))
    namespace: dict[str, Any] = {}
    exec(compile(compiled.source, f"<generated {fn.__name__}>", "exec"), namespace)
    standalone = namespace[compiled.__name__]
    assert standalone is not compiled
    for args in points_for(fn.__name__):
        assert standalone(*args) == compiled(*args)


@pytest.mark.parametrize(("fn", "domain"), corpus_params())
def test_compilation_is_deterministic(fn: Callable[..., Any], domain: Domain) -> None:
    first, second = grad(fn), grad(fn)
    assert first is not second
    assert first.source == second.source
    assert value_and_grad(fn).source == value_and_grad(fn).source


# --- integer inputs ----------------------------------------------------------------------------


@pytest.mark.parametrize(("fn", "domain"), corpus_params(list(INT_POINTS)))
def test_int_inputs_match_sympy_and_give_floats(fn: Callable[..., Any], domain: Domain) -> None:
    args = INT_POINTS[fn.__name__]
    assert all(type(a) is int for a in args)
    assert_grad_matches_sympy(fn, points=[args])
    for partial in as_tuple(grad(fn)(*args)):
        assert type(partial) is float, (partial, type(partial))
    _, partials = value_and_grad(fn)(*args)
    assert all(type(p) is float for p in as_tuple(partials))


def int_point(fn: Callable[..., Any], domain: Domain) -> tuple[int, ...] | None:
    """Integers inside the domain at which the primal is finite, or None if there are none."""
    args = []
    for index, name in enumerate(param_names(fn)):
        low, high = interval(domain, name)
        preferred = [1, 2, -1, 3, -2, 4, 5, 6, 7][index % 3 :]
        inside = [k for k in preferred if low <= k <= high]
        if not inside:
            return None
        args.append(inside[0])
    try:
        value = fn(*args)
    except (ArithmeticError, ValueError):
        return None
    return tuple(args) if math.isfinite(value) else None


@pytest.mark.parametrize(("fn", "domain"), corpus_params())
def test_int_inputs_give_float_partials(fn: Callable[..., Any], domain: Domain) -> None:
    # Where no integer lies in the domain, float inputs must still give float partials.
    args = int_point(fn, domain) or points_for(fn.__name__)[0]
    for partial in as_tuple(grad(fn)(*args)):
        assert type(partial) is float, (args, partial, type(partial))
