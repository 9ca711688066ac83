"""Documents drawn from schema/'s JSON Schemas, with their optional fields present and absent.

A small strategy builder for the part of JSON Schema that schema/ uses (type, const,
enum, pattern, lengths, bounds, properties, required, additionalProperties,
propertyNames, items, uniqueItems, local $ref); what it cannot express (allOf's
if/then) is kept by checking each drawn document against the whole schema.
hypothesis-jsonschema would do this, but its 0.23 breaks on Hypothesis 6.170
(`many.more`), so it is not a dependency.

Each optional property is present by chance ("some"), always ("all"), or never
where the schema lets it go ("none"), at every depth: `documents` draws all three.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import jsonschema
from hypothesis import strategies as st

SCHEMAS = Path(__file__).resolve().parents[3] / "schema"
TEXT_CAP = 600  # a drawn free text's length at most: past the console's show() bounds
Optional = Literal["some", "all", "none"]


def schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / name).read_text())
    return loaded


class _Builder:
    def __init__(self, root: dict[str, Any], optional: Optional) -> None:
        self.root = root
        self.optional = optional

    def build(self, node: dict[str, Any]) -> st.SearchStrategy[Any]:
        if "$ref" in node:
            ref = node["$ref"]
            assert ref.startswith("#/$defs/"), ref
            return self.build(self.root["$defs"][ref.removeprefix("#/$defs/")])
        if "const" in node:
            return st.just(node["const"])
        if "enum" in node:
            return st.sampled_from(node["enum"])
        kind = node.get("type")
        if isinstance(kind, list):
            return st.one_of([self.build({**node, "type": k}) for k in kind])
        if kind == "null":
            return st.none()
        if kind == "boolean":
            return st.booleans()
        if kind == "string":
            return self._string(node)
        if kind in ("number", "integer"):
            return self._number(node, kind)
        if kind == "array":
            return self._array(node)
        if kind == "object" or "properties" in node:
            return self._object(node)
        raise AssertionError(f"no strategy for {node}")

    def _string(self, node: dict[str, Any]) -> st.SearchStrategy[str]:
        low, high = node.get("minLength", 0), min(node.get("maxLength", TEXT_CAP), TEXT_CAP)
        if "pattern" in node:
            drawn: st.SearchStrategy[str] = st.from_regex(node["pattern"], fullmatch=True)
            return drawn.filter(lambda s: low <= len(s) <= node.get("maxLength", 10**9))
        return st.text(min_size=low, max_size=high)

    def _number(self, node: dict[str, Any], kind: str) -> st.SearchStrategy[Any]:
        low, high = node.get("minimum"), node.get("maximum")
        if kind == "integer":
            return st.integers(min_value=low, max_value=high)
        above = node.get("exclusiveMinimum")
        floats = st.floats(
            min_value=above if above is not None else low,
            max_value=high,
            exclude_min=above is not None,
            allow_nan=False,
            allow_infinity=False,
        )
        whole = st.integers(min_value=int(above) + 1 if above is not None else low, max_value=high)
        return st.one_of(whole, floats)

    def _array(self, node: dict[str, Any]) -> st.SearchStrategy[list[Any]]:
        items = self.build(node.get("items", {"type": "string"}))
        return st.lists(
            items,
            min_size=node.get("minItems", 0),
            max_size=min(node.get("maxItems", 5), 5),
            unique_by=(lambda v: json.dumps(v, sort_keys=True))
            if node.get("uniqueItems")
            else None,
        )

    def _object(self, node: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
        properties: dict[str, Any] = node.get("properties", {})
        extra = node.get("additionalProperties")
        if not properties and isinstance(extra, dict):  # a map: names by propertyNames
            names = self._string({"type": "string", **node.get("propertyNames", {})})
            return st.dictionaries(
                names,
                self.build(extra),
                min_size=node.get("minProperties", 0),
                max_size=min(node.get("maxProperties", 4), 4),
            )
        required = set(node.get("required", ()))
        fields: dict[str, st.SearchStrategy[Any]] = {}
        optional: dict[str, st.SearchStrategy[Any]] = {}
        for name, sub in properties.items():
            strategy = self.build(sub)
            if name in required or self.optional == "all":
                fields[name] = strategy
            elif self.optional == "some":
                optional[name] = strategy
        return st.fixed_dictionaries(fields, optional=optional)


def strategy(root: dict[str, Any], optional: Optional) -> st.SearchStrategy[dict[str, Any]]:
    """Documents of `root` with optional properties `optional`, each valid against it."""
    validator = jsonschema.Draft202012Validator(root)
    drawn: st.SearchStrategy[dict[str, Any]] = _Builder(root, optional).build(root)
    return drawn.filter(validator.is_valid)


def documents(name: str, **narrowed: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Valid documents of schema `name`, optional fields by chance, all present, all absent.

    `narrowed` replaces top-level properties' schemas (say, a shorter id pattern, so that
    a drawn id can be made unique); every document is still valid against the original."""
    original = schema(name)
    root = {**original, "properties": {**original["properties"], **narrowed}}
    return st.one_of([strategy(root, o) for o in ("some", "all", "none")]).filter(
        jsonschema.Draft202012Validator(original).is_valid
    )
