"""Find a function's source: its AST with real file positions, and the names it can see.

Two ways in: ``load_function`` takes a live function object (its globals and closure cells
are the namespace); ``load_from_file`` reads a file without executing it (the CLI's static
mode), resolving only the standard modules it imports and literal module-level constants.
"""

from __future__ import annotations

import ast
import builtins
import codecs
import importlib
import linecache
import os
import tokenize
import types
from collections import ChainMap
from collections.abc import Mapping
from dataclasses import dataclass, field

from .astutil import clone_located, parse_again, source_lines
from .errors import AdcompileError, Location, UnsupportedSyntaxError, node_location

FunctionNode = ast.FunctionDef | ast.Lambda

# Modules the static (file) mode may import to resolve names: pure, side-effect free.
STATIC_MODULES = frozenset({"math", "cmath", "operator", "numpy"})

_TREE_CACHE: dict[str, tuple[str, ast.Module]] = {}


@dataclass
class FunctionSource:
    """A function to differentiate: its AST, where it lives and what its names refer to."""

    node: FunctionNode
    filename: str
    lines: list[str]
    namespace: Mapping[str, object]
    name: str
    defaults: tuple[object, ...] = ()
    origin: object = field(default=None, repr=False)
    enclosing: object = field(default=None, repr=False)  # lowering scope of a nested def

    def locate(self, node: ast.AST) -> Location:
        """Return the location of ``node`` in the user's file."""
        return node_location(node, self.filename, self.lines)

    def error(self, cls: type[AdcompileError], node: ast.AST, message: str) -> AdcompileError:
        """Build an error of class ``cls`` pointing at ``node``."""
        return cls(message, self.locate(node))

    def text_of(self, node: ast.AST) -> str:
        """The source lines a node spans."""
        return "".join(self.lines[node.lineno - 1 : node.end_lineno])

    def short_filename(self) -> str:
        """The file's base name, for comments in generated code."""
        return os.path.basename(self.filename)

    def param_names(self) -> list[str]:
        """Return the positional parameter names, in order."""
        args = self.node.args
        return [a.arg for a in args.posonlyargs + args.args]

    def source_line(self, line: int) -> str:
        """Return the stripped text of a line of the user's file."""
        return self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""


def _parse_file(filename: str, text: str) -> ast.Module:
    cached = _TREE_CACHE.get(filename)
    if cached is not None and cached[0] == text:
        return cached[1]
    tree = ast.parse(text, filename=filename)
    _TREE_CACHE[filename] = (text, tree)
    return tree


def _parse_own_lines(lines: list[str], code: types.CodeType) -> FunctionNode | None:
    """A ``def`` parsed from its own lines, with its real positions; None where that is not
    surely the whole definition (then the whole file is parsed, and cached).

    Parsing a whole file costs in proportion to the file, for the first function compiled
    from it. The def's own lines run from its first line (decorators included) to the last
    line its code covers. They are not the whole def if the next line of code is indented
    deeper than the def: say, a statement after ``return`` that the compiler dropped.
    """
    if code.co_name == "<lambda>":  # a lambda's lines hold other code around it
        return None
    first, last = code.co_firstlineno, _last_line(code)
    if not 1 <= first <= last <= len(lines):
        return None
    own = lines[first - 1 : last]
    indent = _indentation(own[0])
    if (indent and first < 2) or _continues(lines, last, indent):
        return None
    # Blank lines put the def on its real line; under `if 1:` an indented def parses as it
    # stands, so its columns are real too.
    head = "\n" * (first - 2) + "if 1:\n" if indent else "\n" * (first - 1)
    try:
        tree = parse_again(head + "".join(own))
    except SyntaxError:
        return None
    body = tree.body[0].body if indent else tree.body
    found = [
        node
        for node in body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name == code.co_name
        and _first_line(node) == first
    ]
    return found[0] if len(found) == 1 else None


def _last_line(code: types.CodeType) -> int:
    """The last line that the code, or any function nested in it, has an instruction on."""
    last = max((end for _, end, _, _ in code.co_positions() if end is not None), default=0)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            last = max(last, _last_line(const))
    return last


def _indentation(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _continues(lines: list[str], last: int, indent: int) -> bool:
    """Whether the first line of code after line ``last`` is indented deeper than ``indent``
    (an imported file mixes tabs and spaces consistently, so lengths compare as columns)."""
    for line in lines[last:]:
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return _indentation(line) > indent
    return False


def _first_line(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno] + [d.lineno for d in decorators])


def _code_positions(code: types.CodeType) -> list[tuple[int, int]]:
    """Where the code's instructions come from, but those of no width: every function
    starts with a RESUME placed at column 0 of its first line, inside no lambda's body."""
    return [
        (line, col)
        for line, end_line, col, end_col in code.co_positions()
        if line and col is not None and (end_line, end_col) != (line, col)
    ]


def _contains(node: ast.AST, line: int, col: int) -> bool:
    start = (node.lineno, node.col_offset)
    end = (node.end_lineno, node.end_col_offset)
    return start <= (line, col) < end


def _find_node(tree: ast.Module, code: types.CodeType) -> FunctionNode | None:
    first = code.co_firstlineno
    if code.co_name == "<lambda>":
        lambdas = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and n.lineno == first]
        return lambdas[0] if len(lambdas) == 1 else _lambda_of(lambdas, code)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name == code.co_name
            and _first_line(node) == first
        ):
            return node
    return None


def _lambda_of(lambdas: list[ast.Lambda], code: types.CodeType) -> ast.Lambda | None:
    """Which of several lambdas on one line ``code`` was compiled from: the innermost whose
    body holds every position of its code; else (Python 3.12 gives ``lambda x: 0.0`` no
    position) the one whose body compiles to the same instructions; else None."""
    positions = _code_positions(code)
    holding = [n for n in lambdas if positions and all(_contains(n.body, *p) for p in positions)]
    if holding:  # a lambda in another's body: the innermost (the outer's code holds the
        # inner lambda's own position, outside the inner body)
        return min(holding, key=lambda n: (n.end_lineno, n.end_col_offset, -n.col_offset))
    same = [n for n in lambdas if _compiles_to(n, code)]
    return same[0] if len(same) == 1 else None


def _compiles_to(node: ast.Lambda, code: types.CodeType) -> bool:
    """Whether ``node`` alone compiles to ``code``'s instructions (not for closures, whose
    free variables compile as globals alone)."""
    try:
        outer = compile(ast.fix_missing_locations(ast.Expression(body=node)), "<lambda>", "eval")
    except (SyntaxError, ValueError):
        return False
    inner = next((c for c in outer.co_consts if isinstance(c, types.CodeType)), None)
    return inner is not None and (inner.co_code, inner.co_consts, inner.co_names) == (
        code.co_code,
        code.co_consts,
        code.co_names,
    )


def _class_mangling(node: ast.FunctionDef | ast.Lambda, code: types.CodeType) -> dict[str, str]:
    """``__k -> _Model__k`` for a function written in a class body, as Python compiles it.

    Python rewrites private names (two leading underscores, not a dunder) in class bodies;
    the code object holds the rewritten ones, from which the class's prefix is read.
    """
    compiled = set()
    stack = [code]
    while stack:
        current = stack.pop()
        compiled.update(current.co_names, current.co_varnames, current.co_freevars)
        stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    if not any("__" in name for name in compiled):  # the usual case: no walk of the tree
        return {}
    private = {
        name
        for child in ast.walk(node)
        for name in _identifiers_of(child)
        if name.startswith("__") and not name.endswith("__")
    }
    if not private or private & compiled:  # kept as written: not in a class body
        return {}
    for name in private:
        for seen in compiled:
            if seen != name and seen.endswith(name) and seen.startswith("_"):
                prefix = seen[: -len(name)]
                return {p: prefix + p for p in private}
    return {}


def _identifiers_of(node: ast.AST) -> tuple[str, ...]:
    if isinstance(node, ast.Name):
        return (node.id,)
    if isinstance(node, ast.arg):
        return (node.arg,)
    return ()


def _renamed_copy(node: ast.AST, renames: dict[str, str]) -> ast.AST:
    """A copy of ``node`` with its names and parameters renamed (positions kept)."""
    copy = clone_located(node)
    for child in ast.walk(copy):
        if isinstance(child, ast.Name) and child.id in renames:
            child.id = renames[child.id]
        elif isinstance(child, ast.arg) and child.arg in renames:
            child.arg = renames[child.arg]
    return copy


class UnboundClosureVariable:
    """A closure variable with no value yet: it hides any global of its name, as in Python."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<closure variable {self.name}, not assigned yet>"


def closure_values(fn: types.FunctionType) -> dict[str, object]:
    """The values of a function's closure cells by name (an empty cell: a marker)."""
    values: dict[str, object] = {}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True):
        try:
            values[name] = cell.cell_contents
        except ValueError:  # an empty cell: the variable is not bound yet
            values[name] = UnboundClosureVariable(name)
    return values


@dataclass(frozen=True, eq=False)
class StaticFunction:
    """A top-level function of a file read without running it (the CLI's static mode)."""

    node: ast.FunctionDef
    filename: str
    lines: list[str]
    namespace: Mapping[str, object]
    defaults: tuple  # read where the def stands in the file, as Python evaluates them

    def __repr__(self) -> str:
        return f"<function {self.node.name} of {os.path.basename(self.filename)} (not run)>"

    def source(self) -> FunctionSource:
        """The function as a FunctionSource, resolving names in its own file."""
        return FunctionSource(
            self.node, self.filename, self.lines, self.namespace, self.node.name, self.defaults
        )


def function_node(fn: types.FunctionType) -> tuple[FunctionNode, list[str]]:
    """The ``def`` or lambda of a live function, with its real positions, and its file's lines.

    Cheaper than ``inspect.getsource``, which tokenizes the definition in pure Python: the
    def's own lines are parsed, or else the whole file, once.
    """
    code = fn.__code__
    filename = code.co_filename
    linecache.checkcache(filename)  # a file edited since it was read (as inspect does)
    lines = linecache.getlines(filename, fn.__globals__)
    if not lines:
        raise _undecodable_file(filename) or _no_source_file(fn, filename)
    node = _parse_own_lines(lines, code)
    if node is None:
        node = _find_node(_parse_file(filename, "".join(lines)), code)
    if node is None and filename.startswith("<") and filename.endswith(">"):
        # `<string>` lines cached for other code (Python 3.13 keeps exec'd text): not its own
        raise _no_source_file(fn, filename)
    if node is None:
        line = code.co_firstlineno
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        column = 1 + len(text) - len(text.lstrip())
        raise UnsupportedSyntaxError(
            f"cannot find the definition of {fn.__qualname__} here (several lambdas on one "
            "line that adcompile cannot tell apart: give each its own line or a def; or the "
            "file changed since it was imported: reload it)",
            Location(filename, line, column, text),
        )
    return node, lines


def _undecodable_file(filename: str) -> AdcompileError | None:
    """The error for a file that exists but does not decode as Python source (linecache
    then gives no lines, as for a function without a file), or None."""
    from pathlib import Path

    file = Path(filename)
    try:
        with tokenize.open(file) as handle:
            handle.read()
    except UnicodeDecodeError as exc:  # Python imports a bad byte in a comment
        return UnsupportedSyntaxError(
            f"cannot read {filename} as Python source: {exc.reason} ({exc.encoding}); save "
            "it in that encoding, or declare the one it is in (`# -*- coding: latin-1 -*-`)",
            _undecodable_location(file),
        )
    except (OSError, SyntaxError):
        return None
    return None


def _no_source_file(fn: types.FunctionType, filename: str) -> AdcompileError:
    """The function has no file to read: the caller places the error at the call."""
    return AdcompileError(
        f"cannot read the source of {fn.__qualname__}: {filename} is not available "
        "(functions typed into the interactive prompt or made by exec have no source "
        "file; put them in a file)"
    )


def load_function(fn: object) -> FunctionSource:
    """Load a live Python function: its AST (real positions) and its visible names."""
    if not isinstance(fn, types.FunctionType):
        kind = type(fn).__name__
        hint = ""
        if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
            bound_to_class = isinstance(fn.__self__, type)  # a classmethod
            owner = fn.__self__.__name__ if bound_to_class else type(fn.__self__).__name__
            first = "the class" if bound_to_class else "the instance"
            hint = (
                f"; differentiate the function {owner}.__dict__[{fn.__func__.__name__!r}]"
                f".__func__ instead, with wrt= naming the parameters after the first, and pass "
                f"{first} as the first argument"
                if bound_to_class
                else f"; differentiate the function {owner}.{fn.__func__.__name__} instead, "
                "with wrt= naming the parameters after self, and pass the instance as the "
                "first argument"
            )
        raise TypeError(
            f"adcompile differentiates Python functions defined with def or lambda, "
            f"not {kind} objects ({fn!r}){hint}"
        )
    node, lines = function_node(fn)
    mangling = _class_mangling(node, fn.__code__)
    if mangling:
        node = _renamed_copy(node, mangling)
    namespace = ChainMap(closure_values(fn), fn.__globals__, vars(builtins))
    return FunctionSource(
        node=node,
        filename=fn.__code__.co_filename,
        lines=lines,
        namespace=namespace,
        name=fn.__name__,
        defaults=tuple(fn.__defaults__ or ()),
        origin=fn,
    )


def _static_import(module: str) -> object | None:
    root = module.split(".")[0]
    if root not in STATIC_MODULES:
        return None
    try:
        return importlib.import_module(module)
    except ImportError:  # `import math.foo`: Python fails there too; unknown, as if not run
        return None


def literal_value(node: ast.expr) -> object | None:
    """The value of a literal number or tuple (``3``, ``-1e-3``, ``(1.0, 2.0)``), else None."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, int | float | tuple) else None


class UnreadDefault(str):
    """A default a file computes when it runs (``clip=CLIP`` with ``CLIP = f()``), unknown
    when the file is only read; its repr is what an error says of it."""

    def __repr__(self) -> str:
        return (
            f"`{self}`, which is known only by running the file (PATH.py is read, not run: "
            "write a literal default, or name the module as package.module:FUNC)"
        )


def static_defaults(node: ast.FunctionDef, namespace: Mapping[str, object]) -> tuple:
    """A function's defaults in a file read without running it: literals, and module
    constants the file binds to literals (``clip=CLIP`` after ``CLIP = True``)."""
    values = []
    for expr in node.args.defaults:
        try:
            values.append(ast.literal_eval(expr))
            continue
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        known = _static_constant(expr, namespace)
        if isinstance(known, bool | int | float | str | tuple):
            values.append(known)
        else:
            values.append(UnreadDefault(ast.unparse(expr)))
    return tuple(values)


def _static_constant(expr: ast.expr, namespace: Mapping[str, object]) -> object | None:
    """``K``, ``math.inf``, ``-math.pi``: a name's or a static module's constant, else None."""
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        value = _static_constant(expr.operand, namespace)
        return -value if isinstance(value, int | float) else None
    if isinstance(expr, ast.Name):
        return namespace.get(expr.id)
    if isinstance(expr, ast.Attribute):
        module = _static_constant(expr.value, namespace)
        is_static = isinstance(module, types.ModuleType) and module.__name__ in STATIC_MODULES
        return getattr(module, expr.attr, None) if is_static else None
    return None


class ComputedGlobal:
    """A module-level name a file binds by running something (``K = 2 * 3.0``, an import of
    another module): unknown when the file is read without running it (``dump PATH.py``)."""

    def __init__(self, statement: str, where: str = "at module level") -> None:
        self.statement = statement
        self.where = where

    def __repr__(self) -> str:
        return f"<bound at module level by {self.statement}>"


def static_namespace(
    tree: ast.Module, filename: str = "", lines: list[str] = ()
) -> dict[str, object]:
    """Names a file defines at module level, resolved without running it."""
    names: dict[str, object] = dict(vars(builtins))
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.decorator_list:  # unknown until it runs
            decorator = f"@{ast.unparse(stmt.decorator_list[0])}"
            names[stmt.name] = ComputedGlobal(decorator, f"on `def {stmt.name}` at module level")
        elif isinstance(stmt, ast.FunctionDef):
            defaults = static_defaults(stmt, names)  # the names bound so far, as Python reads
            names[stmt.name] = StaticFunction(stmt, filename, list(lines), names, defaults)
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                module = _static_import(alias.name)
                bound = alias.asname or alias.name.split(".")[0]
                if module is not None:
                    names[bound] = module if alias.asname else _static_import(bound)
                else:
                    names[bound] = ComputedGlobal(ast.unparse(stmt))
        elif isinstance(stmt, ast.ImportFrom):
            module = _static_import(stmt.module) if stmt.module and stmt.level == 0 else None
            for alias in stmt.names:
                bound = alias.asname or alias.name
                if module is not None and alias.name == "*":  # as Python binds them
                    public = getattr(module, "__all__", None) or [
                        n for n in dir(module) if not n.startswith("_")
                    ]
                    names.update({n: getattr(module, n) for n in public if hasattr(module, n)})
                elif module is not None and hasattr(module, alias.name):
                    names[bound] = getattr(module, alias.name)
                elif alias.name != "*":
                    names[bound] = ComputedGlobal(ast.unparse(stmt))
                else:  # a module not imported may rebind any name the file bound so far
                    computed = ComputedGlobal(ast.unparse(stmt))
                    names.update({n: computed for n in names if n not in vars(builtins)})
        elif isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            value = literal_value(stmt.value)
            if isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                value = stmt.value.value  # einsum's subscripts, as a running module has them
            for target in targets:
                if isinstance(target, ast.Name):
                    computed = ComputedGlobal(ast.unparse(stmt))
                    names[target.id] = computed if value is None else value
                elif _literal_unpacking(target, value):  # `I, J = 2.0, 3.0`
                    names.update(zip((t.id for t in target.elts), value, strict=True))
                else:  # `a, b = f()`, `obj.x = ...`: what it binds is known by running it
                    _mark_computed(target, stmt, names)
        elif not isinstance(stmt, ast.FunctionDef):  # `K += 1.0`, `if ...: K = 7.0`, ...
            _mark_computed(stmt, stmt, names)
    for node in ast.walk(tree):  # `global K` in a function: K may change when it runs
        if isinstance(node, ast.Global):
            computed = ComputedGlobal(f"global {', '.join(node.names)}", "in a function")
            names.update(dict.fromkeys(node.names, computed))
    return names


def _literal_unpacking(target: ast.expr, value: object) -> bool:
    """Whether ``target = value`` unpacks a literal tuple into as many plain names."""
    return (
        isinstance(target, ast.Tuple | ast.List)
        and isinstance(value, tuple)
        and len(value) == len(target.elts)
        and all(isinstance(t, ast.Name) for t in target.elts)
    )


# Nodes that bind (or unbind) the identifier in their `name` field, not through a Name.
_BINDS_BY_NAME = (ast.MatchAs, ast.MatchStar, ast.ExceptHandler)


def _mark_computed(node: ast.AST, stmt: ast.stmt, names: dict[str, object]) -> None:
    """Every module-level name ``node`` binds is known only by running ``stmt``."""
    computed = ComputedGlobal(ast.unparse(stmt).splitlines()[0])
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Name) and not isinstance(current.ctx, ast.Load):
            names[current.id] = computed
        elif isinstance(current, _BINDS_BY_NAME) and isinstance(current.name, str):
            names[current.name] = computed  # `case K:`, `except E as K:`
        elif isinstance(current, ast.MatchMapping) and current.rest:
            names[current.rest] = computed  # `case {**K}:`
        elif isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[current.name] = computed  # its body is another scope
            continue
        elif isinstance(current, ast.alias):
            bound = current.asname or current.name.split(".")[0]
            if bound != "*":
                names[bound] = computed
        stack.extend(ast.iter_child_nodes(current))


def _undecodable_location(file: object) -> Location:
    """Where the first byte that does not decode is: its line and column."""
    raw = file.read_bytes()
    encoding, _ = tokenize.detect_encoding(iter(raw.splitlines(keepends=True)).__next__)
    if encoding == "utf-8-sig" and raw.startswith(codecs.BOM_UTF8):
        # The decoder's offsets count from after the BOM: index bytes without it.
        raw, encoding = raw[len(codecs.BOM_UTF8) :], "utf-8"
    try:
        raw.decode(encoding)
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        start = before.rfind(b"\n") + 1
        text = raw[start:].split(b"\n", 1)[0].decode(encoding, errors="replace")
        return Location(str(file), line, len(before[start:].decode(encoding, "replace")) + 1, text)
    return Location(str(file), 0, 0)


def load_from_file(path: str, func_name: str) -> FunctionSource:
    """Load a top-level function from a file without executing the file."""
    from pathlib import Path  # here: only the CLI reads files, and the import costs 5 ms

    file = Path(path)
    try:
        with tokenize.open(file) as handle:  # the encoding Python would use: cookie, BOM
            text = handle.read()
    except OSError as exc:
        raise FileNotFoundError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:  # undecodable bytes: say where, as Python does
        raise UnsupportedSyntaxError(
            f"cannot read {path} as Python source: {exc.reason} ({exc.encoding})",
            _undecodable_location(file),
        ) from None
    except SyntaxError as exc:  # a bad coding cookie
        raise AdcompileError(f"cannot read {path} as Python source: {exc}") from None
    filename = str(file)
    try:
        tree = ast.parse(text, filename=filename)
    except SyntaxError as exc:
        line, col = exc.lineno, exc.offset
        if line is None and "\0" in text:  # "null bytes": Python gives no position
            before = text[: text.index("\0")]
            line, col = before.count("\n") + 1, len(before) - before.rfind("\n")
        lines = source_lines(text, keepends=True)
        shown = exc.text or (lines[line - 1] if line and line <= len(lines) else "")
        location = Location(filename, line or 0, col or 0, shown.replace("\0", " "))
        raise UnsupportedSyntaxError(f"the file does not parse: {exc.msg}", location) from None
    functions = {
        stmt.name: stmt
        for stmt in tree.body
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    if func_name not in functions:
        known = ", ".join(sorted(functions)) or "none"
        raise LookupError(f"{path} has no top-level function {func_name!r} (functions: {known})")
    node = functions[func_name]
    lines = source_lines(text, keepends=True)
    namespace = static_namespace(tree, filename, lines)
    bound = namespace.get(func_name)
    if isinstance(bound, StaticFunction) and bound.node is node:
        defaults = bound.defaults  # read where the def stands
    else:  # decorated, or bound again later: its defaults too are read where the def stands
        before = ast.Module(body=tree.body[: tree.body.index(node)], type_ignores=[])
        defaults = static_defaults(node, static_namespace(before, filename, lines))
    return FunctionSource(
        node=node,
        filename=filename,
        lines=lines,
        namespace=namespace,
        name=func_name,
        defaults=defaults,
    )
