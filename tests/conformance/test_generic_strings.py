"""Differential tests of the string commands (GET, SET and its NX/XX/GET options, SETNX, GETSET,
GETDEL, MGET, MSET, MSETNX, INCR, INCRBY, DECR, DECRBY, APPEND, STRLEN) against
redis-server, in RESP2 and RESP3: replies and error texts byte for byte.

Against a stream key every command that reads the value answers WRONGTYPE where Redis does;
SET without GET overwrites it.

SET's expiry options (EX, PX, EXAT, PXAT, KEEPTTL), SETEX, PSETEX and GETEX are in
test_expiry.py with the other time-to-live commands.
"""

from __future__ import annotations

from tests.conformance.harness import Pair

I64_MAX = "9223372036854775807"
I64_MIN = "-9223372036854775808"


def test_get_and_set_round_trip_any_bytes(pair_any: Pair) -> None:
    pair_any.check("GET", "nokey")
    for value in (b"", b"plain", b"\x00\xff\r\n binary", b"x" * 10_000):
        pair_any.check("SET", "k", value)
        pair_any.check("GET", "k")
    pair_any.check("set", "K", "upper-and-lower")
    pair_any.check("get", "K")


def test_set_nx_and_xx(pair_any: Pair) -> None:
    pair_any.check("SET", "k", "1", "XX")
    pair_any.check("GET", "k")
    pair_any.check("SET", "k", "1", "NX")
    pair_any.check("SET", "k", "2", "NX")
    pair_any.check("SET", "k", "3", "xx")
    pair_any.check("SET", "k", "4", "nx", "NX")
    pair_any.check("SET", "k", "5", "XX", "xx")
    pair_any.check("GET", "k")


def test_set_get_returns_the_old_value(pair_any: Pair) -> None:
    pair_any.check("SET", "k", "1", "GET")
    pair_any.check("SET", "k", "2", "GET")
    pair_any.check("SET", "k", "3", "GET", "get")
    pair_any.check("SET", "k", "4", "NX", "GET")  # exists: old value, nothing set
    pair_any.check("GET", "k")
    pair_any.check("SET", "k", "5", "GET", "XX")
    pair_any.check("SET", "new", "6", "XX", "GET")  # missing: nil, nothing set
    pair_any.check("EXISTS", "new")
    pair_any.check("SET", "new", "7", "GET", "NX")
    pair_any.check("GET", "new")


def test_set_syntax_errors(pair_any: Pair) -> None:
    pair_any.check("SET", "k", "v", "NX", "XX")
    pair_any.check("SET", "k", "v", "XX", "NX")
    pair_any.check("SET", "k", "v", "FOO")
    pair_any.check("SET", "k", "v", "GET", "FOO")
    pair_any.check("SET", "k", "v", "EX")
    pair_any.check("SET", "k", "v", "")
    pair_any.check("EXISTS", "k")


def test_setnx(pair_any: Pair) -> None:
    pair_any.check("SETNX", "k", "1")
    pair_any.check("SETNX", "k", "2")
    pair_any.check("GET", "k")


def test_getset_and_getdel(pair_any: Pair) -> None:
    pair_any.check("GETSET", "k", "1")
    pair_any.check("GETSET", "k", "2")
    pair_any.check("GET", "k")
    pair_any.check("GETDEL", "k")
    pair_any.check("GETDEL", "k")
    pair_any.check("EXISTS", "k")


def test_mget_reads_missing_keys_as_nil(pair_any: Pair) -> None:
    pair_any.check("MSET", "a", "1", "b", "2")
    pair_any.check("MGET", "a", "nokey", "b", "a")
    pair_any.check("MGET", "nokey")


def test_mset_last_duplicate_wins(pair_any: Pair) -> None:
    pair_any.check("MSET", "a", "1", "a", "2", "b", "3")
    pair_any.check("MGET", "a", "b")


def test_msetnx_sets_all_or_nothing(pair_any: Pair) -> None:
    pair_any.check("MSETNX", "a", "1", "b", "2")
    pair_any.check("MSETNX", "b", "x", "c", "3")
    pair_any.check("MGET", "a", "b", "c")
    pair_any.check("MSETNX", "c", "3", "c", "4")
    pair_any.check("GET", "c")


def test_mset_and_msetnx_need_pairs(pair_any: Pair) -> None:
    for name in ("MSET", "MSETNX", "mset"):
        pair_any.check(name, "a")
        pair_any.check(name, "a", "1", "b")
    pair_any.check("EXISTS", "a")


def test_incr_family_results(pair_any: Pair) -> None:
    pair_any.check("INCR", "n")
    pair_any.check("INCRBY", "n", "41")
    pair_any.check("DECR", "n")
    pair_any.check("DECRBY", "n", "-10")
    pair_any.check("DECRBY", "n", "100")
    pair_any.check("INCRBY", "n", "0")
    pair_any.check("GET", "n")
    pair_any.check("DECR", "fresh")
    pair_any.check("SET", "z", "0")
    pair_any.check("INCRBY", "z", I64_MAX)
    pair_any.check("SET", "y", "-1")
    pair_any.check("INCRBY", "y", I64_MIN)
    pair_any.check("GET", "y")


def test_incr_family_rejects_non_integer_values(pair_any: Pair) -> None:
    for value in ("abc", "", " 1", "1 ", "01", "-0", "+1", "1.5", "1e3", "99999999999999999999", "0x10"):
        pair_any.check("SET", "k", value)
        pair_any.check("INCR", "k")
        pair_any.check("DECRBY", "k", "1")
        pair_any.check("GET", "k")


def test_incr_family_rejects_non_integer_increments(pair_any: Pair) -> None:
    for increment in ("abc", "", "1.0", "9223372036854775808", "-9223372036854775809", "01", "+5"):
        pair_any.check("INCRBY", "k", increment)
        pair_any.check("DECRBY", "k", increment)
    pair_any.check("EXISTS", "k")


def test_incr_family_overflow(pair_any: Pair) -> None:
    pair_any.check("SET", "k", I64_MAX)
    pair_any.check("INCR", "k")
    pair_any.check("INCRBY", "k", "1")
    pair_any.check("DECRBY", "k", "-1")
    pair_any.check("SET", "k", I64_MIN)
    pair_any.check("DECR", "k")
    pair_any.check("INCRBY", "k", "-1")
    pair_any.check("DECRBY", "k", I64_MIN)  # negating LLONG_MIN has its own text
    pair_any.check("DECRBY", "fresh", I64_MIN)
    pair_any.check("INCRBY", "k", I64_MAX)
    pair_any.check("GET", "k")


def test_append_and_strlen(pair_any: Pair) -> None:
    pair_any.check("STRLEN", "k")
    pair_any.check("APPEND", "k", "")  # creates an empty string
    pair_any.check("EXISTS", "k")
    pair_any.check("APPEND", "k", "hello")
    pair_any.check("APPEND", "k", " world")
    pair_any.check("GET", "k")
    pair_any.check("STRLEN", "k")
    pair_any.check("SET", "n", "12")
    pair_any.check("APPEND", "n", "3")
    pair_any.check("INCR", "n")


def test_string_commands_on_a_stream_key(pair_any: Pair) -> None:
    pair_any.check("XADD", "s", "1-1", "f", "v")
    for cmd in (("GET", "s"), ("GETSET", "s", "x"), ("GETDEL", "s"), ("SET", "s", "x", "GET"),
                ("SET", "s", "x", "NX", "GET"), ("SET", "s", "x", "NX"), ("SETNX", "s", "x"),
                ("MSETNX", "new", "1", "s", "x"), ("INCR", "s"), ("DECR", "s"), ("INCRBY", "s", "2"),
                ("DECRBY", "s", "2"), ("INCRBY", "s", "nan"), ("APPEND", "s", "x"), ("STRLEN", "s"),
                ("MGET", "s", "nokey"), ("TYPE", "s"), ("EXISTS", "new")):
        pair_any.check(*cmd)
    pair_any.check("SET", "s", "now a string", "XX")
    pair_any.check("TYPE", "s")
    pair_any.check("XADD", "s2", "1-1", "f", "v")
    pair_any.check("MSET", "s2", "x")
    pair_any.check("GET", "s2")
    pair_any.check("XADD", "s3", "1-1", "f", "v")
    pair_any.check("SET", "s3", "y")
    pair_any.check("GET", "s3")


def test_wrong_number_of_arguments(pair_any: Pair) -> None:
    for cmd in (("GET",), ("GET", "a", "b"), ("SET", "a"), ("SETNX", "a"), ("SETNX", "a", "b", "c"), ("GETSET", "a"),
                ("GETDEL",), ("GETDEL", "a", "b"), ("MGET",), ("MSET",), ("MSET", "a"), ("MSETNX",), ("INCR",),
                ("INCR", "a", "b"), ("DECR",), ("INCRBY", "a"), ("INCRBY", "a", "1", "2"), ("DECRBY", "a"),
                ("APPEND", "a"), ("APPEND", "a", "b", "c"), ("STRLEN",), ("STRLEN", "a", "b")):
        pair_any.check(*cmd)
