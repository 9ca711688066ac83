"""`holon records show` of an agent whose record came from another issuer's certificate
(`holon certificates import`): shown as imported, with its issuer, when it was imported,
its score, whether its revocation list was checked and its status; this store's own
record first when there is one."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from gateway.operations import CERTIFICATES_RECHECK, RECORDS_SHOW, AgentRef, Recheck
from gateway.service import StoreService
from gateway.web._auth import Bearer
from records import Store, eval_id, utcnow
from schema import make_validator
from schema.errors import Forbidden, NotFound
from tests.gateway._cli import CLI
from tests.gateway.server._gateway import running_gateway
from tests.gateway.test_certificate_issuers import (
    AGENT,
    GENUINE,
    ISSUER,
    VERSION,
    Issuer,
    _import,
)
from tests.records._documents import MANIFEST


@pytest.fixture
def service(store: Store, tmp_path: Path) -> StoreService:
    """The certified agent registered here at the certified version."""
    store.agents.register(MANIFEST)
    return StoreService(store, tmp_path)


def _show(service: StoreService) -> dict[str, Any]:
    return service.call(RECORDS_SHOW, AgentRef(AGENT))


def _cli(store_url: str, tmp_path: Path) -> CLI:
    return CLI(tmp_path / "cli-home", HOLON_DATABASE_URL=store_url)


def test_an_imported_record_is_shown_as_imported(
    service: StoreService, store_url: str, tmp_path: Path
) -> None:
    partner = Issuer()
    _import(service, partner.certificate(GENUINE, 0.5), partner.jwks(), partner.revocations())
    view = _show(service)
    assert (view["agent"], view["agent_version"]) == (AGENT, VERSION)
    assert view["issuer"] == ISSUER and "revocation" not in view  # checked: no label
    assert view["eval_score"] == Decimal("0.5") and view["eval_id"] == "ev_partner"
    (kept,) = view["imported"]
    assert kept["issuer"] == ISSUER and kept["certificate_id"] == GENUINE
    assert (kept["status"], kept["revocation"]) == ("active", "checked")
    assert kept["eval_score"] == Decimal("0.5") and kept["imported_at"].endswith("Z")
    assert kept["last_checked"] is not None and kept["revoked_reason"] is None
    assert RECORDS_SHOW.response is not None
    assert [e.message for e in make_validator(RECORDS_SHOW.response()).iter_errors(view)] == []
    shown = _cli(store_url, tmp_path)("records", "show", AGENT)
    assert shown.code == 0, shown.stderr
    assert f"issuer:        {ISSUER} (an imported record: not evaluated here)" in shown.stdout
    line = next(x for x in shown.stdout.splitlines() if x.startswith("imported:"))
    assert f"{ISSUER}: eval_score 0.5, imported {kept['imported_at']}, active" in line
    assert f"revocation checked {kept['last_checked']}" in line
    assert "not been evaluated" not in shown.stdout + shown.stderr


def test_an_unchecked_import_says_revocation_unchecked(
    service: StoreService, store_url: str, tmp_path: Path
) -> None:
    partner = Issuer()
    cert = partner.certificate(GENUINE, 0.75)
    _import(service, cert, partner.jwks(), allow_unchecked_revocation=True)
    view = _show(service)
    assert view["revocation"] == "unchecked"
    (kept,) = view["imported"]
    assert (kept["revocation"], kept["last_checked"]) == ("unchecked", None)
    shown = _cli(store_url, tmp_path)("records", "show", AGENT)
    assert "active, revocation unchecked" in shown.stdout
    as_json = _cli(store_url, tmp_path)("records", "show", AGENT, "--json").json()
    assert as_json["imported"][0]["revocation"] == "unchecked"


def test_a_revoked_import_is_shown_revoked(
    service: StoreService, store_url: str, tmp_path: Path
) -> None:
    partner = Issuer()
    _import(service, partner.certificate(GENUINE, 0.5), partner.jwks(), partner.revocations())
    service.call(CERTIFICATES_RECHECK, Recheck(ISSUER, partner.revocations(GENUINE)))
    (kept,) = _show(service)["imported"]
    assert kept["status"] == "revoked" and "revoked by its issuer" in kept["revoked_reason"]
    # Nothing a mandate relies on any more: the record it reads is gone, the view says why.
    assert service.store.certificates.imported_records(AGENT, VERSION, MANIFEST, now=_now()) == []
    shown = _cli(store_url, tmp_path)("records", "show", AGENT)
    assert "eval_score 0.5" in shown.stdout and ", revoked, " in shown.stdout


def test_this_stores_record_comes_first(service: StoreService) -> None:
    partner = Issuer()
    _import(service, partner.certificate(GENUINE, 0.5), partner.jwks(), partner.revocations())
    store = service.store
    (imported,) = store.certificates.imported_records(AGENT, VERSION, MANIFEST, now=_now())
    local = replace(imported, issuer=None, revocation=None, certificate_id=None)
    run = _local_record(store, replace(local, eval_score=Decimal("0.9")))
    view = _show(service)
    assert view["eval_id"] == run and "issuer" not in view
    assert view["eval_score"] == Decimal("0.9")
    assert [k["issuer"] for k in view["imported"]] == [ISSUER]  # listed after it


def test_an_import_of_another_version_is_not_this_versions_record(
    service: StoreService,
) -> None:
    """A new registration makes the import stop applying (it certifies another
    manifest): the agent is not evaluated, and nothing imported is listed for it."""
    partner = Issuer()
    _import(service, partner.certificate(GENUINE, 0.5), partner.jwks(), partner.revocations())
    service.store.agents.register({**MANIFEST, "version": "2.0.0"})
    with pytest.raises(NotFound, match="has not been evaluated"):
        _show(service)


def test_an_author_reads_the_imported_record_of_its_own_agent_only(
    service: StoreService,
) -> None:
    partner = Issuer()
    _import(service, partner.certificate(GENUINE, 0.5), partner.jwks(), partner.revocations())
    view = _show(service)
    present, narrow = RECORDS_SHOW.present, RECORDS_SHOW.narrow
    assert present is not None and narrow is not None
    shown = present(Bearer("org:acme", "tok_1"), AgentRef(AGENT), view, service)
    assert shown["imported"] == view["imported"] and shown["issuer"] == ISSUER
    with pytest.raises(Forbidden):
        narrow(Bearer("org:other", "tok_2"), AgentRef(AGENT))


def _now() -> datetime:
    return utcnow()


def _local_record(store: Store, record: Any) -> str:
    """A record of this store's own for the agent's version: an eval finished with it."""
    run = eval_id()
    store.evals.create(
        eval_id=run,
        agent_id=AGENT,
        agent_version=VERSION,
        plan={"agent": AGENT, "agent_version": VERSION, "suites": []},
        plan_digest="0" * 64,
        full_plan=True,
        cells=[],
    )
    local = replace(record, eval_id=run)
    store.evals.finish(
        run,
        result={"record": local.to_json(), "summary": {}, "meets_thresholds": True},
        record=local,
    )
    return run


def test_the_http_view_shows_the_import_to_its_org_and_the_operator_only(
    service: StoreService, tmp_path: Path
) -> None:
    partner = Issuer()
    _import(service, partner.certificate(GENUINE, 0.5), partner.jwks(), partner.revocations())
    path = f"/v1/records/{AGENT}"
    with running_gateway(service.store, tmp_path / "gw", eval_workers=0) as gw:
        for role in ("operator", "org:acme", "caller:finance-bot"):
            answer = gw.call("GET", path, role)
            assert answer.status_code == 200, (role, answer.text)
            body = answer.json()
            assert body["issuer"] == ISSUER and body["imported"][0]["status"] == "active"
        other = gw.call("GET", path, "org:other")
        assert other.status_code == 403 and ISSUER not in other.text
