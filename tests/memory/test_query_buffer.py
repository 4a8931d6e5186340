"""An incomplete request costs the node about its bytes: 100 MB of a value still arriving
(issue 28 measured +253 MB of RSS for 107 MB pending, redis-server +137 MB), so
client-query-buffer-limit bounds what a client's input can hold."""

from __future__ import annotations

import socket
import time

from tests.conftest import start_rill
from tests.memory.peak import MB, peak_rss, rss

PENDING = 100 * MB


def test_an_incomplete_request_costs_about_its_bytes() -> None:
    node = start_rill()
    try:
        before = rss(node.proc.pid)
        with socket.create_connection(("127.0.0.1", node.port), timeout=30) as sock:
            sock.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % (2 * PENDING))
            chunk = b"x" * MB
            for _ in range(PENDING // MB):
                sock.sendall(chunk)
            client = node.client()
            deadline = time.monotonic() + 20
            # Every byte sent has reached the node (CLIENT LIST qbuf is not tracked: the
            # node's input counter is).
            while client.info("stats")["total_net_input_bytes"] < PENDING:
                assert time.monotonic() < deadline, "the node did not receive the request"
                time.sleep(0.05)
            assert client.dbsize() == 0
            growth = peak_rss(node.proc.pid) - before
            client.close()
        assert growth <= 1.5 * PENDING, f"{growth / MB:.0f} MB for {PENDING / MB:.0f} MB pending"
    finally:
        node.stop()
