"""The replication link's security at the node level: replicas authenticate with masterauth
against the primary's requirepass (both when discovering its replication port and in the
gRPC handshake), and `repl-tls` puts the link under TLS with the configured certificates."""

from __future__ import annotations

import os

from tests.conftest import Server
from tests.replication.test_tls import self_signed
from tests.replication_node.nodes import digest, info, start_node, wait_until


def _link(replica: Server) -> str:
    return info(replica)["master_link_status"]


def test_replicas_authenticate_with_masterauth_and_a_wrong_secret_keeps_the_link_down(started: list[Server]) -> None:
    primary = start_node("--requirepass", "s3cret")
    started.append(primary)
    good = start_node("--masterauth", "s3cret", replicaof=primary)
    started.append(good)
    bad = start_node("--masterauth", "wrong", replicaof=primary)
    started.append(bad)
    with primary.client(password="s3cret", protocol=2) as c:
        c.execute_command("XADD", "s", "*", "f", "v")
        wait_until(lambda: c.execute_command("WAIT", 1, 100) == 1, "the authenticated replica to ack")
    assert _link(good) == "up"
    # The bad replica's first attempt may come after the good one's ack: wait for it.
    wait_until(lambda: "WRONGPASS" in bad.log or "invalid username-password" in bad.log,
               "the replica with the wrong secret to be refused")
    assert _link(bad) == "down"


def test_the_link_runs_over_tls_with_the_configured_certificates(started: list[Server], tmp_path: object) -> None:
    base = str(tmp_path)
    files: dict[str, str] = {}
    for name in ("primary", "replica", "stranger"):
        pem = self_signed(name)
        for kind, data in (("crt", pem.cert), ("key", pem.key)):
            path = os.path.join(base, f"{name}.{kind}")
            with open(path, "wb") as f:
                f.write(data)
            files[f"{name}.{kind}"] = path
    tls = ["--repl-tls", "yes"]
    primary = start_node(*tls, "--repl-tls-cert-file", files["primary.crt"], "--repl-tls-key-file", files["primary.key"],
                         "--repl-tls-auth-clients", "yes", "--repl-tls-ca-cert-file", files["replica.crt"])
    started.append(primary)
    trusted = start_node(*tls, "--repl-tls-cert-file", files["replica.crt"], "--repl-tls-key-file", files["replica.key"],
                         "--repl-tls-ca-cert-file", files["primary.crt"], replicaof=primary)
    started.append(trusted)
    # Trusts the primary, but its own certificate is not signed by the CA the primary requires.
    stranger = start_node(*tls, "--repl-tls-cert-file", files["stranger.crt"], "--repl-tls-key-file", files["stranger.key"],
                          "--repl-tls-ca-cert-file", files["primary.crt"], replicaof=primary)
    started.append(stranger)
    with primary.client(protocol=2) as c:
        c.execute_command("XADD", "s", "*", "f", "v")
        wait_until(lambda: c.execute_command("WAIT", 1, 100) == 1, "the TLS replica to ack")
    wait_until(lambda: digest(trusted) == digest(primary), "the TLS replica to have the data")
    assert _link(stranger) == "down"
    assert info(primary)["connected_slaves"] == "1"
