"""Rill's dead letters (RILL.XDEADLETTER; no Redis has them, so no oracle): a group's delivery
limit, past which an entry goes to a dead-letter stream with its delivery history instead of
being delivered again — when claimed (XREADGROUP CLAIM, XCLAIM, XAUTOCLAIM) or handed back
(XNACK) — and leaves the group's PEL. Replication and restarts of the same state are in
tests/replication_node/test_redis8_streams.py and tests/persistence/test_redis8_streams.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

from tests.conftest import Server


@pytest.fixture
def r(rill_node: Server) -> Iterator[redis.Redis]:
    client = rill_node.client(protocol=2)
    client.flushall()
    yield client
    client.close()


def x(r: redis.Redis, *args: Any) -> Any:
    conn = r.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        r.connection_pool.release(conn)


def setup(r: redis.Redis, limit: int) -> None:
    for i in (1, 2, 3):
        r.xadd("jobs", {"task": f"t{i}"}, id=f"{i}-0")
    r.xgroup_create("jobs", "workers", 0)
    assert x(r, "RILL.XDEADLETTER", "SET", "jobs", "workers", "MAXDELIVERIES", str(limit), "TO", "jobs:dead") == b"OK"
    x(r, "XREADGROUP", "GROUP", "workers", "w1", "STREAMS", "jobs", ">")


def dead_letters(r: redis.Redis) -> list[dict[bytes, bytes]]:
    return [dict(zip(fields[0::2], fields[1::2])) for _, fields in x(r, "XRANGE", "jobs:dead", "-", "+")]


def test_a_claim_past_the_limit_moves_the_entry_with_its_history(r: redis.Redis) -> None:
    setup(r, 2)
    claimed = x(r, "XREADGROUP", "GROUP", "workers", "w2", "CLAIM", "0", "STREAMS", "jobs", ">")
    assert [e[0] for e in claimed[0][1]] == [b"1-0", b"2-0", b"3-0"]  # second deliveries: allowed
    assert x(r, "XREADGROUP", "GROUP", "workers", "w3", "CLAIM", "0", "STREAMS", "jobs", ">") is None
    moved = dead_letters(r)
    assert [m[b"dead-letter-id"] for m in moved] == [b"1-0", b"2-0", b"3-0"]
    assert moved[0] == {
        b"dead-letter-stream": b"jobs", b"dead-letter-group": b"workers", b"dead-letter-id": b"1-0",
        b"deliveries": b"2", b"last-consumer": b"w2", b"last-delivery-ms": moved[0][b"last-delivery-ms"],
        b"task": b"t1",
    }  # fmt: skip
    assert x(r, "XPENDING", "jobs", "workers")[0] == 0
    assert r.xlen("jobs") == 3  # the stream keeps its entries; other groups are untouched


def test_xnack_fatal_and_a_failed_last_try_move_at_once(r: redis.Redis) -> None:
    setup(r, 3)
    assert x(r, "XNACK", "jobs", "workers", "FATAL", "IDS", "1", "1-0") == 1
    assert x(r, "XNACK", "jobs", "workers", "FAIL", "IDS", "1", "2-0") == 1  # 1 delivery of 3: stays
    assert [m[b"dead-letter-id"] for m in dead_letters(r)] == [b"1-0"]
    assert dead_letters(r)[0][b"deliveries"] == b"9223372036854775807"
    assert dead_letters(r)[0][b"last-consumer"] == b""  # it was NACKed: no owner
    assert [e[0] for e in x(r, "XPENDING", "jobs", "workers", "-", "+", "10")] == [b"2-0", b"3-0"]
    x(r, "XCLAIM", "jobs", "workers", "w2", "0", "2-0", "RETRYCOUNT", "3")
    assert x(r, "XCLAIM", "jobs", "workers", "w3", "0", "2-0") == []
    assert x(r, "XAUTOCLAIM", "jobs", "workers", "w3", "0", "0-0")[1] == [[b"3-0", [b"task", b"t3"]]]
    assert [m[b"dead-letter-id"] for m in dead_letters(r)] == [b"1-0", b"2-0"]


def test_get_unset_and_errors(r: redis.Redis) -> None:
    setup(r, 5)
    assert x(r, "RILL.XDEADLETTER", "GET", "jobs", "workers") == [b"maxdeliveries", 5, b"to", b"jobs:dead"]
    assert x(r, "RILL.XDEADLETTER", "UNSET", "jobs", "workers") == 1
    assert x(r, "RILL.XDEADLETTER", "UNSET", "jobs", "workers") == 0
    assert x(r, "RILL.XDEADLETTER", "GET", "jobs", "workers") is None
    r.set("str", "x")
    for args, error in [
        (("SET", "jobs", "workers", "MAXDELIVERIES", "0", "TO", "d"), "MAXDELIVERIES must be a positive integer"),
        (("SET", "jobs", "workers", "MAXDELIVERIES", "x", "TO", "d"), "MAXDELIVERIES must be a positive integer"),
        (("SET", "jobs", "workers", "LIMIT", "1", "TO", "d"), "syntax error"),
        (("SET", "jobs", "workers", "MAXDELIVERIES", "1", "TO", "jobs"), "the dead-letter stream must be another key"),
        (("SET", "jobs", "workers", "MAXDELIVERIES", "1", "TO", "str"), "WRONGTYPE Operation against a key holding the wrong kind of value"),
        (("SET", "jobs", "nogroup", "MAXDELIVERIES", "1", "TO", "d"), "NOGROUP No such key 'jobs' or consumer group 'nogroup'"),
        (("GET", "nokey", "g"), "NOGROUP No such key 'nokey' or consumer group 'g'"),
    ]:
        with pytest.raises(redis.ResponseError) as exc:
            x(r, "RILL.XDEADLETTER", *args)
        assert str(exc.value) == error


def test_a_dead_letter_key_of_another_type_keeps_the_entry_pending(r: redis.Redis) -> None:
    setup(r, 1)
    r.set("jobs:dead", "now a string")
    claimed = x(r, "XREADGROUP", "GROUP", "workers", "w2", "COUNT", "1", "CLAIM", "0", "STREAMS", "jobs", ">")
    assert claimed[0][1][0][0] == b"1-0"
    assert x(r, "XPENDING", "jobs", "workers")[0] == 3


def test_set_names_both_keys(r: redis.Redis) -> None:
    """For ACL key permissions and COMMAND GETKEYS: the stream and the dead-letter stream,
    which later claims of the group write to."""
    keys = x(r, "COMMAND", "GETKEYS", "RILL.XDEADLETTER", "SET", "jobs", "workers", "MAXDELIVERIES", "3", "TO", "dead")
    assert keys == [b"jobs", b"dead"]
