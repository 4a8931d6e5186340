"""The Redis 8 stream writes and Rill's dead letters replicate exactly: a replica that
follows the log and one that joins later through a full sync (the primary's snapshot) hold
the primary's digest — PELs with their delivery counts, NACK-zone order and dead-letter
policies included — after XDELEX, XACKDEL, DELREF/ACKED trims (`=` and `~`, with node sizes
that differ between the nodes), XREADGROUP CLAIM, XNACK in every mode and dead-letter moves.
Redis 8.8's "XNACK replication of modes and FORCE" and "XNACK reclaim operations propagate
correctly to replica", 8.4's "XREADGROUP CLAIM delivery count increments replicated
correctly", on Rill's effect log."""

from __future__ import annotations

import time
from typing import Any

import redis

from tests.conftest import Server
from tests.replication_node.nodes import digest, raw_client, start_node, wait_synced


def _cmd(client: redis.Redis, *args: Any) -> Any:
    conn = client.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        client.connection_pool.release(conn)


def _workload(c: redis.Redis, round_: int) -> None:
    base = round_ * 100
    g, h = f"g{round_}", f"h{round_}"
    for i in range(1, 41):
        _cmd(c, "XADD", "s", f"{base + i}-0", "f", f"v{i}")
    for name in (g, h):
        _cmd(c, "XGROUP", "CREATE", "s", name, "0")
    _cmd(c, "RILL.XDEADLETTER", "SET", "s", h, "MAXDELIVERIES", "2", "TO", "dead")
    _cmd(c, "XREADGROUP", "GROUP", g, "c1", "COUNT", "30", "STREAMS", "s", ">")
    _cmd(c, "XREADGROUP", "GROUP", h, "c1", "COUNT", "20", "STREAMS", "s", ">")
    _cmd(c, "XNACK", "s", g, "FATAL", "IDS", "2", f"{base + 1}-0", f"{base + 2}-0")
    _cmd(c, "XNACK", "s", g, "SILENT", "IDS", "2", f"{base + 3}-0", f"{base + 4}-0")
    _cmd(c, "XNACK", "s", g, "FAIL", "IDS", "3", f"{base + 9}-0", f"{base + 5}-0", f"{base + 7}-0")
    _cmd(c, "XNACK", "s", g, "FAIL", "IDS", "1", f"{base + 35}-0", "RETRYCOUNT", "9", "FORCE")
    time.sleep(0.02)
    _cmd(c, "XREADGROUP", "GROUP", g, "c2", "COUNT", "4", "CLAIM", "10", "STREAMS", "s", ">")
    _cmd(c, "XREADGROUP", "GROUP", h, "c2", "CLAIM", "0", "STREAMS", "s", ">")  # moves: delivered twice
    # delivered twice to h by now (read, then claimed): NACKed, they go to the dead letters
    _cmd(c, "XNACK", "s", h, "FAIL", "IDS", "2", f"{base + 1}-0", f"{base + 2}-0")
    _cmd(c, "XAUTOCLAIM", "s", g, "c3", "0", "0-0", "COUNT", "5")
    _cmd(c, "XCLAIM", "s", g, "c3", "0", f"{base + 9}-0", f"{base + 10}-0")
    _cmd(c, "XACKDEL", "s", g, "ACKED", "IDS", "3", f"{base + 10}-0", f"{base + 11}-0", f"{base + 12}-0")
    _cmd(c, "XDELEX", "s", "DELREF", "IDS", "2", f"{base + 13}-0", f"{base + 14}-0")
    _cmd(c, "XTRIM", "s", "MAXLEN", "~", "25", "ACKED")
    _cmd(c, "XADD", "s", "MINID", "~", f"{base + 20}-0", "DELREF", f"{base + 50}-0", "f", "v")
    _cmd(c, "XTRIM", "s", "MAXLEN", "=", "12", "ACKED")
    _cmd(c, "XACK", "s", g, f"{base + 1}-0", f"{base + 2}-0")
    _cmd(c, "XGROUP", "DESTROY", "s", h)  # g stays, with its NACK zone


def _layout_free(full: list[Any]) -> list[Any]:
    """XINFO STREAM FULL up to its groups, without the node layout (radix-tree-*), which
    differs with each node's stream-node-max-entries and with when it synced."""
    head = full[: full.index(b"groups")]
    return [v for k, v in zip(head[0::2], head[1::2]) if not k.startswith(b"radix-tree")]


def test_replicas_and_a_full_sync_hold_the_primarys_state(started: list[Server]) -> None:
    primary = start_node("--stream-node-max-entries", "4")
    started.append(primary)
    a = start_node("--stream-node-max-entries", "7", replicaof=primary)
    started.append(a)
    with raw_client(primary) as c:
        _workload(c, 1)
        _cmd(c, "XGROUP", "CREATE", "s", "g", "0")
        read = _cmd(c, "XREADGROUP", "GROUP", "g", "c1", "COUNT", "5", "STREAMS", "s", ">")
        _cmd(c, "XNACK", "s", "g", "FAIL", "IDS", "1", read[0][1][2][0])
        _cmd(c, "RILL.XDEADLETTER", "SET", "s", "g", "MAXDELIVERIES", "1", "TO", "dead")
        _cmd(c, "XREADGROUP", "GROUP", "g", "c2", "CLAIM", "0", "STREAMS", "s", ">")
        dead = c.xlen("dead")
        assert dead > 0
    # b joins now: a full sync from the primary's snapshot, which carries the NACK zone.
    b = start_node(replicaof=primary)
    started.append(b)
    with raw_client(primary) as c:
        _workload(c, 2)
        nacked = _cmd(c, "XINFO", "STREAM", "s", "FULL")
        dead = c.xlen("dead")
    wait_synced(primary, a, b)
    assert digest(primary) == digest(a) == digest(b)
    with raw_client(b) as c:
        replica_view = _cmd(c, "XINFO", "STREAM", "s", "FULL")
        assert _layout_free(replica_view) == _layout_free(nacked)
        assert c.xlen("dead") == dead
