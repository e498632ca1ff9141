"""Smoke tests of the loop benchmark: tiny workloads, hand-written gradients checked.

No timing is asserted here.
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.benchmarks import loops
from tests.benchmarks.straight_line import Settings
from tests.benchmarks.workloads import as_tuple, gradient_mismatches

TINY = [
    loops.step_workload(1),
    loops.step_workload(7),
    loops.step_workload(loops.SHORT_STEPS),
    loops.step_workload(2_000),
    loops.horner_workload(0),
    loops.horner_workload(4),
    loops.horner_workload(loops.HORNER_DEGREE),
]


def _ids(spec: loops.LoopWorkload) -> str:
    """Test id of a workload."""
    return spec.name


@pytest.mark.parametrize("spec", TINY, ids=_ids)
def test_hand_gradient_matches_finite_differences(spec: loops.LoopWorkload) -> None:
    primal = spec.workload.primal()
    hand = spec.workload.hand_grad()
    assert len(spec.check_points) >= 2
    for point in spec.check_points:
        expected = loops.fd_gradient(primal, point, spec.fd_scales)
        assert gradient_mismatches(as_tuple(hand(*point)), expected, loops.FD_RTOL) == []


@pytest.mark.parametrize("spec", TINY, ids=_ids)
def test_adcompile_agrees_with_hand_gradient(spec: loops.LoopWorkload) -> None:
    adcompile = pytest.importorskip("adcompile")
    generated = adcompile.grad(spec.workload.primal(), wrt=spec.wrt)
    hand = spec.workload.hand_grad()
    for point in spec.check_points:
        actual = as_tuple(generated(*point))
        assert gradient_mismatches(actual, as_tuple(hand(*point)), loops.AGREE_RTOL) == []


def test_build_rejects_a_wrong_hand_gradient() -> None:
    adcompile = pytest.importorskip("adcompile")
    spec = loops.step_workload(5)
    wrong = spec.workload.grad_source.replace("return gx, ga", "return gx, 1.01 * ga")
    bad = loops.LoopWorkload(
        dataclasses.replace(spec.workload, grad_source=wrong),
        spec.wrt,
        spec.iterations,
        spec.timing_args,
        spec.check_points,
        spec.fd_scales,
    )
    with pytest.raises(loops.BenchmarkError, match="hand-written vs finite differences"):
        loops.build(bad, adcompile.grad)


def test_long_workload_is_not_degenerate() -> None:
    spec = loops.long_workload(20_000)
    gx, ga = spec.workload.hand_grad()(*spec.timing_args)
    assert 1e-3 < abs(gx) < 1e3
    assert abs(ga) > 1e-3


def test_recorded_values_counts_tuple_elements() -> None:
    source = "def f(s, t):\n    s.append((a, b, c))\n    t.append(x)\n    t.extend(y)\n"
    count, pushes = loops.recorded_values(source)
    assert count == 4
    assert pushes == ("s.append((a, b, c))", "t.append(x)")


def test_peak_bytes_sees_a_list_of_floats() -> None:
    def make(n: float) -> None:
        values = [float(i) for i in range(int(n))]
        del values

    peak = loops.peak_bytes(make, (10_000.0,))
    assert 10_000 * 24 <= peak < 10_000 * 64


def test_timing_memory_and_report_at_tiny_size() -> None:
    adcompile = pytest.importorskip("adcompile")
    built = loops.build(loops.step_workload(1_000), adcompile.grad)
    row = loops.time_workload(
        built, Settings(samples=1, warmup=0, sample_ns=100_000, compile_runs={})
    )
    memory = loops.measure_memory(built)
    assert memory.hand_recorded == 1
    assert memory.adcompile_recorded >= 1
    assert memory.adcompile_bytes >= 1_000 * 24 * memory.adcompile_recorded
    text = "\n".join(loops.runtime_table([row]) + loops.memory_table(memory))
    assert "| step1000 | 1,000 |" in text
    assert "bytes/(iteration × value)" in text
