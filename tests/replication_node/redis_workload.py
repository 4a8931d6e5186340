"""The writes of the Redis-protocol replication tests: every stream, string, key and expiry
command that Redis 7 propagates (and Rill logs), transactions and several databases, run
against a primary; and the comparison of a primary with its replica, key by key, through
DUMP (byte for byte up to the replica's own clock readings, tests/unit/rdb/compare.py) and
the keys' deadlines."""

from __future__ import annotations

import time

import redis

from tests.unit.rdb.compare import assert_same_payload

DBS = (0, 2, 3)


def write_everything(port: int, start_ms: int = 1_000) -> None:
    """Writes through redis-py to the primary at `port` (Redis or Rill: the same commands)."""
    c = redis.Redis(port=port)
    c2 = redis.Redis(port=port, db=2)
    try:
        _streams(c, start_ms)
        _strings(c)
        _keys_and_expiry(c, c2)
        with c.pipeline(transaction=True) as p:
            p.set("tx-a", "1")
            p.xadd("s", {"tx": "yes"})
            p.incr("tx-a")
            p.xack("s", "g1", "1-0")
            p.execute()
        c2.xadd("s-db2", {"f": "v"}, id="5-5")
        c2.set("str-db2", "two")
        c.swapdb(2, 3)
        c.restore("restored", 0, c.dump("s"))
        c.restore("restored-ttl", 60_000, c.dump("a-string"))
        if "rill_version" not in c.info("server"):
            # Commands Rill's clients do not have but whose propagated form Rill applies:
            # INCRBYFLOAT goes to replicas as SET ... KEEPTTL.
            c.set("float", "1.5", px=100_000)
            c.incrbyfloat("float", 2.25)
    finally:
        c.close()
        c2.close()


def _streams(c: redis.Redis, start_ms: int) -> None:
    pipe = c.pipeline(transaction=False)
    for i in range(300):
        pipe.xadd("s", {"f": i, "g": "x" * (i % 50)}, id=f"{start_ms + i}-0")
    pipe.execute()
    c.xadd("s", {"auto": 1})
    c.xadd("s", {"a": 1}, maxlen=280, approximate=True)
    c.xadd("s", {"a": 2}, maxlen=290, approximate=False)
    c.xtrim("s", maxlen=200, approximate=True)
    c.xgroup_create("s", "g1", id="0")
    c.xgroup_create("s", "g2", id="$")
    c.xgroup_create("s", "g3", id=f"{start_ms + 150}-0")
    c.xreadgroup("g1", "alice", {"s": ">"}, count=50)
    c.xreadgroup("g1", "bob", {"s": ">"}, count=20, noack=True)
    c.xreadgroup("g3", "carol", {"s": ">"}, count=10)
    entries = [e[0] for e in c.xrange("s", count=60)]
    c.xack("s", "g1", entries[0], entries[1], entries[2])
    c.xclaim("s", "g1", "carol", 0, [entries[3], entries[4]])
    c.xautoclaim("s", "g1", "dave", 0, "0-0", count=5)
    c.xdel("s", entries[10], entries[11], entries[55])
    c.xautoclaim("s", "g1", "erin", 0, "0-0", count=20)  # meets the deleted pending entries
    c.xreadgroup("g1", "alice", {"s": ">"}, count=5)  # after a deletion: the read counter's estimate
    c.execute_command("XGROUP", "CREATECONSUMER", "s", "g2", "frank")
    c.execute_command("XGROUP", "DELCONSUMER", "s", "g1", "bob")
    c.execute_command("XGROUP", "SETID", "s", "g2", f"{start_ms + 20}-0", "ENTRIESREAD", "5")
    c.xadd("other", {"f": "v"}, id="1-1")
    c.xadd("other", {"f": "w"}, id="2-1")
    c.execute_command("XSETID", "other", "9-0", "ENTRIESADDED", "10", "MAXDELETEDID", "3-0")
    c.xgroup_create("empty", "g", id="$", mkstream=True)
    c.xgroup_create("gone", "g", id="$", mkstream=True)
    c.xgroup_destroy("gone", "g")


def _strings(c: redis.Redis) -> None:
    c.set("a-string", "some value here, longer than twenty bytes")
    c.set("n", "1")
    c.incr("n")
    c.incrby("n", 5)
    c.decr("n")
    c.decrby("n", 2)
    c.append("n", "0")
    c.set("ex", "v", ex=100)
    c.set("px", "v", px=100_000)
    c.execute_command("SETEX", "sx", 100, "v")
    c.execute_command("PSETEX", "psx", 100_000, "v")
    c.set("k", "v", nx=True)
    c.set("k", "w", xx=True, get=True)
    c.expire("k", 500)
    c.set("k", "z", keepttl=True)
    c.getex("sx", ex=200)
    c.getex("psx", persist=True)
    c.getdel("px")
    c.setnx("n1", "v")
    c.getset("n1", "w")
    c.mset({"m1": "1", "m2": "2"})
    c.msetnx({"m3": "3", "m4": "4"})


def _keys_and_expiry(c: redis.Redis, c2: redis.Redis) -> None:
    c.pexpire("m1", 100_000)
    c.expireat("m2", int(time.time()) + 1000)
    c.pexpireat("m3", int(time.time() * 1000) + 5000)
    c.persist("m3")
    c.rename("n1", "n2")
    c.renamenx("n2", "n3")
    c.copy("k", "k-copy")
    c.move("k-copy", 2)
    c.unlink("m4")
    c.delete("nothing-here", "m2")
    c.set("short", "v", px=20)
    c.xadd("short-stream", {"f": "v"}, id="1-1")
    c.pexpire("short-stream", 20)
    time.sleep(0.1)
    c.get("short")  # found expired: the primary deletes it and propagates a DEL
    c.xlen("short-stream")
    c2.set("to-flush", "x")
    c2.flushdb()


def assert_same_data(primary: int, replica: int, started_ms: int) -> None:
    """Every key of DBS on the replica is the primary's: the same DUMP, up to clock readings
    (both written as RDB 10: set `rdb-version 10` on a Rill side), and the same deadline."""
    now = int(time.time() * 1000)
    for db in DBS:
        with redis.Redis(port=primary, db=db) as p, redis.Redis(port=replica, db=db) as r:
            keys = sorted(p.keys("*"))
            assert sorted(r.keys("*")) == keys, f"db {db}"
            for key in keys:
                try:
                    assert_same_payload(r.dump(key), p.dump(key), started_ms - 1000, now + 1000)
                except AssertionError as exc:
                    raise AssertionError(f"db {db} key {key!r}: {exc}") from None
                assert r.pexpiretime(key) == p.pexpiretime(key), (db, key)
