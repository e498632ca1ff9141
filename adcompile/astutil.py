"""Fast AST helpers for the compiler's hot paths: walk, clone, substitute, names read.

``ast.walk`` and ``ast.NodeTransformer`` visit every ``Load()`` context and operator node and
go through generic field iteration; these helpers skip those leaves and cache each node
class's child fields, which keeps compile time small and linear in the function's size.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Callable, Iterator, Mapping

_LEAF_FIELDS = frozenset({"ctx", "op"})

# CPython 3.11 matches each keyword of an AST constructor against the node's field names,
# which makes `ast.Name(id=n, ctx=ast.Load())` three times slower than `ast.Name(n, LOAD)`;
# the compiler builds many names, so its hot paths use these. Contexts carry no state:
# `ast.parse` itself shares one instance of each.
LOAD, STORE = ast.Load(), ast.Store()

# Tuples, not `A | B`: `isinstance(x, A | B)` builds a new union object at every call, and
# the passes test every statement. The other modules keep their own such tuples.
BLOCK_STATEMENTS = (ast.If, ast.For, ast.While)
LOOP_STATEMENTS = (ast.For, ast.While)
_AUG_FOR = (ast.AugAssign, ast.For)
TEST_BLOCKS = (ast.If, ast.While)  # blocks headed by a test, which stores nothing
_NODE_OR_LIST = (ast.AST, list)


_ODD_BREAK = re.compile("[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def source_lines(text: str, keepends: bool = False) -> list[str]:
    """The lines of Python source as Python numbers them: ended by ``\n``, ``\r\n`` or
    ``\r`` only. ``str.splitlines`` also ends a line at a form feed, ``\x85`` or
    ``\u2028``, which may stand in a comment or between statements: its numbers drift."""
    if not _ODD_BREAK.search(text):  # the usual text: splitlines agrees, and is faster
        return text.splitlines(keepends)
    lines = _LINE.findall(text)
    return lines if keepends else [line.rstrip("\r\n") for line in lines]


def load(name: str) -> ast.Name:
    """A ``Name`` that reads ``name``."""
    return ast.Name(name, LOAD)


def store(name: str) -> ast.Name:
    """A ``Name`` that assigns ``name``."""
    return ast.Name(name, STORE)


def call(func: str, *args: ast.expr) -> ast.Call:
    """``func(*args)`` for a function read by name."""
    return ast.Call(func=load(func), args=list(args), keywords=[])


# Set on the function name of a call the compiler writes (``range(len(seq))``): it means the
# builtin even where the user's function binds that name (a parameter called ``len``).
BUILTIN_MARK = "adcompile_builtin"


def builtin_call(func: str, *args: ast.expr) -> ast.Call:
    """``func(*args)`` calling the builtin ``func``, whatever the user's code names so."""
    node = call(func, *args)
    setattr(node.func, BUILTIN_MARK, True)
    return node


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
        cls = current.__class__
        if cls is ast.Name or cls is ast.Constant:  # most nodes: leaves, no fields to try
            continue
        if prune and isinstance(current, prune):
            continue
        if cls is ast.BinOp:  # the order of the generic loop below
            stack.append(current.left)
            stack.append(current.right)
            continue
        for name in _child_fields(cls):
            value = getattr(current, name, None)
            if isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append(value)


def statements_in(statements: list[ast.stmt]) -> list[ast.stmt]:
    """Every statement, and every statement nested in their blocks, in no particular order
    (expressions are not entered: generated code nests statements only in blocks)."""
    out, stack = [], list(statements)
    while stack:
        stmt = stack.pop()
        out.append(stmt)
        for field in block_fields(stmt.__class__):
            stack.extend(getattr(stmt, field))
    return out


_BLOCK_FIELDS: dict[type, tuple[str, ...]] = {}


def block_fields(cls: type) -> tuple[str, ...]:
    """The fields of statement class ``cls`` that hold nested statements (often none)."""
    fields = _BLOCK_FIELDS.get(cls)
    if fields is None:
        fields = tuple(f for f in ("body", "orelse", "finalbody") if f in cls._fields)
        _BLOCK_FIELDS[cls] = fields
    return fields


def names_in(node: ast.AST) -> list[str]:
    """The identifiers of every ``Name`` under ``node`` (in no particular order)."""
    found: list[ast.Name] = []
    collect_names(node, found, loads_only=False)
    return [n.id for n in found]


def loads_in(node: ast.AST) -> list[str]:
    """The identifiers of the ``Name`` nodes under ``node`` that are read (not assigned)."""
    found: list[ast.Name] = []
    collect_names(node, found, loads_only=True)
    return [n.id for n in found]


def name_nodes(node: ast.AST) -> list[ast.Name]:
    """Every ``Name`` node under ``node``."""
    found: list[ast.Name] = []
    collect_names(node, found, loads_only=False)
    return found


# Children to visit, per node class, for the classes generated code is made of. Recursion
# specialised this way is several times faster than a generic walk.
_CHILDREN: dict[type, tuple[str, ...]] = {
    ast.BinOp: ("left", "right"),
    ast.UnaryOp: ("operand",),
    ast.Call: ("func", "args", "keywords"),  # keywords: `np.sum(g, axis=k)` reads k
    ast.keyword: ("value",),
    ast.Attribute: ("value",),
    ast.Expr: ("value",),
    ast.Return: ("value",),
    ast.Compare: ("left", "comparators"),
    ast.BoolOp: ("values",),
    ast.IfExp: ("test", "body", "orelse"),
    ast.Tuple: ("elts",),
    ast.List: ("elts",),
    ast.Subscript: ("value", "slice"),
    ast.Slice: ("lower", "upper", "step"),
    ast.If: ("test", "body", "orelse"),
    ast.While: ("test", "body", "orelse"),
}
# Children that are assignment targets: skipped when only reads are wanted.
_TARGETS: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {
    ast.Assign: (("targets",), ("value",)),
    ast.AugAssign: (("target",), ("value",)),
    ast.For: (("target",), ("iter", "body", "orelse")),
}


def collect_names(node: ast.AST, found: list[ast.Name], loads_only: bool) -> None:
    """Append every ``Name`` node under ``node`` to ``found`` (only reads if ``loads_only``).

    For walks over many statements: one list for all of them, no list per statement."""
    cls = node.__class__
    if cls is ast.Name:
        found.append(node)
        return
    if cls is ast.Constant:
        return
    fields = _CHILDREN.get(cls)
    if fields is None and cls in _TARGETS:
        targets, others = _TARGETS[cls]
        fields = others if loads_only else targets + others
    if fields is None:
        for child in walk(node):
            if child.__class__ is ast.Name and not (
                loads_only and child.ctx.__class__ is not ast.Load
            ):
                found.append(child)
        return
    for field_name in fields:
        value = getattr(node, field_name, None)
        if value.__class__ is list:
            for item in value:
                collect_names(item, found, loads_only)
        elif value is not None:
            collect_names(value, found, loads_only)


def clone(node: object) -> object:
    """A deep copy of an AST (positions are not copied)."""
    cls = node.__class__
    if cls is ast.Name:
        return ast.Name(node.id, node.ctx)
    if cls is ast.Constant:
        return ast.Constant(node.value)
    if isinstance(node, ast.AST):
        new = cls.__new__(cls)
        for name in cls._fields:
            value = getattr(node, name, None)
            setattr(new, name, value if name in _LEAF_FIELDS else clone(value))
        return new
    if cls is list:
        return [clone(item) for item in node]
    return node


def clone_located(node: object) -> object:
    """A deep copy of an AST that keeps each node's position (for located error messages);
    ``copy.deepcopy`` does the same about ten times slower."""
    cls = node.__class__
    if isinstance(node, ast.AST):
        new = cls.__new__(cls)
        for name in cls._fields:
            value = getattr(node, name, None)
            setattr(new, name, value if name in _LEAF_FIELDS else clone_located(value))
        for name in cls._attributes:
            if hasattr(node, name):
                setattr(new, name, getattr(node, name))
        if cls is ast.Name and getattr(node, BUILTIN_MARK, False):
            setattr(new, BUILTIN_MARK, True)
        return new
    if cls is list:
        return [clone_located(item) for item in node]
    return node


def substitute(node: ast.AST, mapping: Mapping[str, ast.expr]) -> ast.AST:
    """A copy of ``node`` with each ``Name`` in ``mapping`` replaced by a copy of its value."""
    cls = node.__class__
    if cls is ast.Name:
        replacement = mapping.get(node.id)
        return clone(replacement) if replacement is not None else ast.Name(node.id, node.ctx)
    if cls is ast.Constant:
        return ast.Constant(node.value)
    if cls is ast.BinOp:  # the shapes of rule templates, built without the field loop
        return ast.BinOp(substitute(node.left, mapping), node.op, substitute(node.right, mapping))
    if cls is ast.UnaryOp:
        return ast.UnaryOp(node.op, substitute(node.operand, mapping))
    if cls is ast.Attribute:
        return ast.Attribute(substitute(node.value, mapping), node.attr, node.ctx)
    new = cls.__new__(cls)
    for name in cls._fields:
        value = getattr(node, name, None)
        if name in _LEAF_FIELDS or not isinstance(value, _NODE_OR_LIST):
            setattr(new, name, value)
        elif isinstance(value, list):
            setattr(
                new, name, [substitute(v, mapping) if isinstance(v, ast.AST) else v for v in value]
            )
        else:
            setattr(new, name, substitute(value, mapping))
    return new


def same_tree(a: object, b: object) -> bool:
    """Whether two trees are equal as ``ast.dump`` shows them (positions aside), without
    formatting either: ``ast.dump`` costs tens of microseconds even for ``g * x``."""
    cls = a.__class__
    if cls is not b.__class__:
        return False
    if cls is ast.Name:
        return a.id == b.id and a.ctx.__class__ is b.ctx.__class__
    if cls is ast.Constant:
        return repr(a.value) == repr(b.value)  # repr tells 1 from 1.0 and 0.0 from -0.0
    if isinstance(a, ast.AST):
        for field in cls._fields:
            if not same_tree(getattr(a, field, None), getattr(b, field, None)):
                return False
        return True
    if cls is list:
        return len(a) == len(b) and all(same_tree(x, y) for x, y in zip(a, b, strict=True))
    return a == b if cls is str else repr(a) == repr(b)


def rename_in_place(node: ast.AST, renames: Mapping[str, str]) -> None:
    """Rename every ``Name`` under ``node`` that ``renames`` lists."""
    for child in name_nodes(node):
        if child.id in renames:
            child.id = renames[child.id]


def map_children(node: ast.AST, fn: Callable[[ast.AST], ast.AST]) -> None:
    """Replace each child node ``c`` of ``node`` by ``fn(c)``, in place."""
    for name in _child_fields(node.__class__):
        value = getattr(node, name, None)
        if isinstance(value, list):
            setattr(node, name, [fn(v) if isinstance(v, ast.AST) else v for v in value])
        elif isinstance(value, ast.AST):
            setattr(node, name, fn(value))


def stored_names(stmt: ast.stmt) -> set[str]:
    """Every name a statement (and what it nests) stores to."""
    # Only targets bind: the lowering rejects `:=`, and a comprehension's variables stay in it.
    if isinstance(stmt, ast.Assign):
        if len(stmt.targets) == 1:  # the usual `name = e` (or one unpacking)
            return _target_names(stmt.targets[0])
        return {name for target in stmt.targets for name in _target_names(target)}
    if isinstance(stmt, _AUG_FOR):
        return _target_names(stmt.target) | _nested_stores(stmt)
    if isinstance(stmt, TEST_BLOCKS):
        return _nested_stores(stmt)  # a test stores nothing
    return _target_names(stmt)


def _nested_stores(stmt: ast.stmt) -> set[str]:
    return {
        name
        for field in block_fields(stmt.__class__)
        for s in getattr(stmt, field)
        for name in stored_names(s)
    }


def _target_names(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Name):  # the usual target: no walk needed
        return {node.id} if isinstance(node.ctx, ast.Store) else set()
    return {
        child.id
        for child in walk(node)  # the names ast.walk finds, without visiting contexts
        if child.__class__ is ast.Name and child.ctx.__class__ is ast.Store
    }


def parse_again(text: str) -> ast.Module:
    """Parse source that was parsed (and warned about) once already: Python's
    SyntaxWarnings (``"\\d"``) are not printed a second time, under ``<unknown>``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        return ast.parse(text)
