"""Contracts: the JSON Schema documents (Draft 2020-12) of every file and wire
format, the loader that reads documents against them with file:line:col
errors, and the error tree every layer raises.

The bottom layer: it imports nothing of holon.
"""

from schema._registry import (
    SCHEMA_DIR,
    entity_names,
    entity_schema,
    load_schema,
    make_validator,
    schema_names,
    schema_path,
    validator,
    validator_class,
)
from schema._version import __version__
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
    "schema_names",
    "schema_path",
    "validate_document",
    "validator",
    "validator_class",
]
