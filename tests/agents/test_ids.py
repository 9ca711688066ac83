"""Request and trace ids are random, and a forked process never repeats its parent's.

`holon eval --processes N` forks once the plan exists; every process then
makes traceparents for its calls. Ids come from a buffer of OS randomness
(agents._trace.RandomBlocks): a child that kept its parent's buffer would
hand out the very ids the parent hands out next.
"""

from __future__ import annotations

import os
import re
import uuid

from agents import request_id
from agents._trace import fresh_traceparent

_TRACEPARENT = re.compile(r"^00-[0-9a-f]{32}-[0-9a-f]{16}-00$")


def test_request_ids_are_random_uuid4s() -> None:
    ids = [request_id() for _ in range(2_000)]  # several refills of the buffer
    assert len(set(ids)) == len(ids)
    for text in ids[:50]:
        assert uuid.UUID(text).version == 4 and str(uuid.UUID(text)) == text


def _in_child(make: object) -> list[str]:
    """What `make()` gives 20 times in a forked child (sent back over a pipe)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            os.write(write, "\n".join(make() for _ in range(20)).encode())  # type: ignore[operator]
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    os.waitpid(pid, 0)
    return text.split("\n")


def test_a_forked_child_makes_ids_of_its_own() -> None:
    for make in (request_id, fresh_traceparent):
        make()  # the buffer holds ids the parent has not handed out yet
        child = _in_child(make)
        parent = [make() for _ in range(20)]
        assert len(child) == 20
        assert not set(child) & set(parent), make
    assert all(_TRACEPARENT.match(t) for t in _in_child(fresh_traceparent))
