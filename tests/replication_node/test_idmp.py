"""Idempotent production across a failover: the primary decides, its replicas replay the
effects (or load its snapshot in a full sync) and hold the same IDMP state, so a producer
that retries its writes on a promoted replica gets the original entry IDs and adds nothing:
the exactly-once guarantee the Spark writer relies on (issue 26)."""

from __future__ import annotations

from tests.conftest import Server
from tests.replication_node.nodes import digest, raw_client, start_node, wait_synced


def _produce(c: object, batch: int, rows: int) -> dict[tuple[bytes, bytes], bytes]:
    """One batch of a producer's writes, pipelined; returns (pid, iid) -> entry ID."""
    pipe = c.pipeline(transaction=False)  # type: ignore[attr-defined]
    keys = []
    for row in range(rows):
        pid, iid = b"query-1:%d" % (row % 3), b"%d:%d" % (batch, row)
        pipe.execute_command("XADD", "out", "IDMP", pid, iid, "MAXLEN", "~", "500", "*", "row", row, "batch", batch)
        keys.append((pid, iid))
    return dict(zip(keys, pipe.execute()))


def test_a_retry_on_the_promoted_replica_is_deduplicated(started: list[Server]) -> None:
    primary = start_node("--stream-idmp-maxsize", "300")
    started.append(primary)
    a = start_node(replicaof=primary)
    started.append(a)
    with raw_client(primary) as c:
        c.execute_command("XADD", "out", "*", "created", "before the replicas")
        first = _produce(c, 1, 200)
        dup = c.execute_command("XADD", "out", "IDMP", b"query-1:0", b"1:0", "*", "row", "again")
        assert dup == first[(b"query-1:0", b"1:0")]
        auto = c.execute_command("XADD", "out", "IDMPAUTO", "auto", "*", "k", "v")
    # b joins now: a full sync, from the primary's snapshot, which carries the IDMP state.
    b = start_node(replicaof=primary)
    started.append(b)
    with raw_client(primary) as c:
        second = _produce(c, 2, 200)
        length = c.execute_command("XLEN", "out")
        info_before = c.execute_command("XINFO", "STREAM", "out")
    wait_synced(primary, a, b)
    assert digest(primary) == digest(a) == digest(b)

    primary.kill()
    with raw_client(a) as c:
        assert c.execute_command("REPLICAOF", "NO", "ONE") == b"OK"
        # The settings travelled in the log: not the replica's own defaults.
        info = dict(zip(*[iter(c.execute_command("XINFO", "STREAM", "out"))] * 2))
        assert (info[b"idmp-maxsize"], info[b"iids-added"], info[b"iids-duplicates"]) == (300, 401, 1)
        assert c.execute_command("XINFO", "STREAM", "out") == info_before
        # The task retries its batches on the new primary: the same IDs, nothing added (400
        # rows over 3 producers, ~134 each: all within IDMP-MAXSIZE 300).
        assert _produce(c, 2, 200) == second
        assert _produce(c, 1, 200) == first
        assert c.execute_command("XADD", "out", "IDMPAUTO", "auto", "*", "k", "v") == auto
        assert c.execute_command("XLEN", "out") == length
        fresh = c.execute_command("XADD", "out", "IDMP", b"query-1:0", b"3:0", "*", "row", 0)
        assert fresh not in first.values() and fresh not in second.values()
    with raw_client(b) as c:
        assert c.execute_command("REPLICAOF", "127.0.0.1", a.port) == b"OK"
    wait_synced(a, b)
    # The duplicates were logged too (they count in iids-duplicates): the replica agrees.
    assert digest(a) == digest(b)
    with raw_client(b) as c:
        info = dict(zip(*[iter(c.execute_command("XINFO", "STREAM", "out"))] * 2))
        assert (info[b"iids-added"], info[b"iids-duplicates"], info[b"length"]) == (402, 402, length + 1)
