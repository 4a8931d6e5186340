"""Round trips through the disk: for seeded random histories of every logged write, the
state after a restart has the digest it had before (DEBUG DIGEST covers entries, stream
counters, groups, consumers and every pending entry), through the AOF alone, a snapshot
alone, and a snapshot plus AOF tail after a rewrite. The replication id and offset come back
too, so a restarted replica could resume with a partial resync."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import redis

from tests.persistence import workload
from tests.persistence.conftest import Nodes, aof_dir, digest, wait_child_done


def _position(client: redis.Redis) -> tuple[str, int]:
    info = client.info("replication")
    return info["master_replid"], info["master_repl_offset"]


def _restored_position(client: redis.Redis) -> tuple[str, int]:
    """A primary restarted from disk starts a new history at the loaded offset and keeps the
    loaded id as replid2 (Redis's loadDataFromDisk), so the loaded position is that pair."""
    info = client.info("replication")
    assert info["master_replid"] != info["master_replid2"]
    return info["master_replid2"], info["master_repl_offset"]


def _clients(node: object) -> tuple[redis.Redis, redis.Redis]:
    port = node.port  # type: ignore[attr-defined]
    return redis.Redis(port=port), redis.Redis(port=port, db=3)


@pytest.mark.parametrize("seed", [1, 2])
def test_aof_only_restart_after_sigkill_keeps_digest_and_position(nodes: Nodes, seed: int) -> None:
    node = nodes.start("--appendonly", "yes", "--appendfsync", "always")
    client, other = _clients(node)
    workload.run(client, other, seed, 400)
    before, position = digest(client), _position(client)
    assert before != b"0" * 40
    node.kill()
    node = nodes.start("--appendonly", "yes")
    client, _ = _clients(node)
    assert digest(client) == before
    assert _restored_position(client) == position


@pytest.mark.parametrize("seed", [3, 4])
def test_snapshot_only_restart_keeps_digest_and_position(nodes: Nodes, seed: int) -> None:
    node = nodes.start()
    client, other = _clients(node)
    workload.run(client, other, seed, 400)
    before, position = digest(client), _position(client)
    assert client.save() is True
    node.kill()
    assert not os.path.exists(aof_dir(nodes.dir))
    node = nodes.start()
    client, _ = _clients(node)
    assert digest(client) == before
    assert _restored_position(client) == position
    assert client.info("persistence")["rdb_last_load_keys_loaded"] == client.dbsize() + client.info("keyspace").get("db3", {"keys": 0})["keys"]


def test_aof_replay_of_interleaved_streams_rebuilds_every_node_as_it_was(nodes: Nodes) -> None:
    # The replay takes blocks of XADDs stream by stream, in C (docs/persistence.md): node
    # splits, new streams, other fields, long values and other commands in between must come
    # back exactly (XINFO STREAM FULL shows the nodes' listpack accounting).
    node = nodes.start("--appendonly", "yes", "--appendfsync", "everysec")
    client, _ = _clients(node)
    keys = [f"s{i}" for i in range(7)]
    pipe = client.pipeline(transaction=False)
    for i in range(3000):
        key = keys[(i * 3 + i // 40) % len(keys)]
        fields = {"temp": i % 300, "unit": "C"} if i % 53 else {"other": "x" * (i % 400)}
        pipe.xadd(key, fields, id=f"{1000 + i}-{i % 4}")
        if i % 500 == 499:
            pipe.xdel(key, f"{1000 + i}-{i % 4}")
            pipe.xtrim(keys[0], maxlen=100, approximate=True)
            pipe.set(f"plain{i}", "v")
    pipe.execute()
    full = [client.execute_command("XINFO", "STREAM", key, "FULL") for key in keys]
    before = digest(client)
    assert node.stop() == 0
    node = nodes.start("--appendonly", "yes")
    client, _ = _clients(node)
    assert digest(client) == before
    assert [client.execute_command("XINFO", "STREAM", key, "FULL") for key in keys] == full


def test_shutdown_with_save_points_writes_a_final_snapshot(nodes: Nodes) -> None:
    node = nodes.start("--save", "3600 1")
    client, other = _clients(node)
    workload.run(client, other, 5, 150)
    before = digest(client)
    assert node.stop() == 0
    assert os.path.exists(os.path.join(nodes.dir, "dump.rdb"))
    node = nodes.start()
    assert digest(_clients(node)[0]) == before


@pytest.mark.parametrize("seed", [6, 7])
def test_snapshot_plus_tail_after_rewrite_keeps_digest(nodes: Nodes, seed: int) -> None:
    node = nodes.start("--appendonly", "yes", "--appendfsync", "everysec")
    client, other = _clients(node)
    workload.run(client, other, seed, 200)
    assert client.execute_command("BGREWRITEAOF") is True
    # Writes while the child writes the new base land in the new incr file.
    workload.run(client, other, seed + 100, 200)
    wait_child_done(client)
    info = client.info("persistence")
    assert info["aof_last_bgrewrite_status"] == "ok" and info["aof_rewrites"] == 1
    workload.run(client, other, seed + 200, 100)
    manifest = Path(aof_dir(nodes.dir), "appendonly.aof.manifest").read_text()
    assert manifest.splitlines()[0].startswith("file appendonly.aof.2.base.rill seq 2 type b")
    assert "seq 1 type i" not in manifest  # the old incr file is covered by the new base
    before, position = digest(client), _position(client)
    node.kill()
    node = nodes.start("--appendonly", "yes")
    client, _ = _clients(node)
    assert digest(client) == before
    assert _restored_position(client) == position
    # The restarted primary's new history is recorded by a new incr file, not a rewrite.
    assert sorted(os.listdir(aof_dir(nodes.dir))) == [
        "appendonly.aof.2.base.rill", "appendonly.aof.2.incr.aof", "appendonly.aof.3.incr.aof", "appendonly.aof.manifest",
    ]
    assert client.info("persistence")["aof_rewrites"] == 0


def test_each_restart_continues_the_history_the_previous_one_started(nodes: Nodes) -> None:
    """A restarted primary starts a new replication id and keeps the loaded one as replid2;
    the new id is on disk (a manifest line), so the next restart keeps *it* as replid2: a
    replica that followed the middle run can resume partially through it."""
    node = nodes.start("--appendonly", "yes", "--appendfsync", "always")
    client, other = _clients(node)
    workload.run(client, other, 11, 100)
    first = _position(client)
    node.kill()
    node = nodes.start("--appendonly", "yes", "--appendfsync", "always")
    client, other = _clients(node)
    assert _restored_position(client) == first
    second_id = client.info("replication")["master_replid"]
    # Recorded before the node accepted clients: no window in which a crash forgets it.
    assert f"replid {second_id} replid2 {first[0]}" in Path(aof_dir(nodes.dir), "appendonly.aof.manifest").read_text()
    workload.run(client, other, 12, 100)
    before, second = digest(client), _position(client)
    assert second[0] == second_id
    node.kill()
    node = nodes.start("--appendonly", "yes")
    client, _ = _clients(node)
    assert digest(client) == before
    assert _restored_position(client) == second
    assert client.info("persistence")["aof_rewrites"] == 0


def test_turning_appendonly_on_at_runtime_writes_a_base_first(nodes: Nodes) -> None:
    node = nodes.start()
    client, other = _clients(node)
    workload.run(client, other, 8, 200)
    assert client.config_set("appendonly", "yes") is True
    wait_child_done(client)
    assert client.info("persistence")["aof_enabled"] == 1
    names = sorted(os.listdir(aof_dir(nodes.dir)))
    assert names == ["appendonly.aof.1.base.rill", "appendonly.aof.1.incr.aof", "appendonly.aof.manifest"]
    workload.run(client, other, 9, 100)
    before = digest(client)
    node.kill()
    node = nodes.start("--appendonly", "yes")
    assert digest(_clients(node)[0]) == before


def test_appendonly_off_at_runtime_stops_logging(nodes: Nodes) -> None:
    node = nodes.start("--appendonly", "yes")
    client, _ = _clients(node)
    client.set("kept", "1")
    assert client.config_set("appendonly", "no") is True
    assert client.info("persistence")["aof_enabled"] == 0
    client.set("not-logged", "1")
    node.kill()
    node = nodes.start("--appendonly", "yes")
    client, _ = _clients(node)
    assert client.get("kept") == b"1"
    assert client.get("not-logged") is None


def test_automatic_rewrite_when_the_aof_grows(nodes: Nodes) -> None:
    node = nodes.start("--appendonly", "yes", "--auto-aof-rewrite-min-size", "64kb",
                       "--auto-aof-rewrite-percentage", "100")
    client, _ = _clients(node)
    pipe = client.pipeline(transaction=False)
    for i in range(3000):
        pipe.xadd("auto", {"n": i, "pad": "x" * 40})
    pipe.execute()

    def rewritten() -> bool:
        return int(client.info("persistence")["aof_rewrites"]) >= 1
    from tests.persistence.conftest import wait_for
    wait_for(rewritten, 10.0, "an automatic rewrite")
    wait_child_done(client)
    before = digest(client)
    node.kill()
    node = nodes.start("--appendonly", "yes")
    assert digest(_clients(node)[0]) == before


def test_writes_after_a_swapdb_load_into_the_database_they_went_to(nodes: Nodes) -> None:
    """The AOF load applies SWAPDB as a replica does: the commands after it (logged without a
    SELECT: the database number did not change) go to the swapped database."""
    node = nodes.start("--appendonly", "yes", "--appendfsync", "always")
    client, other = _clients(node)
    client.set("before", "1")
    client.swapdb(0, 3)
    client.set("after", "2")
    other.set("in-3", "3")
    before = (sorted(client.keys()), sorted(other.keys()))
    assert before == ([b"after"], [b"before", b"in-3"])
    node.kill()
    node = nodes.start("--appendonly", "yes")
    client, other = _clients(node)
    assert (sorted(client.keys()), sorted(other.keys())) == before
