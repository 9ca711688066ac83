"""Federation end to end: two stores, two `holon gateway serve` processes on 127.0.0.1.

Gateway A evaluates an agent and publishes its certificate, key set and
revocation list; B verifies and imports the certificate; a mandate on B that
accepts A's issuer admits the agent, one that does not denies it and says why;
rotating A's key keeps the certificate verifiable; a certificate A revokes after the
import stops serving on B once B re-checks A's list.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests._servers import serve, start_gateway, wait_healthy
from tests.evals.suites._make import case, make_suite
from tests.gateway._cli import CLI
from tests.gateway.server._agent import Recording, manifest, recording_agent

AGENT = "acme/remote-triage"
TICKET = '{"subject": "Refund please", "body": "I was charged twice."}'


@contextmanager
def gateway_process(home: Path) -> Iterator[str]:
    env = {
        **os.environ,
        "HOLON_HOME": str(home),
        "HOLON_EXAMPLES": "off",
        "HOLON_AGENT_NETWORKS": "any",
        "HOLON_PROBE_INTERVAL_S": "0",
    }
    env.pop("HOLON_GATEWAY_URL", None)
    server, url = start_gateway(env)
    try:
        wait_healthy(server, url)
        yield url
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=30)


def _mandate(path: Path, holder: str, extra: str = "") -> Path:
    path.write_text(
        f"schema_version: 1\nid: {holder}-tickets\nholder: {holder}\n"
        'capabilities: [ticket.classify]\nmax_cost_per_call_usd: "0.01"\n'
        f"min_eval_score: 0.5\n{extra}"
    )
    return path


@pytest.mark.slow
def test_b_imports_a_certificate_and_its_mandates_decide_by_issuer(tmp_path: Path) -> None:
    home_a, home_b = tmp_path / "a", tmp_path / "b"
    store_a, store_b = CLI(home_a), CLI(home_b)
    with serve(recording_agent(AGENT, "1.0.0", Recording())) as agent_url:
        agent_file = tmp_path / "agent.json"
        agent_file.write_text(json.dumps(manifest(AGENT, agent_url)))
        # A: the suite, the agent, a full eval (its record and certificate).
        public = [case(f"p{i}", f"Charged twice {i}", "billing") for i in range(4)]
        holdout = [case(f"h{i}", f"Refund please {i}", "billing") for i in range(4)]
        suite = make_suite(tmp_path, public=public, holdout=holdout)
        assert store_a("suites", "add", str(suite)).code == 0
        assert store_a("agents", "register", str(agent_file)).code == 0
        evaluated = store_a("eval", AGENT, "--yes")
        assert evaluated.code in (0, 1), evaluated.stderr
        issuer_a = store_a("keys", "list", "--json").json()["issuer"]
        # B: the same agent registered, the suite for its contract, and two mandates.
        assert store_b("suites", "add", str(suite)).code == 0
        assert store_b("agents", "register", str(agent_file)).code == 0
        accepts = _mandate(tmp_path / "m1.yaml", "bot-a", f"accept_issuers: [self, {issuer_a}]\n")
        assert store_b("mandates", "grant", str(accepts)).code == 0
        assert store_b("mandates", "grant", str(_mandate(tmp_path / "m2.yaml", "bot-b"))).code == 0
        tokens_a = {
            role: store_a("tokens", "create", "--role", role, "--json").json()["token"]
            for role in ("operator", "caller:someone")
        }
        tokens_b = {
            role: store_b("tokens", "create", "--role", role, "--json").json()["token"]
            for role in ("operator", "caller:bot-a", "caller:bot-b")
        }
        with gateway_process(home_a) as url_a, gateway_process(home_b) as url_b:

            def on(url: str, token: str) -> CLI:
                return CLI(tmp_path / "client", HOLON_GATEWAY_URL=url, HOLON_TOKEN=token)

            cert = tmp_path / "cert.json"
            # Any token of A's may fetch the certificate; the key set needs none.
            fetched = on(url_a, tokens_a["caller:someone"])("records", "certificate", AGENT)
            assert fetched.code == 0, fetched.stderr
            cert.write_text(fetched.stdout)
            jwks_url = url_a + "/.well-known/jwks.json"
            assert httpx.get(jwks_url).json()["issuer"] == issuer_a

            # B verifies it offline, against A's published key set and revocation list.
            verdict = CLI(tmp_path / "verifier")(
                "certificates", "verify", str(cert), "--jwks", jwks_url, "--manifest",
                str(agent_file), "--json",
            )  # fmt: skip
            assert verdict.code == 0, verdict.stdout
            assert verdict.json()["checked"]["revocation"] is True

            # A tampered certificate is not imported.
            envelope = json.loads(cert.read_text())
            envelope["signatures"][0]["sig"] = "A" * 86 + "=="
            bad = tmp_path / "bad.json"
            bad.write_text(json.dumps(envelope))
            operator_b = on(url_b, tokens_b["operator"])
            refused = operator_b("certificates", "import", str(bad), "--issuer-jwks", jwks_url)
            assert refused.code == 1 and "does not verify" in refused.stderr

            # B imports it: an imported record of the agent, labelled with A's issuer.
            imported = operator_b(
                "certificates", "import", str(cert), "--issuer-jwks", jwks_url, "--json"
            )
            assert imported.code == 0, imported.stdout
            view = imported.json()["certificate"]
            assert view["issuer"] == issuer_a and view["imported"] is True

            # The mandate accepting A admits the agent; the ledger names A's certificate.
            called = on(url_b, tokens_b["caller:bot-a"])(
                "invoke", AGENT, "--capability", "ticket.classify", "--input", TICKET
            )
            assert called.code == 0, called.stderr
            ledger = operator_b("ledger", "--json").json()["items"]
            assert ledger[0]["certificate_id"] == view["certificate_id"]
            # The one accepting only B's own records denies, and says why.
            denied = on(url_b, tokens_b["caller:bot-b"])(
                "invoke", AGENT, "--capability", "ticket.classify", "--input", TICKET, "--json"
            )
            assert denied.code == 1
            error = denied.json()["error"]
            assert error["code"] == "issuer_not_accepted"
            (verdict_b,) = error["details"]["mandates"]
            assert verdict_b["issuers"] == [issuer_a] and verdict_b["accept_issuers"] == ["self"]

            # A rotates its key: the certificate still verifies against A's key set.
            rotated = on(url_a, tokens_a["operator"])("keys", "rotate", "--json")
            assert rotated.code == 0, rotated.stdout
            again = CLI(tmp_path / "verifier")(
                "certificates", "verify", str(cert), "--jwks", jwks_url, "--json"
            )
            assert again.code == 0 and again.json()["kid"] == rotated.json()["retired"][0]
            assert len(httpx.get(jwks_url).json()["keys"]) == 2

            # A registers another version: its certificate is revoked on A. A's list is now
            # signed by its new key, which B never pinned: B's re-check fails closed until
            # B's operator rotates A's pinned keys on purpose.
            newer = tmp_path / "agent-1.0.1.json"
            newer.write_text(json.dumps(manifest(AGENT, agent_url) | {"version": "1.0.1"}))
            assert store_a("agents", "register", str(newer)).code == 0
            unpinned = operator_b("certificates", "recheck", issuer_a)
            assert unpinned.code == 1 and "not signed by a key pinned" in unpinned.stderr
            pinned = operator_b("certificates", "issuers", "pin", "--jwks", jwks_url, "--rotate")
            assert pinned.code == 0, pinned.stderr
            # Then the re-check (at the list's URL kept at import) revokes it on B: the
            # imported record stops serving, and the mandate that admitted the agent no
            # longer does.
            rechecked = operator_b("certificates", "recheck", issuer_a, "--json")
            assert rechecked.code == 0, rechecked.stderr
            assert rechecked.json()["revoked"] == [view["certificate_id"]]
            listed = operator_b("certificates", "list", "--json").json()["items"]
            assert [(c["issuer"], c["status"]) for c in listed] == [(issuer_a, "revoked")]
            # Every gateway process reads records through its lookup cache (one second):
            # the revocation reaches its calls within that.
            deadline = time.monotonic() + 10
            while True:
                refused = on(url_b, tokens_b["caller:bot-a"])(
                    "invoke", AGENT, "--capability", "ticket.classify", "--input", TICKET, "--json"
                )
                if refused.code != 0 or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert refused.code == 1 and refused.json()["error"]["code"] == "not_evaluated"
