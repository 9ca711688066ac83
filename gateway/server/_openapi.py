"""/openapi.json, generated from the endpoint table and the JSON Schemas of schema/.

Generated, not written: a route added to the table is in the spec, and a
test checks that the app's routes and the spec's paths are the same set.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

import re2

from schema import load_schema

__all__ = ["openapi"]

VERSION = "1"
_PARAM = re2.compile(r"\{([a-z_]+)\}")

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "details"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "details": {"type": "object"},
            },
        }
    },
}

RETRY_AFTER: dict[str, Any] = {
    "description": "whole seconds until the next call may go (rounded up, at least 1); "
    "the error's details carry it as retry_after_s, with retry_at",
    "schema": {"type": "integer", "minimum": 1},
}

_STATUS_TEXT = {
    202: "accepted: a JSON-RPC notification (no body)",
    400: "bad request (usage; on a live call also invalid_input: the input breaks the "
    "capability's input schema)",
    401: "no token, or an unknown, revoked or expired one",
    402: "denied: budget_exhausted",
    403: "the token's role may not do this (or a mandate denied the call)",
    404: "not found",
    409: "refused in the current state",
    413: "request body too large",
    422: "invalid document",
    429: "denied: rate_limited (the mandate's rate limit; see Retry-After)",
    502: "the agent's outcome was not ok (invalid_output: its output broke the capability's "
    "output schema, settled at zero)",
    503: "the store is unavailable",
    504: "the agent timed out",
}


def _component(name: str, components: dict[str, Any]) -> dict[str, Any]:
    """A schema file as a component, its `$defs` hoisted beside it (refs rewritten)."""
    key = name.removesuffix(".schema.json")
    if key not in components:
        schema = copy.deepcopy(load_schema(key))
        defs = schema.pop("$defs", {})
        for drop in ("$schema", "$id"):
            schema.pop(drop, None)

        def rewrite(node: Any) -> Any:
            if isinstance(node, dict):
                ref = node.get("$ref")
                if isinstance(ref, str) and ref.startswith("#/$defs/"):
                    node = {**node, "$ref": f"#/components/schemas/{key}.{ref[8:]}"}
                return {k: rewrite(v) for k, v in node.items()}
            if isinstance(node, list):
                return [rewrite(v) for v in node]
            return node

        components[key] = rewrite(schema)
        for def_name, def_schema in defs.items():
            components[f"{key}.{def_name}"] = rewrite(def_schema)
    return {"$ref": f"#/components/schemas/{key}"}


def _schema(spec: dict[str, Any] | None, components: dict[str, Any]) -> dict[str, Any]:
    if spec is None:
        return {"type": "object"}
    ref = spec.get("$ref")
    if isinstance(ref, str) and ref.endswith(".schema.json"):
        return _component(ref, components)
    return spec


def openapi(endpoints: Iterable[Any]) -> dict[str, Any]:
    components: dict[str, Any] = {"Error": ERROR_SCHEMA}
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in endpoints:
        operation: dict[str, Any] = {
            "summary": endpoint.summary,
            "operationId": f"{endpoint.method.lower()}_{endpoint.path}",
            "parameters": [
                {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                for name in _PARAM.findall(endpoint.path)
            ]
            + list(endpoint.parameters)
            + [
                {
                    "name": name,
                    "in": where,
                    "required": False,
                    "description": text,
                    "schema": {"type": "string"},
                }
                for where, given in (("query", endpoint.query), ("header", endpoint.headers))
                for name, text in given
            ]
            + [
                {
                    "name": old,
                    "in": "query",
                    "required": False,
                    "deprecated": True,
                    "description": f"deprecated: the old name of {new}",
                    "schema": {"type": "string"},
                }
                for old, new in endpoint.renamed
            ],
        }
        access = endpoint.access
        if access == "none":
            operation["security"] = []
            operation["x-holon-roles"] = ["none"]
        else:
            operation["x-holon-roles"] = ["any"] if access == "any" else sorted(access)
        if endpoint.request is not None:
            operation["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": _schema(endpoint.request, components)}},
            }
        ok: dict[str, Any] = {"description": "ok"}
        if endpoint.documents:
            ok["content"] = {
                media: {"schema": {"type": "string"} if s is None else _schema(s, components)}
                for media, s in endpoint.documents
            }
        elif endpoint.media == "application/json":
            ok["content"] = {"application/json": {"schema": _schema(endpoint.response, components)}}
        else:
            ok["content"] = {endpoint.media: {"schema": {"type": "string"}}}
        if endpoint.events is not None:
            described = {"type": "string", "description": endpoint.events}
            ok["content"]["text/event-stream"] = {"schema": described}
        responses: dict[str, Any] = {"200": ok}
        if endpoint.method == "POST" and endpoint.request is not None:
            responses["201"] = ok
        shape = endpoint.error_schema or {"$ref": "#/components/schemas/Error"}
        error = {"content": {"application/json": {"schema": shape}}}
        statuses = {400} | set(endpoint.statuses)
        if access != "none":
            statuses |= {401, 403}
        for status in sorted(statuses):
            if status < 300:  # a success without a body (a JSON-RPC notification's 202)
                responses[str(status)] = {"description": _STATUS_TEXT.get(status, "ok")}
                continue
            responses[str(status)] = {"description": _STATUS_TEXT.get(status, "error"), **error}
        if 429 in statuses:
            responses["429"]["headers"] = {"Retry-After": RETRY_AFTER}
        operation["responses"] = responses
        paths.setdefault(endpoint.path, {})[endpoint.method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "holon gateway",
            "version": VERSION,
            "description": "Agents under mandates, with a built-in quality gate.",
        },
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
        "paths": paths,
    }
