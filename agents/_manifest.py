"""The agent manifest: who an agent is, where it answers, what it claims and costs.

Validated against `schema/agent.schema.json` with file:line:col errors; the
checks JSON Schema cannot express (URL shape, protocol/endpoint agreement)
follow here with the same error shape.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal, get_args

from schema import Document, load_document, parse_document, validate_document, validator
from schema.errors import InputError, Location, ManifestError

Protocol = Literal["holon-http", "a2a", "asgi", "mcp", "openai-chat"]

PROTOCOLS: tuple[str, ...] = get_args(Protocol)
"""Every protocol a manifest may name (the schema's enum; a test keeps the two equal)."""

PROTOCOL_SECTIONS: dict[str, str] = {"mcp": "mcp", "openai-chat": "openai_chat"}
"""The manifest section a protocol reads (and requires); no other protocol may carry it."""

CARD_PROTOCOLS: frozenset[str] = frozenset({"a2a", "mcp"})
"""Protocols whose agent describes itself by a document a certificate binds by digest
(an A2A agent card; an MCP server's info and tool list): `Identity.card_digest`."""

__all__ = [
    "CARD_PROTOCOLS",
    "PROTOCOLS",
    "PROTOCOL_SECTIONS",
    "AgentLimits",
    "Manifest",
    "McpSpec",
    "OpenAIChatSpec",
    "Pricing",
    "load_manifest",
    "manifest_from_dict",
]


@dataclass(frozen=True)
class AgentLimits:
    """What the agent promises per call; sent on every call as request headers."""

    max_cost_usd: Decimal | None = None
    timeout_s: Decimal | None = None


@dataclass(frozen=True)
class Pricing:
    """What a live call costs the caller. Money is Decimal, never float."""

    per_call_usd: Decimal = Decimal(0)
    per_1k_input_tokens_usd: Decimal | None = None
    per_1k_output_tokens_usd: Decimal | None = None
    # A model API lists its prices per million tokens; one unit per side (the schema).
    per_1m_input_tokens_usd: Decimal | None = None
    per_1m_output_tokens_usd: Decimal | None = None

    @property
    def prices_tokens(self) -> bool:
        """Whether any token is priced (a call then cannot be priced without usage)."""
        return any(
            price is not None
            for price in (
                self.per_1k_input_tokens_usd,
                self.per_1k_output_tokens_usd,
                self.per_1m_input_tokens_usd,
                self.per_1m_output_tokens_usd,
            )
        )


@dataclass(frozen=True)
class McpSpec:
    """`protocol: mcp`: the MCP tool each claimed capability calls."""

    tools: tuple[tuple[str, str], ...]  # (capability, tool name), in manifest order

    def tool(self, capability: str) -> str | None:
        return dict(self.tools).get(capability)


@dataclass(frozen=True)
class OpenAIChatSpec:
    """`protocol: openai-chat`: what the chat-completions request is made of."""

    model: str
    template: str
    system: str | None = None
    model_identity: Literal["exact", "alias"] = "exact"
    model_aliases: tuple[str, ...] = ()
    strict: bool = False
    max_tokens: int | None = None
    temperature: Decimal | None = None
    # Asked with stream: true (every call, live and eval alike), read as events.
    stream: bool = False

    def accepts_model(self, answered: str) -> bool:
        """Whether a response's `model` is the configured one (or, `alias`, one of its aliases)."""
        if answered == self.model:
            return True
        return self.model_identity == "alias" and answered in self.model_aliases

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.model, "template": self.template}
        if self.system is not None:
            out["system"] = self.system
        if self.model_identity != "exact":
            out["model_identity"] = self.model_identity
        if self.model_aliases:
            out["model_aliases"] = list(self.model_aliases)
        if self.strict:
            out["strict"] = True
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens
        if self.temperature is not None:
            out["temperature"] = self.temperature
        if self.stream:
            out["stream"] = True
        return out


@dataclass(frozen=True)
class Manifest:
    id: str
    version: str
    protocol: Protocol
    endpoint: str
    capabilities: tuple[str, ...]
    limits: AgentLimits = field(default_factory=AgentLimits)
    pricing: Pricing | None = None
    contact: str | None = None
    description: str | None = None
    mcp: McpSpec | None = None
    openai_chat: OpenAIChatSpec | None = None

    @property
    def org(self) -> str:
        return self.id.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.id.split("/", 1)[1]

    @property
    def in_process(self) -> bool:
        return self.endpoint.startswith("asgi:")

    def to_json(self) -> dict[str, Any]:
        """The manifest as a JSON document (money as decimal strings), as registered."""
        out: dict[str, Any] = {
            "schema_version": 1,
            "id": self.id,
            "version": self.version,
            "protocol": self.protocol,
            "endpoint": self.endpoint,
            "capabilities": list(self.capabilities),
        }
        limits: dict[str, Any] = {}
        if self.limits.max_cost_usd is not None:
            limits["max_cost_usd"] = str(self.limits.max_cost_usd)
        if self.limits.timeout_s is not None:
            limits["timeout_s"] = self.limits.timeout_s
        if limits:
            out["limits"] = limits
        if self.pricing is not None:
            pricing: dict[str, Any] = {"per_call_usd": str(self.pricing.per_call_usd)}
            if self.pricing.per_1k_input_tokens_usd is not None:
                pricing["per_1k_input_tokens_usd"] = str(self.pricing.per_1k_input_tokens_usd)
            if self.pricing.per_1k_output_tokens_usd is not None:
                pricing["per_1k_output_tokens_usd"] = str(self.pricing.per_1k_output_tokens_usd)
            if self.pricing.per_1m_input_tokens_usd is not None:
                pricing["per_1m_input_tokens_usd"] = str(self.pricing.per_1m_input_tokens_usd)
            if self.pricing.per_1m_output_tokens_usd is not None:
                pricing["per_1m_output_tokens_usd"] = str(self.pricing.per_1m_output_tokens_usd)
            out["pricing"] = pricing
        if self.contact is not None:
            out["contact"] = self.contact
        if self.description is not None:
            out["description"] = self.description
        if self.mcp is not None:
            out["mcp"] = {"tools": dict(self.mcp.tools)}
        if self.openai_chat is not None:
            out["openai_chat"] = self.openai_chat.to_json()
        return out


def _money(value: Any) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def parse_manifest(document: Document) -> Manifest:
    """Validate a loaded document and build the Manifest, or raise ManifestError."""
    if not isinstance(document.value, dict):
        raise document.error("expected a manifest object at the top level", cls=ManifestError)
    validate_document(document, validator("agent"), cls=ManifestError, what="agent manifest")
    data: dict[str, Any] = document.value
    protocol: Protocol = data["protocol"]
    endpoint: str = data["endpoint"]
    if endpoint.startswith("asgi:"):
        if protocol != "asgi":
            raise document.error(
                f"an 'asgi:' endpoint needs protocol 'asgi', not {protocol!r}",
                ("protocol",),
                cls=ManifestError,
            )
    else:
        if protocol == "asgi":
            raise document.error(
                "protocol 'asgi' needs an endpoint 'asgi:package.module:attribute'",
                ("endpoint",),
                cls=ManifestError,
            )
        _check_url(document, endpoint)
    for owner, section in PROTOCOL_SECTIONS.items():
        if section in data and protocol != owner:
            raise document.error(
                f"'{section}' is read only with protocol {owner!r}, not {protocol!r}",
                (section,),
                cls=ManifestError,
            )
    _check_token_units(document, data.get("pricing") or {})
    mcp = _mcp_spec(document, data)
    openai_chat = _openai_chat_spec(document, data)
    limits = data.get("limits", {})
    pricing = data.get("pricing")
    timeout = limits.get("timeout_s")
    return Manifest(
        id=data["id"],
        version=data["version"],
        protocol=protocol,
        endpoint=endpoint,
        capabilities=tuple(data["capabilities"]),
        limits=AgentLimits(
            max_cost_usd=_money(limits.get("max_cost_usd")),
            timeout_s=None if timeout is None else Decimal(timeout),
        ),
        pricing=None
        if pricing is None
        else Pricing(
            per_call_usd=_money(pricing.get("per_call_usd")) or Decimal(0),
            per_1k_input_tokens_usd=_money(pricing.get("per_1k_input_tokens_usd")),
            per_1k_output_tokens_usd=_money(pricing.get("per_1k_output_tokens_usd")),
            per_1m_input_tokens_usd=_money(pricing.get("per_1m_input_tokens_usd")),
            per_1m_output_tokens_usd=_money(pricing.get("per_1m_output_tokens_usd")),
        ),
        contact=data.get("contact"),
        description=data.get("description"),
        mcp=mcp,
        openai_chat=openai_chat,
    )


def _check_token_units(document: Document, pricing: dict[str, Any]) -> None:
    for side in ("input", "output"):
        if f"per_1k_{side}_tokens_usd" in pricing and f"per_1m_{side}_tokens_usd" in pricing:
            raise document.error(
                f"{side} tokens are priced per 1k or per 1m, not both",
                ("pricing", f"per_1m_{side}_tokens_usd"),
                cls=ManifestError,
            )


def _mcp_spec(document: Document, data: dict[str, Any]) -> McpSpec | None:
    section = data.get("mcp")
    if section is None:
        return None
    tools: dict[str, str] = section["tools"]
    for capability in data["capabilities"]:
        if capability not in tools:
            raise document.error(
                f"the claimed capability {capability!r} names no MCP tool",
                ("mcp", "tools"),
                cls=ManifestError,
            )
    for capability in tools:
        if capability not in data["capabilities"]:
            raise document.error(
                f"{capability!r} is not a claimed capability",
                ("mcp", "tools", capability),
                cls=ManifestError,
            )
    return McpSpec(tools=tuple((c, tools[c]) for c in data["capabilities"]))


def _openai_chat_spec(document: Document, data: dict[str, Any]) -> OpenAIChatSpec | None:
    from agents._template import TemplateError, check_template

    section = data.get("openai_chat")
    if section is None:
        return None
    try:
        check_template(section["template"])
    except TemplateError as exc:
        raise document.error(str(exc), ("openai_chat", "template"), cls=ManifestError) from None
    identity = section.get("model_identity", "exact")
    aliases = tuple(section.get("model_aliases", ()))
    if aliases and identity != "alias":
        raise document.error(
            "model_aliases are only read with model_identity: alias",
            ("openai_chat", "model_aliases"),
            cls=ManifestError,
        )
    temperature = section.get("temperature")
    return OpenAIChatSpec(
        model=section["model"],
        template=section["template"],
        system=section.get("system"),
        model_identity=identity,
        model_aliases=aliases,
        strict=bool(section.get("strict", False)),
        max_tokens=section.get("max_tokens"),
        temperature=None if temperature is None else Decimal(temperature),
        stream=bool(section.get("stream", False)),
    )


def _check_url(document: Document, endpoint: str) -> None:
    """The one endpoint rule (`agents._endpoint`): the same at every door that registers,
    and for a manifest already stored, so nothing later meets a host it cannot parse."""
    from agents._endpoint import EndpointError, parse_endpoint

    try:
        parse_endpoint(endpoint)
    except EndpointError as exc:
        raise document.error(str(exc), ("endpoint",), cls=ManifestError) from None


def load_manifest(path: str | Path) -> Manifest:
    """Read and validate a manifest file (YAML or JSON)."""
    return _manifest_of(lambda: load_document(path))


def manifest_from_text(text: str, source: str) -> Manifest:
    """Validate a manifest given as YAML or JSON text (the console's pasted one), with the
    located errors of a file's (`source`, line, column, path)."""
    return _manifest_of(lambda: parse_document(text, source))


def _manifest_of(read: Callable[[], Document]) -> Manifest:
    try:
        document = read()
    except ManifestError:
        raise
    except InputError as exc:  # unreadable or not YAML: still a bad manifest, same location
        raise ManifestError(exc.message, location=exc.location) from None
    return parse_manifest(document)


def manifest_from_dict(data: Any, source: str = "<request>") -> Manifest:
    """Validate a manifest that arrived as parsed JSON (the API, the store), same checks as files.

    No YAML parser here: the value is already data, and ruamel would take
    seconds over a large request body. Errors name `source` and the JSON
    path (a request has no lines worth naming).
    """
    from schema.documents import MAX_DEPTH
    from schema.jsontext import NumberError, dumps, format_path, loads, max_depth

    where = Location(source)
    try:
        # A plain JSON value with exact numbers: NaN, floats' noise, numbers
        # past the limits and non-string keys do not survive the round trip.
        value = loads(dumps(data))
    except RecursionError:
        raise ManifestError("the manifest nests too deeply", location=where) from None
    except NumberError as exc:
        at = Location(source, path=format_path(exc.path))
        raise ManifestError(exc.problem, location=at) from None
    except (TypeError, ValueError) as exc:
        raise ManifestError(f"not a JSON document: {exc}", location=where) from None
    if max_depth(value, MAX_DEPTH) > MAX_DEPTH:
        raise ManifestError(f"nested more than {MAX_DEPTH} levels deep", location=where)
    try:
        dumps(value).encode("utf-8")
    except UnicodeEncodeError:
        raise ManifestError(
            "text holds a lone UTF-16 surrogate, which is not Unicode text", location=where
        ) from None
    return parse_manifest(Document(value, source))
