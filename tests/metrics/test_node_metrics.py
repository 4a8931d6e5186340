"""A node's Prometheus metrics (`--metrics-port`), scraped over HTTP from real node processes:
each figure moves with what clients, replicas and the AOF do."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Callable

import pytest

from tests.conftest import ROOT, Server, free_port, wait_for_port
from tests.metrics.scrape import Samples, labelled, scrape, value
from tests.replication_node.nodes import raw_client, start_node, stopped, wait_synced, wait_until


def metrics_node(started: list[Server], *flags: str, replicaof: Server | None = None) -> tuple[Server, int]:
    """A node serving its metrics on a free port: (node, metrics port)."""
    port = free_port()
    node = start_node("--metrics-port", str(port), *flags, replicaof=replicaof)
    started.append(node)
    wait_for_port(port, node.proc)  # served once the node is ready, just after its RESP port
    return node, port


def scrape_until(port: int, check: Callable[[Samples], bool], what: str) -> Samples:
    """Scrapes until `check` holds for a scrape (bounded); returns that scrape."""

    def attempt() -> Samples | None:
        samples = scrape(port)
        return samples if check(samples) else None

    return wait_until(attempt, what)


def delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return (value(after, name, **labels) or 0.0) - (value(before, name, **labels) or 0.0)


def test_commands_errors_and_keys_are_counted(started: list[Server]) -> None:
    node, port = metrics_node(started)
    before = scrape(port)
    with raw_client(node) as c:
        for i in range(3):
            c.execute_command("XADD", "events", "*", "n", i)
        c.execute_command("SET", "name", "x")
        with pytest.raises(Exception, match="WRONGTYPE"):
            c.execute_command("XADD", "name", "*", "n", 1)
        c.execute_command("SELECT", 3)
        c.execute_command("XADD", "other", "*", "n", 1)
    after = scrape(port)
    assert delta(before, after, "rill_commands_total", command="xadd") == 5  # the failed call counts too, as in Redis
    assert delta(before, after, "rill_commands_failed_total", command="xadd") == 1
    assert delta(before, after, "rill_errors_total", error="WRONGTYPE") == 1
    assert delta(before, after, "rill_error_replies_total") == 1
    assert delta(before, after, "rill_commands_processed_total") >= 6
    assert (value(after, "rill_commands_duration_seconds_total", command="xadd") or 0) > 0
    assert labelled(after, "rill_keys", "db") == {"0": 2, "3": 1}
    assert labelled(after, "rill_streams", "db") == {"0": 1, "3": 1}
    assert labelled(after, "rill_stream_entries", "db") == {"0": 3, "3": 1}
    assert value(after, "rill_build_info", mode="standalone", redis_version="8.10.0", version=_version()) == 1
    assert (value(after, "process_resident_memory_bytes") or 0) > 0
    # used_memory is INFO's estimate of the data and buffers (not the interpreter): above
    # nothing once keys exist, well below the process's RSS.
    used = value(after, "rill_memory_used_bytes") or 0
    assert 0 < used < (value(after, "process_resident_memory_bytes") or 0)
    with raw_client(node) as c:
        info = c.execute_command("INFO", "memory")
    text = info.decode() if isinstance(info, bytes) else str(info)
    used_memory = int(re.search(r"^used_memory:(\d+)", text, re.M)[1])  # type: ignore[index]
    assert used == pytest.approx(used_memory, rel=0.5)


def _version() -> str:
    from node import __version__

    return __version__


def test_blocked_and_connected_clients(started: list[Server]) -> None:
    node, port = metrics_node(started)
    reader = raw_client(node)
    result: list[object] = []

    def read() -> None:
        try:
            result.append(reader.execute_command("XREAD", "BLOCK", 60_000, "STREAMS", "s", "$"))
        except Exception as exc:  # reported by the assertion below
            result.append(exc)

    thread = threading.Thread(target=read)
    thread.start()
    try:
        blocked = scrape_until(port, lambda s: value(s, "rill_blocked_clients") == 1, "a blocked client")
        assert (value(blocked, "rill_connected_clients") or 0) >= 1
        assert value(blocked, "rill_blocking_keys") == 1
        with raw_client(node) as c:
            c.execute_command("XADD", "s", "*", "a", 1)
        thread.join(10)
        assert result and isinstance(result[0], list), result
        assert value(scrape(port), "rill_blocked_clients") == 0
    finally:
        reader.close()
        thread.join(10)


def test_a_replica_appears_with_its_offset(started: list[Server]) -> None:
    primary, primary_port = metrics_node(started)
    replica, replica_port = metrics_node(started, replicaof=primary)
    with raw_client(primary) as c:
        for i in range(10):
            c.execute_command("XADD", "events", "*", "n", i)
        assert c.execute_command("WAIT", 1, 10_000) == 1
    offset = wait_synced(primary, replica)
    name = f"127.0.0.1:{replica.port}"

    on_primary = scrape_until(primary_port, lambda s: value(s, "rill_replica_offset_bytes", replica=name) == offset,
                              "the replica's acknowledged offset in the primary's metrics")
    assert value(on_primary, "rill_repl_offset_bytes") == offset
    assert value(on_primary, "rill_replica_lag_bytes", replica=name) == 0
    assert value(on_primary, "rill_replica_online", replica=name) == 1
    assert value(on_primary, "rill_connected_replicas") == 1
    assert value(on_primary, "rill_role", role="master") == 1
    assert value(on_primary, "rill_master_link_up") is None  # a primary has no link to show

    on_replica = scrape(replica_port)
    assert value(on_replica, "rill_role", role="slave") == 1
    assert value(on_replica, "rill_role", role="master") == 0
    assert value(on_replica, "rill_master_link_up") == 1
    assert value(on_replica, "rill_repl_offset_bytes") == offset
    assert labelled(on_replica, "rill_stream_entries", "db") == {"0": 10}

    # More writes: the replica's acknowledged offset follows the primary's.
    with raw_client(primary) as c:
        c.execute_command("XADD", "events", "*", "n", 10)
    moved = wait_synced(primary, replica)
    assert moved > offset
    wait_until(lambda: value(scrape(primary_port), "rill_replica_offset_bytes", replica=name) == moved,
               "the replica's new offset in the primary's metrics")


def test_role_changes_are_counted(started: list[Server]) -> None:
    primary, primary_port = metrics_node(started)
    replica, replica_port = metrics_node(started, replicaof=primary)
    wait_synced(primary, replica)
    for port in (primary_port, replica_port):  # the configured role is not a change
        s = scrape(port)
        assert labelled(s, "rill_role_changes_total", "to") == {"master": 0, "slave": 0}
    with raw_client(replica) as c:
        c.execute_command("REPLICAOF", "NO", "ONE")
    with raw_client(primary) as c:
        c.execute_command("REPLICAOF", "127.0.0.1", replica.port)
    promoted, demoted = scrape(replica_port), scrape(primary_port)
    assert value(promoted, "rill_role", role="master") == 1
    assert labelled(promoted, "rill_role_changes_total", "to") == {"master": 1, "slave": 0}
    assert value(demoted, "rill_role", role="slave") == 1
    assert labelled(demoted, "rill_role_changes_total", "to") == {"master": 0, "slave": 1}
    wait_until(lambda: value(scrape(primary_port), "rill_master_link_up") == 1, "the old primary's link to the new one")


def test_a_planned_failover_shows_its_state_and_swaps_the_roles(started: list[Server]) -> None:
    primary, primary_port = metrics_node(started)
    replica, replica_port = metrics_node(started, replicaof=primary)
    wait_synced(primary, replica)
    assert labelled(scrape(primary_port), "rill_failover_state", "state") == {
        "no-failover": 1, "waiting-for-sync": 0, "failover-in-progress": 0}
    with stopped(replica):  # the handover waits for the target while it is stopped
        with raw_client(primary) as c:
            assert c.execute_command("FAILOVER", "TO", "127.0.0.1", replica.port, "TIMEOUT", 60_000) == b"OK"
        running = scrape(primary_port)
        assert value(running, "rill_failover_state", state="no-failover") == 0
    wait_until(lambda: value(scrape(replica_port), "rill_role", role="master") == 1, "the replica promoted")
    old = scrape_until(primary_port, lambda s: value(s, "rill_failover_state", state="no-failover") == 1,
                       "the failover over on the old primary")
    assert value(old, "rill_role", role="slave") == 1
    assert labelled(old, "rill_role_changes_total", "to") == {"master": 0, "slave": 1}
    assert labelled(scrape(replica_port), "rill_role_changes_total", "to") == {"master": 1, "slave": 0}


def test_fenced_mode_shows_its_epochs(started: list[Server]) -> None:
    plain, plain_port = metrics_node(started)
    assert value(scrape(plain_port), "rill_fence_epoch") is None  # fenced mode off: no such series
    node, port = metrics_node(started, "--fenced-mode", "yes", "--fenced-replica-set-size", "1", "--appendonly", "yes")
    assert value(scrape(port), "rill_leads_epoch") == 1
    with raw_client(node) as c:
        c.execute_command("FENCE", 5)
    fenced = scrape(port)
    assert value(fenced, "rill_fence_epoch") == 5
    assert value(fenced, "rill_leads_epoch") == 0  # fenced past its own epoch, it leads nothing


def test_aof_state(started: list[Server]) -> None:
    node, port = metrics_node(started)
    off = scrape(port)
    assert value(off, "rill_aof_enabled") == 0
    assert value(off, "rill_aof_size_bytes") is None  # shown only while the AOF is on, as INFO does
    with raw_client(node) as c:
        c.execute_command("XADD", "events", "*", "n", 1)
        c.execute_command("CONFIG", "SET", "appendonly", "yes")
        on = scrape_until(port, lambda s: value(s, "rill_aof_enabled") == 1 and value(s, "rill_aof_rewrite_in_progress") == 0
                          and value(s, "rill_aof_rewrite_scheduled") == 0, "the AOF on")
        assert (value(on, "rill_aof_size_bytes") or 0) > 0
        assert value(on, "rill_aof_last_write_ok") == 1
        rewrites = value(on, "rill_aof_rewrites_total") or 0
        c.execute_command("BGREWRITEAOF")
        wait_until(lambda: value(scrape(port), "rill_aof_rewrites_total") == rewrites + 1, "one more AOF rewrite")
        assert value(scrape(port), "rill_aof_last_rewrite_ok") == 1


def test_served_on_the_bind_addresses_only(started: list[Server]) -> None:
    node, port = metrics_node(started, "--bind", "127.0.0.1", "127.0.0.2")
    for host in ("127.0.0.1", "127.0.0.2"):
        assert value(scrape(port, host), "rill_role", role="master") == 1
    with pytest.raises(urllib.error.URLError):
        scrape(port, "127.0.0.3")


def test_off_by_default(started: list[Server]) -> None:
    node = start_node()
    started.append(node)
    with raw_client(node) as c:
        assert c.execute_command("CONFIG", "GET", "metrics-port") == [b"metrics-port", b"0"]
    assert "Metrics served" not in node.log


def test_prometheus_http_semantics(started: list[Server]) -> None:
    """What prometheus_client's own server does: name[] filters, OpenMetrics on request."""
    node, port = metrics_node(started)
    with raw_client(node) as c:
        c.execute_command("PING")
    only = scrape(port, query="?name[]=rill_role&name[]=rill_commands_total")
    assert {name for name, _ in only} == {"rill_role", "rill_commands_total"}
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                     headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.headers["Content-Type"].startswith("application/openmetrics-text")
        assert response.read().endswith(b"# EOF\n")


def test_bad_requests_do_not_disturb_the_node(started: list[Server]) -> None:
    node, port = metrics_node(started)
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", method="POST", data=b"")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 405
    assert _raw_http(port, b"NOT HTTP\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    # A head past the cap: the connection is closed without a response.
    assert _raw_http(port, b"GET /metrics HTTP/1.1\r\nX-Filler: " + b"x" * 64 * 1024 + b"\r\n\r\n") == b""
    # A connection that sends nothing does not hold up other scrapes or the clients.
    with socket.create_connection(("127.0.0.1", port), timeout=10):
        assert value(scrape(port), "rill_role", role="master") == 1
        with raw_client(node) as c:
            assert c.execute_command("PING") == b"PONG"


def _raw_http(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        try:
            s.sendall(request)
        except ConnectionError:
            return b""
        chunks = []
        try:
            while chunk := s.recv(65536):
                chunks.append(chunk)
        except ConnectionError:
            pass
        return b"".join(chunks)


def test_a_taken_port_stops_the_start_with_a_clear_error() -> None:
    workdir = tempfile.mkdtemp(prefix="rill-test-")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        metrics_port = taken.getsockname()[1]
        args = [sys.executable, "-m", "node.main", "node", "--port", str(free_port()), "--repl-port", str(free_port()),
                "--metrics-port", str(metrics_port), "--dir", workdir, "--logfile", os.path.join(workdir, "server.log")]
        done = subprocess.run(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 1
    with open(os.path.join(workdir, "server.log"), encoding="utf-8") as f:
        assert f"Could not start: metrics-port {metrics_port}:" in f.read()
