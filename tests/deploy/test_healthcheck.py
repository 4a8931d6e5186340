"""deploy/healthcheck.py (the image's `rill-healthcheck`) against local Rill nodes: healthy
means PING answered and, on a replica, a live link to its primary; the password comes from
RILL_PASSWORD. No Docker needed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from bench.procs import free_port
from tests.conftest import Server, start_rill
from tests.deploy.project import ROOT

SCRIPT = os.path.join(ROOT, "deploy", "healthcheck.py")
PASSWORD = "s3cret"


def _check(port: int, password: str | None, *flags: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "RILL_PASSWORD"}
    if password is not None:
        env["RILL_PASSWORD"] = password
    return subprocess.run([sys.executable, SCRIPT, "--port", str(port), *flags], env=env, capture_output=True,
                          text=True, timeout=30)


def _until_exit_code(port: int, code: int, *flags: str) -> subprocess.CompletedProcess[str]:
    deadline = time.monotonic() + 30
    while (done := _check(port, PASSWORD, *flags)).returncode != code:
        assert time.monotonic() < deadline, f"still {done.returncode}: {done.stdout}"
        time.sleep(0.2)
    return done


@pytest.fixture
def pair() -> Iterator[tuple[Server, Server]]:
    primary = start_rill("--requirepass", PASSWORD)
    replica = start_rill("--requirepass", PASSWORD, "--masterauth", PASSWORD, "--replicaof", "127.0.0.1",
                         str(primary.port))
    yield primary, replica
    replica.stop()
    primary.stop()


def test_a_primary_and_a_linked_replica_are_healthy(pair: tuple[Server, Server]) -> None:
    primary, replica = pair
    assert _check(primary.port, PASSWORD).returncode == 0
    _until_exit_code(replica.port, 0)


def test_a_wrong_or_missing_password_is_unhealthy(pair: tuple[Server, Server]) -> None:
    primary, _ = pair
    wrong = _check(primary.port, "nope")
    assert wrong.returncode == 1 and wrong.stdout.startswith("unhealthy: WRONGPASS")
    missing = _check(primary.port, None)
    assert missing.returncode == 1 and missing.stdout.startswith("unhealthy: NOAUTH")


def test_a_replica_whose_primary_is_gone_is_unhealthy(pair: tuple[Server, Server]) -> None:
    primary, replica = pair
    _until_exit_code(replica.port, 0)
    primary.kill()
    done = _until_exit_code(replica.port, 1)
    assert f"replica of 127.0.0.1:{primary.port}, link down" in done.stdout
    # A sentinel's check is PING alone.
    assert _check(replica.port, PASSWORD, "--sentinel").returncode == 0


def test_nothing_listening_is_unhealthy() -> None:
    done = _check(free_port(), PASSWORD)
    assert done.returncode == 1 and done.stdout.startswith("unhealthy: ")


def test_the_health_check_speaks_tls_when_given_the_ca(tmp_path: object) -> None:
    from bench.tls_certs import make_tls_files, server_args

    files = make_tls_files(str(tmp_path))
    tls_port = free_port()
    node = start_rill("--requirepass", PASSWORD, *server_args(files, tls_port))
    try:
        env = {**{k: v for k, v in os.environ.items() if k != "RILL_PASSWORD"}, "RILL_PASSWORD": PASSWORD}
        plain = subprocess.run([sys.executable, SCRIPT, "--port", str(tls_port)], env=env, capture_output=True,
                               text=True, timeout=30)
        assert plain.returncode == 1
        env["RILL_TLS_CA_CERT_FILE"] = files.ca
        done = subprocess.run([sys.executable, SCRIPT, "--port", str(tls_port)], env=env, capture_output=True,
                              text=True, timeout=30)
        assert done.returncode == 0, done.stdout
        env["RILL_TLS_CA_CERT_FILE"] = files.other_ca  # a server the CA did not sign is not healthy
        refused = subprocess.run([sys.executable, SCRIPT, "--port", str(tls_port)], env=env, capture_output=True,
                                 text=True, timeout=30)
        assert refused.returncode == 1 and "unhealthy" in refused.stdout
    finally:
        node.stop()


def test_tls_certs_makes_a_ca_signed_set_once(tmp_path: object) -> None:
    directory = str(tmp_path)
    script = os.path.join(ROOT, "deploy", "tls-certs.sh")
    first = subprocess.run(["sh", script, directory, "primary", "sentinel-1", "10.7.0.2"], capture_output=True,
                           text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    for name in ("node", "client"):
        verified = subprocess.run(["openssl", "verify", "-CAfile", os.path.join(directory, "ca.crt"),
                                   os.path.join(directory, f"{name}.crt")], capture_output=True, text=True)
        assert verified.returncode == 0, verified.stdout + verified.stderr
    text = subprocess.run(["openssl", "x509", "-noout", "-ext", "subjectAltName", "-in",
                           os.path.join(directory, "node.crt")], capture_output=True, text=True).stdout
    assert "DNS:primary" in text and "DNS:sentinel-1" in text and "IP Address:127.0.0.1" in text
    assert "IP Address:10.7.0.2" in text  # an address name is an IP name (what a client checks an address against)
    assert not os.path.exists(os.path.join(directory, "ca.key"))  # nothing can sign more
    assert oct(os.stat(os.path.join(directory, "node.key")).st_mode & 0o777) == "0o600"
    with open(os.path.join(directory, "ca.crt")) as f:
        ca = f.read()
    again = subprocess.run(["sh", script, directory, "other"], capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and "keeping the certificates" in again.stdout
    with open(os.path.join(directory, "ca.crt")) as f:
        assert f.read() == ca
