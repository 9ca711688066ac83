"""Find and read the shipped JSON Schema documents, without a validator.

The operation table reads its answers' schemas (entities, response views)
when a door first asks for one, for /openapi.json or docs/operations.md;
reading a schema file must not load jsonschema, which only validation needs
(`schema._registry`).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

SCHEMA_DIR = Path(__file__).resolve().parent


def schema_path(name: str) -> Path:
    """`agent` -> schema/agent.schema.json; `capabilities/x.input` -> capabilities/x.input.json."""
    if "/" in name:
        return SCHEMA_DIR / f"{name}.json"
    return SCHEMA_DIR / f"{name}.schema.json"


@cache
def schema_names() -> tuple[str, ...]:
    """Every shipped schema by the name `schema_path` and `load_schema` take: `mandate`,
    `entities/ledger-row`, `capabilities/ticket.classify.input`; read from the files, so a
    new schema file is a new name."""
    names = []
    for path in sorted(SCHEMA_DIR.rglob("*.json")):
        relative = path.relative_to(SCHEMA_DIR)
        if len(relative.parts) == 1:
            if path.name.endswith(".schema.json"):
                names.append(path.name.removesuffix(".schema.json"))
        else:
            names.append(relative.with_suffix("").as_posix())
    # Top-level contracts first, then each folder's (entities, capabilities).
    return tuple(sorted(names, key=lambda name: ("/" in name, name)))


@cache
def load_schema(name: str) -> dict[str, Any]:
    with schema_path(name).open("rb") as fh:
        loaded: dict[str, Any] = json.load(fh)
    return loaded


# The entities the API returns, one schema each (schema/entities/NAME.json): the JSON of
# one typed record's `to_json` in `records` (tests/records/test_entities.py checks real
# ones). An operation's response schema references these rather than restating them; an
# answer that is not one entity is a view of schema/responses/ (`responses/NAME`), whose
# entities are `$ref`s to these (tests/gateway/server/test_views.py checks real answers).
ENTITY_DIR = SCHEMA_DIR / "entities"


@cache  # asked once per entity an operation's answer references
def entity_names() -> tuple[str, ...]:
    """Every entity with a schema: `agent`, `ledger-row`, `token`, ..."""
    return tuple(sorted(path.stem for path in ENTITY_DIR.glob("*.json")))


def entity_schema(name: str) -> dict[str, Any]:
    """The schema of one entity (`ledger-row`: schema/entities/ledger-row.json), cached:
    copy it before changing it."""
    if name not in entity_names():
        raise KeyError(f"no entity schema {name!r}: one of {', '.join(entity_names())}")
    return load_schema(f"entities/{name}")
