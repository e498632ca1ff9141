"""In-place updates of NumPy arrays that another name shares, which generated code cannot follow.

In NumPy, ``y = x; y += 1.0`` changes the one array both names hold, so ``x`` reads the new
values afterwards. Generated code computes every assignment as a new value (``y_1 = y + 1.0``)
and leaves ``x`` as it was. Rather than differ silently, the compiler refuses to read ``x``
after such an update. Names share an array through plain assignment (``y = x``), unpacking,
a loop's entry, or a view (``x.T``, ``x[i]``, ``x.reshape(...)``).

Only the lowered function itself is tracked (a helper that updates its parameter in place is
not), and only in array code: Python numbers cannot be changed in place.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

# Methods and NumPy functions whose result may be a view of their first argument.
VIEWS = frozenset({"reshape", "transpose", "ravel", "squeeze", "swapaxes", "view"})


def shared_name(value: ast.expr) -> str | None:
    """The name whose array ``value`` may be, or view: ``x``, ``x.T``, ``x[0]``,
    ``x.reshape(2, 3)`` or ``np.reshape(x, ...)``; None for anything that makes a new array."""
    if isinstance(value, ast.Name):
        return value.id
    if isinstance(value, ast.Attribute) and value.attr == "T":
        return shared_name(value.value)
    if isinstance(value, ast.Subscript):
        return shared_name(value.value)
    func = value.func if isinstance(value, ast.Call) else None
    if isinstance(func, ast.Attribute) and func.attr in VIEWS:
        owner = func.value  # x.reshape(...) or np.reshape(x, ...)
        if isinstance(owner, ast.Name) and value.args and owner.id in ("np", "numpy"):
            return shared_name(value.args[0])
        return shared_name(owner)
    return None


@dataclass
class SharedArrays:
    """Which versions of the user's names may hold one array, and which an update changed."""

    roots: dict[str, str] = field(default_factory=dict)  # version -> the version it shares
    changed: dict[str, tuple[str, ast.AugAssign]] = field(default_factory=dict)

    def share(self, new: str, existing: str) -> None:
        """``new`` holds the array of ``existing`` (or a view of it)."""
        self.roots[new] = self.roots.get(existing, existing)

    def updated(self, env: dict[str, str], before: str, name: str, stmt: ast.AugAssign) -> None:
        """``name op= ...`` changed the array of version ``before``: every other name
        holding it now reads a changed array."""
        root = self.roots.get(before, before)
        for other, version in env.items():
            if other != name and self.roots.get(version, version) == root:
                self.changed[version] = (name, stmt)

    def update_behind(self, version: str) -> tuple[str, ast.AugAssign] | None:
        """The in-place update that changed the array ``version`` holds, if any."""
        return self.changed.get(version)
