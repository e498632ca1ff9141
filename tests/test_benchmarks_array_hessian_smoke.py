"""Smoke test of the array Hessian benchmark (``python -m tests.benchmarks.array_hessian``).

No timing is asserted: only that each workload's closed-form Hessian is right (against
differences of its gradient), that adcompile's Hessian passes the benchmark's check and is
timed, and that a wrong Hessian is reported and not timed.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcompile
from tests.benchmarks import array_hessian
from tests.benchmarks.straight_line import Settings

TINY = Settings(samples=3, warmup=1, sample_ns=100_000, compile_runs={})


@pytest.mark.parametrize("work", array_hessian.workloads(), ids=lambda w: w.name)
def test_hand_written_hessians_match_differences_of_the_gradient(work) -> None:
    gradient = adcompile.grad(work.fn, wrt=0)
    x, rest = work.args[0], work.args[1:]
    h = 1e-5
    columns = [
        (gradient(x + h * e, *rest) - gradient(x - h * e, *rest)) / (2 * h) for e in np.eye(len(x))
    ]
    np.testing.assert_allclose(work.hand(*work.args), np.stack(columns, axis=1), rtol=1e-6)


def test_the_report_times_adcompile_after_checking_it() -> None:
    text = array_hessian.report(TINY, frozenset({"adcompile"}))
    for work in array_hessian.workloads():
        assert f"### {work.name}:" in text
    rows = [line for line in text.splitlines() if line.startswith("| adcompile.hessian |")]
    assert len(rows) == 2
    assert all("wrong" not in row and "failed" not in row for row in rows)


def test_a_wrong_hessian_is_reported_and_not_timed() -> None:
    work = array_hessian.workloads()[0]
    ref = work.hand(*work.args)

    def build(_work: array_hessian.Workload) -> array_hessian.Built:
        return (lambda *args: 2.0 * work.hand(*args)), None, ""

    entry, fn = array_hessian.prepared_row("bad", "bad", build, work, ref)
    assert fn is None
    assert entry.status == "wrong"
