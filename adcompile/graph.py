"""The computation graph as a picture: inputs, operations and the output as nodes.

``executed_graph`` draws the operations an ``Explanation`` ran (loops unrolled, the branch
taken): forward values on the nodes, and the adjoints the reverse sweep sent back as red
dashed edges. ``static_graph`` draws the core form itself, without values: a branch or a
loop is a box, a value merged from two paths (or carried round a loop) a small circle.

Built with the ``graphviz`` Python package (imported only here, only when a graph is asked
for), which also writes ``.dot`` text; ``.svg``, ``.png`` and ``.pdf`` need Graphviz's ``dot``
program too.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path
from typing import Any

from .astutil import substitute
from .explain import Explanation, adjoint_label, format_number
from .ir import (
    Apply,
    Const,
    Copy,
    CoreFunction,
    Global,
    If,
    Loop,
    Opaque,
    Return,
    Site,
    Stmt,
    Var,
    fill_placeholders,
    is_unbound_placeholder,
)
from .lower import lower_function
from .names import output_label
from .source import FunctionSource

RENDERED_FORMATS = ("svg", "png", "pdf")
TEXT_FORMATS = ("dot", "gv")
INSTALL_DOT = (
    "Graphviz's `dot` program is not installed: install it (Debian/Ubuntu: "
    "`apt-get install graphviz`, macOS: `brew install graphviz`), or write a .dot file"
)
INSTALL_PACKAGE = "graph output needs the graphviz Python package: pip install graphviz"


def dot_failed(stderr: bytes | str | None) -> str:
    """Graphviz's ``dot`` ran and failed: its first complaint, and the way round it."""
    text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else (stderr or "")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    said = f" ({lines[0]})" if lines else ""
    return (
        f"Graphviz's `dot` could not lay out this graph{said}; write a .dot file instead "
        "and render it with another engine (e.g. `neato -Tsvg g.dot -o g.svg`)"
    )


class GraphError(Exception):
    """A graph that cannot be written (a missing program or package, an unknown format)."""


def _graphviz() -> Any:
    try:
        import graphviz
    except ImportError:
        raise GraphError(INSTALL_PACKAGE) from None
    return graphviz


def _new_graph(title: str) -> Any:
    graph = _graphviz().Digraph(name=title, comment=f"computation graph of {title}")
    graph.attr(rankdir="LR", fontname="Helvetica", label=title, labelloc="t")
    graph.attr("node", fontname="Helvetica", fontsize="11")
    graph.attr("edge", fontname="Helvetica", fontsize="10")
    return graph


# ----- the executed graph, with values ---------------------------------------------------
def executed_graph(explanation: Explanation) -> Any:
    """The operations an explanation ran, with forward values and reverse-sweep adjoints."""
    fname = explanation.output or "f"
    at = ", ".join(f"{k}={format_number(v)}" for k, v in explanation.point.items())
    graph = _new_graph(f"{explanation.function}({at})")
    for op in explanation.operations:
        lines = [op.label, f"= {format_number(op.value)}"]
        if op.adjoint is not None:
            lines.append(f"{adjoint_label(fname, op.name)} = {format_number(op.adjoint)}")
        attrs = {"shape": "ellipse" if op.kind == "input" else "box", "style": "rounded"}
        if op.kind == "input":
            attrs.update(style="filled", fillcolor="lightblue")
        if op.output:
            attrs.update(peripheries="2", style="rounded,bold")
        graph.node(f"n{op.index}", "\n".join(lines), **attrs)
        for i, operand in enumerate(op.operands):
            source = f"n{operand.node}" if operand.node is not None else f"c{op.index}_{i}"
            if operand.node is None:
                graph.node(source, operand.text, shape="plaintext")
            graph.edge(source, f"n{op.index}")
            if operand.adjoint is not None and operand.node is not None:
                graph.edge(
                    f"n{op.index}",
                    source,
                    label=format_number(operand.adjoint),
                    color="red",
                    fontcolor="red",
                    style="dashed",
                    constraint="false",
                )
    return graph


# ----- the static graph of the core form -------------------------------------------------
class _StaticGraph:
    """Walks the core form, adding a node per primitive and an edge per operand."""

    def __init__(self, core: CoreFunction, fs: FunctionSource) -> None:
        self.core = core
        self.fs = fs
        self.fname = output_label(fs.name, fs.node)
        self.graph = _new_graph(f"{fs.name} ({fs.short_filename()})")
        self.labels: dict[str, ast.expr] = {}
        self.producers: dict[str, str] = {}
        self.merged = _copied_twice(core.body)
        self.tests: list[str] = []  # the tests of the branches being drawn
        self.arms: dict[str, list[ast.expr]] = {}
        self.count = 0
        self.strip = re.compile(rf"\b(?:{re.escape(core.math_alias)}|math)\.")

    def display(self, name: str) -> str:
        return self.core.shown_as(name, self.fname)

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"{stem}{self.count}"

    def build(self) -> Any:
        for name in self.core.params:
            self.labels[name] = ast.Name(id=name, ctx=ast.Load())
            self.producers[name] = f"in_{name}"
            self.graph.node(
                f"in_{name}", name, shape="ellipse", style="filled", fillcolor="lightblue"
            )
        self.block(self.core.body, self.graph)
        return self.graph

    def block(self, block: list[Stmt], graph: Any, edge_label: str = "") -> None:
        for stmt in block:
            if isinstance(stmt, Apply):
                self.apply(stmt, graph)
            elif isinstance(stmt, Copy):
                self.copy(stmt, graph, edge_label)
            elif isinstance(stmt, Opaque):
                # The compiler's own tests (`len(range(n)) > 0`) are drawn as what they ask.
                shown = stmt.hidden or self.text(stmt.expr)
                self.labels[stmt.target] = ast.Name(id=shown, ctx=ast.Load())
            elif isinstance(stmt, If):
                self.branch(stmt, graph)
            elif isinstance(stmt, Loop):
                self.loop(stmt, graph)
            elif isinstance(stmt, Return) and isinstance(stmt.value, Var):
                node = self.producers.get(stmt.value.name)
                if node is not None:
                    graph.node(node, peripheries="2")

    def text(self, expr: ast.expr) -> str:
        names = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
        mapping = {name: self.labels[name] for name in names if name in self.labels}
        return self.strip.sub("", ast.unparse(substitute(expr, mapping)))

    def operand(self, atom: Any, graph: Any) -> tuple[str, ast.expr]:
        if isinstance(atom, Var) and atom.name in self.producers:
            return self.producers[atom.name], self.labels[atom.name]
        label = self.label_of(atom)
        node = self.fresh("c")
        graph.node(node, label.id, shape="plaintext")  # one per use: constants are not shared
        return node, label

    def label_of(self, atom: Any) -> ast.expr:
        """An operand's label, without drawing it."""
        if isinstance(atom, Var) and atom.name in self.labels:
            return self.labels[atom.name]
        text = self.strip.sub("", atom.text) if isinstance(atom, Global) else _const_text(atom)
        return ast.Name(id=text, ctx=ast.Load())

    def apply(self, stmt: Apply, graph: Any) -> None:
        operands = [self.operand(a, graph) for a in stmt.args]
        expr = fill_placeholders(stmt.render, [label for _, label in operands])
        shown = self.strip.sub("", ast.unparse(expr))
        temporary = stmt.target in self.core.temporaries
        if temporary:
            expr = self.core.temporary_label(stmt.target, expr, self.label_of)
            called = self.strip.sub("", ast.unparse(expr))
            label = shown if called == shown else f"{called} = {shown}"
        else:
            label = f"{self.display(stmt.target)} = {shown}"
        node = self.fresh("op")
        graph.node(node, f"{label}\n{_line(stmt.line)}", shape="box", style="rounded")
        for source, _ in operands:
            self.graph.edge(source, node)  # edges at the top: inputs stay out of the boxes
        self.producers[stmt.target] = node
        self.labels[stmt.target] = expr if temporary else _name(self.display(stmt.target))

    def copy(self, stmt: Copy, graph: Any, edge_label: str) -> None:
        if is_unbound_placeholder(stmt.source):
            return  # a placeholder for a variable not bound yet on this path
        if stmt.target not in self.merged:
            source, label = self.operand(stmt.source, graph)
            self.producers[stmt.target] = source
            temporary = stmt.target in self.core.temporaries
            if temporary:
                label = self.core.temporary_label(stmt.target, label, self.label_of)
            self.labels[stmt.target] = label if temporary else _name(self.display(stmt.target))
            return
        junction = self.producers.get(stmt.target)
        if junction is None or not junction.startswith("merge_"):
            junction = f"merge_{stmt.target}"
            shown, shape = self.display(stmt.target), "circle"
            if stmt.target in self.core.temporaries:  # `a if c else b`: no name of its own
                shown, shape = f"if/else value\n{_line(stmt.line)}", "ellipse"
            self.graph.node(junction, shown, shape=shape)
            self.producers[stmt.target] = junction
            self.labels[stmt.target] = _name(self.display(stmt.target))
        source, label = self.operand(stmt.source, graph)
        if stmt.target in self.core.temporaries and self.tests:
            # Shown as `a if c else b` once both arms are known.
            arms = self.arms.setdefault(stmt.target, [])
            arms.append(label)
            if len(arms) == 2:
                test = _name(self.tests[-1])
                self.labels[stmt.target] = ast.IfExp(test=test, body=arms[0], orelse=arms[1])
        style = {"style": "dashed"} if edge_label == "next iteration" else {}
        self.graph.edge(source, junction, label=edge_label, **style)

    def branch(self, stmt: If, graph: Any) -> None:
        test = self.text(ast.Name(id=stmt.cond, ctx=ast.Load()))
        self.tests.append(test)
        for label, body in ((f"if {test}", stmt.body), ("else", stmt.orelse)):
            with graph.subgraph(name=self.fresh("cluster_if")) as sub:
                sub.attr(label=f"{label}  ({_line(stmt.line)})", style="dashed")
                self.block(body, sub, "if" if body is stmt.body else "else")
        self.tests.pop()

    def loop(self, stmt: Loop, graph: Any) -> None:
        header = self.fs.source_line(stmt.line) if isinstance(stmt.line, int) else stmt.line.text
        with graph.subgraph(name=self.fresh("cluster_loop")) as sub:
            sub.attr(label=f"{header}  ({_line(stmt.line)})", style="rounded")
            if stmt.test is None:
                self.loop_index(stmt, sub)
            self.block(stmt.body, sub)
            self.block(stmt.back_edges, sub, "next iteration")

    def loop_index(self, stmt: Loop, graph: Any) -> None:
        """A range loop's index: a node of its own, fed by the bounds (``n`` in range(n))."""
        name = self.display(stmt.index)
        node = self.fresh("n")
        graph.node(node, name, shape="ellipse")
        for bound in stmt.bounds:
            if isinstance(bound, Var) and bound.name in self.producers:
                self.graph.edge(self.producers[bound.name], node, style="dotted")
        self.producers[stmt.index] = node
        self.labels[stmt.index] = _name(name)


def _name(text: str) -> ast.Name:
    return ast.Name(id=text, ctx=ast.Load())


def _const_text(atom: Any) -> str:
    return format_number(atom.value) if isinstance(atom, Const) else "?"


def _line(line: Any) -> str:
    if isinstance(line, Site):
        return f"line {line.line} of {line.where}"
    return f"line {line}"


def _copied_twice(block: list[Stmt]) -> set[str]:
    """Names assigned by more than one copy: merges of branches and loop headers."""
    counts: dict[str, int] = {}

    def visit(stmts: list[Stmt]) -> None:
        for stmt in stmts:
            if isinstance(stmt, Copy):
                counts[stmt.target] = counts.get(stmt.target, 0) + 1
            elif isinstance(stmt, If):
                visit(stmt.body)
                visit(stmt.orelse)
            elif isinstance(stmt, Loop):  # its entry copies are in the enclosing block too
                visit(stmt.body)
                visit(stmt.back_edges)

    visit(block)
    return {name for name, count in counts.items() if count > 1}


def static_graph(fs: FunctionSource) -> Any:
    """The computation graph of a function's core form, without values."""
    return _StaticGraph(lower_function(fs), fs).build()


# ----- output ----------------------------------------------------------------------------
def output_format(path: str | Path) -> str:
    """The format a file name asks for: ``dot``, ``svg``, ``png`` or ``pdf``."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix in TEXT_FORMATS:
        return "dot"
    if suffix in RENDERED_FORMATS:
        return suffix
    known = ", ".join(f".{s}" for s in (*TEXT_FORMATS, *RENDERED_FORMATS))
    raise GraphError(f"cannot tell the graph format from {str(path)!r}: use one of {known}")


def write_graph(graph: Any, path: str | Path) -> None:
    """Write ``graph`` as DOT text, or rendered by ``dot`` as SVG, PNG or PDF."""
    kind = output_format(path)
    if kind == "dot":
        Path(path).write_text(graph.source, encoding="utf-8")
        return
    Path(path).write_bytes(run_dot(graph.source, kind, DOT_SECONDS))


# Seconds `dot` may take: an executed loop's graph (every iteration, and a red edge back to
# each operand) takes it minutes from a few hundred nodes on.
DOT_SECONDS = 60.0


def run_dot(source: str, kind: str, seconds: float = DOT_SECONDS) -> bytes:
    """``source`` rendered by Graphviz's ``dot`` as ``kind``; a GraphError if it cannot."""
    try:
        done = subprocess.run(
            ["dot", f"-T{kind}"], input=source.encode(), capture_output=True, timeout=seconds
        )
    except FileNotFoundError:
        raise GraphError(INSTALL_DOT) from None
    except subprocess.TimeoutExpired:
        raise GraphError(dot_too_slow(seconds)) from None
    if done.returncode != 0:  # dot gave up on the layout: its complaints go into our message
        raise GraphError(dot_failed(done.stderr))
    return done.stdout


def dot_too_slow(seconds: float) -> str:
    """Graphviz's ``dot`` took longer than ``seconds``."""
    return (
        f"Graphviz's `dot` did not lay out this graph within {seconds:g} s (a graph with many "
        "iterations of a loop takes it minutes); write a .dot file instead, or draw the "
        "code without --at (one node per operation)"
    )
