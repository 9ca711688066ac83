"""How big an output is as holon writes it, and doing large work off the event loop.

Shared by every protocol's reader: an output is taken only while, written
as holon writes JSON, it is within the response cap (CallLimits.output_limit).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from agents._exchange import CallFailure
from schema.jsontext import LARGE_NODES, JSONValue, count_nodes, dumps

__all__ = ["in_thread", "in_thread_if", "is_large", "measured_size"]

_T = TypeVar("_T")


def is_large(value: JSONValue) -> bool:
    """Whether writing or walking `value` would hold up the event loop (a worker thread's job)."""
    return count_nodes(value, LARGE_NODES) > LARGE_NODES


async def in_thread(fn: Callable[..., _T], *args: Any, **kw: Any) -> _T:
    return await asyncio.to_thread(functools.partial(fn, *args, **kw))


async def in_thread_if(large: bool, fn: Callable[..., _T], *args: Any, **kw: Any) -> _T:
    """`fn(*args, **kw)`: in a worker thread when the work is `large`, else right here
    (a thread's hand-off costs more than small work does)."""
    return await in_thread(fn, *args, **kw) if large else fn(*args, **kw)


async def measured_size(output: JSONValue, limit: int, status: int) -> int:
    """The size of `output` as holon writes it, or CallFailure when that is over `limit`."""
    text = await in_thread_if(is_large(output), dumps, output)
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise CallFailure(
            "invalid_response",
            f"the output is {size} bytes as JSON (its numbers written out), more than the "
            f"{limit} accepted",
            status,
        )
    return size
