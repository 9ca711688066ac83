"""Reading JSON columns back: what `loads` refuses still reads, and the row with it."""

from __future__ import annotations

import logging
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import JSON, column, select, table, text

from records import Store, new_key, open_store
from records._stored_json import UNREADABLE_KEY, read_stored_json

MILLION = "1" + "0" * 1_000_000


def test_what_loads_reads_is_read_as_loads_reads_it() -> None:
    assert read_stored_json('{"a": [1, 2.50, "x"]}') == {"a": [1, Decimal("2.50"), "x"]}
    assert read_stored_json(b'{"a": 1}') == {"a": 1}  # PostgreSQL's driver hands bytes


def test_numbers_past_ints_limit_read_as_decimals() -> None:
    value = read_stored_json(f'{{"sum": {MILLION}, "neg": -{MILLION}, "small": 7}}')
    assert value == {"sum": Decimal(MILLION), "neg": Decimal("-" + MILLION), "small": 7}
    assert isinstance(value["sum"], Decimal) and isinstance(value["small"], int)
    assert read_stored_json(b"[" + MILLION.encode() + b"]") == [Decimal(MILLION)]
    nan = read_stored_json('{"x": NaN, "y": 1}')["x"]
    assert isinstance(nan, Decimal) and nan.is_nan()


def test_text_that_is_not_json_reads_as_a_placeholder(caplog: pytest.LogCaptureFixture) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    with caplog.at_level(logging.WARNING, logger="records._stored_json"):
        value = read_stored_json(deep)
    assert value[UNREADABLE_KEY]["characters"] == 200_000
    assert len(value[UNREADABLE_KEY]["sha256"]) == 64
    assert "does not read: RecursionError" in caplog.text
    assert read_stored_json("{not json")[UNREADABLE_KEY]["characters"] == 9


def test_a_store_reads_a_cell_holding_a_million_digits(tmp_path: Path) -> None:
    """The store's own codec, on a row as holon before the number bounds wrote it (`dumps`
    wrote a Decimal in plain digits; it now writes `1E+1000000`).

    In an array: SQLite's NUMERIC affinity (a column typed JSON) would turn a
    bare number's text into a REAL.
    """
    store: Store = open_store(
        f"sqlite:///{tmp_path / 'holon.db'}", secret_key=new_key(), auto_upgrade=True
    )
    try:
        with store.engine.begin() as conn:
            conn.execute(text("CREATE TABLE t (v JSON)"))
            conn.execute(text("INSERT INTO t VALUES (:v)"), {"v": f"[{MILLION}]"})
        with store.engine.connect() as conn:
            written = conn.execute(text("SELECT v FROM t")).scalar_one()
            # Selected as a JSON column: through the engine's deserializer.
            value = conn.execute(select(column("v", JSON)).select_from(table("t"))).scalar_one()
        assert written == f"[{MILLION}]"  # the raw column: plain digits
        assert value == [Decimal("1e1000000")]
    finally:
        store.close()
