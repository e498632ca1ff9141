"""Fast AST helpers for the compiler's hot paths: walk, clone, substitute, names read.

``ast.walk`` and ``ast.NodeTransformer`` visit every ``Load()`` context and operator node and
go through generic field iteration; these helpers skip those leaves and cache each node
class's child fields, which keeps compile time small and linear in the function's size.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping

_LEAF_FIELDS = frozenset({"ctx", "op"})
_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(cls: type) -> tuple[str, ...]:
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = tuple(f for f in cls._fields if f not in _LEAF_FIELDS)
        _FIELDS[cls] = fields
    return fields


def walk(node: ast.AST, prune: tuple[type, ...] = ()) -> Iterator[ast.AST]:
    """Every node under ``node`` (itself included), skipping contexts and operators.

    Nodes of a ``prune`` class are yielded but not descended into.
    """
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if prune and isinstance(current, prune):
            continue
        for name in _child_fields(current.__class__):
            value = getattr(current, name, None)
            if isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append(value)


def names_in(node: ast.AST) -> list[str]:
    """The identifiers of every ``Name`` under ``node`` (in no particular order)."""
    found: list[str] = []
    _collect_names(node, found)
    return found


def _collect_names(node: ast.AST, found: list[str]) -> None:
    # Recursion specialised on the node classes generated code is made of: several times
    # faster than a generic walk, and generated expressions are shallow.
    cls = node.__class__
    if cls is ast.Name:
        found.append(node.id)
    elif cls is ast.Constant:
        return
    elif cls is ast.BinOp:
        _collect_names(node.left, found)
        _collect_names(node.right, found)
    elif cls is ast.UnaryOp:
        _collect_names(node.operand, found)
    elif cls is ast.Assign:
        for target in node.targets:
            _collect_names(target, found)
        _collect_names(node.value, found)
    elif cls is ast.Call:
        _collect_names(node.func, found)
        for arg in node.args:
            _collect_names(arg, found)
    elif cls is ast.Attribute:
        _collect_names(node.value, found)
    else:
        for child in walk(node):
            if child.__class__ is ast.Name:
                found.append(child.id)


def clone(node: object) -> object:
    """A deep copy of an AST (positions are not copied)."""
    cls = node.__class__
    if cls is ast.Name:
        return ast.Name(id=node.id, ctx=node.ctx)
    if cls is ast.Constant:
        return ast.Constant(value=node.value)
    if isinstance(node, ast.AST):
        new = cls.__new__(cls)
        for name in cls._fields:
            value = getattr(node, name, None)
            setattr(new, name, value if name in _LEAF_FIELDS else clone(value))
        return new
    if cls is list:
        return [clone(item) for item in node]
    return node


def substitute(node: ast.AST, mapping: Mapping[str, ast.expr]) -> ast.AST:
    """A copy of ``node`` with each ``Name`` in ``mapping`` replaced by a copy of its value."""
    cls = node.__class__
    if cls is ast.Name:
        replacement = mapping.get(node.id)
        return clone(replacement) if replacement is not None else ast.Name(id=node.id, ctx=node.ctx)
    if cls is ast.Constant:
        return ast.Constant(value=node.value)
    new = cls.__new__(cls)
    for name in cls._fields:
        value = getattr(node, name, None)
        if name in _LEAF_FIELDS or not isinstance(value, ast.AST | list):
            setattr(new, name, value)
        elif isinstance(value, list):
            setattr(
                new, name, [substitute(v, mapping) if isinstance(v, ast.AST) else v for v in value]
            )
        else:
            setattr(new, name, substitute(value, mapping))
    return new


def rename_in_place(node: ast.AST, renames: Mapping[str, str]) -> None:
    """Rename every ``Name`` under ``node`` that ``renames`` lists."""
    for child in walk(node):
        if child.__class__ is ast.Name and child.id in renames:
            child.id = renames[child.id]


def map_children(node: ast.AST, fn: Callable[[ast.AST], ast.AST]) -> None:
    """Replace each child node ``c`` of ``node`` by ``fn(c)``, in place."""
    for name in _child_fields(node.__class__):
        value = getattr(node, name, None)
        if isinstance(value, list):
            setattr(node, name, [fn(v) if isinstance(v, ast.AST) else v for v in value])
        elif isinstance(value, ast.AST):
            setattr(node, name, fn(value))
