"""Contracts: the JSON Schema documents (Draft 2020-12) of every file and wire
format, the loader that reads documents against them with file:line:col
errors, and the error tree every layer raises.

The bottom layer: it imports nothing of holon.

Its public names load on first use (PEP 562): every command imports
`schema.errors`, which runs this module first, and eagerly it loaded jsonschema
and the YAML reader into every process, `holon --help` included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from schema._lazy import lazy_names
from schema._version import __version__

if TYPE_CHECKING:
    from schema._files import (
        SCHEMA_DIR,
        entity_names,
        entity_schema,
        load_schema,
        schema_names,
        schema_path,
    )
    from schema._registry import make_validator, quick_validity, validator, validator_class
    from schema._text import read_text, write_error, write_file, writing_file
    from schema.documents import Document, load_document, parse_document, validate_document

__all__ = [
    "__version__",
    "SCHEMA_DIR",
    "Document",
    "entity_names",
    "entity_schema",
    "load_document",
    "load_schema",
    "make_validator",
    "parse_document",
    "quick_validity",
    "read_text",
    "schema_names",
    "schema_path",
    "validate_document",
    "validator",
    "validator_class",
    "write_error",
    "write_file",
    "writing_file",
    "lazy_names",
]

# Where each public name lives: __all__ but the two loaded at once (tests/test_schema_lazy.py).
_HOMES: dict[str, str] = {
    "SCHEMA_DIR": "schema._files",
    "entity_names": "schema._files",
    "entity_schema": "schema._files",
    "load_schema": "schema._files",
    "make_validator": "schema._registry",
    "quick_validity": "schema._registry",
    "read_text": "schema._text",
    "write_error": "schema._text",
    "write_file": "schema._text",
    "writing_file": "schema._text",
    "schema_names": "schema._files",
    "schema_path": "schema._files",
    "validator": "schema._registry",
    "validator_class": "schema._registry",
    "Document": "schema.documents",
    "load_document": "schema.documents",
    "parse_document": "schema.documents",
    "validate_document": "schema.documents",
}


__getattr__, __dir__ = lazy_names(__name__, _HOMES, __all__)
