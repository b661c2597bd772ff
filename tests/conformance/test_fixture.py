"""A BlockingLog records calls for a fixture to read, from another thread or process."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from amends_toolkit.conformance import BlockingCalls, BlockingLog
from amends_toolkit.conformance._support import not_json


def test_a_log_counts_calls_that_arrived_and_stopped() -> None:
    log = BlockingLog()
    with log.call():
        assert log.counts() == BlockingCalls(arrived=1, stopped=0)
    assert log.counts() == BlockingCalls(arrived=1, stopped=1)


def test_a_call_left_by_an_exception_is_recorded_as_stopped() -> None:
    log = BlockingLog()
    with pytest.raises(RuntimeError), log.call():
        raise RuntimeError("cancelled")
    assert log.counts() == BlockingCalls(arrived=1, stopped=1)


def test_calls_recorded_in_other_threads_are_counted() -> None:
    log = BlockingLog()

    def record() -> None:
        for _ in range(100):
            with log.call():
                pass

    threads = [threading.Thread(target=record) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert log.counts() == BlockingCalls(arrived=400, stopped=400)


def test_a_log_with_a_path_reads_what_another_log_of_that_path_recorded(tmp_path: Path) -> None:
    path = tmp_path / "blocking.log"
    reader = BlockingLog(path)
    assert reader.counts() == BlockingCalls(arrived=0, stopped=0)
    writer = BlockingLog(path)
    with writer.call():
        assert reader.counts() == BlockingCalls(arrived=1, stopped=0)
    assert reader.counts() == BlockingCalls(arrived=1, stopped=1)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"a": [1, 2.5, "x", None, True, {"b": {}}]}, None),
        ((1, 2), "$ is tuple (1, 2)"),
        ({"a": [1, b"x"]}, "$.a[1] is bytes b'x'"),
        ({1: "x"}, "$ has the key 1, which is not a string"),
        ([float("nan")], "$[0] is nan"),
    ],
)
def test_not_json_says_where_a_value_is_not_json(value: object, problem: str | None) -> None:
    assert not_json(value) == problem
