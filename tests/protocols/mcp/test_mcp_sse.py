from __future__ import annotations

import pytest

from amends_toolkit.protocols._body import AnswerTooLarge
from amends_toolkit.protocols.mcp._sse import Event, SseParser

STREAM = b'\xef\xbb\xbf: ping\r\n\r\nid: 7\r\nretry: 1500\r\ndata:\r\n\r\nevent: message\rdata: {"a":\rdata:1}\r\rdata: \xe4\xb8\x96\n\n'


@pytest.mark.parametrize("size", [1, 2, 3, 7, len(STREAM)])
def test_events_are_read_in_any_chunking_with_cr_lf_and_crlf(size: int) -> None:
    parser = SseParser()
    events: list[Event] = []
    for start in range(0, len(STREAM), size):
        events += parser.feed(STREAM[start : start + size])
    assert [e.data for e in events if e.data] == ['{"a":\n1}', "世"]
    assert events[-1] == Event(data="世", event="message", id="7")
    assert parser.last_event_id == "7"
    assert parser.retry_ms == 1500


def test_a_cr_at_the_end_of_the_stream_ends_its_line() -> None:
    parser = SseParser()
    assert parser.feed(b"data: x\r\r") == [Event(data="x")]
    assert parser.feed(b"\ndata: y\n\n") == [Event(data="y")]


def test_an_unfinished_event_is_dropped_and_bad_retry_ignored() -> None:
    parser = SseParser()
    assert parser.feed(b"retry: soon\nid: a\x00b\ndata: x\n") == []
    assert parser.retry_ms is None
    assert parser.last_event_id is None


def test_a_line_or_an_event_past_the_limit_stops_the_stream() -> None:
    with pytest.raises(AnswerTooLarge):
        SseParser(max_event_bytes=10).feed(b": " + b"x" * 20)
    with pytest.raises(AnswerTooLarge):
        SseParser(max_event_bytes=11).feed(b"data: 12345\ndata: 12345\n")
    parser = SseParser(max_event_bytes=11)
    assert parser.feed(b"data: 12345\n\ndata: 12345\n\n") == [Event(data="12345")] * 2
