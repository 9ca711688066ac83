"""The example agents' manifests and the capability schemas they are graded against."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from agents import load_manifest
from schema import SCHEMA_DIR, validator
from tests.examples._client import get_asgi

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "agents"
MANIFESTS = {
    "acme-invoice-reader.yaml": ("acme/invoice-reader", "invoice.extract", "invoice_reader"),
    "acme-ticket-triage.yaml": ("acme/ticket-triage", "ticket.classify", "ticket_triage"),
    "acme-report-writer.yaml": ("acme/report-writer", "report.render", "report_writer"),
    "shady-memorizer.yaml": ("shady/memorizer", "ticket.classify", "shady_memorizer"),
}
CAPABILITIES = ["invoice.extract", "ticket.classify", "report.render"]
SCHEMA_FILES = sorted((SCHEMA_DIR / "capabilities").glob("*.json"))


def test_every_manifest_is_listed() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.yaml")) == sorted(MANIFESTS)


@pytest.mark.parametrize("filename", sorted(MANIFESTS))
def test_manifest_loads_and_matches_the_agent_it_names(filename: str) -> None:
    agent_id, capability, module_name = MANIFESTS[filename]
    manifest = load_manifest(EXAMPLES / filename)
    assert manifest.id == agent_id
    assert manifest.capabilities == (capability,)
    assert manifest.protocol == "asgi"
    assert manifest.endpoint == f"asgi:examples.agents.{module_name}:app"
    assert manifest.pricing is not None and manifest.pricing.per_call_usd > 0
    assert manifest.limits.max_cost_usd is not None
    assert manifest.limits.max_cost_usd > manifest.pricing.per_call_usd
    assert manifest.contact

    # The endpoint resolves the way the executor resolves it, and the agent that
    # answers there says it is this manifest's id and version (the identity check).
    module_path, attribute = manifest.endpoint.removeprefix("asgi:").split(":")
    app = getattr(importlib.import_module(module_path), attribute)
    identity = get_asgi(app, "/.well-known/holon-agent").json()
    assert identity == {
        "id": manifest.id,
        "version": manifest.version,
        "capabilities": list(manifest.capabilities),
    }


def test_there_are_an_input_and_an_output_schema_per_capability() -> None:
    expected = sorted(f"{c}.{side}.json" for c in CAPABILITIES for side in ("input", "output"))
    assert sorted(p.name for p in SCHEMA_FILES) == expected


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for value in node.values() for r in _refs(value)]
    if isinstance(node, list):
        return [r for value in node for r in _refs(value)]
    return []


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda p: p.name)
def test_capability_schema_is_valid_self_contained_and_its_examples_pass(path: Path) -> None:
    document = json.loads(path.read_text())
    jsonschema.Draft202012Validator.check_schema(document)
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert document["$id"].endswith(f"/capabilities/{path.name}")
    assert all(ref.startswith("#/") for ref in _refs(document)), "suites copy these files alone"
    assert document["additionalProperties"] is False
    assert document["description"]
    check = validator(f"capabilities/{path.stem}")
    assert document["examples"]
    for example in document["examples"]:
        assert not list(check.iter_errors(example))


@pytest.mark.parametrize(
    ("name", "instance"),
    [
        (
            "ticket.classify.output",
            {"label": "Billing", "priority": "normal", "product": "general"},
        ),
        ("ticket.classify.output", {"label": "billing", "priority": "p1", "product": "general"}),
        (
            "ticket.classify.output",
            {"label": "billing", "priority": "low", "product": "books", "why": "x"},
        ),
        (
            "ticket.classify.output",
            {"label": "billing", "priority": "low", "product": "books", "confidence": 1.5},
        ),
        ("ticket.classify.input", {"subject": "x"}),
        (
            "invoice.extract.input",
            {
                "document": {
                    "media_type": "application/pdf",
                    "filename": "a/b.pdf",
                    "data_base64": "JVBERi0xLjQK",
                }
            },
        ),
        (
            "invoice.extract.input",
            {
                "document": {
                    "media_type": "image/png",
                    "filename": "a.png",
                    "data_base64": "JVBERi0xLjQK",
                }
            },
        ),
        (
            "invoice.extract.input",
            {
                "document": {
                    "media_type": "application/pdf",
                    "filename": "a.pdf",
                    "data_base64": "JVBER i0x",
                }
            },
        ),
        (
            "report.render.input",
            {"title": "T", "period": {"start": "2026-01-01", "end": "2026-01-31"}, "metrics": []},
        ),
        (
            "report.render.input",
            {
                "title": "Price \u20ac",
                "period": {"start": "2026-01-01", "end": "2026-01-31"},
                "metrics": [{"name": "a", "value": 1}],
            },
        ),
        (
            "report.render.input",
            {
                "title": "T",
                "period": {"start": "2026-02-30", "end": "2026-03-31"},
                "metrics": [{"name": "a", "value": 1}],
            },
        ),
        (
            "report.render.input",
            {
                "title": "T",
                "period": {"start": "2026-01-01", "end": "2026-01-31"},
                "metrics": [{"name": "a", "value": 1}],
                "fields": {"a.b": "x"},
            },
        ),
        (
            "report.render.output",
            {
                "report": {
                    "media_type": "application/pdf",
                    "filename": "r.pdf",
                    "data_base64": "not base64!",
                }
            },
        ),
    ],
)
def test_capability_schemas_refuse_what_graders_could_not_grade(name: str, instance: Any) -> None:
    assert list(validator(f"capabilities/{name}").iter_errors(instance))


def _invoice(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = json.loads(
        (SCHEMA_DIR / "capabilities/invoice.extract.output.json").read_text()
    )["examples"][0]
    return {**base, **changes}


@pytest.mark.parametrize(
    "changes",
    [
        {"invoice_date": "05/03/2026"},
        {"due_date": "2026-13-01"},
        {"currency": "eur"},
        {"currency": "\u20ac"},
        {"total": "1,401.82"},
        {"discount": -62},
        {"vendor": {"address": "somewhere"}},
        {"line_items": [{"sku": "A", "description": "d", "quantity": 1, "unit_price": 1}]},
        {"unexpected": 1},
    ],
)
def test_invoice_output_schema_refuses_loose_shapes(changes: dict[str, Any]) -> None:
    assert list(validator("capabilities/invoice.extract.output").iter_errors(_invoice(**changes)))


def test_invoice_output_schema_allows_a_missing_discount_and_due_date() -> None:
    value = _invoice(due_date=None)
    del value["discount"]
    assert not list(validator("capabilities/invoice.extract.output").iter_errors(value))
