"""Hostile name service for the network campaign: a scripted resolver and a tripwire listener.

`ScriptedResolver` is an aiohttp resolver (handed to the executor, or to
`create_app(resolver=...)`) whose nth lookup of any name gets the nth answer
of its script: a list of addresses, or an `OSError` (a failed lookup). It
keeps every lookup it answered, so a test can hold what the guard judged
against what was dialled.

`Tripwire` listens on the address a hostile name points at (127.0.0.1:port)
and counts every connection made to it: the count, final once it is stopped,
must stay 0.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from aiohttp.abc import AbstractResolver, ResolveResult

Answer = list[str] | OSError
Script = Callable[[int], Answer]

ALLOWED = "127.0.0.2"  # the one network the campaign's policy allows: 127.0.0.2/32
FORBIDDEN = "127.0.0.1"  # where the tripwire listens


def failed() -> OSError:
    return socket.gaierror(socket.EAI_NONAME, "Name or service not known")


@dataclass
class ScriptedResolver(AbstractResolver):
    script: Script
    lookups: list[tuple[str, Answer]] = field(default_factory=list)

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        answer = self.script(len(self.lookups))
        self.lookups.append((host, answer))
        if isinstance(answer, OSError):
            raise answer
        return [
            ResolveResult(
                hostname=host,
                host=address,
                port=port,
                family=socket.AF_INET6 if ":" in address else socket.AF_INET,
                proto=0,
                flags=0,
            )
            for address in answer
        ]

    async def close(self) -> None:
        pass


class Tripwire:
    """A listener that counts the connections it accepts (and closes them at once)."""

    def __init__(self, host: str = FORBIDDEN) -> None:
        self._sock = socket.socket()
        self._sock.bind((host, 0))
        self._sock.listen(64)
        self._sock.settimeout(0.05)
        self.port: int = self._sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tripwire", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def start(self) -> Tripwire:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening; a connection the kernel completed but nobody accepted yet counts."""
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.setblocking(False)
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                break
            self.accepted += 1
            conn.close()
        self._sock.close()


@contextmanager
def tripwire() -> Iterator[Tripwire]:
    wire = Tripwire().start()
    try:
        yield wire
    finally:
        wire.stop()
