"""Client TLS on a node, with Redis's directives: a TLS port beside the plain one or alone
(`port 0`), redis-cli --tls and redis-py ssl=True, client certificates (tls-auth-clients
yes/optional/no), tls-protocols, tls-ciphersuites, certificates reloaded by CONFIG SET (and
a bad one refused, the old one kept), a bad certificate refusing start-up, and a handshake
that never completes costing what an idle plaintext client costs: a client slot, closed by
`timeout`. Where redis-server has the same feature, it runs beside and answers the same."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import pytest
import redis

from bench.procs import free_port
from bench.tls_certs import TlsFiles, make_tls_files, server_args
from tests.conftest import ROOT, Server, start_redis, start_rill, wait_for_port


@pytest.fixture(scope="module")
def files() -> Iterator[TlsFiles]:
    d = tempfile.mkdtemp(prefix="rill-tls-")
    yield make_tls_files(d)
    shutil.rmtree(d, ignore_errors=True)


def _tls_client(port: int, files: TlsFiles, *, cert: bool = False, **kwargs: object) -> redis.Redis:
    extra: dict[str, object] = {"ssl_certfile": files.client_cert, "ssl_keyfile": files.client_key} if cert else {}
    extra.update(kwargs)
    return redis.Redis(host="127.0.0.1", port=port, ssl=True, ssl_ca_certs=files.ca, socket_timeout=10, **extra)  # type: ignore[arg-type]


def _cli(port: int, files: TlsFiles, *args: str, cert: bool = False) -> subprocess.CompletedProcess[str]:
    tls = ["--tls", "--cacert", files.ca] + (["--cert", files.client_cert, "--key", files.client_key] if cert else [])
    return subprocess.run(["redis-cli", "-p", str(port), *tls, *args], capture_output=True, text=True, timeout=20)


def _handshake(port: int, context: ssl.SSLContext) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    return context.wrap_socket(raw, server_hostname="localhost")


def _client_context(files: TlsFiles, *, cert: str | None = None, key: str | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=files.ca)
    if cert and key:
        context.load_cert_chain(cert, key)
    return context


@pytest.fixture
def tls_pair(files: TlsFiles) -> Iterator[tuple[Server, int, Server, int]]:
    """A Rill node and a redis-server, each with a plain and a TLS port (no client
    certificates required)."""
    rill_tls, redis_tls = free_port(), free_port()
    rill = start_rill(*server_args(files, rill_tls))
    oracle = start_redis(*server_args(files, redis_tls))
    yield rill, rill_tls, oracle, redis_tls
    rill.stop()
    oracle.stop()


def test_a_tls_port_beside_the_plain_one_serves_redis_cli_and_redis_py(
    files: TlsFiles, tls_pair: tuple[Server, int, Server, int]
) -> None:
    rill, rill_tls, oracle, redis_tls = tls_pair
    for port in (rill_tls, redis_tls):
        done = _cli(port, files, "XADD", "orders", "1-1", "f", "v")
        assert done.stdout.strip() == "1-1", done.stderr
        client = _tls_client(port, files)
        assert client.ping() is True
        assert client.xrange("orders") == [(b"1-1", {b"f": b"v"})]
        client.close()
    assert rill.client().xlen("orders") == 1  # the plain port sees the same data
    for port in (rill.port, oracle.port):
        plain = socket.create_connection(("127.0.0.1", port), timeout=5)
        plain.sendall(b"PING\r\n")
        assert plain.recv(100) == b"+PONG\r\n"
        plain.close()
    # Both servers show the same TLS settings and listeners.
    for name in ("tls-port", "tls-auth-clients", "tls-protocols", "tls-replication", "tls-session-caching",
                 "tls-session-cache-size", "tls-session-cache-timeout", "tls-prefer-server-ciphers", "tls-ciphers",
                 "tls-ciphersuites", "tls-cert-file", "tls-ca-cert-dir", "tls-key-file-pass", "tls-cluster"):
        ours = rill.client().config_get(name)[name]
        theirs = oracle.client().config_get(name)[name]
        if name == "tls-port":
            assert (ours, theirs) == (str(rill_tls), str(redis_tls))
        else:
            assert ours == theirs, name
    ours = rill.client().info("server")
    assert ours["listener2"] == {"name": "tls", "bind": "127.0.0.1", "port": rill_tls}


def test_tls_replies_are_the_same_bytes_as_redis_servers(files: TlsFiles, tls_pair: tuple[Server, int, Server, int]) -> None:
    _, rill_tls, _, redis_tls = tls_pair
    context = _client_context(files)
    replies = []
    for port in (rill_tls, redis_tls):
        conn = _handshake(port, context)
        conn.sendall(b"*5\r\n$4\r\nXADD\r\n$1\r\ns\r\n$3\r\n5-1\r\n$1\r\na\r\n$1\r\nb\r\n"
                     b"*2\r\n$4\r\nXLEN\r\n$1\r\ns\r\n*2\r\n$3\r\nGET\r\n$1\r\ns\r\n*1\r\n$4\r\nQUIT\r\n")
        data = b""
        while True:
            chunk = conn.recv(4096)
            if not chunk:
                break
            data += chunk
        conn.close()
        replies.append(data)
    assert replies[0] == replies[1]
    assert replies[0].startswith(b"$3\r\n5-1\r\n:1\r\n-WRONGTYPE")


def test_port_0_serves_tls_only(files: TlsFiles) -> None:
    tls_port, plain = free_port(), free_port()
    d = tempfile.mkdtemp(prefix="rill-tls-only-")
    args = [sys.executable, "-m", "node.main", "node", "--port", "0", "--dir", d, "--logfile", os.path.join(d, "log"),
            "--repl-port", str(free_port()), *server_args(files, tls_port)]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(tls_port, proc, timeout=30)
        client = _tls_client(tls_port, files)
        info = client.info("server")
        assert info["tcp_port"] == 0 and "listener0" not in info and info["listener2"]["port"] == tls_port
        client.close()
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", plain), timeout=1).close()
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(d, ignore_errors=True)


def test_no_port_at_all_is_refused_as_redis_refuses_it(tmp_path: object) -> None:
    done = subprocess.run([sys.executable, "-m", "node.main", "node", "--port", "0", "--dir", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1
    assert "Configured to not listen anywhere, exiting." in done.stdout + done.stderr


@pytest.mark.parametrize("mode", ["yes", "optional", "no"])
def test_client_certificates_follow_tls_auth_clients(files: TlsFiles, mode: str) -> None:
    tls_port = free_port()
    node = start_rill(*server_args(files, tls_port, auth_clients=mode))
    try:
        outcomes = {}
        for who, (cert, key) in {
            "none": (None, None), "ours": (files.client_cert, files.client_key),
            "stranger": (files.stranger_cert, files.stranger_key),
        }.items():
            try:
                conn = _handshake(tls_port, _client_context(files, cert=cert, key=key))
                conn.sendall(b"PING\r\n")
                outcomes[who] = conn.recv(100) == b"+PONG\r\n"
                conn.close()
            except (ssl.SSLError, OSError):
                outcomes[who] = False
        expected = {"yes": {"none": False, "ours": True, "stranger": False},
                    "optional": {"none": True, "ours": True, "stranger": False},
                    "no": {"none": True, "ours": True, "stranger": True}}[mode]
        assert outcomes == expected
        assert _cli(tls_port, files, "PING", cert=True).stdout.strip() == "PONG"
    finally:
        node.stop()


def test_tls_protocols_and_ciphersuites_limit_what_is_negotiated(files: TlsFiles) -> None:
    tls_port = free_port()
    node = start_rill(*server_args(files, tls_port), "--tls-protocols", "TLSv1.3",
                      "--tls-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256")
    try:
        tls12 = _client_context(files)
        tls12.maximum_version = ssl.TLSVersion.TLSv1_2
        with pytest.raises((ssl.SSLError, OSError)):
            _handshake(tls_port, tls12).close()
        conn = _handshake(tls_port, _client_context(files))
        assert conn.version() == "TLSv1.3"
        cipher = conn.cipher()
        assert cipher is not None and cipher[0] == "TLS_CHACHA20_POLY1305_SHA256"
        conn.close()
        client = node.client()
        with pytest.raises(redis.ResponseError, match="Unable to update TLS configuration. Check server logs."):
            client.config_set("tls-protocols", "TLSv1.4")
        assert client.config_get("tls-protocols") == {"tls-protocols": "TLSv1.3"}
        client.config_set("tls-protocols", "TLSv1.2 TLSv1.3")
        client.close()
        conn = _handshake(tls_port, tls12)
        assert conn.version() == "TLSv1.2"
        conn.close()
    finally:
        node.stop()


def _server_cert_serial(port: int, files: TlsFiles) -> int:
    conn = _handshake(port, _client_context(files))
    der = conn.getpeercert(binary_form=True)
    conn.close()
    from cryptography import x509

    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def test_config_set_reloads_certificates_and_keeps_the_old_ones_on_error(files: TlsFiles) -> None:
    d = tempfile.mkdtemp(prefix="rill-tls-reload-")
    try:
        cert, key = os.path.join(d, "server.crt"), os.path.join(d, "server.key")
        shutil.copy(files.cert, cert)
        shutil.copy(files.key, key)
        tls_port = free_port()
        node = start_rill("--tls-port", str(tls_port), "--tls-cert-file", cert, "--tls-key-file", key,
                          "--tls-ca-cert-file", files.ca, "--tls-auth-clients", "no")
        try:
            before = _server_cert_serial(tls_port, files)
            renewed = make_tls_files(os.path.join(d, "renewed"))
            # The renewed certificate comes from another CA; the clients trust that one now.
            shutil.copy(renewed.cert, cert)
            shutil.copy(renewed.key, key)
            client = node.client()
            assert client.config_set("tls-cert-file", cert) is True  # the same path: read again
            after = _server_cert_serial(tls_port, TlsFiles(**{**files.__dict__, "ca": renewed.ca}))
            assert after != before
            with open(cert, "w") as f:
                f.write("not a certificate\n")
            with pytest.raises(redis.ResponseError) as refused:
                client.config_set("tls-cert-file", cert)
            assert str(refused.value) == (
                "CONFIG SET failed (possibly related to argument 'tls-cert-file') - "
                "Unable to update TLS configuration. Check server logs.")
            # The running configuration is still the renewed one.
            assert _server_cert_serial(tls_port, TlsFiles(**{**files.__dict__, "ca": renewed.ca})) == after
            with pytest.raises(redis.ResponseError):
                client.config_set("tls-key-file", files.cert)
            client.close()
            assert "Failed to update TLS configuration: Failed to load certificate" in node.log
        finally:
            node.stop()
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize(
    "change,message",
    [
        (("--tls-cert-file", "/nonexistent/cert.pem"), "Failed to load certificate: /nonexistent/cert.pem"),
        (("--tls-key-file", "/nonexistent/key.pem"), "Failed to load private key: /nonexistent/key.pem"),
        (("--tls-ca-cert-file", "/nonexistent/ca.pem"), "Failed to configure CA certificate(s) file/directory"),
        (("--tls-protocols", "SSLv3"), "Invalid tls-protocols specified."),
        (("--tls-ciphersuites", "NOT_A_SUITE"), "Failed to configure ciphersuites: NOT_A_SUITE"),
        (("--tls-cert-file", ""), "No tls-cert-file configured!"),
    ],
    ids=["cert", "key", "ca", "protocols", "ciphersuites", "no-cert"],
)
def test_a_bad_tls_configuration_refuses_start_up_with_its_reason(
    files: TlsFiles, change: tuple[str, str], message: str
) -> None:
    args = server_args(files, free_port())
    flag, value = change
    if flag in args:
        args[args.index(flag) + 1] = value
    else:
        args += [flag, value]
    d = tempfile.mkdtemp(prefix="rill-tls-bad-")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "node.main", "node", "--port", str(free_port()), "--dir", d, *args],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
        )
    finally:
        shutil.rmtree(d, ignore_errors=True)
    assert done.returncode == 1
    out = done.stdout + done.stderr
    assert "Failed to configure TLS: " + message in out, out


def _refused_for_maxclients(port: int) -> bool:
    conn = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        conn.sendall(b"PING\r\n")
        return conn.recv(100) == b"-ERR max number of clients reached\r\n"
    finally:
        conn.close()


def test_a_handshake_that_never_completes_costs_what_an_idle_plaintext_client_costs(files: TlsFiles) -> None:
    """Each stalled handshake takes one client slot (maxclients counts it, as an idle plain
    client), and `timeout` closes it as it closes an idle plain client; the node keeps
    answering meanwhile."""
    tls_port = free_port()
    node = start_rill(*server_args(files, tls_port), "--maxclients", "4", "--timeout", "2")
    stalled: list[socket.socket] = []
    try:
        watcher = node.client()
        assert watcher.ping()
        # Three TLS clients that send half a ClientHello and stop.
        for _ in range(3):
            s = socket.create_connection(("127.0.0.1", tls_port), timeout=5)
            s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
            stalled.append(s)
        deadline = time.monotonic() + 10
        while watcher.info("clients")["connected_clients"] < 4:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert _refused_for_maxclients(node.port)  # 4 of 4: one plain + three handshakes
        # `timeout 2`: the stalled handshakes are idle clients, closed after 2 s; the
        # watcher, which keeps talking, stays.
        started = time.monotonic()
        while watcher.info("clients")["connected_clients"] > 1:
            assert time.monotonic() - started < 10, "stalled handshakes were not closed"
            time.sleep(0.1)
        assert time.monotonic() - started >= 1.0
        for s in stalled:
            s.settimeout(5)
            assert s.recv(100) == b""  # closed by the node
        client = _tls_client(tls_port, files)
        assert client.ping()
        client.close()
        watcher.close()
    finally:
        for s in stalled:
            s.close()
        node.stop()


def test_an_idle_plaintext_client_is_closed_by_timeout_as_in_redis() -> None:
    node = start_rill("--timeout", "1")
    oracle = start_redis("--timeout", "1")
    try:
        for port in (node.port, oracle.port):
            idle = socket.create_connection(("127.0.0.1", port), timeout=10)
            idle.sendall(b"PING\r\n")
            assert idle.recv(100) == b"+PONG\r\n"
            started = time.monotonic()
            assert idle.recv(100) == b""
            assert 0.9 <= time.monotonic() - started < 8
            idle.close()
    finally:
        node.stop()
        oracle.stop()
