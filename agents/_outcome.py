"""The outcome of one agent call: what came back, what it cost, and how it was classified.

An `Outcome` is what the executor returns for every call, whatever the agent
did; records store it (`to_json`/`from_json` round-trip exactly, money as
decimal strings). Its error detail is agent-influenced text, so it is always
made printable and bounded (`printable`) before it is stored.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from decimal import Decimal, InvalidOperation
from typing import Any, Literal, get_args

from schema.jsontext import JSONValue

__all__ = [
    "DETAIL_LIMIT",
    "Attempt",
    "CostSource",
    "Outcome",
    "OutcomeCode",
    "Usage",
    "printable",
]

OutcomeCode = Literal[
    "ok", "agent_error", "invalid_response", "timeout", "cost_exceeded", "unreachable"
]
CostSource = Literal["priced", "reported", "none"]

OUTCOME_CODES: frozenset[str] = frozenset(get_args(OutcomeCode))
COST_SOURCES: frozenset[str] = frozenset(get_args(CostSource))

DETAIL_LIMIT = 300
"""Longest error detail, in characters, after escaping."""

_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}
# Control, format (bidi overrides, zero-width), separators other than the plain
# space, and unassigned code points: anything that could move a terminal cursor
# or disguise text (exactly what `str.isprintable` rejects).
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})


def printable(text: str, limit: int = DETAIL_LIMIT) -> str:
    """`text` with every non-printable character escaped, at most `limit` characters.

    Agents are hostile: their status lines, headers and bodies end up in
    details that reach terminals, logs and HTML reports. Escaping happens
    before truncation, so an escape sequence is never cut in half and the
    result never exceeds `limit`.
    """
    out: list[str] = []
    size = 0
    # Look at a bounded prefix only: a 4 MiB exception message costs nothing.
    for char in text[: limit * 2 + 1]:
        piece = _ESCAPES.get(char)
        if piece is None and char == " ":
            piece = char
        elif piece is None:
            if unicodedata.category(char) in _UNSAFE_CATEGORIES:
                code = ord(char)
                piece = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
                if code > 0xFFFF:
                    piece = f"\\U{code:08x}"
            else:
                piece = char
        if size + len(piece) > limit:
            return _truncate(out, size, limit)
        out.append(piece)
        size += len(piece)
    # Every character yields at least one, so a prefix of 2*limit+1 that fitted was all of it.
    return "".join(out)


def _truncate(pieces: list[str], size: int, limit: int) -> str:
    while pieces and size + 1 > limit:
        size -= len(pieces.pop())
    return "".join(pieces) + "…"


@dataclass(frozen=True)
class Usage:
    """What the agent reported about its own consumption, validated, never trusted for price."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: Decimal | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.input_tokens is not None:
            out["input_tokens"] = self.input_tokens
        if self.output_tokens is not None:
            out["output_tokens"] = self.output_tokens
        if self.cost_usd is not None:
            out["cost_usd"] = str(self.cost_usd)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Usage:
        cost = data.get("cost_usd")
        return cls(
            input_tokens=_opt_int(data.get("input_tokens"), "usage.input_tokens"),
            output_tokens=_opt_int(data.get("output_tokens"), "usage.output_tokens"),
            cost_usd=None if cost is None else _money(cost, "usage.cost_usd"),
        )


@dataclass(frozen=True)
class Attempt:
    """One try at reaching the agent; only `unreachable` attempts are followed by another."""

    number: int
    code: OutcomeCode
    latency_ms: float
    http_status: int | None = None
    error: str | None = None
    # When it started (ISO 8601 UTC, milliseconds), and the id of its span: the
    # parent id of the traceparent it sent (agents._trace), distinct per attempt
    # unless the caller's own recording span was sent on every attempt.
    started_at: str | None = None
    span_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Every field, by its name (an `attempt_log` entry of schema `report`)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Attempt:
        return cls(
            number=_int(data["number"], "attempt.number"),
            code=_code(data["code"]),
            latency_ms=_float(data["latency_ms"], "attempt.latency_ms"),
            http_status=_opt_int(data.get("http_status"), "attempt.http_status"),
            error=_opt_str(data.get("error"), "attempt.error"),
            started_at=_opt_str(data.get("started_at"), "attempt.started_at"),
            span_id=_opt_str(data.get("span_id"), "attempt.span_id"),
        )


@dataclass(frozen=True)
class Outcome:
    """The classified result of one call (docs/agents.md, "Outcomes").

    - `output` is meaningful only when `code == "ok"` (it may then be JSON null).
    - `cost_usd` is what the call costs the caller before any cap is applied:
      priced from the manifest when it has pricing (`cost_source="priced"`),
      else the agent's own report (`"reported"`), else zero (`"none"`). Calls
      that failed before a valid answer cost zero; settlement against a cap
      (min(cost, cap)) happens outside the executor.
    - `latency_ms` is wall time of the whole call, retries and backoff
      included; each `Attempt` has its own.
    - `attempts` is empty when the call was refused pre-flight (the agent was
      not contacted).
    - `error` is a printable detail of at most 300 characters, or None when ok.
    - `output_bytes`: at least the size of `output` as `schema.jsontext.dumps`
      writes it (UTF-8 bytes), for an `ok` outcome from the executor (its body's
      size plus what writing its numbers may add, or the exact size when that
      bound was over the cap). None when not known (e.g. read back from the
      store); not part of `to_json` or of equality.
    - `metadata`: the answer's own `metadata` (`holon-http`, ok outcomes only),
      untrusted and bounded by the executor (`agents._wire.read_metadata`); None
      when it sent none, and then not in `to_json` either.
    """

    code: OutcomeCode
    request_id: str
    output: JSONValue = None
    usage: Usage | None = None
    cost_usd: Decimal = Decimal(0)
    cost_source: CostSource = "none"
    latency_ms: float = 0.0
    http_status: int | None = None
    attempts: tuple[Attempt, ...] = field(default_factory=tuple)
    error: str | None = None
    output_bytes: int | None = field(default=None, compare=False)
    metadata: JSONValue = None

    @property
    def ok(self) -> bool:
        return self.code == "ok"

    @property
    def attempt_count(self) -> int:
        return len(self.attempts)

    def to_json(self) -> dict[str, Any]:
        """A JSON object for `schema.jsontext.dumps`; money as decimal strings, exact."""
        out: dict[str, Any] = {"code": self.code, "request_id": self.request_id}
        if self.code == "ok":
            out["output"] = self.output
        out["usage"] = None if self.usage is None else self.usage.to_json()
        out["cost_usd"] = str(self.cost_usd)
        out["cost_source"] = self.cost_source
        out["latency_ms"] = self.latency_ms
        out["http_status"] = self.http_status
        out["attempts"] = [attempt.to_json() for attempt in self.attempts]
        out["error"] = self.error
        if self.metadata is not None:
            out["metadata"] = self.metadata
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Outcome:
        """Rebuild an Outcome from `to_json()` (as read back by `schema.jsontext.loads`).

        Raises ValueError (or KeyError) on a document that `to_json` could not have made.
        """
        code = _code(data["code"])
        usage = data.get("usage")
        source = data.get("cost_source", "none")
        if source not in COST_SOURCES:
            raise ValueError(f"unknown cost_source {source!r}")
        attempts = data.get("attempts", [])
        if not isinstance(attempts, list):
            raise ValueError("attempts must be a list")
        return cls(
            code=code,
            request_id=_str(data["request_id"], "request_id"),
            output=data.get("output") if code == "ok" else None,
            usage=None if usage is None else Usage.from_json(_mapping(usage, "usage")),
            cost_usd=_money(data.get("cost_usd", "0"), "cost_usd"),
            cost_source=source,
            latency_ms=_float(data.get("latency_ms", 0), "latency_ms"),
            http_status=_opt_int(data.get("http_status"), "http_status"),
            attempts=tuple(Attempt.from_json(_mapping(a, "attempt")) for a in attempts),
            error=_opt_str(data.get("error"), "error"),
            metadata=data.get("metadata") if code == "ok" else None,
        )


def _code(value: Any) -> OutcomeCode:
    if value not in OUTCOME_CODES:
        raise ValueError(f"unknown outcome code {value!r}")
    code: OutcomeCode = value
    return code


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{what} must be an object")
    return value


def _str(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string")
    return value


def _opt_str(value: Any, what: str) -> str | None:
    return None if value is None else _str(value, what)


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} must be an integer")
    return value


def _opt_int(value: Any, what: str) -> int | None:
    return None if value is None else _int(value, what)


def _float(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise ValueError(f"{what} must be a number")
    return float(value)


def _money(value: Any, what: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, str | int | Decimal):
        raise ValueError(f"{what} must be a decimal string")
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise ValueError(f"{what} must be a decimal string") from None
    if not number.is_finite():
        raise ValueError(f"{what} must be finite")
    return number
