"""A redis-server's dump.rdb as the data a Rill node starts from (node/persistence/redis_rdb.py):
Debian's 7.0 writes it live, a 7.2.4 one is a fixture (data/redis-7.2.4.rdb). Every key
loads with its value, consumer groups and deadline (each key's DUMP on Rill is redis-server's
byte for byte); keys of types Rill lacks are refused by name, or skipped with
rdb-skip-unsupported; a truncated or damaged file is refused naming the offset."""

from __future__ import annotations

import json
import os
import shutil
import time

import redis

from tests.conftest import Server, start_redis
from tests.persistence.conftest import Nodes
from tests.persistence.redis_rdb_data import FAR_MS, build

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE_72 = os.path.join(HERE, "data", "redis-7.2.4.rdb")


def _saved_by_redis(data_dir: str, fill: object = build, *flags: str) -> redis.Redis:
    """A redis-server filled by `fill`, SAVEd into data_dir/dump.rdb; returns a client on it
    (the server runs until the test's end: the caller compares with it)."""
    server = start_redis(*flags)
    _servers.append(server)
    client = server.client()
    fill(client)  # type: ignore[operator]
    client.save()
    shutil.copyfile(os.path.join(server.dir, "dump.rdb"), os.path.join(data_dir, "dump.rdb"))
    return client


_servers: list[Server] = []


def teardown_function() -> None:
    while _servers:
        server = _servers.pop()
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)


def test_rill_starts_from_a_redis_70_dump_rdb(nodes: Nodes, data_dir: str) -> None:
    source = _saved_by_redis(data_dir)
    node = nodes.start()
    rill = node.client()
    assert sorted(rill.keys("*")) == sorted(source.keys("*"))
    rill.config_set("rdb-version", 10)
    for key in source.keys("*"):
        assert rill.dump(key) == source.dump(key), key
        assert rill.pexpiretime(key) == source.pexpiretime(key)
    assert rill.pexpiretime("volatile") == FAR_MS
    with redis.Redis(port=node.port, db=3) as rill3:
        assert rill3.get("in-db-3") == b"three"
    assert "produced by Redis 7.0" in node.log
    # The node goes on from there: its groups serve, new entries follow the loaded ones.
    assert rill.xreadgroup("billing", "alice", {"orders": "0"}, count=1)[0][1][0][0] == b"1004-0"
    assert rill.xadd("orders", {"id": 501}) > b"1500-0"


def test_rill_starts_from_a_redis_72_dump_rdb(nodes: Nodes, data_dir: str) -> None:
    shutil.copyfile(FIXTURE_72, os.path.join(data_dir, "dump.rdb"))
    node = nodes.start()
    rill = node.client()
    assert sorted(rill.keys("*")) == [b"blob", b"counter", b"events", b"expiring", b"greeting", b"orders", b"volatile"]
    assert rill.xlen("orders") == 498 and rill.xlen("events") == 30
    info = rill.xinfo_stream("orders", full=True)
    groups = {g["name"]: g for g in info["groups"]}
    assert groups[b"billing"]["pel-count"] == 148 and groups[b"shipping"]["pel-count"] == 10
    consumers = {c[b"name"]: c for c in groups[b"shipping"]["consumers"]}
    # RDB 11 carries each consumer's active time: dave was created, never active.
    assert consumers[b"dave"][b"active-time"] == -1 and consumers[b"carol"][b"active-time"] > 0
    assert rill.pexpiretime("expiring") == FAR_MS
    assert rill.get("blob") == b"z" * 1000
    # Each key DUMPs as the 7.2 server DUMPed it when it saved the file.
    with open(FIXTURE_72[: -len(".rdb")] + ".dumps.json") as f:
        dumps = json.load(f)
    assert len(dumps) == 8
    for name, payload in dumps.items():
        db, _, key = name.partition(":")
        with redis.Redis(port=node.port, db=int(db)) as client:
            assert client.dump(key) == bytes.fromhex(payload), name


def _unsupported(r: redis.Redis) -> None:
    build(r)
    r.rpush("a-list", "x", "y")
    r.hset("a-hash", "f", "v")
    r.sadd("a-set", "m")
    r.zadd("a-zset", {"m": 1})
    r.execute_command("FUNCTION", "LOAD", "#!lua name=mylib\nredis.register_function('f', function() return 1 end)")


def test_keys_of_other_types_are_refused_by_name_or_skipped(nodes: Nodes, data_dir: str) -> None:
    _saved_by_redis(data_dir, _unsupported)
    code, output = nodes.start_failure()
    assert code != 0
    assert "holds a function library at offset" in output or "of type" in output
    assert "rdb-skip-unsupported yes" in output
    node = nodes.start("--rdb-skip-unsupported", "yes")
    rill = node.client()
    assert rill.exists("a-list", "a-hash", "a-set", "a-zset") == 0
    assert rill.xlen("orders") == 498
    for what in ("key 'a-list' (db 0) of type list", "key 'a-hash' (db 0) of type hash",
                 "key 'a-set' (db 0) of type set", "key 'a-zset' (db 0) of type zset", "a function library"):
        assert what in node.log


def test_an_unsupported_key_alone_is_named_with_its_type(nodes: Nodes, data_dir: str) -> None:
    def fill(r: redis.Redis) -> None:
        r.flushall()
        r.set("fine", "x")
        r.rpush("mylist", "a")

    _saved_by_redis(data_dir, fill)
    code, output = nodes.start_failure()
    assert code != 0
    assert "holds key 'mylist' (db 0) of type list at offset" in output


def test_a_truncated_or_damaged_file_is_refused_naming_the_offset(nodes: Nodes, data_dir: str) -> None:
    # Every cut and every changed byte: tests/unit/rdb/test_rdb_file.py; here the node's refusal.
    _saved_by_redis(data_dir)
    path = os.path.join(data_dir, "dump.rdb")
    with open(path, "rb") as f:
        good = f.read()
    with open(path, "wb") as f:
        f.write(good[: len(good) // 2])
    code, output = nodes.start_failure()
    assert code != 0
    offset = int(output.split("Bad RDB file dump.rdb at offset ")[1].split(":")[0])
    assert 0 < offset <= len(good) // 2
    # What it says depends on where the cut falls ("unexpected end of data", a count larger
    # than the data left): the offset and the remedy are always there.
    assert "Move the file away to start without it." in output
    # A changed byte inside a string value is caught by the CRC at the end.
    i = good.index(b"hello")
    with open(path, "wb") as f:
        f.write(good[:i] + b"j" + good[i + 1 :])
    code, output = nodes.start_failure()
    assert code != 0 and f"at offset {len(good) - 8}: RDB CRC error" in output
    with open(path, "wb") as f:
        f.write(good)
    assert nodes.start().client().xlen("orders") == 498


def test_keys_whose_deadline_passed_in_the_file_are_deleted_and_logged(nodes: Nodes, data_dir: str) -> None:
    def fill(r: redis.Redis) -> None:
        r.flushall()
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        r.set("stale", "v", px=50)
        r.xadd("stale-stream", {"f": "v"}, id="1-1")
        r.pexpire("stale-stream", 50)
        r.set("alive", "v", px=600_000)
        time.sleep(0.1)

    _saved_by_redis(data_dir, fill, "--enable-debug-command", "yes")
    node = nodes.start("--appendonly", "yes")
    rill = node.client()
    assert rill.exists("stale", "stale-stream") == 0
    assert rill.exists("alive") == 1
    assert rill.info("persistence")["rdb_last_load_keys_loaded"] == 3
    node.stop()
    # The deletions were logged: a restart from the AOF does not bring them back.
    node = nodes.start("--appendonly", "yes")
    assert node.client().exists("stale", "stale-stream", "alive") == 1
