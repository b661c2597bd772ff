"""Reading a body a bounded piece at a time, whatever it inflates to."""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator

import httpx
import pytest

from amends_toolkit.protocols._body import (
    CHUNK,
    AnswerTooLarge,
    UnreadableCoding,
    decoded_chunks,
    read_bounded,
)

pytestmark = pytest.mark.anyio

TEXT = b'{"a": "' + b"z" * 300_000 + b'"}'


class Pieces(httpx.AsyncByteStream):
    def __init__(self, data: bytes, size: int = 1000) -> None:
        self.data, self.size = data, size

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for start in range(0, len(self.data), self.size):
            yield self.data[start : start + self.size]


async def pieces(data: bytes, coding: str | None) -> list[bytes]:
    headers = {"content-encoding": coding} if coding else {}
    response = httpx.Response(200, headers=headers, stream=Pieces(data))
    return [piece async for piece in decoded_chunks(response)]


def squeeze(data: bytes, wbits: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    return packer.compress(data) + packer.flush()


@pytest.mark.parametrize(
    ("coding", "wbits"),
    [("gzip", 31), ("x-gzip", 31), ("deflate", 15), ("deflate", -15), ("identity", None)],
)
async def test_a_body_inflates_in_pieces_of_at_most_a_chunk(coding: str, wbits: int | None) -> None:
    data = TEXT if wbits is None else squeeze(TEXT, wbits)
    got = await pieces(data, coding)
    assert b"".join(got) == TEXT
    assert max(len(piece) for piece in got) <= CHUNK


@pytest.mark.parametrize("coding", ["br", "zstd", "gzip, gzip"])
async def test_a_coding_not_asked_for_is_refused(coding: str) -> None:
    with pytest.raises(UnreadableCoding):
        await pieces(b"\x00" * 10, coding)


async def test_a_body_that_does_not_inflate_is_refused() -> None:
    with pytest.raises(UnreadableCoding):
        await pieces(b"not gzip at all", "gzip")


async def test_reading_stops_at_the_limit() -> None:
    response = httpx.Response(
        200, headers={"content-encoding": "gzip"}, stream=Pieces(squeeze(TEXT, 31))
    )
    with pytest.raises(AnswerTooLarge, match="longer than 1000 bytes"):
        await read_bounded(response, 1000)
    exact = httpx.Response(200, stream=Pieces(TEXT))
    assert await read_bounded(exact, len(TEXT)) == TEXT


@pytest.mark.parametrize(("coding", "wbits"), [("gzip", 31), ("deflate", 15), ("deflate", -15)])
@pytest.mark.parametrize("size", [1, 2, 3])
async def test_a_body_read_whole_is_the_same_whatever_its_pieces(
    coding: str, wbits: int, size: int
) -> None:
    body = squeeze(TEXT[:5000], wbits)
    response = httpx.Response(200, headers={"content-encoding": coding}, stream=Pieces(body, size))
    assert await read_bounded(response, len(TEXT)) == TEXT[:5000]
    tight = httpx.Response(200, headers={"content-encoding": coding}, stream=Pieces(body, size))
    with pytest.raises(AnswerTooLarge):
        await read_bounded(tight, 4999)


async def test_a_body_read_in_memory_in_a_coding_not_asked_for_is_refused() -> None:
    whole = httpx.Response(200, headers={"content-encoding": "br"}, content=b"x")
    await whole.aread()
    with pytest.raises(UnreadableCoding):
        await read_bounded(whole, 100)
