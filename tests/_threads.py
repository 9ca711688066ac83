"""Run one piece of work in several threads at once, for tests of what races."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def in_threads(work: Callable[[T], object], args: Iterable[T]) -> list[BaseException]:
    """`work(arg)` for each of `args`, each in a thread of its own, every thread started
    before any is joined; what they raised (a test asserts it is nothing)."""
    errors: list[BaseException] = []

    def run(arg: T) -> None:
        try:
            work(arg)
        except BaseException as exc:  # collected for the test's own thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(arg,)) for arg in args]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors
