from __future__ import annotations

import pytest

from amends_toolkit._json import JsonValue
from amends_toolkit.protocols.mcp._jsonrpc import (
    ErrorResponse,
    Notification,
    ProtocolError,
    Request,
    Response,
    decode,
    encode,
    modern_meta,
    request,
)


def test_messages_are_read_by_shape() -> None:
    body = b'[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"m"}},{"jsonrpc":"2.0","id":"p","method":"ping"},{"jsonrpc":"2.0","method":"n","params":null}]'
    assert decode(body) == [
        Response(id=1, result={}),
        ErrorResponse(id=None, code=-32600, message="m"),
        Request(id="p", method="ping", params={}),
        Notification(method="n", params={}),
    ]


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"<html>",
        b'"x"',
        b'{"id":1,"result":{}}',
        b'{"jsonrpc":"2.0","id":1,"result":3}',
        b'{"jsonrpc":"2.0","id":true,"result":{}}',
        b'{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}',
        b'{"jsonrpc":"2.0","id":1}',
        b'{"jsonrpc":"2.0","method":"m","params":[1]}',
        b"\xff",
    ],
)
def test_garbage_is_a_protocol_error(body: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode(body)


def test_a_request_encodes_as_one_line_of_utf8() -> None:
    params: dict[str, JsonValue] = {"x": "世\n", "_meta": modern_meta()}
    data = encode(request(1, "tools/call", params))
    assert b"\n" not in data
    assert "世".encode() in data
    assert decode(data)[0] == Request(id=1, method="tools/call", params=params)
