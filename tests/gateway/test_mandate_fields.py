"""One declaration per mandate field: the schema, the table, the model, `show`, the docs.

A mandate is a gate, so a property the schema allows and the code does not
read fails open: the mandate is granted and the requirement ignored. These
tests pin the five places a field lives to one another, and show that a
document key nobody declared is refused rather than dropped.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.mandates import FIELDS, Mandate, field_text, mandate_from_dict
from gateway.mandates import _document as document_module
from gateway.operations import MANDATES_SHOW
from schema import validator
from schema.errors import MandateError

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "schema" / "mandate.schema.json").read_text())

# A mandate that sets every field (each to a value that is not its default).
FULL: dict[str, Any] = {
    "schema_version": 1,
    "id": "everything",
    "holder": "finance-bot",
    "capabilities": ["invoice.extract", "ticket.classify"],
    "agents": ["acme/*"],
    "min_eval_score": 0.8,
    "min_eval_score_lower": 0.6,
    "min_capability_score": 0.7,
    "max_eval_age_days": 30,
    "deny_on_overfit": True,
    "deny_on_drift": False,
    "min_live_score": 0.75,
    "min_canaries": 20,
    "accept_issuers": ["self", "partner.example"],
    "accept_unchecked_revocation": True,
    "max_live_violation_rate": 0.05,
    "min_live_calls": 20,
    "max_cost_per_call_usd": "0.05",
    "timeout_s": 12.5,
    "budget": {"amount_usd": "10", "period": "day"},
    "rate_limit": {"calls": 5, "per": "second", "burst": 2},
    "expires_at": "2030-01-01T00:00:00Z",
    "description": "every field set",
}
REQUIRED = tuple(SCHEMA["required"])
OPTIONAL = tuple(k for k in FULL if k not in REQUIRED)


def test_the_table_declares_each_schema_property_once() -> None:
    keys = [f.key for f in FIELDS]
    assert len(keys) == len(set(keys))
    assert set(keys) == set(SCHEMA["properties"])
    assert set(FULL) == set(SCHEMA["properties"]), "FULL must set every field"


def test_every_model_attribute_is_set_by_exactly_one_field() -> None:
    attrs = [f.attr for f in FIELDS if f.attr is not None]
    assert len(attrs) == len(set(attrs))
    model = {f.name for f in dataclasses.fields(Mandate)} - {"document"}
    assert set(attrs) == model


def test_a_full_mandate_sets_every_attribute_off_its_default() -> None:
    mandate = mandate_from_dict(FULL)
    empty = mandate_from_dict({k: FULL[k] for k in REQUIRED})
    for f in FIELDS:
        if f.attr is None or f.key in REQUIRED:
            continue
        assert getattr(mandate, f.attr) != getattr(empty, f.attr), f.key


def test_a_key_the_table_does_not_declare_is_refused_not_ignored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A property added to the schema alone: the schema lets it through, holon
    # would not read it. The mandate is refused, naming the field.
    schema = copy.deepcopy(SCHEMA)
    schema["properties"]["max_agents_per_day"] = {"type": "integer", "minimum": 1}
    widened = type(validator("mandate"))(schema)
    monkeypatch.setattr(document_module, "validator", lambda name: widened)
    with pytest.raises(MandateError) as caught:
        mandate_from_dict({**FULL, "max_agents_per_day": 3})
    assert "max_agents_per_day" in str(caught.value)
    assert caught.value.details["path"] == "$.max_agents_per_day"
    assert caught.value.code == "invalid_mandate"


def _shown(document: dict[str, Any]) -> dict[str, str]:
    view = {"mandate": document}
    render = MANDATES_SHOW.cli.render  # type: ignore[union-attr]
    return dict(render.extra(view))  # type: ignore[union-attr]


def test_show_shows_every_field_but_the_ids_it_heads_with() -> None:
    shown = _shown(FULL)
    assert set(shown) == set(SCHEMA["properties"]) - {"schema_version", "id", "holder"}
    assert shown["min_eval_score_lower"] == "0.6"
    assert shown["budget"] == "$10/day"
    assert shown["rate_limit"] == "5/second, burst 2"
    assert shown["deny_on_overfit"] == "yes"


@settings(max_examples=60, deadline=None)
@given(st.sets(st.sampled_from(OPTIONAL)))
def test_any_optional_field_may_be_absent(absent: set[str]) -> None:
    document = {k: v for k, v in FULL.items() if k not in absent}
    mandate = mandate_from_dict(document)
    assert mandate.id == "everything"
    shown = _shown(document)
    for key in absent:
        assert shown.get(key, field_text(document, key)) == field_text(document, key)
        assert shown.get(key) is not None


def test_the_docs_table_lists_each_field_once() -> None:
    text = (ROOT / "docs" / "gateway.md").read_text()
    section = text[text.index("## Mandates") : text.index("### Mandate history")]
    rows = re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.M)
    assert len(rows) == len(set(rows))
    assert set(rows) == set(SCHEMA["properties"])
