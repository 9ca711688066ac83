"""Mandate documents (schema/mandate.schema.json): loading, validation, the model.

A mandate file gets the same errors as every other file holon reads: the
file, the line, the JSON path, and what was expected. Each field is read as
`_fields.FIELDS` declares it; a field the schema allows and holon does not
read is refused, never ignored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gateway.mandates._fields import read_fields
from gateway.mandates._model import DEFAULT_MIN_LIVE_CALLS, SELF_ISSUER, Budget, Mandate
from schema import Document, load_document, parse_document, validate_document, validator
from schema.errors import MandateError
from schema.jsontext import dumps

__all__ = [
    "DEFAULT_MIN_LIVE_CALLS",
    "SELF_ISSUER",
    "Budget",
    "Mandate",
    "load_mandate",
    "mandate_from_dict",
    "parse_mandate",
]


def parse_mandate(document: Document) -> Mandate:
    """Validate a loaded document and build the Mandate, or raise MandateError."""
    if not isinstance(document.value, dict):
        raise document.error("expected a mandate object at the top level", cls=MandateError)
    validate_document(document, validator("mandate"), cls=MandateError, what="mandate")
    data: dict[str, Any] = document.value
    return Mandate(**read_fields(document, data), document=data)


def load_mandate(path: str | Path) -> Mandate:
    """Read and validate a mandate file (YAML or JSON)."""
    return parse_mandate(load_document(path))


def mandate_from_dict(data: Any, source: str = "<request>") -> Mandate:
    """Validate a mandate that arrived as parsed JSON (the API, the store): same errors as files."""
    return parse_mandate(parse_document(dumps(data), source))
