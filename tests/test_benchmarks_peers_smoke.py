"""Smoke tests of the peer benchmark machinery: tiny runs with adcompile, hand-written and SymPy.

Peers that may be absent (autograd, torch, jax) are never imported here. No timing is
asserted: only that rows are produced, wrong gradients are caught and missing peers reported.
"""

from __future__ import annotations

import pytest

from tests.benchmarks import backends, peers
from tests.benchmarks.backends import BuildContext, Peer, Prepared
from tests.benchmarks.straight_line import Candidate, Settings, sampling_stride, takes_part
from tests.benchmarks.workloads import Workload, medium_workload, seed_workload

TINY = Settings(samples=3, warmup=1, sample_ns=20_000, compile_runs={})
ADCOMPILE, SYMPY = (
    peers.chosen(peers.GRADIENT_PEERS, frozenset({key}))[0] for key in ("adcompile", "sympy")
)


def _zeros(workload: Workload, context: BuildContext) -> Prepared:
    """A deliberately wrong gradient: all partials zero."""
    return Prepared(lambda *args: tuple(0.0 for _ in args))


def _fails(workload: Workload, context: BuildContext) -> Prepared:
    """A peer whose build raises."""
    raise RuntimeError("cannot build")


WRONG = Peer("wrong", "zero gradient", (), _zeros)
MISSING = Peer("missing", "absent library", ("no_such_module_for_adcompile_bench",), _zeros)
BROKEN = Peer("broken", "broken library", (), _fails)


def _statuses(result: peers.CaseResult) -> dict[str, str]:
    """Status of every row by key."""
    return {entry.key: entry.status for entry in result.entries}


def test_gradient_case_checks_and_reports_every_peer() -> None:
    case = peers.straight_case(seed_workload())
    chosen = [ADCOMPILE, SYMPY, WRONG, MISSING, BROKEN]
    result = peers.run_gradient_case(case, chosen, TINY, budget_s=20.0)
    statuses = _statuses(result)
    assert statuses == {
        "primal": peers.OK,
        "hand": peers.OK,
        "adcompile": peers.OK,
        "sympy": peers.OK,
        "wrong": peers.WRONG,
        "missing": peers.NOT_INSTALLED,
        "broken": "failed (RuntimeError)",
    }
    timed = [e for e in result.entries if e.status == peers.OK]
    assert all(e.median_ns is not None and e.samples == TINY.samples for e in timed)
    assert all(e.median_ns is None for e in result.entries if e.status != peers.OK)
    table = "\n".join(peers.case_table(result, "gradient"))
    assert "| zero gradient | wrong |" in table
    assert "| absent library | not installed |" in table
    assert "| × hand-written |" in table
    assert "set-up" in table and "compile" in table


def test_swell_hand_gradient_is_exact_and_sympy_budget_is_reported() -> None:
    for n in (1, 2, 5):
        peers.verify_hand(peers.swell_case(n))
    results = peers.run_swell((2, 3), [ADCOMPILE, SYMPY], TINY, budget_s=1e-4)
    assert _statuses(results[0])["sympy"].startswith("gave up")
    assert _statuses(results[1])["sympy"] == "not tried (gave up at n=2)"
    table = "\n".join(peers.swell_table(results))
    assert table.count("\n| ") == 3
    assert "SymPy gave up at n=2" in peers.swell_line(results)


def test_hessian_case_against_sympy_reference() -> None:
    case = peers.straight_case(seed_workload())
    hessian_peers = [*peers.chosen(peers.HESSIAN_PEERS, frozenset({"adcompile", "sympy"})), WRONG]
    result = peers.run_hessian_case(case, hessian_peers, TINY, budget_s=20.0)
    statuses = _statuses(result)
    assert statuses["sympy"] == peers.OK
    assert statuses["wrong"] == peers.WRONG
    assert statuses["adcompile"] in (peers.OK, peers.NOT_AVAILABLE)
    assert "### seed" in "\n".join(peers.case_table(result, "Hessian"))


def test_select_rewrite_keeps_the_function() -> None:
    workload = medium_workload()
    primal = workload.primal()
    rewritten = backends.backend_function(
        workload, __import__("math"), lambda test, body, orelse: body if test else orelse
    )
    for point in [(0.7, -0.4, 1.1, 0.3), (-1.2, 0.5, 0.9, -0.8)]:
        assert rewritten(*point) == primal(*point)


def test_flatten_nested_results() -> None:
    assert peers.flatten(((1.0, 2), [3.5])) == (1.0, 2.0, 3.5)
    assert peers.flatten(4) == (4.0,)


def test_slow_candidates_are_strided() -> None:
    settings = Settings(samples=40, warmup=2, sample_ns=1000, compile_runs={})
    slow = Candidate("slow", print, (), batch=1, estimate_ns=1e9)
    assert sampling_stride(slow, settings, budget_ns=10e9) == 4
    slow.stride = 4
    assert [takes_part(slow, rep, 2) for rep in range(7)] == [False, True, True] + [False] * 3 + [
        True
    ]


def test_targets_and_options() -> None:
    plan = peers.plan_from(peers.parse_args(["--quick", "--peers", "adcompile,sympy"]))
    assert plan.peers == frozenset({"adcompile", "sympy"})
    assert plan.swell_ns[0] == peers.SWELL_RANGE[0]
    assert peers.version_of("no-such-distribution-xyz") == peers.NOT_INSTALLED


@pytest.mark.parametrize("ns", [500.0, 5_000.0, 50_000.0, 5e6])
def test_format_us_has_no_exponent(ns: float) -> None:
    assert "e" not in peers.format_us(ns)
