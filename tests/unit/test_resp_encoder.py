"""Unit tests of node.server.resp: the exact RESP2 and RESP3 bytes of every reply value type
of node.commands.reply, as redis-server 7.2 writes them."""

from __future__ import annotations

from collections import deque
from typing import Any

import hiredis
import pytest

from node.commands.reply import NULL_ARRAY, OK, QUEUED, Raw, ReplyError, RSet, Verbatim
from node.log.encode import encode_command, encoded_size
from node.server.resp import encode, encode_error, encode_one, format_double


@pytest.mark.parametrize(
    ("reply", "resp2", "resp3"),
    [
        (b"hello", b"$5\r\nhello\r\n", b"$5\r\nhello\r\n"),
        (b"", b"$0\r\n\r\n", b"$0\r\n\r\n"),
        (b"a\r\nb\x00", b"$5\r\na\r\nb\x00\r\n", b"$5\r\na\r\nb\x00\r\n"),
        ("OK", b"+OK\r\n", b"+OK\r\n"),
        ("", b"+\r\n", b"+\r\n"),
        (0, b":0\r\n", b":0\r\n"),
        (1023, b":1023\r\n", b":1023\r\n"),
        (1024, b":1024\r\n", b":1024\r\n"),
        (-1, b":-1\r\n", b":-1\r\n"),
        (2**63 - 1, b":9223372036854775807\r\n", b":9223372036854775807\r\n"),
        (-(2**63), b":-9223372036854775808\r\n", b":-9223372036854775808\r\n"),
        (None, b"$-1\r\n", b"_\r\n"),
        (NULL_ARRAY, b"*-1\r\n", b"_\r\n"),
        (True, b":1\r\n", b"#t\r\n"),
        (False, b":0\r\n", b"#f\r\n"),
        (1.5, b"$3\r\n1.5\r\n", b",1.5\r\n"),
        (3.0, b"$1\r\n3\r\n", b",3\r\n"),
        (-0.25, b"$5\r\n-0.25\r\n", b",-0.25\r\n"),
        (0.1, b"$3\r\n0.1\r\n", b",0.1\r\n"),
        (float("inf"), b"$3\r\ninf\r\n", b",inf\r\n"),
        (float("-inf"), b"$4\r\n-inf\r\n", b",-inf\r\n"),
        (float("nan"), b"$3\r\nnan\r\n", b",nan\r\n"),
        ([], b"*0\r\n", b"*0\r\n"),
        ([b"a", 1, None], b"*3\r\n$1\r\na\r\n:1\r\n$-1\r\n", b"*3\r\n$1\r\na\r\n:1\r\n_\r\n"),
        ((b"t",), b"*1\r\n$1\r\nt\r\n", b"*1\r\n$1\r\nt\r\n"),
        ([[b"1-0", [b"f", b"v"]]], b"*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n",
         b"*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"),
        ({}, b"*0\r\n", b"%0\r\n"),
        ({b"k": 1, b"n": None}, b"*4\r\n$1\r\nk\r\n:1\r\n$1\r\nn\r\n$-1\r\n",
         b"%2\r\n$1\r\nk\r\n:1\r\n$1\r\nn\r\n_\r\n"),
        ({b"m": {b"x": [b"y"]}}, b"*2\r\n$1\r\nm\r\n*2\r\n$1\r\nx\r\n*1\r\n$1\r\ny\r\n",
         b"%1\r\n$1\r\nm\r\n%1\r\n$1\r\nx\r\n*1\r\n$1\r\ny\r\n"),
        (RSet([b"a", b"b"]), b"*2\r\n$1\r\na\r\n$1\r\nb\r\n", b"~2\r\n$1\r\na\r\n$1\r\nb\r\n"),
        (RSet(), b"*0\r\n", b"~0\r\n"),
        (Verbatim("txt", b"line\r\n"), b"$6\r\nline\r\n\r\n", b"=10\r\ntxt:line\r\n\r\n"),
        (ReplyError("ERR wrong"), b"-ERR wrong\r\n", b"-ERR wrong\r\n"),
        ([ReplyError("WRONGTYPE x"), b"ok"], b"*2\r\n-WRONGTYPE x\r\n$2\r\nok\r\n", b"*2\r\n-WRONGTYPE x\r\n$2\r\nok\r\n"),
        (OK, b"+OK\r\n", b"+OK\r\n"),
        (QUEUED, b"+QUEUED\r\n", b"+QUEUED\r\n"),
        (Raw(b":42\r\n"), b":42\r\n", b":42\r\n"),
    ],
)
def test_reply_value_encodes_to_redis_bytes_in_resp2_and_resp3(reply: Any, resp2: bytes, resp3: bytes) -> None:
    assert encode_one(reply, 2) == resp2
    assert encode_one(reply, 3) == resp3


@pytest.mark.parametrize("n", [0, 1, 1023, 1024, 1025, 5000])
def test_array_header_counts_every_element(n: int) -> None:
    assert encode_one([1] * n, 2) == b"*%d\r\n" % n + b":1\r\n" * n


def test_map_of_many_pairs_has_twice_the_count_in_resp2() -> None:
    reply = {b"%d" % i: i for i in range(700)}
    assert encode_one(reply, 2).startswith(b"*1400\r\n$1\r\n0\r\n:0\r\n")
    assert encode_one(reply, 3).startswith(b"%700\r\n$1\r\n0\r\n:0\r\n")


def test_simple_string_is_utf8_encoded() -> None:
    assert encode_one("caf\u00e9", 2) == b"+caf\xc3\xa9\r\n"


def test_error_text_keeps_to_one_line() -> None:
    # Redis replaces CR and LF in error messages with spaces (addReplyErrorLength).
    assert encode_one(ReplyError("ERR a\r\nb\nc"), 2) == b"-ERR a  b c\r\n"
    assert encode_error("ERR x\ny") == b"-ERR x y\r\n"


def test_error_helper_prefixes_a_dash() -> None:
    assert encode_error("NOGROUP No such key") == b"-NOGROUP No such key\r\n"


def test_encode_appends_to_the_output_list() -> None:
    out: list[bytes] = [b"+PONG\r\n"]
    encode(b"x", 2, out)
    encode(7, 3, out)
    assert b"".join(out) == b"+PONG\r\n$1\r\nx\r\n:7\r\n"


def test_encode_command_is_a_canonical_multibulk() -> None:
    assert encode_command([b"XADD", b"s", b"1-0", b"f", b""]) == (
        b"*5\r\n$4\r\nXADD\r\n$1\r\ns\r\n$3\r\n1-0\r\n$1\r\nf\r\n$0\r\n\r\n"
    )


@pytest.mark.parametrize(
    ("value", "text"),
    [(1.0, b"1"), (-2.0, b"-2"), (2.5, b"2.5"), (1e-3, b"0.001"), (123456789.0, b"123456789")],
)
def test_double_is_printed_shortest_round_trip(value: float, text: bytes) -> None:
    assert format_double(value) == text


def test_unknown_reply_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="cannot encode reply of type object"):
        encode_one(object(), 2)


@pytest.mark.parametrize("sizes", [[], [0], [1, 2, 3], [1023, 1024, 1025], [70000], list(range(1100))])
def test_encode_command_matches_hiredis_pack_command(sizes: list[int]) -> None:
    argv = [bytes([65 + i % 26]) * n for i, n in enumerate(sizes)]
    assert encode_command(argv) == hiredis.pack_command(tuple(argv))


def test_encode_command_takes_tuples_and_bytearray_arguments() -> None:
    expected = hiredis.pack_command((b"XADD", b"k", b"1-1", b"f", b"v"))
    assert encode_command((b"XADD", b"k", b"1-1", b"f", b"v")) == expected
    assert encode_command([b"XADD", bytearray(b"k"), b"1-1", b"f", b"v"]) == expected
    assert encode_command(deque([b"XADD", b"k", b"1-1", b"f", b"v"])) == expected  # C takes lists and tuples


@pytest.mark.parametrize("sizes", [[], [0], [1, 2, 3], [9, 10, 99, 100, 999, 1000], [1023, 1024, 1025], [70000], list(range(1100))])
def test_encoded_size_is_the_length_of_the_encoded_command(sizes: list[int]) -> None:
    argv = [b"x" * n for n in sizes]
    assert encoded_size(argv) == len(encode_command(argv))
    assert encoded_size(tuple(argv)) == len(encode_command(argv))  # Session.propagate's star-args
