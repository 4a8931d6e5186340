"""The persistence commands and settings as clients see them: SAVE, BGSAVE [SCHEDULE],
BGREWRITEAOF, LASTSAVE, WAITAOF, the directives through CONFIG GET/SET, and the INFO
persistence fields (Redis 7.2's replies and error texts)."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
import redis

from tests.persistence.conftest import Nodes, wait_child_done


def raw(client: redis.Redis, *args: Any) -> Any:
    """The reply as the protocol carries it (no redis-py reply callbacks)."""
    conn = client.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        client.connection_pool.release(conn)


def test_save_and_lastsave(nodes: Nodes) -> None:
    node = nodes.start()
    client = node.client()
    client.set("k", "v")
    assert client.info("persistence")["rdb_changes_since_last_save"] == 1
    before = raw(client, "LASTSAVE")
    time.sleep(1.1)
    assert raw(client, "SAVE") == b"OK"
    assert raw(client, "LASTSAVE") > before
    info = client.info("persistence")
    assert info["rdb_changes_since_last_save"] == 0 and info["rdb_saves"] == 1
    assert os.path.exists(os.path.join(nodes.dir, "dump.rdb"))
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'save' command"):
        raw(client, "SAVE", "x")


def test_bgsave_replies_and_conflicts_with_a_running_child(nodes: Nodes) -> None:
    node = nodes.start()
    client = node.client()
    client.set("k", "v")
    pipe = client.pipeline(transaction=False)
    pipe.execute_command("BGSAVE")
    pipe.execute_command("BGSAVE")
    pipe.execute_command("BGREWRITEAOF")
    replies = pipe.execute(raise_on_error=False)
    assert replies[0] is True  # redis-py's callback for "+Background saving started"
    assert str(replies[1]) == "Background save already in progress"
    wait_child_done(client)
    assert client.info("persistence")["aof_rewrites"] == 1  # the scheduled rewrite ran
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        raw(client, "BGSAVE", "NOW")


def test_exact_status_replies_of_the_background_commands(nodes: Nodes) -> None:
    node = nodes.start()
    client = node.client()
    assert raw(client, "BGSAVE") == b"Background saving started"
    wait_child_done(client)
    assert raw(client, "BGREWRITEAOF") == b"Background append only file rewriting started"
    conn = client.connection_pool.get_connection()
    try:
        # Both in one batch, so the rewrite child is still running for the next three.
        conn.send_packed_command(conn.pack_commands([("BGREWRITEAOF",), ("BGSAVE",), ("BGSAVE", "SCHEDULE")]))
        with pytest.raises(redis.ResponseError, match="^Background append only file rewriting already in progress$"):
            conn.read_response()
        with pytest.raises(redis.ResponseError, match=r"^Another child process is active \(AOF\?\): can't BGSAVE right now"):
            conn.read_response()
        assert conn.read_response() == b"Background saving scheduled"
    finally:
        client.connection_pool.release(conn)
    wait_child_done(client)
    assert client.info("persistence")["rdb_bgsave_in_progress"] == 0
    assert client.info("persistence")["rdb_saves"] == 2


def test_waitaof_arguments_and_replies(nodes: Nodes) -> None:
    node = nodes.start()
    client = node.client()
    with pytest.raises(redis.ResponseError, match="^WAITAOF cannot be used when numlocal is set but appendonly is disabled.$"):
        raw(client, "WAITAOF", "1", "0", "0")
    with pytest.raises(redis.ResponseError, match="^value is out of range, value must between 0 and 1$"):
        raw(client, "WAITAOF", "2", "0", "0")
    with pytest.raises(redis.ResponseError, match="^value is out of range, must be positive$"):
        raw(client, "WAITAOF", "0", "-1", "0")
    with pytest.raises(redis.ResponseError, match="^timeout is negative$"):
        raw(client, "WAITAOF", "0", "0", "-1")
    with pytest.raises(redis.ResponseError, match="^value is not an integer or out of range$"):
        raw(client, "WAITAOF", "x", "0", "0")
    assert raw(client, "WAITAOF", "0", "0", "0") == [0, 0]
    started = time.monotonic()
    # No replica will ever acknowledge: the wait ends at the timeout with what was reached.
    assert raw(client, "WAITAOF", "0", "1", "200") == [0, 0]
    assert time.monotonic() - started >= 0.19


def test_waitaof_with_the_aof_on_counts_the_local_fsync(nodes: Nodes) -> None:
    node = nodes.start("--appendonly", "yes", "--appendfsync", "no")
    client = node.client()
    client.set("k", "v")
    # appendfsync no never fsyncs on its own: the wait times out unacknowledged...
    assert raw(client, "WAITAOF", "1", "0", "150") == [0, 0]
    # ...until a policy that fsyncs is set.
    client.config_set("appendfsync", "always")
    client.set("k", "w")
    assert raw(client, "WAITAOF", "1", "0", "0") == [1, 0]
    pipe = client.pipeline(transaction=True)
    pipe.set("k", "x")
    pipe.execute_command("WAITAOF", "1", "0", "0")
    assert pipe.execute()[1] == [1, 0]  # inside MULTI it never blocks


def test_config_get_and_set_of_the_directives(nodes: Nodes) -> None:
    node = nodes.start("--appendonly", "yes", "--appendfsync", "everysec")
    client = node.client()
    assert client.config_get("appendonly") == {"appendonly": "yes"}
    assert client.config_get("appendfsync") == {"appendfsync": "everysec"}
    assert client.config_get("appendfilename") == {"appendfilename": "appendonly.aof"}
    assert client.config_get("appenddirname") == {"appenddirname": "appendonlydir"}
    assert client.config_get("dir") == {"dir": os.path.realpath(nodes.dir)}
    client.config_set("appendfsync", "always")
    assert client.config_get("appendfsync") == {"appendfsync": "always"}
    with pytest.raises(redis.ResponseError, match="can't set immutable config"):
        client.config_set("appendfilename", "other.aof")
    with pytest.raises(redis.ResponseError, match="argument\\(s\\) must be one of the following: everysec, always, no"):
        client.config_set("appendfsync", "sometimes")


def test_info_persistence_reports_the_aof(nodes: Nodes) -> None:
    node = nodes.start("--appendonly", "yes")
    client = node.client()
    client.xadd("s", {"a": 1})
    info = client.info("persistence")
    assert info["aof_enabled"] == 1 and info["loading"] == 0
    assert info["aof_last_write_status"] == "ok" and info["aof_last_bgrewrite_status"] == "ok"
    assert info["aof_rewrite_in_progress"] == 0 and info["aof_rewrite_scheduled"] == 0
    aof = os.path.join(nodes.dir, "appendonlydir")
    on_disk = sum(os.path.getsize(os.path.join(aof, n)) for n in os.listdir(aof) if not n.endswith(".manifest"))
    assert info["aof_current_size"] == on_disk
    assert info["aof_base_size"] == os.path.getsize(os.path.join(aof, "appendonly.aof.1.base.rill"))


def test_info_without_aof_has_no_aof_size_fields(nodes: Nodes) -> None:
    node = nodes.start()
    info = node.client().info("persistence")
    assert info["aof_enabled"] == 0
    assert "aof_current_size" not in info
    assert info["rdb_last_bgsave_status"] == "ok"
