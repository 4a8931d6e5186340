"""Differential tests of the generic keyspace commands (DEL, UNLINK, EXISTS, TOUCH, TYPE, KEYS,
SCAN, RENAME, RENAMENX, DBSIZE, FLUSHDB, FLUSHALL, SWAPDB, RANDOMKEY, OBJECT) against
redis-server, in RESP2 and RESP3.

KEYS and SCAN return keys in hash-table order, which legitimately differs between the two
servers, and SCAN cursors are opaque: those tests compare the *set* of keys returned (a full
SCAN iteration on both sides), never the order or the cursor values (docs/compatibility.md).
"""

from __future__ import annotations

import random

from tests.conformance.harness import Arg, Pair, RawConnection
from tests.conformance.stream_support import parse

# Keys with every byte that means something to a glob pattern.
GLOB_KEYS = [
    b"a", b"b", b"ab", b"abc", b"abcd", b"A", b"AB", b"hello", b"hallo", b"hxllo", b"hllo",
    b"heeeello", b"user:1", b"user:2", b"user:10", b"user:", b"x*y", b"x?y", b"x[y", b"x]y",
    b"x\\y", b"x-y", b"^", b"-", b"]", b"[", b"\\", b"*", b"?", b"a\x00b", b"\xff\xfe", b"",
]

GLOB_PATTERNS = [
    "*", "", "a", "a*", "*b", "*b*", "?", "??", "???*", "h?llo", "h*llo", "h[ae]llo", "h[^e]llo",
    "h[a-b]llo", "h[b-a]llo", "[a-c]*", "[^a-c]*", "user:*", "user:?", "user:[0-9]", "user:[0-9]*",
    "x\\*y", "x\\?y", "x\\[y", "x]y", "x[]]y", "x[\\]]y", "x\\\\y", "x[\\\\]y", "\\", "x\\",
    "[", "[a", "[^", "[a-", "[a-]", "[-]", "[]", "[^]", "*[", "**", "*?*", "a**", "[\\", "x[-]y",
    "*\\", "\\*", "[*]", "[?]", "[A-Z]*", "[a-zA-Z]", "a\x00b", "a?b", "\xff*",
]


def _keys(reply: bytes) -> list[bytes]:
    value = parse(reply)
    assert value.kind == "*", reply
    return [item.value for item in value.value]


def _scan_all(conn: RawConnection, *options: Arg, limit: int = 10_000) -> tuple[set[bytes], int]:
    """Every key a full SCAN iteration returns, and how many calls it took."""
    seen: set[bytes] = set()
    cursor = b"0"
    for calls in range(1, limit + 1):
        reply = parse(conn.call("SCAN", cursor, *options))
        assert reply.kind == "*" and len(reply.value) == 2, reply
        head, batch = reply.value
        assert head.kind == "$" and head.value.isdigit(), reply
        assert batch.kind == "*", reply
        seen.update(item.value for item in batch.value)
        cursor = head.value
        if cursor == b"0":
            return seen, calls
    raise AssertionError(f"SCAN {options} did not finish in {limit} calls")


def _both(pair: Pair, *args: Arg) -> None:
    """Run a setup command on both servers, asserting they agree."""
    pair.check(*args)


def _load(pair: Pair, keys: list[bytes]) -> None:
    for key in keys:
        _both(pair, "SET", key, b"v")


# ---------------------------------------------------------------------------------------
# DEL, UNLINK, EXISTS, TOUCH, TYPE, DBSIZE
# ---------------------------------------------------------------------------------------


def test_del_and_unlink_count_each_existing_key_once(pair_any: Pair) -> None:
    _load(pair_any, [b"a", b"b", b"c", b"d"])
    pair_any.check("DEL", "a", "a", "missing", "b")
    pair_any.check("DEL", "a")
    pair_any.check("UNLINK", "c", "c", "nokey")
    pair_any.check("unlink", "d")
    pair_any.check("EXISTS", "a", "b", "c", "d")
    pair_any.check("DBSIZE")


def test_exists_and_touch_count_repeated_keys_per_mention(pair_any: Pair) -> None:
    _load(pair_any, [b"k", b"j"])
    pair_any.check("EXISTS", "k", "k", "j", "nokey", "k")
    pair_any.check("EXISTS", "nokey")
    pair_any.check("TOUCH", "k", "k", "nokey", "j")
    pair_any.check("TOUCH", "nokey")


def test_type_reports_none_and_string_as_status(pair_any: Pair) -> None:
    _both(pair_any, "SET", "s", "1")
    pair_any.check("TYPE", "s")
    pair_any.check("TYPE", "nokey")


def test_generic_commands_on_a_stream_key(pair_any: Pair) -> None:
    _both(pair_any, "XADD", "s", "1-1", "f", "v")
    pair_any.check("TYPE", "s")
    pair_any.check("EXISTS", "s")
    pair_any.check("OBJECT", "ENCODING", "s")
    pair_any.check("OBJECT", "REFCOUNT", "s")
    pair_any.check("OBJECT", "IDLETIME", "s")
    pair_any.check("OBJECT", "FREQ", "s")
    pair_any.check("RENAME", "s", "t")
    pair_any.check("TYPE", "t")
    pair_any.check("XLEN", "t")
    pair_any.check("RENAMENX", "t", "t")
    _both(pair_any, "SET", "str", "1")
    pair_any.check("RENAME", "str", "t")  # a string may replace a stream
    pair_any.check("TYPE", "t")
    _both(pair_any, "XADD", "s2", "1-1", "f", "v")
    pair_any.check("DEL", "s2", "t")
    pair_any.check("DBSIZE")


def test_scan_type_stream_and_keys_see_streams(pair_any: Pair) -> None:
    _both(pair_any, "XADD", "stream:1", "1-1", "f", "v")
    _both(pair_any, "XADD", "stream:2", "1-1", "f", "v")
    _both(pair_any, "SET", "string:1", "v")
    for options in (("TYPE", "stream"), ("TYPE", "Stream", "MATCH", "*2"), ("TYPE", "string"), ()):
        expected, _ = _scan_all(pair_any.oracle, *options)
        actual, _ = _scan_all(pair_any.rill, *options)
        assert actual == expected, f"SCAN {options}"
    assert sorted(_keys(pair_any.rill.call("KEYS", "stream:*"))) == [b"stream:1", b"stream:2"]


def test_dbsize_counts_only_the_selected_database(pair_any: Pair) -> None:
    pair_any.check("DBSIZE")
    _load(pair_any, [b"a", b"b"])
    pair_any.check("SELECT", "3")
    _both(pair_any, "SET", "c", "1")
    pair_any.check("DBSIZE")
    pair_any.check("SELECT", "0")
    pair_any.check("DBSIZE")


# ---------------------------------------------------------------------------------------
# KEYS
# ---------------------------------------------------------------------------------------


def test_keys_matches_globs_exactly_as_redis(pair_any: Pair) -> None:
    _load(pair_any, GLOB_KEYS)
    for pattern in GLOB_PATTERNS:
        raw = pattern.encode("latin-1")
        expected = _keys(pair_any.oracle.call("KEYS", raw))
        actual = _keys(pair_any.rill.call("KEYS", raw))
        assert sorted(actual) == sorted(expected), f"KEYS {raw!r}"
        assert len(actual) == len(set(actual)), f"KEYS {raw!r} repeats keys"


def test_keys_matches_random_patterns_exactly_as_redis(pair: Pair) -> None:
    # Seeded fuzzing over the bytes that steer the matcher: sets, ranges, escapes, stars.
    rng = random.Random(7)
    alphabet = b"abAB-]^[\\*?z"
    keys = sorted({bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 5))) for _ in range(200)})
    _load(pair, keys)
    for _ in range(400):
        pattern = bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 7)))
        expected = sorted(_keys(pair.oracle.call("KEYS", pattern)))
        actual = sorted(_keys(pair.rill.call("KEYS", pattern)))
        assert actual == expected, f"KEYS {pattern!r}"


def test_keys_recursion_cap_of_a_thousand_stars(pair: Pair) -> None:
    # Redis 7.2 stops matching below 1000 nested '*' unless the extra star ends the pattern.
    _both(pair, "SET", b"a" * 1200, "v")
    for pattern in (b"*a" * 1000, b"*a" * 1001, b"*a" * 1000 + b"*", b"*a" * 1000 + b"*a"):
        assert sorted(_keys(pair.rill.call("KEYS", pattern))) == sorted(_keys(pair.oracle.call("KEYS", pattern)))


def test_keys_with_many_stars_answers_without_backtracking_blowup(pair: Pair) -> None:
    # A backtracking matcher needs exponential time here (Redis's CVE-2022-36021); the
    # connection's 10 s timeout bounds the test.
    _both(pair, "SET", b"a" * 3000, "v")
    _both(pair, "SET", b"a" * 3000 + b"b", "v")
    for pattern in (b"*a" * 500 + b"b", b"a*" * 500 + b"c", b"*?" * 300 + b"[b]"):
        assert sorted(_keys(pair.rill.call("KEYS", pattern))) == sorted(_keys(pair.oracle.call("KEYS", pattern)))


def test_keys_on_empty_database_is_an_empty_array(pair_any: Pair) -> None:
    pair_any.check("KEYS", "*")
    pair_any.check("KEYS", "a*")


# ---------------------------------------------------------------------------------------
# SCAN
# ---------------------------------------------------------------------------------------


def test_scan_full_iteration_returns_the_same_keys(pair_any: Pair) -> None:
    keys = [b"key:%d" % i for i in range(250)] + [b"other:%d" % i for i in range(30)]
    _load(pair_any, keys)
    for options in ((), ("COUNT", "1"), ("COUNT", "7"), ("COUNT", "1000"), ("MATCH", "key:1*"),
                    ("MATCH", "*"), ("match", "other:?", "count", "3"), ("TYPE", "string"),
                    ("TYPE", "STRING", "MATCH", "other:*"), ("TYPE", "list"), ("TYPE", "nosuchtype"),
                    ("COUNT", "5", "COUNT", "50"), ("MATCH", "a*", "MATCH", "key:2?")):
        expected, _ = _scan_all(pair_any.oracle, *options)
        actual, _ = _scan_all(pair_any.rill, *options)
        assert actual == expected, f"SCAN {options}"


def test_scan_with_small_count_takes_several_calls(pair_any: Pair) -> None:
    _load(pair_any, [b"k%d" % i for i in range(100)])
    keys, calls = _scan_all(pair_any.rill, "COUNT", "10")
    assert len(keys) == 100
    assert calls >= 10


def test_scan_of_empty_database_ends_at_once(pair_any: Pair) -> None:
    pair_any.check("SCAN", "0")
    pair_any.check("SCAN", "0", "MATCH", "x*", "COUNT", "100", "TYPE", "string")


def test_scan_cursor_accepts_what_strtoul_accepts(pair_any: Pair) -> None:
    # On an empty database every accepted cursor ends the iteration.
    for cursor in ("", "+0", "-0", "000", "-1", "18446744073709551615", "0\x00junk"):
        pair_any.check("SCAN", cursor)


def test_scan_errors(pair_any: Pair) -> None:
    for cursor in (" 0", "\t1", "1 ", "abc", "+", "-", "18446744073709551616", "1e3", "0x10"):
        pair_any.check("SCAN", cursor)
    pair_any.check("SCAN", "0", "COUNT", "0")
    pair_any.check("SCAN", "0", "COUNT", "-1")
    pair_any.check("SCAN", "0", "COUNT", "abc")
    pair_any.check("SCAN", "0", "COUNT", "99999999999999999999")
    pair_any.check("SCAN", "0", "COUNT")
    pair_any.check("SCAN", "0", "MATCH")
    pair_any.check("SCAN", "0", "TYPE")
    pair_any.check("SCAN", "0", "NOVALUES")
    pair_any.check("SCAN", "0", "FOO", "bar")
    pair_any.check("SCAN", "abc", "COUNT", "0")  # the cursor is checked first
    pair_any.check("SCAN")


# ---------------------------------------------------------------------------------------
# RENAME, RENAMENX
# ---------------------------------------------------------------------------------------


def test_rename_moves_and_overwrites(pair_any: Pair) -> None:
    _both(pair_any, "SET", "a", "1")
    _both(pair_any, "SET", "b", "2")
    pair_any.check("RENAME", "a", "b")
    pair_any.check("GET", "a")
    pair_any.check("GET", "b")
    pair_any.check("RENAME", "b", "c")
    pair_any.check("KEYS", "c")


def test_rename_errors_and_same_key(pair_any: Pair) -> None:
    pair_any.check("RENAME", "nokey", "x")
    pair_any.check("RENAME", "nokey", "nokey")
    pair_any.check("RENAMENX", "nokey", "x")
    _both(pair_any, "SET", "a", "1")
    pair_any.check("RENAME", "a", "a")
    pair_any.check("RENAMENX", "a", "a")
    pair_any.check("GET", "a")


def test_renamenx_only_when_destination_is_free(pair_any: Pair) -> None:
    _both(pair_any, "SET", "a", "1")
    _both(pair_any, "SET", "b", "2")
    pair_any.check("RENAMENX", "a", "b")
    pair_any.check("GET", "a")
    pair_any.check("RENAMENX", "a", "c")
    pair_any.check("GET", "c")
    pair_any.check("EXISTS", "a")


# ---------------------------------------------------------------------------------------
# FLUSHDB, FLUSHALL, SWAPDB, RANDOMKEY
# ---------------------------------------------------------------------------------------


def test_flushdb_empties_only_the_selected_database(pair_any: Pair) -> None:
    _both(pair_any, "SET", "a", "1")
    pair_any.check("SELECT", "2")
    _both(pair_any, "SET", "b", "1")
    pair_any.check("FLUSHDB")
    pair_any.check("DBSIZE")
    pair_any.check("SELECT", "0")
    pair_any.check("DBSIZE")
    pair_any.check("FLUSHDB", "ASYNC")
    pair_any.check("FLUSHDB", "sync")
    pair_any.check("DBSIZE")


def test_flushall_empties_every_database(pair_any: Pair) -> None:
    _both(pair_any, "SET", "a", "1")
    pair_any.check("SELECT", "5")
    _both(pair_any, "SET", "b", "1")
    pair_any.check("FLUSHALL", "SYNC")
    pair_any.check("DBSIZE")
    pair_any.check("SELECT", "0")
    pair_any.check("DBSIZE")
    pair_any.check("FLUSHALL", "async")
    pair_any.check("FLUSHALL")


def test_flush_option_errors(pair_any: Pair) -> None:
    for name in ("FLUSHDB", "FLUSHALL"):
        pair_any.check(name, "foo")
        pair_any.check(name, "ASYNC", "SYNC")
        pair_any.check(name, "sync", "x")
        pair_any.check(name, "")


def test_swapdb_exchanges_databases_for_every_client(pair_any: Pair) -> None:
    _both(pair_any, "SET", "in0", "a")
    pair_any.check("SELECT", "1")
    _both(pair_any, "SET", "in1", "b")
    pair_any.check("SWAPDB", "0", "1")
    pair_any.check("KEYS", "*")  # this client stays on db 1, which now holds db 0's data
    pair_any.check("SELECT", "0")
    pair_any.check("GET", "in1")
    pair_any.check("SWAPDB", "0", "0")
    pair_any.check("GET", "in1")


def test_swapdb_errors(pair_any: Pair) -> None:
    pair_any.check("SWAPDB", "a", "1")
    pair_any.check("SWAPDB", "1", "b")
    pair_any.check("SWAPDB", "99", "x")  # both indexes are parsed before the range check
    pair_any.check("SWAPDB", "1", "16")
    pair_any.check("SWAPDB", "-1", "0")
    pair_any.check("SWAPDB", "2147483648", "0")
    pair_any.check("SWAPDB", "0", "-2147483649")
    pair_any.check("SWAPDB", "01", "0")
    pair_any.check("SWAPDB", "0")


def test_randomkey_on_empty_and_single_key_database(pair_any: Pair) -> None:
    pair_any.check("RANDOMKEY")
    _both(pair_any, "SET", "only", "1")
    pair_any.check("RANDOMKEY")


def test_randomkey_returns_an_existing_key(pair_any: Pair) -> None:
    keys = {b"k%d" % i for i in range(20)}
    _load(pair_any, sorted(keys))
    for _ in range(20):
        reply = parse(pair_any.rill.call("RANDOMKEY"))
        assert reply.kind == "$" and reply.value in keys


# ---------------------------------------------------------------------------------------
# OBJECT
# ---------------------------------------------------------------------------------------


def test_object_encoding_of_strings(pair_any: Pair) -> None:
    values = [b"0", b"123", b"-5", b"9223372036854775807", b"9223372036854775808", b"-9223372036854775808",
              b"01", b"1.5", b"hello", b"x" * 44, b"x" * 45, b"", b" 1"]
    for i, value in enumerate(values):
        _both(pair_any, "SET", b"k%d" % i, value)
        pair_any.check("OBJECT", "ENCODING", b"k%d" % i)
    pair_any.check("OBJECT", "encoding", "nokey")
    _both(pair_any, "INCR", "counter")
    pair_any.check("OBJECT", "ENCODING", "counter")
    _both(pair_any, "MSET", "m1", "77", "m2", "text")
    pair_any.check("OBJECT", "ENCODING", "m1")
    pair_any.check("OBJECT", "ENCODING", "m2")


def test_object_refcount_shares_small_integers(pair_any: Pair) -> None:
    for value in ("0", "9999", "10000", "-1", "abc", "00"):
        _both(pair_any, "SET", "k", value)
        pair_any.check("OBJECT", "REFCOUNT", "k")
    pair_any.check("OBJECT", "REFCOUNT", "nokey")


def test_object_freq_and_idletime(pair_any: Pair) -> None:
    pair_any.check("OBJECT", "FREQ", "nokey")
    pair_any.check("OBJECT", "IDLETIME", "nokey")
    _both(pair_any, "SET", "k", "v")
    pair_any.check("OBJECT", "FREQ", "k")
    pair_any.check("OBJECT", "IDLETIME", "k")  # a key written just now is idle for 0 s


def test_object_help_and_errors(pair_any: Pair) -> None:
    pair_any.check("OBJECT", "HELP")
    pair_any.check("object", "help")
    pair_any.check("OBJECT", "HELP", "extra")
    pair_any.check("OBJECT", "NOSUCH")
    pair_any.check("OBJECT", "NOSUCH", "k")
    pair_any.check("OBJECT")
    for sub in ("ENCODING", "REFCOUNT", "FREQ", "IDLETIME"):
        pair_any.check("OBJECT", sub)
        pair_any.check("OBJECT", sub, "a", "b")


# ---------------------------------------------------------------------------------------
# Arity
# ---------------------------------------------------------------------------------------


def test_wrong_number_of_arguments(pair_any: Pair) -> None:
    for cmd in (("DEL",), ("UNLINK",), ("EXISTS",), ("TOUCH",), ("TYPE",), ("TYPE", "a", "b"), ("KEYS",),
                ("KEYS", "a", "b"), ("SCAN",), ("RENAME", "a"), ("RENAME", "a", "b", "c"), ("RENAMENX", "a"),
                ("DBSIZE", "x"), ("RANDOMKEY", "x"), ("SWAPDB", "0"), ("SWAPDB", "0", "1", "2")):
        pair_any.check(*cmd)
