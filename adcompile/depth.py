"""Room on the call stack for deeply nested expressions.

The compiler and ``explain`` walk an expression's tree recursively, a few frames per level;
a machine-written sum of 2,000 terms nests 2,000 levels, past Python's default limit of
1,000 frames. The generated code itself is flat (one primitive per statement).
"""

from __future__ import annotations

import contextlib
import sys

from .process_state import SharedChange

RECURSION_LIMIT = 10_000


def _raise_limit() -> int:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, RECURSION_LIMIT))
    return limit


_DEEP = SharedChange(_raise_limit, sys.setrecursionlimit)


def room_for_deep_expressions() -> contextlib.AbstractContextManager[None]:
    """Raise the recursion limit to ``RECURSION_LIMIT`` (never lower it) for the block; the
    limit is the process's, so it stays raised until no thread is in such a block."""
    return _DEEP.held()
