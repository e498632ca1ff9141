"""Smoke tests of the benchmark workloads: generators run, hand-written gradients are right.

No timing is measured or asserted here.
"""

from __future__ import annotations

import inspect
import re

import pytest

from tests.benchmarks import straight_line
from tests.benchmarks.workloads import (
    HAND_GRAD_NAME,
    PRIMAL_NAME,
    Workload,
    as_tuple,
    count_operations,
    evaluation_points,
    float_fd_gradient,
    generate_program,
    gradient_mismatches,
    make_module,
    medium_workload,
    mp_fd_gradient,
    seed_workload,
    statements_for_operations,
    straight_line_source,
    straight_line_workload,
)

SMALL = [
    straight_line_workload(n_ops, n_inputs, seed)
    for n_ops, n_inputs, seed in [(2, 1, 0), (5, 2, 1), (20, 4, 0), (40, 3, 2), (80, 4, 3)]
]
WORKLOADS = [seed_workload(), medium_workload(), *SMALL]


def _ids(workload: Workload) -> str:
    """Test id of a workload."""
    return f"{workload.name}-{workload.n_inputs}in"


@pytest.mark.parametrize("workload", WORKLOADS, ids=_ids)
def test_hand_gradient_matches_float_differences(workload: Workload) -> None:
    primal = workload.primal()
    hand = workload.hand_grad()
    for point in evaluation_points(workload.n_inputs, 3):
        expected = float_fd_gradient(primal, point, step=1e-6)
        assert gradient_mismatches(as_tuple(hand(*point)), expected, rtol=1e-5) == []


@pytest.mark.parametrize("workload", [medium_workload(), SMALL[-1]], ids=_ids)
def test_hand_gradient_matches_exact_differences(workload: Workload) -> None:
    hand = workload.hand_grad()
    for point in evaluation_points(workload.n_inputs, 2, seed=5):
        expected = mp_fd_gradient(workload.primal_source, workload.primal_name, point)
        assert gradient_mismatches(as_tuple(hand(*point)), expected, rtol=1e-8) == []


def test_generator_is_deterministic_and_seeded() -> None:
    assert straight_line_source(50, 4, 0) == straight_line_source(50, 4, 0)
    assert straight_line_source(50, 4, 0) != straight_line_source(50, 4, 1)


@pytest.mark.parametrize("n_ops", [4, 30, 300])
def test_primal_has_exactly_n_statements_and_uses_every_input(n_ops: int) -> None:
    primal, _ = straight_line_source(n_ops, 4, 0)
    body = primal.split(f"def {PRIMAL_NAME}(", 1)[1].splitlines()[1:]
    statements = [line for line in body if line.strip() and not line.strip().startswith("return")]
    assert len(statements) == n_ops
    assert {f"x{i}" for i in range(4)} <= set(re.findall(r"\bx\d\b", "\n".join(statements)))


def test_primal_exercises_reassignment_and_augmented_assignment() -> None:
    primal, _ = straight_line_source(300, 4, 0)
    assert re.search(r"^\s+s [-+*]= ", primal, re.MULTILINE)
    assert re.search(r" if \w+ > 0\.0 else ", primal)
    targets = re.findall(r"^\s+(v\d+) = ", primal, re.MULTILINE)
    assert len(targets) > len(set(targets))


def test_every_op_is_live() -> None:
    program = generate_program(200, 4, 0)
    used = {a for op in program.ops for a in op.args} | {program.output}
    assert used == set(range(program.n_inputs + len(program.ops)))


def test_too_few_statements_is_an_error() -> None:
    with pytest.raises(ValueError):
        generate_program(3, 4, 0)


def test_make_module_source_is_readable() -> None:
    primal, hand = straight_line_source(10, 2, 0)
    fn = getattr(make_module("smoke", primal), PRIMAL_NAME)
    assert inspect.getsource(fn).startswith(f"def {PRIMAL_NAME}(x0, x1):")
    assert callable(getattr(make_module("smoke", hand), HAND_GRAD_NAME))


def test_batch_runner_calls_the_function_n_times() -> None:
    calls = []
    run = straight_line.make_batch_runner(2)
    elapsed = run(lambda a, b: calls.append(a + b), (1.0, 2.0), 5)
    assert calls == [3.0] * 5
    assert elapsed >= 0


@pytest.mark.parametrize("workload", [seed_workload(), medium_workload(), SMALL[2]], ids=_ids)
def test_adcompile_agrees_with_hand_gradient(workload: Workload) -> None:
    adcompile = pytest.importorskip("adcompile")
    generated = adcompile.grad(workload.primal())
    hand = workload.hand_grad()
    for point in evaluation_points(workload.n_inputs, 2):
        actual = as_tuple(generated(*point))
        assert gradient_mismatches(actual, as_tuple(hand(*point)), rtol=1e-8) == []


def test_count_operations_counts_each_kind_once() -> None:
    source = (
        "def f(x, y):\n"
        "    a = -0.75 * x\n"  # one: the negative literal is a number
        "    a += -y\n"  # two: the augmented addition and the negation
        "    b = math.sin(a) if a > 0.0 else a ** 2\n"  # four: call, compare, conditional, pow
        "    return b and x\n"  # one: the boolean operation
    )
    assert count_operations(source) == 8
    assert count_operations(seed_workload().primal_source) == 2


def test_statements_for_operations_is_where_the_count_first_reaches_it() -> None:
    n = statements_for_operations(60)
    assert count_operations(straight_line_source(n)[0]) >= 60
    assert count_operations(straight_line_source(n - 1)[0]) < 60


def test_compile_table_holds_each_row_to_its_own_target() -> None:
    rows = [
        straight_line.CompileRow(229, (40.0, 45.0, 60.0), 1000, 300, sized_for_operations=300),
        straight_line.CompileRow(300, (55.0, 52.0, 51.0), 1394, 408),
        straight_line.CompileRow(500, (90.0,), 2341, 680),
    ]
    table = "\n".join(straight_line.compile_lines(rows))
    assert (
        "| 229 | 300 | 3 | 40.0 | 45.0 | 40.0 | 1000 | < 50 ms for 300 operations: yes |" in table
    )
    assert "| 300 | 408 | 3 | 55.0 | 52.0 | 51.0 | 1394 | < 50 ms for 300 statements: **NO** |" in (
        table
    )
    assert "| 500 | 680 | 1 | 90.0 | 90.0 | 90.0 | 2341 |  |" in table


def test_compile_sizes_take_turns() -> None:
    # A load change during the run must fall on every size alike: one compile of each size
    # per round, for as many rounds as each size has runs.
    order: list[int] = []

    def fake_grad(fn):
        order.append(len(inspect.getsource(fn).splitlines()))
        return fn

    settings = straight_line.Settings(
        samples=1, warmup=0, sample_ns=1, compile_runs={20: 3, 40: 1}, operation_runs={10: 2}
    )
    rows = straight_line.run_compiles(settings, fake_grad)
    assert [len(row.times_ms) for row in rows] == [2, 3, 1]
    sizes = [row.n_ops for row in rows]
    lines = {n: n + 3 for n in sizes}  # def line, run comment, return, then the statements
    assert order == [lines[sizes[0]], lines[20], lines[40], lines[sizes[0]], lines[20], lines[20]]


def test_compile_table_reports_growth_per_generated_line() -> None:
    rows = [
        straight_line.CompileRow(2000, (100.0,), 1000, 2800),
        straight_line.CompileRow(8000, (460.0,), 4400, 11100),
    ]
    table = "\n".join(straight_line.compile_lines(rows))
    assert "time(8000) / time(2000) = 4.60 (linear is 4; target ≤ 4.5: **NO**)" in table
    assert "generated code grows 4.40-fold" in table
    assert "time per generated line grows 1.05-fold" in table
