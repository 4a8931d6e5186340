"""deploy/compose.yaml with its TLS profile (deploy/compose.tls.yaml) on a real Docker engine:
the certificates are made at the first start and kept, every node and sentinel answers TLS
only on its usual port, writes replicate over TLS, the sentinels know every node and each
other, and a SENTINEL FAILOVER hands the primary's role over, all through TLS."""

from __future__ import annotations

import os
import socket
import tempfile
import time

import pytest
import redis

from tests.deploy.project import NODES, SENTINELS, Project

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

FAILOVER_S = 300.0


def _ca(project: Project) -> str:
    path = os.path.join(tempfile.mkdtemp(prefix="rill-tls-ca-"), "ca.crt")
    pem = project.engine.docker("exec", project.container("primary"), "cat", "/tls/ca.crt").stdout
    with open(path, "w") as f:
        f.write(pem)
    return path


def _client(project: Project, service: str, ca: str, port: int = 6379) -> redis.Redis:
    password = project.password if service in NODES else None
    return redis.Redis(host="127.0.0.1", port=project.port(service, port), password=password, ssl=True,
                       ssl_ca_certs=ca, ssl_check_hostname=False, socket_timeout=10, decode_responses=True)


def _until(what: str, ready: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not ready():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f} s: {what}")
        time.sleep(0.5)


def test_the_certificates_are_made_once_and_every_port_is_tls_only(tls_project: Project) -> None:
    logs = tls_project.compose("logs", "tls-certs")
    assert "made /tls/{ca,node,client}.crt for primary replica-1 replica-2 sentinel-1 sentinel-2 sentinel-3" in logs
    # A second run keeps them (its output is the run's own: `logs` shows the service's first
    # container only, not a removed one-off).
    again = tls_project.compose("run", "--rm", "-T", "tls-certs")
    assert "keeping the certificates" in again, again
    ca = _ca(tls_project)
    for service in (*NODES, *SENTINELS):
        assert tls_project.health(service) == "healthy"
        port = 6379 if service in NODES else 26379
        assert _client(tls_project, service, ca, port).ping()
        # The same port in plain text gets no answer it could read.
        with socket.create_connection(("127.0.0.1", tls_project.port(service, port)), timeout=10) as plain:
            plain.sendall(b"PING\r\n")
            plain.settimeout(5)
            try:
                answer = plain.recv(100)
            except OSError:
                answer = b""
            assert not answer.startswith((b"+PONG", b"-NOAUTH")), service


def test_writes_replicate_and_a_failover_works_over_tls(tls_project: Project) -> None:
    ca = _ca(tls_project)
    primary = _client(tls_project, "primary", ca)
    ids = [primary.xadd("orders", {"item": f"book-{i}"}) for i in range(10)]
    assert primary.wait(2, 10_000) == 2
    for replica in ("replica-1", "replica-2"):
        assert [entry for entry, _ in _client(tls_project, replica, ca).xrange("orders")] == ids
    sentinel = _client(tls_project, "sentinel-1", ca, 26379)

    def settled() -> bool:
        master = sentinel.execute_command("SENTINEL", "MASTER", "rill")
        return int(master["num-slaves"]) == 2 and int(master["num-other-sentinels"]) == 2

    _until("the sentinels to know every node and each other", settled, 120)
    assert sentinel.execute_command("SENTINEL", "FAILOVER", "rill") == "OK"

    def moved() -> bool:
        return sentinel.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "rill")[0] != "primary"

    _until("the failover", moved, FAILOVER_S)
    new = sentinel.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "rill")[0]
    client = _client(tls_project, new, ca)
    _until(f"{new} to be a master", lambda: client.execute_command("ROLE")[0] == "master", FAILOVER_S)
    assert [entry for entry, _ in client.xrange("orders")] == ids
    client.xadd("orders", {"item": "after"})
