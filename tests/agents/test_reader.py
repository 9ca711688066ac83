"""The bounded reader: stops pulling at the cap, inflates with a bound, parses defensively."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import AsyncIterator
from decimal import Decimal

import pytest

from agents._reader import BodyError, parse_json, read_bounded, read_prefix

pytestmark = pytest.mark.anyio


class Source:
    """An endless stream of chunks that counts how many were pulled."""

    def __init__(self, chunk: bytes, total: int | None = None) -> None:
        self.chunk, self.total, self.pulled = chunk, total, 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while self.total is None or self.pulled < self.total:
            self.pulled += 1
            yield self.chunk


async def test_stops_pulling_right_after_the_cap() -> None:
    source = Source(b"x" * 1000)  # endless: only the cap can stop it
    with pytest.raises(BodyError, match="larger than 4500 bytes"):
        await read_bounded(source, 4500)
    assert source.pulled == 5  # 5,000 bytes seen, not one chunk more


async def test_exactly_at_the_cap_is_fine() -> None:
    assert await read_bounded(Source(b"ab", total=5), 10) == b"ababababab"
    with pytest.raises(BodyError):
        await read_bounded(Source(b"ab", total=6), 10)


async def _one(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def test_gzip_bomb_inflates_no_further_than_the_cap() -> None:
    bomb = gzip.compress(b"0" * (64 * 1024 * 1024), compresslevel=9)
    assert len(bomb) < 100_000
    with pytest.raises(BodyError, match="larger than"):
        await read_bounded(_one(bomb), 1024 * 1024, content_encoding="gzip")


@pytest.mark.parametrize("encoding", ["gzip", "x-gzip", "deflate", "GZIP"])
async def test_compressed_bodies_are_decoded(encoding: str) -> None:
    data = b'{"output": "' + b"z" * 5000 + b'"}'
    packed = zlib.compress(data) if encoding == "deflate" else gzip.compress(data)
    assert await read_bounded(_one(packed), 10_000, content_encoding=encoding) == data


@pytest.mark.parametrize(
    ("encoding", "body", "reason"),
    [
        ("br", b"whatever", "unsupported Content-Encoding"),
        ("gzip, gzip", b"x", "unsupported Content-Encoding"),
        ("gzip", b"definitely not gzip", "does not decode"),
    ],
)
async def test_bad_encodings(encoding: str, body: bytes, reason: str) -> None:
    with pytest.raises(BodyError, match=reason):
        await read_bounded(_one(body), 1000, content_encoding=encoding)


async def test_prefix_reads_only_what_it_needs() -> None:
    source = Source(b"y" * 64)
    assert await read_prefix(source, 100) == b"y" * 100
    assert source.pulled == 2


def test_parse_json_is_decimal_exact() -> None:
    assert parse_json(b'{"a": 1.10, "b": 2}', 8) == {"a": Decimal("1.10"), "b": 2}


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "not JSON"),
        (b"\xff\xfe\xfa", "not JSON"),
        (b'{"a": NaN}', "not JSON"),
        (b'{"a": Infinity}', "not JSON"),
        (b"[" * 65 + b"]" * 65, "deeper than 64"),
        (b"[" * 100_000 + b"]" * 100_000, "deeper than 64"),
        (b'{"a": "\\ud800"}', "unpaired"),
        (b'{"\\udfff": 1}', "unpaired"),
    ],
)
def test_parse_json_refuses(body: bytes, reason: str) -> None:
    with pytest.raises(BodyError, match=reason):
        parse_json(body, 64)


def test_paired_surrogates_are_fine() -> None:
    assert parse_json(b'"\\ud83d\\ude00"', 4) == "\U0001f600"
