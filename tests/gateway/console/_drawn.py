"""Documents drawn from schema/'s JSON Schemas, with their optional fields present and absent.

A small strategy builder for the part of JSON Schema that schema/ uses (type, const,
enum, pattern, lengths, bounds, properties, required, additionalProperties,
propertyNames, items, uniqueItems, oneOf and anyOf, $ref within a schema and to
another of schema/'s); what it cannot express (allOf, if/then, oneOf's "only one")
is kept by checking each drawn document against the whole schema with holon's own
validator (`schema.make_validator`: RE2 patterns, the shipped schemas' $refs).
hypothesis-jsonschema would do this, but its 0.23 breaks on Hypothesis 6.170
(`many.more`), so it is not a dependency.

Each optional property is present by chance ("some"), always ("all"), or never
where the schema lets it go ("none"), at every depth: `documents` draws all three.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from hypothesis import strategies as st

from schema import make_validator

SCHEMAS = Path(__file__).resolve().parents[3] / "schema"
HOME = "https://holon.dev/schema/"
TEXT_CAP = 600  # a drawn free text's length at most: past the console's show() bounds
Optional = Literal["some", "all", "none"]


def schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / name).read_text())
    return loaded


class _Builder:
    def __init__(self, root: dict[str, Any], optional: Optional, most: int = 5) -> None:
        self.root = root
        self.optional = optional
        self.most = most  # items in an array, properties in a map, at most

    def build(self, node: dict[str, Any]) -> st.SearchStrategy[Any]:
        if "$ref" in node:
            ref = node["$ref"]
            where, _, pointer = ref.partition("#")
            builder = self
            if where:  # another of schema/'s documents
                assert where.startswith(HOME), ref
                builder = _Builder(schema(where.removeprefix(HOME)), self.optional, self.most)
            target: Any = builder.root
            for part in pointer.strip("/").split("/") if pointer.strip("/") else []:
                target = target[part]
            return builder.build(target)
        for key in ("oneOf", "anyOf"):
            if key in node:
                rest = {k: v for k, v in node.items() if k != key}
                return st.one_of([self.build({**rest, **branch}) for branch in node[key]])
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
        if not kind:  # any JSON value
            return st.recursive(
                st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                lambda inner: (
                    st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=10), inner, max_size=3)
                ),
                max_leaves=6,
            )
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
            max_size=min(node.get("maxItems", self.most), self.most),
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
                max_size=min(node.get("maxProperties", self.most), self.most),
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


def strategy(
    root: dict[str, Any], optional: Optional, most: int = 5
) -> st.SearchStrategy[dict[str, Any]]:
    """Documents of `root` with optional properties `optional`, each valid against it."""
    validator = make_validator(root)
    drawn: st.SearchStrategy[dict[str, Any]] = _Builder(root, optional, most).build(root)
    return drawn.filter(validator.is_valid)


def documents(
    name: str, most: int = 5, **narrowed: dict[str, Any]
) -> st.SearchStrategy[dict[str, Any]]:
    """Valid documents of schema `name`, optional fields by chance, all present, all absent.

    `narrowed` replaces top-level properties' schemas (say, a shorter id pattern, so that
    a drawn id can be made unique); every document is still valid against the original.
    `most`: items in an array at most (a large document draws slowly)."""
    original = schema(name)
    root = {**original, "properties": {**original["properties"], **narrowed}}
    return st.one_of([strategy(root, o, most) for o in ("some", "all", "none")]).filter(
        make_validator(original).is_valid
    )
