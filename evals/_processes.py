"""One eval spread over local processes (`holon eval --processes N`).

The eval's own process forks N-1 children once the plan is loaded and the
cells exist; each process runs a Runner of its own with a share of the
concurrency (the shares add up to `--concurrency`, so the cells in flight
stay as many as asked). They claim under the same leases and fencing as
`holon worker` processes, with owners of their own (`new_owner` names the
pid): no cell is recorded twice, and a child that dies leaves only the cells
it held, claimed again at once by the parent once it has reaped the child
(`dead_local_owners`), or by whoever claims after their leases end.

Why fork, and fork here: a child must rebuild nothing. A spawned process
(`multiprocessing` spawn or forkserver, or `holon worker`) would import
holon, open the store and rebuild the plan from its JSON (loading and
checking each suite's cases) before its first claim: 0.9-1.4 s of CPU and
1.3-1.9 s of wall time for the bench suite's 2,000 cells (docs/performance.md),
more than the whole ideal run of a 20 ms agent at concurrency 64 (0.625 s).
A fork (with the pool's connections closed first) took 11-36 ms there, and
inherits the loaded plan. It happens before any event loop or store thread
exists in the parent, and after the parent's pooled connections are closed
(`engine.dispose()`), so no connection, socket or lock held by another
thread crosses it: each process opens its own connections.

Stopping: the children ignore SIGINT (a terminal's Ctrl-C reaches the whole
process group); the parent, interrupted or failing, sends each one SIGTERM,
which stops its runner as Ctrl-C stops the parent's (cells in flight answer
and are recorded, cells claimed and not started are given back); a second
SIGTERM (a second Ctrl-C in the parent) ends it at once. A child's error
travels to the parent over a pipe and is logged there; the parent goes on
with whatever the child left.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from agents import AddressGuard, run_loop
from evals._plan import Plan
from evals._runner import Progress, Runner, cache_for
from evals.checks import PdfPool
from records import Store
from schema.errors import HolonError, UsageError, error_from_body

log = logging.getLogger(__name__)

# A plan's PDF reader pool, or none (evals._eval.pdf_pool_for): each process opens its own.
PdfPoolFor = Callable[[Plan], contextlib.AbstractContextManager[PdfPool | None]]

PROCESSES_PER_CPU = 4  # beyond this, more processes only queue for the cores
PROGRESS_EVERY_S = 0.25  # how often the parent reports while it waits for its children
_POLL_S = 0.005  # the parent's wait between looks at its children (the eval's tail)
_STOPPED = 130  # a child stopped on the parent's request, as an interrupted CLI exits
_BUG = 70  # a child failed outside holon's errors (EX_SOFTWARE)
_ERROR_BYTES = 8192  # an error's report on the pipe, well inside its buffer


def max_processes() -> int:
    return (os.cpu_count() or 1) * PROCESSES_PER_CPU


def check_processes(processes: int, concurrency: int) -> None:
    """Refuse a process count the eval cannot use (before it is planned)."""
    most = max_processes()
    if processes < 1:
        raise UsageError(f"--processes {processes}: at least 1 (1: this process alone)")
    if processes > most:
        raise UsageError(
            f"--processes {processes}: at most {most} ({PROCESSES_PER_CPU} per CPU of this "
            "machine); to spread an eval over more machines, run `holon worker` on them"
        )
    if processes > concurrency:
        raise UsageError(
            f"--processes {processes} is more than --concurrency {concurrency}: each process "
            "runs at least one cell at a time",
            hint=f"raise --concurrency to {processes} or more, or lower --processes",
        )
    if processes > 1 and not hasattr(os, "fork"):
        raise UsageError("--processes needs fork(), which this system lacks: use `holon worker`")


def shares(concurrency: int, processes: int) -> list[int]:
    """Each process's cells in flight (the first is the parent's): they add up to
    `concurrency`, and differ by at most one."""
    base, extra = divmod(concurrency, processes)
    return [base + (1 if i < extra else 0) for i in range(processes)]


def share_plan(plan: Plan, share: int, processes: int) -> Plan:
    """One process's view of the plan: its share of the concurrency, and `--pace`
    stretched so that all processes together start cells no faster than asked."""
    return dataclasses.replace(plan, concurrency=share, pace_s=plan.pace_s * processes)


@dataclass
class _Child:
    pid: int
    errors: int  # the pipe's read end: the child's HolonError, if any
    status: int | None = None  # the wait status, once reaped
    error: HolonError | None = None

    def describe(self) -> str | None:
        """What went wrong with this child, or None when it ended well."""
        if self.error is not None:
            return str(self.error)
        assert self.status is not None
        if os.WIFSIGNALED(self.status):
            number = os.WTERMSIG(self.status)
            try:
                return f"killed by {signal.Signals(number).name}"
            except ValueError:  # a signal Python has no name for (a real-time one)
                return f"killed by signal {number}"
        code = os.waitstatus_to_exitcode(self.status)
        if code in (0, _STOPPED):
            return None
        return f"exited with status {code}"


class LocalProcesses:
    """The forked children of one eval's process (the parent runs its own share)."""

    def __init__(
        self,
        store: Store,
        plan: Plan,
        eval_id: str,
        *,
        home: Path,
        processes: int,
        pdf_pool: PdfPoolFor,
        address_guard: AddressGuard | None = None,
    ) -> None:
        self.store = store
        self.pdf_pool = pdf_pool
        self.address_guard = address_guard  # inherited by the forked children
        self.eval_id = eval_id
        self.home = home
        self.processes = processes
        self.shares = shares(plan.concurrency, processes)
        self.plan = share_plan(plan, self.shares[0], processes)  # the parent's share
        self._full = plan
        self.children: list[_Child] = []

    def start(self) -> None:
        # Buffered output would be written again by a child that flushes it.
        sys.stdout.flush()
        sys.stderr.flush()
        # No pooled connection crosses the fork: the parent opens new ones as it
        # goes on, as each child does (one connect, cheaper than any sharing).
        self.store.engine.dispose()
        for share in self.shares[1:]:
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: never returns
                os.close(read)
                for other in self.children:
                    os.close(other.errors)
                _child(self.store, share_plan(self._full, share, self.processes), self, write)
            os.close(write)
            self.children.append(_Child(pid, read))
        log.info(
            "eval %s: %d processes (this one and %s), cells in flight %s",
            self.eval_id,
            self.processes,
            ", ".join(str(c.pid) for c in self.children),
            "+".join(str(s) for s in self.shares),
        )

    def alive(self) -> list[_Child]:
        return [c for c in self.children if c.status is None]

    def _reap(self) -> None:
        for child in self.alive():
            try:
                pid, status = os.waitpid(child.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): status unknown
                pid, status = child.pid, 0
            if pid == 0:
                continue
            child.status = status
            child.error = _read_error(child.errors)
            os.close(child.errors)

    def join(self, report: Callable[[], None] | None = None) -> None:
        """Wait for every child to end (reaping it: a zombie's pid still looks alive to
        `dead_local_owners`), calling `report` every PROGRESS_EVERY_S meanwhile."""
        last = time.monotonic()
        while True:
            self._reap()
            if not self.alive():
                return
            if report is not None and time.monotonic() - last >= PROGRESS_EVERY_S:
                report()
                last = time.monotonic()
            time.sleep(_POLL_S)

    def stop(self) -> None:
        """Ask every child to stop (one SIGTERM) and wait; interrupted, end them at once."""
        self._signal(signal.SIGTERM)
        try:
            self.join()
        except BaseException:
            self._signal(signal.SIGKILL)
            self.join()
            raise

    def _signal(self, signum: signal.Signals) -> None:
        for child in self.alive():
            try:
                os.kill(child.pid, signum)
            except ProcessLookupError:
                pass  # ended meanwhile; reaped by the next look

    def warn(self) -> None:
        for child in self.children:
            what = child.describe()
            if what is not None:
                log.warning(
                    "eval %s: process %d (of --processes %d) stopped: %s; the cells it "
                    "held are claimed again (at once: its process is gone)",
                    self.eval_id,
                    child.pid,
                    self.processes,
                    what,
                )


def spread(
    store: Store,
    plan: Plan,
    eval_id: str,
    *,
    home: Path,
    processes: int,
    progress: Progress | None = None,
    pdf_pool: PdfPoolFor,
    address_guard: AddressGuard | None = None,
) -> None:
    """Work the eval with `processes` local processes until none has a cell to claim.

    Returns once every child has ended; cells a dead child left `running` are
    the caller's to claim (a Runner that waits for others, as `work` runs).
    """
    check_processes(processes, plan.concurrency)
    local = LocalProcesses(
        store,
        plan,
        eval_id,
        home=home,
        processes=processes,
        pdf_pool=pdf_pool,
        address_guard=address_guard,
    )
    try:
        local.start()  # a fork that fails (a process limit) stops those already started
        with pdf_pool(plan) as pdf:
            runner = Runner(
                store,
                local.plan,
                eval_id,
                cache=cache_for(home),
                pdf=pdf,
                progress=progress,
                wait_for_others=False,  # the children are waited for below, not polled
                shared=True,
                address_guard=address_guard,
            )
            run_loop(runner.run())

        def report() -> None:
            if progress is not None:
                progress(store.evals.progress(eval_id))

        local.join(report)
        report()  # the last word: every process's cells recorded
    except BaseException:
        local.stop()
        local.warn()
        raise
    local.warn()


def _child(store: Store, plan: Plan, local: LocalProcesses, errors: int) -> NoReturn:
    """A child's whole life: its runner, then `os._exit` (no atexit, no flush of
    buffers the parent owns, no return into the parent's stack)."""
    code = _BUG
    try:
        # Ctrl-C on a terminal reaches every process in the group: the parent
        # alone decides when its children stop (one SIGTERM each).
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        store.engine.dispose(close=False)  # nothing pooled (the parent disposed); to be sure
        with local.pdf_pool(plan) as pdf:
            runner = Runner(
                store,
                plan,
                local.eval_id,
                cache=cache_for(local.home),
                pdf=pdf,
                wait_for_others=False,
                shared=True,
                address_guard=local.address_guard,
            )
            code = run_loop(_until_sigterm(runner.run()))
    except HolonError as exc:
        body = json.dumps({"status": exc.http_status, "body": exc.to_body()})
        try:
            os.write(errors, body.encode("utf-8")[:_ERROR_BYTES])
        except OSError:
            pass
        code = exc.exit_code
    except BaseException:
        log.exception("eval %s: a worker process failed", local.eval_id)
        code = _BUG
    finally:
        try:
            sys.stderr.flush()
        finally:
            os._exit(code)


async def _until_sigterm(main: Coroutine[Any, Any, None]) -> int:
    """Run `main`; the first SIGTERM cancels it (it stops as on Ctrl-C), the second
    ends the process (the default action, restored)."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(main)

    def stop() -> None:
        loop.remove_signal_handler(signal.SIGTERM)
        task.cancel()

    loop.add_signal_handler(signal.SIGTERM, stop)
    try:
        await task
    except asyncio.CancelledError:
        return _STOPPED
    return 0


def _read_error(fd: int) -> HolonError | None:
    chunks = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    if not chunks:
        return None
    try:
        sent = json.loads(b"".join(chunks))
        return error_from_body(int(sent["status"]), sent["body"])
    except (ValueError, KeyError, TypeError):
        return HolonError("a worker process failed (its error report was cut short)")
