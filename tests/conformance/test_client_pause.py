"""CLIENT PAUSE / CLIENT UNPAUSE against redis-server: what a pause postpones (writes and EXEC
of a transaction holding one under WRITE, everything under ALL), what it lets through (reads,
read-only transactions, a transaction already running), how a postponed client shows (CLIENT
LIST's `b` flag, blocked_clients) and how its command runs once the pause ends; error texts.

The same scenario runs on both servers and its observations are compared. Every scenario
ends with CLIENT UNPAUSE, whatever happens: the servers are shared by the session."""

from __future__ import annotations

import select
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tests.conformance.harness import Pair, RawConnection

Observations = list[object]


def _pending(conn: RawConnection, wait: float = 0.15) -> bool:
    """Whether `conn` still waits for its reply (nothing arrived within `wait` seconds)."""
    if conn.buf:
        return False
    readable, _, _ = select.select([conn.sock], [], [], wait)
    return not readable


def _field(info: bytes, name: str) -> str:
    for line in info.decode().splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1]
    return ""


def _flags_of(client_list: bytes, cmd: str) -> list[str]:
    """CLIENT LIST's flags of the clients whose last command is `cmd`."""
    flags = []
    for line in client_list.decode().splitlines():
        fields = dict(item.split("=", 1) for item in line.split(" ") if "=" in item)
        if fields.get("cmd") == cmd:
            flags.append(fields["flags"])
    return flags


@contextmanager
def _connections(port: int, count: int) -> Iterator[list[RawConnection]]:
    conns = [RawConnection(port) for _ in range(count)]
    try:
        yield conns
    finally:
        try:
            conns[0].call("CLIENT", "UNPAUSE")
        finally:
            for conn in conns:
                conn.close()


def _write_pause(port: int) -> Observations:
    seen: Observations = []
    with _connections(port, 4) as (admin, writer, reader, multi):
        admin.call("DEL", "paused")
        seen.append(admin.call("CLIENT", "PAUSE", 100000, "WRITE"))
        writer.send("XADD", "paused", "1-1", "f", "v")
        seen.append(_pending(writer))
        seen.append(reader.call("XLEN", "paused"))  # reads go on
        seen.append(reader.call("PING"))
        seen.append(_field(reader.call("INFO", "clients"), "blocked_clients"))
        seen.append(_flags_of(reader.call("CLIENT", "LIST"), "xadd"))
        # A read-only transaction runs; a write is postponed when it would be queued.
        seen.append([multi.call("MULTI"), multi.call("XLEN", "paused"), multi.call("EXEC")])
        seen.append(multi.call("MULTI"))
        multi.send("XADD", "paused", "2-1", "f", "v")
        seen.append(_pending(multi))
        seen.append(admin.call("CLIENT", "UNPAUSE"))
        seen.append(writer.read_reply())  # the postponed write ran
        seen.append(multi.read_reply())  # and the postponed queueing
        seen.append(multi.call("EXEC"))
        seen.append(reader.call("XLEN", "paused"))
    return seen


def _exec_pause(port: int) -> Observations:
    seen: Observations = []
    with _connections(port, 3) as (admin, tx, other):
        admin.call("DEL", "paused")
        seen += [tx.call("MULTI"), tx.call("XADD", "paused", "1-1", "f", "v")]
        seen.append(admin.call("CLIENT", "PAUSE", 100000, "WRITE"))
        tx.send("EXEC")  # a transaction holding a write is postponed
        seen.append(_pending(tx))
        seen.append(admin.call("CLIENT", "UNPAUSE"))
        seen.append(tx.read_reply())
        # A pause set inside a transaction starts when the transaction ends.
        seen += [tx.call("MULTI"), tx.call("CLIENT", "PAUSE", 100000, "WRITE"), tx.call("XADD", "paused", "2-1", "f", "v")]
        seen.append(tx.call("EXEC"))
        other.send("XADD", "paused", "3-1", "f", "v")
        seen.append(_pending(other))
        seen.append(admin.call("CLIENT", "UNPAUSE"))
        seen.append(other.read_reply())
    return seen


def _all_pause(port: int) -> Observations:
    seen: Observations = []
    with _connections(port, 3) as (admin, reader, late):
        seen.append(admin.call("CLIENT", "PAUSE", 300, "ALL"))
        seen.append(admin.call("CLIENT", "PAUSE", 10, "WRITE"))  # less restrictive, shorter: ALL stays
        started = time.monotonic()
        reader.send("PING")
        late.send("CLIENT", "UNPAUSE")  # postponed too
        seen.append(_pending(reader, 0.1) and _pending(late, 0.01))
        seen.append(reader.read_reply())
        seen.append(late.read_reply())
        seen.append(time.monotonic() - started > 0.15)  # it waited for the pause's end
    return seen


def _errors(port: int) -> Observations:
    conn = RawConnection(port)
    try:
        return [conn.call(*args) for args in (
            ("CLIENT", "PAUSE", "x"), ("CLIENT", "PAUSE", "-1"), ("CLIENT", "PAUSE", "10", "foo"),
            ("CLIENT", "PAUSE", "x", "foo"), ("CLIENT", "PAUSE", "10", "WRITE", "extra"), ("CLIENT", "UNPAUSE", "x"),
            ("CLIENT", "PAUSE"), ("CLIENT", "PAUSE", "0"), ("CLIENT", "UNPAUSE"),
        )]
    finally:
        conn.close()


def _same(pair: Pair, scenario: Callable[[int], Observations]) -> None:
    rill, oracle = pair.rill.sock.getpeername()[1], pair.oracle.sock.getpeername()[1]
    assert scenario(rill) == scenario(oracle)


def test_a_write_pause_postpones_writes_and_lets_reads_through(pair: Pair) -> None:
    _same(pair, _write_pause)


def test_a_transaction_holding_a_write_waits_and_a_pause_starts_after_exec(pair: Pair) -> None:
    _same(pair, _exec_pause)


def test_an_all_pause_postpones_every_command_until_it_ends(pair: Pair) -> None:
    _same(pair, _all_pause)


def test_client_pause_errors_match(pair: Pair) -> None:
    _same(pair, _errors)
