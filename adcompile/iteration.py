"""Iteration forms rewritten into ``for i in range(...)`` loops, on the Python AST.

``for v in seq``, ``enumerate``, ``zip`` and ``reversed`` become index loops that read
``seq[i]``; ``sum``/``min``/``max`` of a generator expression or list comprehension become an
accumulator loop. The sequences themselves carry no derivative: reading ``seq[i]`` is a value
with no adjoint, so a sequence that depends on a differentiated input is rejected by the
activity analysis, at the read, with a located message (never a silent zero).
"""

from __future__ import annotations

import ast
import builtins
import copy
from collections.abc import Callable
from dataclasses import dataclass

from . import messages
from .astutil import builtin_call, names_in, stored_names
from .errors import UnsupportedSyntaxError
from .names import NameTable
from .source import FunctionSource


def _located(node: ast.AST, like: ast.AST) -> ast.AST:
    for child in ast.walk(node):
        if "lineno" in child._attributes and getattr(child, "lineno", None) is None:
            ast.copy_location(child, like)
    return node


def _name(name: str, store: bool = False) -> ast.Name:
    return ast.Name(id=name, ctx=ast.Store() if store else ast.Load())


def _assign(name: str, value: ast.expr) -> ast.Assign:
    return ast.Assign(targets=[_name(name, True)], value=value)


def _item(sequence: str, position: ast.expr) -> ast.Subscript:
    return ast.Subscript(value=_name(sequence), slice=position, ctx=ast.Load())


def _position(counter: str, from_end: bool) -> ast.expr:
    """``counter``, or ``-1 - counter``: item ``counter`` counted from the end."""
    if not from_end:
        return _name(counter)
    minus_one = ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=1))
    return ast.BinOp(left=minus_one, op=ast.Sub(), right=_name(counter))


def _item_at(item: ast.expr, path: tuple[int, ...]) -> ast.expr:
    # `for a, b in pairs` reads pairs[k][0] and pairs[k][1]: an item of another length is not
    # rejected as Python's unpacking would (the README says so).
    for position in path:
        item = ast.Subscript(value=item, slice=ast.Constant(value=position), ctx=ast.Load())
    return item


BoundItem = tuple[str, tuple[int, ...]]  # a loop target's name and its index path in an item


@dataclass
class SequenceLoop:
    """A ``for`` over sequences, as an index loop: the statements before it and the loop."""

    prelude: list[ast.stmt]
    loop: ast.For
    new_locals: set[str]


class IterationRewriter:
    """Rewrites iteration forms for one function; ``resolve`` names the object a callee is."""

    def __init__(
        self, fs: FunctionSource, names: NameTable, resolve: Callable[[ast.expr], object]
    ) -> None:
        self.fs = fs
        self.names = names
        self.resolve = resolve

    def _error(self, node: ast.AST, message: str) -> UnsupportedSyntaxError:
        return self.fs.error(UnsupportedSyntaxError, node, message)

    # ----- for loops over sequences --------------------------------------------------------
    def literal_loop(self, stmt: ast.For) -> SequenceLoop:
        """``for v in (e1, e2, ...)``: the items computed first, as Python does, then an index
        loop that picks the k-th with a conditional expression (a tuple of values with
        derivatives cannot be indexed: ``item if k == 0 else item_1 ...``)."""
        items = stmt.iter.elts
        prelude, names = [], []
        for item in items:
            names.append(self.names.fresh_internal("item"))
            prelude.append(_located(_assign(names[-1], item), item))
        rebound = stored_names(stmt)
        self.names.shown_as_value.update(
            name for name, item in zip(names, items, strict=True) if _reads_none(item, rebound)
        )
        counter = self.names.fresh_internal("k")
        self.names.item_counters.add(counter)
        chosen: ast.expr = _name(names[-1])
        for position in range(len(names) - 2, -1, -1):
            test = ast.Compare(_name(counter), [ast.Eq()], [ast.Constant(value=position)])
            chosen = ast.IfExp(test=test, body=_name(names[position]), orelse=chosen)
        pick = _located(_assign(stmt.target.id, chosen), stmt.iter)
        bounds = builtin_call("range", ast.Constant(value=len(names)))
        loop = ast.For(target=_name(counter, True), iter=bounds, body=[pick, *stmt.body], orelse=[])
        return SequenceLoop(prelude, _located(loop, stmt), {*names, counter})

    def sequence_loop(self, stmt: ast.For) -> SequenceLoop:
        """``for <targets> in <seq | enumerate | zip | reversed>`` as an index loop."""
        iterator, target = stmt.iter, stmt.target
        kind = self._iteration_kind(iterator)
        start = None  # enumerate's start
        if kind == "enumerate":
            index_target, value_targets, parts, start = self._enumerated(iterator, target)
        elif kind == "zip":
            index_target, value_targets = None, self._elements(target, len(iterator.args))
            parts = [self._part(arg) for arg in iterator.args]
        else:  # reversed(seq) alone counts down and reads seq[k]
            index_target, value_targets = None, [target]
            parts = [(iterator.args[0] if kind == "reversed" else iterator, False)]
        sequences = [sequence for sequence, _ in parts]
        prelude, seq_names, new_locals = self._sequence_names(sequences, stored_names(stmt))
        counter = index_target if start is None and index_target else self.names.fresh_internal("k")
        new_locals.add(counter)
        body = [  # located at the sequence, where an error about reading it should point
            _located(_assign(name, _item_at(_item(s, _position(counter, back)), path)), seq)
            for t, s, (seq, back) in zip(value_targets, seq_names, parts, strict=True)
            for name, path in self._bindings(t)
        ]
        if start is not None:  # enumerate(seq, start): the index is the count plus start
            first = self.names.fresh_internal("start")
            if _reads_none(start, stored_names(stmt)):  # `i = 0 + 1`, not `i = 0 + start`
                self.names.shown_as_value.add(first)
            prelude.append(_located(_assign(first, start), start))
            count = ast.BinOp(left=_name(counter), op=ast.Add(), right=_name(first))
            body.insert(0, _located(_assign(index_target, count), stmt))
            new_locals |= {first, index_target}
        lengths = [
            _located(builtin_call("len", _name(s)), sequence)
            for s, sequence in zip(seq_names, sequences, strict=True)
        ]
        length = lengths[0] if len(lengths) == 1 else builtin_call("min", *lengths)
        if kind == "reversed":
            minus_one = ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=1))
            last = ast.BinOp(left=length, op=ast.Sub(), right=ast.Constant(value=1))
            bounds = builtin_call("range", last, minus_one, minus_one)
        else:
            bounds = builtin_call("range", length)
        loop = ast.For(target=_name(counter, True), iter=bounds, body=body + stmt.body, orelse=[])
        return SequenceLoop(prelude, _located(loop, stmt), new_locals)

    def _enumerated(
        self, iterator: ast.Call, target: ast.expr
    ) -> tuple[str, list[ast.expr], list[tuple[ast.expr, bool]], ast.expr | None]:
        """``enumerate(seq | zip(...) | reversed(seq), start)``: the index's name, the value
        targets, the sequences (each with whether it is read from the end) and the start
        (None for 0)."""
        index_element, value_element = self._elements(target, 2)
        index_target, inner = self._single(index_element), iterator.args[0]
        given = iterator.args[1:] + [keyword.value for keyword in iterator.keywords]
        start = given[0] if given else None
        if self._iteration_kind(inner) == "zip":  # enumerate(zip(a, b)): i, (x, y)
            values = self._elements(value_element, len(inner.args))
            return index_target, values, [self._part(arg) for arg in inner.args], start
        return index_target, [value_element], [self._part(inner)], start

    def _part(self, sequence: ast.expr) -> tuple[ast.expr, bool]:
        """A sequence inside ``zip``/``enumerate``, and whether it is ``reversed(seq)`` (read
        from the end while the count goes up)."""
        kind = self._iteration_kind(sequence)
        if kind == "reversed":
            return sequence.args[0], True
        if kind != "sequence":
            raise self._error(sequence, messages.NESTED_ITERATION)
        return sequence, False

    def _iteration_kind(self, iterator: ast.expr) -> str:
        if not isinstance(iterator, ast.Call):
            return "sequence"
        callee = self.resolve(iterator.func)
        for kind in ("enumerate", "zip", "reversed"):
            if callee is getattr(builtins, kind):
                self._check_iteration_arguments(kind, iterator)
                return kind
        return "sequence"

    def _check_iteration_arguments(self, kind: str, iterator: ast.Call) -> None:
        """enumerate(seq[, start]), zip(seq, ...), reversed(seq)."""
        keywords = [keyword.arg for keyword in iterator.keywords]
        if kind == "enumerate":
            allowed = len(iterator.args) + len(keywords) in (1, 2) and keywords in ([], ["start"])
            ok = allowed and len(iterator.args) >= 1
        else:
            ok = not keywords and (kind == "zip" or len(iterator.args) == 1)
        if not ok:
            raise self._error(iterator, messages.ITERATION_ARGUMENTS)

    def _single(self, target: ast.expr) -> str:
        if not isinstance(target, ast.Name):
            raise self._error(target, messages.FOR_TARGET)
        return target.id

    def _elements(self, target: ast.expr, count: int) -> list[ast.expr]:
        if not (isinstance(target, ast.Tuple) and len(target.elts) == count):
            raise self._error(target, messages.unpack_count(count))
        return target.elts

    def _bindings(self, target: ast.expr, path: tuple[int, ...] = ()) -> list[BoundItem]:
        """The names a loop target binds, each with the index path of its part of an item:
        ``x`` is the item itself, ``(a, (b, c))`` binds ``a`` to ``item[0]``, ``c`` to
        ``item[1][1]``."""
        if isinstance(target, ast.Tuple | ast.List):
            if any(isinstance(elt, ast.Starred) for elt in target.elts):
                raise self._error(target, messages.SEQUENCE_TARGET)
            return [
                binding
                for i, elt in enumerate(target.elts)
                for binding in self._bindings(elt, (*path, i))
            ]
        if not isinstance(target, ast.Name):
            raise self._error(target, messages.SEQUENCE_TARGET)
        return [(target.id, path)]

    def _sequence_names(
        self, sequences: list[ast.expr], rebound: set[str]
    ) -> tuple[list[ast.stmt], list[str], set[str]]:
        """Names holding the sequences: a name the loop does not rebind is read as it is;
        anything else (``for row in X`` with ``X = X * 2.0`` in the body, ``for x in x``)
        is bound to a fresh name first, as Python iterates what the name held at the start."""
        prelude, names, new_locals = [], [], set()
        for seq in sequences:
            if isinstance(seq, ast.Name) and seq.id not in rebound:
                names.append(seq.id)
                continue
            name = self.names.fresh_internal("seq")
            if _reads_none(seq, rebound):  # `row = (1.0, 2.0)[0]`, not `row = seq[0]`
                self.names.shown_as_value.add(name)
            prelude.append(_located(_assign(name, seq), seq))
            names.append(name)
            new_locals.add(name)
        return prelude, names, new_locals

    # ----- sum / min / max of a comprehension ------------------------------------------
    def reduction(self, call: ast.Call, kind: str) -> tuple[list[ast.stmt], str, set[str]]:
        """Statements computing ``sum``/``min``/``max`` of a comprehension into a new name."""
        comprehension = copy.deepcopy(call.args[0])  # the parsed tree is shared: never mutate it
        # The running sum is shown as `sum' = sum + w * x`, a running max as `largest' =
        # max(largest, w * x)` (`max(max, ...)` would read as a call of the name). A name of
        # the user's is not taken for a label (`sum` is: the call reads the builtin).
        free = [
            label
            for label in _RUNNING_LABELS[kind]
            if label == kind or label not in self.names.taken
        ]
        acc = self.names.fresh_internal("acc", free[0] if free else None)
        renames: dict[str, str] = {}
        new_locals = {acc}
        start = ast.Constant(value=0 if kind == "sum" else None)
        given = [*call.args[1:], *(k.value for k in call.keywords)]  # sum's start
        statements: list[ast.stmt] = [_assign(acc, given[0] if given else start)]
        generators = comprehension.generators
        for generator in generators:
            if generator.is_async:
                raise self._error(generator.iter, "async comprehensions cannot be differentiated")
            generator.iter = _Rename(renames).visit(generator.iter)
            for name in _target_names(generator.target, self):
                renames[name] = self.names.fresh(name)  # a comprehension has its own scope
                new_locals.add(renames[name])
        element = _Rename(renames).visit(comprehension.elt)
        innermost: list[ast.stmt] = [_assign(acc, self._combine(kind, acc, element))]
        for generator in reversed(generators):
            for condition in reversed(generator.ifs):
                test = _Rename(renames).visit(condition)
                innermost = [ast.If(test=test, body=innermost, orelse=[])]
            target = _Rename(renames).visit(generator.target)
            innermost = [ast.For(target=target, iter=generator.iter, body=innermost, orelse=[])]
        statements += innermost
        return [_located(s, call) for s in statements], acc, new_locals

    def _combine(self, kind: str, acc: str, element: ast.expr) -> ast.expr:
        if kind == "sum":
            return ast.BinOp(left=_name(acc), op=ast.Add(), right=element)
        first = ast.Compare(left=_name(acc), ops=[ast.Is()], comparators=[ast.Constant(None)])
        both = builtin_call(kind, _name(acc), element)
        return ast.IfExp(test=first, body=element, orelse=both)


def _reads_none(expr: ast.expr, rebound: set[str]) -> bool:
    """Whether ``expr`` reads none of the names a loop rebinds. Only then may explanations
    show a value computed before the loop as its expression: in the loop the same names
    label the loop's own values (`for t in (x, y): x = x + t` keeps `item`)."""
    return rebound.isdisjoint(names_in(expr))


_RUNNING_LABELS = {
    "sum": ("sum",),
    "max": ("largest", "running_max"),
    "min": ("smallest", "running_min"),
}


def _target_names(target: ast.expr, rewriter: IterationRewriter) -> list[str]:
    """The names a comprehension's target binds (nested tuples too, as ``for`` allows)."""
    return [name for name, _ in rewriter._bindings(target)]


class _Rename(ast.NodeTransformer):
    """Rename comprehension variables (a fresh scope) in a copy-free, in-place way."""

    def __init__(self, renames: dict[str, str]) -> None:
        self.renames = renames

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id in self.renames:
            return ast.copy_location(ast.Name(id=self.renames[node.id], ctx=node.ctx), node)
        return node
