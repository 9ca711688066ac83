"""Done evals' rendered reports, kept in the store so every process serves them.

A gateway runs several processes on one PostgreSQL store, and each starts with an
empty report cache (evals.reports.ReportCache): without this table every first view
of a 2,000-cell report in a process costs most of a second (docs/performance.md,
"Console"). A row is one eval's report for one audience in one format, stored under
the digest of everything it was made of (evals.reports.report_key); `get` answers
only for that same digest, so a report that would read differently (retention
dropped outputs, a suite or the holdout secret changed) is rendered again and `put`
replaces the row. The audience is part of the row's identity and of its digest: an
author's read never finds the operator's text.

The text is stored as UTF-8 (lone surrogates kept, as `report_key` encodes them),
zlib-compressed above `COMPRESS_FROM_BYTES`; a text over `MAX_STORED_REPORT_BYTES` is not
stored at all (its reader renders it each time). Rows go with their eval's outputs:
retention (`EvalRegistry.drop_outputs`) deletes the rows of every eval it touches,
since a report shows its cells' outputs.
"""

from __future__ import annotations

import zlib

from sqlalchemy import delete, func, select
from sqlalchemy.dialects import postgresql, sqlite

from records._models import EvalReportRow
from records._registry import Registry
from records._types import utcnow

__all__ = ["COMPRESS_FROM_BYTES", "MAX_STORED_REPORT_BYTES", "EvalReportRegistry"]

# About five 2,000-cell operator reports in HTML (6 MB each); larger ones are
# rendered by whoever reads them, as before the table.
MAX_STORED_REPORT_BYTES = 32 * 1024 * 1024
# Below this a text is stored as it is: compressing would save little.
COMPRESS_FROM_BYTES = 16 * 1024
# zlib's level: the write is off the reader's path (after an eval, or after a
# render of most of a second): a 6 MB HTML report compresses to 160 KB in about
# 33 ms (level 1: 315 KB, 16 ms), and reads back in about 5 ms at either level.
_LEVEL = 6


def _encode(raw: bytes) -> tuple[bool, bytes]:
    if len(raw) < COMPRESS_FROM_BYTES:
        return False, raw
    return True, zlib.compress(raw, _LEVEL)


def _decode(compressed: bool, body: bytes) -> str:
    raw = zlib.decompress(body) if compressed else body
    return bytes(raw).decode("utf-8", "surrogatepass")


class EvalReportRegistry(Registry):
    def get(self, eval_id: str, audience: str, form: str, key: str) -> str | None:
        """The kept text of this eval's report for `audience` in `form`, if it was
        stored under `key`; None if there is none or it was made of something else."""
        t = EvalReportRow.__table__.c
        query = select(t.compressed, t.body).where(
            t.eval_id == eval_id, t.audience == audience, t.form == form, t.key == key
        )
        with self._store.read() as session:
            row = session.execute(query).first()
        if row is None:
            return None
        return _decode(bool(row[0]), row[1])

    def key(self, eval_id: str, audience: str, form: str) -> str | None:
        """The key this eval's report for `audience` in `form` is stored under, if it is
        (without reading the text)."""
        t = EvalReportRow.__table__.c
        query = select(t.key).where(t.eval_id == eval_id, t.audience == audience, t.form == form)
        with self._store.read() as session:
            found = session.execute(query).scalar()
        return None if found is None else str(found)

    def put(
        self,
        eval_id: str,
        audience: str,
        form: str,
        key: str,
        text: str,
        *,
        max_bytes: int = MAX_STORED_REPORT_BYTES,
    ) -> bool:
        """Keep `text` as the report of this eval for `audience` in `form`, made of
        `key`, replacing any other; False (nothing written) if its UTF-8 is over
        `max_bytes`. Two processes writing one report at once both succeed (the
        last write stays; both are the same text for the same key)."""
        if len(text) > max_bytes:  # at least one UTF-8 byte a character: not even encoded
            return False
        raw = text.encode("utf-8", "surrogatepass")
        if len(raw) > max_bytes:
            return False
        compressed, body = _encode(raw)
        values = {
            "eval_id": eval_id,
            "audience": audience,
            "form": form,
            "key": key,
            "compressed": compressed,
            "body": body,
            "created_at": utcnow(),
        }
        with self._store.write() as session:
            dialect = session.get_bind().dialect.name
            insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
            statement = insert(EvalReportRow).values(values)
            replaced = ("key", "compressed", "body", "created_at")
            session.execute(
                statement.on_conflict_do_update(
                    index_elements=["eval_id", "audience", "form"],
                    set_={name: statement.excluded[name] for name in replaced},
                )
            )
        return True

    def discard(self, eval_id: str, audience: str, form: str, key: str) -> bool:
        """Forget this report if it is still stored under `key`; whether it was."""
        t = EvalReportRow.__table__.c
        query = delete(EvalReportRow).where(
            t.eval_id == eval_id, t.audience == audience, t.form == form, t.key == key
        )
        with self._store.write() as session:
            return bool(session.execute(query).rowcount)  # type: ignore[attr-defined]

    def count(self, eval_id: str) -> int:
        """How many reports of the eval are kept (every audience and format)."""
        t = EvalReportRow.__table__.c
        with self._store.read() as session:
            return int(
                session.execute(select(func.count()).where(t.eval_id == eval_id)).scalar_one()
            )

    def drop(self, eval_id: str) -> int:
        """Forget every kept report of the eval; how many there were."""
        with self._store.write() as session:
            query = delete(EvalReportRow).where(EvalReportRow.eval_id == eval_id)
            result = session.execute(query)
            return int(result.rowcount)  # type: ignore[attr-defined]
