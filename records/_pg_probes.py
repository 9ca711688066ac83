"""What holon's PostgreSQL connections ask of the server and of libpq so that a vanished
host lets go of its locks, and how they go on without it behind a pooler that refuses.

A host that vanishes (power lost, network cut) sends nothing more, not even a reset.
PostgreSQL's backend for a connection it had in a transaction would hold that
transaction's row locks (a cell being claimed, a budget being reserved) until the
kernel gives up on it: two hours for an idle connection, a quarter of an hour for one
whose last answer went unacknowledged. Meanwhile other workers skip those cells and the
mandate's calls wait. So the server probes a connection idle for 10 s every 5 s, and
drops it once nothing it sent or probed was acknowledged for 25 s (TCP_USER_TIMEOUT):
the dead host's transaction rolls back within about half a minute. The client does the
same for a server that vanished. Per connection (its startup options, libpq's
parameters), not the server's configuration, which is the operator's; ignored over a
Unix socket, which cannot lose its peer this way.

A pooler in front of PostgreSQL may refuse startup options: PgBouncer before 1.20
refuses any `options`, later ones a setting they do not track. Its server connections
are its own then, so the server's probes are the pooler's and the server's settings
(docs/deploy.md); holon's connections go on without them, which the log says once.
"""

from __future__ import annotations

import logging
import threading

from sqlalchemy.engine import URL

__all__ = [
    "CLIENT_KEEPALIVES",
    "KEEPALIVE_COUNT",
    "KEEPALIVE_IDLE_S",
    "KEEPALIVE_INTERVAL_S",
    "SERVER_KEEPALIVES",
    "SERVER_OPTIONS",
    "UNACKNOWLEDGED_MS",
    "ServerProbes",
    "server_of",
]

log = logging.getLogger(__name__)

KEEPALIVE_IDLE_S, KEEPALIVE_INTERVAL_S, KEEPALIVE_COUNT = 10, 5, 3
UNACKNOWLEDGED_MS = (KEEPALIVE_IDLE_S + KEEPALIVE_INTERVAL_S * KEEPALIVE_COUNT) * 1000
SERVER_KEEPALIVES = {
    "tcp_keepalives_idle": KEEPALIVE_IDLE_S,
    "tcp_keepalives_interval": KEEPALIVE_INTERVAL_S,
    "tcp_keepalives_count": KEEPALIVE_COUNT,
    "tcp_user_timeout": UNACKNOWLEDGED_MS,
}
CLIENT_KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": KEEPALIVE_IDLE_S,
    "keepalives_interval": KEEPALIVE_INTERVAL_S,
    "keepalives_count": KEEPALIVE_COUNT,
    "tcp_user_timeout": UNACKNOWLEDGED_MS,
}

# The server's, as a connection's startup options (`-c name=value`).
SERVER_OPTIONS = " ".join(f"-c {name}={value}" for name, value in SERVER_KEEPALIVES.items())

# PgBouncer's answers: "unsupported startup parameter: options" (before 1.20) and
# "unsupported options startup parameter: tcp_keepalives_idle" (1.20 and later).
_REFUSALS = ("unsupported startup parameter", "unsupported options startup parameter")

_lock = threading.Lock()
_refused: set[str] = set()  # the servers (host, port, database) that refused, this process


def server_of(url: URL) -> str:
    """The server a URL connects to, as the log names it (no user, no password)."""
    return f"{url.host or 'localhost'}:{url.port or 5432}/{url.database or ''}"


class ServerProbes:
    """Whether a connection to `server` still asks for SERVER_OPTIONS: until a refusal
    of them was seen, by any connection of this process to the same server."""

    def __init__(self, server: str) -> None:
        self._server = server

    @property
    def wanted(self) -> bool:
        return self._server not in _refused

    def refused(self, exc: BaseException, own: str) -> bool:
        """True when `exc` is a refusal of the startup options and those were ours alone
        (`own`, the URL's, are not ours to drop): then, from now on, not wanted."""
        if own or not any(refusal in str(exc) for refusal in _REFUSALS):
            return False
        with _lock:
            first = self._server not in _refused
            _refused.add(self._server)
        if first:
            log.warning(
                "the database at %s refused startup options (a pooler in front of "
                "PostgreSQL?): holon's connections there go without the server's keepalive "
                "probes, so set tcp_keepalives_* and tcp_user_timeout on the server and the "
                "pooler's tcp_keepalive (docs/deploy.md)",
                self._server,
            )
        return True
