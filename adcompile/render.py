"""Render generated statements as a standalone module (via astor) and load it.

The module text is the whole truth: it imports only ``math``, defines the constants the
function reads, and holds the generated function with a comment before each block naming the
primal line it comes from. Loading it executes exactly that text, so ``.source`` and
``adcompile dump`` show what runs.
"""

from __future__ import annotations

import ast
import functools
import itertools
import linecache
import math
import numbers
import textwrap
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

from . import messages
from .astutil import BLOCK_STATEMENTS, block_fields, loads_in, rename_in_place, source_lines
from .errors import UnsupportedSyntaxError
from .hidden_builtins import alias_hidden_builtins
from .ir import CoreFunction, Site
from .notes import instrument
from .reverse import ADJOINT, FORWARD
from .source import FunctionSource, UnreadDefault, function_node

with warnings.catch_warnings():
    # astor 0.8.1 touches ast.Num & co., deprecated since Python 3.12: silence exactly those.
    warnings.filterwarnings("ignore", category=DeprecationWarning, module="astor")
    from astor.code_gen import SourceGenerator

_COUNTER = itertools.count()


class CommentLine(ast.stmt):
    """A whole-line comment in generated code: astor has no node for comments."""

    _fields = ("text",)


_VISITORS: dict[type, Callable[..., None]] = {}  # node class -> _Generator's method for it


class _Generator(SourceGenerator):
    """astor's source generator, writing ``CommentLine`` nodes and noting ``alias.attr`` reads.

    astor's visitors decide every character; the plumbing under them is made cheaper, with
    the same effect: dispatch is cached per node class (astor builds each visitor's name and
    looks it up again for every node), and ``write`` takes its commonest items (strings and
    names) first.
    """

    def __init__(self) -> None:
        super().__init__(" " * 4)  # no line information: ``newline`` below relies on it
        self.attribute_owners: set[str] = set()
        self.write = self._writer()

    def _writer(self) -> Callable[..., None]:
        """astor's ``write``, testing for a string or a name before anything else.

        astor's own tests each item for an AST node, then for a callable, and writes what is
        left; a string is neither, and a name is written as its identifier (``visit_Name``),
        so trying those first changes nothing but the cost."""
        visit, result, indent = self.visit, self.result, self.indent_with

        def text(item: str) -> None:
            if self.new_lines:
                result.append("\n" * self.new_lines)
                self.colinfo = len(result), 0
                result.append(indent * self.indentation)
                self.new_lines = 0
            if item:
                result.append(item)

        def write(*params: object) -> None:
            for item in params:
                cls = item.__class__
                if cls is str:
                    text(item)
                elif cls is ast.Name:
                    text(item.id)
                elif isinstance(item, ast.AST):
                    visit(item)
                elif callable(item):
                    item()
                else:
                    text(item)

        return write

    def newline(self, node: ast.AST | None = None, extra: int = 0) -> None:
        """Ask for ``1 + extra`` line breaks before the next text (astor's, without the line
        information this generator never writes)."""
        if self.new_lines <= extra:
            self.new_lines = 1 + extra

    def visit(self, node: ast.AST) -> None:
        """Write ``node`` with the visitor method of its class."""
        if node.__class__ is ast.Name:  # a third of all nodes; astor's visit_Name is this
            self.write(node.id)
            return
        method = _VISITORS.get(node.__class__)
        if method is None:
            method = _VISITORS[node.__class__] = getattr(
                _Generator, f"visit_{node.__class__.__name__}"
            )
        method(self, node)

    def visit_CommentLine(self, node: CommentLine) -> None:
        """``# text`` on a line of its own, at the current indentation."""
        self.statement(node, "# ", node.text)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        """As astor writes it; the owner's name is noted (``math`` in ``math.sin``)."""
        if node.value.__class__ is ast.Name:
            self.attribute_owners.add(node.value.id)
        super().visit_Attribute(node)


@dataclass
class GeneratedFunction:
    """What the renderer needs to know about one generated function."""

    name: str
    core: CoreFunction
    source: FunctionSource
    statements: list[ast.stmt]
    returns: ast.expr
    purpose: str
    # Parameters after the primal's own: tangents (jvp) or output cotangents (vjp).
    extra_params: list[str] = field(default_factory=list)


def _block_comment(stmt: ast.stmt, fs: FunctionSource) -> str:
    line = stmt.adcompile_line
    what = "adjoint of line" if stmt.adcompile_sweep == ADJOINT else "line"
    if isinstance(line, Site):  # inlined from another function
        return f"{what} {line.line} of {line.where}: {line.text}"
    return f"{what} {line}: {fs.source_line(line)}"


def one_line(text: str) -> str:
    """Text for a comment: a line break in it (a file named ``a\nb.py``) spelled out, so the
    rest cannot run as code."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _with_comments(
    statements: list[ast.stmt], fs: FunctionSource, previous: object = None
) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for stmt in statements:
        # A tangent sits with its primal line, under the same comment.
        sweep = getattr(stmt, "adcompile_sweep", None)
        key = (ADJOINT if sweep == ADJOINT else FORWARD, getattr(stmt, "adcompile_line", None))
        if key[1] is not None and key != previous:
            out.append(CommentLine(one_line(_block_comment(stmt, fs))))
        previous = key
        if isinstance(stmt, BLOCK_STATEMENTS):
            stmt.body = _with_comments(stmt.body, fs, key)
            stmt.orelse = _with_comments(stmt.orelse, fs, key)
        out.append(stmt)
    return out


def _default_literal(value: object, name: str, where: ast.AST, fs: FunctionSource) -> ast.expr:
    if isinstance(value, UnreadDefault):
        raise UnsupportedSyntaxError(f"the default of `{name}` is {value!r}", fs.locate(where))
    literal = _literal(value)
    if literal is not None:
        return literal
    raise UnsupportedSyntaxError(
        f"the default value of `{name}`, {value!r}, cannot be written into generated code; "
        "use a number, string, None or a tuple of those",
        fs.locate(where),
    )


def _literal(value: object) -> ast.expr | None:
    """``value`` written as Python source, or None: numbers (NumPy's float64 and ints as
    Python's, with the same value), strings, None and tuples of those."""
    if isinstance(value, tuple):
        items = [_literal(item) for item in value]
        return None if None in items else ast.Tuple(elts=items, ctx=ast.Load())
    if isinstance(value, float) and type(value) is not float:
        value = float(value)  # np.float64(2.0): a float whose repr names NumPy
    elif isinstance(value, numbers.Integral) and type(value) not in (int, bool):
        value = int(value)  # np.int64(3)
    if isinstance(value, float) and not math.isfinite(value):  # `hi=math.inf`: no literal
        return ast.parse(f"float({str(value)!r})", mode="eval").body
    if value is None or isinstance(value, int | float | complex | str | bytes):
        return ast.Constant(value=value)
    return None


def _default_literals(fs: FunctionSource) -> list[ast.expr]:
    """The primal's defaults as literals, each error located at its own default."""
    names = fs.param_names()[len(fs.param_names()) - len(fs.defaults) :]
    written = getattr(fs.node.args, "defaults", [])
    wheres = written if len(written) == len(fs.defaults) else [fs.node] * len(fs.defaults)
    return [
        _default_literal(value, name, where, fs)
        for value, name, where in zip(fs.defaults, names, wheres, strict=True)
    ]


def _arguments(fs: FunctionSource, extra: list[str]) -> ast.arguments:
    params = [ast.arg(arg=name) for name in [*fs.param_names(), *extra]]
    # Extra parameters follow the primal's, so they cannot keep its defaults.
    defaults = [] if extra else _default_literals(fs)
    # The primal's positional-only parameters stay so: `f_grad(x=...)` fails as `f(x=...)`.
    split = len(getattr(fs.node.args, "posonlyargs", []))
    return ast.arguments(
        posonlyargs=params[:split],
        args=params[split:],
        kwonlyargs=[],
        kw_defaults=[],
        defaults=defaults,
    )


def _constant_literal(value: object) -> ast.expr:
    if isinstance(value, tuple):  # data: a tuple of numbers (or of such tuples)
        return ast.Tuple(elts=[_constant_literal(item) for item in value], ctx=ast.Load())
    if isinstance(value, float) and type(value) is not float:
        value = float(value)  # np.float64(0.1) is a float whose repr names NumPy
    elif isinstance(value, int) and type(value) not in (int, bool):
        value = int(value)  # an IntEnum member's repr is `<E.A: 2>`
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return ast.parse(f"float({str(value)!r})", mode="eval").body
    return ast.parse(repr(value), mode="eval").body


# Python's tokenizer takes at most 100 levels of indentation; the function body is one, and
# the module that runs wraps each body in a `try` (notes.py), one more.
_MAX_BLOCK_DEPTH = 97
# Python's compiler takes at most 20 nested loops and `try` blocks (CO_MAXBLOCKS); the
# module that runs wraps each body in a `try` (notes.py), which leaves 19 for loops.
_MAX_LOOP_DEPTH = 19


def _block_depth(statements: list[ast.stmt], counted: tuple[type, ...] = ()) -> int:
    """How deep the blocks of ``statements`` nest (0 for none); with ``counted``, how many
    statements of those kinds enclose one another at most (an `if` among loops adds none)."""
    deepest, stack = 0, [(s, 0) for s in statements if isinstance(s, BLOCK_STATEMENTS)]
    while stack:  # compound statements only: most are simple, and hold no block
        stmt, outside = stack.pop()  # how many counted statements enclose stmt
        depth = outside + (1 if not counted or isinstance(stmt, counted) else 0)
        deepest = max(deepest, depth)
        for field_name in block_fields(stmt.__class__):
            stack.extend(
                (inner, depth)
                for inner in getattr(stmt, field_name)
                if isinstance(inner, BLOCK_STATEMENTS)
            )
    return deepest


def _function_def(gen: GeneratedFunction) -> ast.FunctionDef:
    if _block_depth(gen.statements) > _MAX_BLOCK_DEPTH:
        raise UnsupportedSyntaxError(messages.TOO_NESTED, gen.source.locate(gen.source.node))
    if _block_depth(gen.statements, (ast.For, ast.While)) > _MAX_LOOP_DEPTH:
        raise UnsupportedSyntaxError(messages.TOO_MANY_LOOPS, gen.source.locate(gen.source.node))
    doc = ast.Expr(value=ast.Constant(value=gen.purpose))
    body = [doc, *_with_comments(gen.statements, gen.source)]
    body.append(ast.Return(value=gen.returns))
    return ast.FunctionDef(
        name=gen.name,
        args=_arguments(gen.source, gen.extra_params),
        body=body,
        decorator_list=[],
        returns=None,
    )


def _render(statements: list[ast.stmt]) -> tuple[str, set[str]]:
    """Module text for ``statements`` (as ``astor.to_source`` lays it out) and the names
    whose attributes it reads."""
    # Statements are one primitive each, so astor's long-line splitter has nothing to do.
    generator = _Generator()
    generator.visit(ast.Module(body=statements, type_ignores=[]))
    result = generator.result
    result.append("\n")
    if set(result[0]) == {"\n"}:
        result[0] = ""
    return "".join(result), generator.attribute_owners


def _to_source(statements: list[ast.stmt]) -> str:
    return _render(statements)[0]


def render_module(functions: list[GeneratedFunction], header: str) -> str:
    """The source text of a module holding the generated functions."""
    core = functions[0].core
    constants: dict[str, object] = {}
    for gen in functions:
        constants.update(gen.core.constants)
    used = used_helpers(functions)
    helpers = helper_definitions(core, used) if used else []
    aliases = _builtin_aliases(functions, helpers, constants)
    code, attribute_owners = _render([_function_def(gen) for gen in functions])
    prelude: list[ast.stmt] = []
    if core.math_alias in attribute_owners:
        alias = None if core.math_alias == "math" else core.math_alias
        prelude.append(ast.Import(names=[ast.alias(name="math", asname=alias)]))
    if core.array_mode:
        prelude.append(ast.Import(names=[ast.alias(name="numpy", asname=core.numpy_alias)]))
    prelude += aliases  # before the constants, which may be what hides a builtin
    arrays = {name: value for name, value in constants.items() if _is_array(value)}
    for name, value in sorted(constants.items()):
        if name in arrays:
            continue
        target = ast.Name(id=name, ctx=ast.Store())
        prelude.append(ast.Assign(targets=[target], value=_constant_literal(value), lineno=0))
    if helpers:
        code = f"{_to_source(helpers)}\n\n{code}"
    if prelude:  # as astor lays out a module: two blank lines before the first def
        code = f"{_to_source(prelude)}\n\n{code}"
    if arrays:
        code = _external_arrays_comment(arrays) + code
    text = f"{header}\n{code}"
    # A file name that is not UTF-8 reaches Python as lone surrogates ('\udcff'), which no
    # source text may hold: the comments that name the file spell them out instead.
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _builtin_aliases(
    functions: list[GeneratedFunction], helpers: list[ast.stmt], constants: dict[str, object]
) -> list[ast.stmt]:
    """``len_1 = len`` for each builtin the code reads that a user's name hides."""
    trees: list[ast.AST] = list(helpers)
    user_names = set(constants)
    for gen in functions:
        trees += [*gen.statements, gen.returns]
        user_names.update(gen.source.param_names(), gen.extra_params)
    source = functions[0].source
    aliases = alias_hidden_builtins(
        trees, user_names, source.text_of(source.node), functions[0].core.names.fresh
    )
    if aliases:
        note = "builtins the code reads, under other names: the function's own names hide them"
        aliases.insert(0, CommentLine(note))
    return aliases


def _is_array(value: object) -> bool:
    return type(value).__name__ == "ndarray" and type(value).__module__ == "numpy"


def external_arrays(functions: list[GeneratedFunction]) -> dict[str, object]:
    """The NumPy arrays the generated code reads from the primal's module (not in its text)."""
    return {
        name: value
        for gen in functions
        for name, value in gen.core.constants.items()
        if _is_array(value)
    }


def _external_arrays_comment(arrays: dict[str, object]) -> str:
    lines = [
        f"# {name}: a NumPy array, shape {value.shape}, {value.dtype}, read from the "
        "function's module or closure at compile time (not written here)"
        for name, value in sorted(arrays.items())
    ]
    return "\n".join(lines) + "\n\n"


def used_helpers(functions: list[GeneratedFunction]) -> dict[str, str]:
    """The helpers (name: alias) that the functions' code calls. A template may name others
    in a branch that its static arguments left out (``np.einsum``'s ``diagonal_ones``)."""
    if not functions[0].core.helpers:  # numbers only: no walk of the generated code
        return {}
    read = {
        name
        for gen in functions
        for tree in (*gen.statements, gen.returns)
        for name in loads_in(tree)
    }
    return {name: alias for name, alias in functions[0].core.helpers.items() if alias in read}


def helper_definitions(core: CoreFunction, used: dict[str, str]) -> list[ast.stmt]:
    """The helper functions the generated code calls (``used``) and those they call, copied
    in under their aliases."""
    from .rules.array_helpers import HELPER_DEPENDENCIES, HELPERS

    wanted, stack = [], list(used)
    while stack:
        name = stack.pop()
        if name not in wanted:
            wanted.append(name)
            stack.extend(HELPER_DEPENDENCIES[name])
    renames = {name: core.helper(name) for name in wanted}
    renames["np"] = core.numpy_alias
    definitions = []
    for name in sorted(wanted, key=list(HELPERS).index):
        node = ast.parse(_helper_source(name)).body[0]
        node.name = renames[name]
        rename_in_place(node, renames)
        definitions.append(node)
    return definitions


@functools.cache
def _helper_source(name: str) -> str:
    """A helper's source text, read once."""
    from .rules.array_helpers import HELPERS

    node, lines = function_node(HELPERS[name])
    return textwrap.dedent("".join(lines[node.lineno - 1 : node.end_lineno]))


class _LinesKeeper:
    """Lives as long as a generated module's namespace: its end drops the module's lines."""


def load_module(
    text: str, label: str, arrays: dict[str, object] | None = None
) -> dict[str, object]:
    """Execute generated module text; tracebacks and debuggers can show its lines.

    What runs is the text's own tree with each function body inside a ``try`` that notes the
    user's line on an error (``notes.py``); the text itself is unchanged. ``arrays`` are the
    NumPy arrays it reads from the primal's module (``external_arrays``).
    """
    filename = f"<adcompile {label} #{next(_COUNTER)}>"
    linecache.cache[filename] = (len(text), None, source_lines(text, keepends=True), filename)
    namespace: dict[str, object] = {"__name__": "adcompile_generated", **(arrays or {})}
    # The lines are kept while the module's functions live (they all hold its namespace),
    # and no longer: `linecache.checkcache` never drops an entry without a file.
    namespace["__adcompile_lines__"] = keeper = _LinesKeeper()
    weakref.finalize(keeper, linecache.cache.pop, filename, None)
    code, docstrings = instrument(text, filename, namespace)
    exec(compile(code, filename, "exec"), namespace)
    for name, doc in docstrings.items():
        namespace[name].__doc__ = doc
    return namespace
