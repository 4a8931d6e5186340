"""The sentinel's reply reader: RESP2 replies as the policy's values, fed in any split."""

from __future__ import annotations

import pytest

from node.sentinel.messages import RespError
from node.sentinel.reply_reader import MAX_BULK, ProtocolError, ReplyReader

STREAM = (
    b"+PONG\r\n"
    b"-LOADING Redis is loading the dataset in memory\r\n"
    b"$13\r\n# Server\r\nx\r\n\r\n"
    b":42\r\n"
    b"$-1\r\n"
    b"*-1\r\n"
    b"*3\r\n:1\r\n$1\r\n*\r\n:7\r\n"
    b"*3\r\n$7\r\nmessage\r\n$18\r\n__sentinel__:hello\r\n$0\r\n\r\n"
)
EXPECTED = [
    "PONG",
    RespError("LOADING Redis is loading the dataset in memory"),
    b"# Server\r\nx\r\n",
    42,
    None,
    None,
    [1, b"*", 7],
    [b"message", b"__sentinel__:hello", b""],
]


def _drain(reader: ReplyReader) -> list[object]:
    out = []
    while (value := reader.gets()) is not ReplyReader.NOTHING:
        out.append(value)
    return out


def test_a_status_stays_a_str_and_a_bulk_string_bytes() -> None:
    reader = ReplyReader()
    reader.feed(STREAM)
    assert _drain(reader) == EXPECTED


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64])
def test_replies_split_anywhere_come_out_whole_and_in_order(chunk: int) -> None:
    reader = ReplyReader()
    out: list[object] = []
    for i in range(0, len(STREAM), chunk):
        reader.feed(STREAM[i : i + chunk])
        out += _drain(reader)
    assert out == EXPECTED


@pytest.mark.parametrize(
    "data",
    [
        b"?what\r\n",
        b"$3\r\nabcXY",
        b":12a\r\n",
        b"$%d\r\n" % (MAX_BULK + 1),
        b"+" + b"x" * 70_000,
    ],
)
def test_bytes_that_are_not_resp2_are_refused(data: bytes) -> None:
    reader = ReplyReader()
    reader.feed(data)
    with pytest.raises(ProtocolError):
        reader.gets()
