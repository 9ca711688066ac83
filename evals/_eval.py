"""`holon eval`: plan, identity probe, create, run, finish: the main job, end to end."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from agents import AddressGuard, Executor, Identity, frozen_gc, run_loop
from evals._finish import finish
from evals._plan import Plan, rebuild
from evals._processes import spread
from evals._runner import Progress, Runner, cache_for
from evals.checks import PdfPool, open_pdf_pool
from records import CellStatus, EvalInfo, EvalStatus, Store, eval_id
from schema.errors import IdentityMismatch, Refused, StoreUnavailable


async def _identify(plan: Plan, secret: str | None, address_guard: AddressGuard | None) -> Identity:
    async with Executor(address_guard=address_guard) as executor:
        return await executor.identify(plan.agent, secret=secret)


def probe(store: Store, plan: Plan, *, address_guard: AddressGuard | None = None) -> None:
    """Refuse before the first case when the agent is not the registered version, or
    does not advertise a capability it claims (or, with `address_guard`, is at an
    address it refuses). What the probe found is kept (store.identities): a
    mismatch makes the current record stale, as a gateway probe's does."""
    agent = plan.agent
    identity = asyncio.run(_identify(plan, store.agents.secret(agent.id), address_guard))
    check = identity.compare(agent)
    store.identities.observe(agent.id, agent.version, **check.observation())
    if check.mismatch is not None:
        raise IdentityMismatch(
            f"{agent.id} answers as {check.answered_id} {check.answered_version}, but version "
            f"{agent.version} is registered: the record would describe another agent",
            hint="register the version that runs (holon agents register FILE), then evaluate it",
            details={"registered": agent.version, "answering": check.answered_version},
        )
    if check.not_advertised:
        # The record must not certify what the agent itself denies; grading the
        # rest would certify a manifest that describes another agent.
        raise IdentityMismatch(
            f"{agent.id} {agent.version} claims {', '.join(check.not_advertised)} but its "
            "identity answer does not advertise it: the record would certify a capability "
            "the agent denies",
            hint="register a manifest that claims only what the agent advertises, "
            "or make its identity answer list the capability",
            details={
                "agent": agent.id,
                "agent_version": agent.version,
                "not_advertised": list(check.not_advertised),
            },
        )


def start(store: Store, plan: Plan) -> EvalInfo:
    # What finishing would need, refused before the first call and before the
    # holdout budget is spent (records.KeyRegistry.check_ready).
    store.keys.check_ready()
    secret = store.suites.holdout_secret()
    return store.evals.create(
        eval_id=eval_id(),
        agent_id=plan.agent.id,
        agent_version=plan.agent.version,
        plan=plan.to_json(),
        plan_digest=plan.digest,
        full_plan=plan.full,
        cells=plan.cell_specs(secret),
        cells_total=plan.cells_total,
        # The holdout budgets (the org's, the instance set's) are spent when the eval
        # is created: its agent sees the holdout's inputs from the first cell on.
        exposure=plan.exposure(),
    )


def pdf_pool_for(plan: Plan) -> contextlib.AbstractContextManager[PdfPool | None]:
    """A PDF reader pool when some check reads a PDF; none otherwise (it costs processes)."""
    uses_pdf = any(
        check.uses_pdf
        for planned in plan.suites
        for case in (*planned.public, *planned.holdout)
        for check in case.checks
    )
    return open_pdf_pool() if uses_pdf else contextlib.nullcontext()


def work(
    store: Store,
    plan: Plan,
    info: EvalInfo,
    *,
    home: Path,
    progress: Progress | None = None,
    processes: int = 1,
    address_guard: AddressGuard | None = None,
) -> EvalInfo:
    """Work the eval's cells until none is left, then finish it if it is complete.

    `address_guard` judges every connection its cells make (None: unlimited, for
    the eval an operator's own `holon eval` started; docs/settings.md).

    With `processes` > 1, this process and `processes` - 1 forked ones share
    the concurrency (evals._processes); whatever a child left (it died) is
    claimed here afterwards.
    """
    try:
        with frozen_gc():  # the runner's loop and the finish (agents._loop)
            left = True
            if processes > 1:
                spread(
                    store,
                    plan,
                    info.id,
                    home=home,
                    processes=processes,
                    progress=progress,
                    pdf_pool=pdf_pool_for,
                    address_guard=address_guard,
                )
                counts = store.evals.counts(info.id)
                left = bool(counts[CellStatus.PENDING] or counts[CellStatus.RUNNING])
            if left:
                with pdf_pool_for(plan) as pdf:
                    runner = Runner(
                        store,
                        plan,
                        info.id,
                        cache=cache_for(home),
                        pdf=pdf,
                        progress=progress,
                        address_guard=address_guard,
                    )
                    run_loop(runner.run())
            current = store.evals.get(info.id)
            if current.status == EvalStatus.RUNNING:
                counts = store.evals.counts(info.id)
                if counts[CellStatus.PENDING] == 0 and counts[CellStatus.RUNNING] == 0:
                    return finish(store, plan, current)
            return current
    except StoreUnavailable as exc:
        # What was recorded stays recorded; say how to go on once the store is back.
        exc.hint = exc.hint or f"when the store answers again: holon evals resume {info.id}"
        exc.details.setdefault("eval", info.id)
        raise


def resumable(store: Store, eval_id_: str, *, home: Path) -> tuple[EvalInfo, Plan | None]:
    """The eval and the plan to go on with (None when it is done already).

    Refused for a cancelled eval, and when the agent version or a suite
    changed since it started: its plan would no longer describe the same
    measurement.
    """
    info = store.evals.get(eval_id_)
    if info.imported:
        raise imported_refusal(info, "resumed")
    if info.status == EvalStatus.DONE:
        return info, None
    if info.status == EvalStatus.CANCELLED:
        raise Refused(f"eval {eval_id_} was cancelled", hint="start a new eval")
    plan = rebuild(store, info.plan, home=home)
    if plan.digest != info.plan_digest:
        raise Refused(f"eval {eval_id_}: its plan no longer describes the same measurement")
    return info, plan


def resume(
    store: Store,
    eval_id_: str,
    *,
    home: Path,
    progress: Progress | None = None,
    processes: int = 1,
    address_guard: AddressGuard | None = None,
) -> EvalInfo:
    info, plan = resumable(store, eval_id_, home=home)
    if plan is None:
        return info
    store.keys.check_ready()
    return work(
        store,
        plan,
        info,
        home=home,
        progress=progress,
        processes=processes,
        address_guard=address_guard,
    )


def imported_refusal(info: EvalInfo, action: str) -> Refused:
    """An imported eval ran on another store: nothing of it runs, resumes or stops here."""
    return Refused(
        f"eval {info.id} is imported (a report of an eval run elsewhere): it cannot be {action}",
        hint="start a new eval here: holon eval ORG/AGENT --yes",
        details={"eval": info.id, "imported": True},
    )
