"""A mandate grant made on a stale read is refused, not applied over someone's edit.

`holon mandates grant FILE --if-revision N` and, on the API, `If-Match: "N"` grant only
while the mandate is at revision N (0: only while there is none); otherwise 412
`stale_revision` (exit 2) names the current revision, and nothing is written.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from records import Store
from schema.errors import StaleRevision
from tests.gateway._cli import CLI
from tests.gateway.server._gateway import Gateway, mandate, running_gateway


@pytest.fixture
def gw(sqlite_store: Store, tmp_path: Path) -> Iterator[Gateway]:
    with running_gateway(sqlite_store, tmp_path / "home", eval_workers=0) as gateway:
        yield gateway


def _grant(gw: Gateway, match: str | None, **fields: object) -> tuple[int, dict[str, object]]:
    headers = {} if match is None else {"If-Match": match}
    response = gw.call("POST", "/v1/mandates", "operator", json=mandate(**fields), headers=headers)
    return response.status_code, response.json()


def test_if_match_grants_only_at_the_revision_it_names(gw: Gateway) -> None:
    assert _grant(gw, '"0"')[0] == 201
    code, body = _grant(gw, '"0"', max_cost_per_call_usd="0.02")
    assert code == 412
    assert body["error"]["code"] == "stale_revision"
    assert body["error"]["details"]["revision"] == 1
    assert gw.store.mandates.get("finance-tickets").revision == 1  # nothing written
    code, body = _grant(gw, '"1"', max_cost_per_call_usd="0.02")
    assert code == 200 and body["mandate"]["revision"] == 2
    code, body = _grant(gw, "*", max_cost_per_call_usd="0.03")  # no precondition
    assert code == 200 and body["mandate"]["revision"] == 3
    assert _grant(gw, None, max_cost_per_call_usd="0.04")[1]["mandate"]["revision"] == 4


@pytest.mark.parametrize("match", ['"abc"', '"-1"', '"1.5"', '"' + "9" * 40 + '"', ""])
def test_a_malformed_if_match_is_a_400_naming_the_header(gw: Gateway, match: str) -> None:
    code, body = _grant(gw, match)
    assert code == 400, body
    assert body["error"]["details"]["path"] == "If-Match"
    assert gw.store.mandates.list().items == []


def test_the_cli_sends_its_precondition_through_a_gateway(gw: Gateway, tmp_path: Path) -> None:
    document = tmp_path / "mandate.yaml"
    document.write_text(yaml.safe_dump(mandate()))
    cli = CLI(tmp_path / "cli", HOLON_TOKEN=gw.tokens["operator"], HOLON_GATEWAY_URL=gw.url)
    assert cli("mandates", "grant", str(document), "--if-revision", "0").code == 0
    stale = cli("mandates", "grant", str(document), "--if-revision", "0", "--json")
    assert stale.code == 2
    assert stale.json()["error"]["code"] == "stale_revision"
    assert "--if-revision 1" in stale.json()["error"]["details"]["hint"]


def test_two_operators_editing_one_revision_one_wins(store: Store) -> None:
    """Both read revision 1 and grant at once: one edit lands, the other is refused."""
    store.mandates.grant(mandate())
    results: list[object] = []
    start = threading.Barrier(2)

    def edit(cap: str) -> None:
        start.wait()
        try:
            results.append(
                store.mandates.grant(mandate(max_cost_per_call_usd=cap), if_revision=1)[1]
            )
        except StaleRevision as exc:
            results.append(exc)

    threads = [threading.Thread(target=edit, args=(cap,)) for cap in ("0.02", "0.03")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(type(r).__name__ for r in results) == ["MandateInfo", "StaleRevision"]
    assert store.mandates.get("finance-tickets").revision == 2
