"""Differential tests of XREAD without a waiting client: COUNT, several keys, `$`, missing
keys, BLOCK when data is already there, BLOCK that times out, and every argument error.
Replies are compared byte for byte with redis-server in RESP2 and RESP3 (where XREAD
replies a map)."""

from __future__ import annotations

import time

import pytest

from tests.conformance.harness import Pair
from tests.conformance.stream_support import parse


@pytest.fixture
def two_streams(pair_any: Pair) -> Pair:
    pair_any.check_all([
        ("XADD", "a", "1", "f", "1"),
        ("XADD", "a", "2", "f", "2"),
        ("XADD", "a", "3-1", "f", "3"),
        ("XADD", "b", "5", "g", "5"),
    ])
    return pair_any


@pytest.mark.parametrize("args", [
    ("STREAMS", "a", "0"),
    ("STREAMS", "a", "0-0"),
    ("STREAMS", "a", "1"),
    ("STREAMS", "a", "2-0"),
    ("STREAMS", "a", "3"),
    ("STREAMS", "a", "3-0"),
    ("STREAMS", "a", "000001"),
    ("COUNT", "1", "STREAMS", "a", "0"),
    ("COUNT", "2", "STREAMS", "a", "1"),
    ("COUNT", "0", "STREAMS", "a", "0"),
    ("COUNT", "-5", "STREAMS", "a", "0"),
    ("COUNT", "1", "COUNT", "2", "STREAMS", "a", "0"),
    ("count", "1", "streams", "a", "b", "0", "0"),
    ("STREAMS", "a", "b", "0", "0"),
    ("STREAMS", "b", "a", "0", "0"),
    ("STREAMS", "a", "b", "3-1", "0"),
    ("STREAMS", "a", "b", "3-1", "5"),
    ("STREAMS", "a", "missing", "0", "0"),
    ("STREAMS", "missing", "a", "0", "1"),
    ("STREAMS", "missing", "0"),
    ("STREAMS", "missing", "other", "0", "$"),
    ("STREAMS", "a", "$"),
    ("STREAMS", "a", "b", "$", "0"),
    ("STREAMS", "a", "a", "0", "2"),
    ("STREAMS", "streams", "0"),
])
def test_xread_returns_entries_after_each_id(two_streams: Pair, args: tuple[str, ...]) -> None:
    two_streams.check("XREAD", *args)


def test_xread_after_xdel_and_on_emptied_streams(two_streams: Pair) -> None:
    two_streams.check_all([
        ("XDEL", "a", "2"),
        ("XREAD", "STREAMS", "a", "1"),
        ("XREAD", "COUNT", "1", "STREAMS", "a", "0"),
        ("XDEL", "a", "1", "3-1"),
        ("XREAD", "STREAMS", "a", "0"),
        ("XREAD", "STREAMS", "a", "b", "0", "0"),
    ])


def test_xread_block_with_data_already_present_replies_at_once(two_streams: Pair) -> None:
    # Timeouts no test waits out (the connections' own time out first): a reply at all is
    # a reply without waiting.
    two_streams.check("XREAD", "BLOCK", "0", "STREAMS", "a", "0")
    two_streams.check("XREAD", "BLOCK", "3600000", "COUNT", "1", "STREAMS", "b", "a", "0", "2")
    two_streams.check("XREAD", "COUNT", "2", "BLOCK", "3600000", "STREAMS", "a", "0")


@pytest.mark.parametrize("args", [
    ("STREAMS", "a", "$"),
    ("STREAMS", "missing", "$"),
    ("STREAMS", "missing", "0"),
    ("STREAMS", "a", "b", "$", "$"),
    ("STREAMS", "a", "3-1"),
    ("COUNT", "5", "STREAMS", "a", "99"),
])
def test_xread_block_times_out_with_a_null_reply(two_streams: Pair, args: tuple[str, ...]) -> None:
    start = time.monotonic()
    raw = two_streams.check("XREAD", "BLOCK", "50", *args)
    elapsed = time.monotonic() - start
    assert parse(raw).value is None, raw
    # Both servers waited: two 50 ms timeouts back to back.
    assert elapsed >= 0.09, elapsed


def test_xread_non_blocking_with_nothing_new_is_null(two_streams: Pair) -> None:
    raw = two_streams.check("XREAD", "STREAMS", "a", "b", "3-1", "5")
    assert parse(raw).value is None


@pytest.mark.parametrize("args", [
    ("STREAMS", "a"),
    ("COUNT", "1"),
    ("COUNT", "1", "BLOCK", "1"),
    ("COUNT", "x", "STREAMS", "a", "0"),
    ("COUNT", "1.5", "STREAMS", "a", "0"),
    ("BLOCK", "x", "STREAMS", "a", "0"),
    ("BLOCK", "-1", "STREAMS", "a", "0"),
    ("BLOCK", "0.5", "STREAMS", "a", "0"),
    ("BLOCK", "99999999999999999999", "STREAMS", "a", "0"),
    ("FOO", "STREAMS", "a", "0"),
    ("GROUP", "g", "c", "STREAMS", "a", "0"),
    ("NOACK", "STREAMS", "a", "0"),
    ("STREAMS", "a", ">"),
    ("STREAMS", "a", "-"),
    ("STREAMS", "a", "(1"),
    ("STREAMS", "a", "1-x"),
    ("STREAMS", "a", "0", "COUNT", "1"),
    ("STREAMS", "a", "b", "0", "x"),
    ("STREAMS", "str", "0"),
    ("STREAMS", "a", "str", "0", "0"),
])
def test_xread_errors(two_streams: Pair, args: tuple[str, ...]) -> None:
    two_streams.check("SET", "str", "x")
    two_streams.check("XREAD", *args)


def test_xread_without_streams_is_an_arity_error(pair_any: Pair) -> None:
    pair_any.check_all([
        ("XREAD",),
        ("XREAD", "STREAMS"),
        ("XREAD", "COUNT", "1", "STREAMS"),
    ])


def test_xread_unbalanced_streams_error_names_the_command(two_streams: Pair) -> None:
    # Redis 7.2's text (t_stream.c xreadCommand: "Unbalanced '%s' list of streams: for each
    # stream key an ID or '%c' must be specified.", with the command's full name). Redis 7.0,
    # the oracle here, printed the upper-case name unquoted, so Rill's text is asserted
    # directly. Rill also accepts 7.4's '+' ID, but keeps 7.2's text, which does not name it.
    for args in (("STREAMS", "a", "b", "0"), ("COUNT", "1", "STREAMS", "a", "b", "c", "0", "0"),
                 ("STREAMS", "streams", "a", "0")):
        reply = two_streams.rill.call("XREAD", *args)
        assert reply == (
            b"-ERR Unbalanced 'xread' list of streams: for each stream key an ID or '$' must be specified.\r\n"
        )


def test_xread_plus_id_reads_the_last_entry(two_streams: Pair) -> None:
    # XREAD's `+` ID (the last entry of each stream) arrived in Redis 7.4 and is part of Rill's
    # spec; the 7.0 oracle refuses it, so the reply is asserted directly. It equals what
    # XREVRANGE + - COUNT 1 shows, which both servers agree on.
    last_a = two_streams.check("XREVRANGE", "a", "+", "-", "COUNT", "1")
    assert last_a == b"*1\r\n*2\r\n$3\r\n3-1\r\n*2\r\n$1\r\nf\r\n$1\r\n3\r\n"
    resp = two_streams.rill.call("XREAD", "STREAMS", "a", "b", "+", "+")
    if two_streams.proto == 2:
        assert resp == (
            b"*2\r\n*2\r\n$1\r\na\r\n" + last_a + b"*2\r\n$1\r\nb\r\n"
            b"*1\r\n*2\r\n$3\r\n5-0\r\n*2\r\n$1\r\ng\r\n$1\r\n5\r\n"
        )
    else:
        assert resp == (
            b"%2\r\n$1\r\na\r\n" + last_a + b"$1\r\nb\r\n"
            b"*1\r\n*2\r\n$3\r\n5-0\r\n*2\r\n$1\r\ng\r\n$1\r\n5\r\n"
        )
    # A missing or empty stream contributes nothing; all of them missing is a null reply.
    assert two_streams.rill.call("XREAD", "STREAMS", "nosuch", "+") == (b"*-1\r\n" if two_streams.proto == 2 else b"_\r\n")
