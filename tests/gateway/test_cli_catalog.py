"""`holon schema` and `holon catalog`: each prints what the code's own registries hold."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import agents
from evals.checks import COMBINATORS, PREDICATES, QUANTIFIERS, compile_check
from evals.checks._compile import MODIFIERS
from evals.checks._normalize import NORMALIZERS
from evals.fixtures import generators
from schema import SCHEMA_DIR, load_schema, schema_names, schema_path
from schema.errors import CheckError
from tests.evals.suites.test_extensions import _suite
from tests.gateway._cli import CLI
from tests.gateway.test_cli_startup import STORE, _probe

# -- holon schema ------------------------------------------------------------------------


def test_schema_lists_every_shipped_schema_file(tmp_path: Path) -> None:
    res = CLI(tmp_path / "home")("schema", "--json")
    assert res.code == 0, res.stderr
    listed = res.json()["schemas"]  # one JSON document
    assert [s["name"] for s in listed] == list(schema_names())
    # Every schema file under schema/ is one of them, by the file the name loads.
    files = {schema_path(s["name"]).resolve() for s in listed}
    assert files == {path.resolve() for path in SCHEMA_DIR.rglob("*.json")}
    for row in listed:
        shipped = json.loads(schema_path(row["name"]).read_text())
        assert (row["id"], row["title"]) == (shipped["$id"], shipped["title"])
    names = {s["name"] for s in listed}
    assert {"agent", "suite", "case", "mandate", "report", "certificate", "compare"} <= names
    assert {"revocations", "entities/ledger-row", "capabilities/ticket.classify.input"} <= names
    plain = CLI(tmp_path / "home")("schema")
    assert plain.code == 0 and "https://holon.dev/schema/mandate.schema.json" in plain.stdout


def test_schema_prints_one_schema(tmp_path: Path) -> None:
    cli = CLI(tmp_path / "home")
    res = cli("schema", "mandate", "--json")
    assert res.code == 0, res.stderr
    assert res.stdout.count("\n") == 1  # one JSON document, on one line
    assert res.json() == load_schema("mandate")
    # Without --json: the file as shipped.
    assert cli("schema", "mandate").stdout == schema_path("mandate").read_text()
    # Its file under schema/ and its $id name it too.
    for alias in ("mandate.schema.json", "https://holon.dev/schema/mandate.schema.json"):
        assert cli("schema", alias, "--json").json() == load_schema("mandate")
    assert cli("schema", "entities/ledger-row", "--json").json()["$id"].endswith("ledger-row.json")


def test_an_unknown_schema_exits_2_with_the_names(tmp_path: Path) -> None:
    cli = CLI(tmp_path / "home")
    res = cli("schema", "mandat", "--json")
    assert res.code == 2
    error = res.json()["error"]
    assert error["code"] == "usage" and error["details"]["names"] == list(schema_names())
    plain = cli("schema", "mandat")
    assert plain.code == 2 and plain.stdout == ""
    assert "did you mean 'mandate'?" in plain.stderr and "entities/ledger-row" in plain.stderr


# -- holon catalog -----------------------------------------------------------------------


def _catalog(cli: CLI) -> dict[str, Any]:
    res = cli("catalog", "--json")
    assert res.code == 0, res.stderr
    assert res.stdout.count("\n") == 1  # one JSON document
    loaded: dict[str, Any] = res.json()
    return loaded


def test_the_catalog_is_the_registries(tmp_path: Path) -> None:
    catalog = _catalog(CLI(tmp_path / "home"))
    checks = catalog["checks"]
    predicates = {p["name"]: p for p in checks["predicates"]}
    assert list(predicates) == list(PREDICATES)
    assert predicates["approx"]["modifiers"] == ["abs", "rel"]
    assert "{path: …}" in predicates["approx"]["takes"]
    assert [c["name"] for c in checks["combinators"]] == list(COMBINATORS)
    assert [q["name"] for q in checks["quantifiers"]] == list(QUANTIFIERS)
    assert [m["name"] for m in checks["modifiers"]] == list(MODIFIERS)
    assert checks["normalizers"] == sorted(NORMALIZERS)
    assert [g["name"] for g in catalog["fixtures"]] == list(generators())
    assert {"invoice", "ticket"} <= {g["name"] for g in catalog["fixtures"]}
    protocols = [p["name"] for p in catalog["protocols"]]
    assert protocols == list(agents.PROTOCOLS)
    assert set(protocols) == set(load_schema("agent")["properties"]["protocol"]["enum"])
    # No store here: none is read, and none is created.
    assert catalog["extensions"] == {"store": False, "items": []}
    assert not (tmp_path / "home").exists()
    plain = CLI(tmp_path / "home")("catalog")
    assert plain.code == 0 and "approx" in plain.stdout and "none: no store here" in plain.stdout


# A valid use of each predicate: the compiler accepts every one the catalog lists.
OPERANDS: dict[str, Any] = {
    "approx": {"approx": 1, "abs": 0.1},
    "between": {"between": [0, 1]},
    "contains": {"contains": "x"},
    "contains_all": {"contains_all": ["x"]},
    "contains_any": {"contains_any": ["x"]},
    "contains_only": {"contains_only": ["x"]},
    "count": {"count": 1},
    "ends_with": {"ends_with": "x"},
    "equals": {"equals": 1},
    "exists": {"exists": True},
    "f1": {"f1": {"to": [], "key": "sku"}},
    "full_match": {"full_match": "x"},
    "gt": {"gt": 1},
    "gte": {"gte": 1},
    "icontains": {"icontains": "x"},
    "length": {"length": {"max": 3}},
    "lt": {"lt": 1},
    "lte": {"lte": 1},
    "matches": {"matches": "x"},
    "not_equals": {"not_equals": 1},
    "not_one_of": {"not_one_of": [1]},
    "one_of": {"one_of": [1]},
    "schema": {"schema": {"type": "object"}},
    "similar": {"similar": {"to": "x"}},
    "starts_with": {"starts_with": "x"},
    "type": {"type": "string"},
}


def test_the_compiler_accepts_what_the_catalog_lists_and_nothing_else(tmp_path: Path) -> None:
    listed = _catalog(CLI(tmp_path / "home"))["checks"]["predicates"]
    assert sorted(OPERANDS) == [p["name"] for p in listed]
    for predicate in listed:
        name = predicate["name"]
        compile_check({"path": "$.output.x", **OPERANDS[name]})
        # Each modifier it lists is taken beside it; every other is refused.
        for modifier in MODIFIERS:
            check = {"path": "$.output.x", **OPERANDS[name], modifier: _modifier(modifier)}
            if modifier in predicate["modifiers"]:
                compile_check(check)
            elif modifier not in OPERANDS[name]:
                with pytest.raises(CheckError, match=f"{modifier} applies to"):
                    compile_check(check)
    with pytest.raises(CheckError) as unknown:
        compile_check({"path": "$.output.x", "approxx": 1})
    assert f"predicates: {', '.join(p['name'] for p in listed)};" in unknown.value.message


def _modifier(name: str) -> Any:
    return {"abs": 1, "rel": 0.1, "normalize": ["strip"], "allow_empty": True, "mostly": 0.5}[name]


def test_the_catalog_lists_installed_suites_extensions(tmp_path: Path) -> None:
    directory = _suite(tmp_path)
    cli = CLI(tmp_path / "home")
    assert cli("suites", "trust", str(directory)).code == 0
    assert cli("suites", "add", str(directory)).code == 0
    items = _catalog(cli)["extensions"]
    assert items["store"] is True
    digest = {
        name: hashlib.sha256((directory / "ext" / name).read_bytes()).hexdigest()
        for name in ("grader.py", "generator.py")
    }
    assert items["items"] == [
        {
            "suite": "tiny",
            "version": 1,
            "kind": "graders",
            "name": "lettercase",
            "file": "ext/grader.py",
            "sha256": digest["grader.py"],
        },
        {
            "suite": "tiny",
            "version": 1,
            "kind": "generators",
            "name": "tiny_tickets",
            "file": "ext/generator.py",
            "sha256": digest["generator.py"],
        },
    ]
    plain = cli("catalog")
    assert "lettercase" in plain.stdout and "ext/generator.py" in plain.stdout


def test_a_store_without_extensions_says_none(tmp_path: Path) -> None:
    cli = CLI(tmp_path / "home")
    assert cli("agents", "list").code == 0  # the store now exists, with no suite
    assert _catalog(cli)["extensions"] == {"store": True, "items": []}
    assert "none: no installed suite names extensions" in cli("catalog").stdout


def test_schema_and_catalog_load_no_store(tmp_path: Path) -> None:
    # Nothing beyond what building the parser loads (`holon --help`) for the store.
    parser = set(_probe(["--help"], tmp_path)["loaded"])
    schema = _probe(["schema", "mandate", "--json"], tmp_path)
    # Printing a schema reads its file (schema._files), which `holon --help` never does.
    shown = set(schema["loaded"])
    assert schema["code"] == 0 and shown <= parser | {"schema._files"}, schema["loaded"]
    catalog = _probe(["catalog", "--json"], tmp_path)
    assert catalog["code"] == 0, catalog["stderr"]
    assert not (set(catalog["loaded"]) - parser) & set(STORE), catalog["loaded"]
    assert '"name":"approx"' in catalog["stdout"]


def test_with_a_gateway_set_the_catalog_reads_no_store(tmp_path: Path) -> None:
    cli = CLI(tmp_path / "home", HOLON_GATEWAY_URL="http://127.0.0.1:9", HOLON_TOKEN="t")
    res = cli("catalog", "--json")
    assert res.code == 0 and res.json()["extensions"] == {"store": False, "items": []}
    assert "a gateway is set" in res.stderr
    assert not (tmp_path / "home").exists()
