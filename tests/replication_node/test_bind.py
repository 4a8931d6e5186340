"""`bind` with several addresses: a node serves RESP and replication on every one of them,
so a replica may be pointed at any of its primary's addresses (the chaos lab binds a node's
bridge address and its announced loopback address)."""

from __future__ import annotations

import redis

from tests.conftest import Server
from tests.replication_node.nodes import info, start_node, stop_all, wait_synced


def test_a_node_bound_to_two_addresses_serves_clients_and_replicas_on_both() -> None:
    started: list[Server] = []
    try:
        # 127.0.0.1 second: the replica that dials it proves replication is not only served
        # on the first address.
        primary = start_node("--bind", "127.0.0.2", "127.0.0.1")
        started.append(primary)
        for host in ("127.0.0.2", "127.0.0.1"):
            with redis.Redis(host=host, port=primary.port) as c:
                assert c.config_get("bind") == {"bind": "127.0.0.2 127.0.0.1"}
        via_first = start_node()
        via_second = start_node()
        started += [via_first, via_second]
        for replica, host in ((via_first, "127.0.0.2"), (via_second, "127.0.0.1")):
            with replica.client() as c:
                c.execute_command("REPLICAOF", host, primary.port)
        with primary.client() as c:
            c.xadd("s", {"k": "v"})
        wait_synced(primary, via_first, via_second)
        assert [info(r)["master_host"] for r in (via_first, via_second)] == ["127.0.0.2", "127.0.0.1"]
        for replica in (via_first, via_second):
            with replica.client() as c:
                assert c.xlen("s") == 1
    finally:
        stop_all(started)
