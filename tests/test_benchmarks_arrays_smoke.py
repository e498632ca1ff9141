"""Smoke tests of the array benchmark (``python -m tests.benchmarks.arrays``): tiny runs.

No timing is asserted: only that every workload gets its rows, that every timed gradient was
checked against the hand-written backward first, that wrong, broken and mutating gradients are
caught and not timed, and that peers which are not installed are reported as such. torch and
JAX are only imported (by the benchmark) when installed, each in a test of its own so the
slow imports run in parallel under pytest-xdist.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.benchmarks import arrays, peers
from tests.benchmarks.backends import BuildContext, Peer, Prepared
from tests.benchmarks.straight_line import BenchmarkError, Settings

TINY = Settings(samples=3, warmup=1, sample_ns=100_000, compile_runs={})
WORKLOAD_NAMES = [w.name for w in arrays.WORKLOADS]


def _statuses(result: arrays.ArrayResult) -> dict[str, str]:
    """Status of every row by key."""
    return {entry.key: entry.status for entry in result.entries}


def _run(keys: set[str]) -> tuple[list[arrays.ArrayResult], str]:
    """The benchmark with the peers ``keys``, at the tiniest settings."""
    return arrays.run_all(arrays.Plan(TINY, frozenset(keys)))


def _assert_reported(results: list[arrays.ArrayResult], keys: set[str]) -> None:
    """Every workload has a row per peer; each timed gradient passed its check first."""
    assert [r.case.name for r in results] == WORKLOAD_NAMES
    for result in results:
        statuses = _statuses(result)
        assert set(statuses) == {"primal", "hand", *keys}
        assert statuses["primal"] == statuses["hand"] == peers.OK
        for entry in result.entries:
            if entry.status == peers.OK:
                assert entry.median_ns is not None and entry.median_ns > 0
                assert entry.samples == TINY.samples
                if entry.key not in ("primal", "hand"):
                    assert result.errors[entry.key] <= arrays.RTOL, entry.key
            else:
                assert entry.median_ns is None and entry.key not in result.errors
        for key in keys - {"adcompile"}:
            assert statuses[key] in (peers.OK, peers.NOT_INSTALLED), (key, statuses[key])


def test_quick_run_with_adcompile_and_autograd() -> None:
    results, report = _run({"adcompile", "autograd"})
    _assert_reported(results, {"adcompile", "autograd"})
    for result in results:
        assert _statuses(result)["adcompile"] == peers.OK, result.entry("adcompile")
    for name in WORKLOAD_NAMES:
        assert f"### {name}: " in report
    assert "| × hand-written |" in report
    assert "Checked against the hand-written backward" in report
    assert f"adcompile ≤ {arrays.ISSUE4_TARGET} × hand-written (issue 4): mlp " in report
    issue4 = next(line for line in report.splitlines() if "(issue 4)" in line)
    assert "n/a" not in issue4


@pytest.mark.parametrize("names", ["torch,torch.func", "jax,jax.jit"])
def test_quick_run_with_torch_or_jax(names: str) -> None:
    keys = set(names.split(","))
    results, report = _run(keys)
    _assert_reported(results, keys)
    if all(_statuses(results[0])[key] == peers.OK for key in keys) and "jax.jit" in keys:
        assert "compile (first call)" in report


def _scaled_hand(workload: arrays.ArrayWorkload, context: BuildContext) -> Prepared:
    """A wrong gradient: the hand-written one times 1.001."""

    def gradient(*args: Any) -> Any:
        out = arrays.tree_map(lambda leaf: 1.001 * leaf, workload.hand(*args))
        return out[0] if isinstance(workload.wrt, int) else out

    return Prepared(gradient)


def _mutating(workload: arrays.ArrayWorkload, context: BuildContext) -> Prepared:
    """A right gradient that zeroes its first input's leaves on the way."""

    def gradient(*args: Any) -> Any:
        out = workload.hand(*args)
        arrays.tree_map(lambda leaf: leaf.fill(0.0), args[0])
        return out[0] if isinstance(workload.wrt, int) else out

    return Prepared(gradient)


def _fails(workload: arrays.ArrayWorkload, context: BuildContext) -> Prepared:
    """A peer whose build raises."""
    raise RuntimeError("cannot build")


FAKES = [
    Peer("scaled", "scaled gradient", (), _scaled_hand),
    Peer("mutating", "mutating gradient", (), _mutating),
    Peer("missing", "absent library", ("no_such_module_for_adcompile_bench",), _fails),
    Peer("broken", "broken library", (), _fails),
]


@pytest.mark.parametrize("index", range(len(arrays.WORKLOADS)), ids=WORKLOAD_NAMES)
def test_wrong_missing_and_broken_peers_are_reported_not_timed(index: int) -> None:
    case = arrays.array_cases()[index]
    before = [leaf.copy() for _, leaf in arrays.tree_leaves(case.timing_args)]
    result = arrays.run_array_case(case, FAKES, TINY)
    assert _statuses(result) == {
        "primal": peers.OK,
        "hand": peers.OK,
        "scaled": peers.WRONG,
        "mutating": "failed (AssertionError)",
        "missing": peers.NOT_INSTALLED,
        "broken": "failed (RuntimeError)",
    }
    assert result.errors == {}
    after = [leaf for _, leaf in arrays.tree_leaves(case.timing_args)]
    assert all(np.array_equal(a, b) for a, b in zip(after, before, strict=True))
    table = "\n".join(arrays.case_table(result))
    assert "| scaled gradient | wrong |" in table
    assert "| absent library | not installed |" in table
    assert "- mutating gradient: failed (AssertionError): arg 0" in table


def test_hand_written_backward_is_checked() -> None:
    case = arrays.array_cases()[1]
    wrong = arrays.ArrayWorkload(
        "wrong", "", case.workload.fn, lambda A, x, b: (A, x, b), case.workload.wrt
    )
    with pytest.raises(BenchmarkError, match="random direction"):
        arrays.verify_hand(arrays.ArrayCase(wrong, case.timing_args, case.check_args))


def test_gradient_error_checks_structure_shape_and_values() -> None:
    ref = ({"a": np.ones(3), "b": np.zeros((2, 2))},)
    assert arrays.gradient_error(ref, ref) == (0.0, "")
    assert arrays.gradient_error(({"a": np.ones(3)},), ref)[1].startswith("structure")
    bad_shape = ({"a": np.ones(3), "b": np.zeros(4)},)
    assert "shape" in arrays.gradient_error(bad_shape, ref)[1]
    close = ({"a": np.ones(3) * (1 + 1e-9), "b": np.zeros((2, 2))},)
    assert arrays.gradient_error(close, ref)[1] == ""
    far = ({"a": np.ones(3) * (1 + 1e-4), "b": np.zeros((2, 2))},)
    assert "max |error|" in arrays.gradient_error(far, ref)[1]


def test_main_writes_the_report(tmp_path: Path) -> None:
    output = tmp_path / "arrays.md"
    argv = ["--quick", "--samples", "2", "--peers", "", "--output", str(output)]
    assert arrays.main(argv) == 0
    text = output.read_text(encoding="utf-8")
    assert text.startswith("# adcompile benchmark: NumPy array gradients")
    assert "- date: " in text and "- peers: numpy " in text
    assert text.count("| hand-written NumPy backward |") == len(arrays.WORKLOADS)


def test_options() -> None:
    plan = arrays.plan_from(arrays.parse_args(["--quick", "--peers", "adcompile,jax"]))
    assert plan.peers == frozenset({"adcompile", "jax"})
    assert plan.torch_threads == arrays.TORCH_THREADS
    assert plan.settings.samples < arrays.FULL.samples
    assert arrays.plan_from(arrays.parse_args(["--torch-threads", "2"])).torch_threads == 2
