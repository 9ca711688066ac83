"""Names renamed by the glossary (docs/glossary.md) still work for one release, and say
their new name: CLI flags on stderr, API query parameters in response headers."""

from __future__ import annotations

from pathlib import Path

from records import Store
from tests.gateway._cli import CLI, FINANCE_MANDATE
from tests.gateway.server._gateway import mandate, running_gateway

TICKET = '{"subject": "Refund please", "body": "I was charged twice."}'


def test_old_cli_flags_work_and_name_the_new_one(tmp_path: Path) -> None:
    cli = CLI(tmp_path / "home")
    path = tmp_path / "mandate.yaml"
    path.write_text(FINANCE_MANDATE)
    assert cli("mandates", "grant", str(path)).code == 0

    new = cli("mandates", "list", "--caller", "finance-bot", "--json")
    old = cli("mandates", "list", "--holder", "finance-bot", "--json")
    assert old.code == 0 and old.json() == new.json() and len(new.json()["items"]) == 1
    assert "--holder is deprecated: use --caller" in old.stderr
    assert "deprecated" not in new.stderr
    other = cli("mandates", "list", "--holder", "someone-else", "--json")
    assert other.json()["items"] == []  # the old name filters as the new one does

    # `invoke --as`: the same path as --caller (the agent is not registered: exit 2 either way,
    # after the caller was accepted, where a missing caller is a usage error of its own).
    call = ("invoke", "acme/nobody", "--capability", "ticket.classify", "--input", TICKET)
    as_old = cli(*call, "--as", "finance-bot", "--json")
    as_new = cli(*call, "--caller", "finance-bot", "--json")
    assert as_old.code == as_new.code == 2
    assert as_old.json() == as_new.json()
    assert "--as is deprecated: use --caller" in as_old.stderr
    assert "deprecated" not in as_new.stderr
    blank = cli(*call, "--as", " ")
    assert blank.code == 2 and "--caller needs a name" in blank.stderr


def test_the_old_query_parameter_works_and_says_so(store: Store, tmp_path: Path) -> None:
    with running_gateway(store, tmp_path / "home", eval_workers=0) as gw:
        assert gw.call("POST", "/v1/mandates", "operator", json=mandate()).status_code == 201
        new = gw.call("GET", "/v1/mandates?caller=finance-bot", "operator")
        old = gw.call("GET", "/v1/mandates?holder=finance-bot", "operator")
        assert new.status_code == old.status_code == 200
        assert old.json() == new.json() and len(new.json()["items"]) == 1
        assert old.headers["Deprecation"] == "true"
        assert "use caller" in old.headers["Warning"]
        assert "Deprecation" not in new.headers and "Warning" not in new.headers
        none = gw.call("GET", "/v1/mandates?holder=someone-else", "operator")
        assert none.json()["items"] == []
        same = gw.call("GET", "/v1/mandates?holder=finance-bot&caller=finance-bot", "operator")
        assert same.status_code == 200 and same.json() == new.json()
        both = gw.call("GET", "/v1/mandates?holder=finance-bot&caller=other", "operator")
        assert both.status_code == 400 and both.json()["error"]["code"] == "usage"
        described = gw.call("GET", "/openapi.json").json()["paths"]["/v1/mandates"]["get"]
        params = {p["name"]: p for p in described["parameters"]}
        assert params["holder"]["deprecated"] is True and "deprecated" not in params["caller"]
