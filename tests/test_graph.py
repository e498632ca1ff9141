"""``adcompile graph``: the computation graph, drawn by Graphviz's ``dot``."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from adcompile import explain
from adcompile.cli import main
from adcompile.graph import INSTALL_DOT, executed_graph, static_graph
from adcompile.source import load_function
from tests.helpers import module_from_source

ROOT = Path(__file__).resolve().parent.parent
needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz's dot is not installed (.ci/run installs it)"
)


def svg_texts(path: Path) -> list[str]:
    """Every text element of an SVG file, parsed as XML."""
    tree = ET.parse(path)
    return [el.text or "" for el in tree.iter() if el.tag.endswith("}text")]


@needs_dot
def test_svg_with_values_and_adjoints(tmp_path):
    out = tmp_path / "seed.svg"
    assert main(["graph", "examples/seed.py:f", "--at", "x=4,y=-3,z=5", "-o", str(out)]) == 0
    texts = svg_texts(out)
    for label in ("q = x + y", "f = q * z", "= 1", "= 5", "df/dq = 5", "df/dx = 5", "df/dz = 1"):
        assert label in texts, label
    assert {"x", "y", "z"} <= set(texts)
    # The adjoints sent back along the edges: 5 to q (from f = q * z), 5 to x and y, 1 to z.
    edge_labels = [t for t in texts if t.replace(".", "").isdigit()]
    assert sorted(edge_labels) == ["1", "5", "5", "5"]


@needs_dot
def test_png_renders(tmp_path):
    out = tmp_path / "seed.png"
    assert main(["graph", "examples/seed.py:f", "-o", str(out)]) == 0
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert out.stat().st_size > 1000


def test_dot_output_needs_no_dot_program(tmp_path):
    out = tmp_path / "seed.dot"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": str(tmp_path)}  # no `dot` on PATH
    result = subprocess.run(
        [sys.executable, "-m", "adcompile", "graph", "examples/seed.py:f", "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert text.startswith("// computation graph of f")
    assert 'label="q = x + y\nline 11"' in text


def test_svg_without_dot_is_a_one_line_error(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "adcompile", "graph", f"{ROOT}/examples/seed.py:f", "-o", "g.svg"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr == f"adcompile: error: {INSTALL_DOT}\n"
    assert "apt-get install graphviz" in INSTALL_DOT


def test_unknown_format_is_a_usage_error(tmp_path, capsys):
    assert main(["graph", "examples/seed.py:f", "-o", str(tmp_path / "g.txt")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_bad_at_is_a_usage_error(tmp_path, capsys):
    assert main(["graph", "examples/seed.py:f", "--at", "x=1", "-o", str(tmp_path / "g.dot")]) == 2
    assert capsys.readouterr().err == "adcompile: error: --at is missing a value for y, z\n"


def loop_and_branch(x, a):
    for _ in range(3):
        x = x - 0.1 * math.sin(x) * a
    y = x if a > 0 else -x
    return y * y


def test_static_graph_draws_loops_and_branches_as_boxes():
    source = static_graph(load_function(loop_and_branch)).source
    assert "cluster_loop" in source and "for _ in range(3):" in source
    assert "next iteration" in source  # the loop-carried x
    assert "x = x - 0.1 * sin(x) * a" in source
    assert "cluster_if" in source and "if a > 0" in source
    assert "loop_and_branch = y * y" in source


def test_executed_graph_unrolls_the_loop():
    explanation = explain(loop_and_branch, 0.5, 2.0)
    source = executed_graph(explanation).source
    # Each iteration's new x is x' (explain's labels), its x the value it started with.
    assert source.count("x' = x - 0.1 * sin(x) * a") == 3
    assert "dloop_and_branch/dx = " in source
    assert "peripheries=2" in source  # the output
    assert "color=red" in source  # adjoints on the reverse edges


def scaled_sum(x, n):
    s = 0.0
    for i in range(n):
        s = s + x * i
    return s


def test_graphs_name_a_range_loops_index():
    """The index was drawn as `None` (executed graph) and `?` (static graph)."""
    executed = executed_graph(explain(scaled_sum, 2.0, 3, wrt="x")).source
    for i in range(3):
        assert f'label="i = {i}"' in executed
    assert "None" not in executed
    static = static_graph(load_function(scaled_sum)).source
    assert "x * i" in static and "?" not in static
    assert "in_n -> " in static  # the bound feeds the index


@needs_dot
def test_executed_graph_svg_of_a_loop(tmp_path):
    from adcompile.graph import write_graph

    out = tmp_path / "loop.svg"
    write_graph(executed_graph(explain(loop_and_branch, 0.5, 2.0)), out)
    texts = svg_texts(out)
    assert texts.count("x' = x - 0.1 * sin(x) * a") == 3


def test_a_layout_dot_gives_up_on_is_one_clear_error():
    """Graphviz 2.43's dot fails on some layouts ("triangulation failed"): that was an
    internal error with dot's output printed twice; now a GraphError naming what dot said."""
    from adcompile.graph import GraphError, run_dot

    with pytest.raises(GraphError, match=r"could not lay out this graph \(Error: <stdin>"):
        run_dot("digraph { a -> }", "svg")


def test_a_layout_dot_takes_too_long_over_is_one_clear_error(tmp_path, monkeypatch):
    """An executed 100-iteration loop (every iteration, a red edge back to each operand)
    kept `dot` busy for more than 10 minutes: `adcompile graph` hung without a word."""
    from adcompile.graph import GraphError, executed_graph, write_graph

    module = module_from_source(
        tmp_path,
        "def f(x):\n    s = 0.0\n    for i in range(100):\n        s = s + x\n    return s\n",
    )
    graph = executed_graph(explain(module.f, 1.0))
    monkeypatch.setattr("adcompile.graph.DOT_SECONDS", 0.5)
    with pytest.raises(GraphError, match=r"did not lay out this graph within 0.5 s"):
        write_graph(graph, tmp_path / "g.svg")
    assert not (tmp_path / "g.svg").exists()
