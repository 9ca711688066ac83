"""A warm start for `holon gateway serve` processes: imports once, forks one per request.

Importing the gateway takes about a second; a campaign that SIGKILLs a
gateway forty times would spend most of its time importing. This process
imports everything first and then, for each line `PORT LOGFILE` on its
stdin, forks a child that runs `holon gateway serve --port PORT` (the real
command, `gateway.cli`, with the environment it was started with), its
output going to LOGFILE; it answers each line with the child's pid. The
children are real processes of their own, killed by pid; they are reaped
by the kernel (SIGCHLD ignored), so a dead child's pid disappears.

Run as `python -m tests.faults._zygote`; it exits when its stdin closes.
"""

from __future__ import annotations

import gc
import importlib
import os
import signal
import sys

from gateway.cli._app import build_parser, run

# Everything a gateway process imports, before any fork (none of these starts a thread):
# what `holon gateway serve` had imported by the time it listened, on either store.
PRELOAD = (
    "aiohttp",
    "encodings.idna",
    "gateway.server",
    "httptools",
    "psycopg",
    "rich._emoji_codes",
    "sqlalchemy.dialects.postgresql.psycopg",
    "sqlalchemy.dialects.sqlite.pysqlite",
    "sqlite3",
    "uvicorn.lifespan.on",
    "uvicorn.loops.auto",
    "uvicorn.loops.uvloop",
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.http.httptools_impl",
    "uvicorn.protocols.websockets.auto",
    "uvloop",
)


def _child(port: str, log: str) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(0, closefd=False)  # the fd outlives this frame
    code = 3
    try:
        code = run(["gateway", "serve", "--port", port, "--eval-workers", "0"])
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def main() -> None:
    for name in PRELOAD:
        importlib.import_module(name)
    build_parser()  # imports every command's module
    # What the children inherit stays out of their collector's sight (as a gateway
    # process's own start-up heap does), so each starts without scanning it again.
    gc.collect()
    gc.freeze()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    print("ready", flush=True)
    for line in sys.stdin:
        port, log = line.split()
        pid = os.fork()
        if pid == 0:
            _child(port, log)
        print(pid, flush=True)


if __name__ == "__main__":
    main()
