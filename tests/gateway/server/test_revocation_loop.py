"""The gateway re-fetches other issuers' revocation lists on a schedule (docs/certificates.md,
"Revocation of imports"): a certificate the issuer revokes after its import stops being
honoured; an issuer whose list cannot be had is the loop's failure, noted on the issuer,
and the loop goes on."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from gateway._loops import Loop
from gateway.operations import CERTIFICATES_IMPORT, CertificateImport
from gateway.server._revocations import recheck_forever, recheck_issuer
from gateway.service import StoreService
from gateway.web import Shared
from records import Store, utcnow
from schema.errors import EnvironmentFault
from tests._servers import serve
from tests.gateway.test_certificate_issuers import AGENT, GENUINE, ISSUER, VERSION, Issuer
from tests.records._documents import MANIFEST


def _served(documents: dict[str, Any]) -> Starlette:
    async def revocations(request: Any) -> JSONResponse:
        return JSONResponse(documents["list"])

    return Starlette(routes=[Route("/.well-known/holon/revocations.json", revocations)])


def _serving(store: Store) -> int:
    return len(store.certificates.imported_records(AGENT, VERSION, MANIFEST, now=utcnow()))


def test_a_certificate_revoked_after_import_stops_serving(store: Store, tmp_path: Path) -> None:
    store.agents.register(MANIFEST)
    partner = Issuer()
    documents = {"list": partner.revocations()}
    with serve(_served(documents)) as url:
        list_url = url + "/.well-known/holon/revocations.json"
        asked = CertificateImport(
            certificate=partner.certificate(GENUINE, 0.9),
            jwks=partner.jwks(),
            revocations=partner.revocations(),
            revocations_url=list_url,
        )
        StoreService(store, tmp_path).call(CERTIFICATES_IMPORT, asked)
        assert store.issuers.list()[0]["revocations_url"] == list_url
        assert recheck_issuer(store, ISSUER, list_url)["revoked"] == []
        assert _serving(store) == 1
        documents["list"] = partner.revocations(GENUINE)  # the issuer revokes it
        assert recheck_issuer(store, ISSUER, list_url)["revoked"] == [GENUINE]
        assert _serving(store) == 0
    # Its server gone, the list cannot be had: said on the issuer, nothing else changes.
    with pytest.raises(EnvironmentFault, match="cannot fetch"):
        recheck_issuer(store, ISSUER, list_url)
    assert "cannot fetch" in str(store.issuers.list()[0]["check_error"])


def test_the_loop_rechecks_every_issuer_and_survives_one_that_fails(
    store: Store, tmp_path: Path
) -> None:
    store.agents.register(MANIFEST)
    partner, other = Issuer(), Issuer("urn:holon:issuer:gone")
    documents = {"list": partner.revocations(GENUINE)}
    service = StoreService(store, tmp_path)
    # An issuer listed first whose list is at an address nothing answers.
    service.call(
        CERTIFICATES_IMPORT,
        CertificateImport(
            certificate=other.certificate("crt_01M8S16TF620DHWN2EDYBJWQD0", 0.9),
            jwks=other.jwks(),
            revocations=other.revocations(),
            revocations_url="http://127.0.0.1:9/.well-known/holon/revocations.json",
        ),
    )
    with serve(_served(documents)) as url:
        service.call(
            CERTIFICATES_IMPORT,
            CertificateImport(
                certificate=partner.certificate(GENUINE, 0.9),
                jwks=partner.jwks(),
                revocations=partner.revocations(),
                revocations_url=url + "/.well-known/holon/revocations.json",
            ),
        )
        loop = Loop("revocations", stale_after_s=60)

        async def run(fn: Any, *args: Any) -> Any:
            return await asyncio.to_thread(fn, *args)

        shared = cast(Shared, SimpleNamespace(store=store, run=run))

        async def one_pass() -> None:
            task = asyncio.create_task(recheck_forever(shared, 0.01, loop))
            for _ in range(500):
                await asyncio.sleep(0.02)
                if loop.state().failures and loop.state().last_success is not None:
                    if store.issuers.get(ISSUER)["checked_at"] is not None:
                        break
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(one_pass())
    state = loop.state()
    assert state.failures >= 1 and state.last_success is not None
    # The partner's revocation was honoured although the other issuer failed first.
    names = [c["certificate_id"] for c in store.certificates.list() if c["revoked_at"]]
    assert names == [GENUINE]
    assert store.issuers.get("urn:holon:issuer:gone")["check_error"] is not None
