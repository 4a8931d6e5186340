"""Differential tests of key expiry against redis-server, in RESP2 and RESP3: EXPIRE, PEXPIRE,
EXPIREAT, PEXPIREAT (NX/XX/GT/LT), TTL, PTTL, EXPIRETIME, PEXPIRETIME, PERSIST, SET's
EX/PX/EXAT/PXAT/KEEPTTL (with NX/XX/GET), SETEX, PSETEX, GETEX, which writes keep or drop a
time to live (RENAME, MOVE, COPY, SWAPDB, FLUSHALL, INCR, APPEND, GETSET, MSET), and what
every command sees once a key's time has passed (lazy expiry, KEYS, SCAN, RANDOMKEY, DBSIZE,
OBJECT, streams and their groups, WATCH), on strings and streams.

Times: deadlines are absolute where a reply shows them (EXPIREAT/PEXPIREAT far in the future),
relative TTLs are checked through TTL's rounding (both servers read their own clock a few
milliseconds apart), and expiry itself is waited for with short TTLs. Tests that must see a
key sit expired but present switch active expiry off on both servers (DEBUG
SET-ACTIVE-EXPIRE 0) and on again afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.conformance.harness import Arg, Pair
from tests.conformance.stream_support import parse
from tests.conformance.test_streams_blocking import NOGROUP_72, blocked
from tests.conftest import Server, start_redis

FAR = 4_000_000_000  # a unix time in seconds well in the future (2096)
I64_MAX = "9223372036854775807"


@pytest.fixture(scope="module")
def debug_oracle() -> Iterator[Server]:
    """An oracle that accepts DEBUG (SET-ACTIVE-EXPIRE, DIGEST), which Rill always does."""
    server = start_redis("--enable-debug-command", "yes")
    yield server
    server.stop()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def pair_any(request: pytest.FixtureRequest, debug_oracle: Server, rill_node: Server) -> Iterator[Pair]:
    """conftest's pair_any, against the oracle above."""
    p = Pair(debug_oracle.port, rill_node.port, request.param)
    p.oracle.call("FLUSHALL")
    p.rill.call("FLUSHALL")
    yield p
    p.close()


@pytest.fixture
def lazy(pair_any: Pair) -> Iterator[Pair]:
    """Active expiry off on both servers: expired keys stay until something touches them."""
    pair_any.check("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    try:
        yield pair_any
    finally:
        pair_any.check("DEBUG", "SET-ACTIVE-EXPIRE", "1")


@pytest.fixture
def other(pair_any: Pair, debug_oracle: Server, rill_node: Server) -> Iterator[Pair]:
    """A second client on both servers, in the same protocol as `pair_any`."""
    second = Pair(debug_oracle.port, rill_node.port, pair_any.proto)
    yield second
    second.close()


def _int(pair: Pair, *args: Arg) -> int:
    """An integer reply both servers agree on."""
    value = parse(pair.check(*args))
    assert value.kind == ":", value
    return int(value.value)


def _pttl_both(pair: Pair, key: str) -> tuple[int, int]:
    expected, actual = pair.both("PTTL", key)
    return int(parse(expected).value), int(parse(actual).value)


def _wait_expired(seconds: float = 0.12) -> None:
    """Let millisecond TTLs set just before pass on both servers."""
    time.sleep(seconds)


# ---------------------------------------------------------------------------------------
# EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, TTL, PTTL, EXPIRETIME, PEXPIRETIME, PERSIST
# ---------------------------------------------------------------------------------------


def test_ttl_family_on_missing_persistent_and_volatile_keys(pair_any: Pair) -> None:
    for command in ("TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"):
        pair_any.check(command, "nokey")
    pair_any.check("SET", "k", "v")
    pair_any.check("XADD", "s", "1-1", "f", "v")
    for command in ("TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"):
        pair_any.check(command, "k")
        pair_any.check(command, "s")
    pair_any.check("EXPIREAT", "k", FAR)
    pair_any.check("PEXPIREAT", "s", FAR * 1000 + 1499)
    pair_any.check("EXPIRETIME", "k")
    pair_any.check("PEXPIRETIME", "k")
    pair_any.check("EXPIRETIME", "s")  # rounded: (ms + 500) / 1000
    pair_any.check("PEXPIRETIME", "s")
    pair_any.check("EXPIRE", "k", 100)
    pair_any.check("TTL", "k")
    theirs, ours = _pttl_both(pair_any, "k")
    assert 99_000 < theirs <= 100_000 and 99_000 < ours <= 100_000
    pair_any.check("PEXPIRE", "s", 1600)
    pair_any.check("TTL", "s")  # 1.6 s rounds to 2


def test_expire_options_decide_against_the_current_deadline(pair_any: Pair) -> None:
    pair_any.check("SET", "k", "v")
    pair_any.check("EXPIREAT", "k", FAR, "XX")  # no deadline: XX fails
    pair_any.check("EXPIREAT", "k", FAR, "GT")  # no deadline counts as infinite: GT fails
    pair_any.check("EXPIREAT", "k", FAR + 10, "lt")  # ... and LT succeeds
    pair_any.check("EXPIRETIME", "k")
    pair_any.check("EXPIREAT", "k", FAR, "NX")  # has one now
    pair_any.check("EXPIREAT", "k", FAR + 10, "LT")  # equal: not less
    pair_any.check("EXPIREAT", "k", FAR + 20, "GT", "XX")
    pair_any.check("EXPIREAT", "k", FAR + 5, "GT")
    pair_any.check("PEXPIREAT", "k", (FAR + 5) * 1000, "LT")
    pair_any.check("EXPIRETIME", "k")
    pair_any.check("PERSIST", "k")
    pair_any.check("EXPIREAT", "k", FAR, "nx")
    pair_any.check("EXPIRETIME", "k")
    pair_any.check("EXPIREAT", "nokey", FAR, "NX")


def test_expire_errors(pair_any: Pair) -> None:
    pair_any.check("SET", "k", "v")
    for args in (
        ("EXPIRE", "k"), ("EXPIRE", "k", "abc"), ("EXPIRE", "k", "1.5"), ("EXPIRE", "k", ""),
        ("EXPIRE", "k", "10", "FOO"), ("EXPIRE", "k", "10", "NX", "XX"), ("EXPIRE", "k", "10", "XX", "NX"),
        ("EXPIRE", "k", "10", "NX", "GT"), ("EXPIRE", "k", "10", "LT", "NX"), ("EXPIRE", "k", "10", "GT", "LT"),
        ("EXPIRE", "k", "10", "NX", "FOO"), ("EXPIRE", "k", "abc", "FOO"), ("EXPIRE", "nokey", "10", "BAR"),
        ("EXPIRE", "k", "9223372036854776"), ("EXPIRE", "k", "-9223372036854776"),
        ("PEXPIRE", "k", I64_MAX), ("EXPIREAT", "k", I64_MAX), ("PEXPIREAT", "k", "9223372036854775808"),
        ("TTL",), ("TTL", "a", "b"), ("PERSIST",), ("PEXPIRETIME", "a", "b"),
    ):
        pair_any.check(*args)
    pair_any.check("TTL", "k")  # untouched by every failed command


def test_deadlines_not_in_the_future_delete_at_once(pair_any: Pair) -> None:
    for args in (("EXPIRE", "a", "0"), ("EXPIRE", "b", "-10"), ("PEXPIRE", "c", "-1"),
                 ("EXPIREAT", "d", "1"), ("PEXPIREAT", "e", "-9223372036854775807"), ("EXPIREAT", "f", "0", "GT")):
        key = args[1]
        pair_any.check("SET", key, "v")
        pair_any.check(*args)
        pair_any.check("EXISTS", key)
    pair_any.check("EXPIREAT", "f", "0", "LT")  # f has no deadline: LT succeeds and deletes
    pair_any.check("EXISTS", "f")
    pair_any.check("DBSIZE")


def test_persist(pair_any: Pair) -> None:
    pair_any.check("PERSIST", "nokey")
    pair_any.check("SET", "k", "v")
    pair_any.check("PERSIST", "k")
    pair_any.check("EXPIRE", "k", 100)
    pair_any.check("PERSIST", "k")
    pair_any.check("TTL", "k")
    pair_any.check("PERSIST", "k")


# ---------------------------------------------------------------------------------------
# SET's expiry options, SETEX, PSETEX, GETEX
# ---------------------------------------------------------------------------------------


def test_set_expiry_options(pair_any: Pair) -> None:
    pair_any.check("SET", "k", "v", "EX", 100)
    pair_any.check("TTL", "k")
    pair_any.check("SET", "k", "v", "px", 100_000)
    pair_any.check("TTL", "k")
    pair_any.check("SET", "k", "v", "EXAT", FAR)
    pair_any.check("PEXPIRETIME", "k")
    pair_any.check("SET", "k", "v", "PXAT", FAR * 1000 + 7)
    pair_any.check("PEXPIRETIME", "k")
    pair_any.check("SET", "k", "w", "KEEPTTL")
    pair_any.check("PEXPIRETIME", "k")
    pair_any.check("SET", "k", "x", "keepttl", "GET")
    pair_any.check("PEXPIRETIME", "k")
    pair_any.check("SET", "k", "y")  # a plain SET drops the deadline
    pair_any.check("TTL", "k")
    pair_any.check("SET", "k", "z", "EX", 10, "EX", FAR)  # a repeated option: the last wins
    pair_any.check("TTL", "k")
    pair_any.check("SET", "k", "v", "NX", "EX", 100)
    pair_any.check("SET", "k", "v", "XX", "EXAT", FAR)
    pair_any.check("EXPIRETIME", "k")
    pair_any.check("SET", "new", "v", "XX", "EX", 100)
    pair_any.check("SET", "new", "v", "GET", "NX", "PX", 100_000)
    pair_any.check("TTL", "new")
    pair_any.check("SET", "new", "w", "PXAT", FAR * 1000, "GET")
    pair_any.check("PEXPIRETIME", "new")


def test_set_expiry_errors(pair_any: Pair) -> None:
    pair_any.check("SET", "k", "old")
    pair_any.check("XADD", "s", "1-1", "f", "v")
    for args in (
        ("EX",), ("EX", "0"), ("EX", "-1"), ("PX", "0"), ("EXAT", "0"), ("PXAT", "-5"), ("EX", "abc"),
        ("EX", "1.5"), ("EX", "9223372036854776"), ("PX", I64_MAX), ("EX", "10", "PX", "10"),
        ("PX", "10", "EX", "10"), ("EX", "10", "EXAT", "10"), ("PXAT", "10", "EX", "10"),
        ("KEEPTTL", "EX", "10"), ("EX", "10", "KEEPTTL"), ("PERSIST",), ("EX", "10", "NX", "XX"),
        ("EX", "10", "FOO"), ("KEEPTTL", "KEEPTTL", "PX"),
    ):
        pair_any.check("SET", "k", "new", *args)
    pair_any.check("GET", "k")
    pair_any.check("TTL", "k")
    # The expiry is checked before GET reads the old value (and its type).
    pair_any.check("SET", "s", "v", "GET", "EX", "0")
    pair_any.check("SET", "s", "v", "GET", "EX", "100")
    pair_any.check("TYPE", "s")


def test_setex_and_psetex(pair_any: Pair) -> None:
    pair_any.check("SETEX", "k", 100, "v")
    pair_any.check("GET", "k")
    pair_any.check("TTL", "k")
    pair_any.check("PSETEX", "p", 100_000, "v")
    pair_any.check("TTL", "p")
    pair_any.check("XADD", "s", "1-1", "f", "v")
    pair_any.check("SETEX", "s", 100, "now a string")
    pair_any.check("TYPE", "s")
    for args in (("SETEX", "k", 0, "v"), ("SETEX", "k", -1, "v"), ("SETEX", "k", "x", "v"),
                 ("PSETEX", "k", 0, "v"), ("PSETEX", "k", I64_MAX, "v"), ("SETEX", "k", "9223372036854776", "v"),
                 ("SETEX", "k", "1"), ("PSETEX", "k", "1", "v", "x")):
        pair_any.check(*args)
    pair_any.check("GET", "k")


def test_getex(pair_any: Pair) -> None:
    pair_any.check("GETEX", "nokey")
    pair_any.check("GETEX", "nokey", "EX", "0")  # no key: nil before the expiry is checked
    pair_any.check("SET", "k", "v")
    pair_any.check("GETEX", "k")
    pair_any.check("TTL", "k")
    pair_any.check("GETEX", "k", "EX", 100)
    pair_any.check("TTL", "k")
    pair_any.check("GETEX", "k", "PX", 200_000)
    pair_any.check("TTL", "k")
    pair_any.check("GETEX", "k", "EXAT", FAR)
    pair_any.check("EXPIRETIME", "k")
    pair_any.check("GETEX", "k", "pxat", FAR * 1000 + 3)
    pair_any.check("PEXPIRETIME", "k")
    pair_any.check("GETEX", "k", "PERSIST")
    pair_any.check("TTL", "k")
    pair_any.check("GETEX", "k", "PERSIST")
    for args in (("EX", "0"), ("PX", "-1"), ("EX", "abc"), ("EX",), ("NX",), ("GET",), ("KEEPTTL",),
                 ("EX", "10", "PX", "10"), ("PERSIST", "EX", "10"), ("EX", "10", "PERSIST"), ("FOO",)):
        pair_any.check("GETEX", "k", *args)
    pair_any.check("GETEX", "k", "EXAT", "1")  # already past: the value, and the key is gone
    pair_any.check("EXISTS", "k")
    pair_any.check("XADD", "s", "1-1", "f", "v")
    pair_any.check("GETEX", "s", "EX", "10")
    pair_any.check("GETEX", "s", "EX", "0")
    pair_any.check("TTL", "s")


# ---------------------------------------------------------------------------------------
# Which writes keep, move or drop a time to live
# ---------------------------------------------------------------------------------------


def test_writes_that_keep_or_drop_the_deadline(pair_any: Pair) -> None:
    pair_any.check("SET", "n", "1", "EXAT", FAR)
    pair_any.check("INCR", "n")
    pair_any.check("INCRBY", "n", 5)
    pair_any.check("DECR", "n")
    pair_any.check("APPEND", "n", "0")
    pair_any.check("EXPIRETIME", "n")  # the INCR family and APPEND keep it
    pair_any.check("GETSET", "n", "x")
    pair_any.check("TTL", "n")  # GETSET drops it
    pair_any.check("SET", "m", "1", "EXAT", FAR)
    pair_any.check("MSET", "m", "2", "o", "3")
    pair_any.check("TTL", "m")
    pair_any.check("SET", "d", "1", "EXAT", FAR)
    pair_any.check("DEL", "d")
    pair_any.check("SET", "d", "2")
    pair_any.check("TTL", "d")  # a key created again has no deadline
    pair_any.check("XADD", "s", "1-1", "f", "v")
    pair_any.check("EXPIREAT", "s", FAR)
    pair_any.check("XADD", "s", "2-1", "f", "v")
    pair_any.check("XGROUP", "CREATE", "s", "g", "0")
    pair_any.check("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    pair_any.check("XACK", "s", "g", "1-1")
    pair_any.check("XDEL", "s", "2-1")
    pair_any.check("XTRIM", "s", "MAXLEN", "0")
    pair_any.check("EXPIRETIME", "s")  # stream writes keep it, even on an empty stream
    pair_any.check("SET", "s", "string now")
    pair_any.check("TTL", "s")


def test_rename_move_copy_and_swapdb_carry_the_deadline(pair_any: Pair) -> None:
    pair_any.check("SET", "a", "1", "EXAT", FAR)
    pair_any.check("SET", "b", "2", "EXAT", FAR + 1)
    pair_any.check("RENAME", "a", "r")
    pair_any.check("EXPIRETIME", "r")
    pair_any.check("SET", "p", "persistent")
    pair_any.check("RENAME", "p", "b")  # the destination's own deadline goes
    pair_any.check("TTL", "b")
    pair_any.check("RENAMENX", "r", "r2")
    pair_any.check("EXPIRETIME", "r2")
    pair_any.check("XADD", "s", "1-1", "f", "v")
    pair_any.check("XGROUP", "CREATE", "s", "g", "0")
    pair_any.check("EXPIREAT", "s", FAR + 2)
    pair_any.check("COPY", "s", "s2")
    pair_any.check("EXPIRETIME", "s2")
    pair_any.check("XINFO", "GROUPS", "s2")
    pair_any.check("COPY", "r2", "c", "DB", "1")
    pair_any.check("MOVE", "s", "2")
    pair_any.check("EXISTS", "s")
    pair_any.check("SELECT", "1")
    pair_any.check("EXPIRETIME", "c")
    pair_any.check("SELECT", "2")
    pair_any.check("EXPIRETIME", "s")
    pair_any.check("XLEN", "s")
    pair_any.check("SWAPDB", "2", "3")
    pair_any.check("EXPIRETIME", "s")
    pair_any.check("SELECT", "3")
    pair_any.check("EXPIRETIME", "s")
    pair_any.check("FLUSHALL")
    pair_any.check("SET", "s", "v")
    pair_any.check("TTL", "s")
    pair_any.check("SELECT", "0")


def test_move_and_copy_replies_and_errors(pair_any: Pair) -> None:
    pair_any.check("SET", "k", "v")
    pair_any.check("XADD", "s", "1-1", "f", "v")
    for args in (
        ("MOVE", "k", "0"), ("MOVE", "k", "99"), ("MOVE", "k", "-1"), ("MOVE", "k", "abc"), ("MOVE", "k"),
        ("MOVE", "nokey", "1"), ("COPY", "k", "k"), ("COPY", "k", "k", "DB", "0"), ("COPY", "k", "x", "DB", "99"),
        ("COPY", "k", "x", "DB", "abc"), ("COPY", "k", "x", "DB"), ("COPY", "k", "x", "FOO"),
        ("COPY", "nokey", "x"), ("COPY", "k", "s"), ("COPY", "k", "s", "REPLACE"), ("TYPE", "s"),
        ("COPY", "k", "k2", "replace", "db", "0"), ("GET", "k2"), ("MOVE", "k", "1"), ("MOVE", "k2", "1"),
        ("COPY", "k2", "k", "DB", "1"), ("SELECT", "1"), ("GET", "k"), ("MOVE", "k", "0"), ("SELECT", "0"),
        ("DBSIZE",),
    ):
        pair_any.check(*args)
    pair_any.check("FLUSHALL")


# ---------------------------------------------------------------------------------------
# What commands see once a key's time has passed
# ---------------------------------------------------------------------------------------


def test_an_expired_key_is_gone_for_every_command(lazy: Pair) -> None:
    pair = lazy
    for key in ("str", "str2", "str3", "str4"):
        pair.check("SET", key, "v", "PX", 40)
    pair.check("XADD", "st", "1-1", "f", "v")
    pair.check("XGROUP", "CREATE", "st", "g", "0")
    pair.check("PEXPIRE", "st", 40)
    pair.check("SET", "live", "v")
    _wait_expired()
    pair.check("DBSIZE")  # expired keys are counted until something deletes them
    for args in (("GET", "str"), ("EXISTS", "str", "str2", "live"), ("TYPE", "str3"), ("TTL", "str4"),
                 ("XLEN", "st"), ("XRANGE", "st", "-", "+"), ("XINFO", "STREAM", "st"),
                 ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "st", ">"), ("XREAD", "STREAMS", "st", "0"),
                 ("OBJECT", "ENCODING", "str"), ("XADD", "st", "2-1", "f", "v"), ("XINFO", "GROUPS", "st"),
                 ("DBSIZE",)):
        pair.check(*args)


def test_keys_scan_and_randomkey_skip_expired_keys(lazy: Pair) -> None:
    pair = lazy
    pair.check("SET", "gone1", "v", "PX", 40)
    pair.check("SET", "gone2", "v", "PX", 40)
    pair.check("XADD", "gone3", "1-1", "f", "v")
    pair.check("PEXPIRE", "gone3", 40)
    pair.check("SET", "kept", "v")
    _wait_expired()
    pair.check("KEYS", "*")
    pair.check("KEYS", "gone*")
    pair.check("DBSIZE")  # KEYS deletes nothing
    pair.check("SCAN", "0", "MATCH", "gone[12]", "COUNT", "100")
    pair.check("DBSIZE")  # SCAN deleted the two it matched
    pair.check("SCAN", "0", "TYPE", "stream", "COUNT", "100")
    pair.check("DBSIZE")
    pair.check("RANDOMKEY")


def test_randomkey_deletes_expired_keys_until_a_live_one(lazy: Pair) -> None:
    pair = lazy
    for i in range(20):
        pair.check("SET", f"gone{i}", "v", "PX", 30)
    pair.check("SET", "kept", "v")
    _wait_expired()
    pair.check("RANDOMKEY")
    pair.check("SET", "kept", "v", "PX", 30)
    _wait_expired()
    pair.check("RANDOMKEY")  # every key expired: nil, and all are deleted on the way
    pair.check("DBSIZE")


def test_active_expiry_deletes_keys_nobody_touches(pair_any: Pair) -> None:
    pair_any.check("CONFIG", "RESETSTAT")
    for i in range(50):
        pair_any.check("SET", f"k{i}", "v", "PX", 30)
    pair_any.check("XADD", "s", "1-1", "f", "v")
    pair_any.check("PEXPIRE", "s", 30)
    pair_any.check("SET", "kept", "v", "EX", 100)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        expected, actual = pair_any.both("DBSIZE")
        if expected == actual == b":1\r\n":
            break
        time.sleep(0.05)
    pair_any.check("DBSIZE")
    for conn in (pair_any.oracle, pair_any.rill):
        stats = dict(line.split(":", 1) for line in conn.call("INFO", "stats").decode().split("\r\n") if ":" in line)
        assert stats["expired_keys"] == "51", stats["expired_keys"]
        keyspace = conn.call("INFO", "keyspace").decode()
        assert "db0:keys=1,expires=1," in keyspace, keyspace


def test_info_keyspace_counts_volatile_keys(pair_any: Pair) -> None:
    pair_any.check("SET", "a", "v", "EX", 100)
    pair_any.check("SET", "b", "v")
    pair_any.check("XADD", "s", "1-1", "f", "v")
    pair_any.check("EXPIRE", "s", 100)
    for conn in (pair_any.oracle, pair_any.rill):
        lines = conn.call("INFO", "keyspace").decode().split("\r\n")
        db0 = next(line for line in lines if line.startswith("db0:"))
        assert db0.startswith("db0:keys=3,expires=2,avg_ttl="), db0
        assert 0 <= int(db0.rsplit("=", 1)[1]) <= 100_000


def test_debug_digest_covers_whether_a_key_is_volatile(pair_any: Pair) -> None:
    pair_any.check("SET", "a", "v")
    pair_any.check("XADD", "s", "1-1", "f", "v")
    pair_any.check("DEBUG", "DIGEST")
    pair_any.check("DEBUG", "DIGEST-VALUE", "a", "s")
    pair_any.check("EXPIREAT", "a", FAR)
    pair_any.check("EXPIREAT", "s", FAR)
    pair_any.check("DEBUG", "DIGEST")
    pair_any.check("DEBUG", "DIGEST-VALUE", "a", "s", "nokey")
    pair_any.check("EXPIREAT", "a", FAR + 100)  # the deadline itself is not covered
    pair_any.check("DEBUG", "DIGEST")


def _wait_until_empty(pair: Pair) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and pair.both("DBSIZE") != (b":0\r\n", b":0\r\n"):
        time.sleep(0.05)
    pair.check("DBSIZE")


def test_blocked_xread_outlives_its_expired_stream_and_reads_the_next_one(pair_any: Pair) -> None:
    pair_any.check("XADD", "s", "5-1", "f", "v")
    pair_any.check("PEXPIRE", "s", 50)
    with blocked(pair_any, "XREAD", "BLOCK", "0", "STREAMS", "s", "$") as b:
        _wait_until_empty(pair_any)  # active expiry deleted the stream: nothing to read yet
        b.assert_still_blocked()
        pair_any.check("XADD", "s", "6-1", "new", "stream")
        b.check_reply()
    pair_any.check("TTL", "s")  # the new stream has no time to live


def test_blocked_xreadgroup_ends_when_its_stream_expires(pair_any: Pair) -> None:
    pair_any.check("XADD", "s", "666", "f", "v")
    pair_any.check("XGROUP", "CREATE", "s", "g", "$")
    pair_any.check("PEXPIRE", "s", 50)
    with blocked(pair_any, "XREADGROUP", "GROUP", "g", "Alice", "BLOCK", "0", "STREAMS", "s", ">") as b:
        # The group went with its stream. Redis 7.2 re-runs the woken command, which finds
        # neither (7.0, the oracle, replied "-UNBLOCKED the stream key no longer exists").
        b.oracle.read_reply()
        assert b.rill.read_reply() == NOGROUP_72
    pair_any.check("EXISTS", "s")


# ---------------------------------------------------------------------------------------
# WATCH and MULTI
# ---------------------------------------------------------------------------------------


def test_watched_key_that_expires_fails_the_transaction(lazy: Pair) -> None:
    pair = lazy
    pair.check("SET", "k", "v", "PX", 40)
    pair.check("WATCH", "k")
    _wait_expired()
    pair.check("MULTI")
    pair.check("PING")
    pair.check("EXEC")


def test_watched_key_deleted_by_active_expiry_fails_the_transaction(pair_any: Pair) -> None:
    pair_any.check("SET", "k", "v", "PX", 30)
    pair_any.check("WATCH", "k")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and pair_any.both("DBSIZE") != (b":0\r\n", b":0\r\n"):
        time.sleep(0.05)
    pair_any.check("MULTI")
    pair_any.check("PING")
    pair_any.check("EXEC")


def _exec_after_watching_an_expired_key(pair: Pair, other: Pair, *change: Arg) -> None:
    """WATCH k once k sat expired, let `other` run `change`, and EXEC."""
    pair.check("SET", "k", "v", "PX", 20)
    _wait_expired()
    pair.check("WATCH", "k")
    other.check(*change)
    pair.check("MULTI")
    pair.check("PING")
    pair.check("EXEC")


def test_watching_an_already_expired_key(lazy: Pair, other: Pair) -> None:
    _exec_after_watching_an_expired_key(lazy, other, "GET", "k")  # its lazy deletion changes nothing
    _exec_after_watching_an_expired_key(lazy, other, "EXISTS", "k")
    _exec_after_watching_an_expired_key(lazy, other, "SET", "k", "new")  # deleted, then written: a change
    _exec_after_watching_an_expired_key(lazy, other, "FLUSHALL")  # flushing it changes nothing either


def test_expire_inside_multi_and_its_effects(pair_any: Pair) -> None:
    pair_any.check("SET", "k", "v")
    pair_any.check("MULTI")
    pair_any.check("EXPIRE", "k", 100)
    pair_any.check("TTL", "k")
    pair_any.check("PERSIST", "k")
    pair_any.check("SET", "k", "w", "EXAT", FAR)
    pair_any.check("EXPIRETIME", "k")
    pair_any.check("EXPIRE", "k", "0")
    pair_any.check("EXISTS", "k")
    pair_any.check("EXEC")


@pytest.mark.parametrize(
    "args",
    [("expire", "k", "10"), ("pexpireat", "k", "1", "NX"), ("ttl", "k"), ("persist", "k"),
     ("getex", "k", "EX", "1"), ("setex", "k", "1", "v"), ("psetex", "k", "1", "v"), ("move", "k", "1"),
     ("copy", "a", "b", "DB", "1"), ("expiretime", "k")],
)
def test_command_getkeys_of_expiry_commands(pair_any: Pair, args: tuple[str, ...]) -> None:
    pair_any.check("COMMAND", "GETKEYS", *args)


def test_active_expire_effort_config(pair_any: Pair) -> None:
    try:
        for value in ("0", "11", "abc", "-1", "10", "1"):
            pair_any.check("CONFIG", "SET", "active-expire-effort", value)
            pair_any.check("CONFIG", "GET", "active-expire-effort")
    finally:
        pair_any.check("CONFIG", "SET", "active-expire-effort", "1")
