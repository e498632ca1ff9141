"""A set seen through the changes one block makes to it, without copying the set."""

from __future__ import annotations

from collections.abc import Iterable


class SetOverlay:
    """The enclosing block's set of names, with this block's additions and removals.

    Branches and loop bodies work on an overlay: copying the enclosing set for each one
    would make a pass quadratic in the number of ``if`` statements.
    """

    def __init__(self, base: set[str] | SetOverlay) -> None:
        self.base = base
        self.added: set[str] = set()
        self.removed: set[str] = set()

    def __contains__(self, name: object) -> bool:
        if name in self.added:
            return True
        return name not in self.removed and name in self.base

    def add(self, name: str) -> None:
        """``name`` is in the set from here on."""
        self.added.add(name)
        self.removed.discard(name)

    def discard(self, name: str) -> None:
        """``name`` is not in the set from here on."""
        self.added.discard(name)
        self.removed.add(name)

    def __ior__(self, names: Iterable[str]) -> SetOverlay:
        for name in names:
            self.add(name)
        return self

    def started(self) -> set[str]:
        """The names this block put in the set that the enclosing one did not have."""
        return {name for name in self.added if name not in self.base}
