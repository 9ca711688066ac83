"""`holon doctor`: a deployment checked from one host, each problem with its fix.

It reads what every process sharing the store must agree on (docs/deploy.md):
the store reachable and at this holon's schema, the secret key present and the
one the store's signing key was encrypted with, the network policy, the public
URL of a shared store, this host's clock against the database's, and whether
running evals have a worker. It never changes the store (no upgrade, no key
made): a check that cannot run says why and what to fix first.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from gateway._network import NetworkPolicy
from gateway.settings import Settings
from records import KEY_RECIPE, Store, open_engine, open_store, schema_status
from schema.errors import HolonError
from schema.jsontext import JSONObject

__all__ = ["CLOCK_SKEW_FAIL_S", "CLOCK_SKEW_WARN_S", "Finding", "diagnose"]

Level = Literal["ok", "warn", "fail", "skipped"]
# Leases last 30 s or more (evals/_runner) and budget periods a day: a second of
# skew is noise, ten misjudge a lease's end.
CLOCK_SKEW_WARN_S = 2.0
CLOCK_SKEW_FAIL_S = 10.0
# A running eval this old with no live lease has no worker.
UNATTENDED_AFTER = timedelta(minutes=2)


@dataclass(frozen=True)
class Finding:
    check: str
    level: Level
    detail: str
    fix: str | None = None

    def to_json(self) -> JSONObject:
        return {"check": self.check, "level": self.level, "detail": self.detail, "fix": self.fix}


def diagnose(settings: Settings) -> list[Finding]:
    """Every check, in order; later ones are skipped when the store cannot be opened."""
    shared = settings.database_path is None
    found = [_network(settings, shared), _public_url(settings, shared)]
    schema = _schema(settings)
    found.append(schema)
    if schema.level != "ok":
        rest = "the store must be reachable and at this holon's schema first"
        found += [Finding(name, "skipped", rest) for name in ("secret key", "clock", "workers")]
        return found
    try:
        store = open_store(settings.database_url, secret_key=settings.resolve_secret_key())
    except HolonError as exc:  # raced: it moved between the two reads
        found.append(Finding("secret key", "fail", exc.message, exc.hint))
        return found
    try:
        found += [_key(store, shared), _clock(store), _workers(store)]
    finally:
        store.close()
    return found


def _network(settings: Settings, shared: bool) -> Finding:
    policy = NetworkPolicy.from_setting(settings.agent_networks)
    if policy.allow_all and shared:
        return Finding(
            "network policy",
            "warn",
            "HOLON_AGENT_NETWORKS=any on a shared store: an agent's endpoint may reach this "
            "network's private addresses (the database's included)",
            "set HOLON_AGENT_NETWORKS=public (the default) unless every agent is yours",
        )
    return Finding("network policy", "ok", f"HOLON_AGENT_NETWORKS={settings.agent_networks}")


def _public_url(settings: Settings, shared: bool) -> Finding:
    if settings.public_url is None and shared:
        return Finding(
            "public URL",
            "warn",
            "HOLON_PUBLIC_URL is not set: behind a proxy, A2A cards and the console's "
            "links name the address a gateway listens on, not the one callers use",
            "set HOLON_PUBLIC_URL to the https URL callers reach, the same on every gateway",
        )
    shown = settings.public_url or "not set (one host: the listening address is used)"
    return Finding("public URL", "ok", shown)


def _schema(settings: Settings) -> Finding:
    path = settings.database_path
    if path is not None and not path.exists():  # opening it would make it
        return Finding(
            "store",
            "warn",
            f"no embedded store at {path} yet: the first command creates it",
            "holon db upgrade (or any command) to create it",
        )
    try:
        engine = open_engine(settings.database_url)
    except HolonError as exc:
        return Finding("store", "fail", exc.message, exc.hint or "check HOLON_DATABASE_URL")
    try:
        status = schema_status(engine)
    except HolonError as exc:
        return Finding("store", "fail", exc.message, exc.hint or "check HOLON_DATABASE_URL")
    finally:
        engine.dispose()
    where = engine.url.render_as_string(hide_password=True)
    if status.current is None and settings.embedded:
        return Finding(
            "store",
            "warn",
            f"{where} is empty: the first command creates it",
            "holon db upgrade (or any command) to create it",
        )
    if not status.up_to_date and status.serves_this:
        return Finding(
            "store",
            "warn",
            f"{where} is at schema {status.current}, a release ahead of this holon "
            f"({status.head}), and still serves it (from {status.serves_from})",
            "upgrade holon on this host: a rolling upgrade is under way",
        )
    if not status.up_to_date:
        return Finding(
            "store",
            "fail",
            f"{where} is at schema {status.current or 'none'}, this holon needs {status.head}",
            "holon db upgrade (with every process of the old version stopped, or compatible)",
        )
    return Finding("store", "ok", f"{where} at schema {status.head}")


def _key(store: Store, shared: bool) -> Finding:
    try:
        store.keys.check_ready()
    except HolonError as exc:
        return Finding("secret key", "fail", exc.message, exc.hint or KEY_RECIPE)
    where = "HOLON_SECRET_KEY" if shared else "HOLON_SECRET_KEY or the key file under HOLON_HOME"
    return Finding(
        "secret key", "ok", f"{where}: set, and the one the store's records are signed with"
    )


def _clock(store: Store) -> Finding:
    skew = store.health.clock_skew_s()
    if skew is None:
        return Finding("clock", "ok", "embedded store: its clock is this host's")
    text = f"this host's clock is {skew:+.3f} s from the database's"
    if abs(skew) >= CLOCK_SKEW_FAIL_S:
        return Finding("clock", "fail", text, "synchronise this host's clock (NTP)")
    if abs(skew) >= CLOCK_SKEW_WARN_S:
        return Finding("clock", "warn", text, "synchronise this host's clock (NTP)")
    return Finding("clock", "ok", text)


def _workers(store: Store) -> Finding:
    stuck = store.health.unattended(older_than=UNATTENDED_AFTER)
    if not stuck:
        return Finding("workers", "ok", "every running eval has a worker, or none is running")
    listed = ", ".join(f"{u.eval_id} ({u.agent_id}, {u.cells_left} cells left)" for u in stuck)
    return Finding(
        "workers",
        "warn",
        f"running evals that no worker holds: {listed}",
        "start `holon worker` (or a gateway with eval workers), or `holon evals resume ID`",
    )
