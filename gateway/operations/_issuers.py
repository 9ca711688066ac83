"""The operations over other issuers and their imported certificates (docs/certificates.md,
"Issuers: a name bound to keys" and "Revocation of imports"), each declared once (see _declare.py).

`holon certificates issuers pin` and `holon certificates recheck` are commands of
their own that run these operations: they read a key set or revocation list from
a file or URL first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gateway._roles import OPERATOR
from gateway.operations._certificates import JWKS
from gateway.operations._checks import flag, given, text, url
from gateway.operations._declare import (
    Cli,
    Column,
    Operation,
    Table,
    key,
    param,
    view,
)
from gateway.operations._narrow import by_bearer, doer
from gateway.operations._tokens import Nothing
from schema.jsontext import JSONObject

if TYPE_CHECKING:
    from gateway.service import StoreService

MAX_ISSUER_CHARS = 200  # records.MAX_ISSUER_CHARS, spelled out: the CLI's parser loads no store


def _status(view: JSONObject) -> str:
    if view["revoked_at"] is not None:
        return "revoked"
    if view["expired"]:
        return "expired"
    return "valid"


# -- certificates.list ---------------------------------------------------------------


def _list(service: StoreService, _: Nothing) -> JSONObject:
    from records import utc_text, utcnow

    now = utc_text(utcnow())
    items = [{**c, "expired": c["expires_at"] <= now} for c in service.store.certificates.list()]
    return {"items": [{**c, "status": _status(c)} for c in items]}


CERTIFICATES_LIST = Operation(
    name="certificates.list",
    method="GET",
    path="/v1/certificates",
    roles=OPERATOR,
    request=Nothing,
    summary="the certificates on this store, its own and imported ones: issuer, status, "
    "revocation checked or not, last check",
    run=_list,
    response=view("certificates"),
    cli=Cli(
        help="the certificates here: this store's and imported ones, with their status",
        description="List the certificates on this store, newest first (at most 1000): "
        "each with its issuer, its status (valid, expired, revoked) and, for an imported "
        "one, whether the issuer's revocation list was checked and when last.",
        render=Table(
            (
                Column("certificate", key("certificate_id")),
                Column("agent", key("agent")),
                Column("version", key("agent_version")),
                Column("issuer", key("issuer")),
                Column("status", key("status")),
                Column("revocation", key("revocation")),
                Column("last check", key("last_checked")),
            ),
            empty="no certificates",
        ),
    ),
)


# -- certificates.issuers ------------------------------------------------------------


def _issuers(service: StoreService, _: Nothing) -> JSONObject:
    return {"items": service.store.issuers.list()}


ISSUERS_LIST = Operation(
    name="certificates.issuers",
    method="GET",
    path="/v1/certificates/issuers",
    roles=OPERATOR,
    request=Nothing,
    summary="the other issuers known here, each with the keys pinned for it and its "
    "revocation list's last check",
    run=_issuers,
    response=view("issuers"),
    cli=Cli(
        help="the other issuers known here and the keys pinned for each",
        description="List the issuers whose certificates this store takes: each bound to "
        "the keys pinned at its first import (or registration), changed only by `holon "
        "certificates issuers pin --rotate`; with where its revocation list is "
        "published and when it was last read.",
        render=Table(
            (
                Column("issuer", key("issuer")),
                Column("keys", lambda v: ", ".join(v["kids"])),
                Column("revocations", key("revocations_url")),
                Column("last check", key("checked_at")),
                Column("check error", key("check_error")),
            ),
            empty="no issuers",
        ),
    ),
)


# -- certificates.issuers.pin --------------------------------------------------------


@dataclass(frozen=True)
class IssuerPin:
    jwks: Any = given(
        "the issuer's key set, which names it (its 'issuer' member)", JWKS, required=True
    )
    rotate: bool = flag("replace the keys pinned for a known issuer (refused without it)")
    revocations_url: str | None = url("where the issuer publishes its revocation list")
    pinned_by: str | None = param(
        help="the token's id (on the store: cli:LOGIN)", where="bearer", flag=""
    )


def _pin(service: StoreService, asked: IssuerPin) -> JSONObject:
    return service.store.issuers.pin(
        asked.jwks,
        rotate=asked.rotate,
        revocations_url=asked.revocations_url,
        by=doer(asked.pinned_by),
    )


ISSUERS_PIN = Operation(
    name="certificates.issuers.pin",
    method="POST",
    path="/v1/certificates/issuers",
    roles=OPERATOR,
    request=IssuerPin,
    summary="register an issuer by its key set (pinning its keys), or rotate a known "
    "issuer's pinned keys on purpose (rotate: true); each change is kept in its history",
    run=_pin,
    response=view("issuer"),
    statuses=(409, 422),
    narrow=by_bearer,
    cli=None,  # `holon certificates issuers pin --jwks FILE|URL [--rotate]`: it reads them
)


# -- certificates.recheck ------------------------------------------------------------


@dataclass(frozen=True)
class Recheck:
    issuer: str = param(
        required=True,
        help="the issuer whose imported certificates to re-check",
        where="body",
        check=text(f"an issuer name (1 to {MAX_ISSUER_CHARS} characters)", MAX_ISSUER_CHARS),
    )
    revocations: Any = given(
        "the issuer's signed revocation list (verified with its pinned keys)",
        {"type": "object"},
        required=True,
    )


def _recheck(service: StoreService, asked: Recheck) -> JSONObject:
    return service.store.issuers.recheck(asked.issuer, asked.revocations)


CERTIFICATES_RECHECK = Operation(
    name="certificates.recheck",
    method="POST",
    path="/v1/certificates/recheck",
    roles=OPERATOR,
    request=Recheck,
    summary="read an issuer's revocation list against its imported certificates: the "
    "listed ones are revoked here, the others marked checked",
    run=_recheck,
    response=view("recheck"),
    statuses=(404, 422),
    cli=None,  # `holon certificates recheck ISSUER [--revocations FILE|URL]`: it reads it
)


def rechecked_lines(view: JSONObject) -> list[str]:
    revoked = ", ".join(view["revoked"]) or "none"
    return [
        f"issuer {view['issuer']} re-checked at {view['checked_at']}: {view['valid']} "
        f"imported certificate(s) still valid; revoked here: {revoked}"
    ]
