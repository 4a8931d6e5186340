"""Generic key and string commands through redis-py against a real Rill node: the behaviours
the differential suite cannot pin (SCAN's guarantee under concurrent writes and cursor
restarts, size limits), plus the client helpers applications actually call.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
import redis

from tests.conftest import Server, start_rill


def _scan_calls(client: redis.Redis, cursor: int, **kwargs: object) -> tuple[int, list[bytes]]:
    next_cursor, batch = client.scan(cursor, **kwargs)  # type: ignore[arg-type]
    return int(next_cursor), list(batch)


# ---------------------------------------------------------------------------------------
# Strings
# ---------------------------------------------------------------------------------------


def test_redis_py_string_helpers(r: redis.Redis) -> None:
    assert r.set("k", "v", nx=True) is True
    assert r.set("k", "w", nx=True) is None
    assert r.set("k", "w", xx=True, get=True) == b"v"
    assert r.getset("k", "x") == b"w"
    assert r.getdel("k") == b"x"
    assert r.get("k") is None
    assert r.mset({"a": "1", "b": "2"}) is True
    assert r.msetnx({"b": "3", "c": "4"}) is False
    assert r.mget(["a", "b", "c"]) == [b"1", b"2", None]
    assert r.incr("a") == 2
    assert r.incrby("a", 10) == 12
    assert r.decr("a") == 11
    assert r.decrby("a", 20) == -9
    assert r.append("a", "5") == 3
    assert r.get("a") == b"-95"
    assert r.strlen("a") == 3


def test_large_values_round_trip(r: redis.Redis) -> None:
    value = random.Random(1).randbytes(3 * 1024 * 1024)
    r.set("big", value)
    assert r.get("big") == value
    assert r.append("big", b"tail") == len(value) + 4
    assert r.strlen("big") == len(value) + 4


@pytest.fixture
def small_bulk_node() -> Iterator[Server]:
    node = start_rill("--proto-max-bulk-len", "1mb")
    yield node
    node.stop()


def test_append_beyond_proto_max_bulk_len_is_refused(small_bulk_node: Server) -> None:
    client = small_bulk_node.client()
    try:
        limit = 1024 * 1024
        client.set("k", b"x" * (limit - 3))
        assert client.append("k", b"abc") == limit
        with pytest.raises(redis.ResponseError, match=r"string exceeds maximum allowed size \(proto-max-bulk-len\)"):
            client.append("k", b"d")
        assert client.strlen("k") == limit
    finally:
        client.close()


# ---------------------------------------------------------------------------------------
# SCAN
# ---------------------------------------------------------------------------------------


def test_scan_returns_every_key_present_for_the_whole_scan_despite_writes(r: redis.Redis) -> None:
    rng = random.Random(42)
    stable = {b"stable:%d" % i for i in range(1500)}
    volatile = [b"volatile:%d" % i for i in range(500)]
    r.mset({k: b"1" for k in stable})
    r.mset({k: b"1" for k in volatile})
    added: set[bytes] = set()
    seen: list[bytes] = []
    cursor = 0
    calls = 0
    while True:
        cursor, batch = _scan_calls(r, cursor, count=25)
        seen.extend(batch)
        calls += 1
        # Between calls other writers delete some keys and create new ones.
        for _ in range(3):
            if volatile:
                r.delete(volatile.pop(rng.randrange(len(volatile))))
            key = b"added:%d" % len(added)
            added.add(key)
            r.set(key, b"1")
        if cursor == 0:
            break
        assert calls < 1000
    ever_existed = stable | {b"volatile:%d" % i for i in range(500)} | added
    assert stable <= set(seen)
    assert set(seen) <= ever_existed
    assert calls > 1


def test_scan_cursors_outlive_many_concurrent_scans(r: redis.Redis) -> None:
    # More scans in flight than the node keeps snapshots for: the oldest cursors lose theirs
    # and restart, which may repeat keys but must not miss any.
    keys = {b"k:%d" % i for i in range(40)}
    r.mset({k: b"v" for k in keys})
    scans = []
    for _ in range(100):
        cursor, batch = _scan_calls(r, 0, count=3)
        assert cursor != 0
        scans.append((cursor, set(batch)))
    for cursor, seen in scans:
        calls = 0
        while cursor != 0:
            cursor, batch = _scan_calls(r, cursor, count=3)
            seen.update(batch)
            calls += 1
            assert calls < 200
        assert seen == keys


def test_scan_garbage_cursor_restarts_instead_of_failing(r: redis.Redis) -> None:
    keys = {b"k:%d" % i for i in range(30)}
    r.mset({k: b"v" for k in keys})
    seen: set[bytes] = set()
    cursor = 123456789012345
    while True:
        cursor, batch = _scan_calls(r, cursor, count=7)
        seen.update(batch)
        if cursor == 0:
            break
    assert seen == keys


def test_scan_iter_with_match_and_type(r: redis.Redis) -> None:
    r.mset({"user:1": "a", "user:2": "b", "order:1": "c", b"user:\xff": "d"})
    assert set(r.scan_iter(match="user:*", count=1)) == {b"user:1", b"user:2", b"user:\xff"}
    assert set(r.scan_iter(_type="string")) == {b"user:1", b"user:2", b"order:1", b"user:\xff"}
    assert set(r.scan_iter(_type="stream")) == set()
    assert set(r.scan_iter(match="order:[0-9]", _type="STRING")) == {b"order:1"}


def test_scan_after_flush_does_not_resurrect_keys(r: redis.Redis) -> None:
    r.mset({b"old:%d" % i: b"v" for i in range(50)})
    cursor, _ = _scan_calls(r, 0, count=5)
    r.flushdb()
    r.set("new", "v")
    seen: set[bytes] = set()
    while cursor != 0:
        cursor, batch = _scan_calls(r, cursor, count=5)
        seen.update(batch)
    assert not any(k.startswith(b"old:") for k in seen)


# ---------------------------------------------------------------------------------------
# Other generic commands
# ---------------------------------------------------------------------------------------


def test_keys_with_binary_and_glob_characters(r: redis.Redis) -> None:
    r.mset({b"a*b": "1", b"a?b": "2", b"a\x00b": "3", b"axb": "4"})
    assert set(r.keys("a\\*b")) == {b"a*b"}
    assert set(r.keys("a?b")) == {b"a*b", b"a?b", b"a\x00b", b"axb"}
    assert set(r.keys(b"a[\x00x]b")) == {b"a\x00b", b"axb"}


def test_randomkey_visits_more_than_one_key(r: redis.Redis) -> None:
    r.mset({f"k{i}": "v" for i in range(5)})
    picks = {r.randomkey() for _ in range(60)}
    assert len(picks) > 1
    assert picks <= {f"k{i}".encode() for i in range(5)}


def test_swapdb_is_seen_by_clients_already_connected(r: redis.Redis, rill_node: Server) -> None:
    other = rill_node.client(db=1)
    try:
        r.set("from0", "x")
        other.set("from1", "y")
        assert r.swapdb(0, 1) is True
        assert r.get("from1") == b"y"
        assert other.get("from0") == b"x"
        assert other.get("from1") is None
    finally:
        other.close()


def test_rename_keeps_the_value_and_type(r: redis.Redis) -> None:
    r.set("src", "value")
    assert r.rename("src", "dst") is True
    assert r.type("dst") == b"string"
    assert r.get("dst") == b"value"
    assert r.exists("src") == 0
    with pytest.raises(redis.ResponseError, match="^no such key$"):
        r.rename("src", "x")
    assert r.renamenx("dst", "dst") is False
