"""The AdcompileError family and the one formatter for located messages.

Every compile-time error points at a node of the user's source: the message starts with
``FILE:LINE:COL:``, then says what is wrong, then shows the offending line with a caret.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """A point in the user's file: 1-based line and column, plus the text of that line."""

    filename: str
    line: int
    col: int
    text: str = ""

    def prefix(self) -> str:
        """Return ``FILE:LINE:COL`` (no trailing colon)."""
        return f"{self.filename}:{self.line}:{self.col}"


class AdcompileError(Exception):
    """Base class of every error adcompile raises about the user's code."""

    def __init__(self, message: str, location: Location | None = None) -> None:
        self.message = message
        self.location = location
        super().__init__(format_message(message, location))


class UnsupportedSyntaxError(AdcompileError):
    """The function uses a construct outside the subset adcompile can differentiate."""


class NoDerivativeError(AdcompileError):
    """The function calls something that has no derivative rule."""


def format_message(message: str, location: Location | None, *, kind: str = "") -> str:
    """Render ``FILE:LINE:COL: [kind: ]message`` followed by the source line and a caret."""
    if location is None:
        return f"{kind}: {message}" if kind else message
    head = f"{location.prefix()}: {kind + ': ' if kind else ''}{message}"
    if not location.text:
        return head
    line = location.text.rstrip("\n")
    shown = line.lstrip()
    indent = len(line) - len(shown)
    caret = " " * max(location.col - 1 - indent, 0) + "^"
    return f"{head}\n    {shown}\n    {caret}"


def node_location(node: ast.AST, filename: str, lines: list[str]) -> Location:
    """Locate an AST node whose line numbers are real line numbers of ``filename``."""
    line = getattr(node, "lineno", 0)
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    byte_col = getattr(node, "col_offset", 0)
    # ast columns count UTF-8 bytes; people count characters.
    col = len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace")) + 1
    return Location(filename, line, col, text)
