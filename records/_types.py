"""Column types that behave the same on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, Dialect, TypeDecorator


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in, timezone-aware UTC out (SQLite drops the zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime: holon stores timezone-aware UTC only")
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if not isinstance(value, datetime):  # pragma: no cover - drivers return datetimes
            value = datetime.fromisoformat(str(value))
        aware: datetime = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return aware.astimezone(UTC)


def utcnow() -> datetime:
    return datetime.now(UTC)


def utc_text(value: datetime) -> str:
    """RFC 3339 in UTC with a `Z`, to the second: how holon shows every timestamp."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_text_or_none(value: datetime | None) -> str | None:
    """`utc_text`, and None for a time that has not come (not revoked, never used)."""
    return None if value is None else utc_text(value)
