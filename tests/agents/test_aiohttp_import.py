"""aiohttp is imported without its default TLS contexts loading the CA store
(agents/_aiohttp.py), and that changes nothing an agent call relies on: the transport
verifies with its own context, a default context could verify nothing, and the rest of
the process builds its contexts as before.

Run in a fresh interpreter: this one may have imported aiohttp long ago.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests._fresh import fresh_python

CHILD = """
import asyncio, json, ssl, sys
before = ssl.create_default_context().cert_store_stats()["x509_ca"]
import agents  # the first import of aiohttp, through agents._aiohttp
import aiohttp, aiohttp.connector as connector
from agents import CallLimits, Executor
from tests._servers import serve
from tests.agents.conftest import make_agent

certfile, keyfile = sys.argv[1], sys.argv[2]
default = connector._SSL_CONTEXT_VERIFIED
found = {
    "default_cas": default.cert_store_stats()["x509_ca"],
    "default_requires": default.verify_mode == ssl.CERT_REQUIRED and default.check_hostname,
    "unverified_cas": connector._SSL_CONTEXT_UNVERIFIED.cert_store_stats()["x509_ca"],
    "cas_before": before,
    "cas_after": ssl.create_default_context().cert_store_stats()["x509_ca"],
}

async def calls(url):
    async with Executor() as executor:
        outcome = await executor.execute(make_agent(url + "/"), "echo", {"n": 1}, CallLimits())
        found["holon_call"] = [outcome.code, outcome.output["echo"] if outcome.ok else None]
    async with aiohttp.ClientSession() as session:  # aiohttp's own default context
        try:
            async with session.post(url + "/", json={"input": {}}) as response:
                found["default_call"] = response.status
        except aiohttp.ClientConnectorCertificateError:
            found["default_call"] = "certificate refused"

with serve("tests.agents.asgi_apps:app", ssl_certfile=certfile, ssl_keyfile=keyfile) as url:
    asyncio.run(calls(url.replace("http://", "https://")))
print(json.dumps(found))
"""


def _certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for 127.0.0.1 that it signed."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "holon test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    paths = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    paths[0].write_bytes(ca.public_bytes(pem))
    paths[1].write_bytes(leaf.public_bytes(pem))
    paths[2].write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths


def test_agents_import_aiohttp_without_the_ca_store_and_still_verify(tmp_path: Path) -> None:
    ca, certfile, keyfile = _certificates(tmp_path)
    # The transport's context trusts SSL_CERT_FILE (httpx's rule), so this CA alone.
    env = {**os.environ, "SSL_CERT_FILE": str(ca)}
    found = json.loads(fresh_python(CHILD, str(certfile), str(keyfile), env=env).splitlines()[-1])
    # The defaults aiohttp built at import trust nothing and still require verification.
    assert found["default_cas"] == 0 and found["unverified_cas"] == 0
    assert found["default_requires"] is True
    # The CA store loads for every context built after the import, as before it.
    assert found["cas_after"] == found["cas_before"]
    # A call through the transport verifies the agent's certificate with its own context;
    # one through aiohttp's default context is refused: it fails closed, never open.
    assert found["holon_call"] == ["ok", {"n": 1}]
    assert found["default_call"] == "certificate refused"
