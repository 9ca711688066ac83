"""A real gateway on 127.0.0.1 over a real store, with a tiny suite and the triage agent."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import event

from agents import load_manifest
from evals.suites import install_suite
from gateway.server import SERVER_OPTIONS, create_app
from gateway.settings import Settings
from records import Store, new_key, open_store
from tests._servers import serve
from tests.evals.suites._make import tiny_suite

ROOT = Path(__file__).resolve().parents[3]
TRIAGE = ROOT / "examples" / "agents" / "acme-ticket-triage.yaml"
ROLES = ("operator", "org:acme", "org:other", "caller:finance-bot")
# A well-formed value for each path parameter of the route table (route tests fill
# paths with these; the API fuzz campaign draws them beside hostile strings).
PATH_VALUES = {
    "org": "acme",
    "name": "ticket-triage",
    "suite": "tiny",
    "eval": "ev_01NOTANEVAL0000000000000000",
    "base": "ev_01NOTANEVAL0000000000000000",
    "candidate": "ev_01NOTANEVAL0000000000000001",
    "mandate": "no-such-mandate",
    "capability": "ticket.classify",
    "token": "tok_01NOTATOKEN00000000000000",
}


def fill_path(template: str) -> str:
    """`template` (a route's path, `{name}` parameters) with PATH_VALUES."""
    for key, value in PATH_VALUES.items():
        template = template.replace("{" + key + "}", value)
    return template


@dataclass
class Gateway:
    url: str
    store: Store
    tokens: dict[str, str]
    home: Path
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=30))

    def call(self, method: str, path: str, role: str | None = None, **kw: Any) -> httpx.Response:
        headers = dict(kw.pop("headers", {}) or {})
        if role is not None:
            headers["Authorization"] = f"Bearer {self.tokens[role]}"
        return self.http.request(method, self.url + path, headers=headers, **kw)

    def token(self, role: str) -> str:
        if role not in self.tokens:
            self.tokens[role] = self.store.tokens.create(role)[1]
        return self.tokens[role]

    def evaluate(self, agent_id: str) -> dict[str, Any]:
        """Start an eval over the API and wait for the gateway's workers to finish it."""
        started = self.call("POST", "/v1/evals", "operator", json={"agent": agent_id})
        assert started.status_code == 201, started.text
        eval_id = started.json()["eval"]["id"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            status = self.call("GET", f"/v1/evals/{eval_id}", "operator").json()
            if status["status"] != "running":
                assert status["status"] == "done", status
                self._wait_for_prerender(eval_id, deadline)
                return dict(status)
            time.sleep(0.05)
        raise AssertionError(f"eval {eval_id} did not finish")

    def _wait_for_prerender(self, eval_id: str, deadline: float) -> None:
        """The gateway renders a done eval's reports ahead, in the background, reading the
        store as it does (gateway.server._app._EvalWorkers): wait for those (HTML and
        JSON, author and operator), so that what a test counts next is its own work."""
        from evals.reports import AUDIENCES
        from gateway.service._store import PRERENDERED

        while self.store.eval_reports.count(eval_id) < len(AUDIENCES) * len(PRERENDERED):
            if time.monotonic() > deadline:
                raise AssertionError(f"eval {eval_id}'s reports were not rendered ahead")
            time.sleep(0.02)


def install_tiny(
    store: Store,
    root: Path,
    *,
    holdout_wrong: int = 0,
    cases: int = 6,
    suite_yaml: str | None = None,
) -> None:
    """The tiny ticket.classify suite; `holdout_wrong` holdout cases expect a label no one gives."""
    made = tiny_suite(
        root,
        cases,
        holdout_wrong=holdout_wrong,
        **({"suite_yaml": suite_yaml} if suite_yaml else {}),
    )
    install_suite(store, made)


def register_triage(store: Store, agent_id: str = "acme/ticket-triage", **changes: Any) -> str:
    data = load_manifest(TRIAGE).to_json()
    data.update(id=agent_id, **changes)
    store.agents.register(data)
    return agent_id


def gateway_settings(home: Path, env: dict[str, str] | None = None) -> Settings:
    """A test gateway's settings: no examples, any agent network, no probes, no canaries."""
    return Settings.from_env(
        {
            "HOLON_HOME": str(home),
            "HOLON_EXAMPLES": "off",
            "HOLON_AGENT_NETWORKS": "any",
            "HOLON_PROBE_INTERVAL_S": "0",
            # Canaries would call agents at random among a test's calls: a test that
            # wants them turns them on (tests/gateway/server/test_canaries.py).
            "HOLON_CANARY_SHARE": "0",
            "HOLON_CANARY_FLOOR": "0",
            **(env or {}),
        }
    )


@contextmanager
def running_gateway(
    store: Store,
    home: Path,
    env: dict[str, str] | None = None,
    *,
    settings_changes: dict[str, Any] | None = None,
    **options: Any,
) -> Iterator[Gateway]:
    """`settings_changes`: settings no variable can say (a probe interval under a second)."""
    settings = gateway_settings(home, env)
    settings = dataclasses.replace(settings, **(settings_changes or {}))
    app = create_app(settings, store=store, **{"cache_ttl_s": 0.0, **options})
    tokens = {role: store.tokens.create(role)[1] for role in ROLES}
    with serve(app, **SERVER_OPTIONS) as url:  # as `holon gateway serve` runs it
        gateway = Gateway(url, store, tokens, home)
        try:
            yield gateway
        finally:
            gateway.http.close()


@contextmanager
def tiny_gateway(
    root: Path,
    env: dict[str, str] | None = None,
    *,
    holdout_wrong: int = 0,
    grant: bool = False,
    **options: Any,
) -> Iterator[Gateway]:
    """A gateway over a fresh embedded store under `root` holding the tiny suite and the
    triage agent (and, with `grant`, finance-bot's `mandate()`): a test module's world,
    shared by its tests (a module-scoped fixture). `options` as for running_gateway."""
    store = open_store(f"sqlite:///{root / 'holon.db'}", secret_key=new_key(), auto_upgrade=True)
    try:
        install_tiny(store, root, holdout_wrong=holdout_wrong)
        register_triage(store)
        if grant:
            store.mandates.grant(mandate())
        with running_gateway(store, root / "home", env, **options) as gateway:
            yield gateway
    finally:
        store.close()


def mandate(**fields: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "schema_version": 1,
        "id": "finance-tickets",
        "holder": "finance-bot",
        "capabilities": ["ticket.classify"],
        "max_cost_per_call_usd": "0.01",
    }
    document.update(fields)
    return document


@contextmanager
def statements(store: Store, matches: Callable[[str], bool]) -> Iterator[list[str]]:
    """Every statement the store's engine sends its driver that `matches`, in order."""
    seen: list[str] = []

    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if matches(statement):
            seen.append(statement)

    event.listen(store.engine, "before_cursor_execute", before)
    try:
        yield seen
    finally:
        event.remove(store.engine, "before_cursor_execute", before)
