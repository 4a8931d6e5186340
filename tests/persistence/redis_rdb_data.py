"""The data set of the Redis RDB tests: built by the same commands on a redis-server (whose
SAVE gives the dump.rdb Rill loads) and, for comparison, wherever a test needs it again.
make_rdb_fixture.py wrote data/redis-7.2.4.rdb from it (Redis 7.2, RDB 11: there is no 7.2
server in the suite), the tests build it live on Debian's 7.0.
"""

from __future__ import annotations

import redis

# A deadline far in the future (2100-01-01), so the fixture's keys keep theirs.
FAR_MS = 4102444800000


def build(r: redis.Redis) -> None:
    """Streams (several nodes, deletions, groups with PELs and consumers), strings, deadlines,
    a second database."""
    r.flushall()
    pipe = r.pipeline(transaction=False)
    for i in range(1, 501):
        pipe.xadd("orders", {"id": i, "item": f"item-{i % 7}", "qty": i % 5}, id=f"{1_000 + i}-0")
    for i in range(1, 31):
        pipe.xadd("events", {"kind": "click" if i % 2 else "view", "payload": "x" * (i * 10)}, id=f"{i}-{i}")
    pipe.execute()
    r.xdel("orders", "1001-0", "1250-0")
    r.xgroup_create("orders", "billing", id="0")
    r.xgroup_create("orders", "shipping", id="1100-0")
    r.xreadgroup("billing", "alice", {"orders": ">"}, count=120)
    r.xreadgroup("billing", "bob", {"orders": ">"}, count=30)
    r.xack("orders", "billing", "1002-0", "1003-0")
    r.xreadgroup("shipping", "carol", {"orders": ">"}, count=10)
    r.execute_command("XGROUP", "CREATECONSUMER", "orders", "shipping", "dave")
    r.set("greeting", "hello")
    r.set("counter", 42)
    r.set("blob", "z" * 1000)
    r.set("volatile", "v", pxat=FAR_MS)
    r.xadd("expiring", {"f": "v"}, id="1-1")
    r.pexpireat("expiring", FAR_MS)
    kwargs = r.connection_pool.connection_kwargs
    with redis.Redis(host=kwargs.get("host", "localhost"), port=kwargs["port"], db=3) as r3:
        r3.set("in-db-3", "three")
