"""The service layer over the store itself: the CLI acting as operator."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from agents import AddressGuard, Executor, load_manifest
from evals.suites import (
    Suite,
    TrustStore,
    install_suite,
    load_installed,
    load_suite,
    suite_digests,
)
from gateway._network import NetworkPolicy
from gateway.live import LiveCalls, Lookups
from gateway.service._evals import EvalOps, plan_view
from gateway.service._interface import EvalOptions, Progress, Proposal
from gateway.service._mandates import MandateOps
from gateway.service._views import (
    agent_view,
    suite_view,
)
from gateway.settings import Settings, checkout_root
from records import Store, open_store
from schema.errors import SchemaBehind, StoreUnavailable, UsageError
from schema.jsontext import JSONObject, JSONValue

if TYPE_CHECKING:
    from evals.reports import ReportCache

log = logging.getLogger(__name__)

R = TypeVar("R")
R_contra = TypeVar("R_contra", contravariant=True)


class Runs(Protocol[R_contra]):
    """An operation as the store's service runs it: its implementation over the store.

    The operation table (gateway/operations) sits above this service and its
    `Operation` has this shape; naming the shape, not the class, keeps the import
    pointing down."""

    @property
    def run(self) -> Callable[[StoreService, R_contra], JSONObject]: ...


# How often a process waiting for its store looks again.
_WAIT_POLL_S = 1.0


def _open_waiting(settings: Settings, wait_s: float, report: Callable[[str], None]) -> Store:
    """The store, once it answers at this holon's schema, looking again every second for
    up to `wait_s`. Only what another process is about to fix is waited for: a store
    that does not answer, or an empty or older one (`holon db upgrade` is running). A
    newer store, or a URL of a database holon does not run on, stops us at once."""
    deadline = time.monotonic() + wait_s
    waiting_for: str | None = None
    while True:
        try:
            return open_store(
                settings.database_url,
                secret_key=settings.resolve_secret_key(),
                auto_upgrade=settings.embedded,
            )
        except (StoreUnavailable, SchemaBehind) as exc:
            left = deadline - time.monotonic()
            if left <= 0:
                if waiting_for is not None:
                    report(f"gave up waiting for the store after {wait_s:g} s")
                raise
            if exc.message != waiting_for:
                waiting_for = exc.message
                limit = "" if math.isinf(left) else f" (up to {left:.0f} s more)"
                report(f"waiting for the store{limit}: {exc.message}")
            time.sleep(min(_WAIT_POLL_S, left))


class StoreService:
    kind = "store"

    def __init__(
        self,
        store: Store,
        home: Path,
        retention_days: int = 30,
        address_guard: AddressGuard | None = None,
        *,
        worker_guard: AddressGuard | None = None,
    ) -> None:
        """`address_guard`: the gateway's network policy, for the identity probe of an
        eval it starts (an operator's own CLI is not limited). `worker_guard`: the
        policy for working evals this process did not start (`holon worker`, `holon
        evals resume`: anyone's, through the API); `address_guard` unless given."""
        self.store = store
        self.home = home
        self.first_use: list[str] = []  # what a fresh embedded store was given
        self.evals = StoreEvals(
            store,
            home,
            retention_days,
            address_guard,
            worker_guard=address_guard if worker_guard is None else worker_guard,
        )
        self.mandates = MandateOps(store)

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        wait_s: float = 0.0,
        report: Callable[[str], None] | None = None,
    ) -> StoreService:
        """`wait_s`: how long to wait for a store that does not answer yet or is behind
        this holon's schema (a gateway or worker started beside the database and its
        `holon db upgrade`), telling `report` what it waits for; 0 refuses at once."""
        store = _open_waiting(settings, wait_s, report or log.info)
        # The CLI's own `holon eval` is unlimited (its operator chose the agent); what
        # works evals anyone created through the API holds to HOLON_AGENT_NETWORKS.
        policy = NetworkPolicy.from_setting(settings.agent_networks)
        service = cls(
            store, settings.home, settings.output_retention_days, worker_guard=policy.judge
        )
        root = checkout_root()
        if store.created and settings.embedded and settings.examples and root is not None:
            service._install_examples(root / "examples")
        return service

    def _install_examples(self, examples: Path) -> None:
        """A source checkout's fresh default store gets the shipped suites and agents,
        so the quick start works with no set-up."""
        for directory in sorted((examples / "suites").iterdir()):
            if (directory / "suite.yaml").is_file():
                _, installed = install_suite(self.store, directory, activate=True)
                self.first_use.append(f"suite {installed.id} v{installed.version}")
        for manifest_file in sorted((examples / "agents").glob("*.yaml")):
            manifest = load_manifest(manifest_file)
            self.store.agents.register(manifest.to_json())
            self.first_use.append(f"agent {manifest.id} {manifest.version}")

    def close(self) -> None:
        self.store.close()

    def call(self, operation: Runs[R], request: R) -> JSONObject:
        """One operation of the table, run here on the store (its declared implementation)."""
        return operation.run(self, request)

    # -- live calls ------------------------------------------------------------

    def invoke(
        self, caller: str | None, agent_id: str | None, capability: str, input: JSONValue
    ) -> JSONObject:
        if caller is None:
            raise UsageError(
                "on the store the CLI acts as operator: name the caller whose mandates "
                "apply with --caller NAME",
                hint="or call through a gateway with that caller's token (--gateway, --token)",
            )

        async def call() -> JSONObject:
            async with Executor() as executor:
                calls = LiveCalls(self.store, executor, lookups=Lookups(self.store, ttl_s=0))
                if agent_id is None:
                    return await calls.route(caller, capability, input)
                return await calls.invoke(caller, agent_id, capability, input)

        return asyncio.run(call())

    # -- agents -------------------------------------------------------------

    def get_agent(self, agent_id: str) -> JSONObject:
        info = self.store.agents.get(agent_id)
        return agent_view(info, self.store.agents.history(agent_id))

    def set_agent_disabled(self, agent_id: str, disabled: bool) -> JSONObject:
        info = self.store.agents.set_disabled(agent_id, disabled)
        return agent_view(info)

    # -- suites -------------------------------------------------------------

    def list_suites(self) -> JSONObject:
        return {"items": [suite_view(s) for s in self.store.suites.list()]}

    def get_suite(self, suite_id: str, version: int | None = None) -> JSONObject:
        installed = self.store.suites.get(suite_id, version)
        return suite_view(installed, self.store.suites.versions(suite_id))

    # -- store only (operator) ---------------------------------------------

    def validate_suite(self, target: str) -> JSONObject:
        """Counts and digests only, for both splits (a path, or an installed id)."""
        if Path(target).exists():
            suite = load_suite(target, trusted=TrustStore(self.home).trusted)
        else:
            suite = load_installed(self.store, target, self.home)
        return {
            "id": suite.id,
            "version": suite.version,
            "capability": suite.capability,
            "valid": True,
            "public": {"cases": len(suite.public)},
            "holdout": {"cases": suite.holdout_count, **_pool(suite)},
            "digests": suite_digests(suite).to_json(),
        }

    def load_suite(self, suite_id: str) -> Any:
        """The active installed version as a loaded Suite (for `holon test SUITE-ID`)."""
        return load_installed(self.store, suite_id, self.home)


def _pool(suite: Suite) -> dict[str, Any]:
    """A pool's size and the epochs it holds (`holdout.cases` is then its subset)."""
    pool = suite.holdout_pool
    return {} if pool is None else {"pool": {"cases": pool.cases, "epochs": pool.epochs}}


class StoreEvals(EvalOps):
    """The eval operations with what the CLI's service interface adds (runs in this process)."""

    # EvalOps's constructor; the cache is set on first use (`reports`), None till then.
    _reports: ReportCache | None = None

    @property
    def reports(self) -> ReportCache:
        """The reports of done evals this process rendered, kept (evals.reports._cache);
        made on first use, as the report renderers are imported (a CLI start stays fast)."""
        if self._reports is None:
            from evals.reports import ReportCache

            self._reports = ReportCache()
        return self._reports

    def propose(self, agent_id: str, options: EvalOptions) -> Proposal:
        from evals import check_processes

        check_processes(options.processes, options.concurrency)  # before planning
        plan = self.plan(agent_id, options)
        return Proposal(agent_id, plan_view(plan), plan, processes=options.processes)

    def execute(self, proposal: Proposal, progress: Progress | None) -> JSONObject:
        return self.run(proposal.plan, progress, processes=proposal.processes)

    def report(self, eval_id: str, *, audience: str, form: str) -> str:
        return self.reports.report(
            self.store, eval_id, audience=audience, form=form, render=_renderers()[form]
        )

    def write_report(
        self, eval_id: str, *, audience: str, form: str, write: Callable[[str], object]
    ) -> None:
        """`report`'s text to `write` a piece at a time, never held whole (`holon evals
        report` on the store writes it to its file or stdout so)."""
        self.reports.write(self.store, eval_id, audience=audience, form=form, write=write)

    def prerender(self, eval_id: str) -> int:
        """Render a done eval's report into the store (and this process) for every
        audience, in the formats the console shows first: HTML (the eval page's frame)
        and JSON (its charts, the API). How many were rendered (none if kept already)."""
        from evals.reports import CHUNKS

        return self.reports.prerender(
            self.store, eval_id, {form: CHUNKS[form] for form in PRERENDERED}
        )

    def compare(
        self, base: str, candidate: str, *, audience: str, allow_mismatch: bool, form: str
    ) -> tuple[JSONObject, str]:
        from evals.reports import compare_evals, render_comparison

        comparison = compare_evals(
            self.store, base, candidate, audience=audience, allow_mismatch=allow_mismatch
        )
        return comparison, render_comparison(comparison, form)


# The formats of a report rendered as soon as its eval is done (StoreEvals.prerender).
PRERENDERED = ("html", "json")


def _renderers() -> dict[str, Callable[[dict[str, Any]], str]]:
    """Each report format's renderer (imported on first use: a CLI start stays fast)."""
    from evals.reports import RENDERERS

    return RENDERERS
