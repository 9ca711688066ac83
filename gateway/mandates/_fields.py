"""Every field of a mandate, declared once: how it is read and how it is shown.

A mandate is a gate: a requirement the code does not read is a call allowed
that the operator meant to deny. So the document's properties
(schema/mandate.schema.json) and this table must agree, and a document key
without an entry here is refused when the mandate is parsed (fail closed),
never dropped. `tests/gateway/mandates/test_fields.py` pins the schema, this
table, the `Mandate` model, `holon mandates show` and the docs' field table
to one another.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from gateway.mandates._model import DEFAULT_MIN_CANARIES, DEFAULT_MIN_LIVE_CALLS, Budget
from records import RateLimit
from schema import Document
from schema.errors import MandateError

__all__ = ["FIELDS", "MandateField", "field_text"]


@dataclass(frozen=True)
class MandateField:
    """One property of a mandate document.

    `attr`: the `Mandate` attribute it sets (None: the document keeps it and
    nothing reads it, as a description). `read` turns the validated value
    into the attribute's; `text` shows the value in `holon mandates show`,
    and `absent` what an omitted field means there.
    """

    key: str
    attr: str | None
    read: Callable[[Document, Any], Any]
    text: Callable[[Any], str]
    absent: str = "-"


def _same(document: Document, value: Any) -> Any:
    return value


def _decimal(document: Document, value: Any) -> Decimal:
    return Decimal(str(value))


def _strings(document: Document, value: Any) -> tuple[str, ...]:
    return tuple(value)


def _flag(document: Document, value: Any) -> bool:
    return bool(value)


def _timestamp(document: Document, value: Any) -> datetime:
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise document.error(
            f"not a valid timestamp: {value!r}", ("expires_at",), cls=MandateError
        ) from None
    return parsed.astimezone(UTC)


def _budget(document: Document, value: Any) -> Budget:
    return Budget(Decimal(value["amount_usd"]), value["period"])


def _rate_limit(document: Document, value: Any) -> RateLimit:
    # The schema bounds each number; a burst omitted is `calls` (a bucket that
    # holds one `per`'s worth).
    calls = int(value["calls"])
    return RateLimit(calls, value["per"], int(value.get("burst", calls)))


def _plain(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _money(value: Any) -> str:
    return f"${value}"


def _budget_text(value: Any) -> str:
    return f"${value['amount_usd']}/{value['period']}"


def _rate_text(value: Any) -> str:
    return f"{value['calls']}/{value['per']}, burst {value.get('burst', value['calls'])}"


def _field(
    key: str,
    read: Callable[[Document, Any], Any] = _same,
    text: Callable[[Any], str] = _plain,
    absent: str = "-",
    attr: str | None = "",
) -> MandateField:
    return MandateField(key, key if attr == "" else attr, read, text, absent)


# In the order `holon mandates show` lists them.
FIELDS: tuple[MandateField, ...] = (
    _field("schema_version", attr=None),
    _field("id"),
    _field("holder"),
    _field("capabilities", _strings),
    _field("agents", _strings, absent="any"),
    _field("min_eval_score", _decimal),
    _field("min_eval_score_lower", _decimal),
    _field("min_capability_score", _decimal),
    _field("max_eval_age_days"),
    _field("deny_on_overfit", _flag, absent="no"),
    _field("deny_on_drift", _flag, absent="yes"),
    _field("min_live_score", _decimal),
    _field("min_canaries", absent=str(DEFAULT_MIN_CANARIES)),
    _field("accept_issuers", _strings, absent="self"),
    _field("accept_unchecked_revocation", _flag, absent="no"),
    _field("max_live_violation_rate", _decimal),
    _field("min_live_calls", absent=str(DEFAULT_MIN_LIVE_CALLS)),
    _field("max_cost_per_call_usd", _decimal, _money),
    _field("timeout_s", _decimal, absent="the agent's"),
    _field("budget", _budget, _budget_text, absent="none"),
    _field("rate_limit", _rate_limit, _rate_text, absent="none"),
    _field("expires_at", _timestamp, absent="never"),
    _field("description", attr=None),
)

_BY_KEY: Mapping[str, MandateField] = {f.key: f for f in FIELDS}


def read_fields(document: Document, data: Mapping[str, Any]) -> dict[str, Any]:
    """The `Mandate` attributes a validated document sets; a key this table does not
    declare is refused (the schema let it through, so holon would ignore it)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        field = _BY_KEY.get(key)
        if field is None:
            raise document.error(
                f"holon does not implement the mandate field {key!r}, so it cannot enforce it",
                (key,),
                cls=MandateError,
                hint="remove it, or upgrade holon to a version that reads it",
            )
        if field.attr is not None:
            out[field.attr] = field.read(document, value)
    return out


def field_text(document: Mapping[str, Any], key: str) -> str:
    """How `holon mandates show` shows one field of a mandate document."""
    field = _BY_KEY[key]
    value = document.get(key)
    return field.absent if value is None else field.text(value)
