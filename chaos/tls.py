"""The lab's TLS (`--tls`, the `tls` setting): nodes and sentinels serve TLS only (`port 0`, their
usual port number as `tls-port`, `tls-replication yes` so that replicas and sentinels reach the
nodes, and the sentinels each other, over TLS; clients must present a certificate:
`tls-auth-clients yes`), and every client of the lab (workload, monitor, nemesis, final reads)
connects with TLS, checking the server's certificate and its address.

The certificates are made for the run by deploy/tls-certs.sh (the compose deployment's
rill-tls-certs, with openssl) in the run's working directory, which is deleted with it: a CA,
one certificate for every node and sentinel whose subject alternative names are their
addresses, and a client certificate. Toxiproxy forwards TCP, so TLS crosses the proxies
unchanged and every fault works the same.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

from chaos.topology import LabError

CERTS_SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "deploy", "tls-certs.sh")


@dataclass(frozen=True)
class TlsFiles:
    ca: str
    cert: str  # the nodes' and sentinels' certificate (also presented as a client: replicas, sentinels)
    key: str
    client_cert: str  # the lab's clients'
    client_key: str

    def server_directives(self, port: int) -> list[tuple[str, str]]:
        """A node's or sentinel's config lines: TLS only, on `port`."""
        return [("port", "0"), ("tls-port", str(port)), ("tls-cert-file", self.cert), ("tls-key-file", self.key),
                ("tls-ca-cert-file", self.ca), ("tls-auth-clients", "yes"), ("tls-replication", "yes")]

    def client_kwargs(self) -> dict[str, Any]:
        """redis-py's keywords of a TLS client (an SSLConnection's; redis.Redis and a
        Sentinel's sentinel_kwargs take them with `ssl=True`)."""
        return {"ssl_ca_certs": self.ca, "ssl_certfile": self.client_cert, "ssl_keyfile": self.client_key,
                "ssl_check_hostname": True}


def make_tls_files(directory: str, addresses: list[str]) -> TlsFiles:
    """A CA, the servers' certificate for `addresses` and a client certificate, in `directory`."""
    if not os.path.exists(CERTS_SCRIPT):
        raise LabError(f"--tls makes its certificates with {CERTS_SCRIPT}, which is missing (run the lab from "
                       "Rill's source tree)")
    if shutil.which("openssl") is None:
        raise LabError("--tls makes its certificates with openssl, which is not installed")
    os.makedirs(directory, exist_ok=True)
    done = subprocess.run(["sh", CERTS_SCRIPT, directory, *addresses], capture_output=True, text=True, timeout=60,
                          check=False)
    if done.returncode != 0:
        raise LabError(f"making the run's certificates failed: {(done.stderr or done.stdout).strip()}")
    path = os.path.join
    return TlsFiles(path(directory, "ca.crt"), path(directory, "node.crt"), path(directory, "node.key"),
                    path(directory, "client.crt"), path(directory, "client.key"))

