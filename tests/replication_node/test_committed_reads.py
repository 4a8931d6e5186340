"""Committed reads with real nodes (docs/compatibility.md, *Committed reads*): XCOMMITTED
answers, per stream, the highest entry ID that a majority of the replica set holds, and a
committed read — XRANGE up to that ID — never returns an entry a majority does not hold, on the
primary or on a replica; the entry becomes visible there once a majority holds it."""

from __future__ import annotations

import time

from tests.conftest import Server
from tests.replication_node.nodes import call, raw_client, start_node, stopped, wait_synced, wait_until
from tests.replication_node.test_fenced import LEASE, leased, start_fenced


def committed(node: Server, key: bytes = b"s") -> bytes:
    reply = call(node, "XCOMMITTED", key)
    assert isinstance(reply, list), reply
    return reply[0]


def committed_read(node: Server, key: bytes = b"s") -> list[bytes]:
    """The IDs a committed read returns: XRANGE from the start to the committed ID."""
    with raw_client(node) as c:
        bound = c.execute_command("XCOMMITTED", key)[0]
        return [entry[0] for entry in c.execute_command("XRANGE", key, "-", bound)]


def test_xcommitted_replies(started: list[Server]) -> None:
    alone = start_node()
    started.append(alone)
    assert call(alone, "XCOMMITTED", "nothing") == [None]
    first = call(alone, "XADD", "s", "*", "n", "1")
    last = call(alone, "XADD", "s", "*", "n", "2")
    # A node with no replica set is a majority of one: all it holds is committed.
    assert call(alone, "XCOMMITTED", "s", "nothing", "s") == [last, None, last]
    call(alone, "XDEL", "s", last)
    assert committed(alone) == first  # the highest committed entry, deleted ones aside
    call(alone, "SET", "k", "v")
    assert call(alone, "XCOMMITTED", "s", "k") == "-WRONGTYPE Operation against a key holding the wrong kind of value"
    assert call(alone, "XCOMMITTED") == "-wrong number of arguments for 'xcommitted' command"


def test_an_entry_only_the_primary_holds_is_not_read_until_a_replica_holds_it(trio: tuple[Server, Server, Server]) -> None:
    primary, a, b = trio
    held = call(primary, "XADD", "s", "*", "n", "1")
    for node in (primary, a, b):
        wait_until(lambda node=node: committed(node) == held, f"the first entry committed on :{node.port}")
    with stopped(a), stopped(b):
        alone = call(primary, "XADD", "s", "*", "n", "2")
        time.sleep(0.5)
        # The primary holds it and serves it to plain reads, never to committed ones.
        assert [e[0] for e in call(primary, "XRANGE", "s", "-", "+")] == [held, alone]  # type: ignore[union-attr]
        assert committed(primary) == held
        assert committed_read(primary) == [held]
    # The replicas get it and acknowledge it: a majority holds it, everywhere it is visible.
    for node in (primary, a, b):
        wait_until(lambda node=node: committed_read(node) == [held, alone], f"the second entry committed on :{node.port}")


def test_a_replica_holding_an_entry_a_majority_lacks_does_not_return_it(started: list[Server]) -> None:
    # Five nodes: a majority is the primary and two replicas. With three replicas stopped, the
    # fourth receives the entry, but only two of five nodes hold it.
    primary = start_node()
    started.append(primary)
    replicas = [start_node(replicaof=primary) for _ in range(4)]
    started.extend(replicas)
    wait_synced(primary, *replicas)
    held = call(primary, "XADD", "s", "*", "n", "1")
    watcher, *others = replicas
    wait_until(lambda: committed(watcher) == held, "the first entry committed on the watching replica")
    with stopped(others[0]), stopped(others[1]), stopped(others[2]):
        minority = call(primary, "XADD", "s", "*", "n", "2")
        wait_until(lambda: [e[0] for e in call(watcher, "XRANGE", "s", "-", "+")] == [held, minority],  # type: ignore[union-attr]
                   "the entry on the watching replica")
        time.sleep(0.5)
        assert committed(watcher) == held
        assert committed_read(watcher) == [held]
        assert committed_read(primary) == [held]
    wait_until(lambda: committed_read(watcher) == [held, minority], "the entry committed once a majority holds it")


def test_fenced_mode_counts_what_replicas_wrote(started: list[Server]) -> None:
    primary = start_fenced(started)
    a = start_fenced(started, replicaof=("127.0.0.1", primary.port))
    b = start_fenced(started, replicaof=("127.0.0.1", primary.port))
    wait_synced(primary, a, b)
    wait_until(lambda: leased(primary), "the primary's lease")
    held = call(primary, "XADD", "s", "*", "n", "1")
    assert call(primary, "WAIT", 1, 5000) >= 1  # type: ignore[operator]
    wait_until(lambda: committed(primary) == held and committed(a) == held, "the first entry committed")
    with stopped(a), stopped(b):
        alone = call(primary, "XADD", "s", "*", "n", "2")  # within the lease: accepted, held by one node of three
        assert isinstance(alone, bytes), alone
        time.sleep(LEASE / 2)
        assert committed_read(primary) == [held]
    wait_until(lambda: committed_read(primary) == [held, alone], "the entry committed after the replicas resumed")
    wait_until(lambda: committed_read(b) == [held, alone], "the entry committed on a replica")
