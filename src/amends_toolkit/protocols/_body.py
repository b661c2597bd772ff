"""Reading an HTTP body as a peer sent it: decompressed a bounded piece at a time.

An HTTP client inflates a compressed body one network read at a time, however far each read
inflates (64 KiB of gzip can be 64 MiB). Here the raw body is inflated by at most
:data:`CHUNK` bytes at a time, so a reader that stops at its limit has held no more than the
limit and one chunk, whatever the body inflates to. Only ``gzip`` and ``deflate`` are read (the
requests ask for nothing else with ``Accept-Encoding``); a body in another coding is refused.
"""

from __future__ import annotations

import contextlib
import zlib
from typing import TYPE_CHECKING, Final, Protocol

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping

__all__ = (
    "ACCEPT_ENCODING",
    "CHUNK",
    "AnswerTooLarge",
    "RawResponse",
    "UnreadableCoding",
    "asks_codings",
    "decoded_chunks",
    "read_bounded",
    "read_pieces",
)

CHUNK: Final = 64 * 1024
"""The most bytes one step inflates."""

ACCEPT_ENCODING: Final = "gzip, deflate"
"""The codings a request accepts: those read here, a piece at a time."""


def asks_codings(client: object) -> bool:
    """Whether a request over ``client`` must carry ``Accept-Encoding: gzip, deflate`` itself:
    not when the client's own headers ask for just those (httpx's default), which the client
    sends anyway; giving the header again costs a merge into the client's headers on every
    request."""
    headers = getattr(client, "headers", None)
    own = headers.get("accept-encoding") if headers is not None else None
    return own != ACCEPT_ENCODING


class AnswerTooLarge(Exception):
    """A body (or one line or event of it) longer than its limit; reading stopped there."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the answer is longer than {limit} bytes")
        self.limit = limit


class UnreadableCoding(Exception):
    """A body in a content coding this reader does not inflate (or that does not inflate)."""


class RawResponse(Protocol):
    """What is read of a response (``httpx.Response``, ``httpx2.Response``)."""

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def is_stream_consumed(self) -> bool: ...

    def aiter_raw(self) -> AsyncIterator[bytes]: ...

    def aiter_bytes(self) -> AsyncIterator[bytes]: ...


async def decoded_chunks(response: RawResponse) -> AsyncGenerator[bytes, None]:
    """The body's bytes, inflated, in pieces of at most :data:`CHUNK` bytes (a raw piece of an
    uncompressed body as it came).

    Raises:
        UnreadableCoding: a content coding other than gzip, deflate or identity, or a
            compressed body that does not inflate.
    """
    raws, inflater = _raw_body(response)
    try:
        async for raw in raws:
            if inflater is None:
                yield raw
                continue
            for piece in inflater.feed(raw):
                yield piece
        tail = inflater.flush() if inflater is not None else b""
        if tail:
            yield tail
    finally:
        await _close(raws)


async def read_bounded(response: RawResponse, limit: int) -> bytes:
    """The whole body, inflated, if it is at most ``limit`` bytes.

    Raises:
        AnswerTooLarge: it is longer; nothing past the limit (and one chunk) was held.
        UnreadableCoding: as for :func:`decoded_chunks`.
    """
    parts: list[bytes] = []
    size = 0
    async with contextlib.aclosing(decoded_chunks(response)) as pieces:
        async for piece in pieces:
            size += len(piece)
            if size > limit:
                raise AnswerTooLarge(limit)
            parts.append(piece)
    return parts[0] if len(parts) == 1 else b"".join(parts)


async def read_pieces(response: RawResponse, take: Callable[[bytes], bool]) -> bool:
    """Give the body's pieces, as :func:`decoded_chunks` makes them, to ``take`` until it
    returns ``False``; ``True`` when it took the whole body, ``False`` when reading stopped
    there (nothing more was read).

    Raises:
        UnreadableCoding: as for :func:`decoded_chunks`.
    """
    async with contextlib.aclosing(decoded_chunks(response)) as pieces:
        async for piece in pieces:
            if not take(piece):
                return False
    return True


def _raw_body(response: RawResponse) -> tuple[AsyncIterator[bytes], _Inflater | None]:
    """The body's raw pieces, and what inflates them (``None``: they are the body).

    Raises:
        UnreadableCoding: as for :func:`decoded_chunks`.
    """
    coding = response.headers.get("content-encoding")
    if response.is_stream_consumed:
        # A response made whole in memory (a mock transport's) was read and inflated already;
        # a coding it cannot read is refused all the same.
        _inflater_for(coding)
        return response.aiter_bytes(), None
    return response.aiter_raw(), _inflater_for(coding)


def _inflater_for(coding: str | None) -> _Inflater | None:
    if not coding:
        return None
    codings = [
        part.strip().lower()
        for part in coding.split(",")
        if part.strip() and part.strip().lower() != "identity"
    ]
    if len(codings) > 1 or (codings and codings[0] not in ("gzip", "x-gzip", "deflate")):
        raise UnreadableCoding(f"the body is in the content coding {', '.join(codings)!r}")
    return _Inflater(gzip=codings[0] != "deflate") if codings else None


async def _close(raws: AsyncIterator[bytes]) -> None:
    # Leaving early must close the client's generator, or it is finalized unawaited.
    close = getattr(raws, "aclose", None)
    if close is not None:
        await close()


class _Inflater:
    def __init__(self, *, gzip: bool) -> None:
        # gzip, or deflate as zlib data (RFC 9110) falling back to raw deflate (as some send).
        self._gzip = gzip
        self._inflate = zlib.decompressobj(zlib.MAX_WBITS | 16 if gzip else zlib.MAX_WBITS)
        self._first = True
        self._head = b""

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self._first and not self._gzip and len(self._head) + len(data) < 2:
            # Its first two bytes tell zlib data from raw deflate: a piece of one waits for more.
            self._head += data
            return
        data, self._head = self._head + data, b""
        while data:
            try:
                piece = self._inflate.decompress(data, CHUNK)
            except zlib.error:
                if self._gzip or not self._first:
                    raise UnreadableCoding("the compressed body does not inflate") from None
                self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)
                self._first = False
                continue
            self._first = False
            rest = self._inflate.unconsumed_tail
            if piece:
                yield piece
            elif len(rest) == len(data):
                break
            data = rest

    def flush(self) -> bytes:
        try:
            return self._inflate.flush()
        except zlib.error:
            raise UnreadableCoding("the compressed body does not inflate") from None
