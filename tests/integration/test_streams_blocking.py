"""Blocked stream readers on a real node: XREAD/XREADGROUP BLOCK woken by another
connection's write in the same loop iteration, FIFO service among blocked clients,
timeouts, clean disconnects, and how a blocked XREADGROUP ends when its group or key goes
away (Redis 7.2 re-executes the woken command, so it gets XREADGROUP's own errors)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.conformance.harness import Arg, RawConnection
from tests.conftest import Server, start_rill

NOGROUP = b"-NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option\r\n"
WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"


@pytest.fixture(scope="module")
def node() -> Iterator[Server]:
    proc = start_rill()
    yield proc
    proc.stop()


class Conns:
    """Connections to the node: `admin` (flushes it first) and any number of `new()` ones."""

    def __init__(self, node: Server) -> None:
        self.port = node.port
        self.opened: list[RawConnection] = []
        self.admin = self.new()
        self.admin.call("FLUSHALL")

    def new(self) -> RawConnection:
        c = RawConnection(self.port, timeout=10.0)
        self.opened.append(c)
        return c

    def close(self) -> None:
        for c in self.opened:
            c.close()


@pytest.fixture
def conns(node: Server) -> Iterator[Conns]:
    c = Conns(node)
    yield c
    c.close()
    _wait_blocked(node, 0)


def _blocked_clients(node: Server) -> int:
    c = RawConnection(node.port)
    try:
        info = c.call("INFO", "clients").decode()
    finally:
        c.close()
    for line in info.split("\r\n"):
        if line.startswith("blocked_clients:"):
            return int(line.split(":")[1])
    raise AssertionError("INFO clients has no blocked_clients")


def _wait_blocked(node: Server, n: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while _blocked_clients(node) != n:
        assert time.monotonic() < deadline, f"blocked_clients never reached {n}"
        time.sleep(0.01)


def _no_reply(conn: RawConnection, wait: float = 0.2) -> bool:
    if conn.buf:
        return False
    conn.sock.settimeout(wait)
    try:
        data = conn.sock.recv(65536)
    except TimeoutError:
        return True
    finally:
        conn.sock.settimeout(10.0)
    conn.buf += data
    return False


def _block(conn: RawConnection, node: Server, expected_blocked: int, *args: Arg) -> None:
    conn.send(*args)
    _wait_blocked(node, expected_blocked)


def test_blocked_xread_gets_an_entry_added_by_another_connection(node: Server, conns: Conns) -> None:
    reader = conns.new()
    _block(reader, node, 1, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    assert conns.admin.call("XADD", "s", "5-1", "f", "v") == b"$3\r\n5-1\r\n"
    reply = reader.read_reply()  # BLOCK 0: only the XADD can end the wait
    assert reply == b"*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n5-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
    _wait_blocked(node, 0)


def test_dollar_is_resolved_when_the_read_blocks(node: Server, conns: Conns) -> None:
    conns.admin.call("XADD", "s", "1-1", "f", "old")
    reader = conns.new()
    _block(reader, node, 1, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    conns.admin.call("XADD", "s", "2-1", "f", "new")
    assert b"old" not in reader.read_reply()


def test_blocked_xread_with_plus_on_an_empty_stream_gets_the_first_entry(node: Server, conns: Conns) -> None:
    reader = conns.new()
    _block(reader, node, 1, "XREAD", "BLOCK", "0", "STREAMS", "s", "+")
    conns.admin.call("XADD", "s", "3-0", "f", "v")
    assert b"3-0" in reader.read_reply()


def test_blocked_xread_with_plus_gets_only_the_last_of_several_new_entries(node: Server, conns: Conns) -> None:
    # Redis 7.4 re-executes the woken command and resolves '+' again: the reader gets the
    # stream's last entry as it is when served, not every entry since it blocked.
    reader = conns.new()
    _block(reader, node, 1, "XREAD", "BLOCK", "0", "STREAMS", "s", "+")
    writer = conns.new()
    for cmd in (("MULTI",), ("XADD", "s", "3-0", "f", "a"), ("XADD", "s", "4-0", "f", "b"), ("EXEC",)):
        writer.call(*cmd)
    assert reader.read_reply() == b"*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n4-0\r\n*2\r\n$1\r\nf\r\n$1\r\nb\r\n"


def test_a_write_that_adds_nothing_readable_keeps_the_reader_blocked(node: Server, conns: Conns) -> None:
    conns.admin.call("XADD", "s", "1-1", "f", "v")
    reader = conns.new()
    _block(reader, node, 1, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    conns.admin.call("XDEL", "s", "1-1")  # touches the key, adds nothing after $
    assert _no_reply(reader)
    conns.admin.call("XADD", "s", "2-1", "f", "v")
    assert b"2-1" in reader.read_reply()


def test_blocked_xread_on_a_deleted_or_retyped_key_keeps_waiting(node: Server, conns: Conns) -> None:
    conns.admin.call("XADD", "s", "1-1", "f", "v")
    reader = conns.new()
    _block(reader, node, 1, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    conns.admin.call("DEL", "s")
    assert _no_reply(reader)
    conns.admin.call("SET", "s", "string")
    assert _no_reply(reader)
    conns.admin.call("DEL", "s")
    conns.admin.call("XADD", "s", "9-1", "f", "v")
    assert b"9-1" in reader.read_reply()


def test_blocked_group_readers_are_served_first_come_first_served(node: Server, conns: Conns) -> None:
    conns.admin.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    readers = [conns.new() for _ in range(3)]
    for i, reader in enumerate(readers):
        _block(reader, node, i + 1, "XREADGROUP", "GROUP", "g", f"c{i}", "BLOCK", "0", "STREAMS", "s", ">")
    for i, reader in enumerate(readers):
        conns.admin.call("XADD", "s", f"{i + 1}-0", "f", "v")
        assert f"{i + 1}-0".encode() in reader.read_reply(), f"reader {i} was not served in its turn"
        for later in readers[i + 1 :]:
            assert _no_reply(later, 0.05)
    _wait_blocked(node, 0)
    pending = conns.admin.call("XPENDING", "s", "g")
    assert pending.startswith(b"*4\r\n:3\r\n")


def test_one_entry_wakes_every_blocked_xread_of_the_key(node: Server, conns: Conns) -> None:
    readers = [conns.new() for _ in range(3)]
    for i, reader in enumerate(readers):
        _block(reader, node, i + 1, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    conns.admin.call("XADD", "s", "1-0", "f", "v")
    for reader in readers:
        assert b"1-0" in reader.read_reply()


def test_woken_xreadgroup_delivers_creates_the_pending_entry_and_moves_the_group(node: Server, conns: Conns) -> None:
    conns.admin.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    reader = conns.new()
    _block(reader, node, 1, "XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
    conns.admin.call("XADD", "s", "7-0", "f", "v")
    assert b"7-0" in reader.read_reply()
    assert conns.admin.call("XPENDING", "s", "g", "-", "+", "10").startswith(
        b"*1\r\n*4\r\n$3\r\n7-0\r\n$5\r\nalice\r\n"
    )
    info = conns.admin.call("XINFO", "GROUPS", "s")
    assert b"last-delivered-id\r\n$3\r\n7-0\r\n$12\r\nentries-read\r\n:1\r\n" in info


def test_timeout_is_honoured_with_a_null_reply(node: Server, conns: Conns) -> None:
    for args in (("XREAD", "BLOCK", "300", "STREAMS", "s", "$"),
                 ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "300", "STREAMS", "s", ">")):  # fmt: skip
        conns.admin.call("DEL", "s")
        conns.admin.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
        reader = conns.new()
        started = time.monotonic()
        assert reader.call(*args) == b"*-1\r\n"
        elapsed = time.monotonic() - started
        assert elapsed >= 0.25, f"{args[0]} answered after {elapsed:.3f}s for BLOCK 300"
    resp3 = conns.new()
    resp3.call("HELLO", "3")
    assert resp3.call("XREAD", "BLOCK", "100", "STREAMS", "s", "$") == b"_\r\n"
    _wait_blocked(node, 0)


def test_disconnecting_while_blocked_leaves_no_blocked_client(node: Server, conns: Conns) -> None:
    conns.admin.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    reader = conns.new()
    group_reader = conns.new()
    _block(reader, node, 1, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    _block(group_reader, node, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    reader.close()
    group_reader.close()
    _wait_blocked(node, 0)
    # The writes that would have woken them are served normally and nothing is delivered.
    assert conns.admin.call("XADD", "s", "1-0", "f", "v") == b"$3\r\n1-0\r\n"
    assert conns.admin.call("XPENDING", "s", "g") == b"*4\r\n:0\r\n$-1\r\n$-1\r\n*-1\r\n"


def test_blocked_xreadgroup_gets_nogroup_when_its_group_is_destroyed(node: Server, conns: Conns) -> None:
    conns.admin.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    reader = conns.new()
    _block(reader, node, 1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    assert conns.admin.call("XGROUP", "DESTROY", "s", "g") == b":1\r\n"
    assert reader.read_reply() == NOGROUP
    _wait_blocked(node, 0)


def test_blocked_xreadgroup_gets_nogroup_when_its_key_is_deleted(node: Server, conns: Conns) -> None:
    conns.admin.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    reader = conns.new()
    _block(reader, node, 1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    conns.admin.call("DEL", "s")
    assert reader.read_reply() == NOGROUP


def test_blocked_xreadgroup_gets_nogroup_on_flushall(node: Server, conns: Conns) -> None:
    conns.admin.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    reader = conns.new()
    _block(reader, node, 1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    conns.admin.call("FLUSHALL")
    assert reader.read_reply() == NOGROUP


def test_blocked_xreadgroup_gets_wrongtype_when_the_key_changes_type(node: Server, conns: Conns) -> None:
    conns.admin.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    reader = conns.new()
    _block(reader, node, 1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    conns.admin.call("SET", "s", "now a string")
    assert reader.read_reply() == WRONGTYPE


def test_blocking_read_inside_multi_answers_as_a_timeout(node: Server, conns: Conns) -> None:
    c = conns.new()
    assert c.call("MULTI") == b"+OK\r\n"
    assert c.call("XREAD", "BLOCK", "0", "STREAMS", "s", "$") == b"+QUEUED\r\n"
    assert c.call("EXEC") == b"*1\r\n*-1\r\n"
    assert _blocked_clients(node) == 0


def test_commands_pipelined_behind_a_blocked_read_run_after_it(node: Server, conns: Conns) -> None:
    reader = conns.new()
    reader.send_raw(
        b"*6\r\n$5\r\nXREAD\r\n$5\r\nBLOCK\r\n$1\r\n0\r\n$7\r\nSTREAMS\r\n$1\r\ns\r\n$1\r\n$\r\n"
        b"*1\r\n$4\r\nPING\r\n"
    )
    _wait_blocked(node, 1)
    assert _no_reply(reader)
    conns.admin.call("XADD", "s", "1-0", "f", "v")
    assert b"1-0" in reader.read_reply()
    assert reader.read_reply() == b"+PONG\r\n"


def test_many_keys_one_wakes_the_read_with_only_that_key(node: Server, conns: Conns) -> None:
    reader = conns.new()
    _block(reader, node, 1, "XREAD", "COUNT", "5", "BLOCK", "0", "STREAMS", "a", "b", "$", "$")
    conns.admin.call("XADD", "b", "4-0", "f", "v")
    assert reader.read_reply() == b"*1\r\n*2\r\n$1\r\nb\r\n*1\r\n*2\r\n$3\r\n4-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
