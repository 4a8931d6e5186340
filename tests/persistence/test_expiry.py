"""Times to live through the disk: the AOF and snapshots keep absolute deadlines (a restart
does not restart the clock of a TTL), and a primary that starts drops what expired while it
was down, logging a DEL for each (so the AOF says so too)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis

from tests.persistence.conftest import Nodes, aof_dir, incr_files, wait_child_done

FAR_MS = 4_000_000_000_000  # 2096


def _fill(client: redis.Redis) -> dict[bytes, int]:
    """Keys that expire within 300 ms and keys with far deadlines, set every way; returns
    the far keys' deadlines (ms)."""
    client.execute_command("SET", "gone", "v", "PX", 300)
    client.execute_command("XADD", "gone-stream", "1-1", "f", "v")
    client.execute_command("PEXPIRE", "gone-stream", 300)
    client.execute_command("SETEX", "gone-setex", 1, "v")
    client.execute_command("SET", "kept", "v", "PXAT", FAR_MS)
    client.execute_command("XADD", "stream", "1-1", "f", "v")
    client.execute_command("XGROUP", "CREATE", "stream", "g", "0")
    client.execute_command("EXPIREAT", "stream", FAR_MS // 1000 + 1)
    client.execute_command("SET", "relative", "1", "EX", 86400)  # logged as an absolute PXAT
    client.execute_command("INCR", "relative")
    client.execute_command("SET", "plain", "v")
    return {key: client.execute_command("PEXPIRETIME", key) for key in (b"kept", b"stream", b"relative")}


def _expect_after_restart(client: redis.Redis, deadlines: dict[bytes, int]) -> None:
    # Deleted, not merely hidden: DBSIZE counts expired keys that are still there.
    assert client.dbsize() == 4
    assert sorted(client.keys("*")) == [b"kept", b"plain", b"relative", b"stream"]
    for key, when in deadlines.items():
        assert client.execute_command("PEXPIRETIME", key) == when
    assert client.ttl("plain") == -1
    assert client.get("relative") == b"2"
    assert client.xinfo_groups("stream")[0]["name"] == b"g"


def test_aof_restart_keeps_absolute_deadlines_and_drops_what_expired_meanwhile(nodes: Nodes) -> None:
    node = nodes.start("--appendonly", "yes", "--appendfsync", "always")
    client = redis.Redis(port=node.port)
    deadlines = _fill(client)
    node.kill()
    time.sleep(1.1)  # past every short deadline (SETEX's second included)
    node = nodes.start("--appendonly", "yes", "--appendfsync", "always")
    client = redis.Redis(port=node.port)
    _expect_after_restart(client, deadlines)
    assert client.info("persistence")["rdb_last_load_keys_expired"] == 3
    assert client.info("stats")["expired_keys"] == 3
    logged = b"".join(Path(f).read_bytes() for f in incr_files(nodes.dir))
    # Deadlines are logged absolute, and the deletions made at start-up are logged too.
    assert b"PEXPIREAT" in logged and b"PXAT" in logged
    assert b"$6\r\nEXPIRE\r\n" not in logged and b"$7\r\nPEXPIRE\r\n" not in logged and b"$2\r\nEX\r\n" not in logged
    for key in (b"gone", b"gone-stream", b"gone-setex"):
        assert b"$3\r\nDEL\r\n$%d\r\n%s\r\n" % (len(key), key) in logged
    node.stop()
    node = nodes.start("--appendonly", "yes")
    client = redis.Redis(port=node.port)
    _expect_after_restart(client, deadlines)
    assert client.info("persistence")["rdb_last_load_keys_expired"] == 0  # the DELs replayed


def test_snapshot_restart_keeps_absolute_deadlines(nodes: Nodes) -> None:
    node = nodes.start()
    client = redis.Redis(port=node.port)
    deadlines = _fill(client)
    assert client.save() is True
    node.kill()
    time.sleep(1.1)
    node = nodes.start()
    client = redis.Redis(port=node.port)
    _expect_after_restart(client, deadlines)
    assert client.info("persistence")["rdb_last_load_keys_expired"] == 3


@pytest.mark.parametrize("rewrite", ["BGREWRITEAOF", "BGSAVE"])
def test_background_snapshots_keep_deadlines(nodes: Nodes, rewrite: str) -> None:
    flags = ("--appendonly", "yes") if rewrite == "BGREWRITEAOF" else ()
    node = nodes.start(*flags)
    client = redis.Redis(port=node.port)
    deadlines = _fill(client)
    client.execute_command(rewrite)
    wait_child_done(client)
    if rewrite == "BGREWRITEAOF":
        assert any(p.name.endswith(".base.rill") for p in Path(aof_dir(nodes.dir)).iterdir())
    node.stop()
    time.sleep(1.1)
    node = nodes.start(*flags)
    client = redis.Redis(port=node.port)
    _expect_after_restart(client, deadlines)
