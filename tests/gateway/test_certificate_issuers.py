"""Federation that trusts keys, not names (docs/certificates.md, "Issuers" and "Re-checking
revocation"), through the import operation on both backends: an issuer's keys are pinned
at its first import; a certificate under its name by another key is refused until an
operator rotates the pinned keys; an import without a revocation list is refused unless
allowed, then labelled and passed over by mandates; a re-check revokes what the issuer
revoked."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from gateway.mandates import Mandate
from gateway.mandates._decide import _accepted_record
from gateway.operations import (
    CERTIFICATES_IMPORT,
    CERTIFICATES_LIST,
    CERTIFICATES_RECHECK,
    ISSUERS_PIN,
    CertificateImport,
    IssuerPin,
    Nothing,
    Recheck,
)
from gateway.service import StoreService
from records import PAYLOAD_TYPE, Store, agent_identity, jwk_of, sign_envelope, utcnow
from records._certificates import key_id, signed_revocations, statement
from schema.errors import CertificateRejected, Conflict, Refused, UsageError
from schema.jsontext import dumps
from tests.records._documents import MANIFEST

ISSUER = "urn:holon:issuer:partner"
AGENT, VERSION = str(MANIFEST["id"]), str(MANIFEST["version"])


class Issuer:
    """Another issuer (or someone claiming its name): a key, and what it signs with it."""

    def __init__(self, name: str = ISSUER) -> None:
        self.name = name
        self.key = Ed25519PrivateKey.generate()
        self.kid = key_id(self.key.public_key())

    def jwks(self) -> dict[str, Any]:
        return {"issuer": self.name, "keys": [jwk_of(self.key.public_key())]}

    def certificate(self, cert_id: str, score: float) -> dict[str, Any]:
        now = utcnow()
        body = {
            "certificate_id": cert_id,
            "issuer": self.name,
            "issued_at": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "expires_at": (now + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "eval_id": "ev_partner",
            "evaluated_at": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "capabilities": ["ticket.classify"],
            "eval_score": score,
            "overfit": "ok",
            "suites": {},
        }
        signed = statement(
            subject_name=f"{AGENT}@{VERSION}", identity=agent_identity(MANIFEST), predicate=body
        )
        return sign_envelope(dumps(signed).encode(), PAYLOAD_TYPE, self.key, self.kid)

    def revocations(self, *revoked: str) -> dict[str, Any]:
        now = utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")
        entries = [{"certificate_id": c, "revoked_at": now, "reason": "withdrawn"} for c in revoked]
        return signed_revocations(self.name, now, entries, self.key, self.kid)


GENUINE = "crt_01M8S16TF620DHWN2EDYBJWQDT"
FORGED = "crt_01M8S16TF620DHWN2EDYBJWQDV"


@pytest.fixture
def service(store: Store, tmp_path: Path) -> StoreService:
    store.agents.register(MANIFEST)
    return StoreService(store, tmp_path)


def _import(
    service: StoreService, cert: Any, jwks: Any, revocations: Any = None, **more: Any
) -> dict[str, Any]:
    asked = CertificateImport(certificate=cert, jwks=jwks, revocations=revocations, **more)
    view: dict[str, Any] = service.call(CERTIFICATES_IMPORT, asked)["certificate"]
    return view


def _scores(service: StoreService) -> list[Decimal | None]:
    records = service.store.certificates.imported_records(AGENT, VERSION, MANIFEST, now=utcnow())
    return [r.eval_score for r in records]


def test_a_forged_certificate_under_a_pinned_issuers_name_is_refused(
    service: StoreService,
) -> None:
    partner, attacker = Issuer(), Issuer()  # the attacker's key set claims the partner's name
    _import(service, partner.certificate(GENUINE, 0.5), partner.jwks(), partner.revocations())
    forged = attacker.certificate(FORGED, 1.0)
    with pytest.raises(CertificateRejected) as caught:
        _import(service, forged, attacker.jwks(), attacker.revocations())
    assert caught.value.details["reason"] == "unpinned_key"
    assert caught.value.details["issuer"] == ISSUER
    assert caught.value.details["kid"] == attacker.kid
    assert ISSUER in caught.value.message and attacker.kid in caught.value.message
    # A key set holding both keys changes nothing: the pinned keys verify, not the given.
    both = {"issuer": ISSUER, "keys": [*partner.jwks()["keys"], *attacker.jwks()["keys"]]}
    with pytest.raises(CertificateRejected, match="pinned to other keys"):
        _import(service, forged, both, attacker.revocations())
    # The record a mandate reads is still the genuine one.
    assert _scores(service) == [Decimal("0.5")]
    # Nor can the attacker's revocation list, signed by its key, pass as the partner's.
    with pytest.raises(CertificateRejected) as listed:
        service.call(CERTIFICATES_RECHECK, Recheck(ISSUER, attacker.revocations(GENUINE)))
    assert listed.value.details["reason"] == "unknown_key"
    assert _scores(service) == [Decimal("0.5")]


def test_after_an_explicit_rotation_the_new_key_is_accepted(service: StoreService) -> None:
    partner, rotated = Issuer(), Issuer()
    _import(service, partner.certificate(GENUINE, 0.5), partner.jwks(), partner.revocations())
    # Registering other keys under a known name is refused without --rotate.
    with pytest.raises(Conflict, match="is pinned to keys"):
        service.call(ISSUERS_PIN, IssuerPin(jwks=rotated.jwks()))
    view = service.call(ISSUERS_PIN, IssuerPin(jwks=rotated.jwks(), rotate=True))
    assert view["kids"] == [rotated.kid]
    assert [e["action"] for e in view["history"]] == ["pinned at first import", "rotated"]
    assert view["history"][-1]["previous"] == [partner.kid]
    kept = _import(
        service, rotated.certificate(FORGED, 0.95), rotated.jwks(), rotated.revocations()
    )
    assert kept["certificate_id"] == FORGED and kept["revocation"] == "checked"
    # The old key is no longer pinned: what it signs now is refused.
    with pytest.raises(CertificateRejected, match="pinned to other keys"):
        _import(service, partner.certificate(GENUINE[:-1] + "X", 0.5), partner.jwks(), None,
                allow_unchecked_revocation=True)  # fmt: skip


def test_an_issuer_registered_first_takes_only_its_keys(service: StoreService) -> None:
    partner, attacker = Issuer(), Issuer()
    service.call(ISSUERS_PIN, IssuerPin(jwks=partner.jwks()))
    with pytest.raises(CertificateRejected, match="pinned to other keys"):
        _import(service, attacker.certificate(FORGED, 1.0), attacker.jwks(), attacker.revocations())
    assert _scores(service) == []
    # This store's own name is not another issuer's to pin.
    own = service.store.keys.jwks()
    with pytest.raises(Refused, match="this store's own issuer"):
        service.call(ISSUERS_PIN, IssuerPin(jwks=own))
    with pytest.raises(UsageError, match="names no issuer"):
        service.call(ISSUERS_PIN, IssuerPin(jwks={"keys": partner.jwks()["keys"]}))


def test_impersonating_this_stores_issuer_stays_refused(service: StoreService) -> None:
    impostor = Issuer(service.store.keys.issuer())
    with pytest.raises(CertificateRejected, match="pinned to other keys"):
        _import(service, impostor.certificate(FORGED, 1.0), impostor.jwks(), impostor.revocations())
    assert _scores(service) == []


def test_an_import_without_a_revocation_list_is_refused_unless_allowed(
    service: StoreService,
) -> None:
    partner = Issuer()
    cert = partner.certificate(GENUINE, 0.9)
    with pytest.raises(UsageError, match="no revocation list") as caught:
        _import(service, cert, partner.jwks())
    assert caught.value.details == {"path": "$.revocations"}
    assert _scores(service) == []
    view = _import(service, cert, partner.jwks(), allow_unchecked_revocation=True)
    assert view["revocation"] == "unchecked" and view["last_checked"] is None
    (listed,) = service.call(CERTIFICATES_LIST, Nothing())["items"]
    assert (listed["issuer"], listed["status"], listed["revocation"]) == (
        ISSUER,
        "valid",
        "unchecked",
    )
    (record,) = service.store.certificates.imported_records(AGENT, VERSION, MANIFEST, now=utcnow())
    assert record.revocation_unchecked and record.to_json()["revocation"] == "unchecked"
    # A mandate accepting the issuer passes it over, unless it accepts unchecked revocation.
    strict = Mandate(id="m", holder="bot", capabilities=("ticket.classify",),
                     max_cost_per_call_usd=Decimal("0.01"), accept_issuers=(ISSUER,))  # fmt: skip
    assert _accepted_record(strict, None, [record]) is None
    lenient = Mandate(**{**strict.__dict__, "accept_unchecked_revocation": True})
    assert _accepted_record(lenient, None, [record]) is record
    # A re-check with the issuer's list marks it checked: mandates read it again.
    rechecked = service.call(CERTIFICATES_RECHECK, Recheck(ISSUER, partner.revocations()))
    assert rechecked["valid"] == 1 and rechecked["revoked"] == []
    (again,) = service.store.certificates.imported_records(AGENT, VERSION, MANIFEST, now=utcnow())
    assert not again.revocation_unchecked
    assert _accepted_record(strict, None, [again]) is again


def test_a_certificate_its_issuer_revokes_after_import_stops_serving(
    service: StoreService,
) -> None:
    partner = Issuer()
    _import(service, partner.certificate(GENUINE, 0.9), partner.jwks(), partner.revocations())
    assert _scores(service) == [Decimal("0.9")]
    rechecked = service.call(CERTIFICATES_RECHECK, Recheck(ISSUER, partner.revocations(GENUINE)))
    assert rechecked["revoked"] == [GENUINE]
    assert _scores(service) == []
    (listed,) = service.call(CERTIFICATES_LIST, Nothing())["items"]
    assert listed["status"] == "revoked" and "withdrawn" in listed["revoked_reason"]
    (issuer,) = service.store.issuers.list()
    assert issuer["checked_at"] is not None and issuer["check_error"] is None
    # A list that does not verify revokes nothing and is noted on the issuer.
    tampered = partner.revocations()
    tampered["signatures"][0]["sig"] = "A" * 86 + "=="
    with pytest.raises(CertificateRejected):
        service.call(CERTIFICATES_RECHECK, Recheck(ISSUER, tampered))
    (issuer,) = service.store.issuers.list()
    assert "does not verify" in str(issuer["check_error"])


def test_the_commands_pin_import_list_and_recheck(tmp_path: Path) -> None:
    """`holon certificates issuers pin|list`, `import --allow-unchecked-revocation`, `list` and
    `recheck --revocations FILE` on the store, reading key sets and lists from files."""
    from schema.jsontext import dumps as text
    from tests.gateway._cli import CLI

    cli = CLI(tmp_path / "home")
    (tmp_path / "agent.json").write_text(text(MANIFEST))
    registered = cli("agents", "register", str(tmp_path / "agent.json"))
    assert registered.code == 0, registered.stderr
    partner, attacker = Issuer(), Issuer()
    files = {
        "jwks": partner.jwks(),
        "evil": attacker.jwks(),
        "cert": partner.certificate(GENUINE, 0.9),
        "forged": attacker.certificate(FORGED, 1.0),
        "none": partner.revocations(),
        "revoked": partner.revocations(GENUINE),
    }
    for name, value in files.items():
        (tmp_path / f"{name}.json").write_text(text(value))

    def path(name: str) -> str:
        return str(tmp_path / f"{name}.json")

    pinned = cli("certificates", "issuers", "pin", "--jwks", path("jwks"))
    assert pinned.code == 0 and f"pinned to keys {partner.kid}" in pinned.stdout
    refused = cli("certificates", "issuers", "pin", "--jwks", path("evil"))
    assert refused.code == 2 and "--rotate" in refused.stderr
    forged = cli("certificates", "import", path("forged"), "--issuer-jwks", path("evil"))
    assert forged.code == 1 and attacker.kid in forged.stderr and ISSUER in forged.stderr
    unchecked = cli("certificates", "import", path("cert"), "--issuer-jwks", path("jwks"))
    assert unchecked.code == 2 and "--allow-unchecked-revocation" in unchecked.stderr
    allowed = cli(
        "certificates", "import", path("cert"), "--issuer-jwks", path("jwks"),
        "--allow-unchecked-revocation",
    )  # fmt: skip
    assert allowed.code == 0 and "revocation unchecked" in allowed.stderr
    listed = cli("certificates", "list")
    assert GENUINE in listed.stdout and "unchecked" in listed.stdout
    rechecked = cli("certificates", "recheck", ISSUER, "--revocations", path("revoked"))
    assert rechecked.code == 0 and f"revoked here: {GENUINE}" in rechecked.stdout
    (row,) = cli("certificates", "list", "--json").json()["items"]
    assert row["status"] == "revoked" and row["revocation"] == "checked"
    issuers = cli("certificates", "issuers", "list").stdout
    assert ISSUER in issuers and partner.kid in issuers
    # No URL is known for a list imported from files: the command says what to give.
    again = cli("certificates", "recheck", ISSUER)
    assert again.code == 2 and "--revocations" in again.stderr
