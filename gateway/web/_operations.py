"""The web doors onto the operation table: a route and its OpenAPI for each operation
(the server's), and a request read from a page's form the same way (the console's).

The handler reads the request's fields where the declaration says they travel
(path, query, body), with the located 400 `usage` errors of hand-written
routes, narrows it to what the bearer may ask, runs the operation on the
store's service in a worker thread, and answers its view.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gateway._params import id_text
from gateway.operations import Field, Operation, choice
from gateway.web._auth import Bearer
from gateway.web._documents import document_response
from gateway.web._http import (
    body_object,
    json_response,
    query_int,
    read_body,
    read_json,
    renamed_query,
)
from gateway.web._shared import Endpoint, Shared
from schema.errors import UsageError

__all__ = ["endpoint", "parameters", "read_request", "request_schema"]


def _query_value(request: Request, field: Field, headers: dict[str, str]) -> Any:
    spec = field.spec
    if field.kind == "int":
        low = 1 if spec.minimum is None else spec.minimum
        high = 2**31 - 1 if spec.maximum is None else spec.maximum
        return query_int(request, field.name, field.default, low, high)
    if field.kind == "bool":
        text = request.query_params.get(field.name, "true" if field.default else "false")
        return text.lower() in ("1", "true")
    if spec.renamed is not None:
        value, deprecation = renamed_query(request, field.name, spec.renamed)
        headers.update(deprecation)
    else:
        value = request.query_params.get(field.name, field.default)
    if value is not None and spec.choices:
        return choice(field, value)
    return value


def _body_values(op: Operation[Any], body: dict[str, Any]) -> dict[str, Any]:
    known = [f.name for f in op.located("body")]
    unknown = sorted(set(body) - set(known))
    if unknown:
        where = f"$.{unknown[0][:40]}"
        raise UsageError(
            f"{where} is not a field of {op.body_name}",
            details={"path": where, "fields": known},
        )
    values: dict[str, Any] = {}
    for field in op.located("body"):
        where, value = f"$.{field.name}", body.get(field.name)
        if field.spec.check is not None:
            if field.name in body and value is None:  # leave it out for its default
                field.spec.check(None, where)
            if value is None and not field.spec.required:
                continue
        elif value is not None or field.spec.required:
            value = id_text(value, where, field.spec.expected)
        values[field.name] = value
    return values


async def read_request(
    op: Operation[Any], request: Request, *, form: bool = False, limit: int | None = None
) -> tuple[Any, dict[str, str]]:
    """The operation's typed request from an HTTP request, and the response headers a
    deprecated parameter name earns (`Deprecation`, `Warning`).

    `form`: the query is a page's filter form (the console's): a blank field is no
    filter, and the paging fields are the page's own, not read here. `limit`: the body's
    limit in bytes, where it is the gateway's setting (`op.large_body`)."""
    headers: dict[str, str] = {}
    values: dict[str, Any] = {
        f.name: "/".join(request.path_params[s] for s in f.spec.segments or (f.name,))
        for f in op.located("path")
    }
    for field in op.located("query"):
        if form and (field.spec.paging or not request.query_params.get(field.name, "x")):
            continue
        values[field.name] = _query_value(request, field, headers)
    for field in op.located("header"):  # its check parses the text (an ETag)
        values[field.name] = request.headers.get(field.spec.header)
    limit = op.max_body_bytes if limit is None else limit
    if op.located("body"):
        body = body_object(await read_json(request, limit), "the body")
        if op.body_check is not None:
            op.body_check(body)
        values.update(_body_values(op, body))
    for field in op.located("document"):  # the whole body is the document, its run checks it
        if field.kind == "bytes":  # as sent, unparsed: its errors name places in these bytes
            raw = await read_body(request, limit)
            if not raw:
                raise UsageError(f"the request needs a JSON body: {op.body_name}")
            values[field.name] = raw
        else:
            values[field.name] = body_object(await read_json(request, limit), op.body_name)

    def locate(field: Field) -> str:
        if field.spec.where == "header":
            return field.spec.header
        return f"$.{field.name}" if field.spec.where == "body" else field.name

    return op.build(values, locate), headers


# The gateway's own policy around an operation, which the store (the CLI) does not apply:
# `before` checks the narrowed request on the loop (an agent's endpoint against the
# network policy), `after` adds to the view in the worker thread (an eval it queues).
Before = Callable[[Any, Shared], Awaitable[None]]
After = Callable[[Shared, Any, dict[str, Any]], dict[str, Any]]


def endpoint(
    op: Operation[Any], *, before: Before | None = None, after: After | None = None
) -> Endpoint:
    """The route of `op`, and what /openapi.json says of it."""
    if not op.routed:
        raise TypeError(f"{op.name} is the store's alone: it has no route")

    async def handle(request: Request, who: Bearer, shared: Shared) -> Response:
        limit = shared.max_body_bytes if op.large_body else None
        asked, headers = await read_request(op, request, limit=limit)
        if op.narrow is not None:
            asked = op.narrow(who, asked)
        if before is not None:
            await before(asked, shared)
        if op.settle:
            await shared.calls.drain()  # this process's answered calls are read settled
        if op.write is not None and op.media is not None:  # a document of any size
            write = op.write

            def produce(piece: Callable[[str], object]) -> None:
                write(shared.service, asked, who, piece)

            return await document_response(
                produce,
                status=op.created,
                media_type=f"{op.media(asked)}; charset=utf-8",
                headers=headers or None,
            )

        def work() -> dict[str, Any]:
            if op.run_for is not None:
                view = op.run_for(shared.service, asked, who)
            else:
                view = shared.service.call(op, asked)
                if op.present is not None:
                    view = op.present(who, asked, view, shared.service)
            return view if after is None else after(shared, asked, view)

        answer = await shared.run(work)
        status = op.created if op.status is None else op.status(asked, answer)
        if op.media is not None:  # a rendered document: its text, in its media type
            media = f"{op.media(asked)}; charset=utf-8"
            return Response(answer["text"], status, headers=headers or None, media_type=media)
        response = json_response(answer, status, headers=headers or None)
        if op.no_store:
            # The answer holds a secret: no cache or proxy along the way may keep it.
            response.headers["Cache-Control"] = "no-store"
        return response

    return Endpoint(
        op.method,
        op.path,
        op.roles,
        handle,
        op.summary,
        request=request_schema(op),
        response=None if op.response is None else op.response(),
        documents=tuple((media, None if s is None else s()) for media, s in op.media_types),
        parameters=parameters(op),
        renamed=tuple(
            (f.spec.renamed, f.name) for f in op.located("query") if f.spec.renamed is not None
        ),
        statuses=op.statuses,
    )


def parameters(op: Operation[Any]) -> tuple[dict[str, Any], ...]:
    """The OpenAPI query and header parameters of `op`, from its request type."""
    return tuple(
        {
            "name": f.spec.header if where == "header" else f.name,
            "in": where,
            "required": False,
            "description": f.spec.help,
            "schema": dict(f.spec.schema) if where == "header" else f.json_schema,
        }
        for where in ("query", "header")
        for f in op.located(where)
    )


def request_schema(op: Operation[Any]) -> dict[str, Any] | None:
    """The JSON Schema of `op`'s body, from its request type (None: it takes none)."""
    for document in op.located("document"):
        return dict(document.spec.schema)
    body = op.located("body")
    if not body:
        return None
    return {
        "type": "object",
        "required": [f.name for f in body if f.spec.required],
        "additionalProperties": False,
        "properties": {f.name: {**f.json_schema, "description": f.spec.help} for f in body},
    }
