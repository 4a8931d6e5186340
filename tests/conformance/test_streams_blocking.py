"""Differential tests of blocked stream readers: a client blocked in XREAD or XREADGROUP on
one connection is woken by a write on another, on redis-server and on Rill, and both must
send the same bytes (RESP2 and RESP3). Also: FIFO order among blocked clients, writes that
must not wake anyone, and how a blocked XREADGROUP ends when its group or key goes away.

Redis 7.2 re-executes a woken blocked command (blocked.c unblockClientOnKey ->
processCommandAndResetClient, redis#11568), so a blocked XREADGROUP whose group or key
disappeared gets XREADGROUP's ordinary error; Redis 7.0 (the oracle) replied
"-NOGROUP the consumer group this client was blocked on no longer exists" or
"-UNBLOCKED the stream key no longer exists" instead. Those cases assert Rill's 7.2 reply.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from tests.conformance.harness import Arg, Pair, RawConnection
from tests.conformance.stream_support import check_masked, connect, mask_xpending_extended, parse, wait_blocked

NOGROUP_72 = b"-NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option\r\n"
WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"


class Blocked:
    """One extra connection per server, each sent the same blocking command."""

    def __init__(self, pair: Pair) -> None:
        self.pair = pair
        self.oracle = connect(pair.oracle.sock.getpeername()[1], pair.proto)
        self.rill = connect(pair.rill.sock.getpeername()[1], pair.proto)

    def send(self, *args: Arg) -> None:
        self.oracle.send(*args)
        self.rill.send(*args)

    def replies(self) -> tuple[bytes, bytes]:
        return self.oracle.read_reply(), self.rill.read_reply()

    def check_reply(self) -> bytes:
        expected, actual = self.replies()
        assert actual == expected, f"woken reply [RESP{self.pair.proto}]\n  redis: {expected!r}\n  rill:  {actual!r}"
        return actual

    def assert_still_blocked(self) -> None:
        for name, conn in (("redis", self.oracle), ("rill", self.rill)):
            assert _pending_bytes(conn) == b"", f"{name} answered a client that should still be blocked"

    def close(self) -> None:
        self.oracle.close()
        self.rill.close()


def _pending_bytes(conn: RawConnection, wait: float = 0.2) -> bytes:
    if conn.buf:
        return conn.buf
    conn.sock.settimeout(wait)
    try:
        return conn.sock.recv(65536)
    except TimeoutError:
        return b""
    finally:
        conn.sock.settimeout(10.0)


@contextmanager
def blocked(pair: Pair, *cmd: Arg, already: int = 0) -> Iterator[Blocked]:
    """A client blocked in `cmd` on both servers (`already` = clients blocked before it)."""
    b = Blocked(pair)
    try:
        b.send(*cmd)
        wait_blocked(pair.oracle, already + 1)
        wait_blocked(pair.rill, already + 1)
        yield b
    finally:
        b.close()


# ---------------------------------------------------------------------------------------
# XREAD
# ---------------------------------------------------------------------------------------


def test_blocked_xread_is_woken_by_xadd(pair_any: Pair) -> None:
    pair_any.check("XADD", "s", "1", "f", "old")
    with blocked(pair_any, "XREAD", "BLOCK", "0", "STREAMS", "s", "$") as b:
        pair_any.check("XADD", "s", "2", "f", "new")
        b.check_reply()


def test_blocked_xread_on_a_missing_key_is_woken_when_it_is_created(pair_any: Pair) -> None:
    with blocked(pair_any, "XREAD", "BLOCK", "0", "STREAMS", "s", "$") as b:
        pair_any.check("XADD", "s", "5-1", "f", "v")
        b.check_reply()
    with blocked(pair_any, "XREAD", "BLOCK", "10000", "STREAMS", "t", "0") as b:
        pair_any.check("XADD", "t", "1", "f", "v", "g", "w")
        b.check_reply()


def test_blocked_xread_on_several_keys_gets_only_the_written_key(pair_any: Pair) -> None:
    pair_any.check("XADD", "a", "1", "f", "v")
    with blocked(pair_any, "XREAD", "BLOCK", "0", "STREAMS", "a", "b", "c", "$", "$", "0") as b:
        pair_any.check("XADD", "b", "7", "f", "v")
        b.check_reply()


def test_blocked_xread_count_limits_a_transaction_of_adds(pair_any: Pair) -> None:
    pair_any.check("XADD", "s", "1", "f", "v")
    with blocked(pair_any, "XREAD", "COUNT", "2", "BLOCK", "0", "STREAMS", "s", "$") as b:
        pair_any.check_all([
            ("MULTI",),
            ("XADD", "s", "2", "f", "v"),
            ("XADD", "s", "3", "f", "v"),
            ("XADD", "s", "4", "f", "v"),
            ("EXEC",),
        ])
        b.check_reply()


def test_writes_without_new_entries_do_not_wake_xread(pair_any: Pair) -> None:
    pair_any.check("XADD", "s", "1", "f", "v")
    pair_any.check("XADD", "s", "2", "f", "v")
    with blocked(pair_any, "XREAD", "BLOCK", "0", "STREAMS", "s", "$") as b:
        pair_any.check("XADD", "other", "1", "f", "v")
        pair_any.check("XDEL", "s", "1")
        pair_any.check("XTRIM", "s", "MAXLEN", "0")
        pair_any.check("XSETID", "s", "9")
        b.assert_still_blocked()
        pair_any.check("XADD", "s", "10", "f", "v")
        b.check_reply()


def test_blocked_xread_times_out_with_null(pair_any: Pair) -> None:
    pair_any.check("XADD", "s", "1", "f", "v")
    b = Blocked(pair_any)
    try:
        start = time.monotonic()
        b.send("XREAD", "BLOCK", "150", "STREAMS", "s", "$")
        raw = b.check_reply()
        assert parse(raw).value is None
        assert time.monotonic() - start >= 0.14
    finally:
        b.close()


def test_blocked_xread_survives_key_deletion_and_type_change(pair_any: Pair) -> None:
    pair_any.check("XADD", "s", "666", "f", "v")
    with blocked(pair_any, "XREAD", "BLOCK", "0", "STREAMS", "s", "$") as b:
        pair_any.check("DEL", "s")
        pair_any.check("SET", "s", "x")
        b.assert_still_blocked()
        pair_any.check("DEL", "s")
        pair_any.check("XADD", "s", "667", "f", "v")
        b.check_reply()


def test_two_blocked_xread_clients_both_get_the_entry(pair_any: Pair) -> None:
    with blocked(pair_any, "XREAD", "BLOCK", "0", "STREAMS", "s", "$") as first, \
            blocked(pair_any, "XREAD", "BLOCK", "0", "STREAMS", "s", "0", already=1) as second:
        pair_any.check("XADD", "s", "3", "f", "v")
        first.check_reply()
        second.check_reply()


# ---------------------------------------------------------------------------------------
# XREADGROUP
# ---------------------------------------------------------------------------------------


def test_blocked_xreadgroup_is_woken_by_xadd(pair_any: Pair) -> None:
    pair_any.check("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    with blocked(pair_any, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">") as b:
        pair_any.check("XADD", "s", "1", "f", "v")
        b.check_reply()
    check_masked(pair_any, mask_xpending_extended, "XPENDING", "s", "g", "-", "+", "10")
    pair_any.check("XINFO", "GROUPS", "s")


def test_blocked_xreadgroup_noack_and_count(pair_any: Pair) -> None:
    pair_any.check("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    with blocked(pair_any, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "BLOCK", "0", "NOACK",
                 "STREAMS", "s", ">") as b:
        pair_any.check_all([
            ("MULTI",),
            ("XADD", "s", "1", "f", "v"),
            ("XADD", "s", "2", "f", "v"),
            ("EXEC",),
        ])
        b.check_reply()
    pair_any.check("XPENDING", "s", "g")
    pair_any.check("XINFO", "GROUPS", "s")
    pair_any.check("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")


def test_blocked_xreadgroup_clients_are_served_in_fifo_order(pair_any: Pair) -> None:
    pair_any.check("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    cmd = ("BLOCK", "0", "COUNT", "1", "STREAMS", "s", ">")
    with blocked(pair_any, "XREADGROUP", "GROUP", "g", "first", *cmd) as first, \
            blocked(pair_any, "XREADGROUP", "GROUP", "g", "second", *cmd, already=1) as second:
        pair_any.check("XADD", "s", "1", "f", "one")
        first.check_reply()
        second.assert_still_blocked()
        pair_any.check("XADD", "s", "2", "f", "two")
        second.check_reply()
    check_masked(pair_any, mask_xpending_extended, "XPENDING", "s", "g", "-", "+", "10")


def test_blocked_xreadgroup_on_two_keys(pair_any: Pair) -> None:
    pair_any.check("XGROUP", "CREATE", "a", "g", "$", "MKSTREAM")
    pair_any.check("XGROUP", "CREATE", "b", "g", "$", "MKSTREAM")
    with blocked(pair_any, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "a", "b", ">", ">") as b:
        pair_any.check("XADD", "b", "4", "f", "v")
        b.check_reply()
    # Only b's group is compared: Redis 7.2 also created consumer c in a's group when the
    # command first ran (XREADGROUP creates its consumer even when it serves nothing), 7.0
    # did not; test_streams_groups pins that difference.
    pair_any.check("XINFO", "GROUPS", "b")


def test_blocked_xreadgroup_times_out_when_only_a_deleted_entry_arrived(pair_any: Pair) -> None:
    pair_any.check_all([
        ("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"),
        ("XADD", "s", "666", "f", "v"),
        ("XREADGROUP", "GROUP", "g", "Alice", "BLOCK", "10", "STREAMS", "s", ">"),
        ("XADD", "s", "667", "f2", "v2"),
        ("XDEL", "s", "667"),
    ])
    b = Blocked(pair_any)
    try:
        b.send("XREADGROUP", "GROUP", "g", "Alice", "BLOCK", "10", "STREAMS", "s", ">")
        assert parse(b.check_reply()).value is None
    finally:
        b.close()


def test_blocked_xreadgroup_with_a_history_id_does_not_block(pair_any: Pair) -> None:
    pair_any.check_all([
        ("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"),
        ("XADD", "s", "666", "f", "v"),
        ("XDEL", "s", "666"),
    ])
    for entry_id in ("0", "600", "666", "700"):
        pair_any.check("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", entry_id)


def _rill_only_reply(b: Blocked) -> bytes:
    b.oracle.read_reply()  # the 7.0 oracle's text is not Rill's target (see module docstring)
    return b.rill.read_reply()


def test_blocked_xreadgroup_gets_nogroup_when_its_group_is_destroyed(pair_any: Pair) -> None:
    pair_any.check("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    with blocked(pair_any, "XREADGROUP", "GROUP", "g", "Alice", "BLOCK", "0", "STREAMS", "s", ">") as b:
        pair_any.check("XGROUP", "DESTROY", "s", "g")
        assert _rill_only_reply(b) == NOGROUP_72


def test_blocked_xreadgroup_gets_nogroup_when_its_key_is_deleted(pair_any: Pair) -> None:
    pair_any.check("XADD", "s", "666", "f", "v")
    pair_any.check("XGROUP", "CREATE", "s", "g", "$")
    with blocked(pair_any, "XREADGROUP", "GROUP", "g", "Alice", "BLOCK", "0", "STREAMS", "s", ">") as b:
        pair_any.check("DEL", "s")
        assert _rill_only_reply(b) == NOGROUP_72


def test_blocked_xreadgroup_gets_wrongtype_when_its_key_becomes_a_string(pair_any: Pair) -> None:
    pair_any.check("XADD", "s", "666", "f", "v")
    pair_any.check("XGROUP", "CREATE", "s", "g", "$")
    with blocked(pair_any, "XREADGROUP", "GROUP", "g", "Alice", "BLOCK", "0", "STREAMS", "s", ">") as b:
        pair_any.check("SET", "s", "x")
        assert _rill_only_reply(b) == WRONGTYPE


def test_blocked_xreadgroup_gets_nogroup_after_flushall(pair_any: Pair) -> None:
    pair_any.check("XADD", "s", "666", "f", "v")
    pair_any.check("XGROUP", "CREATE", "s", "g", "$")
    with blocked(pair_any, "XREADGROUP", "GROUP", "g", "Alice", "BLOCK", "0", "STREAMS", "s", ">") as b:
        pair_any.check("FLUSHALL")
        assert _rill_only_reply(b) == NOGROUP_72


def test_blocked_xreadgroup_is_served_by_a_recreated_group_and_key(pair_any: Pair) -> None:
    """MULTI replaces the stream by one with the same group: the woken command finds the new
    group and serves the new entry (same on 7.0 and 7.2)."""
    pair_any.check("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    with blocked(pair_any, "XREADGROUP", "GROUP", "g", "Alice", "BLOCK", "0", "STREAMS", "s", ">") as b:
        pair_any.check_all([
            ("MULTI",),
            ("DEL", "s"),
            ("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"),
            ("XADD", "s", "100", "f1", "v1"),
            ("EXEC",),
        ])
        b.check_reply()
