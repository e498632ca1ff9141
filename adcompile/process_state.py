"""Process-wide settings that compiling changes for a while: the recursion limit, the cyclic
garbage collector.

Both belong to the whole process, not to a thread. Saving a setting on entry and putting it
back on exit goes wrong when two threads compile at once: the first to leave restores the
setting under the other, which is still compiling (a deep expression then overflows the
stack), and the last to leave puts back what the first one set, for good. So the first
thread in changes the setting, the last one out restores it, and the ones between share it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

Saved = TypeVar("Saved")


class SharedChange(Generic[Saved]):
    """A setting changed while any thread is inside ``held()``: ``change()`` returns what
    ``restore(saved)`` puts back when the last thread leaves."""

    def __init__(self, change: Callable[[], Saved], restore: Callable[[Saved], None]) -> None:
        self._change, self._restore = change, restore
        self._lock = threading.Lock()
        self._holders = 0
        self._saved: Saved | None = None

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """The block runs with the setting changed (changed once, however many hold it)."""
        with self._lock:
            if self._holders == 0:
                self._saved = self._change()
            self._holders += 1
        try:
            yield
        finally:
            with self._lock:
                self._holders -= 1
                if self._holders == 0:
                    self._restore(self._saved)
