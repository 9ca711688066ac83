"""The certificate pages (docs/console.md, "Certificates"): the operator's list with
imported ones labelled, a certificate verified as `holon certificates verify` verifies it,
reachable from the agent page, and the form that verifies a pasted certificate and keeps
nothing; each role reads what the API gives it, and a form without its CSRF token or over
its bound is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.operations import CERTIFICATES_IMPORT, CertificateImport
from gateway.service import StoreService
from records import Store
from schema.jsontext import dumps
from tests.gateway.console._inproc import Console
from tests.gateway.console._runs import run_triage, triage_console
from tests.gateway.server._gateway import register_triage
from tests.gateway.test_certificate_issuers import Issuer
from tests.records._documents import MANIFEST

TRIAGE = "acme/ticket-triage"
OTHER = "other/ticket-triage"
STRANGERS = ("org:other", "caller:finance-bot")


@pytest.fixture
def live(sqlite_store: Store, tmp_path: Path) -> Iterator[Console]:
    with triage_console(sqlite_store, tmp_path) as built:
        yield built


def _certified(store: Store, home: Path, agent: str = TRIAGE) -> str:
    cert_id = run_triage(store, home, agent).get("certificate_id")
    assert isinstance(cert_id, str)
    return cert_id


def _envelope(store: Store, cert_id: str) -> dict[str, Any]:
    envelope: dict[str, Any] = store.certificates.find(cert_id)["envelope"]
    return envelope


def test_the_operator_lists_certificates_and_reaches_one_in_two_links(
    live: Console, tmp_path: Path
) -> None:
    cert_id = _certified(live.store, tmp_path / "home")
    listed = live.get("/ui/certificates", "operator")
    assert listed.status_code == 200 and cert_id in listed.text
    assert 'href="/.well-known/jwks.json"' in listed.text
    assert 'href="/.well-known/holon/revocations.json"' in listed.text
    # /ui/ -> the agent page -> the certificate.
    assert f'href="/ui/agents/{TRIAGE}"' in live.get("/ui/", "operator").text
    agent = live.get(f"/ui/agents/{TRIAGE}", "operator")
    assert f'href="/ui/certificates/{cert_id}"' in agent.text
    page = live.get(f"/ui/certificates/{cert_id}", "operator")
    assert page.status_code == 200 and "Verifies." in page.text and TRIAGE in page.text


def test_an_imported_certificate_unchecked_is_labelled(live: Console, tmp_path: Path) -> None:
    partner = Issuer()
    cert = partner.certificate("crt_01M8S16TF620DHWN2EDYBJWQDT", 0.9)
    live.store.agents.register(MANIFEST)
    asked = CertificateImport(
        certificate=cert, jwks=partner.jwks(), allow_unchecked_revocation=True
    )
    StoreService(live.store, tmp_path).call(CERTIFICATES_IMPORT, asked)
    listed = live.get("/ui/certificates", "operator").text
    assert "crt_01M8S16TF620DHWN2EDYBJWQDT" in listed and "revocation unchecked" in listed
    page = live.get("/ui/certificates/crt_01M8S16TF620DHWN2EDYBJWQDT", "operator")
    assert page.status_code == 200
    assert "Verifies." in page.text and "revocation unchecked" in page.text


def test_roles_read_what_the_api_gives_them(live: Console, tmp_path: Path) -> None:
    cert_id = _certified(live.store, tmp_path / "home")
    for role in ("org:acme", *STRANGERS):
        assert live.get("/ui/certificates", role).status_code == 403, role
        # The current record's certificate is any token's (GET .../certificate).
        page = live.get(f"/ui/certificates/{cert_id}", role)
        assert page.status_code == 200 and "Verifies." in page.text, role
    assert live.get("/ui/certificates", None).status_code == 303  # sign in first
    # A new registration revokes it: the operator still reads it, the others do not.
    register_triage(live.store, TRIAGE, version="9.9.9")
    revoked = live.get(f"/ui/certificates/{cert_id}", "operator")
    assert revoked.status_code == 200 and "Does not verify" in revoked.text
    for role in ("org:acme", *STRANGERS):
        assert live.get(f"/ui/certificates/{cert_id}", role).status_code == 404, role
    unknown = live.get("/ui/certificates/crt_nothing", "operator")
    assert unknown.status_code == 404


def test_the_form_verifies_a_pasted_certificate_and_keeps_nothing(
    live: Console, tmp_path: Path
) -> None:
    cert_id = _certified(live.store, tmp_path / "home")
    text = dumps(_envelope(live.store, cert_id))
    before = live.store.certificates.list()
    for role in ("operator", *STRANGERS):
        assert live.get("/ui/certificates/verify", role).status_code == 200
        done = live.post("/ui/certificates/verify", role, {"certificate": text})
        assert done.status_code == 200 and "Verifies." in done.text, role
    assert live.store.certificates.list() == before
    tampered = text.replace('"sig":"', '"sig":"AAAA', 1)
    refused = live.post("/ui/certificates/verify", "operator", {"certificate": tampered})
    assert refused.status_code == 200 and "Does not verify" in refused.text
    # Another issuer's key set without its revocation list: verified, revocation unchecked.
    partner = Issuer()
    theirs = dumps(partner.certificate("crt_01M8S16TF620DHWN2EDYBJWQDT", 0.5))
    other = live.post(
        "/ui/certificates/verify",
        "operator",
        {"certificate": theirs, "jwks": dumps(partner.jwks())},
    )
    assert "Verifies." in other.text and "revocation unchecked" in other.text


def test_the_form_refuses_bad_input(live: Console) -> None:
    path = "/ui/certificates/verify"
    hostile = '{"payload": "<script>alert(1)</script>"}'
    no_csrf = live.post(path, "operator", {"certificate": hostile}, csrf=False)
    assert no_csrf.status_code == 403
    assert live.post(path, "operator", {"certificate": "{not json"}).status_code == 400
    assert live.post(path, "operator", {"certificate": ""}).status_code == 400
    shown = live.post(path, "operator", {"certificate": hostile})
    assert shown.status_code == 200 and "<script>" not in shown.text
    assert "Does not verify" in shown.text
    oversize = live.post(path, "operator", {"certificate": "x" * (65 * 1024)})
    assert oversize.status_code == 413
