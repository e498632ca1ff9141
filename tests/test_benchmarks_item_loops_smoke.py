"""Smoke test of the item-loop benchmark: tiny sizes, the gradient checked. No timing asserted."""

from __future__ import annotations

import numpy as np
import pytest

from tests.benchmarks import item_loops
from tests.benchmarks.straight_line import BenchmarkError


def test_the_report_has_a_row_per_size(tmp_path) -> None:
    out = tmp_path / "item_loops.md"
    assert item_loops.main(["--quick", "--output", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    for size in item_loops.QUICK_SIZES:
        assert f"| {size:,} |" in text
    assert "gradient time per item" in text


def test_a_wrong_gradient_stops_the_benchmark() -> None:
    _, generated, hand = item_loops.functions()
    x = np.linspace(-1.0, 1.0, 7)
    item_loops.check(generated, hand, x)  # agrees

    def off_by_one(x, w):
        gx, gw = hand(x, w)
        return gx + 1.0, gw

    with pytest.raises(BenchmarkError):
        item_loops.check(off_by_one, hand, x)
