"""`holon worker`: help with any running eval, on any host sharing the store.

A worker claims cells of running evals under the same leases as the eval's
own process, and finishes an eval whose last cell it recorded. Finishing is
idempotent (the first to finish wins, under a row lock), so it does not
matter which process gets there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select

from evals._eval import pdf_pool_for
from evals._finish import finish
from evals._plan import rebuild
from evals._runner import Runner, cache_for, dead_local_owners, new_owner
from records import EvalCell, Store, utcnow
from schema.errors import HolonError

log = logging.getLogger(__name__)

Report = Callable[[str], None]


@dataclass
class WorkerStats:
    evals_worked: set[str] = field(default_factory=set)
    evals_finished: set[str] = field(default_factory=set)


def run_worker(
    store: Store,
    *,
    home: Path,
    once: bool = False,
    poll_s: float = 1.0,
    stop: threading.Event | None = None,
    report: Report | None = None,
) -> WorkerStats:
    """Work running evals until stopped (or, with `once`, until none has work left)."""
    owner = new_owner()
    stats = WorkerStats()
    stop = stop or threading.Event()
    say = report or (lambda message: None)
    while not stop.is_set():
        worked = False
        for info in store.evals.running():
            counts = store.evals.counts(info.id)
            try:
                plan = rebuild(store, info.plan, home=home)
            except HolonError as exc:
                log.warning("eval %s cannot be worked here: %s", info.id, exc)
                continue
            # Cells left `running` by a worker that died count as work too: with
            # none pending, nobody else would ever reclaim them.
            if counts["pending"] or (counts["running"] and _reclaimable(store, info.id)):
                worked = True
                stats.evals_worked.add(info.id)
                say(f"working eval {info.id} ({info.agent_id} {info.agent_version})")
                with pdf_pool_for(plan) as pdf:
                    runner = Runner(
                        store,
                        plan,
                        info.id,
                        cache=cache_for(home),
                        pdf=pdf,
                        owner=owner,
                        wait_for_others=False,
                    )
                    asyncio.run(runner.run())
                counts = store.evals.counts(info.id)
            if counts["pending"] == 0 and counts["running"] == 0:
                with contextlib.suppress(HolonError):
                    done = finish(store, plan, store.evals.get(info.id))
                    if done.status == "done" and info.id not in stats.evals_finished:
                        stats.evals_finished.add(info.id)
                        say(f"eval {info.id} is complete")
        if once and not worked:
            break
        if not worked:
            stop.wait(poll_s)
    return stats


def _reclaimable(store: Store, eval_id: str) -> bool:
    """Whether some running cell has no live holder: its lease ran out, or its
    process (on this host) is gone. Few rows: running cells are at most the
    workers' concurrency."""
    with store.read() as session:
        rows = session.execute(
            select(EvalCell.lease_owner, EvalCell.lease_expires_at).where(
                EvalCell.eval_id == eval_id, EvalCell.status == "running"
            )
        ).all()
    now = utcnow()
    if any(expires is not None and expires < now for _, expires in rows):
        return True
    return bool(dead_local_owners(sorted({owner for owner, _ in rows if owner})))
