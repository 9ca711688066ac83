"""`holon certificates verify|import|revocations` and `holon records certificate`
(docs/certificates.md).

`verify` needs no store when it is given the issuer's key set (`--jwks FILE|URL`):
a third party checks a certificate offline with the files alone. Key sets,
revocation lists and cards named by URL are fetched with a bounded size and
time, without redirects.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from gateway._fetch import fetch_bounded
from gateway.cli._app import command_group, common_options, gateway_options
from gateway.cli._commands.agents import agent_id
from gateway.cli._context import Context
from gateway.cli._operations import command, runs
from gateway.operations import (
    CERTIFICATES_IMPORT,
    CERTIFICATES_LIST,
    CERTIFICATES_RECHECK,
    CERTIFICATES_REVOCATIONS,
    CERTIFICATES_SHOW,
    ISSUERS_LIST,
    ISSUERS_PIN,
    KEYS_JWKS,
    AgentRef,
    CertificateImport,
    IssuerPin,
    Nothing,
    Recheck,
    certificate_verdict,
    rechecked_lines,
)
from schema.errors import InputError, Location, UsageError

REVOCATIONS_PATH = "/.well-known/holon/revocations.json"
FETCH_TIMEOUT_S = 10.0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    both = [common_options(), gateway_options()]
    group = command_group(sub, "certificates", "verify and import signed agent certificates")
    verify = group.add_parser(
        "verify",
        parents=both,
        help="verify a certificate: signature, key, expiry, revocation, subject",
        description="Verify a certificate file. With --jwks it needs no store and no "
        "gateway: signature (Ed25519 over DSSE's PAE), key (the kid is in the key set, "
        "an Ed25519 key whose thumbprint is the kid), expiry, revocation (the issuer's "
        "signed list) and, given --manifest or --agent-card, that the subject is the "
        "agent presented. Without --jwks the key set and revocation list are this "
        "store's (or --gateway's). Exit 1 when it does not verify, with the reason.",
    )
    verify.add_argument("certificate", metavar="CERT", help="the certificate file (JSON)")
    verify.add_argument("--jwks", metavar="FILE|URL", help="the issuer's key set")
    _revocations_option(verify, "beside a --jwks URL, or this store's without --jwks")
    verify.add_argument("--manifest", metavar="FILE", help="the agent's manifest presented")
    verify.add_argument(
        "--agent-card", metavar="URL|FILE", help="the agent card an A2A agent serves"
    )
    verify.set_defaults(handler=do_verify)
    imp = group.add_parser(
        "import",
        parents=both,
        help="verify another gateway's certificate and keep it as an imported record",
        description="Verify CERT against its issuer's key set, then keep it on this store "
        "as an imported record of its agent (which must be registered here with the "
        "manifest certified), labelled with its issuer. Mandates use it only when their "
        "accept_issuers names that issuer.",
    )
    imp.add_argument("certificate", metavar="CERT", help="the certificate file (JSON)")
    imp.add_argument(
        "--issuer-jwks", required=True, metavar="FILE|URL", help="the issuer's key set"
    )
    _revocations_option(imp, "beside an --issuer-jwks URL")
    imp.add_argument(
        "--allow-unchecked-revocation",
        action="store_true",
        help="import without a revocation list: the record is labelled 'revocation "
        "unchecked', and mandates refuse it unless they accept_unchecked_revocation",
    )
    runs(imp, CERTIFICATES_IMPORT, handler=do_import)
    command(group, "revocations", CERTIFICATES_REVOCATIONS, parents=both)
    command(group, "list", CERTIFICATES_LIST, parents=both)
    recheck = group.add_parser(
        "recheck",
        parents=both,
        help="re-check an issuer's imported certificates against its revocation list",
        description="Read ISSUER's signed revocation list (verified with the keys pinned "
        "for it) against every certificate imported from it: those it lists are revoked "
        "here, so no mandate relies on them again; the others are marked checked now.",
    )
    recheck.add_argument("issuer", metavar="ISSUER", help="the issuer's name (urn:holon:…)")
    _revocations_option(recheck, "the URL kept at its import", whose="its")
    runs(recheck, CERTIFICATES_RECHECK, handler=do_recheck)
    igroup = command_group(
        group, "issuers", "the other issuers known here, each bound to its pinned keys"
    )
    command(igroup, "list", ISSUERS_LIST, parents=both)
    pin = igroup.add_parser(
        "pin",
        parents=both,
        help="register an issuer by its key set, or rotate its pinned keys on purpose",
        description="Pin the keys of the key set's issuer (its 'issuer' member): its "
        "certificates are then taken only when one of these keys signed them. For an issuer "
        "already known with other keys this is refused unless --rotate: the keys are then "
        "replaced, and the change kept in the issuer's history.",
    )
    pin.add_argument("--jwks", required=True, metavar="FILE|URL", help="the issuer's key set")
    pin.add_argument("--rotate", action="store_true", help="replace a known issuer's keys")
    pin.add_argument(
        "--revocations-url",
        metavar="URL",
        help="where it publishes its revocation list (default: beside a --jwks URL)",
    )
    runs(pin, ISSUERS_PIN, handler=do_pin)


def _revocations_option(
    parser: argparse.ArgumentParser, default: str, whose: str = "the issuer's"
) -> None:
    """`--revocations FILE|URL`, the signed revocation list a command reads
    (`_revocations`, `read_json_source`); `default`: where it comes from without the flag."""
    parser.add_argument(
        "--revocations",
        metavar="FILE|URL",
        help=f"{whose} signed revocation list (default: {default})",
    )


def register_record_certificate(rgroup: argparse._SubParsersAction[Any]) -> None:
    """`holon records certificate ORG/AGENT -o FILE` (on the records group)."""
    cert = rgroup.add_parser(
        "certificate",
        parents=[common_options(), gateway_options()],
        help="the signed certificate of the agent's current record",
    )
    cert.add_argument("agent", type=agent_id, metavar="ORG/AGENT", help="the agent's id")
    cert.add_argument("-o", "--output", metavar="FILE", help="write it here (default: stdout)")
    runs(cert, CERTIFICATES_SHOW, handler=do_record_certificate)


# -- reading files and URLs ---------------------------------------------------------------


def _is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


def read_json_source(source: str, max_bytes: int) -> Any:
    """A JSON document from a file or an http(s) URL, bounded; InputError naming it."""
    from schema.jsontext import NumberError, loads

    if _is_url(source):
        data = fetch_bounded(source, max_bytes, FETCH_TIMEOUT_S)
    else:
        path = Path(source)
        try:
            size = path.stat().st_size
            if size > max_bytes:
                raise InputError(
                    f"{source} is {size} bytes, over {max_bytes}", location=Location(file=source)
                )
            data = path.read_bytes()
        except OSError as exc:
            raise UsageError(f"cannot read {source}: {exc.strerror}") from None
    try:
        return loads(data)
    except (ValueError, NumberError, UnicodeDecodeError) as exc:
        raise InputError(
            f"{source} is not JSON: {str(exc)[:200]}", location=Location(file=source)
        ) from None


def _beside(url: str, path: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _revocations(ctx: Context, jwks_source: str | None, given: str | None) -> Any:
    from records import REVOCATIONS_MAX_BYTES

    if given is not None:
        return read_json_source(given, REVOCATIONS_MAX_BYTES)
    if jwks_source is None:
        return ctx.service().call(CERTIFICATES_REVOCATIONS, Nothing())
    if _is_url(jwks_source):
        return read_json_source(_beside(jwks_source, REVOCATIONS_PATH), REVOCATIONS_MAX_BYTES)
    return None


# -- commands -----------------------------------------------------------------------------


def _presented(args: argparse.Namespace) -> dict[str, Any] | None:
    from agents import load_manifest
    from records import CARD_DIGEST_FIELD, JWKS_MAX_BYTES, agent_identity
    from schema.canonical import canonical_digest

    presented: dict[str, Any] = {}
    if args.manifest is not None:
        presented.update(agent_identity(load_manifest(args.manifest).to_json()))
    if args.agent_card is not None:
        card = read_json_source(args.agent_card, JWKS_MAX_BYTES)
        try:
            presented[CARD_DIGEST_FIELD] = canonical_digest(card)
        except ValueError as exc:
            raise InputError(
                f"the agent card has no canonical form: {exc}",
                location=Location(file=args.agent_card),
            ) from None
    return presented or None


def do_verify(ctx: Context) -> int:
    from records import CERTIFICATE_MAX_BYTES, JWKS_MAX_BYTES

    args = ctx.args
    envelope = read_json_source(args.certificate, CERTIFICATE_MAX_BYTES)
    presented = _presented(args)
    jwks = (
        ctx.service().call(KEYS_JWKS, Nothing())
        if args.jwks is None
        else read_json_source(args.jwks, JWKS_MAX_BYTES)
    )
    revocations = _revocations(ctx, args.jwks, args.revocations)
    verdict = certificate_verdict(envelope, jwks, revocations, presented)
    if ctx.out.json_mode:
        ctx.out.json(verdict)
        return 0
    ctx.out.line(
        f"certificate {verdict['certificate_id']} verifies: {verdict['agent']} "
        f"{verdict['agent_version']}, eval_score {verdict['eval_score']}, issued by "
        f"{verdict['issuer']} (key {verdict['kid']}), expires {verdict['expires_at']}"
    )
    if revocations is None:
        ctx.out.warn("revocation not checked: give --revocations FILE|URL")
    if presented is None:
        ctx.out.warn("subject not checked: give --manifest FILE or --agent-card URL")
    return 0


def _revocations_url(jwks_source: str | None, given: str | None) -> str | None:
    """Where the issuer's revocation list is published, as far as the sources say."""
    if given is not None:
        return given if _is_url(given) else None
    if jwks_source is not None and _is_url(jwks_source):
        return _beside(jwks_source, REVOCATIONS_PATH)
    return None


def do_import(ctx: Context) -> int:
    from records import CERTIFICATE_MAX_BYTES, JWKS_MAX_BYTES

    args = ctx.args
    envelope = read_json_source(args.certificate, CERTIFICATE_MAX_BYTES)
    jwks = read_json_source(args.issuer_jwks, JWKS_MAX_BYTES)
    revocations = _revocations(ctx, args.issuer_jwks, args.revocations)
    asked = CertificateImport(
        certificate=envelope,
        jwks=jwks,
        revocations=revocations,
        revocations_url=_revocations_url(args.issuer_jwks, args.revocations),
        allow_unchecked_revocation=args.allow_unchecked_revocation,
    )
    view = ctx.service().call(CERTIFICATES_IMPORT, asked)
    if ctx.out.json_mode:
        ctx.out.json(view)
    else:
        cert = view["certificate"]
        ctx.out.line(
            f"imported certificate {cert['certificate_id']} of {cert['agent']} "
            f"{cert['agent_version']} from issuer {cert['issuer']} "
            f"(expires {cert['expires_at']})"
        )
        if cert["revocation"] == "unchecked":
            ctx.out.warn(
                "revocation unchecked: mandates refuse this record unless they "
                "accept_unchecked_revocation; re-check with holon certificates recheck"
            )
    return 0


def do_pin(ctx: Context) -> int:
    from records import JWKS_MAX_BYTES

    args = ctx.args
    jwks = read_json_source(args.jwks, JWKS_MAX_BYTES)
    asked = IssuerPin(
        jwks=jwks,
        rotate=args.rotate,
        revocations_url=args.revocations_url or _revocations_url(args.jwks, None),
    )
    view = ctx.service().call(ISSUERS_PIN, asked)
    if ctx.out.json_mode:
        ctx.out.json(view)
    else:
        last = view["history"][-1]
        ctx.out.line(
            f"issuer {view['issuer']} pinned to keys {', '.join(view['kids'])} "
            f"({last['action']} at {last['at']})"
        )
    return 0


def do_recheck(ctx: Context) -> int:
    from records import REVOCATIONS_MAX_BYTES

    args = ctx.args
    source = args.revocations
    if source is None:
        known = ctx.service().call(ISSUERS_LIST, Nothing())["items"]
        issuer = next((i for i in known if i["issuer"] == args.issuer), None)
        source = None if issuer is None else issuer["revocations_url"]
        if source is None:
            raise UsageError(
                f"no revocation list URL is known for {args.issuer[:200]}: give "
                "--revocations FILE|URL",
                details={"issuer": args.issuer[:200]},
            )
    revocations = read_json_source(source, REVOCATIONS_MAX_BYTES)
    view = ctx.service().call(CERTIFICATES_RECHECK, Recheck(args.issuer, revocations))
    if ctx.out.json_mode:
        ctx.out.json(view)
    else:
        for line in rechecked_lines(view):
            ctx.out.line(line)
    return 0


def do_record_certificate(ctx: Context) -> int:
    from schema import write_file
    from schema.jsontext import dumps

    envelope = ctx.service().call(CERTIFICATES_SHOW, AgentRef(ctx.args.agent))
    if ctx.args.output is None:
        ctx.out.json(envelope)
        return 0
    write_file(Path(ctx.args.output), (dumps(envelope) + "\n").encode("utf-8"))
    if ctx.out.json_mode:
        ctx.out.json({"written": ctx.args.output, "agent": ctx.args.agent})
    else:
        ctx.out.line(f"certificate of {ctx.args.agent} written to {ctx.args.output}")
    return 0
