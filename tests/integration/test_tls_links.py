"""TLS on every link of a cluster that listens on TLS only (`port 0`, `tls-replication yes`):
a replica finds its primary over TLS and replicates over the gRPC link with the same
certificates, `rill sentinel` and Debian's redis-sentinel reach the nodes (and each other)
over TLS, clients must present a certificate (tls-auth-clients yes), and a failover works."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis

from bench.cluster import Launcher
from bench.procs import free_port
from bench.tls_certs import make_tls_files
from tests.conformance.sentinel.procs import wait_until


class TlsCluster(Launcher):
    """Members that listen on TLS only, with certificates made for the test in the launcher's
    directory; ready once they listen (PING in the clear cannot reach them)."""

    def __init__(self) -> None:
        super().__init__(prefix="rill-tls-")
        self.files = make_tls_files(os.path.join(self.dir, "tls"))

    @property
    def ports(self) -> dict[str, int]:
        return {name: m.port for name, m in self.members.items()}

    def tls_lines(self, port: int) -> str:
        f = self.files
        return (f"port 0\ntls-port {port}\ntls-cert-file {f.cert}\ntls-key-file {f.key}\ntls-ca-cert-file {f.ca}\n"
                "tls-auth-clients yes\ntls-replication yes\nbind 127.0.0.1\n")

    def start(self, name: str, kind: str, conf: str) -> int:
        """A member of `kind` started from a config file of the TLS lines, its directory and
        log, and `conf`."""
        member = self.add(name, kind, ready="port")
        member.write_conf(self.tls_lines(member.port) + f"dir {member.dir}\nlogfile {member.logfile}\n" + conf)
        member.start()
        return member.port

    def node(self, name: str, extra: str = "") -> int:
        return self.start(name, "rill", f"repl-port {free_port()}\n" + extra)

    def client(self, name: str) -> redis.Redis:
        f = self.files
        return redis.Redis(port=self.ports[name], ssl=True, ssl_ca_certs=f.ca, ssl_certfile=f.client_cert,
                           ssl_keyfile=f.client_key, decode_responses=True, socket_timeout=10)

    def log(self, name: str) -> str:
        server = self.members[name].server
        return server.log if server is not None else ""


@pytest.fixture
def tls_cluster() -> Iterator[TlsCluster]:
    with TlsCluster() as c:
        yield c


def _sentinel_conf(master: int) -> str:
    return (f"sentinel monitor mymaster 127.0.0.1 {master} 1\nsentinel down-after-milliseconds mymaster 2000\n"
            "sentinel failover-timeout mymaster 10000\n")


def test_a_tls_only_cluster_replicates_and_fails_over_over_tls(tls_cluster: TlsCluster) -> None:
    c = tls_cluster
    primary = c.node("m")
    c.node("r", f"replicaof 127.0.0.1 {primary}\n")
    wait_until(lambda: c.client("r").info("replication")["master_link_status"] == "up", 60,
               f"the replica's TLS link\n{c.log('r')}")
    c.client("m").xadd("orders", {"n": "1"}, id="1-1")
    wait_until(lambda: c.client("r").xlen("orders") == 1, 30, "the write over the TLS link")
    # The primary lists the replica at its TLS port (the announced listening port).
    slave0 = c.client("m").info("replication")["slave0"]
    assert slave0["port"] == c.ports["r"] and slave0["state"] == "online"
    # A client without a certificate gets nothing.
    bare = redis.Redis(port=primary, ssl=True, ssl_ca_certs=c.files.ca, socket_timeout=5)
    with pytest.raises(redis.exceptions.ConnectionError):
        bare.ping()
    bare.close()
    c.start("s", "rill-sentinel", _sentinel_conf(primary))
    sentinel = c.client("s")

    def sees_replica() -> bool:
        # Seen, and suitable for SENTINEL FAILOVER as sentinelSelectSlave judges it (a recent
        # ping reply and INFO, its link to the master up): else FAILOVER answers NOGOODSLAVE,
        # as it once did here on a loaded machine.
        replicas = sentinel.execute_command("SENTINEL", "REPLICAS", "mymaster")
        if len(replicas) != 1:
            return False
        replica = replicas[0]
        return (replica["flags"] == "slave" and int(replica["port"]) == c.ports["r"]
                and replica["master-link-status"] == "ok" and int(replica["last-ok-ping-reply"]) < 1000
                and int(replica["info-refresh"]) < 10_000)

    wait_until(sees_replica, 60, f"the sentinel to discover the replica over TLS\n{c.log('s')}")
    assert sentinel.execute_command("SENTINEL", "FAILOVER", "mymaster") == "OK"
    wait_until(lambda: int(sentinel.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")[1])
               == c.ports["r"], 60, "the failover")
    wait_until(lambda: c.client("m").info("replication")["role"] == "slave", 60, "the old primary to follow")
    c.client("r").xadd("orders", {"n": "2"}, id="2-1")
    wait_until(lambda: c.client("m").xlen("orders") == 2, 60, "the new primary's write on the old one")
    sentinel.close()


def test_redis_sentinel_manages_rill_nodes_over_tls(tls_cluster: TlsCluster) -> None:
    c = tls_cluster
    primary = c.node("m")
    c.node("r", f"replicaof 127.0.0.1 {primary}\n")
    wait_until(lambda: c.client("r").info("replication")["master_link_status"] == "up", 60, "the replica's link")
    c.start("s", "redis-sentinel", _sentinel_conf(primary))
    sentinel = c.client("s")

    def healthy() -> bool:
        master = sentinel.execute_command("SENTINEL", "MASTER", "mymaster")
        replicas = sentinel.execute_command("SENTINEL", "REPLICAS", "mymaster")
        return master["flags"] == "master" and len(replicas) == 1 and replicas[0]["flags"] == "slave"

    wait_until(healthy, 60, "redis-sentinel to reach the Rill nodes over TLS")
    sentinel.close()
