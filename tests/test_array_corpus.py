"""Validation of the NumPy array corpus and its finite-difference reference (issue 4).

These tests make the corpus trustworthy independently of the compiler (which
``test_array_gradients.py`` checks against it): every function runs and returns a finite
scalar without mutating its inputs, every hand-written NumPy backward agrees with central
finite differences, the checker rejects wrong gradients (values, shapes, dtypes, structure)
and mutation, and the corpus covers every feature that issue 4 lists.
"""

from __future__ import annotations

import inspect
import numbers

import numpy as np
import pytest

from tests.array_reference import (
    assert_grads_close,
    assert_same_structure,
    call_without_mutation,
    check_gradient,
    directional_difference,
    finite_difference_grad,
    tree_leaves,
    tree_map,
)
from tests.corpus import arrays
from tests.corpus.arrays import CASES, FEATURES, ArrayCase

SEEDS = (0, 1, 2)
GRAD_CASES = [case for case in CASES if case.grad is not None]
WORKLOADS = (
    "workload:mlp",
    "workload:least-squares",
    "workload:logistic-regression",
    "workload:softmax-cross-entropy",
    "workload:quadratic-form",
    "workload:row-normalised",
)


def _ids(cases: list[ArrayCase]) -> list[str]:
    """Test ids: the case names."""
    return [case.name for case in cases]


def _args(case: ArrayCase, seed: int) -> tuple[object, ...]:
    """The case's inputs drawn from a generator seeded by the case name and ``seed``."""
    salt = sum(case.name.encode())
    return case.make_args(np.random.default_rng([seed, salt]))


# --- corpus shape -------------------------------------------------------------------------------


def test_corpus_has_at_least_60_unique_entries() -> None:
    names = [case.name for case in CASES]
    assert len(names) >= 60
    assert len(set(names)) == len(names)
    assert len({id(case.fn) for case in CASES}) == len(CASES)


def test_every_listed_feature_is_covered_and_every_tag_is_known() -> None:
    used = {tag for case in CASES for tag in case.tags}
    assert sorted(set(FEATURES) - used) == []
    assert sorted(used - set(FEATURES)) == []


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_lexical_tags_match_the_source(case: ArrayCase) -> None:
    source = inspect.getsource(case.fn)
    for tag in case.tags:
        spelling = FEATURES[tag]
        assert spelling is None or spelling in source, f"{tag}: {spelling!r} not in source"


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_case_is_a_module_level_function_with_valid_wrt(case: ArrayCase) -> None:
    assert case.fn.__module__ == arrays.__name__
    assert getattr(arrays, case.name) is case.fn
    params = inspect.signature(case.fn).parameters
    assert case.wrt and all(0 <= k < len(params) for k in case.wrt)
    assert len(set(case.wrt)) == len(case.wrt)
    assert len(_args(case, 0)) == len(params)
    assert case.inputs


def test_named_workloads_have_hand_written_gradients() -> None:
    for tag in WORKLOADS:
        assert any(tag in case.tags for case in GRAD_CASES), tag
    others = [case for case in GRAD_CASES if not set(case.tags) & set(WORKLOADS)]
    assert len(others) >= 15


def test_float32_cases_really_use_float32_leaves() -> None:
    for case in CASES:
        if "dtype:float32" in case.tags:
            leaves = [leaf for arg in _args(case, 0) for _, leaf in tree_leaves(arg)]
            assert any(getattr(leaf, "dtype", None) == np.float32 for leaf in leaves), case.name


# --- every function runs, every reference gradient is trustworthy -------------------------------


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_function_returns_finite_scalar_without_mutation(case: ArrayCase) -> None:
    for seed in SEEDS:
        out = call_without_mutation(case.fn, _args(case, seed))
        assert isinstance(out, numbers.Real | np.floating), type(out)
        assert np.isfinite(out)


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_finite_differences_have_the_structure_shape_and_dtype_of_the_inputs(
    case: ArrayCase,
) -> None:
    args = _args(case, 0)
    ref = finite_difference_grad(case.fn, args, case.wrt)
    assert len(ref) == len(case.wrt)
    for k, grad in zip(case.wrt, ref, strict=True):
        assert_same_structure(grad, args[k])
        inputs = dict(tree_leaves(args[k]))
        for path, leaf in tree_leaves(grad):
            assert type(leaf) is type(inputs[path])
            assert np.shape(leaf) == np.shape(inputs[path])
            assert np.asarray(leaf).dtype == np.asarray(inputs[path]).dtype
            assert np.all(np.isfinite(leaf))


@pytest.mark.parametrize("case", GRAD_CASES, ids=_ids(GRAD_CASES))
def test_hand_written_gradient_matches_finite_differences(case: ArrayCase) -> None:
    for seed in SEEDS:
        check_gradient(case.fn, case.grad, _args(case, seed), case.wrt)


@pytest.mark.parametrize("name", ["mlp_tanh_loss", "least_squares"])
def test_hand_written_gradient_at_benchmark_size(name: str) -> None:
    case = next(case for case in CASES if case.name == name)
    rng = np.random.default_rng(7)
    args = arrays.bench_args(rng)[name]
    grads = call_without_mutation(case.grad, args)
    directions = [tree_map(lambda v: rng.standard_normal(np.shape(v)), args[k]) for k in case.wrt]
    predicted = sum(
        float(np.sum(g * d))
        for grad, direction in zip(grads, directions, strict=True)
        for (_, g), (_, d) in zip(tree_leaves(grad), tree_leaves(direction), strict=True)
    )
    measured = directional_difference(case.fn, args, case.wrt, directions)
    assert abs(predicted - measured) <= 1e-7 * max(1.0, abs(measured))


def test_unused_leaf_gets_exact_zeros() -> None:
    case = next(c for c in CASES if "pytree:unused-leaf" in c.tags)
    params = finite_difference_grad(case.fn, _args(case, 0), case.wrt)[0]
    assert np.array_equal(params["inner"]["unused"], np.zeros((2, 2)))


# --- the checker can fail -----------------------------------------------------------------------


def _least_squares_inputs() -> tuple[ArrayCase, tuple[object, ...]]:
    """The least-squares case and its inputs."""
    case = next(c for c in CASES if c.name == "least_squares")
    return case, _args(case, 0)


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda g: (g[0] * 1.001, g[1], g[2]),
        lambda g: (g[0], g[1] + np.eye(3)[0] * 1e-4 * max(1.0, abs(g[1][0])), g[2]),
        lambda g: (g[0], g[1], -g[2]),
        lambda g: (g[0][:, :2], g[1], g[2]),
        lambda g: (g[0].astype(np.float32), g[1], g[2]),
        lambda g: (g[0], list(g[1]), g[2]),
        lambda g: (g[0], g[1]),
        lambda g: [g[0], g[1], g[2]],
        lambda g: (g[0], np.full_like(g[1], np.nan), g[2]),
    ],
    ids=["scaled", "one-element", "sign", "shape", "dtype", "list", "missing", "not-tuple", "nan"],
)
def test_checker_rejects_a_wrong_gradient(corrupt) -> None:
    case, args = _least_squares_inputs()
    check_gradient(case.fn, case.grad, args, case.wrt)
    with pytest.raises(AssertionError):
        check_gradient(case.fn, lambda *a: corrupt(case.grad(*a)), args, case.wrt)


def test_checker_rejects_wrong_pytree_structure() -> None:
    case = next(c for c in CASES if c.name == "mlp_tanh_loss")
    args = _args(case, 0)

    def missing_key(*a):
        (grads,) = case.grad(*a)
        return ({k: v for k, v in grads.items() if k != "b2"},)

    def swapped(*a):
        (grads,) = case.grad(*a)
        return ({**grads, "b1": grads["b2"], "b2": grads["b1"]},)

    for wrong in (missing_key, swapped):
        with pytest.raises(AssertionError):
            check_gradient(case.fn, wrong, args, case.wrt)


def test_checker_rejects_float32_gradient_given_as_float64() -> None:
    case = next(c for c in CASES if c.name == "float32_elementwise")
    args = _args(case, 0)
    check_gradient(case.fn, case.grad, args, case.wrt)
    with pytest.raises(AssertionError, match="dtype"):
        check_gradient(
            case.fn, lambda *a: tuple(g.astype(np.float64) for g in case.grad(*a)), args, case.wrt
        )


def test_reference_is_accurate_on_a_known_gradient() -> None:
    x = np.random.default_rng(3).standard_normal((3, 4))
    (ref,) = finite_difference_grad(lambda v: np.sum(v**3 + np.sin(v)), (x,), (0,))
    assert np.max(np.abs(ref - (3 * x**2 + np.cos(x)))) < 1e-9
    (g_float, g_np32) = finite_difference_grad(
        lambda a, b: a**2 * b, (1.5, np.float32(2.0)), (0, 1)
    )
    assert type(g_float) is float and abs(g_float - 6.0) < 1e-9
    assert type(g_np32) is np.float32 and abs(g_np32 - 2.25) < 1e-6


def test_reference_refuses_non_float_leaves_and_array_outputs() -> None:
    with pytest.raises(TypeError, match="non-float leaf"):
        finite_difference_grad(lambda x, i: x[i], (np.ones(3), 1), (1,))
    with pytest.raises(TypeError, match="not a scalar"):
        finite_difference_grad(lambda x: x * 2.0, (np.ones(3),), (0,))


def test_tolerance_accepts_float32_rounding_but_not_float32_errors() -> None:
    x = np.random.default_rng(4).standard_normal(5).astype(np.float32)
    ref = finite_difference_grad(lambda v: np.sum(v**2), (x,), (0,))
    assert_grads_close((np.float32(2.0) * x,), ref)
    with pytest.raises(AssertionError):
        assert_grads_close((np.float32(2.002) * x,), ref)


# --- the mutation check can fail ----------------------------------------------------------------


def _adds_in_place(x):
    x += 1.0
    return np.sum(x)


def _writes_dict(params):
    params["w"] = params["w"] * 2.0
    return np.sum(params["w"])


def _appends(layers):
    layers.append(np.ones(2))
    return np.sum(layers[0])


def _writes_element(layers):
    layers[0][1] = 5.0
    return np.sum(layers[0])


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (_adds_in_place, (np.arange(3.0),)),
        (_writes_dict, ({"w": np.ones(2)},)),
        (_appends, ([np.ones(2)],)),
        (_writes_element, ([np.zeros(3)],)),
    ],
    ids=["in-place", "dict-entry", "append", "element"],
)
def test_mutation_check_catches_mutating_functions(fn, args) -> None:
    with pytest.raises(AssertionError):
        call_without_mutation(fn, args)


def test_check_gradient_rejects_a_mutating_gradient() -> None:
    case, args = _least_squares_inputs()

    def mutating(A, x, b):
        out = case.grad(A, x, b)
        b *= 1.0 + 1e-12
        return out

    with pytest.raises(AssertionError, match="changed"):
        check_gradient(case.fn, mutating, args, case.wrt)
