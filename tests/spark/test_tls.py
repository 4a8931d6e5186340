"""The TLS options through real local Spark against Debian's redis-server speaking only TLS and
asking clients for a certificate (Rill's RESP port has no TLS): a `rediss://` url with
sslCaFile, sslCertFile and sslKeyFile reads and writes; without the client certificate the
server refuses the connection."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from tests.conftest import free_port, wait_for_port


def _openssl(*args: str, cwd: str) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def tls_server() -> Iterator[tuple[int, str]]:
    """(port, directory with ca.crt, client.crt, client.key)."""
    d = tempfile.mkdtemp(prefix="rill-tls-")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
             "-subj", "/CN=rill-test-ca", cwd=d)
    with open(os.path.join(d, "san"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    for name in ("server", "client"):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", f"/CN={name}", cwd=d)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{name}.crt", "-days", "2", *(["-extfile", "san"] if name == "server" else []), cwd=d)
    port = free_port()
    proc = subprocess.Popen(["redis-server", "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
                             "--tls-cert-file", "server.crt", "--tls-key-file", "server.key",
                             "--tls-ca-cert-file", "ca.crt", "--tls-auth-clients", "yes", "--save", "",
                             "--dir", d], cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc)  # type: ignore[arg-type]
        yield port, d
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(d, ignore_errors=True)


def test_tls_options_read_and_write(spark: Any, tls_server: tuple[int, str]) -> None:
    port, d = tls_server
    tls = {"sslCaFile": os.path.join(d, "ca.crt"), "sslCertFile": os.path.join(d, "client.crt"),
           "sslKeyFile": os.path.join(d, "client.key")}
    client = redis.Redis(host="127.0.0.1", port=port, ssl=True, ssl_ca_certs=tls["sslCaFile"],
                         ssl_certfile=tls["sslCertFile"], ssl_keyfile=tls["sslKeyFile"])
    with client:
        ids = [client.xadd("s", {"n": str(n)}).decode() for n in range(5)]
    url = f"rediss://127.0.0.1:{port}/0"
    read = spark.read.format("rill").option("url", url).option("streams", "s").options(**tls).load()
    assert sorted(r.id for r in read.select("id").collect()) == ids
    read.select("fields").write.format("rill").option("url", url).option("stream", "copy").options(**tls) \
        .mode("append").save()
    with client:
        assert client.xlen("copy") == 5
    without_certificate = {"sslCaFile": tls["sslCaFile"]}
    with pytest.raises(Exception, match="(?i)(ssl|certificate|connection)"):
        spark.read.format("rill").option("url", url).option("streams", "s").options(**without_certificate) \
            .option("failoverTimeoutMs", "1").load().collect()
