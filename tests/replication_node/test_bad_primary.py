"""A replica pointed at something that is not a usable Rill primary stays down with the
reason in its log and INFO, keeps serving its data, and comes up once pointed at a real one.
(Garbage on the gRPC link itself is covered by tests/replication.)"""

from __future__ import annotations

from tests.conftest import Server, free_port, start_redis
from tests.replication_node.nodes import info, raw_client, start_node, wait_synced, wait_until


def test_a_replica_of_a_closed_port_stays_down_and_recovers_when_repointed(started: list[Server]) -> None:
    # (A redis-server is a primary like any other since issue 34: the node follows it over
    # Redis's replication protocol, tests/replication_node/test_redis_protocol.py.)
    oracle = start_redis()
    try:
        replica = start_node()
        started.append(replica)
        with raw_client(replica) as c:
            c.execute_command("SET", "kept", "yes")  # written while it was a primary
            closed = free_port()
            assert c.execute_command("REPLICAOF", "127.0.0.1", closed) == b"OK"
            wait_until(lambda: f"Error asking MASTER 127.0.0.1:{closed}" in replica.log, "the connection error")
            assert info(replica)["master_link_status"] == "down"
            assert c.execute_command("ROLE")[3] == b"connect"
            assert c.execute_command("GET", "kept") == b"yes"  # still serving its data

            assert c.execute_command("REPLICAOF", "127.0.0.1", oracle.port) == b"OK"
            wait_until(lambda: info(replica)["master_link_status"] == "up", "the link to the redis-server")
            assert c.execute_command("GET", "kept") is None  # the redis-server's (empty) data set

            closed = free_port()
            assert c.execute_command("REPLICAOF", "127.0.0.1", closed) == b"OK"
            wait_until(lambda: f"Error asking MASTER 127.0.0.1:{closed}" in replica.log, "the connection error")

            primary = start_node()
            started.append(primary)
            assert c.execute_command("REPLICAOF", "127.0.0.1", primary.port) == b"OK"
        wait_synced(primary, replica)
        with raw_client(replica) as c:
            assert c.execute_command("GET", "kept") is None  # the primary's data set replaced it
    finally:
        oracle.stop()
