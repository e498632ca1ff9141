"""Fresh names for generated code that cannot collide with any name in the user's function.

Every identifier the user's function mentions is reserved up front. Generated names are
allocated from one table, so a temporary, a renamed variable, an adjoint and the module alias
for ``math`` can never coincide with each other or with the user's names.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import re
import unicodedata
from collections.abc import Iterable

from .astutil import source_lines, walk

# Prefixes tried, in order, for adjoint names; the first that starts no user name wins.
ADJOINT_PREFIXES = ("b_", "bar_", "adj_", "d_", "grad_")


# Tuples for isinstance, as astutil.BLOCK_STATEMENTS explains.
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def identifiers(tree: ast.AST) -> set[str]:
    """Every identifier a syntax tree mentions (variables, parameters, attributes, defs)."""
    found: set[str] = set()
    for node in walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, _DEFINITIONS):
            found.add(node.name)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.alias):
            found.add((node.asname or node.name).split(".")[0])
    return found


def _adjoint_like(name: str, prefix: str) -> bool:
    # An adjoint name is prefix + identifier; `b_1` (a renamed `b`) can never be one.
    rest = name[len(prefix) :]
    return name.startswith(prefix) and rest[:1].isidentifier()


class NameTable:
    """Allocates fresh identifiers; remembers every name in use."""

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self.taken: set[str] = set(reserved) | set(keyword.kwlist) | {"None", "True", "False"}
        self._counters: dict[str, int] = {}
        # Which user name each fresh version stands for (``x_2`` -> ``x``): for explanations.
        self.bases: dict[str, str] = {}
        # Variables the compiler introduces (flags, accumulators): no user name stands behind
        # them, so explanations show them under their own names, never under a user's.
        self.internal: set[str] = set()
        # What explanations call some of them (a generator's running sum: ``sum``).
        self.labels: dict[str, str] = {}
        # Those explanations show as the value they hold (the items of ``for t in (x, y *
        # 2)``: ``t = x``, ``t = y * 2``), and the counters whose tests pick one of them.
        self.shown_as_value: set[str] = set()
        self.item_counters: set[str] = set()
        # The internal flags that stand for a jump (``returned`` -> "return", ``broke`` ->
        # "break", ``skip`` -> "continue"): explanations show the jump, not the flag.
        self.jumps: dict[str, str] = {}
        # The inlined function whose variables are being named (None: the outermost), and
        # the function each fresh version belongs to: explanations show `softplus.x`, not a
        # second `x`.
        self.scope: str | None = None
        self.scopes: dict[str, str] = {}

    def reserve(self, name: str) -> None:
        """Mark ``name`` as used."""
        self.taken.add(name)

    def fresh(self, base: str) -> str:
        """Return ``base`` if free, else ``base_1``, ``base_2``, ...; the result is reserved."""
        name = base if base.isidentifier() else "v"
        if name in self.taken:
            k = self._counters.get(name, 0)
            while True:
                k += 1
                candidate = f"{name}_{k}"
                if candidate not in self.taken:
                    break
            self._counters[name] = k
            name = candidate
        self.taken.add(name)
        self.bases[name] = base
        if self.scope is not None:
            self.scopes[name] = self.scope
        return name

    def fresh_internal(self, base: str, label: str | None = None) -> str:
        """``fresh`` for a variable of the compiler's own (see ``internal``), which
        explanations show as ``label`` if given."""
        name = self.fresh(base)
        self.internal.add(name)
        if label is not None:
            self.labels[name] = label
        return name

    def fresh_jump_flag(self, base: str, jump: str) -> str:
        """``fresh_internal`` for the flag that the statement ``jump`` sets (see ``jumps``)."""
        name = self.fresh_internal(base)
        self.jumps[name] = jump
        return name

    def jump_of(self, name: str) -> str | None:
        """The jump (``"break"``...) whose flag ``name`` is a version of, else None."""
        return self.jumps.get(self.shown_as(name))

    def shown_as(self, name: str) -> str:
        """The name an explanation shows for a version: the user's variable it stands for
        (``x_2`` -> ``x``), or an internal variable's label (``sum``) or own name."""
        scope = self.scopes.get(name)
        name = self._behind(name)
        if name in self.internal:
            return self.labels.get(name, name)
        return f"{scope}.{name}" if scope is not None else name

    def is_shown_as_value(self, name: str) -> bool:
        """Whether version ``name`` (an inlined helper's too) is of a variable explanations
        show as the value it holds (see ``shown_as_value``)."""
        return self._behind(name) in self.shown_as_value

    def is_internal(self, name: str) -> bool:
        """Whether version ``name`` is of a variable of the compiler's own."""
        return self._behind(name) in self.internal

    def _behind(self, name: str) -> str:
        """The user's variable, or the internal one, that version ``name`` is of."""
        seen = set()
        while name in self.bases and self.bases[name] != name and name not in self.internal:
            if name in seen:
                break
            seen.add(name)
            name = self.bases[name]
        return name

    def numbered(self, stem: str) -> str:
        """Return ``stem1``, ``stem2``, ... (the first free one); the result is reserved."""
        k = self._counters.get(stem + "#", 0)
        while True:
            k += 1
            candidate = f"{stem}{k}"
            if candidate not in self.taken:
                break
        self._counters[stem + "#"] = k
        self.taken.add(candidate)
        return candidate

    def prefix_free(self, candidates: Iterable[str]) -> str:
        """The first prefix with which no name in use starts."""
        for prefix in candidates:
            starting = [name for name in self.taken if name.startswith(prefix)]  # usually none
            if not any(_adjoint_like(name, prefix) for name in starting):
                return prefix
        k = 1
        while any(name.startswith(f"adj{k}_") for name in self.taken):
            k += 1
        return f"adj{k}_"


def function_identifiers(node: ast.FunctionDef | ast.Lambda) -> set[str]:
    """Identifiers used inside a function: parameters, defaults and body (not its own name)."""
    found = identifiers(node.args)
    body = node.body if isinstance(node.body, list) else [node.body]
    for stmt in body:
        found |= identifiers(stmt)
    return found


def output_label(name: str, node: ast.FunctionDef | ast.Lambda) -> str:
    """How explanations name a function's output: its own name (``f`` in ``df/dx``), unless
    a variable inside has that name too (``def g(g)``: ``dg_out/dg``)."""
    label = name if name.isidentifier() else "f"
    return f"{label}_out" if label in function_identifiers(node) else label


_WORD = re.compile(r"[^\W\d]\w*")
_BUILTIN_NAMES = frozenset(dir(builtins))  # reserved so that no generated name hides one


def as_python_reads(text: str) -> str:
    """Source text with identifiers spelled as Python reads them: it normalises them (NFKC),
    so ``𝐛_x`` in the text is the name ``b_x``."""
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def source_words(text: str) -> set[str]:
    """Every word of source text, as Python reads it: a superset of its identifiers."""
    return set(_WORD.findall(as_python_reads(text)))


def _mentions(text: str, word: str) -> bool:
    """Whether ``word`` is among ``_WORD.findall(text)`` (or, rarely, inside a longer word
    after a digit: a superset, which only reserves a name more), without listing them all."""
    return re.search(rf"(?<![^\W\d]){re.escape(word)}(?!\w)", text) is not None


def user_name_table(
    node: ast.FunctionDef | ast.Lambda, extra: Iterable[str] = (), source: str | None = None
) -> NameTable:
    """A name table with every identifier of the function and the builtins reserved.

    Given the function's source text, every word in it is reserved: a superset of its
    identifiers (words in strings and comments too), found far faster than by walking it.
    """
    if source is None:
        words = function_identifiers(node)
    else:
        source = as_python_reads(source)
        words = set(_WORD.findall(source))
        # The function's own name on its `def` line is free for generated names (the
        # gradient's output variable is named after it), unless the body uses it.
        if isinstance(node, ast.FunctionDef):
            body_start = node.body[0].lineno - node.lineno
            body_text = "".join(source_lines(source, keepends=True)[body_start:])
            if not _mentions(body_text, node.name):
                words.discard(node.name)
    reserved = words | set(extra) | _BUILTIN_NAMES
    return NameTable(reserved)
