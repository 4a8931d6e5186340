"""`rill cluster` (what `make run` starts): a primary and two replicas on consecutive loopback
ports that replicate, and that all stop on Ctrl-C; with sentinels watching them, and with every
process serving its metrics."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import redis

from tests.conftest import ROOT


def _consecutive_free_ports(n: int) -> int:
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = int(s.getsockname()[1])
        if base + n - 1 > 55000:  # leave room for the replication ports (+10000)
            continue
        ok = True
        for p in list(range(base, base + n)) + list(range(base + 10000, base + 10000 + n)):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise RuntimeError("no free consecutive ports")


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def test_cluster_replicates_and_stops_every_node_on_ctrl_c() -> None:
    base = _consecutive_free_ports(3)
    proc = subprocess.Popen(
        [sys.executable, "-m", "node.main", "cluster", "--port", str(base)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 30
        lines = []
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            lines.append(line)
            if line.startswith("Try:") or not line:
                break
        assert any("Rill local cluster: 1 primary, 2 replica(s)" in line for line in lines), lines
        primary = redis.Redis(port=base)
        replica = redis.Redis(port=base + 1)
        entry = primary.xadd("orders", {"item": "book"})
        assert primary.execute_command("WAIT", 2, 5000) == 2
        assert replica.xrange("orders") == [(entry, {b"item": b"book"})]
        primary.close()
        replica.close()
        # Ctrl-C reaches the cluster's process group (the nodes run in sessions of their own).
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(20) == 0
        assert not any(_listening(p) for p in (base, base + 1, base + 2))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return str(response.read().decode())


def test_cluster_with_sentinels_prints_them_and_they_watch_the_primary() -> None:
    base = _consecutive_free_ports(3)
    sentinel_base = _consecutive_free_ports(3)
    metrics_base = _consecutive_free_ports(6)
    proc = subprocess.Popen(
        [sys.executable, "-m", "node.main", "cluster", "--port", str(base), "--sentinels", "3",
         "--sentinel-port", str(sentinel_base), "--metrics-port", str(metrics_base)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 40
        lines = []
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            lines.append(line)
            if line.startswith("Try:") or not line:
                break
        text = "".join(lines)
        assert "1 primary, 2 replica(s), 3 sentinel(s)" in text, text
        for port in range(sentinel_base, sentinel_base + 3):
            assert f"127.0.0.1:{port}" in text and f"(primary 127.0.0.1:{base})" in text
            sentinel = redis.Redis(port=port, decode_responses=True)
            assert sentinel.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "rill") == ["127.0.0.1", str(base)]
            # Each starts knowing the other two.
            assert len(sentinel.execute_command("SENTINEL", "SENTINELS", "rill")) == 2
            sentinel.close()
        # The nodes' metrics on the first three metrics ports, the sentinels' on the next.
        roles = []
        for port in range(metrics_base, metrics_base + 6):
            assert f"http://127.0.0.1:{port}/metrics" in text
            body = _scrape(port)
            if port < metrics_base + 3:
                roles += [line for line in body.splitlines() if line.startswith("rill_role{") and line.endswith(" 1.0")]
            else:
                # Each sentinel says where the primary is.
                assert any(line.startswith("rill_sentinel_master_address{") and f'"127.0.0.1:{base}"' in line
                           and line.endswith(" 1.0") for line in body.splitlines()), body
        assert sorted(roles) == ['rill_role{role="master"} 1.0', 'rill_role{role="slave"} 1.0', 'rill_role{role="slave"} 1.0']
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(20) == 0
        ports = list(range(base, base + 3)) + list(range(sentinel_base, sentinel_base + 3))
        ports += list(range(metrics_base, metrics_base + 6))
        assert not any(_listening(p) for p in ports)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
