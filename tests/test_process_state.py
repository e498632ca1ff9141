"""The process-wide settings compiling changes (recursion limit, garbage collector) stay
changed while any thread compiles, and come back as they were when the last one is done."""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager

from adcompile.api import _collector_paused
from adcompile.depth import RECURSION_LIMIT, room_for_deep_expressions


def _overlapping(held: Callable[[], AbstractContextManager[None]], seen: Callable[[], object]):
    """What ``seen()`` gives while a second thread still holds the change after the first
    one has left, with the first thread entering first and leaving first."""
    first_in, second_in, first_out, done = (threading.Event() for _ in range(4))
    during: list[object] = []

    def first() -> None:
        with held():
            first_in.set()
            second_in.wait()
        first_out.set()

    def second() -> None:
        first_in.wait()
        with held():
            second_in.set()
            first_out.wait()
            during.append(seen())
        done.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert done.is_set()
    return during[0]


def test_the_recursion_limit_stays_raised_until_the_last_compiling_thread_is_done() -> None:
    before = sys.getrecursionlimit()
    assert before < RECURSION_LIMIT
    assert _overlapping(room_for_deep_expressions, sys.getrecursionlimit) == RECURSION_LIMIT
    assert sys.getrecursionlimit() == before  # not left at the raised limit for good


def test_the_collector_stays_paused_until_the_last_compiling_thread_is_done() -> None:
    assert gc.isenabled()
    assert _overlapping(_collector_paused, gc.isenabled) is False
    assert gc.isenabled()
