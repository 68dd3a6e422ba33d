"""stdin of ``resolveflow mcp`` read one bounded line at a time (``mcp_server/stdio.py``): lines
across chunk boundaries come out whole, a line past the limit is refused with its id (found in its
first bytes) and never held, and reading goes on after it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from resolveflow.mcp_server.stdio import RequestId, bounded_lines, request_id


def _read(data: bytes, limit: int, chunk: int) -> tuple[list[str], list[tuple[RequestId, int]]]:
    refused: list[tuple[RequestId, int]] = []

    async def chunks() -> AsyncIterator[bytes]:
        for at in range(0, len(data), chunk):
            yield data[at : at + chunk]

    async def refuse(found: RequestId, size: int) -> None:
        refused.append((found, size))

    async def collect() -> list[str]:
        return [line async for line in bounded_lines(chunks(), limit, refuse)]

    return anyio.run(collect), refused


@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 10_000])
def test_lines_come_out_whole_whatever_the_chunks(chunk: int) -> None:
    data = b'{"id":1}\n\n{"id":2,"a":"bc"}\r\n{"id":3}'
    lines, refused = _read(data, 100, chunk)
    assert lines == ['{"id":1}', '{"id":2,"a":"bc"}\r', '{"id":3}'] and refused == []


@pytest.mark.parametrize("chunk", [1, 5, 64, 10_000])
def test_a_line_past_the_limit_is_refused_and_the_next_one_read(chunk: int) -> None:
    long = b'{"jsonrpc":"2.0","id":7,"params":"' + b"x" * 500 + b'"}'
    exact = b'{"id":8,"p":"' + b"y" * (60 - 15) + b'"}'
    assert len(exact) == 60
    data = b'{"id":6}\n' + long + b"\n" + exact + b"\n" + long
    lines, refused = _read(data, 60, chunk)
    assert lines == ['{"id":6}', exact.decode()]
    assert refused == [(7, len(long)), (7, len(long))]  # the last one without its newline too


@pytest.mark.parametrize(
    ("head", "found"),
    [
        (b'{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"x', 42),
        (b' { "id" : "abc-1" , "method"', "abc-1"),
        (b'{"jsonrpc":"2.0","method":"m","id":-3,', -3),
        (b'{"params":{"id":5},"id":6', 6),  # a nested "id" is not the message's
        (b'{"params":"xxxxxxxxxxxxxxxxxxxx', None),  # cut off before any id
        (b'{"id":true}', None),
        (b'{"id":null}', None),
        (b'{"id":1.5}', None),
        (b'[{"id":1}]', None),
        (b'{"a" 1, "id": 2}', None),
        (b"\xff\xfe not json", None),
        (b"", None),
    ],
)
def test_the_id_of_a_refused_line_is_read_from_its_first_bytes(
    head: bytes, found: RequestId
) -> None:
    assert request_id(head) == found
