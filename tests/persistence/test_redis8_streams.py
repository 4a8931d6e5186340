"""NACK state, delivery counters and dead-letter policies survive a restart (Redis 8.8's
"XNACK RDB save and load preserves NACKed entries", "XNACK entries survive AOF rewrite",
"XNACK AOF rewrite batch split", "XNACK FORCE-created entries survive AOF rewrite", and
8.4's "XREADGROUP CLAIM state persists across RDB save/load"): after SIGKILL and a restart
from the AOF alone, a snapshot alone, or a rewritten AOF plus its tail, the digest (which
covers PELs, NACK-zone order and dead-letter policies) is the same, and the NACK zone is
claimed in the same order."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from tests.persistence.conftest import Nodes, digest, wait_child_done


def _cmd(client: redis.Redis, *args: Any) -> Any:
    """The reply as the protocol gives it (redis-py's stream reply parsers bypassed)."""
    conn = client.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        client.connection_pool.release(conn)


def _writes(client: redis.Redis) -> None:
    """66 entries read by c1; 65 NACKed in mixed modes (more than one effect batch), two
    claimed with CLAIM, a FORCE-created NACK in a second group, a dead-letter policy and
    one move, XACKDEL and an ACKED trim."""
    for i in range(1, 67):
        client.xadd("s", {"f": f"v{i}"}, id=f"{i}-0")
    client.xgroup_create("s", "g", 0)
    client.xgroup_create("s", "g2", 0)
    _cmd(client, "XREADGROUP", "GROUP", "g", "c1", "COUNT", "66", "STREAMS", "s", ">")
    _cmd(client, "XNACK", "s", "g", "FATAL", "IDS", "2", "1-0", "2-0")
    _cmd(client, "XNACK", "s", "g", "SILENT", "IDS", "2", "3-0", "4-0")
    _cmd(client, "XNACK", "s", "g", "FAIL", "IDS", "1", "5-0", "RETRYCOUNT", "42")
    _cmd(client, "XNACK", "s", "g", "FAIL", "IDS", "60", *[f"{i}-0" for i in range(65, 5, -1)])
    _cmd(client, "XNACK", "s", "g2", "FAIL", "IDS", "1", "7-0", "RETRYCOUNT", "33", "FORCE")
    _cmd(client, "XREADGROUP", "GROUP", "g", "c2", "COUNT", "2", "CLAIM", "0", "STREAMS", "s", ">")
    _cmd(client, "RILL.XDEADLETTER", "SET", "s", "g2", "MAXDELIVERIES", "3", "TO", "dead")
    _cmd(client, "XNACK", "s", "g2", "FATAL", "IDS", "1", "8-0", "FORCE")  # moved at once
    _cmd(client, "XACKDEL", "s", "g", "DELREF", "IDS", "1", "66-0")
    _cmd(client, "XTRIM", "s", "MINID", "3-0", "ACKED")


def _claim_order(client: redis.Redis, n: int) -> list[Any]:
    reply = _cmd(client, "XREADGROUP", "GROUP", "g", "c3", "COUNT", str(n), "CLAIM", "0", "STREAMS", "s", ">")
    return [(e[0], e[3]) for e in reply[0][1]]


def _state(client: redis.Redis) -> list[Any]:
    return [
        _cmd(client, "XPENDING", "s", "g", "-", "+", "100"),
        _cmd(client, "XPENDING", "s", "g2", "-", "+", "100"),
        # the groups of XINFO STREAM FULL without their consumers, whose seen/active times are
        # the clock of whoever applied the log (docs/compatibility.md)
        [g[: g.index(b"consumers")] for g in _cmd(client, "XINFO", "STREAM", "s", "FULL", "COUNT", "0")[-1]],
        _cmd(client, "RILL.XDEADLETTER", "GET", "s", "g2"),
        client.xlen("dead"),
    ]


@pytest.mark.parametrize("mode", ["aof", "snapshot", "rewrite"])
def test_nack_state_survives_a_restart(nodes: Nodes, mode: str) -> None:
    flags = ("--appendonly", "yes", "--appendfsync", "always") if mode != "snapshot" else ()
    node = nodes.start(*flags)
    client = redis.Redis(port=node.port, protocol=2)
    _writes(client)
    if mode == "rewrite":
        assert client.execute_command("BGREWRITEAOF") is True
        wait_child_done(client)
        _cmd(client, "XNACK", "s", "g", "FAIL", "IDS", "1", "10-0")  # the tail after the new base
    elif mode == "snapshot":
        assert client.save() is True
    before, state = digest(client), _state(client)
    # Owned entries' idle times move on: compare the NACKed ones (idle -1) exactly.
    nacked = [e for e in state[0] if e[2] == -1]
    assert len(nacked) == 63 and state[3] == [b"maxdeliveries", 3, b"to", b"dead"] and state[4] == 1
    node.kill()
    node = nodes.start(*flags)
    client = redis.Redis(port=node.port, protocol=2)
    assert digest(client) == before
    after = _state(client)
    assert [e for e in after[0] if e[2] == -1] == nacked
    assert after[1:] == state[1:]
    # The NACK zone's order came back too: 1-0 and 2-0 went to c2, then 3-0, 4-0, 5-0.
    assert _claim_order(client, 3) == [(b"3-0", 0), (b"4-0", 0), (b"5-0", 42)]
