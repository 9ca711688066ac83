"""Run one piece of work in several threads at once, for tests of what races."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def in_threads(
    work: Callable[[T], object], args: Iterable[T], *, at_once: bool = False
) -> list[BaseException]:
    """`work(arg)` for each of `args`, each in a thread of its own, every thread started
    before any is joined; what they raised (a test asserts it is nothing). `at_once`:
    each thread waits for all the others to be ready, so their work starts together
    (a race is run, not merely allowed)."""
    every = list(args)
    errors: list[BaseException] = []
    ready = threading.Barrier(len(every)) if at_once else None

    def run(arg: T) -> None:
        try:
            if ready is not None:
                ready.wait()
            work(arg)
        except BaseException as exc:  # collected for the test's own thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(arg,)) for arg in every]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors
