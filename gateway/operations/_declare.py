"""How an operation is declared: its typed request, where each field travels, its output.

An `Operation` is a value: name, HTTP method and path, roles, a request type
(a frozen dataclass whose fields are declared with `param`), the response's
JSON Schema, the one implementation over the store's service, and how the CLI
shows its answer. The doors read it: gateway/web/_operations.py makes the
route and its OpenAPI parameters, gateway/client/_http.py the request it
sends, gateway/cli/_operations.py the flags and the rendering, the console
parses its filters with it.

Nothing here imports the store, httpx or Starlette: the CLI builds its parser
from this table, and `holon --help` loads no store code
(tests/gateway/test_cli_startup.py).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

from schema.errors import UsageError
from schema.jsontext import JSONObject

if TYPE_CHECKING:
    from gateway.service import StoreService


class Schema:
    """An answer's JSON Schema, built when a door first asks for it (`schema()`), not when
    the table is declared: the CLI builds the table on every start, `holon --help`
    included, and reads no schema file for it. Built once, then kept."""

    __slots__ = ("_build", "_built", "about")

    def __init__(self, build: Callable[[], dict[str, Any]], about: str) -> None:
        self._build = build
        self._built: dict[str, Any] | None = None
        self.about = about  # what it is, in a few words (docs/operations.md says it)

    def __call__(self) -> dict[str, Any]:
        if self._built is None:
            self._built = self._build()
        return self._built


# Where the shipped schemas live on the wire: a `$ref` to one of the entities or response
# views below is put in place by `standalone`.
_SHIPPED = "https://holon.dev/schema/"


def standalone(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with its `$defs` and its references to entities and response views put
    where they are referenced, so it stands alone in the OpenAPI document (a `#/$defs/...`
    there would point into the document's own root)."""
    from schema import load_schema

    defs = schema.get("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            rest = {k: inline(v) for k, v in node.items() if k != "$ref"}
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return {**inline(defs[ref.removeprefix("#/$defs/")]), **rest}
            name = ref.removeprefix(_SHIPPED).removesuffix(".json") if ref else ""
            if name.startswith(("entities/", "responses/")) and "#" not in name:
                return {**standalone(load_schema(name)), **rest}
            return node if ref else rest
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return {k: inline(v) for k, v in schema.items() if k not in ("$schema", "$id", "$defs")}


def entity(name: str) -> Schema:
    """An entity's JSON Schema (schema/entities/NAME.json, what its record's `to_json`
    writes) as an operation's response schema: declared there once, referenced here."""

    def build() -> dict[str, Any]:
        from schema import entity_schema

        return standalone(entity_schema(name))

    return Schema(build, f"the `{name}` entity (schema/entities/{name}.json)")


def view(name: str) -> Schema:
    """A response view's JSON Schema (schema/responses/NAME.json): an answer that is not
    one entity (a registration's status, warnings and agent), written once there; its
    entities are `$ref`s to theirs."""

    def build() -> dict[str, Any]:
        from schema import load_schema

        return standalone(load_schema(f"responses/{name}"))

    return Schema(build, f"the view of schema/responses/{name}.json")


def page_of(name: str) -> Schema:
    """The response schema of a page of an entity: `{items, next_cursor}`."""
    of = entity(name)
    return Schema(
        lambda: _page(of(), "next_cursor"), f"a page (`items`, `next_cursor`), each item {of.about}"
    )


def list_of(name: str) -> Schema:
    """The response schema of every one of an entity, as `{items}` (no paging)."""
    of = entity(name)
    return Schema(lambda: _page(of()), f"`items`, each {of.about}")


def paged(page: Any) -> JSONObject:
    """A page of the store's entities as an answer (`page_of`): each one's `to_json`, and
    the cursor of the next page."""
    return {"items": [item.to_json() for item in page.items], "next_cursor": page.next_cursor}


def document(name: str) -> Schema:
    """A document of schema/ (`certificate.schema.json`) answered as it is: a component of
    /openapi.json, referenced by its file name."""
    return Schema(lambda: {"$ref": name}, f"the document of schema/{name}")


def _page(item: dict[str, Any], *more: str) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["items", *more],
        "properties": {
            "items": {"type": "array", "items": item},
            **{name: {"type": ["string", "null"]} for name in more},
        },
    }


# The table's own types compare by identity and generate no __eq__, __hash__ or __repr__:
# each generated method costs an exec when the module loads, on every CLI start.
_LEAN: dict[str, bool] = {"eq": False, "repr": False}
# Where a field travels. "document": the whole JSON body is the field's value (a manifest,
# a mandate), checked by the implementation against its schema; a `bytes` document is the
# body as sent, unparsed (a report, whose errors name the places in those very bytes).
# "bearer": no door reads it from the request; the operation's `narrow` fills it from who
# asks (the granting token), and it keeps its default on the store. "local": no door reads
# it from a request and none sends one; the command's `Local` fills it on this machine for
# the store's run (the file a report was read from, which its errors name), and through a
# gateway it keeps its default. "header": an HTTP request header (`Param.header` names it),
# a flag on the CLI (a precondition: `--if-revision` is `If-Match`).
Where = Literal["path", "query", "body", "document", "bearer", "local", "header"]
R = TypeVar("R")
Kind = Literal["str", "bool", "int", "bytes", "custom"]


class Bearer(Protocol):
    """A bearer as the operations read it (`gateway.web._auth.Bearer`, or the console's
    session, which stands for its token): what narrowing reads."""

    @property
    def kind(self) -> str | None: ...

    @property
    def name(self) -> str: ...

    @property
    def is_operator(self) -> bool: ...

    @property
    def token_id(self) -> str | None:
        """The token's id (`tok_…`): who granted what it grants."""
        ...

    def require_agent(self, agent_id: str) -> None:
        """Forbidden unless an operator, or the org whose agent it is."""
        ...


@dataclass(frozen=True, **_LEAN)
class Param:
    """One request field: its help, where it travels, and how each door spells it.

    `flag` is the CLI's spelling ("--all"), None for a positional, "" for a field the
    CLI does not offer. `cli_help` replaces `help` where the CLI's wording differs
    (the API's "operator only" is no news on the store). `check(value, where)` runs
    in every door, with `where` naming the field the way that door does (`--expires-in`,
    `$.expires_in`), and returns the value: a `custom` field's check also parses it
    (`min_eval_score`: query text to a Decimal).
    `renamed`: the field's old name (query and flag), accepted for one release.
    `segments`: the path parameters a path field spans, joined by "/".
    A `document` field's `schema` is its body's JSON Schema (`{"$ref": "mandate.schema.json"}`),
    or, for a body its run checks as bytes, a description of it (a whole report).
    """

    help: str
    where: Where = "query"
    flag: str | None = None
    cli_help: str | None = None
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None
    paging: bool = False  # cursor and limit: not a filter (the console keeps its own page size)
    renamed: str | None = None
    required: bool = False
    check: Callable[[Any, str], Any] | None = None
    schema: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # more JSON Schema
    expected: str = "a string"  # a body string's shape, in its error
    # A path field over several segments: an agent id `org/name` is {org}/{name}.
    segments: tuple[str, ...] = ()
    # The CLI's own check, as an argparse type (its error names the argument, as argparse
    # does): for values the API reads as given (a path the router already split).
    cli_type: Callable[[str], Any] | None = None
    # The CLI's default where it differs from the API's (a CLI listing's shorter page).
    cli_default: Any = None
    header: str = ""  # a "header" field's HTTP header ("If-Match")


def param(default: Any = None, /, **spec: Any) -> Any:
    """A request field: `name: str | None = param(help="...")` (see `Param`)."""
    if spec.pop("required", False):
        return dataclasses.field(metadata={"holon": Param(required=True, **spec)})
    return dataclasses.field(default=default, metadata={"holon": Param(**spec)})


def document_field(help: str, schema: Any) -> Any:
    """The request's body as one whole document (a manifest, a mandate, a report): the
    CLI offers no flag for it, as each command reads it from a file it names."""
    return param(required=True, help=help, where="document", flag="", schema=schema)


def cursor() -> Any:
    return param(
        help="from a previous page", cli_help="continue after a previous page", paging=True
    )


def limit(default: int = 100, maximum: int = 1000, *, cli_default: int | None = None) -> Any:
    return param(
        default,
        help=f"1 to {maximum} (default {default})",
        cli_help=f"page size (default {cli_default or default})",
        minimum=1,
        maximum=maximum,
        paging=True,
        cli_default=cli_default,
    )


@dataclass(frozen=True, **_LEAN)
class Field:
    """A request field as the doors read it: its name, Python kind, default and `Param`."""

    name: str
    kind: Kind
    default: Any
    spec: Param

    @property
    def flag(self) -> str | None:
        """The CLI flag; None for a positional argument (a path field)."""
        if self.spec.flag is not None:
            return self.spec.flag or None
        return None if self.spec.where == "path" else "--" + self.name.replace("_", "-")

    @property
    def on_cli(self) -> bool:
        return self.spec.flag != ""

    @property
    def json_schema(self) -> dict[str, Any]:
        kind = {"str": "string", "bool": "boolean", "int": "integer"}.get(self.kind)
        out: dict[str, Any] = {} if kind is None else {"type": kind}
        if self.spec.choices:
            out = {"enum": list(self.spec.choices)}
        if self.spec.minimum is not None:
            out["minimum"] = self.spec.minimum
        if self.spec.maximum is not None:
            out["maximum"] = self.spec.maximum
        if self.kind in ("bool", "int") and self.default is not None:
            out["default"] = self.default
        return {**out, **self.spec.schema}


_FIELDS: dict[type[Any], tuple[Field, ...]] = {}


def fields(request: type[Any]) -> tuple[Field, ...]:
    """The declared fields of a request type, in declaration order (read once a type)."""
    if request not in _FIELDS:
        _FIELDS[request] = _declared(request)
    return _FIELDS[request]


def _declared(request: type[Any]) -> tuple[Field, ...]:
    hints = typing.get_type_hints(request)
    found = []
    for f in dataclasses.fields(request):
        spec = f.metadata.get("holon")
        if not isinstance(spec, Param):
            raise TypeError(f"{request.__name__}.{f.name} is not declared with param()")
        hint = hints[f.name]
        base = {t for t in typing.get_args(hint) if t is not type(None)} or {hint}
        kind: Kind = "custom"
        if base == {str}:
            kind = "str"
        elif base == {bool}:
            kind = "bool"
        elif base == {int}:
            kind = "int"
        elif base == {bytes}:
            kind = "bytes"
            if spec.where != "document":
                raise TypeError(f"{request.__name__}.{f.name}: bytes are a document (the body)")
        if kind == "custom" and spec.check is None and spec.where in ("path", "query", "body"):
            raise TypeError(f"{request.__name__}.{f.name}: a {hint} field needs a check")
        default = None if f.default is dataclasses.MISSING else f.default
        found.append(Field(f.name, kind, default, spec))
    return tuple(found)


def filters(request: Any) -> dict[str, str]:
    """The request's filters that are set, as query text (the console's links keep them)."""
    return {
        f.name: str(getattr(request, f.name))
        for f in fields(type(request))
        if not f.spec.paging and f.spec.where == "query" and getattr(request, f.name) is not None
    }


# -- how the CLI shows an answer -----------------------------------------------------


@dataclass(frozen=True, **_LEAN)
class Column:
    """A table column (or a `key: value` line): its title and its cell from one row."""

    title: str
    value: Callable[[JSONObject], Any]


def key(name: str) -> Callable[[JSONObject], Any]:
    return lambda row: row[name]


@dataclass(frozen=True, **_LEAN)
class Table:
    """The answer's `items` (or another list of it) as a table; a `next_cursor` becomes the
    next page's command."""

    columns: tuple[Column, ...]
    empty: str = ""
    items: str = "items"


@dataclass(frozen=True, **_LEAN)
class Fields:
    """The answer (or its object at key `of`) as aligned `key: value` lines; `extra`: more
    of them, as many as the answer has (an imported eval's checked suites)."""

    fields: tuple[Column, ...]
    of: str | None = None
    extra: Callable[[JSONObject], Sequence[tuple[str, Any]]] = lambda view: ()


@dataclass(frozen=True, **_LEAN)
class Lines:
    """The answer as lines on stdout and notes on stderr; `json` rewrites the --json answer."""

    lines: Callable[[JSONObject], Sequence[str]] = lambda view: ()
    notes: Callable[[JSONObject], Sequence[str]] = lambda view: ()
    json: Callable[[JSONObject], Any] | None = None
    warnings: Callable[[JSONObject], Sequence[str]] = lambda view: ()  # on stderr, first


@dataclass(frozen=True, **_LEAN)
class Sections:
    """Several renderings of one answer, one after the other (`gap`: a blank line between)."""

    parts: tuple[Table | Fields | Lines, ...]
    gap: bool = True


@dataclass(frozen=True, **_LEAN)
class Json:
    """The answer as one JSON document, with --json or without: a document to keep or hand
    on (a key set, a signed revocation list), not a view to read."""


Render = Table | Fields | Lines | Sections | Json


@dataclass(frozen=True, **_LEAN)
class Cli:
    """The CLI command: its help line, description and rendering (flags come from the request)."""

    help: str
    render: Render
    description: str | None = None
    # The answer's verdict: False exits 1 (CheckFailed's code) once it is shown, as a
    # `mandates check` that denies does.
    passed: Callable[[JSONObject], bool] | None = None


@dataclass(frozen=True, **_LEAN)
class Operation(Generic[R]):
    """One operation of holon, declared once (docs/architecture.md, Operations)."""

    name: str  # "ledger.list"
    # "/v1/ledger"; its {fields} are the request's path fields. "" (and no method): the
    # store's alone, a command of the CLI acting as operator on it, with no route (`routed`).
    method: str
    path: str
    # "none": a public document, read without a token (/.well-known/jwks.json).
    roles: frozenset[str] | Literal["any", "none"]
    request: type[R]
    summary: str  # the OpenAPI summary
    run: Callable[[StoreService, R], JSONObject]  # the implementation over the store
    # None: an API-only operation, or one a command that does more runs (`holon eval`).
    cli: Cli | None
    # The answer's JSON Schema (an entity, a page of one, a response view): every operation
    # declares one (tests/gateway/server/test_views.py checks each answer against it), but those
    # whose answer is a rendered document, which declare `media_types` instead.
    response: Schema | None = None
    statuses: tuple[int, ...] = ()  # error statuses beyond 400/401/403
    created: int = 200  # the status of a success (201 for a create)
    # The status of a success where the request or its answer decides it (a dry run
    # creates nothing; a grant that updated a mandate is 200): `created` when None.
    status: Callable[[R, JSONObject], int] | None = None
    no_store: bool = False  # the answer holds a secret: no cache may keep it
    settle: bool = False  # read after this process's answered live calls are settled
    # Who may ask what, before the run: returns the request to run, or raises.
    narrow: Callable[[Bearer, R], R] | None = None
    # After the run, in the worker thread: the view as `who` may see it (an author's keyed
    # digests), or the refusal of what it may not see (NotFound). The store's service (the
    # CLI, operator) answers the view as it is.
    present: Callable[[Bearer, R, JSONObject, StoreService], JSONObject] | None = None
    # The run for a bearer, in the worker thread, when what it may see is not a view of the
    # operator's answer (an eval's progress of its public cells only) or asks the store
    # first (whose agent the eval is): the server runs it instead of `run` and `present`.
    run_for: Callable[[StoreService, R, Bearer], JSONObject] | None = None
    # The answer is a rendered document, not a JSON view: its media type, chosen by the
    # request (a report's format). Every door's answer is then `{"text": the document}`,
    # and the API answers the text itself.
    media: Callable[[R], str] | None = None
    # The document written a piece at a time to `write` (a report of any size), for the
    # bearer: the API runs it instead of `run_for` and streams the pieces as they come,
    # never holding the document whole.
    write: Callable[[StoreService, R, Bearer, Callable[[str], object]], None] | None = None
    # Each media type `media` may choose, with the JSON Schema of a JSON one (a report's)
    # and None for text (Markdown, HTML): what /openapi.json says the answer is.
    media_types: tuple[tuple[str, Schema | None], ...] = ()
    # The body's own check of its keys (before its fields are read), where its errors say
    # the shape the route always named (`unknown keys: ...`), instead of the table's.
    body_check: Callable[[JSONObject], None] | None = None
    body_name: str = "the body"  # "a token request": named in an unknown key's error
    # The body's bound in bytes, the operation's own whatever HOLON_MAX_BODY_BYTES says (a
    # report's 20 MiB): the route refuses past it (413) before parsing anything, and a
    # command reading the body from a file reads no more.
    max_body_bytes: int = 16 * 1024
    # The body may be as large as the gateway's HOLON_MAX_BODY_BYTES, not max_body_bytes.
    large_body: bool = False
    # How long the HTTP service waits for the answer at least, where the run outlasts the
    # client's usual timeout (60 s): checking a 20 MiB report takes about 30 s.
    timeout_s: float | None = None

    @property
    def fields(self) -> tuple[Field, ...]:
        return fields(self.request)

    @property
    def routed(self) -> bool:
        """The API serves it (else the store's CLI alone runs it; its path fields are the
        command's positionals)."""
        return bool(self.path)

    def located(self, where: Where) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.spec.where == where)

    def build(self, values: Mapping[str, Any], locate: Callable[[Field], str]) -> R:
        """The request from values read by a door; each field's check runs, named by `locate`."""
        given = {}
        for f in self.fields:
            value = values.get(f.name, f.default)
            if f.spec.check is not None and (value is not None or f.spec.required):
                value = f.spec.check(value, locate(f))
            given[f.name] = value
        return self.request(**given)


def created_if_new(asked: Any, view: JSONObject) -> int:
    """A write's status (`Operation.status`): 201 when its answer's `status` says it
    created the thing, 200 when it updated it or changed nothing."""
    return 201 if view["status"] == "created" else 200


def choice(field: Field, value: str) -> str:
    """A value of a field with choices: one of them, or the usage error that lists them."""
    if value not in field.spec.choices:
        raise UsageError(f"{field.name} must be " + " or ".join(field.spec.choices))
    return value
