"""`holon agents …` in-process on the embedded store: output, --json, exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gateway._cli import CLI

MANIFEST = """\
schema_version: 1
id: acme/invoice-reader
version: 1.4.0
protocol: holon-http
endpoint: https://agents.acme.example/invoice
capabilities: [invoice.extract]
limits: {max_cost_usd: "0.05", timeout_s: 20}
pricing:
  per_call_usd: "0.002"
contact: ops@acme.example
"""


def write(tmp_path: Path, text: str, name: str = "agent.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_register_then_show_json(cli: CLI, tmp_path: Path) -> None:
    reg = cli("agents", "register", write(tmp_path, MANIFEST), "--json")
    assert reg.code == 0, reg.stderr
    body = reg.json()
    assert body["status"] == "created"
    assert body["warnings"][0]["code"] == "unverified_capability"
    assert body["warnings"][0]["capability"] == "invoice.extract"
    shown = cli("agents", "show", "acme/invoice-reader", "--json")
    assert shown.code == 0
    view = shown.json()
    assert view["id"] == "acme/invoice-reader" and view["version"] == "1.4.0"
    assert view["manifest"]["pricing"] == {"per_call_usd": "0.002"}
    assert view["secret_set"] is False
    assert [v["version"] for v in view["versions"]] == ["1.4.0"]


def test_register_human_output_warns_about_unverifiable_claims(cli: CLI, tmp_path: Path) -> None:
    reg = cli("agents", "register", write(tmp_path, MANIFEST))
    assert reg.code == 0
    assert "registered acme/invoice-reader 1.4.0" in reg.stdout
    assert "no installed suite certifies invoice.extract" in reg.stderr
    again = cli("agents", "register", write(tmp_path, MANIFEST))
    assert "already registered, unchanged" in again.stdout


def test_new_version_updates_and_keeps_history(cli: CLI, tmp_path: Path) -> None:
    cli("agents", "register", write(tmp_path, MANIFEST))
    newer = MANIFEST.replace("version: 1.4.0", "version: 1.5.0")
    res = cli("agents", "register", write(tmp_path, newer, "v2.yaml"))
    assert "updated acme/invoice-reader from 1.4.0 to 1.5.0" in res.stdout
    view = cli("agents", "show", "acme/invoice-reader", "--json").json()
    assert [v["version"] for v in view["versions"]] == ["1.4.0", "1.5.0"]
    changed = newer.replace("ops@", "team@")
    res = cli("agents", "register", write(tmp_path, changed, "v3.yaml"))
    assert res.code == 2
    assert "already registered with another manifest" in res.stderr
    assert "new version" in res.stderr


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        (MANIFEST.replace("contact:", "contat:"), ":10:1: $.contat", "did you mean 'contact'"),
        (MANIFEST.replace('"0.002"', "0.002"), ":9:3: $.pricing.per_call_usd", "decimal string"),
        (MANIFEST.replace("acme/invoice-reader", "Acme/Invoice"), ":2:1: $.id", "org/name"),
        (MANIFEST.replace("protocol: holon-http", "protocol: grpc"), ":4:1: $.protocol", "one of"),
        (
            MANIFEST.replace("https://agents", "https://user:pw@agents"),
            ":5:1: $.endpoint",
            "credentials",
        ),
        (MANIFEST.replace("version: 1.4.0\n", ""), ":1:1", "missing required key 'version'"),
        (MANIFEST + "id: again\n", ":11:1", "duplicate key"),
        ("- just\n- a list\n", ":1:1", "manifest object"),
        ("id: [unclosed\n", ":2:1", ""),
    ],
)
def test_bad_manifests_name_file_line_column_and_key(
    cli: CLI, tmp_path: Path, text: str, where: str, what: str
) -> None:
    path = write(tmp_path, text)
    res = cli("agents", "register", path)
    assert res.code == 2, res.stderr
    assert f"error: {path}{where}" in res.stderr
    assert what in res.stderr
    assert "Traceback" not in res.stderr
    # Nothing was written.
    assert cli("agents", "list", "--json").json()["items"] == []


def test_bad_manifest_json_error_body(cli: CLI, tmp_path: Path) -> None:
    path = write(tmp_path, MANIFEST.replace("contact:", "contat:"))
    res = cli("agents", "register", path, "--json")
    assert res.code == 2
    error = res.json()["error"]
    assert error["code"] == "invalid_manifest"
    assert error["details"]["line"] == 10 and error["details"]["column"] == 1
    assert error["details"]["path"] == "$.contat"


def test_missing_file_and_directory(cli: CLI, tmp_path: Path) -> None:
    res = cli("agents", "register", str(tmp_path / "nope.yaml"))
    assert res.code == 2 and "no such file" in res.stderr
    res = cli("agents", "register", str(tmp_path))
    assert res.code == 2 and "is a directory" in res.stderr


def test_asgi_manifest_from_the_store_side(cli: CLI, tmp_path: Path) -> None:
    text = MANIFEST.replace("protocol: holon-http", "protocol: asgi").replace(
        "https://agents.acme.example/invoice", "asgi:examples.agents.invoice_reader:app"
    )
    assert cli("agents", "register", write(tmp_path, text)).code == 0


def test_list_disable_enable(cli: CLI, tmp_path: Path) -> None:
    cli("agents", "register", write(tmp_path, MANIFEST))
    listed = cli("agents", "list")
    assert "acme/invoice-reader" in listed.stdout and "invoice.extract" in listed.stdout
    assert cli("agents", "disable", "acme/invoice-reader").code == 0
    assert cli("agents", "list", "--json").json()["items"] == []
    assert len(cli("agents", "list", "--all", "--json").json()["items"]) == 1
    assert cli("agents", "enable", "acme/invoice-reader", "--json").json()["disabled"] is False


def test_secret_is_write_only(cli: CLI, tmp_path: Path) -> None:
    cli("agents", "register", write(tmp_path, MANIFEST))
    res = cli("agents", "secret", "set", "acme/invoice-reader", stdin="tok-abcdef\n")
    assert res.code == 0 and "tok-abcdef" not in res.stdout + res.stderr
    for argv in (("agents", "show", "acme/invoice-reader"), ("agents", "list", "--json")):
        out = cli(*argv, "--json")
        assert "tok-abcdef" not in out.stdout
    assert cli("agents", "show", "acme/invoice-reader", "--json").json()["secret_set"] is True
    db = (Path(cli.env["HOLON_HOME"]) / "holon.db").read_bytes()
    assert b"tok-abcdef" not in db
    empty = cli("agents", "secret", "set", "acme/invoice-reader", stdin="\n")
    assert empty.code == 2 and "empty" in empty.stderr
    for bad in ("two words", "caf\u00e9", "tab\there"):
        res = cli("agents", "secret", "set", "acme/invoice-reader", stdin=bad + "\n")
        assert res.code == 2 and "printable ASCII without spaces" in res.stderr
    assert cli("agents", "secret", "clear", "acme/invoice-reader", "--json").json()["removed"]


def test_unknown_agent_and_bad_ids(cli: CLI) -> None:
    res = cli("agents", "show", "acme/nobody", "--json")
    assert res.code == 2 and res.json()["error"]["code"] == "not_found"
    res = cli("agents", "show", "NotAnId")
    assert res.code == 2 and "expected org/name" in res.stderr


def test_gateway_flag_is_refused_until_the_gateway_exists(cli: CLI) -> None:
    res = cli("agents", "list", "--gateway", "http://127.0.0.1:9", "--json")
    assert res.code == 2
    assert res.json()["error"]["code"] == "usage"
