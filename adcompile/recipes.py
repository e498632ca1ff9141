"""How adcompile marks the functions it generates, and tells them from look-alikes.

A generated function carries its ``Recipe`` as ``adcompile_recipe``. ``functools.wraps``
copies a function's ``__dict__`` onto the wrapper, so a user's wrapper of a gradient carries
the attribute too; the recipe therefore names the code object it was made with, and only
the function running that code is the generated one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import CodeType
from typing import Any


@dataclass(frozen=True)
class Recipe:
    """How a generated function was made: enough to make a variant of it."""

    primal: Callable[..., Any]
    kind: str
    wrt: Any
    mode: str
    has_loops: bool
    code: CodeType  # the generated function's own ``__code__``
    # The module and closure constants it was compiled with (the values it keeps).
    constants: dict[str, object] = field(default_factory=dict)
    optimize: Any = True
    # The functions it inlined and the derivative rules it applied, in order.
    dependencies: tuple[object, ...] = ()


def recipe_of(fn: object) -> Recipe | None:
    """The recipe of a function adcompile generated; None for any other function, including
    a wrapper ``functools.wraps`` gave a generated function's attributes."""
    recipe = getattr(fn, "adcompile_recipe", None)
    if not isinstance(recipe, Recipe) or getattr(fn, "__code__", None) is not recipe.code:
        return None
    return recipe
